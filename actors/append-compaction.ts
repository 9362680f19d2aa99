/**
 * The compaction of an append bucket by its writer (the strategy of bucket-compactor.ts for tables without a primary
 * key): plan against the latest snapshot (src/maintenance/compact.ts, this bucket only; the size-ratio rule keeps
 * rewrites incremental) and merge runs of small files into target-size files, decoded and encoded in the node's
 * Parquet pool.
 *
 * Inputs of a job sent are not planned again until they left the live set (accepted), the leader rejected the job
 * (they are plannable again at once), or IN_FLIGHT_MS passed (the rejection was lost, or the job is still unread by a
 * leader that is starting): re-planning them earlier would only send a change the leader rejects as `inputs-gone`.
 * Nothing here is durable: a writer that dies forgets its jobs.
 */
import { abortCompaction, compactionRules, planCompaction, rewrite, type CompactionRules, type CompactionTask, type CompactResult } from "../src/maintenance/compact.ts";
import type { DataFileMeta } from "../src/format/manifest.ts";
import type { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import type { ParquetEncoderPool } from "../src/codec/parquet-pool.ts";
import type { BucketShape, CompactionLane, CompactionStrategy, PlannedJob, RewrittenPart } from "./compaction-strategy.ts";

/**
 * The size ratio of the writers' pick (a percentage; see `CompactionRules.sizeRatio`) when the table does not set
 * `compaction.size-ratio`. Paimon's default (1) is made for the sorted runs of primary-key tables; for a bucket fed
 * one small file per flush, an older file joining once it is at most twice what was taken (100) rewrites each byte
 * far fewer times: modelled over 2,400 flushes (10 minutes at 4 a second) planned every 2 flushes and landing 2
 * flushes later, each byte is rewritten 7.0 times against 12.8 with a ratio of 1, over 7,200 flushes 11.1 against
 * 36.2 (8 live files at most either way) — unit test `pickBucketed with the writers' size ratio`.
 */
export const WRITER_SIZE_RATIO = 100;

/** The writers' size ratio for `table`: its own `compaction.size-ratio` when set, else WRITER_SIZE_RATIO. */
export function writerSizeRatio(table: Table): number {
  return table.options.raw["compaction.size-ratio"] !== undefined ? table.options.int("compaction.size-ratio") : WRITER_SIZE_RATIO;
}

/**
 * The inputs of a small-lane job at most (bytes of data files): a job this small needs no compaction slot and may run
 * beside the bucket's own larger job. All buckets grow at the same rate, so their largest merges (a level as large as
 * the bucket) come due together and queue for the node's slot for seconds; without this lane each of them gathered a
 * flush's file every 250 ms meanwhile (a 10-minute run saw 14 live files in a bucket, 10 on average, at such a moment).
 */
export const SMALL_LANE_BYTES = 4 * 1024 * 1024;

/** How long the inputs of a job sent stay out of planning unless they leave the live set first. */
export const IN_FLIGHT_MS = 60_000;

export interface AppendCompactionDeps {
  table: Table;
  bucket: number;
  /** The table's manifest cache on this node (shared by its buckets' compactors). */
  manifests: ManifestStore;
  /** The Parquet workers that rewrite (the node's compaction pool); default the process's shared pool. */
  pool?: ParquetEncoderPool | undefined;
  /** Monotonic ms. */
  now: () => number;
}

export class AppendCompaction implements CompactionStrategy {
  readonly lanes: readonly CompactionLane[] = ["any", "small"];
  readonly chains = false;
  /** Input file name → until when it stays out of planning. */
  private readonly inFlight = new Map<string, number>();
  /** Inputs of jobs being rewritten (not sent yet): out of the other lane's planning. */
  private readonly reserved = new Set<string>();
  /** Live files of the bucket at the last plan. */
  private liveFiles = 0;
  /** The inputs of each job sent, by compactionId, while any of them is in flight (a rejection frees them). */
  private readonly sentInputs = new Map<string, readonly string[]>();

  constructor(private readonly d: AppendCompactionDeps) {}

  /**
   * A job of each lane may run at once: their inputs never overlap (each excludes the other's reserved inputs, and
   * excluded files end a run, so each job stays a contiguous run of the bucket).
   */
  async plan(lane: CompactionLane, now: number): Promise<PlannedJob | null> {
    const table = this.d.table;
    const rules: Partial<CompactionRules> = {
      maxSchemaId: table.schema.id,
      sizeRatio: writerSizeRatio(table),
      exclude: (f: DataFileMeta) => this.reserved.has(f.fileName) || (this.inFlight.get(f.fileName) ?? 0) > now,
    };
    const plan = await planCompaction(table, { bucket: this.d.bucket, rules }, this.d.manifests);
    this.liveFiles = plan.liveFileNames.size;
    // Inputs no longer live were decided; expired ones are planned again.
    for (const [name, until] of this.inFlight) if (until <= now || !plan.liveFileNames.has(name)) this.inFlight.delete(name);
    for (const [id, names] of this.sentInputs) if (!names.some((n) => this.inFlight.has(n))) this.sentInputs.delete(id);
    if (plan.tasks.length === 0 || plan.snapshotId === null) return null;
    const tasks = lane === "any" ? tasksOfAJob(plan.tasks, compactionRules(table).targetFileSize) : smallTask(plan.tasks);
    if (tasks.length === 0) return null;
    const inputs = tasks.flatMap((t) => t.files.map((f) => f.fileName));
    for (const name of inputs) this.reserved.add(name);
    return {
      planSnapshotId: plan.snapshotId,
      needsSlot: lane === "any",
      rewrite: (stopped) => this.rewrite(tasks, rules, stopped),
      settle: (sent, compactionId) => {
        // Sent inputs stay out of planning until decided; then the reservation ends (never plannable in between).
        const until = this.d.now() + IN_FLIGHT_MS;
        const names = sent.flatMap((p) => p.change.before.map((f) => f.fileName));
        for (const name of names) this.inFlight.set(name, until);
        if (compactionId !== null && names.length > 0) this.sentInputs.set(compactionId, names);
        for (const name of inputs) this.reserved.delete(name);
      },
    };
  }

  private async rewrite(tasks: readonly CompactionTask[], rules: Partial<CompactionRules>, stopped: () => boolean): Promise<RewrittenPart[]> {
    const table = this.d.table;
    const results: CompactResult[] = [];
    try {
      for (const t of tasks) {
        if (stopped()) break;
        results.push(await rewrite(table, t, { rules, pool: this.d.pool }));
      }
    } catch (e) {
      await abortCompaction(table, results);
      throw e;
    }
    return results.map((r) => ({
      change: { partition: r.task.partition, totalBuckets: r.task.totalBuckets, before: r.inputs, after: r.outputs },
      inputFiles: r.inputs.length,
      outputFiles: r.outputs.length,
      bytesRead: r.inputs.reduce((n, f) => n + f.fileSize, 0),
      bytesWritten: r.outputs.reduce((n, f) => n + f.fileSize, 0),
      rows: r.inputs.reduce((n, f) => n + f.rowCount, 0),
      rowsCopied: r.rowsCopied,
      abort: () => abortCompaction(table, [r]),
    }));
  }

  async observe(): Promise<BucketShape> {
    return { liveFiles: this.liveFiles, sortedRuns: null, stop: false };
  }

  flushSent(): void {}

  flushesDropped(): void {}

  /** The job's inputs are plannable again at once (those still live: an input another change took is not). */
  compactionRejected(compactionId: string): boolean {
    const names = this.sentInputs.get(compactionId);
    if (names === undefined) return false;
    this.sentInputs.delete(compactionId);
    for (const name of names) this.inFlight.delete(name);
    return true;
  }
}

/** The tasks of an `any` job: about one target file's worth, so a long backlog is worked off job by job. */
function tasksOfAJob(planned: readonly CompactionTask[], targetFileSize: number): CompactionTask[] {
  const tasks: CompactionTask[] = [];
  let bytes = 0;
  for (const t of planned) {
    if (tasks.length > 0 && bytes >= targetFileSize) break;
    tasks.push(t);
    bytes += t.files.reduce((n, f) => n + f.fileSize, 0);
  }
  return tasks;
}

/**
 * The task of a `small` job: the first planned task within SMALL_LANE_BYTES, or, when the pick joined older files that
 * make it larger, its newest files within that size (still a contiguous run, at least two files); none otherwise.
 */
export function smallTask(planned: readonly CompactionTask[]): CompactionTask[] {
  for (const t of planned) {
    const files: DataFileMeta[] = [];
    let bytes = 0;
    for (let i = t.files.length - 1; i >= 0; i--) {
      const f = t.files[i]!;
      if (bytes + f.fileSize > SMALL_LANE_BYTES) break;
      files.unshift(f);
      bytes += f.fileSize;
    }
    if (files.length >= 2) return [{ ...t, files }];
  }
  return [];
}
