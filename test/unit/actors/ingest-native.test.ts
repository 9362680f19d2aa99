/**
 * The native direct path (actors/ingest/native-decode.ts, native/parquet/src/row_batch.rs) against the JavaScript
 * direct path (actors/ingest/direct.ts): for any job of payloads — clean ones of every direct type at the edges of
 * their ranges, in every msgpack encoding, and broken ones of every kind — both leave byte-identical column buffers
 * in the builder and the same rejections. The payloads are written byte by byte here (not by a msgpack library), so
 * every number width, string form and envelope shape is reached.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import * as arrow from "apache-arrow";
import { RecordBatchBuilder } from "../../../src/codec/columns/record-batch-builder.ts";
import { assignFieldIds, parseColumnList, type DataField, type DataType } from "../../../src/format/data-types.ts";
import { decodeSized, packPayloads } from "../../../actors/ingest/decode.ts";
import { nativeDecodeChoice, nativeDecoderFor } from "../../../actors/ingest/native-decode.ts";

const fieldsOf = (sql: string): DataField[] => assignFieldIds(parseColumnList(sql).map((c) => ({ id: -1, ...c }))).fields;
const WIDE = fieldsOf(
  "i INT, s SMALLINT, t TINYINT, b BIGINT, d DOUBLE, f FLOAT, o BOOLEAN, str STRING, ts TIMESTAMP(3), us TIMESTAMP(6), ltz TIMESTAMP_LTZ(9), " +
    "t0 TIMESTAMP(0), nn BIGINT NOT NULL, ns STRING NOT NULL, ni INT NOT NULL, no BOOLEAN NOT NULL, nf FLOAT NOT NULL, nts TIMESTAMP(6) NOT NULL",
);
const BENCH = fieldsOf("id BIGINT, ts TIMESTAMP(3), user STRING, event STRING, amount DOUBLE, qty INT");
const skip = nativeDecoderFor(WIDE) === null ? "the native addon is not built or not loadable (scripts/setup.sh builds it where cargo is installed)" : false;

// ---- msgpack, byte by byte -------------------------------------------------------------------------------------

const cat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);
function beBytes(v: bigint, n: number): number[] {
  const out: number[] = [];
  for (let i = n - 1; i >= 0; i--) out.push(Number((BigInt.asUintN(n * 8, v) >> BigInt(i * 8)) & 0xffn));
  return out;
}

/** Every msgpack integer form that holds `v`. */
function intForms(v: bigint): Uint8Array[] {
  const forms: Uint8Array[] = [];
  if (v >= 0n && v <= 0x7fn) forms.push(bytes(Number(v)));
  if (v >= -32n && v < 0n) forms.push(bytes(Number(v) + 256));
  const unsigned: Array<[number, number]> = [[0xcc, 1], [0xcd, 2], [0xce, 4], [0xcf, 8]];
  const signed: Array<[number, number]> = [[0xd0, 1], [0xd1, 2], [0xd2, 4], [0xd3, 8]];
  for (const [tag, n] of unsigned) if (v >= 0n && v < 1n << BigInt(n * 8)) forms.push(bytes(tag, ...beBytes(v, n)));
  for (const [tag, n] of signed) if (v >= -(1n << BigInt(n * 8 - 1)) && v < 1n << BigInt(n * 8 - 1)) forms.push(bytes(tag, ...beBytes(v, n)));
  return forms;
}
const f64 = (x: number): Uint8Array => {
  const b = new Uint8Array(9);
  b[0] = 0xcb;
  new DataView(b.buffer).setFloat64(1, x);
  return b;
};
const f32 = (x: number): Uint8Array => {
  const b = new Uint8Array(5);
  b[0] = 0xca;
  new DataView(b.buffer).setFloat32(1, x);
  return b;
};
function strOf(raw: Uint8Array, form: number): Uint8Array {
  const n = raw.length;
  if (form === 0 && n < 32) return cat(bytes(0xa0 | n), raw);
  if (form <= 1 && n < 256) return cat(bytes(0xd9, n), raw);
  if (form <= 2) return cat(bytes(0xda, ...beBytes(BigInt(n), 2)), raw);
  return cat(bytes(0xdb, ...beBytes(BigInt(n), 4)), raw);
}
const str = (s: string, form = 0): Uint8Array => strOf(new TextEncoder().encode(s), form);
function header(base: number, tag16: number, n: number, form: number): Uint8Array {
  if (form === 0 && n < 16) return bytes(base | n);
  if (form <= 1) return bytes(tag16, ...beBytes(BigInt(n), 2));
  return bytes(tag16 + 1, ...beBytes(BigInt(n), 4));
}
const arrayHeader = (n: number, form = 0): Uint8Array => header(0x90, 0xdc, n, form);
const mapHeader = (n: number, form = 0): Uint8Array => header(0x80, 0xde, n, form);
const NIL = bytes(0xc0);

