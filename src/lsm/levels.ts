/**
 * A bucket's files as Paimon's LSM tree holds them (Java `Levels`, `SortedRun`, `LevelSortedRun`, release-1.4.2).
 *
 * Level 0 holds the flushed files, each its own sorted run; they overlap freely and are ordered newest first (the
 * largest maxSequenceNumber first, then the smaller minSequenceNumber, the earlier creation time, the file name — the
 * tie-breaks matter when two writers ever wrote one bucket with overlapping sequence numbers, Paimon issue #5872).
 * Each level 1…maxLevel is one sorted run: files ordered by minKey whose key ranges do not overlap
 * (`minKey(i) > maxKey(i-1)`). Java refuses to restore a bucket that breaks this ("SortedRun is not sorted…") and its
 * committer refuses such a commit, so every level this class builds or updates is validated the same way.
 *
 * Pure: no IO. Keys are compared as DataFileMeta stores them (framed BinaryRows) through a `FramedKeyComparator`,
 * e.g. `(a, b) => keys.compareSerialized(a, b)` of a `SerializedKeys` (key-comparator.ts).
 */
import { ErrorKind, LakeError } from "../errors.ts";
import type { DataFileMeta } from "../format/manifest.ts";

/** Compares two framed BinaryRow keys (`DataFileMeta.minKey`/`maxKey`) in Paimon's key order. */
export type FramedKeyComparator = (a: Uint8Array, b: Uint8Array) => number;

/** One sorted run and the level it lives at (a level-0 file, or a whole level ≥ 1). */
export interface LevelSortedRun {
  readonly level: number;
  /** Ordered by key; their key ranges do not overlap. */
  readonly files: readonly DataFileMeta[];
  /** Sum of the files' sizes: what the universal picker weighs. */
  readonly totalSize: number;
}

/** A sorted run of `files` (already in key order) at `level`. */
export function levelSortedRun(level: number, files: readonly DataFileMeta[]): LevelSortedRun {
  let totalSize = 0;
  for (const f of files) totalSize += f.fileSize;
  return { level, files, totalSize };
}

/**
 * Java's order of level-0 files: larger maxSequenceNumber first (newest), then smaller minSequenceNumber, then
 * earlier creation time, then file name. A creation time that is absent (manifests of old writers) sorts first.
 */
export function compareLevel0(a: DataFileMeta, b: DataFileMeta): number {
  if (a.maxSequenceNumber !== b.maxSequenceNumber) return a.maxSequenceNumber > b.maxSequenceNumber ? -1 : 1;
  if (a.minSequenceNumber !== b.minSequenceNumber) return a.minSequenceNumber < b.minSequenceNumber ? -1 : 1;
  const ta = a.creationTimeMillis;
  const tb = b.creationTimeMillis;
  if (ta !== tb) {
    if (ta === null) return -1;
    if (tb === null) return 1;
    return ta < tb ? -1 : 1;
  }
  // Java's String.compareTo: UTF-16 code units, which is JS's `<` on strings.
  return a.fileName < b.fileName ? -1 : a.fileName > b.fileName ? 1 : 0;
}

/**
 * Throws unless `files` (in key order) form a sorted run: each file's minKey above the previous file's maxKey.
 * `kind` says whose fault an overlap is: DataInvalid for files read from a table, Unexpected for our own results.
 */
export function validateSortedRun(files: readonly DataFileMeta[], compareKeys: FramedKeyComparator, level: number, kind: ErrorKind = ErrorKind.DataInvalid): void {
  for (let i = 1; i < files.length; i++) {
    const prev = files[i - 1]!;
    const cur = files[i]!;
    if (compareKeys(cur.minKey, prev.maxKey) <= 0) {
      throw new LakeError(
        kind,
        `level ${level} is not a sorted run: the key range of ${cur.fileName} starts at or before the end of ${prev.fileName}'s ` +
          `(files of one level ≥ 1 must not overlap; Java Paimon refuses such a bucket with "SortedRun is not sorted and may contain overlapping key intervals")`,
        { context: { level, files: [prev.fileName, cur.fileName] } },
      );
    }
  }
}

/** `files` ordered by minKey and validated as a sorted run (Java `SortedRun.fromUnsorted`). */
export function sortedRunFromUnsorted(files: readonly DataFileMeta[], compareKeys: FramedKeyComparator, level: number, kind?: ErrorKind): DataFileMeta[] {
  const sorted = [...files].sort((a, b) => compareKeys(a.minKey, b.minKey));
  validateSortedRun(sorted, compareKeys, level, kind);
  return sorted;
}

/** The files of one (partition, bucket) by level, as Java's `Levels`. */
export class Levels {
  /** Newest first (compareLevel0). */
  private level0: DataFileMeta[] = [];
  /** `runs[i]` is level i + 1, in key order. */
  private readonly runs: DataFileMeta[][] = [];

  /**
   * Builds the levels of a bucket from its live files. `numLevels` is the table's `num-levels` (levels 0 …
   * numLevels − 1); as in Java, a file at a higher level than that widens the tree instead of failing (a table whose
   * num-levels was lowered). Throws DataInvalid when a level ≥ 1 overlaps, a level is negative, two level-0 files are
   * the same file, or fewer than 2 levels result.
   */
  constructor(
    files: readonly DataFileMeta[],
    numLevels: number,
    private readonly compareKeys: FramedKeyComparator,
  ) {
    let maxFileLevel = -1;
    for (const f of files) {
      if (!Number.isInteger(f.level) || f.level < 0) throw new LakeError(ErrorKind.DataInvalid, `${f.fileName} has level ${f.level}; levels are 0 or more`, { context: { file: f.fileName } });
      if (f.level > maxFileLevel) maxFileLevel = f.level;
    }
    const restored = Math.max(numLevels, maxFileLevel + 1);
    if (!(restored > 1)) throw new LakeError(ErrorKind.DataInvalid, `the number of levels must be at least 2 (num-levels = ${numLevels})`);
    for (let i = 1; i < restored; i++) this.runs.push([]);
    this.apply([], files, ErrorKind.DataInvalid);
  }

