import { test } from "node:test";
import assert from "node:assert/strict";
import * as arrow from "apache-arrow";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { assignFieldIds, parseColumnList, type DataField } from "../../../src/format/data-types.ts";
import { encodeRowBatch } from "../../../actors/wire/row-batch.ts";
import { decodeRows, decodeSized, packPayloads } from "../../../actors/ingest/decode.ts";
import { RecordBatchBuilder } from "../../../src/codec/columns/record-batch-builder.ts";
import { Timestamp, type Row } from "../../../src/format/values.ts";
import { groupBatches } from "../../../src/write/table-write.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";

const fieldsOf = (sql: string): DataField[] => assignFieldIds(parseColumnList(sql).map((c) => ({ id: -1, ...c }))).fields;
const FIELDS = fieldsOf("id BIGINT NOT NULL, user STRING, amount DOUBLE, ts TIMESTAMP(3)");

/** 20 good batches of 50 rows, then the bad cases, in stream order. */
function messages(): Array<{ seq: number; data: Uint8Array }> {
  const out: Array<{ seq: number; data: Uint8Array }> = [];
  let seq = 10;
  for (let m = 0; m < 20; m++) {
    const rows = Array.from({ length: 50 }, (_, i) => [m * 50 + i, `u${i}`, i / 4, 1_700_000_000_000 + i]);
    out.push({ seq: seq++, data: encodeRowBatch({ v: 1, schema: 0, cols: ["id", "user", "amount", "ts"], rows }) });
  }
  out.push({ seq: seq++, data: new Uint8Array([0xc1]) }); // not msgpack at all
  out.push({ seq: seq++, data: encodeRowBatch({ v: 1, schema: 0, cols: ["id", "nope"], rows: [[1, 2]] }) }); // unknown column
  // A row missing its NOT NULL id and a row with a string amount, between two good rows (columns in another order).
  out.push({ seq: seq++, data: encodeRowBatch({ v: 1, schema: 0, cols: ["user", "id"], rows: [["a", 5000], ["b", null], ["c", 5001]] }) });
  out.push({ seq: seq++, data: encodeRowBatch({ v: 1, schema: 0, cols: ["id", "amount"], rows: [[5002, "x"], [5003, 1.5]] }) });
  return out;
}

/** `decodeSized` as a writer's bucket buffer runs it: a job's messages packed in one buffer. */
function decodeJobRows(fields: readonly DataField[], input: ReadonlyArray<{ seq: number; data: Uint8Array }>, opts: { direct?: boolean } = {}) {
  const out = decodeSized(fields, packPayloads(input), opts);
  return { ...out, batch: out.builder === null ? null : out.builder.finish() };
}

for (const direct of [true, false]) {
  test(`ingest decoding (${direct ? "direct" : "generic"} path) - good rows land in order; every bad row or payload is rejected with its reason`, () => {
    const r = decodeJobRows(FIELDS, messages(), { direct });
    assert.equal(r.rows, 1000 + 3);
    assert.ok(r.batch !== null);
    assert.equal(r.batch.numRows, r.rows);
    const rows = recordBatchToRows(FIELDS, r.batch);
    assert.deepEqual(rows.slice(0, 1000).map((x) => Number(x["id"])), Array.from({ length: 1000 }, (_, i) => i));
    assert.deepEqual(rows.slice(1000).map((x) => [Number(x["id"]), x["user"], x["amount"]]), [[5000, "a", null], [5001, "c", null], [5003, null, 1.5]]);
    assert.equal(rows[3]!["amount"], 0.75);
    assert.deepEqual(
      r.rejected.map((x) => [x.seq, x.rowIndex]),
      [[30, -1], [31, 0], [32, 1], [33, 0]],
    );
    assert.match(r.rejected[0]!.reason, /not valid msgpack/);
    assert.equal(r.rejected[0]!.original, "wQ==", "an undecodable payload is kept whole, in base64");
    assert.match(r.rejected[1]!.reason, /unknown column 'nope'/);
    assert.match(r.rejected[2]!.reason, /id is NOT NULL/);
    assert.deepEqual(r.rejected[2]!.original, { user: "b", id: null });
    assert.match(r.rejected[3]!.reason, /amount/);
  });
}

