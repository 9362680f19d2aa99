// Bucket buffers: a writer's decoded rows kept (and encoded at flush) where they were decoded. The files must be
// what the TableWrite path writes for the same rows; a flush covers exactly the appends posted before it; a worker
// that dies fails its sessions with a retryable error and the next session works; a worker that stalls past the
// deadline is stopped, and only its own sessions fail.
import type { EncodedFlush } from "../../../src/write/encoded-flush.ts";
import { test } from "node:test";
import assert from "node:assert/strict";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { readParquet } from "../../../src/codec/parquet.ts";
import { isLakeError } from "../../../src/errors.ts";
import type { DataFileMeta } from "../../../src/format/manifest.ts";
import type { Row } from "../../../src/format/values.ts";
import { TableWrite } from "../../../src/write/table-write.ts";
import { valueStatsOf, type EncodedFile } from "../../../src/write/data-file-writer.ts";
import { sharedBufferRecycler } from "../../../src/codec/columns/buffer-recycler.ts";
import { encodeRowBatch } from "../../../actors/wire/row-batch.ts";
import { BucketBuffer, type BucketBufferSpec } from "../../../actors/ingest/bucket-buffer.ts";
import { BucketStallError, createBucketBuffers, InlineBucketBuffers, WorkerBucketBuffers, type BucketBuffers } from "../../../actors/ingest/bucket-buffers.ts";
import { availableParallelism } from "node:os";
import { decodeSized, packPayloads } from "../../../actors/ingest/decode.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";

const COLUMNS = "id BIGINT NOT NULL, user STRING, amount DOUBLE, ts TIMESTAMP(3), tags ARRAY<STRING>";

/** `count` messages of 40 rows from id `from`; message 3 holds a bad row (a string amount) and message 5 is not msgpack. */
function messages(count: number, from = 0, firstSeq = 1): Array<{ seq: number; data: Uint8Array }> {
  const out: Array<{ seq: number; data: Uint8Array }> = [];
  for (let m = 0; m < count; m++) {
    const seq = firstSeq + m;
    if (m === 5) {
      out.push({ seq, data: new Uint8Array([0xc1]) });
      continue;
    }
    const rows = Array.from({ length: 40 }, (_, i) => {
      const id = from + m * 40 + i;
      return [id, i % 7 === 0 ? null : `user-${id % 13}`, m === 3 && i === 2 ? "oops" : id / 8, 1_700_000_000_000 + id, i % 5 === 0 ? null : [`t${i % 3}`]];
    });
    out.push({ seq, data: encodeRowBatch({ v: 1, schema: 0, cols: ["id", "user", "amount", "ts", "tags"], rows }) });
  }
  return out;
}

const rowsOf = (files: readonly EncodedFile[], fields: Parameters<typeof recordBatchToRows>[0]): Row[] =>
  files.flatMap((f) => readParquet(f.bytes).batches.flatMap((b) => recordBatchToRows(fields, b)));

test("bucket buffer - the files, statistics and sequence numbers of the TableWrite path, and its rejections", async () => {
  const d = tempDir();
  try {
    const table = await createTable(d.path, "db.t", COLUMNS, { options: { bucket: "2", "bucket-key": "id" } });
    const input = messages(12);
    // The TableWrite path: decode per job, buffer the batches, prepareCommit.
    const viaTable = new TableWrite(table, { bucket: 1, encoderPool: null });
    const rejectedViaTable = [];
    for (const part of [input.slice(0, 7), input.slice(7)]) {
      const r = decodeSized(table.schema.fields, packPayloads(part));
      if (r.builder !== null) viaTable.writeArrow(r.builder.finish());
      rejectedViaTable.push(...r.rejected);
    }
    const [expected] = await viaTable.prepareCommit();
    // The bucket buffer path: the same jobs appended, one flush, the encoded files committed by a TableWrite.
    const write = new TableWrite(table, { bucket: 1, encoderPool: null });
    const buffer = new BucketBuffer({ fields: table.schema.fields, ...write.encodeSpec });
    const rejected = [];
    let held = 0;
    for (const part of [input.slice(0, 7), input.slice(7)]) {
      const r = buffer.append(packPayloads(part));
      rejected.push(...r.rejected);
      assert.ok(r.bufferedRows > held && r.bufferedBytes > 0);
      held = r.bufferedRows;
    }
    assert.deepEqual(rejected, rejectedViaTable, "the same rows and payloads rejected, with the same reasons");
    const flushed = buffer.flush();
    assert.ok(flushed.kind === "append");
    const encoded = flushed.files;
    assert.deepEqual(buffer.flush(), { kind: "append", files: [] }, "a flush lets the rows go");
    const [got] = await write.commitEncoded(flushed);
    assert.equal(got!.bucket, 1);
    const strip = (m: DataFileMeta) => ({ ...m, fileName: "", fileSize: 0, creationTimeMillis: 0 });
    assert.deepEqual(got!.newFiles.map(strip), expected!.newFiles.map(strip), "row count, sequence numbers, value statistics");
    assert.deepEqual(rowsOf(encoded, table.schema.fields), rowsOf([{ bytes: await table.io.readFile(table.paths.dataFilePath("", 1, expected!.newFiles[0]!.fileName)), rowCount: 0, valueStats: encoded[0]!.valueStats }], table.schema.fields));
    assert.equal(held, 11 * 40 - 1);
  } finally {
    d.cleanup();
  }
});