  /** Levels 0 … maxLevel. */
  get numberOfLevels(): number {
    return this.runs.length + 1;
  }

  get maxLevel(): number {
    return this.runs.length;
  }

  /** The level-0 files, newest first. */
  level0Files(): readonly DataFileMeta[] {
    return this.level0;
  }

  /** The files of `level` (≥ 1) in key order. */
  runOfLevel(level: number): readonly DataFileMeta[] {
    if (!Number.isInteger(level) || level < 1 || level > this.maxLevel) throw new LakeError(ErrorKind.Unexpected, `level ${level} is not a sorted run of this tree (levels 1…${this.maxLevel})`);
    return this.runs[level - 1]!;
  }

  /**
   * The sorted runs, as the picker sees them: each level-0 file (newest first), then each non-empty level 1…maxLevel.
   */
  sortedRuns(): LevelSortedRun[] {
    const out: LevelSortedRun[] = this.level0.map((f) => levelSortedRun(0, [f]));
    this.runs.forEach((files, i) => {
      if (files.length > 0) out.push(levelSortedRun(i + 1, files));
    });
    return out;
  }

  /** Level-0 files plus non-empty levels ≥ 1: what `num-sorted-run.*` counts. */
  numberOfSortedRuns(): number {
    let n = this.level0.length;
    for (const files of this.runs) if (files.length > 0) n++;
    return n;
  }

  /** The highest level holding a file: 0 when only level 0 does, −1 when the bucket is empty. */
  nonEmptyHighestLevel(): number {
    for (let i = this.runs.length - 1; i >= 0; i--) if (this.runs[i]!.length > 0) return i + 1;
    return this.level0.length === 0 ? -1 : 0;
  }

  /** Every file, in sorted-run order. */
  allFiles(): DataFileMeta[] {
    return [...this.level0, ...this.runs.flat()];
  }

  totalFileSize(): number {
    let n = 0;
    for (const f of this.allFiles()) n += f.fileSize;
    return n;
  }

  /** A newly flushed file (level 0). */
  addLevel0File(file: DataFileMeta): void {
    if (file.level !== 0) throw new LakeError(ErrorKind.Unexpected, `${file.fileName} is at level ${file.level}, not a new level-0 file`);
    this.update([], [file]);
  }

  /**
   * Applies a compaction result: each `before` file leaves its level, each `after` file joins its own (an upgraded
   * file appears in both, at its old and its new level). Files are matched by name within their level. Throws
   * Unexpected — and changes nothing — when a `before` file is not where it claims to be, an `after` file's level is
   * outside the tree, or a level ≥ 1 would overlap. (Java ignores the first two silently; here they would hide a bug
   * in whoever computed the result.)
   */
  update(before: readonly DataFileMeta[], after: readonly DataFileMeta[]): void {
    this.apply(before, after, ErrorKind.Unexpected);
  }

  private apply(before: readonly DataFileMeta[], after: readonly DataFileMeta[], kind: ErrorKind): void {
    const fail = (message: string, file: DataFileMeta): never => {
      throw new LakeError(kind, message, { context: { file: file.fileName, level: file.level } });
    };
    const byLevel = (files: readonly DataFileMeta[]): Map<number, DataFileMeta[]> => {
      const m = new Map<number, DataFileMeta[]>();
      for (const f of files) {
        if (!Number.isInteger(f.level) || f.level < 0 || f.level > this.maxLevel) fail(`${f.fileName} is at level ${f.level}, outside this tree's levels 0…${this.maxLevel}`, f);
        let list = m.get(f.level);
        if (list === undefined) m.set(f.level, (list = []));
        list.push(f);
      }
      return m;
    };
    const removed = byLevel(before);
    const added = byLevel(after);
    // Compute every changed level first, then swap them in: a failure leaves the tree as it was.
    const next = new Map<number, DataFileMeta[]>();
    for (let level = 0; level <= this.maxLevel; level++) {
      const out = removed.get(level) ?? [];
      const ins = added.get(level) ?? [];
      if (out.length === 0 && ins.length === 0) continue;
      const current = level === 0 ? this.level0 : this.runs[level - 1]!;
      const gone = new Set(out.map((f) => f.fileName));
      if (gone.size !== out.length) fail(`a compaction result removes ${out[0]!.fileName} twice from level ${level}`, out[0]!);
      const kept = current.filter((f) => !gone.has(f.fileName));
      if (kept.length !== current.length - gone.size) {
        const missing = out.find((f) => !current.some((c) => c.fileName === f.fileName))!;
        fail(`a compaction result removes ${missing.fileName} from level ${level}, where it is not`, missing);
      }
      const names = new Set(kept.map((f) => f.fileName));
      for (const f of ins) {
        if (names.has(f.fileName)) fail(`${f.fileName} is already at level ${level}`, f);
        names.add(f.fileName);
      }
      const files = [...kept, ...ins];
      next.set(level, level === 0 ? files.sort(compareLevel0) : sortedRunFromUnsorted(files, this.compareKeys, level, kind));
    }
    for (const [level, files] of next) {
      if (level === 0) this.level0 = files;
      else this.runs[level - 1] = files;
    }
  }
}
