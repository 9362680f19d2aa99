/**
 * BucketCompactor: the compaction of one bucket by the writer that owns it (as Paimon's writers compact their own
 * buckets), one job at a time, off the writer's ingest path — the writer starts a job and goes on reading and
 * flushing; a job that takes long only delays the next job.
 *
 * A job: plan against the latest snapshot (src/maintenance/compact.ts, this bucket only; the size-ratio rule keeps
 * rewrites incremental), rewrite the picked files in the shared Parquet pool (decoding and encoding happen in worker
 * threads, under a node-wide CompactionSlots permit that bounds memory), and append one CompactionEntry to the
 * commit stream. The leader lands it as a COMPACT snapshot or rejects it and deletes its outputs
 * (src/commit/compaction-commit.ts).
 *
 * Inputs of a job sent are not planned again until they left the live set (accepted) or IN_FLIGHT_MS passed (the job
 * was rejected, or is still unread by a leader that is starting): re-planning them earlier would only send a change
 * the leader rejects as `inputs-gone`. Nothing here is durable: a writer that dies forgets its jobs; the leader still
 * decides what reached the commit stream, and outputs never sent become orphans for orphan-file cleanup.
 */
import { randomUUID } from "node:crypto";
import { failpointAsync } from "../src/failpoints.ts";
import { abortCompaction, compactionRules, planCompaction, rewrite, type CompactionRules, type CompactionTask, type CompactResult } from "../src/maintenance/compact.ts";
import type { DataFileMeta } from "../src/format/manifest.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import { encodeMsg } from "./wire/codec.ts";
import { payloadLimit } from "./wire/limits.ts";
import type { CompactionEntry } from "./wire/messages.ts";
import type { CommitLog } from "./ports.ts";
import type { CompactionSlots } from "./compaction-slots.ts";
import type { ParquetEncoderPool } from "../src/codec/parquet-pool.ts";

/**
 * One manifest cache per table object, i.e. per table on a node, shared by the compactors of all its buckets there:
 * each plans against the latest snapshot every few commits, and with a cache each a new manifest was fetched once per
 * bucket (on an object store, most of a cluster's GETs per commit).
 */
const sharedManifests = new WeakMap<Table, ManifestStore>();

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
 * How often a writer plans its bucket when the node sets no `compactionInterval`: every commit interval, at least
 * 250 ms. A bucket keeps the files of the older levels plus what flushed since its last plan and the running job's
 * landing: planning every 2 flushes let a bucket reach 10–11 live files at one sample of 60 in 10-minute runs at
 * 250 ms commits (five older levels beside five or six fresh flushes), every flush 9 at most, 6–8 otherwise, with
 * publish → visible p99 312 ms and planning's CPU flat (the same run). Planning reads only the manifests new since
 * the last plan (a shared cache), and an idle plan rewrites nothing.
 */
export function defaultCompactionInterval(commitIntervalMs: number): number {
  return Math.max(250, commitIntervalMs);
}

/**
 * The inputs of a small-lane job at most (bytes of data files): a job this small needs no compaction slot and may run
 * beside the bucket's own larger job (see `CompactionLane`).
 */
export const SMALL_LANE_BYTES = 4 * 1024 * 1024;

/**
 * Which jobs a run may start. `any`: whatever the plan picks, under the node's compaction slot. `small`: only a task
 * of at most SMALL_LANE_BYTES, without a slot — the writer starts one while its bucket's `any` job runs, on the files
 * flushed after that job's inputs. All buckets grow at the same rate, so their largest merges (a level as large as
 * the bucket) come due together and queue for the node's slot for seconds; without this lane each of them gathered a
 * flush's file every 250 ms meanwhile (a 10-minute run saw 14 live files in a bucket, 10 on average, at such a moment).
 */
export type CompactionLane = "any" | "small";

/** How long the inputs of a job sent stay out of planning unless they leave the live set first. */
export const IN_FLIGHT_MS = 60_000;

export interface BucketCompactorDeps {
  table: Table;
  bucket: number;
  ownerEpoch: number;
  writerId: string;
  commitLog: CommitLog;
  slots: CompactionSlots;
  /** The Parquet workers that rewrite (the node's compaction pool); default the process's shared pool. */
  pool?: ParquetEncoderPool | undefined;
  /** Monotonic ms. */
  now: () => number;
}

export interface CompactionJobResult {
  /** The entry sent (null: nothing worth compacting). */
  entry: CompactionEntry | null;
  inputFiles: number;
  outputFiles: number;
  inputBytes: number;
  /** Rows rewritten, and of them those whose row groups were copied byte for byte (src/maintenance/compact-copy.ts). */
  rows: number;
  rowsCopied: number;
  /** Milliseconds waiting for the node's compaction slot, and rewriting under it (0 when nothing was rewritten). */
  slotWaitMs: number;
  rewriteMs: number;
}

/** A job that sent nothing (nothing worth compacting, stopped, or nothing fitted a message). */
const NOTHING_SENT: Readonly<CompactionJobResult> = Object.freeze({ entry: null, inputFiles: 0, outputFiles: 0, inputBytes: 0, rows: 0, rowsCopied: 0, slotWaitMs: 0, rewriteMs: 0 });

export class BucketCompactor {
  private readonly manifests: ManifestStore;
  /** Input file name → until when it stays out of planning. */
  private readonly inFlight = new Map<string, number>();
  /** Inputs of jobs being rewritten (not sent yet): out of the other lane's planning. */
  private readonly reserved = new Set<string>();
  private stopped = false;