test("bucket buffer - flushes one after another reuse the column buffers, and each file holds exactly its own rows and statistics", async () => {
  const d = tempDir();
  try {
    const table = await createTable(d.path, "db.t", COLUMNS);
    const write = new TableWrite(table, { encoderPool: null });
    const spec = { fields: table.schema.fields, ...write.encodeSpec };
    const recycler = sharedBufferRecycler();
    // Two sessions on one thread, flushing in turn: rounds of 10k+ rows (columns over the recycler's 64 KiB floor),
    // larger then smaller, so a round's columns are the buffers an earlier round let go, holding its old values.
    const a = new BucketBuffer(spec);
    const b = new BucketBuffer(spec);
    const rounds: Array<[BucketBuffer, number, number]> = [[a, 400, 0], [b, 300, 100_000], [a, 260, 200_000], [b, 350, 300_000], [a, 40, 400_000]];
    for (const [buffer, count, from] of rounds) {
      const input = messages(count, from);
      buffer.append(packPayloads(input));
      const flushed = buffer.flush();
      const expected = decodeSized(table.schema.fields, packPayloads(input)).builder!.finish();
      const files = filesOf(flushed);
      assert.deepEqual(rowsOf(files, table.schema.fields), recordBatchToRows(table.schema.fields, expected), `${count} messages from ${from}: the rows`);
      assert.deepEqual(files[0]!.valueStats, valueStatsOf(spec.statsFields, spec.statsModes, expected), `${count} messages from ${from}: the statistics`);
      if (count >= 260) assert.ok(recycler.heldBytes > 0, "the flushed columns went back to the thread's recycler");
    }
  } finally {
    d.cleanup();
  }
});

/** An append table's flush: its files. */
function filesOf(f: EncodedFlush): EncodedFile[] {
  assert.ok(f.kind === "append", "an append table's flush");
  return f.files;
}

for (const [name, make] of [
  ["inline", () => new InlineBucketBuffers()],
  ["worker thread", () => new WorkerBucketBuffers({ threads: 1 })],
] as const) {
  test(`bucket buffers (${name}) - a flush covers exactly the appends posted before it; sessions are independent`, async () => {
    const d = tempDir();
    const buffers: BucketBuffers = make();
    try {
      const table = await createTable(d.path, "db.t", COLUMNS);
      const spec = { fields: table.schema.fields, ...new TableWrite(table, { encoderPool: null }).encodeSpec };
      const a = buffers.open(spec);
      const b = buffers.open(spec);
      // Posted together, without waiting: append, flush, append.
      const first = a.append(messages(3, 0));
      const flushed = a.flush();
      const second = a.append(messages(2, 1000, 10));
      const other = b.append(messages(1, 5000));
      assert.equal((await first).rows, 120);
      const files = filesOf(await flushed);
      assert.deepEqual(rowsOf(files, table.schema.fields).map((r) => Number(r["id"])), Array.from({ length: 120 }, (_, i) => i));
      assert.equal(files[0]!.rowCount, 120);
      assert.equal((await second).bufferedRows, 80);
      assert.equal((await other).bufferedRows, 40);
      assert.deepEqual(rowsOf(filesOf(await a.flush()), table.schema.fields).map((r) => Number(r["id"])), Array.from({ length: 80 }, (_, i) => 1000 + i));
      assert.deepEqual(rowsOf(filesOf(await b.flush()), table.schema.fields).map((r) => Number(r["id"])), Array.from({ length: 40 }, (_, i) => 5000 + i));
      a.close();
      await assert.rejects(a.flush(), (e: unknown) => isLakeError(e));
    } finally {
      await buffers.close();
      d.cleanup();
    }
  });
}

