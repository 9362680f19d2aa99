/**
 * IpcStreamDecoder (src/codec/ipc-decode.ts): the batches of IPC streams decoded with the schema parsed once and the
 * vectors viewing the stream's bytes read back as `tableFromIPC` reads them — every Paimon type, nulls, nesting,
 * several batches a stream, the consume protocol's chunks — also from unaligned bytes; a new schema is parsed when it
 * changes; dictionary streams fall back to `tableFromIPC`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as arrow from "apache-arrow";
import { IpcStreamDecoder } from "../../../src/codec/ipc-decode.ts";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { ipcStreamOf, schemaMessage, splitIpcStream } from "../../../src/codec/ipc-stream.ts";
import { packBatches, ChunkPacker } from "../../../actors/consume-chunks.ts";
import { ALL_ROWS, ALL_TYPES } from "../../helpers/codec-fixtures.ts";

const rowsOf = (batches: arrow.RecordBatch[]): unknown[] => batches.flatMap((b) => recordBatchToRows(ALL_TYPES, b));

/** The same bytes at an offset that is not a multiple of 8 in a larger buffer. */
function unaligned(bytes: Uint8Array): Uint8Array {
  const buf = new Uint8Array(bytes.byteLength + 3);
  buf.set(bytes, 3);
  return buf.subarray(3);
}

/** The same bytes as a Node Buffer viewing a larger one at an odd offset (as nats.js hands a message's data over). */
function unalignedBuffer(bytes: Uint8Array): Buffer {
  const buf = Buffer.alloc(bytes.byteLength + 161);
  buf.set(bytes, 161);
  return buf.subarray(161);
}

function allTypesBatch(copies: number): arrow.RecordBatch {
  const rows = Array.from({ length: copies }, () => ALL_ROWS).flat();
  return rowsToRecordBatch(ALL_TYPES, rows);
}

test("ipc decode - every Paimon type, several batches a stream, aligned or not: the rows tableFromIPC reads; the schema is parsed once", () => {
  const batches = [allTypesBatch(1), allTypesBatch(40), allTypesBatch(3)];
  const stream = arrow.tableToIPC(new arrow.Table(batches), "stream");
  const expected = rowsOf(arrow.tableFromIPC(stream).batches);
  assert.equal(expected.length, ALL_ROWS.length * 44);
  const decoder = new IpcStreamDecoder();
  for (const input of [stream, unaligned(stream), unalignedBuffer(stream), stream.slice()]) {
    const got = decoder.decode(input);
    assert.deepEqual(got.map((b) => b.numRows), [ALL_ROWS.length, ALL_ROWS.length * 40, ALL_ROWS.length * 3]);
    assert.deepEqual(rowsOf(got), expected);
    assert.deepEqual(got[0]!.schema.fields.map((f) => f.name), ALL_TYPES.map((f) => f.name));
  }
  assert.deepEqual(decoder.stats, { schemaReused: 3, fallback: 0 }, "the later streams reused the first one's schema");
});

test("ipc decode - a new schema is parsed when its bytes change (another projection), and kept from then on", () => {
  const decoder = new IpcStreamDecoder();
  const a = new arrow.Table({ id: arrow.vectorFromArray(BigInt64Array.of(1n, 2n)) });
  const b = new arrow.Table({ id: arrow.vectorFromArray(BigInt64Array.of(3n)), s: arrow.vectorFromArray(["x"], new arrow.Utf8()) });
  const decodeRows = (t: arrow.Table): unknown[] => decoder.decode(arrow.tableToIPC(t, "stream")).flatMap((x) => x.toArray().map((r) => ({ ...(r as object) })));
  assert.deepEqual(decodeRows(a), [{ id: 1n }, { id: 2n }]);
  assert.deepEqual(decodeRows(b), [{ id: 3n, s: "x" }]);
  assert.deepEqual(decodeRows(b), [{ id: 3n, s: "x" }]);
  assert.deepEqual(decodeRows(a), [{ id: 1n }, { id: 2n }]);
  assert.equal(decoder.stats.schemaReused, 1, "only the repeated b reused a schema");
});

test("ipc decode - the consume protocol's chunks (forwarded batch messages and packed batches), empty and schema-only streams", () => {
  const batch = allTypesBatch(200);
  const limit = 16 * 1024;
  const decoder = new IpcStreamDecoder();
  // Packed from batches (cut to fit the limit).
  const packed = packBatches([batch, allTypesBatch(2)], limit);
  assert.ok(packed.length > 1, "cut into several chunks");
  assert.deepEqual(rowsOf(packed.flatMap((c) => decoder.decode(c))), rowsOf([batch, allTypesBatch(2)]));
  // Forwarded: a decoder's record batch messages behind the target's schema message.
  const parts = splitIpcStream(arrow.tableToIPC(new arrow.Table([batch]), "stream"))!;
  const packer = new ChunkPacker(1024 * 1024);
  const bodies = [...packer.addMessages(schemaMessage(parts.schema), parts.batches), ...packer.flush()];
  assert.deepEqual(rowsOf(bodies.flatMap((c) => decoder.decode(unalignedBuffer(c)))), rowsOf([batch]));
  assert.deepEqual(decoder.decode(new Uint8Array(0)), []);
  assert.deepEqual(decoder.decode(ipcStreamOf(schemaMessage(parts.schema), [])), []);
});

test("ipc decode - dictionary batches fall back to tableFromIPC (same rows); a truncated stream throws", () => {
  const decoder = new IpcStreamDecoder();
  const dict = new arrow.Table({ e: arrow.vectorFromArray(["a", "b", "a"], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())) });
  const got = decoder.decode(arrow.tableToIPC(dict, "stream"));
  assert.deepEqual(got.flatMap((b) => b.toArray().map((r) => (r as unknown as { e: string }).e)), ["a", "b", "a"]);
  assert.equal(decoder.stats.fallback, 1);
  const bytes = arrow.tableToIPC(new arrow.Table([allTypesBatch(5)]), "stream");
  assert.throws(() => decoder.decode(bytes.subarray(0, bytes.length - 100)), /malformed Arrow IPC stream/);
});
