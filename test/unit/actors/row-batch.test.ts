import { test } from "node:test";
import assert from "node:assert/strict";
import { Packr } from "msgpackr";
import { ErrorKind } from "../../../src/errors.ts";
import { assignFieldIds, parseColumnList, type DataField } from "../../../src/format/data-types.ts";
import { toCanonical } from "../../../src/format/values.ts";
import type { RowBatch } from "../../../actors/wire/messages.ts";
import {
  batchRowConverter,
  compileWireEncoder,
  decodeRowBatch,
  encodeRowBatch,
  isPayloadError,
  packValue,
  parseRawPayload,
  unpackValue,
  type PayloadErrorReason,
} from "../../../actors/wire/row-batch.ts";

const fieldsOf = (sql: string): DataField[] => assignFieldIds(parseColumnList(sql).map((c) => ({ id: -1, ...c }))).fields;

const EVENTS = fieldsOf("id BIGINT, ts TIMESTAMP(3), user STRING, event STRING, amount DOUBLE, qty INT");
const COLS = ["id", "ts", "user", "event", "amount", "qty"];
const MAX = 2n ** 63n - 1n;
const MIN = -(2n ** 63n);
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

function expectPayloadError(f: () => unknown, reason: PayloadErrorReason): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(isPayloadError(e), `expected a PayloadError, got ${String(e)}`);
    assert.equal(e.reason, reason, e.message);
    assert.equal(e.kind, ErrorKind.DataInvalid);
    return true;
  });
}

test("RowBatch msgpack round trip keeps int64 extremes, bytes, nulls and nesting", () => {
  const batch: RowBatch = {
    v: 1,
    schema: 3,
    cols: ["a", "b", "c", "d", "e"],
    rows: [
      [MAX, MIN, 2n ** 53n + 1n, new Uint8Array([0, 255, 7]), { k: [1, null, "x"] }],
      [0, -1, 1.5, null, [[1, 2]]],
      [2 ** 53, -(2 ** 53), 4294967296, "héllo", true],
    ],
  };
  const bytes = encodeRowBatch(batch);
  const back = decodeRowBatch(bytes);
  assert.equal(back.v, 1);
  assert.equal(back.schema, 3);
  assert.deepEqual(back.cols, batch.cols);
  const r0 = back.rows[0]!;
  assert.equal(r0[0], MAX);
  assert.equal(r0[1], MIN);
  assert.equal(r0[2], 2n ** 53n + 1n);
  assert.deepEqual([...(r0[3] as Uint8Array)], [0, 255, 7]);
  assert.deepEqual({ ...(r0[4] as object) }, { k: [1, null, "x"] });
  assert.deepEqual(back.rows[1], [0, -1, 1.5, null, [[1, 2]]]);
  // Integers within ±2^53 come back as numbers (no BigInt allocation on the hot path).
  assert.deepEqual(back.rows[2], [2 ** 53, -(2 ** 53), 4294967296, "héllo", true]);
  // Readable without natslake's settings (no records extension): a plain msgpack map.
  const plain = new Packr({ useRecords: false, mapsAsObjects: true }).unpack(bytes) as Record<string, unknown>;
  assert.deepEqual(plain["cols"], batch.cols);
});

test("decodeRowBatch rejects what is not a well-formed RowBatch", () => {
  expectPayloadError(() => decodeRowBatch(new Uint8Array()), "empty");
  expectPayloadError(() => decodeRowBatch(new Uint8Array([0xc1])), "bad-msgpack");
  expectPayloadError(() => decodeRowBatch(packValue([{ a: 1 }])), "not-rows");
  expectPayloadError(() => decodeRowBatch(packValue({ v: 2, cols: [], rows: [] })), "bad-batch");
  expectPayloadError(() => decodeRowBatch(packValue({ v: 1, cols: [1], rows: [] })), "bad-batch");
  expectPayloadError(() => decodeRowBatch(packValue({ v: 1, cols: ["a", "a"], rows: [] })), "bad-batch");
  expectPayloadError(() => decodeRowBatch(packValue({ v: 1, cols: ["a"], rows: {} })), "bad-batch");
});

test("parseRawPayload accepts JSON and msgpack rows, arrays of rows and RowBatches", () => {
  assert.deepEqual(parseRawPayload(utf8('{"id": 1, "user": "a"}')), { rows: [{ id: 1, user: "a" }] });
  assert.deepEqual(parseRawPayload(utf8(' \n[{"id": 1}, {"id": 2}]')), { rows: [{ id: 1 }, { id: 2 }] });
  assert.deepEqual(parseRawPayload(utf8("[]")), { rows: [] });
  const m = parseRawPayload(packValue({ id: MAX, b: new Uint8Array([1]) }));
  assert.ok("rows" in m);
  assert.equal(m.rows[0]!["id"], MAX);
  assert.deepEqual([...(m.rows[0]!["b"] as Uint8Array)], [1]);
  assert.deepEqual(parseRawPayload(packValue([{ a: 1 }, { a: "x" }])), { rows: [{ a: 1 }, { a: "x" }] });
  const jb = parseRawPayload(utf8('{"v":1,"schema":0,"cols":["id","user"],"rows":[[1,"a"],[2,"b"]]}'));
  assert.deepEqual(jb, { batch: { v: 1, schema: 0, cols: ["id", "user"], rows: [[1, "a"], [2, "b"]] } });
  const mb = parseRawPayload(encodeRowBatch({ v: 1, schema: 0, cols: ["id"], rows: [[MAX]] }));
  assert.ok("batch" in mb);
  assert.equal(mb.batch.rows[0]![0], MAX);
});

