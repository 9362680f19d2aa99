/**
 * The options of primary-key (LSM) compaction, read from a table's options with Paimon's names, defaults and
 * derived values (release-1.4.2 `CoreOptions`), and the picker they configure (Java
 * `MergeTreeCompactManagerFactory.createCompactStrategy`).
 *
 * Java checks almost none of these at create time; it fails later (num-levels < 2 when a writer restores a bucket)
 * or behaves oddly (a negative ratio). natslake refuses such values when it reads them, with the option's name:
 * integers must be Java ints; `num-sorted-run.compaction-trigger`, `num-sorted-run.stop-trigger` and
 * `lookup-compact.max-interval` ≥ 1; `num-levels` ≥ 2; `compaction.max-size-amplification-percent`,
 * `compaction.size-ratio` and `compaction.offpeak-ratio` ≥ 0; off-peak hours −1 or 0–23; `target-file-size` > 0;
 * `compaction.small-file-ratio` in (0, 1]. Derived values follow Java: stop-trigger defaults to trigger + 3 and is
 * at least the trigger; num-levels defaults to trigger + 1; the gentle lookup interval defaults to 2 × trigger and is
 * at least the trigger (all saturating at Integer.MAX_VALUE).
 *
 * Options that change what compaction does but are not implemented here are refused (Unsupported):
 * `record-level.expire-time` (expired records force rewrites) and `chain-table.enabled` (keeps deletes).
 */
import { ErrorKind, LakeError } from "../errors.ts";
import { parseDuration, parseMemory, type TableOptions } from "../options.ts";
import { EarlyFullCompaction, ForceUpLevel0Compaction, OffPeakHours, SYSTEM_CLOCK, UniversalCompaction, type CompactionClock, type CompactStrategy, type EarlyFullCompactionOptions } from "./universal-compaction.ts";

const INT_MAX = 2147483647;
const MB = 1024 * 1024;

/** Everything the LSM compaction of a primary-key table needs from its options. */
export interface LsmCompactionOptions {
  /** `num-sorted-run.compaction-trigger` (5). */
  numSortedRunCompactionTrigger: number;
  /** `num-sorted-run.stop-trigger` as Java uses it: max(trigger, option ?? trigger + 3). */
  numSortedRunStopTrigger: number;
  /** `num-levels` (trigger + 1): levels 0 … numLevels − 1. */
  numLevels: number;
  /** `compaction.max-size-amplification-percent` (200). */
  maxSizeAmplificationPercent: number;
  /** `compaction.size-ratio` (1). */
  sizeRatio: number;
  /** `compaction.offpeak.start.hour`, `.end.hour` (−1: off) and `compaction.offpeak-ratio` (0). */
  offPeak: { startHour: number; endHour: number; ratio: number };
  /** `compaction.optimization-interval`, `compaction.total-size-threshold`, `compaction.incremental-size-threshold`. */
  earlyFull: EarlyFullCompactionOptions;
  /** `compaction.force-up-level-0` (false). */
  forceUpLevel0: boolean;
  /** Lookup compaction: `changelog-producer=lookup`, `merge-engine=first-row`, `deletion-vectors.enabled` or `force-lookup`. */
  needLookup: boolean;
  /** `lookup-compact` (radical). */
  lookupCompact: "radical" | "gentle";
  /** `lookup-compact.max-interval` as Java uses it: max(trigger, option ?? 2 × trigger). Only for gentle. */
  lookupCompactMaxInterval: number;
  /** `target-file-size`: 128 MB for primary-key tables unless set. */
  targetFileSize: number;
  /**
   * Files at least this large that overlap nothing in their compaction are upgraded (level change only), smaller
   * ones rewritten. Release 1.4.2: ⌊target-file-size / 10⌋ × 7. When `compaction.small-file-ratio` is set (a 2.x
   * option 1.4.2 ignores): ⌊target-file-size × ratio⌋, as 2.x computes it.
   */
  compactionFileSize: number;
  /** `deletion-vectors.enabled`: compactions into level ≥ 1 always drop deletes. */
  deletionVectors: boolean;
  /** `compaction.force-rewrite-all-files` (false): no upgrades, every picked file rewritten. */
  forceRewriteAllFiles: boolean;
  /** `write-only` (false): the writer never compacts (Java's NoopCompactManager). */
  writeOnly: boolean;
}

