/**
 * Paimon's universal compaction picker for primary-key tables, as release-1.4.2 has it (`UniversalCompaction`,
 * `ForceUpLevel0Compaction`, `EarlyFullCompaction`, `OffPeakHours`): given a bucket's sorted runs (newest first, as
 * `Levels.sortedRuns()` lists them), which leading runs to merge and into which level.
 *
 * Rules, in the order `pick` tries them:
 *  0. early full compaction, if configured (`compaction.optimization-interval`, `compaction.total-size-threshold`,
 *     `compaction.incremental-size-threshold`): every run to the max level;
 *  1. size amplification: with ≥ trigger runs, when 100 × (size of all runs but the oldest) > max-size-amp ×
 *     (size of the oldest), every run to the max level;
 *  2. size ratio: with ≥ trigger runs, from the newest run, take the next run while candidate size ×
 *     (100 + size-ratio [+ off-peak ratio]) / 100 ≥ its size; a pick needs at least 2 runs;
 *  3. file count: with > trigger runs, take the (runs − trigger + 1 ≥ 2) newest, then extend by size ratio.
 * So rules 1–3 always pick at least 2 runs (with a trigger ≥ 1). Fewer only from: a forced level-0 pick (one level-0
 * run going up to an empty level, or the bucket's only run going to the max level), and early full compaction of an
 * empty bucket (a unit of no files, which `planCompaction` drops as Java's compact manager does).
 * Output level: the max level when every run is taken, else the level of the first run left out minus 1; never
 * level 0 — when that would be 0, runs are taken until one of level ≥ 1 is, and its level is the output (the max
 * level if that takes every run).
 *
 * Release 1.4.2 is followed exactly. It does NOT yet have the "level 1 inflation" fix of Paimon PR #9185 (master,
 * August 2026: once a pick is triggered, runs of level ≤ 1 keep being absorbed past the size-ratio stop) nor 2.0.0's
 * #8993 (force-picking level 0 also takes level 1 up front). A table written by natslake with these rules is
 * compacted as a Java 1.4.2 writer would compact it.
 *
 * `ForceUpLevel0Compaction` (lookup tables: `changelog-producer=lookup`, `merge-engine=first-row`,
 * `deletion-vectors.enabled`, `force-lookup`; or `compaction.force-up-level-0`): when universal picks nothing, all
 * level-0 runs are picked anyway (plus the size-ratio extension), so no new record stays in level 0 — with
 * `lookup-compact=gentle` only every `lookup-compact.max-interval`-th time.
 *
 * Pickers are stateful like Java's (early full compaction remembers its last full compaction, the gentle mode counts
 * its skips): one per bucket writer, dropped with it. Time comes from an injectable clock.
 */
import type { DataFileMeta } from "../format/manifest.ts";
import type { LevelSortedRun } from "./levels.ts";

/** What to compact: these files (the leading sorted runs' files, newest run first) into `outputLevel`. */
export interface CompactUnit {
  readonly outputLevel: number;
  readonly files: readonly DataFileMeta[];
  /** Rewrite each file on its own (a full compaction of the max level only, see `pickFullCompaction`). */
  readonly fileRewrite: boolean;
}

/** Java's CompactStrategy: a unit for `runs` (newest first) in a tree of `numLevels` levels, or null. */
export interface CompactStrategy {
  pick(numLevels: number, runs: readonly LevelSortedRun[]): CompactUnit | null;
}

/** Wall-clock time for the time-based rules (early full compaction, off-peak hours). */
export interface CompactionClock {
  nowMillis(): number;
  /** Hour of the day, 0–23, in the local time zone (Java's LocalDateTime.now().getHour()). */
  hourOfDay(): number;
}

export const SYSTEM_CLOCK: CompactionClock = {
  nowMillis: () => Date.now(),
  hourOfDay: () => new Date().getHours(),
};

/** The unit of every file of `runs` (in run order) into `outputLevel`. */
export function unitOfRuns(outputLevel: number, runs: readonly LevelSortedRun[]): CompactUnit {
  return { outputLevel, files: runs.flatMap((r) => r.files), fileRewrite: false };
}

/**
 * Off-peak hours (`compaction.offpeak.start.hour` inclusive, `compaction.offpeak.end.hour` exclusive, wrapping past
 * midnight when start > end): the extra size-ratio percentage `compaction.offpeak-ratio` applies inside them.
 */
export class OffPeakHours {
  private constructor(
    readonly startHour: number,
    readonly endHour: number,
    readonly ratio: number,
  ) {}

  /** Null (off-peak disabled) when either hour is −1 or both are equal, as Java. */
  static create(startHour: number, endHour: number, ratio: number): OffPeakHours | null {
    if (startHour === -1 || endHour === -1 || startHour === endHour) return null;
    return new OffPeakHours(startHour, endHour, ratio);
  }

