import { test } from "node:test";
import assert from "node:assert/strict";
import { assignFieldIds, parseColumnList, type DataField } from "../../../src/format/data-types.ts";
import { compileConverter } from "../../../src/format/row-converter.ts";
import { toCanonical } from "../../../src/format/values.ts";
import { MsgpackWriter, compileInputPacker, compileWireEncoder, decodeRowBatch, encodeRowBatch, packValue, rowBatchPrefix, unpackValue } from "../../../actors/wire/row-batch.ts";

const fieldsOf = (sql: string): DataField[] => assignFieldIds(parseColumnList(sql).map((c) => ({ id: -1, ...c }))).fields;

const FIELDS = fieldsOf(
  "b BOOLEAN, t TINYINT, s SMALLINT, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 2), str STRING, v VARCHAR(5), c CHAR(3), " +
    "dt DATE, tm TIME, ts TIMESTAMP(3), ts9 TIMESTAMP(9), ltz TIMESTAMP_LTZ(6), bin BYTES, arr ARRAY<INT>, m MAP<STRING, BIGINT>, r ROW<x INT, y STRING>, nn INT NOT NULL",
);

const INPUTS: unknown[] = [
  null, undefined, true, false, "true", 0, -0, 1, -1, 31, 32, -32, -33, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 65535, 65536,
  2147483647, 2147483648, -2147483648, -2147483649, 4294967295, 4294967296, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, 1.5, -2.25, 1e300, NaN, Infinity, 0.1,
  1700000000000, -1700000000000, 0n, 5n, -5n, 2n ** 31n, -(2n ** 31n) - 1n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 63n, "", "a", "abc", "héllo", "日本語テキスト",
  "x".repeat(31), "x".repeat(32), "y".repeat(300), "ü".repeat(40), "z".repeat(70000), "🙂", "12", "-7", "2024-01-02", "2024-01-02T03:04:05.123456789",
  "12:34:56", "123.45", new Uint8Array([1, 2, 3]), [1, 2], [1, null], { a: 1n }, { x: 1, y: "q" }, {}, [],
];

/** What the producer sent before: canonical value → wire value → generic msgpack. */
function oldWay(f: DataField, v: unknown): { ok: true; bytes: unknown } | { ok: false; error: string } {
  try {
    const c = v === null || v === undefined ? toCanonical(f.type, v, f.name) : compileConverter(f.type, f.name)(v);
    return { ok: true, bytes: unpackValue(packValue(compileWireEncoder(f.type)(c))) };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
}

test("compileInputPacker accepts, rejects and encodes every value as conversion + wire encoding + packValue did", () => {
  for (const f of FIELDS) {
    for (const keyed of [false, true]) {
      const pack = compileInputPacker(f, keyed);
      for (const v of INPUTS) {
        const want = oldWay(f, v);
        const w = new MsgpackWriter(16);
        let got: typeof want;
        try {
          pack(w, v);
          got = { ok: true, bytes: unpackValue(w.buf.subarray(0, w.pos)) };
        } catch (e) {
          got = { ok: false, error: (e as Error).message };
        }
        assert.deepEqual(got, want, `${f.name} ${f.type.root} ${typeof v} ${String(v).slice(0, 40)}`);
      }
    }
  }
});

test("MsgpackWriter writes msgpackr's bytes for numbers and strings", () => {
  const values: unknown[] = [0, 1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, -1, -32, -33, -128, -129, -32768, -32769, -(2 ** 31), 2 ** 32, 1.5, -0, NaN, "", "abc", "x".repeat(40), "é", "ü".repeat(200), true, false, null, 7n, -(2n ** 63n)];
  for (const v of values) {
    const w = new MsgpackWriter(4);
    w.value(v);
    assert.deepEqual(unpackValue(w.buf.subarray(0, w.pos)), unpackValue(packValue(v)), String(v));
    if (typeof v === "number" || (typeof v === "string" && v.length < 32)) assert.deepEqual([...w.buf.subarray(0, w.pos)], [...packValue(v)], String(v));
  }
  const w = new MsgpackWriter(4);
  w.int64Number(-(2 ** 53 - 1));
  w.int64Number(2 ** 40 + 3);
  assert.deepEqual([...w.buf.subarray(0, w.pos)], [...packValue(-(2n ** 53n - 1n)), ...packValue(2n ** 40n + 3n)]);
});

test("a RowBatch framed from rowBatchPrefix decodes like encodeRowBatch's", () => {
  for (const n of [0, 1, 15, 16, 500, 70000]) {
    const rows = Array.from({ length: n }, (_, i) => [i, `u${i}`]);
    const w = new MsgpackWriter(64);
    w.bytes(rowBatchPrefix(3, ["id", "user"]));
    w.arrayHeader(n);
    for (const r of rows) {
      w.arrayHeader(2);
      w.value(r[0]);
      w.value(r[1]);
    }
    assert.deepEqual(decodeRowBatch(w.buf.subarray(0, w.pos)), decodeRowBatch(encodeRowBatch({ v: 1, schema: 3, cols: ["id", "user"], rows })));
  }
});

test("RecordBatchBuilder.appendArray accepts, rejects and stores what batchRowConverter + appendRow do", async () => {
  const { RecordBatchBuilder } = await import("../../../src/codec/columns/record-batch-builder.ts");
  const { recordBatchToRows } = await import("../../../src/codec/columns/batch-to-rows.ts");
  const { batchRowConverter } = await import("../../../actors/wire/row-batch.ts");
  // The batch names the columns in another order and leaves one out (a null, or an error for NOT NULL).
  for (const drop of ["str", "nn"]) {
    const cols = FIELDS.map((f) => f.name).filter((n) => n !== drop).reverse();
    const { convert, index, check } = batchRowConverter(FIELDS, cols);
    for (const f of FIELDS) {
      const j = cols.indexOf(f.name);
      if (j < 0) continue;
      const a = new RecordBatchBuilder(FIELDS, 4);
      const b = new RecordBatchBuilder(FIELDS, 4);
      for (const v of INPUTS) {
        const values = cols.map((c) => (c === "nn" ? 1 : null)) as unknown[];
        values[j] = v;
        let want = "ok";
        let got = "ok";
        try {
          a.appendRow(convert(values));
        } catch (e) {
          want = (e as Error).message;
        }
        try {
          check(values);
          b.appendArray(values, index);
        } catch (e) {
          got = (e as Error).message;
        }
        assert.equal(got, want, `${f.name} ${String(v).slice(0, 40)}`);
      }
      assert.deepEqual(recordBatchToRows(FIELDS, b.finish()), recordBatchToRows(FIELDS, a.finish()), f.name);
    }
  }
});