/** Reads and validates the LSM compaction options of a primary-key table. Throws DataInvalid or Unsupported. */
export function readLsmCompactionOptions(options: TableOptions): LsmCompactionOptions {
  const raw = options.raw;
  const present = (key: string): string | undefined => {
    const v = raw[key];
    return v === undefined || v.trim() === "" ? undefined : v;
  };
  const bad = (key: string, what: string): never => {
    throw new LakeError(ErrorKind.DataInvalid, `option '${key}' = '${raw[key]}': ${what}`, { context: { option: key } });
  };
  const int = (key: string, dflt: number | undefined, min: number): number | undefined => {
    const v = present(key);
    if (v === undefined) return dflt;
    if (!/^[+-]?\d+$/.test(v.trim())) bad(key, "expected an integer");
    const n = Number(v.trim());
    if (n < -2147483648 || n > INT_MAX) bad(key, "out of the range of a Java int");
    if (n < min) bad(key, `must be at least ${min}`);
    return n;
  };
  const bool = (key: string): boolean => {
    const v = present(key);
    if (v === undefined) return false;
    if (!/^(true|false)$/i.test(v.trim())) bad(key, "expected true or false");
    return v.trim().toLowerCase() === "true";
  };
  const parsed = (key: string, parse: (text: string) => number, what: string): number | undefined => {
    const v = present(key);
    if (v === undefined) return undefined;
    try {
      return parse(v);
    } catch {
      return bad(key, what);
    }
  };
  const memory = (key: string): number | undefined => parsed(key, parseMemory, "not a memory size (examples: 64 kb, 8 mb, 1 gb)");
  const duration = (key: string): number | undefined => parsed(key, parseDuration, "not a duration (examples: 250 ms, 10 s, 2 min, 1 h, 1 d)");
  const hour = (key: string): number => {
    const h = int(key, -1, -1)!;
    if (h > 23) bad(key, "an hour of the day is 0–23 (or −1: off-peak disabled)");
    return h;
  };

  for (const [key, why] of [
    ["record-level.expire-time", "expired records change which files a compaction rewrites"],
    ["chain-table.enabled", "chain tables keep deletes through compaction"],
  ] as const) {
    const v = present(key);
    if (v !== undefined && !(key === "chain-table.enabled" && v.trim().toLowerCase() === "false")) {
      throw new LakeError(ErrorKind.Unsupported, `option '${key}' is not supported for primary-key tables by natslake (${why})`, { context: { option: key } });
    }
  }

  const trigger = int("num-sorted-run.compaction-trigger", 5, 1)!;
  const stop = int("num-sorted-run.stop-trigger", undefined, 1);
  const numLevels = int("num-levels", Math.min(trigger + 1, INT_MAX), 2)!;
  const lookupInterval = int("lookup-compact.max-interval", undefined, 1);
  const lookupCompactText = (present("lookup-compact") ?? "radical").trim().toLowerCase();
  if (lookupCompactText !== "radical" && lookupCompactText !== "gentle") bad("lookup-compact", "expected radical or gentle");
  const lookupCompact = lookupCompactText as "radical" | "gentle";

  const targetFileSize = memory("target-file-size") ?? 128 * MB;
  if (!(targetFileSize > 0)) bad("target-file-size", "must be positive");
  const ratioText = present("compaction.small-file-ratio");
  let compactionFileSize = Math.floor(targetFileSize / 10) * 7;
  if (ratioText !== undefined) {
    const ratio = Number(ratioText.trim());
    if (!Number.isFinite(ratio) || !(ratio > 0 && ratio <= 1)) bad("compaction.small-file-ratio", "expected a number above 0 and at most 1");
    compactionFileSize = Math.floor(targetFileSize * ratio);
  }

  const earlyFull: EarlyFullCompactionOptions = {};
  const interval = duration("compaction.optimization-interval");
  if (interval !== undefined) earlyFull.intervalMillis = interval;
  const total = memory("compaction.total-size-threshold");
  if (total !== undefined) earlyFull.totalSizeThreshold = total;
  const incremental = memory("compaction.incremental-size-threshold");
  if (incremental !== undefined) earlyFull.incrementalSizeThreshold = incremental;

  const mergeEngine = (present("merge-engine") ?? "deduplicate").trim().toLowerCase();
  const changelogProducer = (present("changelog-producer") ?? "none").trim().toLowerCase();
  const deletionVectors = bool("deletion-vectors.enabled");

  return {
    numSortedRunCompactionTrigger: trigger,
    numSortedRunStopTrigger: Math.max(trigger, stop ?? Math.min(trigger + 3, INT_MAX)),
    numLevels,
    maxSizeAmplificationPercent: int("compaction.max-size-amplification-percent", 200, 0)!,
    sizeRatio: int("compaction.size-ratio", 1, 0)!,
    offPeak: { startHour: hour("compaction.offpeak.start.hour"), endHour: hour("compaction.offpeak.end.hour"), ratio: int("compaction.offpeak-ratio", 0, 0)! },
    earlyFull,
    forceUpLevel0: bool("compaction.force-up-level-0"),
    needLookup: changelogProducer === "lookup" || mergeEngine === "first-row" || deletionVectors || bool("force-lookup"),
    lookupCompact,
    lookupCompactMaxInterval: Math.max(trigger, lookupInterval ?? Math.min(trigger * 2, INT_MAX)),
    targetFileSize,
    compactionFileSize,
    deletionVectors,
    forceRewriteAllFiles: bool("compaction.force-rewrite-all-files"),
    writeOnly: bool("write-only"),
  };
}

/**
 * The picker these options configure, as Java's compact manager factory builds it: ForceUpLevel0 over universal
 * when lookup is needed (with the gentle interval when `lookup-compact=gentle`) or `compaction.force-up-level-0` is
 * set, else universal. Stateful: make one per bucket writer.
 */
export function createCompactStrategy(o: LsmCompactionOptions, clock: CompactionClock = SYSTEM_CLOCK): CompactStrategy {
  const universal = new UniversalCompaction({
    maxSizeAmplificationPercent: o.maxSizeAmplificationPercent,
    sizeRatio: o.sizeRatio,
    numSortedRunCompactionTrigger: o.numSortedRunCompactionTrigger,
    earlyFullCompaction: EarlyFullCompaction.create(o.earlyFull, clock),
    offPeakHours: OffPeakHours.create(o.offPeak.startHour, o.offPeak.endHour, o.offPeak.ratio),
    clock,
  });
  if (o.needLookup) return new ForceUpLevel0Compaction(universal, o.lookupCompact === "gentle" ? o.lookupCompactMaxInterval : null);
  return o.forceUpLevel0 ? new ForceUpLevel0Compaction(universal, null) : universal;
}
