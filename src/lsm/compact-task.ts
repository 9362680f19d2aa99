/**
 * From a picked compaction unit to the work a compaction does, as Java's `MergeTreeCompactManager.triggerCompaction`
 * and `MergeTreeCompactTask` (release-1.4.2) decide it — without doing any of it (no IO):
 *
 * - `planCompaction`: asks the picker, drops units that would change nothing, and decides whether deletes may be
 *   dropped: only when the output is not level 0 and either nothing older lies above the output level or deletion
 *   vectors are on (then older versions are masked by the vectors, not by the retract rows).
 * - `planCompactTask`: the unit's files split by IntervalPartition into sections; walking the sections in key order,
 *   a section of several runs is rewritten, a file alone in its section is *upgraded* (its level changes, its bytes
 *   stay) when it is at least `compactionFileSize`, else rewritten together with the neighbouring small files and
 *   overlapping sections until the next upgraded file. An upgrade into the max level of a file that may hold deletes
 *   (`deleteRowCount` > 0 or unknown) rewrites it instead, so the max level never keeps retract rows; so does
 *   `compaction.force-rewrite-all-files`. A lone small file with no neighbours is upgraded, not rewritten.
 * - the write stall predicates of the compact manager (`num-sorted-run.stop-trigger`).
 */
import type { DataFileMeta } from "../format/manifest.ts";
import { intervalPartition, type Section } from "./interval-partition.ts";
import type { FramedKeyComparator, Levels, LevelSortedRun } from "./levels.ts";
import type { CompactStrategy, CompactUnit } from "./universal-compaction.ts";

/** A unit to compact and whether its rewrite may drop retract rows (-U/-D). */
export interface PlannedCompaction {
  readonly unit: CompactUnit;
  readonly dropDelete: boolean;
}

export interface PlanCompactionOptions {
  /** `deletion-vectors.enabled`: output into level ≥ 1 drops deletes even below the highest level. */
  deletionVectors: boolean;
  /** Keep deletes whatever the level (Java's chain tables); false for every table natslake writes. */
  forceKeepDelete?: boolean;
}

/**
 * Java's `triggerCompaction(false)` minus the submission: the strategy's pick for the bucket's current runs, or null
 * when there is none, it holds no file, or it is one file already at the output level.
 */
export function planCompaction(levels: Levels, strategy: CompactStrategy, options: PlanCompactionOptions): PlannedCompaction | null {
  const unit = strategy.pick(levels.numberOfLevels, levels.sortedRuns());
  if (unit === null || unit.files.length === 0) return null;
  if (unit.files.length === 1 && unit.files[0]!.level === unit.outputLevel) return null;
  return { unit, dropDelete: dropDeletes(unit.outputLevel, levels, options) };
}

/**
 * Java's `triggerCompaction(true)` (a full compaction asked for by the user or `full-compaction.delta-commits`):
 * every run into the max level; when the max level is all there is, only its files that must be rewritten — all of
 * them with `forceRewriteAllFiles`, else those with a deletion vector — each on its own (`fileRewrite`).
 */
export function planFullCompaction(levels: Levels, options: PlanCompactionOptions & { forceRewriteAllFiles: boolean; hasDeletionVector?: (file: DataFileMeta) => boolean }): PlannedCompaction | null {
  const unit = pickFullCompaction(levels.numberOfLevels, levels.sortedRuns(), options.forceRewriteAllFiles, options.hasDeletionVector);
  return unit === null ? null : { unit, dropDelete: dropDeletes(unit.outputLevel, levels, options) };
}

/** Java's `CompactStrategy.pickFullCompaction` (record-level expiry aside, which natslake refuses). */
export function pickFullCompaction(numLevels: number, runs: readonly LevelSortedRun[], forceRewriteAllFiles: boolean, hasDeletionVector?: (file: DataFileMeta) => boolean): CompactUnit | null {
  const maxLevel = numLevels - 1;
  if (runs.length === 0) return null;
  if (runs.length === 1 && runs[0]!.level === maxLevel) {
    const files = runs[0]!.files.filter((f) => forceRewriteAllFiles || (hasDeletionVector?.(f) ?? false));
    return files.length === 0 ? null : { outputLevel: maxLevel, files, fileRewrite: true };
  }
  return { outputLevel: maxLevel, files: runs.flatMap((r) => r.files), fileRewrite: false };
}

/** Whether a compaction into `outputLevel` may drop retract rows (Java's `dropDelete`). */
export function dropDeletes(outputLevel: number, levels: Levels, options: PlanCompactionOptions): boolean {
  return !(options.forceKeepDelete ?? false) && outputLevel !== 0 && (outputLevel >= levels.nonEmptyHighestLevel() || options.deletionVectors);
}

/** One piece of a compaction's work, in the order Java does it. */
export type CompactStep =
  /**
   * The file moves to the output level unchanged (a new manifest entry, the same data file). `changelog`: a level-0
   * file of a `changelog-producer = lookup` table, whose changelog is made by reading it against the levels above.
   */
  | { readonly kind: "upgrade"; readonly file: DataFileMeta; readonly changelog?: boolean }
  /**
   * These sections (key-ordered, not overlapping one another; each its sorted runs) are merged into new files at
   * the output level — one merge over all of them, rolled at the target file size. `keepDeletes`: a lookup table's
   * level-0 file rewritten instead of upgraded (Java's upgrade with CHANGELOG_WITH_REWRITE keeps its retractions).
   */
  | { readonly kind: "rewrite"; readonly sections: readonly Section[]; readonly keepDeletes?: boolean };

