/**
 * The compaction of a primary-key bucket by its writer (the strategy of bucket-compactor.ts for tables with a primary
 * key), as Java Paimon's MergeTreeWriter runs its compact manager: the bucket's files — one LSM tree per partition —
 * are read from the latest snapshot, the table's universal compaction picks what to merge
 * (src/lsm/compact-bucket.ts `planBucketCompaction`: Paimon 1.4.2's picker, upgrades without a rewrite, deletes
 * dropped only into the highest level), and the plan is rewritten off the writer's thread (lsm-rewriter.ts).
 *
 * - One job at a time per bucket, as Java's compact manager: a job's inputs are the newest sorted runs, so the next
 *   pick must see its outcome. As Java's writer applies a finished compaction to its levels before it commits, the
 *   next job is planned on the committed trees with the jobs sent and not landed yet applied — so a bucket's
 *   compactions follow each other without waiting for the leader's round, and may take the outputs of the previous
 *   one (the leader accepts a change whose inputs an earlier change of the same round wrote, and nets them:
 *   src/commit/compaction-commit.ts). A job sent is dropped from that view once the snapshot shows it landed. When
 *   the leader rejects it (it says so: `compactionRejected`), when its inputs are gone without it, or LSM_IN_FLIGHT_MS
 *   after it was sent (the rejection was lost, or the job with a leader that died), it and the jobs sent after it
 *   (they may build on its outputs, which the leader deleted) are dropped and the bucket is planned from what is
 *   committed.
 * - Flushes in flight are not inputs until their APPEND snapshot lands (the leader lands a round's APPEND before its
 *   compactions, so an input is always live when a change is decided).
 * - The pickers are stateful (early full compaction remembers its last run): one per partition, kept for the writer's
 *   life, as Java keeps one per (partition, bucket) writer. They pick with the table's options, except that the size
 *   ratio is LSM_WRITER_SIZE_RATIO when the table sets none (see there).
 * - Back-pressure: `observe` counts the sorted runs of each partition's tree — the snapshot's level-0 files and
 *   non-empty levels with the jobs sent applied, plus the level-0 files of flushes sent and not committed yet (Java's
 *   writer has all of those in its Levels) — and asks the writer to stop reading once the fullest tree reaches
 *   `num-sorted-run.stop-trigger`. The count falls when a compaction is sent.
 *
 * Sequence numbers are the rows' own (a rewrite keeps each survivor's): the writer's chain for its flushes, which
 * starts above the bucket's highest, is not touched. Nothing here is durable: a writer that dies forgets its job.
 */
