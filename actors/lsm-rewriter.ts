/**
 * Where a writer's primary-key compaction rewrites its files (the port lsm-compaction.ts uses):
 *
 * - `LsmRewriteWorkers` (a node): worker threads that each run one bucket's plan at a time — decoding, the k-way merge
 *   and encoding on the worker's thread, at a lower CPU priority (the node's `compactionNice`). The merge is the
 *   costly part (about 3 µs a row on the calling thread, measured: a full compaction of a bucket of a million rows
 *   would hold a node's actors for seconds), so it never runs on the thread of the node's actors. A node starts and
 *   warms them (`warm`) before it takes buckets; else they start with the first jobs, up to `size` (the node's
 *   compaction slots: each job holds one). An idle worker does not keep the process alive. A worker that dies fails
 *   its job (retryable) and is replaced by the next job; the outputs it announced are removed.
 * - `inlineLsmRewriter` (tests, tools): the same on the calling thread, decoding and encoding in a Parquet pool.
 */
import { Worker } from "node:worker_threads";
import { ErrorKind, LakeError } from "../src/errors.ts";
import type { ParquetEncoderPool } from "../src/codec/parquet-pool.ts";
import { abortBucketCompaction, type BucketCompaction, type BucketFiles } from "../src/lsm/compact-bucket.ts";
import type { CompactTaskPlan } from "../src/lsm/compact-task.ts";
import { deserializeBinaryRow } from "../src/format/binary-row.ts";
import { executeBucketPlan } from "../src/maintenance/compact-pk.ts";
import type { Table } from "../src/table/table.ts";
import { lsmRewriteRequest } from "./lsm-rewrite-job.ts";

export interface LsmRewriter {
  /**
   * Executes `plan` for `bucket` of `table` (src/lsm/compact-bucket.ts executeCompactTask): the compaction, done and
   * not committed. On failure nothing it wrote is left.
   */
  rewrite(table: Table, bucket: BucketFiles, plan: CompactTaskPlan): Promise<BucketCompaction>;
}

/** On the calling thread; decoding and encoding in `pool` (null: on the calling thread too). */
export function inlineLsmRewriter(pool: ParquetEncoderPool | null): LsmRewriter {
  return {
    rewrite: (table, bucket, plan) => executeBucketPlan(table, { bucket, partitionValues: deserializeBinaryRow(table.partitionTypes, bucket.partition), plan }, { pool }),
  };
}

const WORKER_URL = new URL("./lsm-rewrite-worker.mjs", import.meta.url);

interface Job {
  id: number;
  table: Table;
  bucket: BucketFiles;
  plan: CompactTaskPlan;
  /** Outputs the worker announced (removed if the job fails). */
  paths: string[];
  resolve: (c: BucketCompaction) => void;
  reject: (e: Error) => void;
}

interface RewriteWorker {
  worker: Worker;
  job: Job | null;
  ready: Promise<void>;
}

/** A worker's messages about a job (ids from 1). */
type JobReply = { id: number; path: string } | { id: number; ok: true; result: BucketCompaction } | { id: number; ok: false; message: string; kind?: ErrorKind; retryable: boolean };
/** A worker's messages about itself (id 0). */
type WorkerReply = { id: 0; ready?: true; priorityError?: string };

export interface LsmRewriteWorkersOptions {
  /** The warehouse as the node names it: each worker opens its own FileIO on it. */
  warehouse: string;
  /** Worker threads at most (the node's compaction slots). */
  size: number;
  /** The workers' Unix nice value (0: the process's priority). */
  nice: number;
  /** Told once when a worker could not lower its priority. */
  onPriorityError?: (message: string) => void;
}

export class LsmRewriteWorkers implements LsmRewriter {
  private readonly workers: RewriteWorker[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  private priorityReported = false;

  constructor(private readonly o: LsmRewriteWorkersOptions) {
    if (!(Number.isInteger(o.size) && o.size >= 1)) throw new LakeError(ErrorKind.Unexpected, `LSM rewrite workers: size must be a positive integer, got ${o.size}`);
  }

  rewrite(table: Table, bucket: BucketFiles, plan: CompactTaskPlan): Promise<BucketCompaction> {
    if (this.closed) return Promise.reject(new LakeError(ErrorKind.Unexpected, "LSM rewrite workers are closed"));
    return new Promise<BucketCompaction>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, table, bucket, plan, paths: [], resolve, reject });
      this.dispatch();
    });
  }

  /**
   * Starts every worker and waits until each has loaded its modules and warmed its Parquet code (a node's first
   * compactions are then not the slow ones).
   */
  async warm(): Promise<void> {
    if (this.closed) return;
    while (this.workers.length < this.o.size) this.start();
    await Promise.all(this.workers.map((w) => w.ready));
  }

  /** Workers running (for tests). */
  get started(): number {
    return this.workers.length;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const j of this.queue.splice(0)) j.reject(new LakeError(ErrorKind.Unexpected, "LSM rewrite workers are closed"));
    await Promise.all(this.workers.splice(0).map((w) => w.worker.terminate()));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const w = this.workers.find((x) => x.job === null) ?? (this.workers.length < this.o.size ? this.start() : null);
      if (w === null) return;
      const job = this.queue.shift()!;
      w.job = job;
      w.worker.ref();
      w.worker.postMessage({ id: job.id, request: lsmRewriteRequest(this.o.warehouse, job.table, job.bucket, job.plan) });
    }
  }

  private start(): RewriteWorker {
    const worker = new Worker(WORKER_URL, { execArgv: [], workerData: { nice: this.o.nice } });
    worker.unref();
    let ready!: () => void;
    const w: RewriteWorker = { worker, job: null, ready: new Promise<void>((r) => (ready = r)) };
    worker.on("message", (reply: JobReply | WorkerReply) => {
      if (reply.id === 0) {
        const about = reply as WorkerReply;
        if (about.ready === true) ready();
        if (about.priorityError !== undefined && !this.priorityReported) {
          this.priorityReported = true;
          this.o.onPriorityError?.(about.priorityError);
        }
        return;
      }
      const m = reply as JobReply;
      const job = w.job;
      if (job === null || job.id !== m.id) return;
      if ("path" in m) {
        job.paths.push(m.path);
        return;
      }
      w.job = null;
      worker.unref();
      if (m.ok) job.resolve(m.result);
      else job.reject(new LakeError(m.kind ?? ErrorKind.Unexpected, m.message, { retryable: m.retryable }));
      this.dispatch();
    });
    const gone = (why: string): void => {
      ready();
      const i = this.workers.indexOf(w);
      if (i >= 0) this.workers.splice(i, 1);
      const job = w.job;
      w.job = null;
      if (job !== null) {
        const error = new LakeError(ErrorKind.Unexpected, `a primary-key compaction worker ${why}`, { retryable: true });
        void abortBucketCompaction(job.table, { writtenPaths: job.paths }).finally(() => job.reject(error));
      }
      if (!this.closed) this.dispatch();
    };
    worker.on("error", (e) => gone(`failed: ${e.message}`));
    worker.on("exit", (code) => gone(`exited (code ${code})`));
    this.workers.push(w);
    return w;
  }
}
