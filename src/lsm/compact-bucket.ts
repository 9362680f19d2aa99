/**
 * Compaction of one primary-key bucket, as Java Paimon's MergeTreeCompactManager + MergeTreeCompactTask do it
 * (release-1.4.2): plan against the bucket's levels, then do the plan's steps in order.
 *
 * - Plan (`planBucketCompaction`, pure): the bucket's live files as `Levels`; the table's picker
 *   (`createCompactStrategy`: universal compaction, or ForceUpLevel0 for lookup tables) picks the runs to merge and
 *   the output level — or, for a full compaction, every run goes to the max level (`planFullCompaction`); then
 *   `planCompactTask` decides which files are upgraded and which rewritten together, and whether deletes are
 *   dropped (only into the highest non-empty level).
 * - Upgrade step: the same file (same name, same bytes, same meta) at the output level: its old entry is DELETEd and
 *   the upgraded one ADDed in the same commit — Java's `DataFileMeta.upgrade` and FileStoreCommitImpl's compactBefore
 *   / compactAfter. Its file source is unchanged.
 * - Rewrite step: the k-way merge of the step's sections (src/lsm/merge-reader.ts `mergeForCompaction`: one row per
 *   key, each with its own sequence number and kind, a surviving retraction kept unless deletes are dropped), written
 *   at the output level with file source COMPACT and rolled at `target-file-size` (src/lsm/rolling-writer.ts).
 *
 * The result has the shape of a commit message — `deletedFiles` (compactBefore) and `newFiles` (compactAfter) — and
 * the levels it leaves are checked before it is returned: every level ≥ 1 must still be a sorted run (a bug here
 * must never reach a commit, where Java would refuse the bucket).
 *
 * Nothing becomes visible here: outputs are new files no snapshot references. Every output path is reported
 * (`writtenPaths`, and `onPath` before the file exists), so a caller that does not commit removes them
 * (`abortBucketCompaction`); a crash leaves them to orphan cleanup. Upgraded files are never among them: they stay
 * referenced by the snapshot the compaction started from.
 *
 * Decoding and encoding go through the caller's `readFile` and the writer's Parquet pool; the merge itself runs on
 * the calling thread, awaiting each file's decode and each chunk's encode.
 */
import type * as arrow from "apache-arrow";
import type { CommitMessage } from "../commit/commit-message.ts";
import type { ParquetEncoderPool } from "../codec/parquet-pool.ts";
import { ErrorKind, LakeError } from "../errors.ts";
import { failpointAsync } from "../failpoints.ts";
import { FileSource, type DataFileMeta } from "../format/manifest.ts";
import type { Table } from "../table/table.ts";
import { planCompaction, planCompactTask, planFullCompaction, type CompactStep, type CompactTaskPlan, type LookupUpgrade } from "./compact-task.ts";
import { createCompactStrategy, readLsmCompactionOptions, type LsmCompactionOptions } from "./compaction-options.ts";
import { SerializedKeys } from "./key-comparator.ts";
import { keyFields } from "./key-value-fields.ts";
import { KeyValueFileWriter } from "./key-value-file-writer.ts";
import { Levels, type FramedKeyComparator } from "./levels.ts";
import { ignoreDeleteOf } from "./merge-read.ts";
import { mergeForCompaction, mergeForLookupCompaction, type CompactionChunk } from "./merge-reader.ts";
import { levelsAbove, type RowsOf } from "./levels-above.ts";
import { lookupCompactionOf } from "./lookup-changelog.ts";
import { mergeEngineOf } from "./merge-functions/merge-engine.ts";
import { sequenceFieldSpec } from "./merge-order.ts";
import { RollingKeyValueWriter } from "./rolling-writer.ts";
import type { CompactStrategy } from "./universal-compaction.ts";

/** Rows per merged chunk at most (each chunk is encoded on its own, then stitched into its file). */
const MAX_CHUNK_ROWS = 65_536;
const MIN_CHUNK_ROWS = 64;

/** The comparator of a table's framed keys (`DataFileMeta.minKey`/`maxKey`) in Paimon's key order. */
export function framedKeyComparator(table: Table): FramedKeyComparator {
  const keys = new SerializedKeys(keyFields(table.schema).map((f) => f.type));
  return (a, b) => keys.compareSerialized(a, b);
}

export interface PlanBucketOptions {
  /** Every sorted run to the max level (`natslake compact --full`, Java's full compaction). */
  full?: boolean;
  /**
   * The picker: stateful (early full compaction remembers its last run, gentle lookup compaction counts), so a writer
   * that compacts its bucket again and again keeps one. Default: a fresh one from the table's options.
   */
  strategy?: CompactStrategy;
  /** The table's LSM options, when the caller read them already. */
  options?: LsmCompactionOptions;
}

