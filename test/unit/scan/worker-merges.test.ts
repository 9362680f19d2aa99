/**
 * Primary-key buckets merged in the Parquet pool's worker threads (src/scan/worker-merges.ts,
 * src/scan/merge-bucket-job.ts): the rows of a multi-bucket read equal the calling thread's merge for every engine
 * (random data over several commits, keys deleted, a `sequence.field`, a projection, a stream's first read with row
 * kinds), in the same order; a read with a limit merges only the buckets it needs; a reader that takes no batch for a
 * while gets its buckets back (the pool's workers are free for others) and the same rows; a worker that dies mid-read
 * and a file that cannot be decoded fail the read with the cause, without a hang; a pool of one worker merges on the
 * calling thread.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { ParquetEncoderPool } from "../../../src/codec/parquet-pool.ts";
import { BatchWriter, Catalog, parseColumnList, parseIdentifier, type Table } from "../../../src/index.ts";
import { planRead, readAllRows, readPlanBatches, readRows, type ReadSpec } from "../../../src/scan/read.ts";
import { isLakeError } from "../../../src/errors.ts";
import { WorkerMerges } from "../../../src/scan/worker-merges.ts";
import { writeParquet } from "../../../src/codec/parquet.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { setTimeout as sleep } from "node:timers/promises";
import { tempDir } from "../../helpers/tables.ts";
import { randomUUID } from "node:crypto";
import { FileStoreCommit } from "../../../src/commit/file-store-commit.ts";
import { TableWrite } from "../../../src/write/table-write.ts";

const wh = tempDir();
after(() => wh.cleanup());

/** A seeded stream of numbers in [0, 1): the same data every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYS = 3000;
let tables = 0;

/**
 * A table of four buckets written in five commits of random upserts (each bucket's five level-0 runs overlap), a
 * `ts` sequence field where the engine takes one (its values out of commit order, so it decides), then — where the
 * engine takes retractions — a commit deleting a tenth of the keys.
 */
async function engineTable(options: Record<string, string>, seed: number): Promise<Table> {
  const table = await new Catalog(wh.path).createTable(parseIdentifier(`wm.t${tables++}`), {
    columns: parseColumnList("id BIGINT NOT NULL, ts BIGINT, s STRING, n BIGINT, d DOUBLE"),
    primaryKeys: ["id"],
    partitionKeys: [],
    options: { bucket: "4", ...options },
  });
  const next = random(seed);
  for (let commit = 0; commit < 5; commit++) {
    const rows: Array<Record<string, unknown>> = [];
    for (let k = 0; k < KEYS; k++) {
      if (commit > 0 && next() < 0.6) continue;
      rows.push({ id: BigInt(k), ts: BigInt(Math.floor(next() * 5)), s: next() < 0.2 ? null : `s${Math.floor(next() * 1000)}`, n: next() < 0.2 ? null : BigInt(Math.floor(next() * 100)), d: next() * 10 });
    }
    if (options["merge-engine"] === "first-row") {
      // Its level 0 is invisible to reads: commit v goes to level v + 1 (overlapping runs above level 0).
      const write = new TableWrite(table);
      write.upsert(rows);
      const messages = await write.prepareCommit();
      await new FileStoreCommit(table).commit({ commitUser: randomUUID(), messages: messages.map((m) => ({ ...m, newFiles: m.newFiles.map((f) => ({ ...f, level: commit + 1 })) })) });
      continue;
    }
    const w = await BatchWriter.open(table);
    await w.upsert(rows);
    await w.commit();
  }
  if (options["merge-engine"] === undefined || options["partial-update.remove-record-on-delete"] === "true") {
    const w = await BatchWriter.open(table);
    await w.delete(Array.from({ length: KEYS / 10 }, (_, i) => ({ id: BigInt(i * 10 + 3) })));
    await w.commit();
  }
  return table;
}

const ENGINES: Array<{ name: string; options: Record<string, string> }> = [
  { name: "deduplicate with a sequence field and deletes", options: { "sequence.field": "ts" } },
  { name: "partial-update with a sequence field, remove-record-on-delete", options: { "merge-engine": "partial-update", "sequence.field": "ts", "partial-update.remove-record-on-delete": "true" } },
  { name: "partial-update with a sequence group (merges every column)", options: { "merge-engine": "partial-update", "fields.ts.sequence-group": "s,n" } },
  { name: "aggregation with a sequence field", options: { "merge-engine": "aggregation", "sequence.field": "ts", "fields.n.aggregate-function": "sum", "fields.d.aggregate-function": "max" } },
  { name: "first-row (runs above level 0, merged by a stream's first read)", options: { "merge-engine": "first-row" } },
];