test("bucket buffers (worker thread) - a worker that dies fails its session's requests, retryably; a new session works", async () => {
  const d = tempDir();
  // The worker thread exits on its second append (as on a WebAssembly trap); a worker reads FAILPOINTS when it starts.
  const before = process.env["FAILPOINTS"];
  process.env["FAILPOINTS"] = "bucket-buffer.append:exit@2";
  const buffers = new WorkerBucketBuffers({ threads: 1 });
  try {
    const table = await createTable(d.path, "db.t", COLUMNS);
    const spec = { fields: table.schema.fields, ...new TableWrite(table, { encoderPool: null }).encodeSpec };
    const doomed = buffers.open(spec);
    assert.equal((await doomed.append(messages(1))).rows, 40);
    const died = doomed.append(messages(1, 40, 2));
    const after = doomed.flush();
    for (const p of [died, after]) await assert.rejects(p, (e: unknown) => isLakeError(e) && e.retryable && /exited/.test(e.message));
    await assert.rejects(doomed.append(messages(1, 80, 3)), (e: unknown) => isLakeError(e) && e.retryable, "later requests of the session fail too");
    delete process.env["FAILPOINTS"];
    const fresh = buffers.open(spec);
    assert.equal((await fresh.append(messages(2))).rows, 80);
    assert.equal(filesOf(await fresh.flush())[0]!.rowCount, 80);
  } finally {
    if (before === undefined) delete process.env["FAILPOINTS"];
    else process.env["FAILPOINTS"] = before;
    await buffers.close();
    d.cleanup();
  }
});

/** A message of one row whose value holds `marker` (the failpoint `ingest.stall[marker]` fires on it). */
function marked(seq: number, marker: string): { seq: number; data: Uint8Array } {
  return { seq, data: encodeRowBatch({ v: 1, schema: 0, cols: ["id", "user", "amount", "ts", "tags"], rows: [[seq, marker, 1.5, 1_700_000_000_000, null]] }) };
}

/**
 * Runs `body` on worker bucket buffers made with `opts` and the spec of a table of COLUMNS, with FAILPOINTS set to
 * `failpoints` (workers read it when they start); everything is restored and closed after.
 */
async function withStallingBuffers(failpoints: string, opts: { threads: number; deadlineMs: number }, body: (buffers: WorkerBucketBuffers, spec: BucketBufferSpec) => Promise<void>): Promise<void> {
  const before = process.env["FAILPOINTS"];
  process.env["FAILPOINTS"] = failpoints;
  const d = tempDir();
  const buffers = new WorkerBucketBuffers(opts);
  try {
    const table = await createTable(d.path, "db.t", COLUMNS);
    await body(buffers, { fields: table.schema.fields, ...new TableWrite(table, { encoderPool: null }).encodeSpec });
  } finally {
    if (before === undefined) delete process.env["FAILPOINTS"];
    else process.env["FAILPOINTS"] = before;
    await buffers.close();
    d.cleanup();
  }
}

