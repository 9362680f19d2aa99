/**
 * Arrow IPC streams at the message level (src/codec/ipc-stream.ts): a stream split into its schema and record batch
 * messages and put back together behind another schema message of the same types reads as the same rows; streams
 * whose batches cannot be forwarded (dictionaries) are refused; malformed ones throw.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as arrow from "apache-arrow";
import { ipcStreamOf, schemaMessage, splitIpcStream } from "../../../src/codec/ipc-stream.ts";

function table(from: number, rows: number): arrow.Table {
  return new arrow.Table({
    id: arrow.vectorFromArray(BigInt64Array.from({ length: rows }, (_, i) => BigInt(from + i))),
    // Utf8, not the dictionary tableFromArrays makes of strings by default.
    s: arrow.vectorFromArray(Array.from({ length: rows }, (_, i) => (i % 7 === 0 ? null : `v${from + i}`)), new arrow.Utf8()),
    d: arrow.vectorFromArray(Float64Array.from({ length: rows }, (_, i) => (from + i) / 4)),
  });
}

const plain = (t: arrow.Table): unknown[] => t.toArray().map((r) => ({ ...(r as object) }));

test("ipc stream - split into schema and batch messages; re-assembled behind a renamed schema of the same types, the rows read back", () => {
  const batches = [table(0, 100), table(100, 1), table(101, 3000)].flatMap((t) => t.batches);
  const source = new arrow.Table(batches);
  const parts = splitIpcStream(arrow.tableToIPC(source, "stream"));
  assert.ok(parts !== null);
  assert.deepEqual(parts.schema.fields.map((f) => f.name), ["id", "s", "d"]);
  assert.deepEqual(parts.batches.map((b) => b.rows), [100, 1, 3000]);
  // Another schema of the same types in the same order: the batches do not name their columns.
  const renamed = new arrow.Schema(parts.schema.fields.map((f) => new arrow.Field(`x_${f.name}`, f.type, true)));
  const out = arrow.tableFromIPC(ipcStreamOf(schemaMessage(renamed), parts.batches));
  assert.deepEqual(out.schema.fields.map((f) => f.name), ["x_id", "x_s", "x_d"]);
  assert.equal(out.numRows, 3101);
  assert.deepEqual(out.toArray().map((r) => Object.values(r as object)), source.toArray().map((r) => Object.values(r as object)));
  // Any subset in order is a stream of its own.
  assert.deepEqual(plain(arrow.tableFromIPC(ipcStreamOf(schemaMessage(parts.schema), parts.batches.slice(1, 2)))), plain(table(100, 1)));
  // No batches: a valid empty stream.
  assert.equal(arrow.tableFromIPC(ipcStreamOf(schemaMessage(parts.schema), [])).numRows, 0);
});

test("ipc stream - a stream with dictionary batches is not forwardable; truncated or empty bytes throw", () => {
  const dict = new arrow.Table({ e: arrow.vectorFromArray(["a", "b", "a"], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())) });
  assert.equal(splitIpcStream(arrow.tableToIPC(dict, "stream")), null);
  const bytes = arrow.tableToIPC(table(0, 50), "stream");
  assert.throws(() => splitIpcStream(bytes.subarray(0, bytes.length - 100)), /malformed Arrow IPC stream/);
  assert.throws(() => splitIpcStream(new Uint8Array(0)), /no schema message/);
});