for (const [i, engine] of ENGINES.entries()) {
  test(`worker merges - ${engine.name}: the rows of a four-bucket read equal the calling thread's merge, in order`, async () => {
    const table = await engineTable(engine.options, 100 + i);
    const pool = new ParquetEncoderPool({ size: 2 });
    try {
      // First-row's batch reads take runs above level 0 as they are: a stream's first read (row kinds) merges them.
      const kinds: ReadSpec = engine.options["merge-engine"] === "first-row" ? { rowKind: true } : {};
      for (const projection of [undefined, ["s", "id"]]) {
        const spec: ReadSpec = { ...kinds, decoderPool: pool, inlineDecodeBelowBytes: 0, ...(projection ? { projection } : {}) };
        const before = pool.completed["merge-bucket"];
        const inWorkers = await readAllRows(table, spec);
        assert.equal(pool.completed["merge-bucket"] - before, 4, "every bucket merged in a worker");
        const here = await readAllRows(table, { ...spec, mergeInWorkers: false });
        const noPool = await readAllRows(table, { ...kinds, decoderPool: null, ...(projection ? { projection } : {}) });
        assert.ok(here.length > KEYS / 2, `${here.length} rows`);
        assert.deepEqual(inWorkers, here);
        assert.deepEqual(noPool, here);
      }
    } finally {
      await pool.close();
    }
  });
}

test("worker merges - a read with a limit merges only the bucket it needs; an early stop cancels the merge under way", async () => {
  const table = await engineTable({}, 7);
  const pool = new ParquetEncoderPool({ size: 2 });
  try {
    const all = await readAllRows(table, { decoderPool: null });
    const limited = await readAllRows(table, { decoderPool: pool, inlineDecodeBelowBytes: 0, limit: 10 });
    assert.deepEqual(limited, all.slice(0, 10));
    assert.equal(pool.started["merge-bucket"], 1, "the first bucket only");
    // More rows than the first bucket holds: the second bucket is merged once it is reached, the others never.
    const plan = await planRead(table);
    let rowsOfFirst = 0;
    for await (const b of readPlanBatches(table, { ...plan, splits: plan.splits.slice(0, 1) }, { decoderPool: null })) rowsOfFirst += b.numRows;
    assert.ok(rowsOfFirst > 0);
    const past = await readAllRows(table, { decoderPool: pool, inlineDecodeBelowBytes: 0, limit: rowsOfFirst + 1 });
    assert.deepEqual(past, all.slice(0, rowsOfFirst + 1));
    assert.equal(pool.started["merge-bucket"], 3);
    // A reader that stops after its first batch, without a limit: the jobs under way are cancelled, the pool is free.
    const rows: unknown[] = [];
    for await (const r of readRows(table, { decoderPool: pool, inlineDecodeBelowBytes: 0 })) {
      rows.push(r);
      break;
    }
    assert.deepEqual(rows, all.slice(0, 1));
    assert.deepEqual(await readAllRows(table, { decoderPool: pool, inlineDecodeBelowBytes: 0 }), all, "the pool merges again after the cancelled jobs");
  } finally {
    await pool.close();
  }
});

test("worker merges - a worker that dies in the middle of a read fails it with the cause", async () => {
  const table = await engineTable({}, 11);
  const all = await readAllRows(table, { decoderPool: null });
  const pool = new ParquetEncoderPool({ size: 2 });
  try {
    // Each worker dies on its second merge: the first bucket comes out whole, the third or the fourth fails.
    const before = process.env["FAILPOINTS"];
    process.env["FAILPOINTS"] = "parquet.worker.merge-bucket:exit@2";
    try {
      pool.warm();
    } finally {
      if (before === undefined) delete process.env["FAILPOINTS"];
      else process.env["FAILPOINTS"] = before;
    }
    const got: unknown[] = [];
    await assert.rejects(
      (async () => {
        for await (const r of readRows(table, { decoderPool: pool, inlineDecodeBelowBytes: 0 })) got.push(r);
      })(),
      (e: unknown) => {
        assert.ok(isLakeError(e, "Unexpected"), String(e));
        assert.match(e.message, /Parquet worker thread exited with code 137 while merging a primary-key bucket; that job was not completed/);
        return true;
      },
    );
    assert.ok(got.length > 0 && got.length < all.length, `${got.length} of ${all.length} rows before the failure`);
    assert.deepEqual(got, all.slice(0, got.length));
  } finally {
    await pool.close();
  }
});

