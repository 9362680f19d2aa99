import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import * as arrow from "apache-arrow";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import type { Int64ColumnBuilder, TimestampColumnBuilder } from "../../../src/codec/columns/fixed-width-builders.ts";
import { makeColumnBuilder } from "../../../src/codec/columns/nested-builders.ts";
import { RecordBatchBuilder, rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { columnReader, columnValues } from "../../../src/codec/columns/value-readers.ts";
import type { Utf8ColumnBuilder } from "../../../src/codec/columns/variable-width-builders.ts";
import { fromArrowSchema, fromArrowType, normalizeArrowSchema, toArrowSchema, toArrowType } from "../../../src/codec/arrow-schema.ts";
import { parseColumnList, parseSqlType, T, typeToSql, type DataType } from "../../../src/format/data-types.ts";
import { compileRowConverter } from "../../../src/format/row-converter.ts";
import { Timestamp, type Row, type Value } from "../../../src/format/values.ts";
import { isLakeError } from "../../../src/errors.ts";
import { ALL_ROWS, ALL_TYPES, bytes, ts } from "../../helpers/codec-fixtures.ts";

const isKind = (kind: "DataInvalid" | "Unsupported") => (e: unknown) => isLakeError(e, kind);
const viaIpc = (b: arrow.RecordBatch): arrow.Table => arrow.tableFromIPC(arrow.tableToIPC(new arrow.Table(b), "stream"));

// ---------------------------------------------------------------------------------------------------------------
// Type mapping

test("columns - Paimon → Arrow type mapping", () => {
  const cases: Array<[string, string]> = [
    ["BOOLEAN", "Bool"],
    ["TINYINT", "Int8"],
    ["SMALLINT", "Int16"],
    ["INT", "Int32"],
    ["BIGINT", "Int64"],
    ["FLOAT", "Float32"],
    ["DOUBLE", "Float64"],
    ["DECIMAL(10, 2)", "Decimal[10e+2]"],
    ["DECIMAL(38, 10)", "Decimal[38e+10]"],
    ["CHAR(3)", "Utf8"],
    ["STRING", "Utf8"],
    ["BINARY(4)", "Binary"],
    ["BYTES", "Binary"],
    ["DATE", "Date32<DAY>"],
    ["TIME(3)", "Time32<MILLISECOND>"],
    ["TIMESTAMP(0)", "Timestamp<MILLISECOND>"],
    ["TIMESTAMP(3)", "Timestamp<MILLISECOND>"],
    ["TIMESTAMP(6)", "Timestamp<MICROSECOND>"],
    ["TIMESTAMP(9)", "Timestamp<NANOSECOND>"],
    ["TIMESTAMP(6) WITH LOCAL TIME ZONE", "Timestamp<MICROSECOND, UTC>"],
    ["ARRAY<STRING>", "List<Utf8>"],
    ["ROW<x INT, y STRING>", "Struct<{x:Int32, y:Utf8}>"],
  ];
  for (const [sql, arrowText] of cases) assert.equal(String(toArrowType(parseSqlType(sql))), arrowText, sql);

  const schema = toArrowSchema([
    { name: "tags", type: parseSqlType("ARRAY<STRING NOT NULL> NOT NULL") },
    { name: "m", type: parseSqlType("MAP<STRING, INT NOT NULL>") },
  ]);
  const [tags, m] = schema.fields as [arrow.Field, arrow.Field];
  assert.equal(tags.nullable, false);
  assert.equal(tags.type.children[0].name, "element");
  assert.equal(tags.type.children[0].nullable, false);
  const entries = m.type.children[0] as arrow.Field<arrow.Struct>;
  assert.equal(entries.name, "key_value");
  assert.equal(entries.nullable, false);
  assert.deepEqual(
    entries.type.children.map((f) => [f.name, f.nullable]),
    [
      ["key", false],
      ["value", false],
    ],
  );
});

test("columns - Arrow → Paimon type mapping round-trips our own schemas and reads foreign types", () => {
  const fields = ALL_TYPES.filter((f) => f.type.root !== "MULTISET");
  const back = fromArrowSchema(toArrowSchema(fields));
  // Lossy by design: CHAR/VARCHAR(n) → STRING, BINARY(n) → BYTES, TIMESTAMP(0) → (3), TIME(p) → TIME(3),
  // and map keys are NOT NULL (Parquet keys are required).
  const expected: Record<string, string> = {
    ch: "STRING",
    vc: "STRING",
    bin: "BYTES",
    ts0: "TIMESTAMP(3)",
    m: "MAP<STRING NOT NULL, INT>",
    mb: "MAP<BIGINT NOT NULL, ARRAY<STRING>>",
  };
  for (const [k, f] of fields.entries()) assert.equal(typeToSql(back[k]!.type), expected[f.name] ?? typeToSql(f.type), f.name);
  assert.equal(back[0]!.id, 0);
  // Field ids: top-level then nested, Java order (r gets an id, then x, y, z, a; rs after them).
  const r = back.find((f) => f.name === "r")!;
  const rs = back.find((f) => f.name === "rs")!;
  assert.equal(rs.id, r.id + 5);

  const foreign: Array<[arrow.DataType, string]> = [
    [new arrow.Uint8(), "SMALLINT"],
    [new arrow.Uint16(), "INT"],
    [new arrow.Uint32(), "BIGINT"],
    [new arrow.Float16(), "FLOAT"],
    [new arrow.LargeUtf8(), "STRING"],
    [new arrow.LargeBinary(), "BYTES"],
    [new arrow.FixedSizeBinary(16), "BINARY(16)"],
    [new arrow.DateMillisecond(), "DATE"],
    [new arrow.TimeMicrosecond(), "TIME(6)"],
    [new arrow.TimestampSecond("Europe/Paris"), "TIMESTAMP(0) WITH LOCAL TIME ZONE"],
    [new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()), "STRING"],
    [new arrow.Decimal(3, 20, 256), "DECIMAL(20, 3)"],
  ];
  for (const [t, sql] of foreign) assert.equal(typeToSql(fromArrowType(t)), sql, String(t));
  assert.throws(() => fromArrowType(new arrow.Uint64()), isKind("Unsupported"));
  assert.throws(() => fromArrowType(new arrow.Null()), isKind("Unsupported"));
});

