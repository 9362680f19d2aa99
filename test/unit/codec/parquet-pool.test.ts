import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { parquetFooterInfo, readParquet, writeParquet } from "../../../src/codec/parquet.ts";
import { ParquetEncoderPool } from "../../../src/codec/parquet-pool.ts";
import { isLakeError } from "../../../src/errors.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import type { Row } from "../../../src/format/values.ts";
import { ALL_ROWS, ALL_TYPES } from "../../helpers/codec-fixtures.ts";
import { newTableSchema } from "../../../src/format/schema.ts";
import { encodeKeyedFlush, type EncodedKeyedFlush, type KeyedFlushSpec } from "../../../src/lsm/keyed-flush.ts";
import { keyFields } from "../../../src/lsm/key-value-fields.ts";
import { keyValueLayout } from "../../../src/lsm/sort-buffer.ts";
import { threadNice, threadNices } from "../../helpers/threads.ts";

const FIELDS = parseColumnList("id BIGINT NOT NULL, s STRING, x DOUBLE");
const rowsFrom = (from: number, n: number): Row[] => Array.from({ length: n }, (_, i) => ({ id: BigInt(from + i), s: i % 7 === 0 ? null : `s-${from + i}`, x: (from + i) * 0.5 }));

/** Starts the pool's next worker with FAILPOINTS set (a worker copies the environment when it starts). */
function withWorkerFailpoint<T>(spec: string, start: () => T): T {
  const before = process.env["FAILPOINTS"];
  process.env["FAILPOINTS"] = spec;
  try {
    return start();
  } finally {
    if (before === undefined) delete process.env["FAILPOINTS"];
    else process.env["FAILPOINTS"] = before;
  }
}

test("parquet pool - encode gives the bytes writeParquet gives; decode reads every type back", async () => {
  const pool = new ParquetEncoderPool({ size: 2 });
  try {
    const batch = rowsToRecordBatch(ALL_TYPES, ALL_ROWS);
    const bytes = await pool.encode(batch);
    assert.deepEqual(Buffer.from(bytes), Buffer.from(writeParquet(batch)));
    assert.deepEqual(recordBatchToRows(ALL_TYPES, await pool.decode(bytes)), ALL_ROWS);
    assert.deepEqual(recordBatchToRows(ALL_TYPES, readParquet(bytes)), ALL_ROWS);
    // The caller's bytes stay usable unless it hands them over, and a view (a Buffer of Node's pool, say) never
    // gives its whole backing buffer away.
    assert.equal(parquetFooterInfo(bytes).numRows, ALL_ROWS.length);
    const backing = new Uint8Array(bytes.length + 16);
    backing.set(bytes, 8);
    const view = Buffer.from(backing.buffer, 8, bytes.length);
    for (const transfer of [false, true]) assert.equal((await pool.decode(view, { transfer })).numRows, ALL_ROWS.length);
    assert.equal(backing.byteLength, bytes.length + 16);
    assert.equal(parquetFooterInfo(view).numRows, ALL_ROWS.length);
  } finally {
    await pool.close();
  }
});

test("parquet pool - parallel jobs, projection and row groups; at most `size` workers", async () => {
  const pool = new ParquetEncoderPool({ size: 2 });
  try {
    const parts = Array.from({ length: 6 }, (_, p) => rowsFrom(p * 1000, 1000));
    const files = await Promise.all(parts.map((rows) => pool.encode(rowsToRecordBatch(FIELDS, rows), { maxRowGroupSize: 300 })));
    assert.ok(pool.startedWorkers <= 2);
    for (let p = 0; p < parts.length; p++) {
      assert.equal(parquetFooterInfo(files[p]!).numRowGroups, 4);
      const [all, projected, groups] = await Promise.all([
        pool.decode(files[p]!),
        pool.decode(files[p]!, { columns: ["x", "nope", "id"] }),
        pool.decode(files[p]!, { rowGroups: [1, 2] }),
      ]);
      assert.deepEqual(recordBatchToRows(FIELDS, all), parts[p]);
      assert.deepEqual(projected.schema.fields.map((f) => f.name), ["id", "x"]);
      assert.deepEqual(recordBatchToRows(FIELDS, groups), parts[p]!.slice(300, 900));
    }
    // Handing the buffer over detaches the caller's copy instead of copying it.
    const owned = files[0]!.slice();
    assert.equal((await pool.decode(owned, { transfer: true })).numRows, 1000);
    assert.equal(owned.byteLength, 0);
  } finally {
    await pool.close();
  }
});