test("worker merges - a data file the worker cannot decode fails the read naming the file as damaged", async () => {
  const table = await engineTable({}, 13);
  const plan = await planRead(table);
  const victim = plan.splits[2]!.files[1]!;
  const path = table.paths.dataFilePath("", plan.splits[2]!.bucket, victim.fileName, victim.externalPath);
  const local = path.replace(/^file:\/\//, "");
  const bytes = readFileSync(local);
  // The footer kept (the file still looks like Parquet), its first pages garbage.
  bytes.fill(0x5a, 4, Math.min(bytes.length - 64, 4096));
  writeFileSync(local, bytes);
  const pool = new ParquetEncoderPool({ size: 2 });
  try {
    await assert.rejects(readAllRows(table, { decoderPool: pool, inlineDecodeBelowBytes: 0 }), (e: unknown) => {
      assert.ok(isLakeError(e, "DataInvalid"), String(e));
      assert.match(e.message, new RegExp(`${victim.fileName} is damaged: not a readable data file`));
      return true;
    });
    assert.ok(pool.started["merge-bucket"] >= 1);
  } finally {
    await pool.close();
  }
});

test("worker merges - a reader that stops taking batches gets the buckets back: the workers serve other jobs meanwhile, the rows are the same", async () => {
  const table = await engineTable({ "merge-engine": "partial-update", "sequence.field": "ts" }, 17);
  const all = await readAllRows(table, { decoderPool: null });
  const pool = new ParquetEncoderPool({ size: 2 });
  const saved = { pause: WorkerMerges.pauseAfterMs, rows: WorkerMerges.batchRows };
  // Small batches, so the worker fills its window and waits; a short wait before it gives the bucket back.
  WorkerMerges.pauseAfterMs = 100;
  WorkerMerges.batchRows = 50;
  try {
    const other = writeParquet(rowsToRecordBatch(parseColumnList("x BIGINT").map((c, i) => ({ id: i, name: c.name, type: c.type })), [{ x: 1n }, { x: 2n }]));
    const got: unknown[] = [];
    let decodedAt = Infinity;
    let resumedAt = 0;
    for await (const r of readRows(table, { decoderPool: pool, inlineDecodeBelowBytes: 0 })) {
      if (got.length === 0) {
        // The reader pauses, both workers hold a bucket's merge: someone else needs one meanwhile.
        void pool.decode(other).then((t) => {
          assert.equal(t.numRows, 2);
          decodedAt = performance.now();
        });
        await sleep(600);
        resumedAt = performance.now();
      }
      got.push(r);
    }
    assert.ok(decodedAt < resumedAt, "the other job ran while the reader paused");
    assert.equal(got.length, all.length);
    assert.deepEqual(got, all);
    assert.ok(pool.started["merge-bucket"] >= 1);
  } finally {
    WorkerMerges.pauseAfterMs = saved.pause;
    WorkerMerges.batchRows = saved.rows;
    await pool.close();
  }
});

test("worker merges - a pool of one worker: the calling thread merges while that worker decodes", async () => {
  const table = await engineTable({}, 19);
  const pool = new ParquetEncoderPool({ size: 1 });
  try {
    assert.deepEqual(await readAllRows(table, { decoderPool: pool, inlineDecodeBelowBytes: 0 }), await readAllRows(table, { decoderPool: null }));
    assert.equal(pool.started["merge-bucket"], 0);
    assert.ok(pool.completed.decode > 0);
  } finally {
    await pool.close();
  }
});

test("worker merges - a bucket of more Parquet than maxBucketBytes merges on the calling thread", async () => {
  const table = await engineTable({}, 23);
  const pool = new ParquetEncoderPool({ size: 2 });
  const saved = WorkerMerges.maxBucketBytes;
  try {
    const plan = await planRead(table);
    const sizes = plan.splits.map((s) => s.files.reduce((n, f) => n + f.fileSize, 0)).sort((a, b) => a - b);
    // Between the second and the third smallest bucket: two buckets in workers, two here.
    WorkerMerges.maxBucketBytes = Math.floor((sizes[1]! + sizes[2]!) / 2);
    assert.ok(sizes[1]! < sizes[2]!, `bucket sizes ${sizes.join(", ")}`);
    assert.deepEqual(await readAllRows(table, { decoderPool: pool, inlineDecodeBelowBytes: 0 }), await readAllRows(table, { decoderPool: null }));
    assert.equal(pool.started["merge-bucket"], 2);
  } finally {
    WorkerMerges.maxBucketBytes = saved;
    await pool.close();
  }
});

test("worker merges - a bucket merged ahead waits for a reader busy with earlier buckets without giving its bucket back", async () => {
  const table = await engineTable({}, 29);
  const all = await readAllRows(table, { decoderPool: null });
  const pool = new ParquetEncoderPool({ size: 2 });
  const saved = { pause: WorkerMerges.pauseAfterMs, rows: WorkerMerges.batchRows };
  WorkerMerges.pauseAfterMs = 400;
  WorkerMerges.batchRows = 100;
  try {
    const got: unknown[] = [];
    let batches = 0;
    // Far less than 400 ms between two batches, but each bucket (~7 batches) takes longer than that to read.
    for await (const r of readRows(table, { decoderPool: pool, inlineDecodeBelowBytes: 0 })) {
      if (got.length % 100 === 0 && batches++ < 24) await sleep(80);
      got.push(r);
    }
    assert.deepEqual(got, all);
    assert.equal(pool.started["merge-bucket"], 4);
    assert.equal(pool.completed["merge-bucket"], 4, "no bucket was given back");
  } finally {
    WorkerMerges.pauseAfterMs = saved.pause;
    WorkerMerges.batchRows = saved.rows;
    await pool.close();
  }
});