export interface CompactTaskPlan {
  readonly outputLevel: number;
  readonly dropDelete: boolean;
  readonly steps: readonly CompactStep[];
}

export interface CompactTaskOptions {
  compareKeys: FramedKeyComparator;
  /** `LsmCompactionOptions.compactionFileSize`: the smallest file that is upgraded rather than rewritten. */
  compactionFileSize: number;
  /** The tree's max level (`Levels.maxLevel`). */
  maxLevel: number;
  /** `compaction.force-rewrite-all-files`. */
  forceRewriteAllFiles: boolean;
  /**
   * A lookup table (src/lsm/lookup-changelog.ts): how a level-0 file moves up without company — Java's
   * LookupMergeTreeCompactRewriter.upgradeStrategy. Absent or null: as any other file.
   */
  lookup?: LookupUpgrade | null;
}

export interface LookupUpgrade {
  /** `changelog-producer = lookup`: an upgraded level-0 file's keys give changelog. */
  produceChangelog: boolean;
  /**
   * A level-0 file is rewritten (merged with the values above) rather than upgraded below the max level: every engine
   * but deduplicate without a `sequence.field`, whose newest version is the merged one as it stands.
   */
  rewriteBelowMaxLevel: boolean;
}

/** A file may hold retract rows unless its `deleteRowCount` says 0. */
export function mayContainDeletes(file: DataFileMeta): boolean {
  return file.deleteRowCount === null || file.deleteRowCount > 0;
}

/** The steps of compacting `planned` (Java `MergeTreeCompactTask.doCompact`, or `FileRewriteCompactTask`). */
export function planCompactTask(planned: PlannedCompaction, options: CompactTaskOptions): CompactTaskPlan {
  const { unit, dropDelete } = planned;
  const outputLevel = unit.outputLevel;
  const steps: CompactStep[] = [];
  const rewriteAlone = (file: DataFileMeta): void => {
    steps.push({ kind: "rewrite", sections: [[[file]]] });
  };
  if (unit.fileRewrite) {
    for (const f of unit.files) rewriteAlone(f);
    return { outputLevel, dropDelete, steps };
  }

  const lookup = options.lookup ?? null;
  const upgrade = (file: DataFileMeta): void => {
    if ((outputLevel === options.maxLevel && mayContainDeletes(file)) || options.forceRewriteAllFiles) rewriteAlone(file);
    else if (file.level === outputLevel) return;
    else if (lookup === null || file.level !== 0) steps.push({ kind: "upgrade", file });
    else if (outputLevel !== options.maxLevel && lookup.rewriteBelowMaxLevel) steps.push({ kind: "rewrite", sections: [[[file]]], keepDeletes: true });
    else steps.push({ kind: "upgrade", file, ...(lookup.produceChangelog ? { changelog: true } : {}) });
  };
  // Sections waiting to be rewritten together: overlapping sections and small files, until a large file cuts them.
  let pending: Section[] = [];
  const flush = (): void => {
    if (pending.length === 0) return;
    const only = pending[0]!;
    if (pending.length === 1 && only.length === 1) {
      // One sorted run alone (a single small file): nothing to merge it with.
      for (const f of only[0]!) upgrade(f);
    } else {
      steps.push({ kind: "rewrite", sections: pending });
    }
    pending = [];
  };

  for (const section of intervalPartition(unit.files, options.compareKeys)) {
    if (section.length > 1) {
      pending.push(section);
      continue;
    }
    for (const file of section[0]!) {
      if (file.fileSize < options.compactionFileSize) {
        pending.push([[file]]);
      } else {
        flush();
        upgrade(file);
      }
    }
  }
  flush();
  return { outputLevel, dropDelete, steps };
}

/**
 * A flush waits for the running compaction when the bucket has more sorted runs than the stop trigger (Java
 * `shouldWaitForLatestCompaction`). natslake's writer turns this into backpressure instead of a blocking wait.
 */
export function shouldWaitForLatestCompaction(sortedRuns: number, stopTrigger: number): boolean {
  return sortedRuns > stopTrigger;
}

/** A commit waits for the running compaction above stop trigger + 1 runs (Java `shouldWaitForPreparingCheckpoint`). */
export function shouldWaitForPreparingCheckpoint(sortedRuns: number, stopTrigger: number): boolean {
  return sortedRuns > stopTrigger + 1;
}

/**
 * Whether compaction still has work before a commit may be called complete (Java `compactNotCompleted`): a task is
 * running, or — for lookup tables, whose level-0 records are invisible or without changelog until compacted — level 0
 * is not empty.
 */
export function compactNotCompleted(levels: Levels, taskRunning: boolean, needLookup: boolean): boolean {
  return taskRunning || (needLookup && levels.level0Files().length > 0);
}
