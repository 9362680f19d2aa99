import { test } from "node:test";
import assert from "node:assert/strict";
import * as arrow from "apache-arrow";
import * as pw from "parquet-wasm";
import fc from "fast-check";
import { int96Bytes } from "../../../src/codec/parquet-layout.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import {
  decodeStruct,
  encodeStruct,
  footerRange,
  readFileMetaData,
  replaceFileMetaData,
  rewriteFooter,
  T,
  type ThriftField,
  type ThriftList,
} from "../../../src/codec/parquet-footer.mjs";
import { parquetRowCount, toIpcStream, writeParquet, writerSpec, type ParquetWriteOptions } from "../../../src/codec/parquet.ts";
import { encodeIpcStream } from "../../../src/codec/parquet-wasm-ops.mjs";
import { ALL_ROWS, ALL_TYPES } from "../../helpers/codec-fixtures.ts";

const f = (id: number, type: number, value: ThriftField["value"]): ThriftField => ({ id, type, value });
const fieldOf = (fields: ThriftField[], id: number): ThriftField | undefined => fields.find((x) => x.id === id);

test("parquet footer - every Thrift compact type round-trips, with long field-id jumps and negative ids", () => {
  const fields: ThriftField[] = [
    f(1, T.TRUE, true),
    f(2, T.FALSE, false),
    f(3, T.BYTE, -5),
    f(4, T.I16, -32768),
    f(5, T.I32, 2147483647),
    f(6, T.I32, -2147483648),
    f(7, T.I64, -(2n ** 63n)),
    f(8, T.I64, 2n ** 63n - 1n),
    f(9, T.DOUBLE, -0.5),
    f(10, T.BINARY, new TextEncoder().encode("héllo")),
    f(30, T.LIST, { elem: T.I32, items: Array.from({ length: 20 }, (_, i) => i - 10) }), // jump > 15, list ≥ 15 items
    f(31, T.LIST, { elem: T.TRUE, items: [true, false, true] }),
    f(32, T.SET, { elem: T.BINARY, items: [] }),
    f(33, T.MAP, { key: T.BINARY, val: T.I64, entries: [[new Uint8Array([1]), 3n]] }),
    f(34, T.MAP, { key: 0, val: 0, entries: [] }),
    f(35, T.STRUCT, [f(1, T.STRUCT, []), f(2, T.LIST, { elem: T.STRUCT, items: [[f(7, T.I64, 1n)]] })]),
  ];
  const bytes = encodeStruct(fields);
  assert.deepEqual(decodeStruct(bytes), fields);
  assert.deepEqual(encodeStruct(decodeStruct(bytes)), bytes);
  // A negative field id (legal in Thrift) takes the long header form.
  assert.deepEqual(decodeStruct(encodeStruct([f(-3, T.I32, 1)])), [f(-3, T.I32, 1)]);
  assert.throws(() => decodeStruct(bytes.subarray(0, bytes.length - 1)), /truncated/);
  assert.throws(() => decodeStruct(new Uint8Array([...bytes, 0])), /after the struct/);
});

test("parquet footer - footers of every type and writer setting (as arrow-rs wrote them, and rewritten) re-encode to the same bytes", () => {
  const batch = rowsToRecordBatch(ALL_TYPES, ALL_ROWS);
  const settings = [{}, { statistics: "page" as const }, { dictionary: true }, { writerVersion: "2.0" as const }, { maxRowGroupSize: 2 }];
  const raw = (opts: ParquetWriteOptions): Uint8Array => encodeIpcStream(toIpcStream(batch), writerSpec(opts, batch.numRows)); // no footer plan
  for (const file of [...settings.map(raw), ...settings.map((opts) => writeParquet(batch, opts))]) {
    const { start, end } = footerRange(file);
    const meta = readFileMetaData(file);
    assert.deepEqual(encodeStruct(meta), file.subarray(start, end));
    // Re-writing an unchanged footer gives the file back, byte for byte.
    assert.deepEqual(replaceFileMetaData(file.slice(), meta), file);
  }
});

/** A file with one FixedSizeBinary(12) column `t` and one DOUBLE column `d`, as arrow-rs writes them. */
function flbaFile(statistics: pw.EnabledStatistics): Uint8Array {
  const n = 3;
  const schema = new arrow.Schema([new arrow.Field("t", new arrow.FixedSizeBinary(12), true), new arrow.Field("d", new arrow.Float64(), true)]);
  const t = arrow.makeData({ type: new arrow.FixedSizeBinary(12), length: n, nullCount: 0, data: new Uint8Array(n * 12).fill(7) });
  const d = arrow.makeData({ type: new arrow.Float64(), length: n, nullCount: 0, data: new Float64Array([1, NaN, 2]) });
  const batch = new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children: [t, d] }));
  const props = new pw.WriterPropertiesBuilder().setStatisticsEnabled(statistics).setDictionaryEnabled(false).build();
  return pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table([batch]), "stream")), props);
}

const leafSchema = (meta: ThriftField[], leaf: number): ThriftField[] => (fieldOf(meta, 2)!.value as ThriftList).items[leaf + 1] as ThriftField[];
const chunk = (meta: ThriftField[], leaf: number, rowGroup = 0): ThriftField[] => {
  const rg = (fieldOf(meta, 4)!.value as ThriftList).items[rowGroup] as ThriftField[];
  return (fieldOf(rg, 1)!.value as ThriftList).items[leaf] as ThriftField[];
};