  /** The extra ratio at `hour`: `ratio` inside the off-peak window, else 0. */
  currentRatio(hour: number): number {
    const inside = this.startHour <= this.endHour ? this.startHour <= hour && hour < this.endHour : hour < this.endHour || this.startHour <= hour;
    return inside ? this.ratio : 0;
  }
}

/** Thresholds of Java's EarlyFullCompaction; each absent one is off. */
export interface EarlyFullCompactionOptions {
  /** `compaction.optimization-interval`: a full compaction when the last one is longer ago than this (ms). */
  intervalMillis?: number;
  /** `compaction.total-size-threshold`: a full compaction while the bucket's total size is below this (bytes). */
  totalSizeThreshold?: number;
  /** `compaction.incremental-size-threshold`: a full compaction once the runs above the max level exceed this. */
  incrementalSizeThreshold?: number;
}

/**
 * Full compaction on a schedule or by size (Java EarlyFullCompaction). Its memory of the last full compaction is
 * per picker, so a writer that restarts starts afresh (as in Java, see Paimon issue #6547).
 */
export class EarlyFullCompaction {
  private lastFullCompaction: number | null = null;

  constructor(
    readonly options: EarlyFullCompactionOptions,
    private readonly clock: CompactionClock = SYSTEM_CLOCK,
  ) {}

  /** Null when no threshold is set (Java's `create` returns null then). */
  static create(options: EarlyFullCompactionOptions, clock?: CompactionClock): EarlyFullCompaction | null {
    if (options.intervalMillis === undefined && options.totalSizeThreshold === undefined && options.incrementalSizeThreshold === undefined) return null;
    return new EarlyFullCompaction(options, clock);
  }

  /** Every run to the max level when a threshold says so; never for a single run. */
  tryFullCompact(numLevels: number, runs: readonly LevelSortedRun[]): CompactUnit | null {
    if (runs.length === 1) return null;
    const maxLevel = numLevels - 1;
    const { intervalMillis, totalSizeThreshold, incrementalSizeThreshold } = this.options;
    const full = (): CompactUnit => {
      this.updateLastFullCompaction();
      return unitOfRuns(maxLevel, runs);
    };
    if (intervalMillis !== undefined && (this.lastFullCompaction === null || this.clock.nowMillis() - this.lastFullCompaction > intervalMillis)) return full();
    if (totalSizeThreshold !== undefined) {
      let total = 0;
      for (const r of runs) total += r.totalSize;
      if (total < totalSizeThreshold) return full();
    }
    if (incrementalSizeThreshold !== undefined) {
      let incremental = 0;
      for (const r of runs) if (r.level !== maxLevel) incremental += r.totalSize;
      if (incremental > incrementalSizeThreshold) return full();
    }
    return null;
  }

  /** Called by the picker whenever it compacts everything to the max level for another reason. */
  updateLastFullCompaction(): void {
    this.lastFullCompaction = this.clock.nowMillis();
  }
}

export interface UniversalCompactionOptions {
  /** `compaction.max-size-amplification-percent` (200). */
  maxSizeAmplificationPercent: number;
  /** `compaction.size-ratio` (1). */
  sizeRatio: number;
  /** `num-sorted-run.compaction-trigger` (5). */
  numSortedRunCompactionTrigger: number;
  earlyFullCompaction?: EarlyFullCompaction | null;
  offPeakHours?: OffPeakHours | null;
  clock?: CompactionClock;
}

/** Java's UniversalCompaction (release-1.4.2). */
export class UniversalCompaction implements CompactStrategy {
  readonly maxSizeAmp: number;
  readonly sizeRatio: number;
  readonly trigger: number;
  private readonly earlyFull: EarlyFullCompaction | null;
  private readonly offPeak: OffPeakHours | null;
  private readonly clock: CompactionClock;

  constructor(options: UniversalCompactionOptions) {
    this.maxSizeAmp = options.maxSizeAmplificationPercent;
    this.sizeRatio = options.sizeRatio;
    this.trigger = options.numSortedRunCompactionTrigger;
    this.earlyFull = options.earlyFullCompaction ?? null;
    this.offPeak = options.offPeakHours ?? null;
    this.clock = options.clock ?? SYSTEM_CLOCK;
  }

  pick(numLevels: number, runs: readonly LevelSortedRun[]): CompactUnit | null {
    const maxLevel = numLevels - 1;
    if (this.earlyFull !== null) {
      const unit = this.earlyFull.tryFullCompact(numLevels, runs);
      if (unit !== null) return unit;
    }
    const bySizeAmp = this.pickForSizeAmp(maxLevel, runs);
    if (bySizeAmp !== null) return bySizeAmp;
    const bySizeRatio = this.pickForSizeRatio(maxLevel, runs);
    if (bySizeRatio !== null) return bySizeRatio;
    if (runs.length > this.trigger) return this.pickForSizeRatioFrom(maxLevel, runs, runs.length - this.trigger + 1, false);
    return null;
  }