// ---- cells ---------------------------------------------------------------------------------------------------

const pick = <T>(xs: readonly T[]): fc.Arbitrary<T> => fc.constantFrom(...xs);
const EDGE_INTS = [0n, 1n, -1n, 127n, 128n, -32n, -33n, -128n, -129n, 255n, 256n, 32767n, 32768n, -32768n, -32769n, 65535n, 65536n, 2n ** 31n - 1n, 2n ** 31n, -(2n ** 31n), -(2n ** 31n) - 1n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) + 1n, -(2n ** 53n), -(2n ** 53n) - 1n, 2n ** 63n - 1n, 2n ** 63n, -(2n ** 63n), 2n ** 64n - 1n, 8_640_000_000_000_000n, 9_223_372_036_854n, 9_223_372_036_855n, 1_700_000_000_000n];
const EDGE_DOUBLES = [0, -0, 0.5, -1.5, 3, 2 ** 31, -(2 ** 31), 2 ** 53, -(2 ** 53), 2 ** 63, 1e300, -1e-300, NaN, Infinity, -Infinity, 3.4e38, 3.5e38, 1.1754943508222875e-38, 1e-46, 1700000000000];

/** Any integer, in any of its msgpack forms. */
const intCell = fc
  .oneof(pick(EDGE_INTS), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }), fc.integer({ min: -300, max: 300 }).map(BigInt))
  .chain((v) => pick(intForms(v)));
/** Any number as a float64 or float32. */
const floatCell = fc.oneof(pick(EDGE_DOUBLES), fc.double(), fc.integer().map((n) => n * 1.0)).chain((x) => pick([f64(x), f32(x)]));
const UTF8_ODD: Uint8Array[] = [
  bytes(0xef, 0xbb, 0xbf, 0x61), // a byte-order mark first
  bytes(0x61, 0xef, 0xbb, 0xbf), // … later (plain)
  bytes(0x80), // a lone continuation byte
  bytes(0xc0, 0x80), // overlong
  bytes(0xed, 0xa0, 0x80), // a surrogate
  bytes(0xf4, 0x90, 0x80, 0x80), // beyond U+10FFFF
  bytes(0xe2, 0x82), // cut short
  bytes(0xc3, 0xbc), // ü
  bytes(0xf0, 0x9f, 0x98, 0x80), // 😀
];
const strCell = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.string({ unit: "grapheme", maxLength: 40 }), fc.integer({ min: 0, max: 3 })).map(([s, form]) => str(s, form)) },
  { weight: 2, arbitrary: fc.tuple(pick(UTF8_ODD), fc.integer({ min: 0, max: 3 })).map(([raw, form]) => strOf(raw, form)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 6 }).map((raw) => strOf(raw, 0)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 300 }).map((s) => str(s)) },
);
const boolCell = pick([bytes(0xc2), bytes(0xc3)]);
/** Values no direct column takes as they are: binary, ext, arrays, maps, the unused 0xc1. */
const otherCell = pick([bytes(0xc4, 1, 7), bytes(0xd4, 1, 2), bytes(0x91, 1), bytes(0x81, 0xa1, 0x61, 1), bytes(0xc1), bytes(0xd6, 0xff, 0, 0, 0, 1)]);

/** A cell of a column's own kind (the JavaScript path takes most, and refuses some at the edges). */
function ownCell(type: DataType): fc.Arbitrary<Uint8Array> {
  switch (type.root) {
    case "BOOLEAN":
      return boolCell;
    case "VARCHAR":
      return strCell;
    case "DOUBLE":
    case "FLOAT":
      return fc.oneof(floatCell, intCell);
    default:
      return fc.oneof({ weight: 4, arbitrary: intCell }, { weight: 1, arbitrary: floatCell });
  }
}
/** An integer within [lo, hi] (and its edges), in any of its forms, sometimes as a float of the same value. */
const intWithin = (lo: bigint, hi: bigint): fc.Arbitrary<Uint8Array> =>
  fc
    .oneof(pick([lo, hi, 0n, -1n, 1n].filter((v) => v >= lo && v <= hi)), fc.bigInt({ min: lo, max: hi }))
    .chain((v) => pick(Number(v) === Number(BigInt(Number(v))) && Number(v) >= lo && Number(v) <= hi && Math.abs(Number(v)) < 2 ** 53 ? [...intForms(v), f64(Number(v))] : intForms(v)));
