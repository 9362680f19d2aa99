/**
 * Primary-key buckets merged in the Parquet pool's worker threads (src/scan/merge-bucket-job.ts), several at once,
 * for a merged read (src/scan/read.ts) that takes their rows bucket by bucket in plan order.
 *
 * The k-way merge and the merge functions bound a merged read when they run on the calling thread (issue 27, 30):
 * here each worker decodes and merges a whole bucket, and the calling thread only rebuilds the batches it receives
 * (their column buffers, transferred: src/codec/batch-transfer.ts) as record batches. While the caller takes one bucket's rows, the next ones merge: a bucket's job starts
 * while fewer of this read's jobs run than the pool has workers and at most one more bucket than that is started
 * and not yet taken. A read with a limit starts a bucket only when it takes it (it must not merge buckets it never
 * needs). Jobs are submitted to the pool in plan order, whichever bucket's files were read first, so the pool's FIFO
 * queue merges the bucket needed next first.
 *
 * Memory: per started bucket its files' Parquet bytes (a bucket of more than `maxBucketBytes` is not merged here)
 * until its job takes them, and at most `WINDOW` output batches
 * the caller has not taken yet — the worker waits for the caller's acks beyond that — so it stays bounded by the
 * buckets in flight and their runs, not by their rows. A read that stops early cancels its jobs; one that takes no
 * batch for `pauseAfterMs` gets the bucket back and merges the rest itself (see there).
 */
import type * as arrow from "apache-arrow";
import { toArrowSchema } from "../codec/arrow-schema.ts";
import { batchFromPosted, type PostedBatch } from "../codec/batch-transfer.ts";
import type { MergeBucketJob, ParquetEncoderPool } from "../codec/parquet-pool.ts";
import { LakeError } from "../errors.ts";
import type { MergeBucketSpec } from "./merge-bucket-job.ts";
import type { DataSplit } from "./plan.ts";

/** Output batches (of 65,536 rows by default) a worker sends ahead of the caller's taking them. */
const WINDOW = 3;

/** A bucket's merge as the read asks for it: the spec less the flow control this module sets. */
export type BucketSpec = Omit<MergeBucketSpec, "window" | "pauseAfterMs">;

/** What a bucket's job needs, its files read: the spec and the buffers of the files' bytes to hand over. */
export interface PreparedBucket {
  spec: BucketSpec;
  transfer: ArrayBuffer[];
}

/** Whether a job ended because its worker waited too long for the caller (see `WorkerMerges.pauseAfterMs`). */
const isPause = (e: unknown): boolean => e instanceof LakeError && e.context["op"] === "merge-bucket" && e.context["error"] === "Paused";

/** One bucket's merge: the chunks that arrived and not taken yet, and how it ended. */
class BucketMerge {
  readonly chunks: PostedBatch[] = [];
  /** The schema of the bucket's batches (its read's columns), which the posted buffers are rebuilt in. */
  schema: arrow.Schema | null = null;
  job: MergeBucketJob | null = null;
  /** The job sent its last chunk (rows: how many in all). */
  finished = false;
  /** The job's (or its files' read's) failure, as the caller will see it. */
  failure: { error: unknown } | null = null;
  /** The worker gave the bucket back (the caller took no batch for a while): the caller merges the rest itself. */
  paused = false;
  /** The caller reached this bucket (its job is told, so the worker's wait for acks is bounded from then on). */
  taken = false;
  /** Wakes a caller waiting for the next chunk or the end. */
  private wake: (() => void) | null = null;
  /** The caller took the bucket and stopped (all read, or early): no chunk is wanted any more. */
  closed = false;

  notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  changed(): Promise<void> {
    return new Promise((resolve) => (this.wake = resolve));
  }
}

export class WorkerMerges {
  /**
   * How long a worker waits for the caller to take a batch of the bucket the caller is at before it gives the bucket
   * back: a slow consumer (a consume session paced by its client's credit) must not hold a worker of the
   * process-wide pool — every decode and encode of the process would queue behind it. The caller then merges the
   * rest on its own thread, skipping the rows it had (the merge is deterministic), once: a bucket is never re-merged
   * in a worker. A bucket merged ahead waits until the caller reaches it (its wait says nothing of the caller's
   * pace), and once a bucket was given back no more start ahead.
   */
  static pauseAfterMs = 1000;
  /**
   * A bucket of more Parquet than this merges on the calling thread: its files are handed to the worker whole, and
   * up to pool size + 1 buckets are read ahead, so this bounds what a read holds (3 × 64 MiB with two workers).
   */
  static maxBucketBytes = 64 * 1024 * 1024;
  /** Rows per batch the workers send (undefined: the merge's default, 65,536); tests make them small. */
  static batchRows: number | undefined = undefined;
  /**
   * false: the workers merge every bucket in JavaScript, never in the native addon (src/scan/native-bucket-merge.ts);
   * for A/B runs in one process. NATSLAKE_NATIVE_MERGE=off does the same for a whole process.
   */
  static nativeMerge = true;
  private readonly merges = new Map<DataSplit, BucketMerge>();
  /** Buckets not started yet, in plan order. */
  private next = 0;
  /** Jobs of this read not finished in their worker. */
  private running = 0;
  /** The last job's turn to be submitted (jobs go to the pool in plan order). */
  private lastTurn: Promise<void> = Promise.resolve();
  private stopped = false;
  /** A bucket was given back (the reader is slow): no more buckets start ahead, a worker would only wait for it. */
  private slowReader = false;