test("ingest decoding - a job whose rows are all bad gives no builder; one given is appended to", () => {
  const bad = [{ seq: 1, data: encodeRowBatch({ v: 1, schema: 0, cols: ["id"], rows: [[null]] }) }];
  const r = decodeSized(FIELDS, packPayloads(bad));
  assert.equal(r.builder, null);
  assert.equal(r.rows, 0);
  assert.equal(r.rejected.length, 1);
  const into = new RecordBatchBuilder(FIELDS);
  const first = decodeSized(FIELDS, packPayloads(messages().slice(0, 2)), { into });
  const second = decodeSized(FIELDS, packPayloads(bad), { into });
  assert.equal(first.builder, into);
  assert.equal(second.builder, into, "kept even when nothing landed");
  assert.equal(into.length, 100);
});

test("decodeRows (the row path of partitioned tables) - the columnar path's rows and rejections, row by row", () => {
  const input = messages();
  const columnar = decodeJobRows(FIELDS, input);
  const builder = new RecordBatchBuilder(FIELDS);
  const sunk: Row[] = [];
  const r = decodeRows(FIELDS, input, (row) => {
    sunk.push(row);
    builder.appendRow(row);
  });
  assert.equal(r.rows, columnar.rows);
  assert.deepEqual(r.rejected, columnar.rejected, "same rows rejected, same reasons, same originals, same order");
  assert.deepEqual(recordBatchToRows(FIELDS, builder.finish()), recordBatchToRows(FIELDS, columnar.batch!));
  assert.ok(sunk[0]!["ts"] instanceof Timestamp, "the sink gets canonical rows");
  assert.equal(typeof sunk[0]!["id"], "bigint");
});

test("decodeRows - any column order, absent nullable columns as null, BIGINT ±2^63 bounds; a row the sink refuses is rejected alone", () => {
  const fields = fieldsOf("id BIGINT NOT NULL, note STRING, qty INT");
  const MAX = 2n ** 63n - 1n;
  const MIN = -(2n ** 63n);
  const data = encodeRowBatch({ v: 1, schema: 0, cols: ["qty", "id"], rows: [[1, MAX], [2, MIN], [3, 7], [4, 8]] });
  const got: Row[] = [];
  const r = decodeRows(fields, [{ seq: 3, data }], (row) => {
    if (row["id"] === 7n) throw new Error("partition refused");
    got.push(row);
  });
  assert.equal(r.rows, 3);
  assert.deepEqual(got, [
    { id: MAX, note: null, qty: 1 },
    { id: MIN, note: null, qty: 2 },
    { id: 8n, note: null, qty: 4 },
  ]);
  assert.deepEqual(r.rejected, [{ seq: 3, rowIndex: 2, reason: "partition refused", original: { qty: 3, id: 7 } }]);
});

test("packPayloads - messages share one buffer; offsets and sequences index it", () => {
  const p = packPayloads([
    { seq: 4, data: new Uint8Array([1, 2]) },
    { seq: 9, data: new Uint8Array([]) },
    { seq: 11, data: new Uint8Array([3]) },
  ]);
  assert.deepEqual([...p.data], [1, 2, 3]);
  assert.deepEqual(p.offsets, [0, 2, 2, 3]);
  assert.deepEqual(p.seqs, [4, 9, 11]);
});

test("groupBatches - consecutive batches join into pieces of at most maxRows rows (a larger batch stays whole)", () => {
  const f = fieldsOf("id INT");
  const b = (n: number, from: number): arrow.RecordBatch => rowsToRecordBatch(f, Array.from({ length: n }, (_, i) => ({ id: from + i })));
  const pieces = groupBatches([b(3, 0), b(4, 3), b(2, 7), b(20, 9), b(1, 29)], 10);
  assert.deepEqual(pieces.map((p) => p.numRows), [9, 20, 1]);
  assert.ok(pieces[0] instanceof arrow.Table);
  assert.deepEqual(recordBatchToRows(f, pieces[0]!).map((r) => r["id"]), [0, 1, 2, 3, 4, 5, 6, 7, 8]);
  assert.deepEqual(groupBatches([], 10), []);
});