/**
 * What compacting a bucket of these live files would do now (null: nothing). Throws DataInvalid when the files are
 * not a valid LSM tree (a level ≥ 1 that overlaps itself).
 */
export function planBucketCompaction(table: Table, files: readonly DataFileMeta[], o: PlanBucketOptions = {}): CompactTaskPlan | null {
  const options = o.options ?? readLsmCompactionOptions(table.options);
  const compareKeys = framedKeyComparator(table);
  const levels = new Levels(files, options.numLevels, compareKeys);
  const planned =
    o.full === true
      ? planFullCompaction(levels, { deletionVectors: options.deletionVectors, forceRewriteAllFiles: options.forceRewriteAllFiles })
      : planCompaction(levels, o.strategy ?? createCompactStrategy(options), { deletionVectors: options.deletionVectors });
  if (planned === null) return null;
  const plan = planCompactTask(planned, { compareKeys, compactionFileSize: options.compactionFileSize, maxLevel: levels.maxLevel, forceRewriteAllFiles: options.forceRewriteAllFiles, lookup: lookupUpgradeOf(table) });
  return plan.steps.length === 0 ? null : plan;
}

/** How a lookup table's level-0 files move up alone (null: not a lookup table). */
function lookupUpgradeOf(table: Table): LookupUpgrade | null {
  const lookup = lookupCompactionOf(table.schema);
  if (lookup === null) return null;
  const plainDeduplicate = mergeEngineOf(table.schema).name === "deduplicate" && sequenceFieldSpec(table.schema) === null;
  return { produceChangelog: lookup.produceChangelog, rewriteBelowMaxLevel: !plainDeduplicate };
}

/** Where the bucket is and what it holds. */
export interface BucketFiles {
  /** Framed BinaryRow of the partition values (the empty row for unpartitioned tables). */
  partition: Uint8Array;
  /** The partition's directory, relative to the table (`dt=2026-12-01`, "" when unpartitioned). */
  partitionPath: string;
  bucket: number;
  /** The `bucket` option the files were written with (their manifest entries' `totalBuckets`). */
  totalBuckets: number;
  /** The bucket's live files. */
  files: readonly DataFileMeta[];
}

export interface ExecuteOptions {
  /** Decodes one of the bucket's files: batches with the table's columns, `_SEQUENCE_NUMBER` and `_VALUE_KIND`. */
  readFile: (file: DataFileMeta) => Promise<arrow.RecordBatch[]>;
  /** Encodes the outputs (null: on this thread). */
  pool: ParquetEncoderPool | null;
  /** Told each output's path before its file is written. */
  onPath?: (path: string) => void;
  /** The table's LSM options, when the caller read them already. */
  options?: LsmCompactionOptions;
  /**
   * A file's rows of some keys: how a lookup table's compaction finds a key's value before it in the levels above
   * its output (src/maintenance/compact-pk.ts gives it). Needed by lookup tables only.
   */
  rowsOf?: RowsOf;
}

/** A compaction of one bucket, done and not committed: a commit message plus what it did. */
export interface BucketCompaction extends CommitMessage {
  outputLevel: number;
  dropDelete: boolean;
  /** Files that changed level only (each in `deletedFiles` at its old level and in `newFiles` at the new one). */
  upgradedFiles: number;
  /** Files read and rewritten, and the files their rewrite wrote. */
  rewrittenFiles: number;
  outputFiles: number;
  /** Rows of the rewritten files, and rows written: the difference is versions merged away and deletes dropped. */
  rowsRead: number;
  rowsWritten: number;
  bytesRead: number;
  bytesWritten: number;
  /** Paths of the files written (to remove when the compaction is not committed). */
  writtenPaths: string[];
  /** `changelog-producer = lookup`: the changelog files written, committed with the compaction. */
  changelogFiles: DataFileMeta[];
}

/** Plans (see `planBucketCompaction`) and executes the compaction of one bucket; null when there is nothing to do. */
export async function compactBucket(table: Table, bucket: BucketFiles, o: ExecuteOptions & PlanBucketOptions): Promise<BucketCompaction | null> {
  const options = o.options ?? readLsmCompactionOptions(table.options);
  const plan = planBucketCompaction(table, bucket.files, { ...o, options });
  return plan === null ? null : executeCompactTask(table, bucket, plan, { ...o, options });
}

/**
 * Does the steps of `plan` for `bucket`, in order. On failure every file written is removed before the error is
 * thrown. Throws Conflict for a file written with a newer schema than the table handle's (its columns would be lost).
 */