const SAFE = 2n ** 53n - 1n;

/** A cell a column takes (as the JavaScript path would): clean payloads are made of these, so that the addon takes them. */
function validCell(type: DataType): fc.Arbitrary<Uint8Array> {
  switch (type.root) {
    case "BOOLEAN":
      return boolCell;
    case "VARCHAR":
      return fc.tuple(fc.string({ unit: "grapheme", maxLength: 40 }), fc.integer({ min: 0, max: 3 })).map(([s, form]) => str(s, form));
    case "DOUBLE":
    case "FLOAT":
      return fc.oneof(fc.double().chain((x) => pick([f64(x), f32(x)])), intWithin(-SAFE, SAFE));
    case "INT":
      return intWithin(-(2n ** 31n), 2n ** 31n - 1n);
    case "SMALLINT":
      return intWithin(-32768n, 32767n);
    case "TINYINT":
      return intWithin(-128n, 127n);
    case "BIGINT":
      // Not ±2^53 exactly: msgpackr makes those numbers, not BigInts, which a BIGINT takes only when safe.
      return fc.oneof(intWithin(-SAFE, SAFE), fc.bigInt({ min: -(2n ** 63n), max: -(2n ** 53n) - 1n }).chain((v) => pick(intForms(v))), fc.bigInt({ min: 2n ** 53n + 1n, max: 2n ** 63n - 1n }).chain((v) => pick(intForms(v))));
    default:
      // Timestamps: epoch millis that fit the column's unit (nanoseconds: 1677–2262).
      return "precision" in type && type.precision > 6 ? intWithin(-9_223_372_036_854n, 9_223_372_036_854n) : intWithin(-SAFE, SAFE);
  }
}
function cleanCell(f: DataField): fc.Arbitrary<Uint8Array> {
  const valid = validCell(f.type);
  return f.type.nullable ? fc.oneof({ weight: 5, arbitrary: valid }, { weight: 1, arbitrary: fc.constant(NIL) }) : valid;
}
/** A cell of the column's kind or its nulls, edges included: some are refused. */
function edgyCell(f: DataField): fc.Arbitrary<Uint8Array> {
  return fc.oneof({ weight: 3, arbitrary: ownCell(f.type) }, { weight: 1, arbitrary: fc.constant(NIL) });
}
const anyCell = (fields: DataField[]): fc.Arbitrary<Uint8Array> =>
  fc.oneof(...fields.map((f) => ownCell(f.type)), fc.constant(NIL), otherCell);

// ---- payloads --------------------------------------------------------------------------------------------------

type Shape = "batch" | "rows-first" | "no-schema" | "float-schema" | "big-schema" | "v2" | "extra-key" | "dup-key" | "unknown-col" | "dup-col" | "trailing" | "truncated" | "rows-not-array" | "long-row" | "short-row";
const GOOD_SHAPES: Shape[] = ["batch", "rows-first", "no-schema", "float-schema"];
const BAD_SHAPES: Shape[] = ["big-schema", "v2", "extra-key", "dup-key", "unknown-col", "dup-col", "trailing", "truncated", "rows-not-array", "long-row", "short-row"];