test("parquet pool - flushKeyed sorts, folds and encodes a primary-key buffer in a worker exactly as encodeKeyedFlush does here", async () => {
  const schema = newTableSchema({ columns: parseColumnList("id BIGINT NOT NULL, s STRING, x DOUBLE"), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "1", "changelog-producer": "input" } });
  const layout = keyValueLayout(schema);
  // Two batches as a builder finishes them: keys repeated across both, kinds given (+I, -D) and left null (upserts).
  const rowsOf = (from: number): Row[] => Array.from({ length: 500 }, (_, i) => ({ id: BigInt((from + i * 7) % 600), s: i % 5 === 0 ? null : `s${from + i}`, x: i * 0.25, _VALUE_KIND: i % 9 === 0 ? 3 : i % 2 === 0 ? 0 : null }));
  const batches = [rowsToRecordBatch(layout.bufferFields, rowsOf(0)), rowsToRecordBatch(layout.bufferFields, rowsOf(3))];
  const spec: KeyedFlushSpec = { schema, encode: { parquet: { compression: "zstd" }, statsFields: schema.fields, keyFields: keyFields(schema) }, firstSeq: 40n };
  const here = encodeKeyedFlush(batches, spec);
  assert.ok(here.data !== null && here.changelog !== null);
  assert.equal(here.changelog.rowCount, 1000);
  assert.ok(here.data.rowCount < 1000 && here.data.deleteRowCount > 0);
  const pool = new ParquetEncoderPool({ size: 1 });
  try {
    const there = await pool.flushKeyed<EncodedKeyedFlush>(batches, spec);
    assert.deepEqual(there, here);
    assert.equal(pool.completed["flush-keyed"], 1);
    // The flush reads the buffer, it does not take it: the batches stay whole.
    assert.equal(batches[0]!.numRows + batches[1]!.numRows, 1000);
    const crashed = withWorkerFailpoint("parquet.worker.flush-keyed:exit", () => {
      const p = new ParquetEncoderPool({ size: 1 });
      return { p, job: p.flushKeyed(batches, spec) };
    });
    try {
      await assert.rejects(crashed.job, /Parquet worker thread exited with code 137 while flushing a primary-key bucket; that job was not completed/);
    } finally {
      await crashed.p.close();
    }
  } finally {
    await pool.close();
  }
});

test("parquet pool - a worker that dies rejects its job with a clear error, and a new worker takes the next", async () => {
  const pool = new ParquetEncoderPool({ size: 1 });
  try {
    const batch = rowsToRecordBatch(FIELDS, rowsFrom(0, 100));
    const crashed = withWorkerFailpoint("parquet.worker.encode:exit", () => pool.encode(batch));
    await assert.rejects(crashed, (e: unknown) => {
      assert.ok(isLakeError(e, "Unexpected"), String(e));
      assert.match(e.message, /Parquet worker thread exited with code 137 while encoding a file; that job was not completed/);
      assert.equal(e.retryable, true);
      return true;
    });
    assert.equal(pool.startedWorkers, 0, "the dead worker left the pool");
    // The replacement starts without the failpoint and works.
    assert.deepEqual(recordBatchToRows(FIELDS, await pool.decode(await pool.encode(batch))), rowsFrom(0, 100));
    assert.equal(pool.startedWorkers, 1);
  } finally {
    await pool.close();
  }
});

test("parquet pool - a job that fails inside the worker rejects alone; the worker keeps serving", async () => {
  const pool = new ParquetEncoderPool({ size: 1 });
  try {
    const batch = rowsToRecordBatch(FIELDS, rowsFrom(0, 10));
    const failed = withWorkerFailpoint("parquet.worker.decode:throw", () => pool.encode(batch));
    const bytes = await failed;
    await assert.rejects(pool.decode(bytes), /Parquet decode failed in a worker thread: failpoint parquet.worker.decode/);
    await assert.rejects(pool.decode(new Uint8Array([1, 2, 3, 4])), /Parquet decode failed in a worker thread/);
    assert.equal(pool.startedWorkers, 1);
    // Same worker (still armed for decode), encode still works.
    assert.equal((await pool.encode(batch)).byteLength, bytes.byteLength);
  } finally {
    await pool.close();
  }
});