import type { DataFileMeta } from "../src/format/manifest.ts";
import { partitionPath } from "../src/format/partition.ts";
import { natslakeStateAsOf } from "../src/commit/stream-commit.ts";
import { abortBucketCompaction, filesAfterCompaction, framedKeyComparator, planBucketCompaction, type BucketFiles } from "../src/lsm/compact-bucket.ts";
import type { CompactTaskPlan } from "../src/lsm/compact-task.ts";
import { createCompactStrategy, readLsmCompactionOptions, type LsmCompactionOptions } from "../src/lsm/compaction-options.ts";
import { Levels } from "../src/lsm/levels.ts";
import type { CompactStrategy } from "../src/lsm/universal-compaction.ts";
import { liveBuckets } from "../src/maintenance/live-buckets.ts";
import type { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import type { BucketShape, CompactionLane, CompactionStrategy, PlannedJob, RewrittenPart } from "./compaction-strategy.ts";
import type { LsmRewriter } from "./lsm-rewriter.ts";

/**
 * The size ratio of the writers' universal pick (`compaction.size-ratio`, a percentage) when the table does not set
 * one; Paimon's default is 1. At 250 ms commits a bucket makes four level-0 runs a second, and with a ratio of 1 the
 * picker merges each new run into level 1 again and again (the "level 1 inflation" Paimon fixed after 1.4.2) while
 * up to num-levels − 1 older levels stay apart — the tree sits at the trigger, and a job that takes a second reaches
 * the stop trigger. With 100 a run joins the pick while the runs taken weigh at least half of it, so the levels fold
 * into fewer, larger ones. Modelled over 10 minutes of 12,500 upserts/s into a bucket of 250,000 keys (4 µs a row
 * rewritten, 150 ms a job), planning on the last job's tree: stopped 102 s with 1 against 82 s with 100 at the
 * default stop trigger (8), and each row rewritten 5.3 against 5.1 times; with headroom (a stop trigger of 16), 1
 * degrades to 10 rewrites a row and 100 stays at 5.1. Measured: docs (primary-key tables, Compaction).
 */
export const LSM_WRITER_SIZE_RATIO = 100;

/** The LSM options the writers compact `table` with: its own, and LSM_WRITER_SIZE_RATIO unless it sets a size ratio. */
export function writerLsmOptions(table: Table): LsmCompactionOptions {
  const o = readLsmCompactionOptions(table.options);
  const set = table.options.raw["compaction.size-ratio"];
  return set === undefined || set.trim() === "" ? { ...o, sizeRatio: LSM_WRITER_SIZE_RATIO } : o;
}

/** How long a job sent is awaited before the bucket is planned again without seeing it land. */
export const LSM_IN_FLIGHT_MS = 15_000;

export interface LsmCompactionDeps {
  table: Table;
  bucket: number;
  /** The table's manifest cache on this node (shared by its buckets' compactors). */
  manifests: ManifestStore;
  rewriter: LsmRewriter;
  /** Monotonic ms. */
  now: () => number;
}

/** One partition's LSM tree of the bucket. */
interface Tree {
  /** Hex of the framed partition row (the key flushes are counted under). */
  key: string;
  files: BucketFiles;
  levels: Levels;
}

/** The bucket as the writer last read it from the latest snapshot. */
interface BucketView {
  snapshotId: number | null;
  /** The bucket's committed offset in that snapshot (flushes up to it are in its trees). */
  committedOffset: number;
  trees: Tree[];
  /** `<partition>/<level>/<file>` of every live file. */
  present: Set<string>;
}

/** A job sent and not seen landing: its changes by partition, in the order they were made. */
interface SentJob {
  compactionId: string;
  changes: Array<{ key: string; before: readonly DataFileMeta[]; after: readonly DataFileMeta[] }>;
  /** Monotonic ms after which it is given up. */
  until: number;
}

const EMPTY_VIEW: BucketView = { snapshotId: null, committedOffset: 0, trees: [], present: new Set() };

const fileKey = (partition: string, f: DataFileMeta): string => `${partition}/${f.level}/${f.fileName}`;

/** The partitions' files with `job` applied (only those it changes), or null when an input is not there. */
function applyJob(files: ReadonlyMap<string, readonly DataFileMeta[]>, job: SentJob): Map<string, DataFileMeta[]> | null {
  const next = new Map<string, DataFileMeta[]>();
  for (const c of job.changes) {
    const after = filesAfterCompaction(next.get(c.key) ?? files.get(c.key) ?? [], { deletedFiles: c.before, newFiles: c.after });
    if (after === null) return null;
    next.set(c.key, after);
  }
  return next;
}

export class LsmCompaction implements CompactionStrategy {
  /** One job at a time per bucket, as Java's compact manager. */
  readonly lanes: readonly CompactionLane[] = ["any"];
  readonly chains = true;
  private readonly options: LsmCompactionOptions;
  private readonly compareKeys: ReturnType<typeof framedKeyComparator>;
  private readonly pickers = new Map<string, CompactStrategy>();
  private view: BucketView = EMPTY_VIEW;
  private reading: Promise<BucketView> | null = null;
  /** A job is being planned or rewritten. */
  private running = false;
  /** Jobs sent and not seen landing, oldest first. */
  private sent: SentJob[] = [];
  /** Flushes sent and not yet in the view's snapshot: their level-0 files per partition. */
  private flushes: Array<{ lastOffset: number; files: ReadonlyMap<string, number> }> = [];

  constructor(private readonly d: LsmCompactionDeps) {
    this.options = writerLsmOptions(d.table);
    this.compareKeys = framedKeyComparator(d.table);
  }

  async plan(lane: CompactionLane, now: number): Promise<PlannedJob | null> {
    if (lane !== "any" || this.running) return null;
    this.running = true;
    let planned = false;
    try {
      const view = await this.read();
      if (view.snapshotId === null) return null;
      const parts: Array<{ tree: Tree; plan: CompactTaskPlan }> = [];
      for (const tree of this.trees(view, now)) {
        const plan = planBucketCompaction(this.d.table, tree.files.files, { strategy: this.picker(tree.key), options: this.options });
        if (plan !== null) parts.push({ tree, plan });
      }
      if (parts.length === 0) return null;
      planned = true;
      return {
        planSnapshotId: view.snapshotId,
        needsSlot: true,
        rewrite: (stopped) => this.rewrite(parts, stopped),
        settle: (sent, compactionId) => {
          this.running = false;
          // The parts are rewritten and sent in order: what was sent is a prefix of them.
          if (sent.length === 0 || compactionId === null) return;
          const changes = sent.map((p, i) => ({ key: parts[i]!.tree.key, before: p.change.before, after: p.change.after }));
          this.sent.push({ compactionId, changes, until: this.d.now() + LSM_IN_FLIGHT_MS });
        },
      };
    } finally {
      if (!planned) this.running = false;
    }
  }

  /**
   * The bucket's trees as its compactions leave them: the view's with the jobs sent applied in order. Drops the jobs
   * whose inputs the view no longer has (landed), and a job given up (some of its inputs are gone, or its time
   * passed) with every job sent after it (they may build on it).
   */
  private trees(view: BucketView, now: number): Tree[] {
    const files = new Map(view.trees.map((t) => [t.key, t.files.files as readonly DataFileMeta[]]));
    const kept: SentJob[] = [];
    for (const job of this.sent) {
      // None of its inputs left: it landed — maybe netted with a later job of the same round — or something else took
      // them (then the jobs built on it cannot apply either, below).
      if (job.changes.every((c) => c.before.every((f) => !view.present.has(fileKey(c.key, f))))) continue;
      const next = now < job.until ? applyJob(files, job) : null;
      if (next === null) break;
      for (const [key, f] of next) files.set(key, f);
      kept.push(job);
    }
    this.sent = kept;
    if (kept.length === 0) return view.trees;
    return view.trees.map((t) => {
      const f = files.get(t.key)!;
      return f === t.files.files ? t : { key: t.key, files: { ...t.files, files: f }, levels: new Levels(f, this.options.numLevels, this.compareKeys) };
    });
  }

  private async rewrite(parts: ReadonlyArray<{ tree: Tree; plan: CompactTaskPlan }>, stopped: () => boolean): Promise<RewrittenPart[]> {
    const table = this.d.table;
    const done: RewrittenPart[] = [];
    try {
      for (const { tree, plan } of parts) {
        if (stopped()) break;
        const c = await this.d.rewriter.rewrite(table, tree.files, plan);
        done.push({
          change: { partition: c.partition, totalBuckets: c.totalBuckets, before: c.deletedFiles, after: c.newFiles, ...(c.changelogFiles.length > 0 ? { changelog: c.changelogFiles } : {}) },
          inputFiles: c.upgradedFiles + c.rewrittenFiles,
          outputFiles: c.upgradedFiles + c.outputFiles,
          bytesRead: c.bytesRead,
          bytesWritten: c.bytesWritten,
          rows: c.rowsRead,
          rowsCopied: 0,
          abort: () => abortBucketCompaction(table, c),
        });
      }
    } catch (e) {
      await Promise.all(done.map((p) => p.abort()));
      throw e;
    }
    return done;
  }

  async observe(): Promise<BucketShape> {
    const view = await this.read();
    this.flushes = this.flushes.filter((f) => f.lastOffset > view.committedOffset);
    const trees = this.trees(view, this.d.now());
    const runs = new Map<string, number>();
    for (const t of trees) runs.set(t.key, t.levels.numberOfSortedRuns());
    for (const f of this.flushes) for (const [key, n] of f.files) runs.set(key, (runs.get(key) ?? 0) + n);
    const sortedRuns = Math.max(0, ...runs.values());
    const liveFiles = view.trees.reduce((n, t) => n + t.files.files.length, 0);
    return { liveFiles, sortedRuns, stop: sortedRuns >= this.options.numSortedRunStopTrigger };
  }

  flushSent(lastOffset: number, level0Files: ReadonlyMap<string, number>): void {
    this.flushes.push({ lastOffset, files: level0Files });
  }

  flushesDropped(): void {
    this.flushes = [];
  }

  /**
   * Drops the rejected job and every job sent after it (planned on the trees it left, they may take its deleted
   * outputs; the leader rejects those in turn, or has already): the next plan and the sorted runs count see the
   * committed trees with only the jobs sent before it applied.
   */
  compactionRejected(compactionId: string): boolean {
    const i = this.sent.findIndex((j) => j.compactionId === compactionId);
    if (i < 0) return false;
    this.sent = this.sent.slice(0, i);
    return true;
  }

  private picker(partition: string): CompactStrategy {
    let p = this.pickers.get(partition);
    if (p === undefined) this.pickers.set(partition, (p = createCompactStrategy(this.options)));
    return p;
  }

  /** The bucket at the latest snapshot (read again only when there is a newer one; one read at a time). */
  private read(): Promise<BucketView> {
    this.reading ??= this.readLatest().finally(() => (this.reading = null));
    return this.reading;
  }

  private async readLatest(): Promise<BucketView> {
    const table = this.d.table;
    const latest = await table.snapshots.latest();
    if (latest === null || latest.id === this.view.snapshotId) return this.view;
    const st = await natslakeStateAsOf(table, latest);
    const compareKeys = this.compareKeys;
    const trees: Tree[] = [];
    const present = new Set<string>();
    for (const b of await liveBuckets(table, latest, { bucket: this.d.bucket }, this.d.manifests)) {
      const key = Buffer.from(b.partition).toString("hex");
      const ppath = partitionPath(table.partitionKeys, table.partitionTypes, b.partitionValues, { defaultName: table.options.partitionDefaultName, legacyName: table.options.partitionLegacyName });
      trees.push({ key, files: { partition: b.partition, partitionPath: ppath, bucket: b.bucket, totalBuckets: b.totalBuckets, files: b.files }, levels: new Levels(b.files, this.options.numLevels, compareKeys) });
      for (const f of b.files) present.add(fileKey(key, f));
    }
    this.view = { snapshotId: latest.id, committedOffset: Number(st?.buckets.get(this.d.bucket)?.offset ?? 0n), trees, present };
    return this.view;
  }
}