  constructor(private readonly d: BucketCompactorDeps) {
    let store = sharedManifests.get(d.table);
    if (store === undefined) sharedManifests.set(d.table, (store = new ManifestStore(d.table)));
    this.manifests = store;
  }

  /** Jobs in progress finish without sending (their outputs are removed). */
  stop(): void {
    this.stopped = true;
  }

  /**
   * Plans, rewrites and sends one job of the lane. Throws on failure (outputs written by it are removed unless sent).
   * A job of each lane may run at once: their inputs never overlap (each excludes the other's reserved inputs, and
   * excluded files end a run, so each job stays a contiguous run of the bucket).
   */
  async runOnce(lane: CompactionLane = "any"): Promise<CompactionJobResult> {
    const table = this.d.table;
    const now = this.d.now();
    const rules = {
      maxSchemaId: table.schema.id,
      sizeRatio: writerSizeRatio(table),
      exclude: (f: DataFileMeta) => this.reserved.has(f.fileName) || (this.inFlight.get(f.fileName) ?? 0) > now,
    };
    const plan = await planCompaction(table, { bucket: this.d.bucket, rules }, this.manifests);
    // Inputs no longer live were decided; expired ones are planned again.
    for (const [name, until] of this.inFlight) if (until <= now || !plan.liveFileNames.has(name)) this.inFlight.delete(name);
    if (plan.tasks.length === 0 || plan.snapshotId === null || this.stopped) return NOTHING_SENT;
    const tasks = lane === "any" ? tasksOfAJob(plan.tasks, compactionRules(table).targetFileSize) : smallTask(plan.tasks);
    if (tasks.length === 0) return NOTHING_SENT;
    const inputs = tasks.flatMap((t) => t.files.map((f) => f.fileName));
    for (const name of inputs) this.reserved.add(name);
    try {
      return await this.rewriteAndSend(tasks, lane, rules, plan.snapshotId);
    } finally {
      for (const name of inputs) this.reserved.delete(name);
    }
  }

  private async rewriteAndSend(tasks: readonly CompactionTask[], lane: CompactionLane, rules: Partial<CompactionRules>, planSnapshotId: number): Promise<CompactionJobResult> {
    const table = this.d.table;
    const waitFrom = this.d.now();
    const release = lane === "any" ? await this.d.slots.acquire() : () => undefined;
    const rewriteFrom = this.d.now();
    const results: CompactResult[] = [];
    try {
      for (const t of tasks) {
        if (this.stopped) break;
        results.push(await rewrite(table, t, { rules, pool: this.d.pool }));
      }
    } catch (e) {
      await abortCompaction(table, results);
      throw e;
    } finally {
      release();
    }
    const rewriteMs = this.d.now() - rewriteFrom;
    if (this.stopped || results.length === 0) {
      await abortCompaction(table, results);
      return NOTHING_SENT;
    }
    const entry = this.fitting(results, planSnapshotId);
    const sent = results.slice(0, entry.changes.length);
    await abortCompaction(table, results.slice(entry.changes.length));
    if (sent.length === 0) return NOTHING_SENT;
    await failpointAsync("writer.compaction-before-send");
    try {
      await this.d.commitLog.append(entry, `compaction-${entry.compactionId}`);
    } catch (e) {
      // Unknown outcome: the entry may be in the commit stream, so its outputs stay (the leader decides them, or
      // orphan-file cleanup removes them); its inputs stay out of planning until that is known.
      this.markInFlight(sent);
      throw e;
    }
    this.markInFlight(sent);
    return {
      entry,
      inputFiles: sent.reduce((n, r) => n + r.inputs.length, 0),
      outputFiles: sent.reduce((n, r) => n + r.outputs.length, 0),
      inputBytes: sent.reduce((n, r) => n + r.inputs.reduce((m, f) => m + f.fileSize, 0), 0),
      rows: sent.reduce((n, r) => n + r.inputs.reduce((m, f) => m + f.rowCount, 0), 0),
      rowsCopied: sent.reduce((n, r) => n + r.rowsCopied, 0),
      slotWaitMs: rewriteFrom - waitFrom,
      rewriteMs,
    };
  }

  private markInFlight(results: readonly CompactResult[]): void {
    // (The caller's finally releases the reservation after this: the inputs are never plannable in between.)
    const until = this.d.now() + IN_FLIGHT_MS;
    for (const r of results) for (const f of r.inputs) this.inFlight.set(f.fileName, until);
  }

  /** The entry for the longest prefix of `results` whose encoding fits in one message (maybe none). */
  private fitting(results: readonly CompactResult[], planSnapshotId: number): CompactionEntry {
    const limit = payloadLimit(this.d.commitLog.maxPayload);
    const entryOf = (rs: readonly CompactResult[]): CompactionEntry => ({
      type: "compaction",
      v: 1,
      table: this.d.table.name,
      bucket: this.d.bucket,
      ownerEpoch: this.d.ownerEpoch,
      writerId: this.d.writerId,
      compactionId: randomUUID(),
      planSnapshotId,
      changes: rs.map((r) => ({ partition: r.task.partition, totalBuckets: r.task.totalBuckets, before: r.inputs, after: r.outputs })),
    });
    for (let n = results.length; n > 0; n--) {
      const e = entryOf(results.slice(0, n));
      if (encodeMsg(e).length <= limit) return e;
    }
    return entryOf([]);
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
