/**
 * Record batches posted between threads as their column buffers (src/codec/batch-transfer.ts), through a real
 * MessageChannel: every Paimon type (nested ones included) comes back with the same rows; buffers a column owns whole
 * are transferred (gone from the sender), views into a larger buffer are copied (the sender's data stays intact).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MessageChannel } from "node:worker_threads";
import { makeData, Struct, Table, tableFromIPC, tableToIPC, RecordBatch } from "apache-arrow";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { toArrowSchema } from "../../../src/codec/arrow-schema.ts";
import { batchFromPosted, postableBatch, type PostedBatch } from "../../../src/codec/batch-transfer.ts";
import { gatherColumn } from "../../../src/lsm/gather.ts";
import { ALL_ROWS, ALL_TYPES } from "../../helpers/codec-fixtures.ts";

async function post(batch: RecordBatch): Promise<{ received: PostedBatch; transfer: ArrayBuffer[] }> {
  const { posted, transfer } = postableBatch(batch);
  const { port1, port2 } = new MessageChannel();
  const received = new Promise<PostedBatch>((resolve) => port2.once("message", resolve));
  port1.postMessage(posted, transfer);
  const out = await received;
  port1.close();
  return { received: out, transfer };
}

test("every type's batch comes back with the same rows, rebuilt in the schema both threads know", async () => {
  const rows = Array.from({ length: 40 }, (_, i) => ALL_ROWS[i % ALL_ROWS.length]!);
  const expected = recordBatchToRows(ALL_TYPES, rowsToRecordBatch(ALL_TYPES, rows));
  const { received } = await post(rowsToRecordBatch(ALL_TYPES, rows));
  const batch = batchFromPosted(toArrowSchema(ALL_TYPES), received);
  assert.equal(batch.numRows, 40);
  assert.deepEqual(recordBatchToRows(ALL_TYPES, batch), expected);
});

test("a decoded batch (views into one stream's buffer) is copied: its rows come back, and the sender's data is intact", async () => {
  const built = rowsToRecordBatch(ALL_TYPES, Array.from({ length: 30 }, (_, i) => ALL_ROWS[i % ALL_ROWS.length]!));
  const decoded = tableFromIPC(tableToIPC(new Table([built]), "stream")).batches[0]!;
  const before = recordBatchToRows(ALL_TYPES, decoded);
  const { received, transfer } = await post(decoded);
  assert.deepEqual(recordBatchToRows(ALL_TYPES, batchFromPosted(toArrowSchema(ALL_TYPES), received)), before);
  assert.ok(!transfer.includes(decoded.data.children[0]!.values.buffer as ArrayBuffer), "the stream's buffer stays");
  assert.deepEqual(recordBatchToRows(ALL_TYPES, decoded), before, "the sender's batch still reads");
});

test("columns that own their buffers (a merge's gathered ones) are transferred, not copied", async () => {
  const types = ALL_TYPES.filter((t) => ["i64", "s", "d38", "f64"].includes(t.name));
  const source = rowsToRecordBatch(types, Array.from({ length: 100 }, (_, i) => ALL_ROWS[i % ALL_ROWS.length]!));
  const picks = { length: 50, batchOf: null, rowOf: Int32Array.from({ length: 50 }, (_, i) => 99 - 2 * i) };
  const columns = types.map((t, k) => gatherColumn(t.type, [source.data.children[k]!], picks, t.name));
  const schema = toArrowSchema(types);
  const batch = new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: 50, nullCount: 0, children: columns }));
  const expected = recordBatchToRows(types, batch);
  const values = columns.map((c) => c.values.buffer);
  const { received, transfer } = await post(batch);
  for (const b of values) assert.ok(transfer.includes(b as ArrayBuffer), "a gathered column's values buffer is in the transfer list");
  for (const b of values) assert.equal(b.byteLength, 0, "moved to the receiver");
  assert.deepEqual(recordBatchToRows(types, batchFromPosted(schema, received)), expected);
});