test("parquet pool - bytes whose buffer was already transferred away (a decode with transfer, then the same bytes again) (or none at all) reject with a clear error, and the worker serves the next job", { timeout: 20_000 }, async () => {
  const pool = new ParquetEncoderPool({ size: 1 });
  try {
    const bytes = writeParquet(rowsToRecordBatch(FIELDS, rowsFrom(0, 10)));
    assert.equal((await pool.decode(bytes, { transfer: true })).numRows, 10);
    assert.equal(bytes.byteLength, 0, "the first decode moved the buffer to the worker");
    // Transferring a detached buffer made postMessage drop the job silently: the promise never settled and the
    // worker stayed taken.
    await assert.rejects(pool.decode(bytes, { transfer: true }), (e: unknown) => isLakeError(e) && /nothing to decode: 0 bytes/.test(e.message));
    await assert.rejects(pool.decode(new Uint8Array(0)), /nothing to decode: 0 bytes/);
    assert.equal((await pool.decode(writeParquet(rowsToRecordBatch(FIELDS, rowsFrom(0, 3))))).numRows, 3);
  } finally {
    await pool.close();
  }
});

test("parquet pool - close() rejects running and queued jobs, stops the workers and refuses new jobs", async () => {
  const pool = new ParquetEncoderPool({ size: 1 });
  const batch = rowsToRecordBatch(FIELDS, rowsFrom(0, 10));
  const running = withWorkerFailpoint("parquet.worker.encode:sleep(2000)", () => pool.encode(batch));
  const queued = pool.encode(batch);
  const outcomes = [assert.rejects(running, /pool is closed/), assert.rejects(queued, /pool is closed/)];
  await new Promise((r) => setTimeout(r, 50));
  const t0 = Date.now();
  await pool.close();
  assert.ok(Date.now() - t0 < 1500, "close does not wait for the running job");
  await Promise.all(outcomes);
  await assert.rejects(pool.encode(batch), /pool is closed/);
  await assert.rejects(pool.decode(new Uint8Array(8)), /pool is closed/);
  assert.equal(pool.startedWorkers, 0);
  await pool.close();
});

test("parquet pool - workers never keep a process alive, under --import tsx and under tsx's register() (bin/natslake.mjs)", () => {
  const child = fileURLToPath(new URL("../../helpers/pool-child.ts", import.meta.url));
  const registered = fileURLToPath(new URL("../../helpers/pool-child-register.mjs", import.meta.url));
  // --max-old-space-size is a V8 flag Node refuses in a worker's execArgv: the pool must start workers without it.
  for (const args of [["--import", "tsx", child], [registered], ["--max-old-space-size=2048", "--import", "tsx", child]]) {
    const r = spawnSync(process.execPath, args, { encoding: "utf8", timeout: 60_000 });
    assert.equal(r.status, 0, `node ${args.join(" ")}: ${r.stderr}`);
    assert.deepEqual(JSON.parse(r.stdout.trim()), { rows: 2000, workers: 2 });
  }
});

test("parquet pool - warm() starts every worker before any job, then they serve jobs", async () => {
  const pool = new ParquetEncoderPool({ size: 2 });
  try {
    assert.equal(pool.startedWorkers, 0, "lazy by default");
    pool.warm();
    assert.equal(pool.startedWorkers, 2);
    pool.warm();
    assert.equal(pool.startedWorkers, 2, "never more than size");
    const bytes = await pool.encode(rowsToRecordBatch(FIELDS, rowsFrom(0, 100)));
    assert.equal((await pool.decode(bytes)).numRows, 100);
    assert.equal(pool.startedWorkers, 2);
  } finally {
    await pool.close();
  }
  pool.warm();
  assert.equal(pool.startedWorkers, 0, "a closed pool starts nothing");
});

test("parquet pool - workers of a pool given a nice value run at that lower CPU priority, each thread alone; the process's other threads keep theirs; a value out of 0..19 is refused", { skip: process.platform !== "linux" && "thread priorities are read from /proc" }, async () => {
  const before = threadNices("self").filter((n) => n === 7).length;
  const pool = new ParquetEncoderPool({ size: 2, nice: 7 });
  try {
    const batch = rowsToRecordBatch(FIELDS, rowsFrom(0, 100));
    await Promise.all([pool.encode(batch), pool.encode(batch)]);
    assert.equal(pool.startedWorkers, 2);
    assert.equal(pool.priorityError, null, "lowering the priority worked");
    assert.equal(threadNices("self").filter((n) => n === 7).length - before, 2, "two threads at nice 7: the workers");
    assert.equal(threadNice("self", process.pid), 0, "the main thread keeps its priority");
  } finally {
    await pool.close();
  }
  assert.throws(() => new ParquetEncoderPool({ nice: 20 }), /nice value is an integer in 0\.\.19, got 20/);
});
