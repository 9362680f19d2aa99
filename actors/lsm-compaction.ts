/**
 * The compaction of a primary-key bucket by its writer (the strategy of bucket-compactor.ts for tables with a primary
 * key), as Java Paimon's MergeTreeWriter runs its compact manager: the bucket's files — one LSM tree per partition —
 * are read from the latest snapshot, the table's universal compaction picks what to merge
 * (src/lsm/compact-bucket.ts `planBucketCompaction`: Paimon 1.4.2's picker, upgrades without a rewrite, deletes
 * dropped only into the highest level), and the plan is rewritten off the writer's thread (lsm-rewriter.ts).
 *
 * - One job at a time per bucket, as Java's compact manager: a job's inputs are the newest sorted runs, so the next
 *   pick must see its outcome. The next job is planned once the snapshot shows the job landed (an input left its
 *   level), or LSM_IN_FLIGHT_MS after it was sent (the leader rejected it, or it was lost with a leader).
 * - Planning reads only the committed state: flushes in flight are not inputs until their APPEND snapshot lands
 *   (the leader lands a round's APPEND before its compactions, so an input is always live when a change is decided).
 * - The pickers are stateful (early full compaction remembers its last run): one per partition, kept for the writer's
 *   life, as Java keeps one per (partition, bucket) writer.
 * - Back-pressure: `observe` counts the sorted runs of each partition's tree — the snapshot's level-0 files and
 *   non-empty levels, plus the level-0 files of flushes sent and not committed yet (Java's writer has those in its
 *   Levels too) — and asks the writer to stop reading once the fullest tree reaches `num-sorted-run.stop-trigger`.
 *   The count falls when a compaction lands.
 *
 * Sequence numbers are the rows' own (a rewrite keeps each survivor's): the writer's chain for its flushes, which
 * starts above the bucket's highest, is not touched. Nothing here is durable: a writer that dies forgets its job.
 */
import type { DataFileMeta } from "../src/format/manifest.ts";
import { partitionPath } from "../src/format/partition.ts";
import { natslakeStateAsOf } from "../src/commit/stream-commit.ts";
import { abortBucketCompaction, framedKeyComparator, planBucketCompaction, type BucketFiles } from "../src/lsm/compact-bucket.ts";
import type { CompactTaskPlan } from "../src/lsm/compact-task.ts";
import { createCompactStrategy, readLsmCompactionOptions, type LsmCompactionOptions } from "../src/lsm/compaction-options.ts";
import { Levels } from "../src/lsm/levels.ts";
import type { CompactStrategy } from "../src/lsm/universal-compaction.ts";
import { liveBuckets } from "../src/maintenance/live-buckets.ts";
import type { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import type { BucketShape, CompactionLane, CompactionStrategy, PlannedJob, RewrittenPart } from "./compaction-strategy.ts";
import type { LsmRewriter } from "./lsm-rewriter.ts";

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

/** One partition's LSM tree of the bucket, as a snapshot has it. */
interface Tree {
  /** Hex of the framed partition row (the key flushes are counted under). */
  key: string;
  files: BucketFiles;
  levels: Levels;
}

/** The bucket as the writer last read it. */
interface BucketView {
  snapshotId: number | null;
  /** The bucket's committed offset in that snapshot (flushes up to it are in its trees). */
  committedOffset: number;
  trees: Tree[];
  /** `<partition>/<level>/<file>` of every live file. */
  present: Set<string>;
}

const EMPTY_VIEW: BucketView = { snapshotId: null, committedOffset: 0, trees: [], present: new Set() };

const fileKey = (partition: string, f: DataFileMeta): string => `${partition}/${f.level}/${f.fileName}`;

export class LsmCompaction implements CompactionStrategy {
  private readonly options: LsmCompactionOptions;
  private readonly pickers = new Map<string, CompactStrategy>();
  private view: BucketView = EMPTY_VIEW;
  private reading: Promise<BucketView> | null = null;
  /** The job being rewritten (`until` null) or sent and not seen landing: its inputs, as `fileKey`s. */
  private job: { inputs: ReadonlySet<string>; until: number | null } | null = null;
  /** Flushes sent and not yet in the view's snapshot: their level-0 files per partition. */
  private flushes: Array<{ lastOffset: number; files: ReadonlyMap<string, number> }> = [];

  constructor(private readonly d: LsmCompactionDeps) {
    this.options = readLsmCompactionOptions(d.table.options);
  }

  async plan(lane: CompactionLane, now: number): Promise<PlannedJob | null> {
    if (lane !== "any") return null;
    const view = await this.read();
    if (this.job !== null) {
      if (this.job.until === null || (this.job.until > now && [...this.job.inputs].every((k) => view.present.has(k)))) return null;
      this.job = null;
    }
    if (view.snapshotId === null) return null;
    const parts: Array<{ tree: Tree; plan: CompactTaskPlan }> = [];
    for (const tree of view.trees) {
      const plan = planBucketCompaction(this.d.table, tree.files.files, { strategy: this.picker(tree.key), options: this.options });
      if (plan !== null) parts.push({ tree, plan });
    }
    if (parts.length === 0) return null;
    const inputsOf = (ps: ReadonlyArray<{ tree: Tree; plan: CompactTaskPlan }>): Set<string> =>
      new Set(ps.flatMap(({ tree, plan }) => plan.steps.flatMap((s) => (s.kind === "upgrade" ? [s.file] : s.sections.flat(2))).map((f) => fileKey(tree.key, f))));
    this.job = { inputs: inputsOf(parts), until: null };
    return {
      planSnapshotId: view.snapshotId,
      needsSlot: true,
      rewrite: (stopped) => this.rewrite(parts, stopped),
      settle: (sent) => {
        // The parts are rewritten and sent in order: what was sent is a prefix of them.
        this.job = sent.length === 0 ? null : { inputs: inputsOf(parts.slice(0, sent.length)), until: this.d.now() + LSM_IN_FLIGHT_MS };
      },
    };
  }

  private async rewrite(parts: ReadonlyArray<{ tree: Tree; plan: CompactTaskPlan }>, stopped: () => boolean): Promise<RewrittenPart[]> {
    const table = this.d.table;
    const done: RewrittenPart[] = [];
    try {
      for (const { tree, plan } of parts) {
        if (stopped()) break;
        const c = await this.d.rewriter.rewrite(table, tree.files, plan);
        done.push({
          change: { partition: c.partition, totalBuckets: c.totalBuckets, before: c.deletedFiles, after: c.newFiles },
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
    const runs = new Map<string, number>();
    for (const t of view.trees) runs.set(t.key, t.levels.numberOfSortedRuns());
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
    const compareKeys = framedKeyComparator(table);
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