test("parseRawPayload keeps JSON integers beyond 2^53 and long decimals exact", () => {
  const p = parseRawPayload(utf8('{"id": 9223372036854775807, "small": 12, "dec": 12345678901234567890.123456789, "f": 0.5, "s": "1234567890123456789"}'));
  assert.ok("rows" in p);
  const r = p.rows[0]!;
  assert.equal(r["id"], MAX);
  assert.equal(r["small"], 12);
  assert.equal(r["dec"], "12345678901234567890.123456789");
  assert.equal(r["f"], 0.5);
  assert.equal(r["s"], "1234567890123456789");
  const dec = fieldsOf("d DECIMAL(38, 9)")[0]!.type;
  assert.equal(toCanonical(dec, r["dec"], "d"), 12345678901234567890123456789n);
});

test("parseRawPayload rejects invalid payloads with a reason", () => {
  expectPayloadError(() => parseRawPayload(new Uint8Array()), "empty");
  expectPayloadError(() => parseRawPayload(utf8("  \n ")), "empty");
  expectPayloadError(() => parseRawPayload(utf8('{"id": 1')), "bad-json");
  expectPayloadError(() => parseRawPayload(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])), "bad-json");
  expectPayloadError(() => parseRawPayload(utf8('[{"id": 1}, 3]')), "not-rows");
  expectPayloadError(() => parseRawPayload(utf8("[[1, 2]]")), "not-rows");
  expectPayloadError(() => parseRawPayload(packValue("a string")), "not-rows");
  expectPayloadError(() => parseRawPayload(packValue(42.5)), "not-rows");
  expectPayloadError(() => parseRawPayload(packValue(null)), "not-rows");
  expectPayloadError(() => parseRawPayload(new Uint8Array([0xc1])), "bad-msgpack");
  expectPayloadError(() => parseRawPayload(new Uint8Array([0x92, 0x80])), "bad-msgpack"); // truncated array
  expectPayloadError(() => parseRawPayload(new Uint8Array([...packValue({ a: 1 }), 0x01])), "bad-msgpack"); // trailing bytes
  expectPayloadError(() => parseRawPayload(utf8('{"v": 1, "cols": "id", "rows": []}')), "bad-batch");
});


test("row converters are built once per (schema, cols) and cached", () => {
  const a = batchRowConverter(EVENTS, COLS);
  assert.equal(batchRowConverter(EVENTS, [...COLS]), a);
  assert.notEqual(batchRowConverter(EVENTS, ["qty", "id"]), a);
  // A column named __proto__ is an own property, not the prototype.
  const odd = fieldsOf("`__proto__` INT, `a\"b` STRING");
  const row = batchRowConverter(odd, ["__proto__", 'a"b']).convert([5, "x"]);
  assert.equal(Object.getPrototypeOf(row), Object.prototype);
  assert.deepEqual(Object.entries(row), [
    ["__proto__", 5],
    ['a"b', "x"],
  ]);
});

test("wire encoders: canonical → wire → msgpack → toCanonical is the identity", () => {
  const fields = fieldsOf(
    "b BIGINT, small BIGINT, dec DECIMAL(38, 10), ts3 TIMESTAMP(3), ts9 TIMESTAMP(9), ltz TIMESTAMP(6) WITH LOCAL TIME ZONE, d DATE, t TIME(3), " +
      "bin BYTES, f FLOAT, dbl DOUBLE, bool BOOLEAN, s STRING, arr ARRAY<BIGINT>, ms MAP<STRING, INT>, mi MAP<INT, STRING>, r ROW<x INT, y DECIMAL(5, 2)>, nul INT",
  );
  const input: Record<string, unknown> = {
    b: MIN,
    small: 42,
    dec: "-1234567890123456789012345678.0123456789",
    ts3: 1_700_000_000_123,
    ts9: "2024-02-29T12:34:56.123456789",
    ltz: "1969-12-31T23:59:59.999999Z",
    d: "1999-12-31",
    t: "23:59:59.999",
    bin: new Uint8Array([1, 2, 3]),
    f: 1.1,
    dbl: -0.1,
    bool: true,
    s: "ünïcødé",
    arr: [MAX, 1, null],
    ms: { a: 1, b: null },
    mi: [
      [1, "one"],
      [-2, "minus two"],
    ],
    r: { x: 1, y: "3.14" },
    nul: null,
  };
  const wire = fields.map((f) => compileWireEncoder(f.type)(toCanonical(f.type, input[f.name], f.name)));
  const back = unpackValue(packValue(wire)) as unknown[];
  // (msgpackr decodes bin as a Buffer, a Uint8Array subclass: compare bytes as plain Uint8Arrays.)
  const plainBytes = (v: unknown): unknown => (v instanceof Uint8Array ? new Uint8Array(v) : v);
  fields.forEach((f, k) => {
    assert.deepEqual(plainBytes(toCanonical(f.type, back[k], f.name)), plainBytes(toCanonical(f.type, input[f.name], f.name)), f.name);
  });
  // Forms other languages read naturally.
  const at = (name: string): unknown => wire[fields.findIndex((f) => f.name === name)];
  assert.equal(at("small"), 42);
  assert.equal(at("b"), MIN);
  assert.equal(at("dec"), "-1234567890123456789012345678.0123456789");
  assert.equal(at("ts3"), 1_700_000_000_123);
  assert.equal(at("ts9"), "2024-02-29T12:34:56.123456789");
  assert.equal(at("d"), "1999-12-31");
});

