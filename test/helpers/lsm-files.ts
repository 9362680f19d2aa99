/**
 * Primary-key data file metadata with INT keys for the LSM planning tests, and a compaction simulation: a bucket
 * whose compactions are planned by src/lsm and "executed" by a synthetic rewriter — each rewrite step becomes new
 * files that split the union of its inputs' key ranges into non-overlapping pieces. The Java oracle
 * (test/compat/java/LsmCompactionOracle.java) runs the same simulation through Java Paimon's own classes, with the
 * same synthetic rewriter, so the two can be compared step by step.
 */
import { serializeBinaryRow } from "../../src/format/binary-row.ts";
import { parseSqlType, type DataType } from "../../src/format/data-types.ts";
import { EMPTY_STATS, type DataFileMeta } from "../../src/format/manifest.ts";
import { planCompaction, planCompactTask, shouldWaitForLatestCompaction, shouldWaitForPreparingCheckpoint, type CompactStep, type CompactTaskPlan } from "../../src/lsm/compact-task.ts";
import { SerializedKeys } from "../../src/lsm/key-comparator.ts";
import { SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "../../src/lsm/key-value-fields.ts";
import type { Row, Value } from "../../src/format/values.ts";
import { Levels, type FramedKeyComparator } from "../../src/lsm/levels.ts";
import type { CompactStrategy, CompactUnit } from "../../src/lsm/universal-compaction.ts";

const INT = parseSqlType("INT");
const KEYS = new SerializedKeys([INT]);
/** Paimon's order of single-INT keys, on framed keys. */
export const compareIntKeys: FramedKeyComparator = (a, b) => KEYS.compareSerialized(a, b);

const keyCache = new Map<number, Uint8Array>();
/** The framed BinaryRow of an INT key (one object per value, so SerializedKeys decodes it once). */
export function intKey(n: number): Uint8Array {
  let k = keyCache.get(n);
  if (k === undefined) keyCache.set(n, (k = serializeBinaryRow([INT], [n])));
  return k;
}

/** The INT key a framed key holds. */
export const keyOf = (framed: Uint8Array): number => KEYS.decode(framed)[0] as number;

export interface FileSpec {
  name: string;
  level?: number;
  min?: number;
  max?: number;
  /** Bytes; defaults to max − min + 1 (as Java's DataFileTestUtils.newFile). */
  size?: number;
  minSeq?: number | bigint;
  maxSeq?: number | bigint;
  deleteRowCount?: number | null;
  creationTimeMillis?: number | null;
}

/** A primary-key file's metadata over INT keys [min, max]. */
export function lsmFile(s: FileSpec): DataFileMeta {
  const min = s.min ?? 0;
  const max = s.max ?? min;
  const size = s.size ?? max - min + 1;
  return {
    fileName: s.name,
    fileSize: size,
    rowCount: Math.max(1, max - min + 1),
    minKey: intKey(min),
    maxKey: intKey(max),
    keyStats: EMPTY_STATS,
    valueStats: EMPTY_STATS,
    minSequenceNumber: BigInt(s.minSeq ?? 0),
    maxSequenceNumber: BigInt(s.maxSeq ?? 0),
    schemaId: 0,
    level: s.level ?? 0,
    extraFiles: [],
    creationTimeMillis: s.creationTimeMillis === undefined ? 0 : s.creationTimeMillis,
    deleteRowCount: s.deleteRowCount === undefined ? 0 : s.deleteRowCount,
    embeddedIndex: null,
    fileSource: 0,
    valueStatsCols: null,
    externalPath: null,
    firstRowId: null,
    writeCols: null,
  };
}

/** `[name, min, max]` of a file, for readable assertions. */
export const describeFile = (f: DataFileMeta): [string, number, number] => [f.fileName, keyOf(f.minKey), keyOf(f.maxKey)];

/**
 * A step as the oracle prints it: an upgraded file's name, or a rewrite's sections → runs → file names and whether
 * it drops deletes (Java shows dropDelete only to rewrites).
 */
export type StepRecord = { upgrade: string } | { rewrite: string[][][]; dropDelete: boolean };

export function recordStep(step: CompactStep, dropDelete: boolean): StepRecord {
  return step.kind === "upgrade" ? { upgrade: step.file.fileName } : { rewrite: step.sections.map((s) => s.map((run) => run.map((f) => f.fileName))), dropDelete };
}

/** What one simulated flush-then-compact round did and left. */
export interface RoundRecord {
  /** The strategy's raw pick (before the compact manager's filter): output level and file names, or null. */
  pick: { outputLevel: number; files: string[] } | null;
  /** Whether a compaction ran. */
  compacted: boolean;
  steps: StepRecord[];
  /** The bucket afterwards: [level, file names] per sorted run. */
  runs: Array<[number, string[]]>;
  waitForLatest: boolean;
  waitForCheckpoint: boolean;
}

/**
 * The synthetic rewriter: the files of one rewrite step become ⌈size / targetSize⌉ files (at most one per key) that
 * split [min of their minKeys, max of their maxKeys] into contiguous pieces, sizes split evenly (the remainder to
 * the last). Sequence numbers span the inputs'; deleteRowCount is 0 when deletes are dropped, else the inputs' sum
 * (null if any is null). Names `c<n>` from a counter shared with the caller.
 */
export function synthesizeRewrite(inputs: readonly DataFileMeta[], outputLevel: number, dropDelete: boolean, targetSize: number, nextName: () => string): DataFileMeta[] {
  let lo = Infinity;
  let hi = -Infinity;
  let size = 0;
  let minSeq = inputs[0]!.minSequenceNumber;
  let maxSeq = inputs[0]!.maxSequenceNumber;
  let deletes: number | null = 0;
  for (const f of inputs) {
    lo = Math.min(lo, keyOf(f.minKey));
    hi = Math.max(hi, keyOf(f.maxKey));
    size += f.fileSize;
    if (f.minSequenceNumber < minSeq) minSeq = f.minSequenceNumber;
    if (f.maxSequenceNumber > maxSeq) maxSeq = f.maxSequenceNumber;
    deletes = deletes === null || f.deleteRowCount === null ? null : deletes + f.deleteRowCount;
  }
  const width = hi - lo + 1;
  const n = Math.min(Math.max(1, Math.ceil(size / targetSize)), width);
  const out: DataFileMeta[] = [];
  for (let i = 0; i < n; i++) {
    const min = lo + Math.floor((i * width) / n);
    const max = lo + Math.floor(((i + 1) * width) / n) - 1;
    const pieceSize = i === n - 1 ? size - Math.floor(size / n) * (n - 1) : Math.floor(size / n);
    out.push(lsmFile({ name: nextName(), level: outputLevel, min, max, size: pieceSize, minSeq, maxSeq, deleteRowCount: dropDelete ? 0 : deletes === null ? null : i === 0 ? deletes : 0 }));
  }
  return out;
}

/**
 * Carries out a compaction plan with the synthetic rewriter (upgraded files change level, rewritten ones become
 * `synthesizeRewrite`'s outputs) and applies the result to `levels` as the writer would.
 */
export function applyPlan(levels: Levels, plan: CompactTaskPlan, targetSize: number, nextName: () => string): void {
  const before: DataFileMeta[] = [];
  const after: DataFileMeta[] = [];
  for (const step of plan.steps) {
    if (step.kind === "upgrade") {
      before.push(step.file);
      after.push({ ...step.file, level: plan.outputLevel });
    } else {
      const inputs = step.sections.flat(2);
      before.push(...inputs);
      after.push(...synthesizeRewrite(inputs, plan.outputLevel, plan.dropDelete, targetSize, nextName));
    }
  }
  levels.update(before, after);
}

export interface SimulationConfig {
  numLevels: number;
  stopTrigger: number;
  compactionFileSize: number;
  /** Target size of the synthetic rewriter's output files. */
  targetSize: number;
  deletionVectors: boolean;
  forceRewriteAllFiles: boolean;
}

/**
 * Simulates a bucket writer: starts from `initial`, and for each new file adds it to level 0, then plans one
 * compaction with `strategy`, runs it with the synthetic rewriter and applies the result to the levels — as Java's
 * writer does with a compaction it waits for. Returns one record per new file.
 */
export function simulateBucket(initial: readonly DataFileMeta[], newFiles: readonly DataFileMeta[], strategy: CompactStrategy, cfg: SimulationConfig): RoundRecord[] {
  const levels = new Levels(initial, cfg.numLevels, compareIntKeys);
  let lastPick: CompactUnit | null = null;
  const recording: CompactStrategy = {
    pick: (n, runs) => (lastPick = strategy.pick(n, runs)),
  };
  let counter = 0;
  const nextName = (): string => `c${counter++}`;
  const rounds: RoundRecord[] = [];
  for (const f of newFiles) {
    levels.addLevel0File(f);
    lastPick = null;
    const planned = planCompaction(levels, recording, { deletionVectors: cfg.deletionVectors });
    const pick = lastPick as CompactUnit | null;
    const record: RoundRecord = {
      pick: pick === null ? null : { outputLevel: pick.outputLevel, files: pick.files.map((x) => x.fileName) },
      compacted: planned !== null,
      steps: [],
      runs: [],
      waitForLatest: false,
      waitForCheckpoint: false,
    };
    if (planned !== null) {
      const plan = planCompactTask(planned, { compareKeys: compareIntKeys, compactionFileSize: cfg.compactionFileSize, maxLevel: levels.maxLevel, forceRewriteAllFiles: cfg.forceRewriteAllFiles });
      record.steps = plan.steps.map((step) => recordStep(step, plan.dropDelete));
      applyPlan(levels, plan, cfg.targetSize, nextName);
    }
    record.runs = levels.sortedRuns().map((r) => [r.level, r.files.map((x) => x.fileName)]);
    const n = levels.numberOfSortedRuns();
    record.waitForLatest = shouldWaitForLatestCompaction(n, cfg.stopTrigger);
    record.waitForCheckpoint = shouldWaitForPreparingCheckpoint(n, cfg.stopTrigger);
    rounds.push(record);
  }
  return rounds;
}

/**
 * The metadata of a primary-key data file holding `rows`, sorted by key, each with its `_SEQUENCE_NUMBER` and
 * `_VALUE_KIND`: key range, sequence range and retraction count from the rows, no statistics.
 */
export function sortedRowsMeta(o: { name: string; rows: readonly Row[]; keyTypes: DataType[]; keyOf: (r: Row) => Value[]; level: number; fileSize: number }): DataFileMeta {
  const seqs = o.rows.map((r) => r[SEQUENCE_NUMBER_FIELD.name] as bigint);
  return {
    fileName: o.name,
    fileSize: o.fileSize,
    rowCount: o.rows.length,
    minKey: serializeBinaryRow(o.keyTypes, o.keyOf(o.rows[0]!)),
    maxKey: serializeBinaryRow(o.keyTypes, o.keyOf(o.rows[o.rows.length - 1]!)),
    keyStats: EMPTY_STATS,
    valueStats: EMPTY_STATS,
    minSequenceNumber: seqs.reduce((a, b) => (b < a ? b : a)),
    maxSequenceNumber: seqs.reduce((a, b) => (b > a ? b : a)),
    schemaId: 0,
    level: o.level,
    extraFiles: [],
    creationTimeMillis: 0,
    deleteRowCount: o.rows.filter((r) => r[VALUE_KIND_FIELD.name] === 1 || r[VALUE_KIND_FIELD.name] === 3).length,
    embeddedIndex: null,
    fileSource: 0,
    valueStatsCols: null,
    externalPath: null,
    firstRowId: null,
    writeCols: null,
  };
}