function payloadArb(fields: DataField[]): fc.Arbitrary<Uint8Array> {
  const names = fields.map((f) => f.name);
  const notNull = names.filter((_, k) => !fields[k]!.type.nullable);
  // Columns of the batch: all (shuffled) or a subset that keeps the NOT NULL ones (or not).
  const colsArb = fc.oneof(
    { weight: 3, arbitrary: fc.shuffledSubarray(names, { minLength: names.length }) },
    { weight: 2, arbitrary: fc.shuffledSubarray(names, { minLength: 0 }).map((c) => [...new Set([...c, ...notNull])]) },
    { weight: 1, arbitrary: fc.shuffledSubarray(names, { minLength: 0 }) },
  );
  return fc
    .record({ cols: colsArb, clean: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 2, arbitrary: fc.constant(false) }), shape: fc.oneof(pick(GOOD_SHAPES), pick(BAD_SHAPES)), rowCount: fc.integer({ min: 0, max: 40 }), form: fc.integer({ min: 0, max: 2 }) })
    .chain(({ cols, clean, shape, rowCount, form }) => {
      const colFields = cols.map((c) => fields[names.indexOf(c)]!);
      const row = fc.tuple(...colFields.map((f) => (clean ? cleanCell(f) : fc.oneof({ weight: 8, arbitrary: cleanCell(f) }, { weight: 2, arbitrary: edgyCell(f) }, { weight: 1, arbitrary: anyCell(fields) }))));
      return fc.tuple(fc.array(row, { minLength: rowCount, maxLength: rowCount }), fc.constant({ cols, shape, form }));
    })
    .map(([rows, { cols, shape, form }]) => {
      const encodedRows = rows.map((cells, r) => {
        let values = cells as Uint8Array[];
        if (shape === "long-row" && r === rows.length - 1) values = [...values, NIL];
        if (shape === "short-row" && r === rows.length - 1) values = values.slice(0, Math.max(0, values.length - 1));
        return cat(arrayHeader(values.length, form), ...values);
      });
      const colNames = shape === "unknown-col" ? [...cols, "nope"] : shape === "dup-col" && cols.length > 0 ? [...cols, cols[0]!] : cols;
      const entries: Array<[string, Uint8Array]> = [
        ["v", intForms(shape === "v2" ? 2n : 1n)[0]!],
        ["cols", cat(arrayHeader(colNames.length, form), ...colNames.map((c) => str(c)))],
        ["rows", shape === "rows-not-array" ? str("rows") : cat(arrayHeader(rows.length, form), ...encodedRows)],
      ];
      if (shape !== "no-schema") entries.splice(1, 0, ["schema", shape === "float-schema" ? f64(0.5) : shape === "big-schema" ? bytes(0xcf, ...beBytes(2n ** 60n, 8)) : bytes(0)]);
      if (shape === "rows-first") entries.unshift(entries.pop()!);
      if (shape === "extra-key") entries.push(["x", bytes(1)]);
      if (shape === "dup-key") entries.push(["v", bytes(1)]);
      const payload = cat(mapHeader(entries.length, form), ...entries.flatMap(([k, v]) => [str(k), v]));
      if (shape === "trailing") return cat(payload, bytes(0x01));
      if (shape === "truncated") return payload.subarray(0, Math.max(1, payload.length - 1 - (rows.length % 5)));
      return payload;
    });
}

// ---- comparing builders ----------------------------------------------------------------------------------------

/** A column's buffers as plain bytes: validity bits of its slots, values, offsets and data. */
function columnBytes(d: arrow.Data): Record<string, unknown> {
  const asBytes = (a: ArrayBufferView | undefined | null): number[] | null => (a === undefined || a === null ? null : [...new Uint8Array(a.buffer, a.byteOffset, a.byteLength)]);
  const validity: number[] = [];
  for (let i = 0; i < d.length; i++) validity.push(d.nullBitmap === undefined || d.nullBitmap === null || d.nullBitmap.length === 0 ? 1 : (d.nullBitmap[i >> 3]! >> (i & 7)) & 1);
  // Boolean value bits past the last slot are not part of the column.
  const values = d.typeId === arrow.Type.Bool ? Array.from({ length: d.length }, (_, i) => (d.values[i >> 3]! >> (i & 7)) & 1) : asBytes(d.values as ArrayBufferView);
  return { length: d.length, nullCount: d.nullCount, validity, values, offsets: asBytes(d.valueOffsets) };
}

function builderBytes(b: RecordBatchBuilder | null): unknown {
  return b === null ? null : b.finish().data.children.map(columnBytes);
}

let taken = 0;
let offered = 0;

function sameAsJavaScript(fields: DataField[], payloads: Uint8Array[]): void {
  const job = packPayloads(payloads.map((data, i) => ({ seq: i + 1, data })));
  const js = decodeSized(fields, job, { native: false });
  const native = decodeSized(fields, job);
  assert.deepStrictEqual(native.rejected, js.rejected);
  assert.equal(native.rows, js.rows);
  assert.deepStrictEqual(builderBytes(native.builder), builderBytes(js.builder));
  // How many payloads the addon took: a property that held only because it declined everything would prove nothing.
  const decoder = nativeDecoderFor(fields)!;
  for (const p of payloads) {
    offered++;
    if (decoder.decodeInto(new RecordBatchBuilder(fields, 4), p) >= 0) taken++;
  }
}

test("native decoding - any job: the same builder bytes, rows and rejections as the JavaScript direct path", { skip }, () => {
  taken = offered = 0;
  fc.assert(fc.property(fc.array(payloadArb(WIDE), { minLength: 1, maxLength: 5 }), (payloads) => sameAsJavaScript(WIDE, payloads)), { numRuns: 600 });
  assert.ok(taken > offered / 8, `the addon took ${taken} of ${offered} payloads`);
  taken = offered = 0;
  fc.assert(fc.property(fc.array(payloadArb(BENCH), { minLength: 1, maxLength: 5 }), (payloads) => sameAsJavaScript(BENCH, payloads)), { numRuns: 300 });
  assert.ok(taken > offered / 4, `the addon took ${taken} of ${offered} payloads`);
});