  /** Rule 1: everything to the max level when the runs above the oldest outweigh it by more than max-size-amp %. */
  pickForSizeAmp(maxLevel: number, runs: readonly LevelSortedRun[]): CompactUnit | null {
    if (runs.length < this.trigger) return null;
    let candidateSize = 0n;
    for (let i = 0; i < runs.length - 1; i++) candidateSize += BigInt(runs[i]!.totalSize);
    const earliestRunSize = BigInt(runs[runs.length - 1]!.totalSize);
    // Java's long arithmetic, exact at any size.
    if (candidateSize * 100n > BigInt(this.maxSizeAmp) * earliestRunSize) {
      this.earlyFull?.updateLastFullCompaction();
      return unitOfRuns(maxLevel, runs);
    }
    return null;
  }

  /** Rule 2: from the newest run, by size ratio; null unless at least `trigger` runs and a pick of ≥ 2 runs. */
  pickForSizeRatio(maxLevel: number, runs: readonly LevelSortedRun[]): CompactUnit | null {
    if (runs.length < this.trigger) return null;
    return this.pickForSizeRatioFrom(maxLevel, runs, 1, false);
  }

  /**
   * The `candidateCount` newest runs, extended while the candidates' size × (100 + ratio) / 100 reaches the next
   * run's size. Null when that is one run unless `forcePick`.
   */
  pickForSizeRatioFrom(maxLevel: number, runs: readonly LevelSortedRun[], candidateCount: number, forcePick: boolean): CompactUnit | null {
    let count = candidateCount;
    let candidateSize = 0;
    for (let i = 0; i < count; i++) candidateSize += runs[i]!.totalSize;
    const percent = 100 + this.sizeRatio + this.offPeakRatio();
    for (let i = count; i < runs.length; i++) {
      const next = runs[i]!.totalSize;
      // Java: candidateSize * (100.0 + sizeRatio + offPeak) / 100.0 < next, in doubles — the same IEEE operations.
      if ((candidateSize * percent) / 100 < next) break;
      candidateSize += next;
      count++;
    }
    return forcePick || count > 1 ? this.createUnit(runs, maxLevel, count) : null;
  }

  /** Every level-0 run (plus the size-ratio extension), or null when level 0 is empty (Java `forcePickL0`). */
  forcePickL0(numLevels: number, runs: readonly LevelSortedRun[]): CompactUnit | null {
    let count = 0;
    while (count < runs.length && runs[count]!.level === 0) count++;
    return count === 0 ? null : this.pickForSizeRatioFrom(numLevels - 1, runs, count, true);
  }

  /** The unit of the `runCount` newest runs and its output level, which is never 0 (see the module comment). */
  createUnit(runs: readonly LevelSortedRun[], maxLevel: number, runCount: number): CompactUnit {
    let count = runCount;
    let outputLevel = count === runs.length ? maxLevel : Math.max(0, runs[count]!.level - 1);
    if (outputLevel === 0) {
      // Take runs until one of level ≥ 1 is taken; its level is the output.
      for (let i = count; i < runs.length; i++) {
        const next = runs[i]!;
        count++;
        if (next.level !== 0) {
          outputLevel = next.level;
          break;
        }
      }
    }
    if (count === runs.length) {
      this.earlyFull?.updateLastFullCompaction();
      outputLevel = maxLevel;
    }
    return unitOfRuns(outputLevel, runs.slice(0, count));
  }

  private offPeakRatio(): number {
    return this.offPeak === null ? 0 : this.offPeak.currentRatio(this.clock.hourOfDay());
  }
}

/**
 * Java's ForceUpLevel0Compaction: universal's pick, else every level-0 run into level ≥ 1. With `maxCompactInterval`
 * (`lookup-compact=gentle`) the forced pick happens only on every `maxCompactInterval`-th call that universal
 * declined; `null` (radical, the default) forces it every time.
 */
export class ForceUpLevel0Compaction implements CompactStrategy {
  private triggerCount = 0;

  constructor(
    readonly universal: UniversalCompaction,
    readonly maxCompactInterval: number | null,
  ) {}

  pick(numLevels: number, runs: readonly LevelSortedRun[]): CompactUnit | null {
    const unit = this.universal.pick(numLevels, runs);
    if (unit !== null) return unit;
    if (this.maxCompactInterval === null) return this.universal.forcePickL0(numLevels, runs);
    this.triggerCount++;
    if (this.triggerCount === this.maxCompactInterval) {
      this.triggerCount = 0;
      return this.universal.forcePickL0(numLevels, runs);
    }
    return null;
  }
}