export async function executeCompactTask(table: Table, bucket: BucketFiles, plan: CompactTaskPlan, o: ExecuteOptions): Promise<BucketCompaction> {
  const options = o.options ?? readLsmCompactionOptions(table.options);
  const result: BucketCompaction = {
    partition: bucket.partition,
    bucket: bucket.bucket,
    totalBuckets: bucket.totalBuckets,
    deletedFiles: [],
    newFiles: [],
    outputLevel: plan.outputLevel,
    dropDelete: plan.dropDelete,
    upgradedFiles: 0,
    rewrittenFiles: 0,
    outputFiles: 0,
    rowsRead: 0,
    rowsWritten: 0,
    bytesRead: 0,
    bytesWritten: 0,
    writtenPaths: [],
    changelogFiles: [],
  };
  const writer = new KeyValueFileWriter(table, { pool: o.pool });
  const onPath = (p: string): void => {
    result.writtenPaths.push(p);
    o.onPath?.(p);
  };
  const keys = keyFields(table.schema);
  const sequence = sequenceFieldSpec(table.schema);
  const ignoreDelete = ignoreDeleteOf(table);
  const engine = mergeEngineOf(table.schema);
  // A lookup table's compaction of level-0 files looks their keys up in the levels above its output. For first-row
  // that is how a key new in level 0 that a level above holds already is not written (its first version is up there),
  // so levels ≥ 1 never hold a key twice — Java's and pypaimon's batch reads of such tables read them without merging.
  const lookup = lookupCompactionOf(table.schema);
  const looksUp = lookup !== null;
  const mergeSpec = { keyFields: keys, sequence, ignoreDelete, engine, valueFields: table.schema.fields, readFile: o.readFile };
  // A lookup table's compaction that takes level-0 files merges them with the keys' values above its output level.
  const lookupMerge = (sections: Extract<CompactStep, { kind: "rewrite" }>["sections"], rewrite: boolean, dropDelete: boolean, batchRows: number): AsyncGenerator<CompactionChunk> => {
    if (o.rowsOf === undefined) throw new LakeError(ErrorKind.Unexpected, `compacting ${table.name}, a lookup table, needs a way to look keys up (rowsOf)`);
    const above = levelsAbove(bucket.files, plan.outputLevel, new SerializedKeys(keys.map((f) => f.type)), keys, o.rowsOf);
    return mergeForLookupCompaction(sections, { ...mergeSpec, dropDelete, batchRows, lookup: lookup!, above, rewrite });
  };
  const changelogWriter = (): RollingKeyValueWriter => new RollingKeyValueWriter(writer, bucket, { level: plan.outputLevel, fileSource: FileSource.APPEND, changelog: true, targetFileSize: options.targetFileSize }, onPath);
  try {
    for (const step of plan.steps) {
      if (step.kind === "upgrade") {
        if (step.changelog === true) {
          // Java's CHANGELOG_NO_REWRITE: the file's keys read against the levels above, for their changelog only.
          const changelog = changelogWriter();
          try {
            for await (const chunk of lookupMerge([[[step.file]]], false, plan.dropDelete, chunkRows(options.targetFileSize, step.file.fileSize, step.file.rowCount))) await changelog.write(chunk.rows);
            result.changelogFiles.push(...(await changelog.close()));
          } catch (e) {
            await changelog.abort();
            throw e;
          }
        }
        // Java's DataFileMeta.upgrade: the same file at the output level.
        result.deletedFiles.push(step.file);
        result.newFiles.push({ ...step.file, level: plan.outputLevel });
        result.upgradedFiles++;
        continue;
      }
      const inputs = step.sections.flat(2);
      const newer = inputs.find((f) => f.schemaId > table.schema.id);
      if (newer !== undefined) {
        throw new LakeError(ErrorKind.Conflict, `${newer.fileName} of ${table.name} was written with schema ${newer.schemaId}, newer than this handle's ${table.schema.id}: reopen the table to compact it`, { retryable: false });
      }
      const rows = inputs.reduce((n, f) => n + f.rowCount, 0);
      const bytes = inputs.reduce((n, f) => n + f.fileSize, 0);
      const rolling = new RollingKeyValueWriter(writer, bucket, { level: plan.outputLevel, fileSource: FileSource.COMPACT, targetFileSize: options.targetFileSize }, onPath);
      const changelog = changelogWriter();
      try {
        const dropDelete = plan.dropDelete && step.keepDeletes !== true;
        const batchRows = chunkRows(options.targetFileSize, bytes, rows);
        // Java's rewriteLookupChangelog: level-0 inputs into a level ≥ 1.
        if (looksUp && plan.outputLevel !== 0 && inputs.some((f) => f.level === 0)) {
          for await (const chunk of lookupMerge(step.sections, true, dropDelete, batchRows)) await (chunk.changelog ? changelog : rolling).write(chunk.rows);
        } else {
          for await (const chunk of mergeForCompaction(step.sections, { ...mergeSpec, dropDelete, batchRows })) await rolling.write(chunk);
        }
        const outputs = await rolling.close();
        result.changelogFiles.push(...(await changelog.close()));
        result.deletedFiles.push(...inputs);
        result.newFiles.push(...outputs);
        result.rewrittenFiles += inputs.length;
        result.outputFiles += outputs.length;
        result.rowsRead += rows;
        result.bytesRead += bytes;
        result.rowsWritten += outputs.reduce((n, f) => n + f.rowCount, 0);
        result.bytesWritten += outputs.reduce((n, f) => n + f.fileSize, 0);
      } catch (e) {
        await Promise.all([rolling.abort(), changelog.abort()]);
        throw e;
      }
      // Mid-compaction: outputs on disk that nothing references yet (a crash here leaves them to orphan cleanup).
      await failpointAsync("compact.rewrite.after-output");
    }
    checkLevelsAfter(table, bucket.files, result, options.numLevels);
  } catch (e) {
    await abortBucketCompaction(table, result);
    throw e;
  }
  return result;
}