  /**
   * `splits`: the buckets this read merges in workers, in plan order. `limited`: a read with a limit (no bucket
   * starts before it is taken). `prepare` reads a bucket's files; `failure` turns a job's failure into the error
   * the read reports (a file that could not be decoded named by its path); `rest` merges a bucket given back on the
   * calling thread, its first `skipRows` rows left out.
   */
  constructor(
    private readonly splits: readonly DataSplit[],
    private readonly pool: ParquetEncoderPool,
    private readonly limited: boolean,
    private readonly prepare: (split: DataSplit) => Promise<PreparedBucket>,
    private readonly failure: (error: unknown, spec: BucketSpec) => unknown,
    private readonly rest: (split: DataSplit, skipRows: number) => AsyncGenerator<arrow.RecordBatch>,
  ) {}

  /** Starts the first buckets (none for a limited read). */
  begin(): this {
    this.startMore();
    return this;
  }

  /** The bucket's merged rows, in key order; started now if it was not yet. Taken once per bucket. */
  async *take(split: DataSplit): AsyncGenerator<arrow.RecordBatch> {
    const merge = this.merges.get(split) ?? this.start(split);
    merge.taken = true;
    merge.job?.taken();
    let delivered = 0;
    try {
      for (;;) {
        const chunk = merge.chunks.shift();
        if (chunk !== undefined) {
          merge.job?.ack();
          const batch = batchFromPosted(merge.schema!, chunk);
          delivered += batch.numRows;
          yield batch;
          continue;
        }
        if (merge.failure !== null) throw merge.failure.error;
        if (merge.finished) return;
        if (merge.paused) {
          yield* this.rest(split, delivered);
          return;
        }
        await merge.changed();
      }
    } finally {
      merge.closed = true;
      merge.chunks.length = 0;
      if (!merge.finished) merge.job?.cancel();
      this.merges.delete(split);
      this.startMore();
    }
  }

  /** No more buckets start; those under way are cancelled (the read ended, perhaps early). */
  close(): void {
    this.stopped = true;
    this.next = this.splits.length;
    for (const merge of this.merges.values()) {
      merge.closed = true;
      merge.chunks.length = 0;
      if (!merge.finished) merge.job?.cancel();
    }
    this.merges.clear();
  }

  /** Starts buckets ahead while this read's jobs leave a worker idle (see the module comment). */
  private startMore(): void {
    if (this.limited || this.slowReader) return;
    while (!this.stopped && this.next < this.splits.length && this.running < this.pool.size && this.merges.size < this.pool.size + 1) {
      const split = this.splits[this.next]!;
      if (this.merges.has(split)) this.next++;
      else this.start(split);
    }
  }

  private start(split: DataSplit): BucketMerge {
    const merge = new BucketMerge();
    this.merges.set(split, merge);
    const at = this.splits.indexOf(split);
    if (at >= this.next) this.next = at + 1;
    this.running++;
    const turn = this.lastTurn;
    let pass!: () => void;
    this.lastTurn = new Promise<void>((resolve) => (pass = resolve));
    const run = async (): Promise<void> => {
      let bucket: PreparedBucket;
      try {
        bucket = await this.prepare(split);
        await turn;
        if (merge.closed) return;
        merge.schema = toArrowSchema(bucket.spec.wanted ?? bucket.spec.output);
        merge.job = this.pool.mergeBucket({ ...bucket.spec, window: WINDOW, pauseAfterMs: WorkerMerges.pauseAfterMs, taken: merge.taken, ...(WorkerMerges.batchRows !== undefined ? { batchRows: WorkerMerges.batchRows } : {}) }, bucket.transfer, (chunk) => {
          if (merge.closed) return;
          merge.chunks.push(chunk);
          merge.notify();
        });
      } finally {
        // The next bucket's job goes to the pool after this one's (or once this one's files could not be read).
        pass();
      }
      try {
        await merge.job.done;
        merge.finished = true;
      } catch (e) {
        if (merge.closed) return;
        if (isPause(e)) {
          merge.paused = true;
          this.slowReader = true;
        }
        else merge.failure = { error: this.failure(e, bucket.spec) };
      }
    };
    run()
      .catch((e: unknown) => {
        merge.failure ??= { error: e };
      })
      .finally(() => {
        this.running--;
        merge.notify();
        this.startMore();
      });
    return merge;
  }
}