test("native decoding - clean rows are taken whole; a payload with one row the JavaScript path rolls back is left to it whole", { skip }, () => {
  const cols = BENCH.map((f) => f.name);
  const row = (id: Uint8Array, qty: Uint8Array): Uint8Array => cat(arrayHeader(6), id, intForms(1_700_000_000_000n)[0]!, str("user-1"), NIL, f64(0.25), qty);
  const payload = (rows: Uint8Array[]): Uint8Array => cat(mapHeader(3), str("v"), bytes(1), str("cols"), arrayHeader(6), ...cols.map((c) => str(c)), str("rows"), arrayHeader(rows.length), ...rows);
  const decoder = nativeDecoderFor(BENCH)!;
  const builder = new RecordBatchBuilder(BENCH, 4);
  assert.equal(decoder.decodeInto(builder, payload([row(bytes(1), bytes(2)), row(bytes(0xd3, ...beBytes(-(2n ** 60n), 8)), NIL)])), 2);
  // An INT of 2^31 is rolled back by the JavaScript path (and rejected by the generic one): the addon takes nothing.
  const bad = payload([row(bytes(3), bytes(4)), row(bytes(5), intForms(2n ** 31n)[0]!)]);
  assert.equal(decoder.decodeInto(builder, bad), -1);
  assert.equal(builder.length, 2);
  const out = decodeSized(BENCH, packPayloads([{ seq: 9, data: bad }]));
  assert.equal(out.rows, 1);
  assert.deepStrictEqual(out.rejected.map((r) => [r.seq, r.rowIndex]), [[9, 1]]);
  const batch = builder.finish();
  assert.deepStrictEqual([...(batch.getChild("id")!.data[0]!.values as BigInt64Array)], [1n, -(2n ** 60n)]);
  assert.equal(batch.getChild("qty")!.nullCount, 1);
  assert.equal(batch.getChild("event")!.nullCount, 2);
});

test("native decoding - a payload larger than the scratch buffer grows it and is taken", { skip }, () => {
  const big = "x".repeat(200_000);
  const payload = cat(mapHeader(3), str("v"), bytes(1), str("cols"), arrayHeader(1), str("user"), str("rows"), arrayHeader(3, 1), ...[big, "y", big].map((s) => cat(arrayHeader(1), str(s, 3))));
  const builder = new RecordBatchBuilder(BENCH, 4);
  assert.equal(nativeDecoderFor(BENCH)!.decodeInto(builder, payload), 3);
  const users = builder.finish().getChild("user")!.toArray() as string[];
  assert.deepStrictEqual(users.map((u) => u.length), [200_000, 1, 200_000]);
});

/** Runs `f` with NATSLAKE_DECODE_NATIVE set to `value`, then puts it back. */
function withSwitch<T>(value: string, f: () => T): T {
  const before = process.env["NATSLAKE_DECODE_NATIVE"];
  process.env["NATSLAKE_DECODE_NATIVE"] = value;
  try {
    return f();
  } finally {
    if (before === undefined) delete process.env["NATSLAKE_DECODE_NATIVE"];
    else process.env["NATSLAKE_DECODE_NATIVE"] = before;
  }
}

test("native decoding - NATSLAKE_DECODE_NATIVE=0 forces the JavaScript path; the choice a node logs says which and why", () => {
  withSwitch("0", () => {
    assert.equal(nativeDecoderFor(BENCH), null);
    assert.deepStrictEqual(nativeDecodeChoice(), { path: "javascript", reason: "NATSLAKE_DECODE_NATIVE=0" });
  });
  assert.throws(() => withSwitch("yes", () => nativeDecodeChoice()), /NATSLAKE_DECODE_NATIVE must be 0 or 1/);
  // A table with a column without a direct path never has a native decoder.
  assert.equal(nativeDecoderFor(fieldsOf("id BIGINT, day DATE")), null);
  if (skip === false) {
    assert.deepStrictEqual(nativeDecodeChoice(), { path: "native", reason: "the native addon is built" });
    assert.deepStrictEqual(withSwitch("1", () => nativeDecodeChoice()), { path: "native", reason: "NATSLAKE_DECODE_NATIVE=1" });
  } else {
    assert.equal(nativeDecodeChoice().path, "javascript");
    assert.throws(() => withSwitch("1", () => nativeDecodeChoice()), /NATSLAKE_DECODE_NATIVE=1, but the native addon's decoder does not load/);
  }
});