/** Removes the files a compaction wrote (never the files it upgraded: those are still live). */
export async function abortBucketCompaction(table: Table, compaction: Pick<BucketCompaction, "writtenPaths">): Promise<void> {
  await Promise.all(compaction.writtenPaths.map((p) => table.io.delete(p)));
}

/**
 * Rows per merged chunk: about an eighth of a target file at the inputs' bytes per row, so a file closes within
 * an eighth of the target past it; between 64 and 65,536 rows.
 */
function chunkRows(targetFileSize: number, inputBytes: number, inputRows: number): number {
  const bytesPerRow = inputRows > 0 ? Math.max(1, inputBytes / inputRows) : 1;
  return Math.max(MIN_CHUNK_ROWS, Math.min(MAX_CHUNK_ROWS, Math.floor(targetFileSize / 8 / bytesPerRow)));
}

/** The bucket's levels after the compaction must be valid: every level ≥ 1 a sorted run (Unexpected otherwise). */
function checkLevelsAfter(table: Table, files: readonly DataFileMeta[], c: BucketCompaction, numLevels: number): void {
  const levels = new Levels(files, numLevels, framedKeyComparator(table));
  levels.update(c.deletedFiles, c.newFiles);
}

/**
 * A bucket's live files with a compaction applied: each deleted file leaves its level (matched by level and name),
 * each new file joins its own. Null when a deleted file is not live at that level (the caller's inputs-gone case).
 */
export function filesAfterCompaction(live: readonly DataFileMeta[], change: { readonly deletedFiles: readonly DataFileMeta[]; readonly newFiles: readonly DataFileMeta[] }): DataFileMeta[] | null {
  const at = (f: DataFileMeta): string => `${f.level}/${f.fileName}`;
  const gone = new Set(change.deletedFiles.map(at));
  const after = live.filter((f) => !gone.has(at(f)));
  if (after.length !== live.length - gone.size) return null;
  after.push(...change.newFiles);
  return after;
}

/**
 * Why these files of one bucket are not a valid LSM tree (a level ≥ 1 that overlaps itself, a file twice), or null
 * when they are: Java's PrimaryKeyConflictDetection.
 */
export function levelsConflict(files: readonly DataFileMeta[], numLevels: number, compareKeys: FramedKeyComparator): string | null {
  try {
    new Levels(files, numLevels, compareKeys);
    return null;
  } catch (e) {
    if (!(e instanceof LakeError) || e.kind !== ErrorKind.DataInvalid) throw e;
    return e.message;
  }
}

/**
 * Java's PrimaryKeyConflictDetection, for a compaction about to commit: the bucket's live files in the snapshot the
 * commit builds on, with the compaction applied, must still be a valid LSM tree — every level ≥ 1 a sorted run, no
 * file twice. A Conflict (not retried) otherwise: something else changed the bucket since the compaction read it.
 * Inputs that are no longer live are left to the commit's own check (FileStoreCommit: a Conflict too).
 */
export function checkCompactionApplies(table: Table, live: readonly DataFileMeta[], change: Pick<CommitMessage, "bucket" | "deletedFiles" | "newFiles">, numLevels: number): void {
  // An input no longer live: the commit's own check says so (levels built without it would mislead).
  const after = filesAfterCompaction(live, change);
  if (after === null) return;
  const conflict = levelsConflict(after, numLevels, framedKeyComparator(table));
  if (conflict !== null) {
    throw new LakeError(ErrorKind.Conflict, `compaction of ${table.name} bucket ${change.bucket} conflicts with the bucket's files at commit time (LSM conflict: ${conflict}); nothing was committed`, { retryable: false });
  }
}