test("columns - normalizeArrowSchema renames list and map children to Paimon's names", () => {
  const list = new arrow.List(new arrow.Field("item", new arrow.Int32(), true));
  const entries = new arrow.Struct<{ k: arrow.Utf8; v: arrow.Int32 }>([new arrow.Field("k", new arrow.Utf8(), false), new arrow.Field("v", new arrow.Int32())]);
  const map = new arrow.Map_(new arrow.Field("entries", entries, false) as unknown as arrow.Field<arrow.Struct<{ key: arrow.Utf8; value: arrow.Int32 }>>);
  const s = normalizeArrowSchema(new arrow.Schema([new arrow.Field("l", list), new arrow.Field("m", map)]));
  assert.equal(s.fields[0]!.type.children[0].name, "element");
  const normalized = s.fields[1]!.type.children[0] as arrow.Field<arrow.Struct>;
  assert.equal(normalized.name, "key_value");
  assert.deepEqual(
    normalized.type.children.map((f) => f.name),
    ["key", "value"],
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Round trips

test("columns - every type round-trips through a record batch, in memory and through Arrow IPC", () => {
  const batch = rowsToRecordBatch(ALL_TYPES, ALL_ROWS);
  assert.equal(batch.numRows, ALL_ROWS.length);
  assert.deepEqual(recordBatchToRows(ALL_TYPES, batch), ALL_ROWS);
  assert.deepEqual(recordBatchToRows(ALL_TYPES, viaIpc(batch)), ALL_ROWS);
  // NOT NULL columns are non-nullable fields; nullable ones without nulls carry no validity bitmap at all.
  assert.equal(batch.schema.fields.find((f) => f.name === "i32")!.nullable, false);
  assert.equal(batch.getChild("i32")!.nullCount, 0);
  assert.equal(batch.getChild("s")!.nullCount, 1);
});

test("columns - sliced batches and multi-batch tables read correctly", () => {
  const batch = rowsToRecordBatch(ALL_TYPES, ALL_ROWS);
  for (let start = 0; start < ALL_ROWS.length; start++) {
    const slice = batch.slice(start, ALL_ROWS.length);
    assert.deepEqual(recordBatchToRows(ALL_TYPES, slice), ALL_ROWS.slice(start), `slice from ${start}`);
  }
  const table = new arrow.Table([batch, rowsToRecordBatch(ALL_TYPES, ALL_ROWS.slice(1))]);
  assert.deepEqual(recordBatchToRows(ALL_TYPES, table), [...ALL_ROWS, ...ALL_ROWS.slice(1)]);
  assert.deepEqual(columnValues(T.int(false), table.getChild("i32")!), [...ALL_ROWS, ...ALL_ROWS.slice(1)].map((r) => r["i32"]));
});

test("columns - DECIMAL is two's complement Decimal128 in little-endian words", () => {
  const b = makeColumnBuilder(T.decimal(38, 0), "d");
  const values = [0n, 1n, -1n, 2n ** 64n, -(2n ** 64n), 10n ** 38n - 1n, -(10n ** 38n - 1n), 2n ** 63n, -(2n ** 63n) - 1n];
  for (const v of values) b.append(v);
  const data = b.finish();
  const words = data.values as Uint32Array;
  assert.deepEqual([...words.subarray(0, 12)], [0, 0, 0, 0, 1, 0, 0, 0, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff]);
  assert.deepEqual([...words.subarray(12, 16)], [0, 0, 1, 0]);
  const read = columnReader(T.decimal(38, 0), data);
  assert.deepEqual(values.map((_, i) => read(i)), values);
  assert.throws(() => makeColumnBuilder(T.decimal(10, 2), "d").append(10n ** 10n), isKind("DataInvalid"));
  assert.throws(() => makeColumnBuilder(T.decimal(10, 2), "d").append("1.5"), isKind("DataInvalid"));
});

test("columns - timestamps are stored in the unit of their precision", () => {
  const t = ts("2024-01-02T03:04:05.678", 123456);
  const pre = ts("1960-01-01T00:00:00.001", 999999);
  const raw = (type: DataType, v: Timestamp): bigint => {
    const b = makeColumnBuilder(type, "t");
    b.append(v);
    return (b.finish().values as BigInt64Array)[0]!;
  };
  assert.equal(raw(T.timestamp(3), t), BigInt(t.millis));
  assert.equal(raw(T.timestamp(6), t), BigInt(t.millis) * 1000n + 123n);
  assert.equal(raw(T.timestamp(9), t), BigInt(t.millis) * 1_000_000n + 123456n);
  assert.equal(raw(T.timestamp(9), pre), pre.toEpochNanos());
  assert.equal(raw(T.timestampLtz(6), pre), pre.toEpochMicros());
  assert.equal((toArrowType(T.timestampLtz(3)) as arrow.Timestamp).timezone, "UTC");
  // Decoders may append epoch millis or raw unit values directly.
  const b = makeColumnBuilder(T.timestamp(6), "t") as TimestampColumnBuilder;
  b.appendEpochMillis(-1);
  b.appendRaw(-1n);
  assert.deepEqual(columnValues(T.timestamp(6), b.finish()), [new Timestamp(-1, 0), new Timestamp(-1, 999000)]);
});

test("columns - strings are offsets + UTF-8 bytes, including non-ASCII, surrogate pairs and long strings", () => {
  const values = ["", "a", "héllo", "😀", "x".repeat(100) + "é", "é" + "y".repeat(100), "\u{10FFFF}", "日本語テキスト"];
  const b = makeColumnBuilder(T.string(), "s", 2);
  for (const v of values) b.append(v);
  const data = b.finish();
  const enc = new TextEncoder();
  const expectedBytes = Buffer.concat(values.map((v) => enc.encode(v)));
  assert.deepEqual(Buffer.from(data.values as Uint8Array), expectedBytes);
  assert.equal((data.valueOffsets as Int32Array).length, values.length + 1);
  assert.deepEqual(columnValues(T.string(), data), values);
  // Raw UTF-8 bytes (as a msgpack decoder holds them) are copied as they are.
  const u = makeColumnBuilder(T.string(), "s") as Utf8ColumnBuilder;
  const src = enc.encode("__héllo__");
  u.appendUtf8(src, 2, src.length - 2);
  assert.deepEqual(columnValues(T.string(), u.finish()), ["héllo"]);
});

test("columns - BIGINT accepts bigint and safe-integer numbers without BigInt allocation", () => {
  const b = makeColumnBuilder(T.bigint(), "i") as Int64ColumnBuilder;
  const nums = [0, -1, 2 ** 32, -(2 ** 32) - 1, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
  for (const n of nums) b.appendNumber(n);
  b.append(2n ** 63n - 1n);
  assert.deepEqual(columnValues(T.bigint(), b.finish()), [...nums.map(BigInt), 2n ** 63n - 1n]);
  assert.throws(() => makeColumnBuilder(T.bigint(), "i").append(2n ** 63n), isKind("DataInvalid"));
  assert.throws(() => makeColumnBuilder(T.bigint(), "i").append(0.5), isKind("DataInvalid"));
});

test("columns - NOT NULL, wrong types and out-of-range values are DataInvalid naming the column", () => {
  assert.throws(() => rowsToRecordBatch([{ name: "id", type: T.bigint(false) }], [{ id: null }]), (e: unknown) => isLakeError(e, "DataInvalid") && /column id is NOT NULL/.test((e as Error).message));
  assert.throws(() => rowsToRecordBatch([{ name: "tags", type: T.array(T.string(false)) }], [{ tags: ["a", null] }]), /tags\[\] is NOT NULL/);
  assert.throws(() => rowsToRecordBatch([{ name: "m", type: T.map(T.string(), T.int()) }], [{ m: [[null, 1]] }]), /m\.key is NOT NULL/);
  assert.throws(() => rowsToRecordBatch([{ name: "n", type: T.int() }], [{ n: 2 ** 31 }]), isKind("DataInvalid"));
  assert.throws(() => rowsToRecordBatch([{ name: "n", type: T.tinyint() }], [{ n: 128 }]), isKind("DataInvalid"));
  assert.throws(() => rowsToRecordBatch([{ name: "n", type: T.int() }], [{ n: "1" }]), isKind("DataInvalid"));
  assert.throws(() => rowsToRecordBatch([{ name: "s", type: T.string() }], [{ s: 1 }]), isKind("DataInvalid"));
  assert.throws(() => rowsToRecordBatch([{ name: "t", type: T.timestamp(3) }], [{ t: 5 }]), isKind("DataInvalid"));
  // TIMESTAMP(9) is int64 nanoseconds: 1677-09-21 .. 2262-04-11.
  assert.throws(() => rowsToRecordBatch([{ name: "t", type: T.timestamp(9) }], [{ t: ts("2262-04-11T23:47:16.854", 775808) }]), isKind("DataInvalid"));
  assert.throws(() => rowsToRecordBatch([{ name: "t", type: T.timestamp(9) }], [{ t: ts("1600-01-01T00:00:00") }]), isKind("DataInvalid"));
});

test("columns - a rejected row is rolled back from every column, nested ones included", () => {
  const fields = [
    { name: "id", type: T.int(false) },
    { name: "r", type: parseSqlType("ROW<a STRING, tags ARRAY<INT NOT NULL>, m MAP<STRING, STRING>>") },
    { name: "flag", type: T.boolean(false) },
  ];
  const b = new RecordBatchBuilder(fields, 1);
  const good: Row[] = [];
  const rows: Row[] = [
    { id: 1, r: { a: "x", tags: [1, 2], m: [["k", "v"]] }, flag: true },
    { id: 2, r: { a: "y", tags: [3, null], m: [] }, flag: true }, // bad element: rejected
    { id: 3, r: null, flag: false },
    { id: 4, r: { a: "zz", tags: [4], m: [["k2", null]] }, flag: null }, // NOT NULL flag: rejected after r was appended
    { id: 5, r: { a: null, tags: null, m: null }, flag: false },
  ];
  for (const r of rows) {
    try {
      b.appendRow(r);
      good.push(r);
    } catch (e) {
      assert.ok(isLakeError(e, "DataInvalid"));
    }
  }
  assert.equal(b.length, 3);
  const batch = b.finish();
  assert.deepEqual(recordBatchToRows(fields, batch), good);
  assert.deepEqual(recordBatchToRows(fields, viaIpc(batch)), good);
  assert.equal(b.length, 0, "finish resets the builder");
});

test("columns - a null ROW with NOT NULL children keeps children aligned", () => {
  const fields = [{ name: "r", type: parseSqlType("ROW<x INT NOT NULL, s STRING NOT NULL, inner ROW<y BIGINT NOT NULL> NOT NULL>") }];
  const rows: Row[] = [{ r: null }, { r: { x: 1, s: "a", inner: { y: 2n } } }, { r: null }];
  const batch = rowsToRecordBatch(fields, rows);
  const r = batch.getChild("r")!.data[0]!;
  assert.equal(r.nullCount, 2);
  for (const c of r.children) assert.equal(c.length, 3);
  assert.deepEqual(recordBatchToRows(fields, viaIpc(batch)), rows);
});

test("columns - MULTISET is stored as element → count and read back grouped", () => {
  const fields = [{ name: "ms", type: parseSqlType("MULTISET<STRING>") }];
  const batch = rowsToRecordBatch(fields, [{ ms: ["b", "a", "b", "b"] }]);
  assert.deepEqual(recordBatchToRows(fields, batch), [{ ms: ["b", "b", "b", "a"] }]);
  assert.deepEqual(recordBatchToRows([{ name: "ms", type: parseSqlType("MAP<STRING, INT NOT NULL>") }], batch), [
    {
      ms: [
        ["b", 3],
        ["a", 1],
      ],
    },
  ]);
});

test("columns - readers coerce integer widths to the requested Paimon type and match names case-insensitively", () => {
  const batch = rowsToRecordBatch([{ name: "Amount", type: T.int() }], [{ Amount: 5 }, { Amount: null }]);
  assert.deepEqual(recordBatchToRows([{ name: "amount", type: T.bigint() }], batch), [{ amount: 5n }, { amount: null }]);
  assert.throws(() => recordBatchToRows([{ name: "missing", type: T.int() }], batch), isKind("DataInvalid"));
});

// ---------------------------------------------------------------------------------------------------------------
// Property test

const PRIMITIVES: Array<{ type: DataType; arb: fc.Arbitrary<Value> }> = [
  { type: T.boolean(), arb: fc.boolean() },
  { type: parseSqlType("TINYINT"), arb: fc.integer({ min: -128, max: 127 }) },
  { type: parseSqlType("SMALLINT"), arb: fc.integer({ min: -32768, max: 32767 }) },
  { type: T.int(), arb: fc.integer() },
  { type: T.bigint(), arb: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }) },
  { type: T.float(), arb: fc.float({ noDefaultInfinity: false }) },
  { type: T.double(), arb: fc.double() },
  { type: T.decimal(10, 2), arb: fc.bigInt({ min: -(10n ** 10n) + 1n, max: 10n ** 10n - 1n }) },
  { type: T.decimal(38, 10), arb: fc.bigInt({ min: -(10n ** 38n) + 1n, max: 10n ** 38n - 1n }) },
  { type: T.string(), arb: fc.string({ unit: "binary", maxLength: 80 }) },
  { type: T.bytes(), arb: fc.uint8Array({ maxLength: 40 }) },
  { type: T.date(), arb: fc.integer({ min: -719162, max: 2932896 }) },
  { type: parseSqlType("TIME(3)"), arb: fc.integer({ min: 0, max: 86399999 }) },
  ...[0, 3, 6, 9].map((p) => ({
    type: T.timestamp(p),
    // ns timestamps are int64 nanoseconds: years 1678–2261 only.
    arb: fc
      .tuple(fc.integer({ min: p === 9 ? -9.2e12 : -6.2e13, max: p === 9 ? 9.2e12 : 2.5e14 }), fc.integer({ min: 0, max: 999999 }))
      .map(([ms, nano]) => new Timestamp(ms, nano).truncate(p) as Value),
  })),
  { type: T.timestampLtz(6), arb: fc.tuple(fc.integer({ min: -6.2e13, max: 2.5e14 }), fc.integer({ min: 0, max: 999 })).map(([ms, us]) => new Timestamp(ms, us * 1000) as Value) },
];

test("columns - property: primitive columns with nulls round-trip (builders, readers, IPC)", () => {
  const fields = PRIMITIVES.map((p, k) => ({ name: `c${k}`, type: p.type }));
  const rowArb = fc.tuple(...PRIMITIVES.map((p) => fc.option(p.arb, { nil: null, freq: 4 }))).map((vals) => {
    const row: Row = {};
    vals.forEach((v, k) => (row[`c${k}`] = v));
    return row;
  });
  fc.assert(
    fc.property(fc.array(rowArb, { maxLength: 40 }), (rows) => {
      const batch = rowsToRecordBatch(fields, rows);
      const expected = rows.map((r) => {
        const out: Row = {};
        // FLOAT columns store float32: compare with the rounded value.
        for (const [k, f] of fields.entries()) out[f.name] = PRIMITIVES[k]!.type.root === "FLOAT" && typeof r[f.name] === "number" ? Math.fround(r[f.name] as number) : r[f.name]!;
        return out;
      });
      assert.deepEqual(recordBatchToRows(fields, batch), expected);
      assert.deepEqual(recordBatchToRows(fields, viaIpc(batch)), expected);
    }),
    { numRuns: 150 },
  );
});

test("columns - binary columns copy values out, so rows never alias the column buffer", () => {
  const batch = rowsToRecordBatch([{ name: "b", type: T.bytes() }], [{ b: bytes(1, 2) }, { b: bytes(3) }]);
  const [r0] = recordBatchToRows([{ name: "b", type: T.bytes() }], batch);
  const v = r0!["b"] as Uint8Array;
  assert.equal(v.buffer.byteLength, 2);
});

test("columns - foreign encodings: dictionary strings, large strings, half floats, unsigned ints", () => {
  const dict = arrow.vectorFromArray(["b", "a", null, "b"]);
  assert.ok(arrow.DataType.isDictionary(dict.type));
  assert.deepEqual(columnValues(T.string(), dict), ["b", "a", null, "b"]);
  const large = arrow.vectorFromArray(["x", null, "héllo"], new arrow.LargeUtf8());
  assert.deepEqual(columnValues(undefined, large), ["x", null, "héllo"]);
  const half = arrow.makeData({ type: new arrow.Float16(), length: 3, data: new Uint16Array([0x3c00, 0xc000, 0x7c00]) });
  assert.deepEqual(columnValues(T.float(), half), [1, -2, Infinity]);
  const u32 = arrow.makeData({ type: new arrow.Uint32(), length: 2, data: new Uint32Array([4294967295, 1]) });
  assert.deepEqual(columnValues(T.bigint(), u32), [4294967295n, 1n]);
});

test("columns - property: appendInput equals appendRow of the converted row: same values, same errors, rollback", () => {
  const fields = parseColumnList(
    "i INT, n INT NOT NULL, sm SMALLINT, ti TINYINT, b BIGINT, d DOUBLE, f FLOAT, ok BOOLEAN, s STRING, v VARCHAR(3), t TIMESTAMP(3), t6 TIMESTAMP_LTZ(6), dc DECIMAL(5, 2), dt DATE",
  );
  const convert = compileRowConverter(fields.map((f, id) => ({ id, ...f })));
  const anyValue = fc.oneof(
    fc.integer(),
    fc.integer({ min: -200, max: 200 }),
    fc.double(),
    fc.constantFrom(-0, NaN, 2 ** 53, -(2 ** 53) - 2, 1.5, 32768, -129, 1700000000000),
    fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
    fc.string({ maxLength: 5 }),
    fc.constantFrom("12", "1.25", "true", "2024-01-02", "NaN", ""),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.constant({}),
  );
  // Mostly well-typed values (so most records are accepted), sometimes anything at all.
  const good: Record<string, fc.Arbitrary<unknown>> = {
    i: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    n: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    sm: fc.integer({ min: -32768, max: 32767 }),
    ti: fc.integer({ min: -128, max: 127 }),
    b: fc.oneof(fc.maxSafeInteger(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
    d: fc.double(),
    f: fc.float(),
    ok: fc.boolean(),
    s: fc.string({ unit: "grapheme", maxLength: 8 }),
    v: fc.string({ maxLength: 3 }),
    t: fc.integer({ min: -6e13, max: 2.5e14 }),
    t6: fc.integer({ min: -6e13, max: 2.5e14 }),
    dc: fc.constantFrom("1.25", "-999.99", 3, "0.5"),
    dt: fc.constantFrom("2024-01-02", 19000, -1),
  };
  const record = fc
    .tuple(
      fc.record(Object.fromEntries(fields.map((f) => [f.name, fc.oneof({ arbitrary: good[f.name]!, weight: 8 }, { arbitrary: anyValue, weight: 1 })])), { requiredKeys: ["n"] }),
      fc.oneof({ arbitrary: fc.constant(undefined), weight: 10 }, { arbitrary: fc.constantFrom("extra", "I"), weight: 1 }),
    )
    .map(([r, extra]) => (extra === undefined ? r : { ...r, [extra]: 1 }));
  let accepted = 0;
  let rejected = 0;
  fc.assert(
    fc.property(fc.array(record, { maxLength: 25 }), (records) => {
      const viaRows = new RecordBatchBuilder(fields, 2);
      const direct = new RecordBatchBuilder(fields, 2);
      for (const r of records) {
        let expected: string | null = null;
        let got: string | null = null;
        try {
          viaRows.appendRow(convert(r));
        } catch (e) {
          expected = (e as Error).message;
        }
        try {
          direct.appendInput(r);
        } catch (e) {
          got = (e as Error).message;
          rejected++;
        }
        assert.equal(got, expected);
      }
      const batch = direct.finish();
      accepted += batch.numRows;
      assert.deepEqual(recordBatchToRows(fields, batch), recordBatchToRows(fields, viaRows.finish()));
    }),
    { numRuns: 300 },
  );
  // A floor far below the typical counts (~500 accepted, ~800 rejected over 300 random runs): the check is that both
  // paths ran, and a floor near the mean (500, as it was) failed on an unlucky seed.
  assert.ok(accepted > 100 && rejected > 100, `both paths exercised (${accepted} accepted, ${rejected} rejected)`);
});

test("columns - a builder reused after finish() regrows correctly, for every type", () => {
  const rows = Array.from({ length: 3000 }, (_, i) => ALL_ROWS[i % ALL_ROWS.length]!);
  const b = new RecordBatchBuilder(ALL_TYPES, 2500);
  for (let round = 0; round < 3; round++) {
    const n = round === 1 ? 700 : 3000;
    for (const r of rows.slice(0, n)) b.appendRow(r);
    assert.deepEqual(recordBatchToRows(ALL_TYPES, b.finish()), rows.slice(0, n));
  }
});
