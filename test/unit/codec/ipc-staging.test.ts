// IpcStaging: writeParquet staging its IPC stream in a buffer the thread keeps must write the same bytes as with a
// fresh stream each time, whatever the order of sizes — smaller after larger (the kept buffer holds the old stream's
// tail), and a stream over the bound (its own buffer, the kept one untouched).
import { test } from "node:test";
import assert from "node:assert/strict";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { IpcStaging, readParquet, toIpcChunks, writeParquet } from "../../../src/codec/parquet.ts";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";

const FIELDS = parseColumnList("id BIGINT NOT NULL, user STRING, amount DOUBLE");
const batchOf = (n: number, from: number) =>
  rowsToRecordBatch(
    FIELDS,
    Array.from({ length: n }, (_, i) => ({ id: BigInt(from + i), user: i % 5 === 0 ? null : `user-${(from + i) % 97}`, amount: (from + i) / 4 })),
  );

test("ipc staging - writeParquet writes the same bytes with a kept staging buffer, for streams of every size in any order", () => {
  const staging = new IpcStaging(256 * 1024);
  const opts = { compression: "zstd" };
  // 20k rows: a stream over the 256 KiB bound (own buffer); then small ones into the kept buffer, larger then smaller.
  for (const [n, from] of [[5_000, 0], [20_000, 100], [300, 7], [4_000, 9_000], [10, 3]] as const) {
    const batch = batchOf(n, from);
    const staged = writeParquet(batch, opts, staging);
    assert.deepEqual(staged, writeParquet(batch, opts), `${n} rows: the same Parquet bytes`);
    assert.deepEqual(readParquet(staged).batches.flatMap((b) => recordBatchToRows(FIELDS, b)), recordBatchToRows(FIELDS, batch));
  }
});

test("ipc staging - the kept buffer is reused while streams fit, grown when one does not, and never grown past the bound", () => {
  const staging = new IpcStaging(1024 * 1024);
  const small = staging.stage(toIpcChunks(batchOf(1_000, 0)));
  const again = staging.stage(toIpcChunks(batchOf(500, 0)));
  assert.equal(again.buffer, small.buffer, "a stream that fits goes into the same buffer");
  const larger = staging.stage(toIpcChunks(batchOf(10_000, 0)));
  assert.ok(larger.byteLength > small.buffer.byteLength && larger.buffer.byteLength <= 1024 * 1024);
  assert.equal(staging.stage(toIpcChunks(batchOf(10, 0))).buffer, larger.buffer, "the grown buffer is the one kept");
  const over = staging.stage(toIpcChunks(batchOf(60_000, 0)));
  assert.ok(over.byteLength > 1024 * 1024);
  assert.equal(staging.stage(toIpcChunks(batchOf(10, 0))).buffer, larger.buffer, "a stream over the bound is not kept");
});