test("parquet footer - INT96 and no-min/max rewrites touch only the planned leaves; length and magic stay right", () => {
  const file = flbaFile(pw.EnabledStatistics.Page);
  const before = readFileMetaData(file);
  assert.ok(fieldOf(chunk(before, 0), 6) !== undefined, "arrow-rs wrote a column index for t");
  const out = rewriteFooter(file.slice(), { int96Leaves: [0], noMinMaxLeaves: [1] });
  const meta = readFileMetaData(out);
  assert.equal(parquetRowCount(out), 3);
  assert.deepEqual(out.subarray(0, footerRange(file).start), file.subarray(0, footerRange(file).start), "data pages untouched");
  // Leaf 0: SchemaElement type INT96 (3), no type_length; ColumnMetaData type INT96, no statistics, no column index.
  const s0 = leafSchema(meta, 0);
  assert.equal(fieldOf(s0, 1)!.value, 3);
  assert.equal(fieldOf(s0, 2), undefined);
  const c0 = chunk(meta, 0);
  const m0 = fieldOf(c0, 3)!.value as ThriftField[];
  assert.equal(fieldOf(m0, 1)!.value, 3);
  assert.equal(fieldOf(m0, 12), undefined);
  assert.equal(fieldOf(c0, 6), undefined);
  assert.equal(fieldOf(c0, 7), undefined);
  assert.ok(fieldOf(c0, 4) !== undefined, "the offset index stays");
  // Leaf 1: statistics keep only the null count.
  const m1 = fieldOf(chunk(meta, 1), 3)!.value as ThriftField[];
  assert.deepEqual(
    (fieldOf(m1, 12)!.value as ThriftField[]).map((x) => x.id),
    [3],
  );
  assert.equal(fieldOf(chunk(meta, 1), 6), undefined);
  // An empty plan is the identity (no decode, no copy).
  assert.equal(rewriteFooter(file, {}), file);
});

test("parquet footer - a longer ARROW:schema moves the footer into a copy; refuses leaves that cannot be INT96", () => {
  const file = flbaFile(pw.EnabledStatistics.Chunk);
  const long = "x".repeat(5000);
  const out = rewriteFooter(file, { arrowSchema: long });
  assert.notEqual(out.buffer, file.buffer);
  const kv = (fieldOf(readFileMetaData(out), 5)!.value as ThriftList).items as ThriftField[][];
  const schemaEntry = kv.find((e) => new TextDecoder().decode(fieldOf(e, 1)!.value as Uint8Array) === "ARROW:schema")!;
  assert.equal(new TextDecoder().decode(fieldOf(schemaEntry, 2)!.value as Uint8Array), long);
  assert.equal(parquetRowCount(out), 3);

  assert.throws(() => rewriteFooter(file.slice(), { int96Leaves: [1] }), /leaf 1 is not FIXED_LEN_BYTE_ARRAY\(12\)/);
  assert.throws(() => rewriteFooter(file.slice(), { noMinMaxLeaves: [2] }), /leaf 2 does not exist/);
  const v2 = pw.writeParquet(
    pw.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table({ t: arrow.makeVector(arrow.makeData({ type: new arrow.FixedSizeBinary(12), length: 1, data: new Uint8Array(12) })) }), "stream")),
    new pw.WriterPropertiesBuilder().setWriterVersion(pw.WriterVersion.V2).setDictionaryEnabled(false).build(),
  );
  assert.throws(() => rewriteFooter(v2, { int96Leaves: [0] }), /encoding 7, which INT96 does not allow/);
  assert.throws(() => readFileMetaData(file.subarray(0, file.length - 2)), /magic/);
});

/** The INT96 definition, in BigInts: nanos of the day in [0, 86400·10⁹), then the Julian day. */
function int96Reference(ns: bigint): Uint8Array {
  const dayNs = 86_400_000_000_000n;
  let day = ns / dayNs;
  let ofDay = ns % dayNs;
  if (ofDay < 0n) {
    ofDay += dayNs;
    day -= 1n;
  }
  const out = new Uint8Array(12);
  const dv = new DataView(out.buffer);
  dv.setBigInt64(0, ofDay, true);
  dv.setInt32(8, Number(day) + 2_440_588, true);
  return out;
}

test("parquet layout - int96Bytes matches the BigInt definition over the whole int64 range", () => {
  const edges = [0n, 1n, -1n, 86_399_999_999_999n, 86_400_000_000_000n, -86_400_000_000_000n, -86_400_000_000_001n, 2n ** 63n - 1n, -(2n ** 63n)];
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.constantFrom(...edges)), { maxLength: 50 }), (values) => {
      const got = int96Bytes(BigInt64Array.from(values));
      values.forEach((v, i) => assert.deepEqual(got.subarray(i * 12, i * 12 + 12), int96Reference(v), String(v)));
    }),
    { numRuns: 300 },
  );
  // A sliced column (apache-arrow slices values to the data's offset).
  const all = BigInt64Array.from(edges);
  assert.deepEqual(int96Bytes(all.subarray(3)), Uint8Array.from(edges.slice(3).flatMap((v) => [...int96Reference(v)])));
});