test("bucket buffers (worker thread) - an append that runs past the deadline stops its worker: it fails as a stall, the worker's other session fails retryably, the pool's other worker and a session on its own thread go on", async () => {
  // A decode of a message holding STALL blocks its thread for a minute (failpoint hang: a decoder that never returns).
  await withStallingBuffers("ingest.stall[STALL]:hang(60000)", { threads: 2, deadlineMs: 1500 }, async (buffers, spec) => {
    // The pool's two workers: `stuck` and `sharing` on the first, `neighbour` on the second.
    const stuck = buffers.open(spec);
    const neighbour = buffers.open(spec);
    const sharing = buffers.open(spec);
    const own = buffers.open(spec, { ownThread: true });
    assert.equal((await sharing.append(messages(1))).rows, 40, "the shared worker works before the stall");
    const started = performance.now();
    const stalled = stuck.append([...messages(1, 1000, 1), marked(2, "STALL")]);
    const queued = sharing.append(messages(1, 2000, 2));
    const aside = neighbour.append(messages(2, 3000));
    const alone = own.append(messages(1, 4000));
    await assert.rejects(stalled, (e: unknown) => e instanceof BucketStallError && e.retryable && e.stage === "decode" && e.deadlineMs === 1500 && /stalled decoding past 1500 ms/.test(e.message));
    await assert.rejects(queued, (e: unknown) => isLakeError(e) && !(e instanceof BucketStallError) && e.retryable && /another session's decode on its thread stalled past 1500 ms/.test(e.message));
    const waited = performance.now() - started;
    assert.ok(waited >= 1400 && waited < 30_000, `failed at the deadline, not before it nor after the hang (${waited.toFixed(0)} ms)`);
    await assert.rejects(sharing.flush(), (e: unknown) => isLakeError(e) && e.retryable, "later requests of the stopped worker's sessions fail too");
    assert.equal((await aside).rows, 80);
    assert.equal(filesOf(await neighbour.flush())[0]!.rowCount, 80, "the pool's other worker was not stopped");
    assert.equal((await alone).rows, 40);
    assert.equal(filesOf(await own.flush())[0]!.rowCount, 40, "nor the session's own worker");
    const fresh = buffers.open(spec);
    assert.equal((await fresh.append(messages(1, 5000))).rows, 40);
    assert.equal(filesOf(await fresh.flush())[0]!.rowCount, 40, "a new worker took the new session");
  });
});

test("bucket buffers (worker thread) - a stall on a session's own thread stops that thread only; the deadline counts from when the worker starts a request, not from its posting", async () => {
  // SLOW messages hold their decode 700 ms, under the deadline.
  await withStallingBuffers("ingest.stall[SLOW]:hang(700)", { threads: 1, deadlineMs: 2000 }, async (buffers, spec) => {
    const pooled = buffers.open(spec);
    // Four appends posted at once: the last is answered ~2.8 s after its posting, each ran 0.7 s.
    const slow = [1, 2, 3, 4].map((seq) => pooled.append([marked(seq, "SLOW")]));
    for (const p of slow) assert.equal((await p).rows, 1, "a request queued behind slow ones is not a stall");
    assert.equal(filesOf(await pooled.flush())[0]!.rowCount, 4);
  });
  // A session on its own thread (a bucket trying messages alone) meets a message that stalls its decode.
  await withStallingBuffers("ingest.stall[STALL]:hang(60000)", { threads: 1, deadlineMs: 1500 }, async (buffers, spec) => {
    const pooled = buffers.open(spec);
    const isolated = buffers.open(spec, { ownThread: true });
    const stalled = isolated.append([marked(1, "STALL")]);
    const beside = pooled.append(messages(1));
    await assert.rejects(stalled, (e: unknown) => e instanceof BucketStallError && e.stage === "decode");
    await assert.rejects(isolated.flush(), (e: unknown) => isLakeError(e) && e.retryable, "the stopped session's later requests fail");
    assert.equal((await beside).rows, 40);
    assert.equal(filesOf(await pooled.flush())[0]!.rowCount, 40, "the pool's worker went on");
    // A closed own-thread session ends its worker: its requests fail at once.
    const other = buffers.open(spec, { ownThread: true });
    assert.equal((await other.append(messages(1, 100))).rows, 40);
    other.close();
    await assert.rejects(other.flush(), (e: unknown) => isLakeError(e) && /closed/.test(e.message));
  });
});

test("bucket buffers - 0 threads keeps sessions on the calling thread; more are capped at the cores", async () => {
  assert.ok(createBucketBuffers(0) instanceof InlineBucketBuffers);
  const w = createBucketBuffers(64);
  try {
    assert.ok(w instanceof WorkerBucketBuffers);
    assert.ok(w.threads >= 1 && w.threads <= availableParallelism());
  } finally {
    await w.close();
  }
});
