/**
 * Compaction of append tables: small data files rewritten into fewer, larger ones, committed as one COMPACT
 * snapshot that DELETEs the inputs and ADDs the outputs. Readers see exactly the same rows before and after, and a
 * fixed bucket keeps its order. The rules are Paimon's (see ../shared/paimon-format.md §7.3, §9.2), in three steps a
 * cluster writer can also take per bucket: `planCompaction` (which files, no IO beyond manifests), `rewrite` (writes
 * the outputs of one task, nothing visible), `commitCompaction` (one snapshot for many tasks).
 *
 * Which files: a file is *small* below `target-file-size` × `compaction.small-file-ratio` (256 MB × 0.7 by default:
 * Paimon's `compactionFileSize`, so an output just under the target is not rewritten again and again).
 * - Fixed buckets (`bucket = N`, an append queue): per (partition, bucket), the files in sequence order; every run of
 *   consecutive small files (a large file ends a run, and is never rewritten) with at least `compaction.min.file-num`
 *   files becomes tasks of at most `compaction.max.file-num` files (a longer run is cut into near-equal chunks). The
 *   outputs of a task take the sequence numbers from its first input's minimum on, one per row in read order, so
 *   they cover the inputs' range (exactly, for natslake-written files) and the bucket reads in the same order.
 * - Unaware buckets (`bucket = -1`): per partition, order does not matter. Paimon's AppendCompactCoordinator packing:
 *   the small files by size, binned until a bin holds more than one file and `2 × target-file-size` (each file
 *   counted with a 4 MB open cost), and a last bin kept if it has at least `compaction.min.file-num` files; bins are
 *   also closed at `compaction.max.file-num` files.
 * Outputs roll at `target-file-size` (by the inputs' sizes) and at 1,000,000 rows (the writer's own file bound, so a
 * task's memory stays bounded); a task whose inputs would come out as as many files as went in is dropped.
 * `write-only` does not stop an explicit compaction (in Paimon it only turns off compaction inside writers).
 *
 * Conflicts: the commit builds on the latest snapshot at commit time and changes only its own files, so appends
 * committed meanwhile stay; an input that is no longer live (an overwrite replaced it, another compaction took it)
 * makes FileStoreCommit fail with a Conflict (not retried) and the outputs written are deleted. The latest snapshot's
 * properties — natslake's stream offsets — are carried forward unchanged.
 *
 * Crash safety: outputs are new files no snapshot references until the COMPACT snapshot is linked; a crash before
 * (failpoints `compact.rewrite.after-output` mid-rewrite, `compact.after-rewrite`, the commit failpoints) leaves
 * the table as it was, the outputs as orphans for orphan-file cleanup, and the next run plans afresh.
 */
import { randomUUID } from "node:crypto";
import * as arrow from "apache-arrow";
import { ErrorKind, isLakeError, LakeError } from "../errors.ts";
import { failpointAsync } from "../failpoints.ts";
import type { CommitMessage } from "../commit/commit-message.ts";
import { FileStoreCommit, type ExclusiveCommitTurn } from "../commit/file-store-commit.ts";
import { sharedParquetPool, type ParquetEncoderPool } from "../codec/parquet-pool.ts";
import { readDataFile } from "../scan/read.ts";
import { FileSource, type DataFileMeta } from "../format/manifest.ts";
import { partitionPath } from "../format/partition.ts";
import { CommitKind, type Snapshot } from "../format/snapshot.ts";
import type { Value } from "../format/values.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { DataFileWriter } from "../write/data-file-writer.ts";
import { writeByCopy } from "./compact-copy.ts";
import { liveBuckets } from "./live-buckets.ts";
import { compactPrimaryKeyTable } from "./compact-pk.ts";
import { refuseDeletionVectors } from "../table/deletion-vectors.ts";
import type { CompactRunOptions, CompactSummary } from "./compact-summary.ts";

/** Paimon's `source.split.open-file-cost` default: what packing counts per file on top of its size. */
const OPEN_FILE_COST = 4 * 1024 * 1024;
/** Rows per output file at most (TableWrite's default `maxRowsPerFile`). */
const MAX_ROWS_PER_FILE = 1_000_000;

/** The knobs of planning, from the table's options (overridable for tests and the cluster). */
export interface CompactionRules {
  /** Files below this many bytes are small. */
  smallFileSize: number;
  targetFileSize: number;
  minFileNum: number;
  maxFileNum: number;
  maxRowsPerFile: number;
  /**
   * Set: pick only the newest files of a run, as Paimon's universal compaction picks sorted runs
   * (`compaction.size-ratio`, a percentage): the newest `run length − compaction.min.file-num + 1` files are taken,
   * then each older neighbour joins while it is at most (100 + ratio)% of what was taken so far. A run then stays
   * near `compaction.min.file-num` files whose sizes grow geometrically, and a row is rewritten a few times, instead
   * of every compaction rewriting the whole run again. Unset: whole runs (an explicit `natslake compact`).
   */
  sizeRatio?: number;
  /** Files never taken as inputs (and, in a fixed bucket, ending a run): e.g. inputs of compactions in flight. */
  exclude?: (f: DataFileMeta) => boolean;
  /**
   * Row groups of at least this many rows are copied into the output byte for byte (`natslake.compaction.copy-row-
   * group-rows`; 0: every row is decoded and encoded again).
   */
  copyRowGroupRows: number;
  /**
   * Files written with a newer schema than this are never inputs (the table handle's schema: rewriting them through
   * an older schema would drop the columns added since). Default: no bound.
   */
  maxSchemaId?: number;
}

export function compactionRules(table: Table, over: Partial<CompactionRules> = {}): CompactionRules {
  const target = table.options.targetFileSize;
  const ratio = table.options.double("compaction.small-file-ratio");
  const rules: CompactionRules = {
    smallFileSize: Math.floor(target * ratio),
    targetFileSize: target,
    minFileNum: table.options.int("compaction.min.file-num"),
    maxFileNum: table.options.int("compaction.max.file-num"),
    maxRowsPerFile: MAX_ROWS_PER_FILE,
    copyRowGroupRows: table.options.int("natslake.compaction.copy-row-group-rows"),
    ...over,
  };
  if (!(rules.targetFileSize > 0)) throw new LakeError(ErrorKind.DataInvalid, `target-file-size must be positive, got ${rules.targetFileSize}`);
  if (!(ratio > 0 && ratio <= 1) && over.smallFileSize === undefined) throw new LakeError(ErrorKind.DataInvalid, `compaction.small-file-ratio must be in (0, 1], got ${ratio}`);
  if (!(rules.minFileNum >= 1)) throw new LakeError(ErrorKind.DataInvalid, `compaction.min.file-num must be at least 1, got ${rules.minFileNum}`);
  if (!(rules.copyRowGroupRows >= 0)) throw new LakeError(ErrorKind.DataInvalid, `natslake.compaction.copy-row-group-rows must be at least 0, got ${rules.copyRowGroupRows}`);
  if (!(rules.maxFileNum >= 2)) throw new LakeError(ErrorKind.DataInvalid, `compaction.max.file-num must be at least 2, got ${rules.maxFileNum}`);
  return rules;
}

/** One unit of work: input files of one (partition, bucket), in the order their rows are rewritten. */
export interface CompactionTask {
  partition: Uint8Array;
  partitionValues: Value[];
  bucket: number;
  totalBuckets: number;
  files: DataFileMeta[];
}

export interface CompactionPlan {
  /** The snapshot planned against (null: an empty table). */
  snapshotId: number | null;
  tasks: CompactionTask[];
  /** Live files and bytes in the (partition, bucket)s considered. */
  filesBefore: number;
  bytesBefore: number;
  /** The names of those live files. */
  liveFileNames: Set<string>;
}

export interface PlanOptions {
  /** Only this partition (values in partition-key order). */
  partition?: Value[];
  /** Only this bucket. */
  bucket?: number;
  rules?: Partial<CompactionRules>;
}

const bySequence = (a: DataFileMeta, b: DataFileMeta): number => (a.minSequenceNumber < b.minSequenceNumber ? -1 : a.minSequenceNumber > b.minSequenceNumber ? 1 : 0);

/** Inputs cut into outputs: consecutive files, each output within the target size (by input bytes) and row bound. */
function outputGroups(files: readonly DataFileMeta[], rules: CompactionRules): DataFileMeta[][] {
  const out: DataFileMeta[][] = [];
  let cur: DataFileMeta[] = [];
  let bytes = 0;
  let rows = 0;
  for (const f of files) {
    if (cur.length > 0 && (bytes + f.fileSize > rules.targetFileSize || rows + f.rowCount > rules.maxRowsPerFile)) {
      out.push(cur);
      cur = [];
      bytes = 0;
      rows = 0;
    }
    cur.push(f);
    bytes += f.fileSize;
    rows += f.rowCount;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Worth doing: fewer files come out than go in. */
const reduces = (files: readonly DataFileMeta[], rules: CompactionRules): boolean => files.length >= 2 && outputGroups(files, rules).length < files.length;

/** A file compaction would take as an input: small, not full of rows, not of a newer schema, not excluded. */
export const isSmallFile = (f: DataFileMeta, rules: CompactionRules): boolean =>
  f.fileSize < rules.smallFileSize &&
  f.rowCount < rules.maxRowsPerFile &&
  (rules.maxSchemaId === undefined || f.schemaId <= rules.maxSchemaId) &&
  rules.exclude?.(f) !== true;

/**
 * The files to rewrite of `files` (oldest first, at least `minFileNum` of them): all, or with a size ratio the newest
 * ones it admits (see `sizeRatio`), oldest first.
 */
function bySizeRatio(files: readonly DataFileMeta[], rules: CompactionRules): DataFileMeta[] {
  if (rules.sizeRatio === undefined) return [...files];
  // Forced: as many of the newest as the run is over its trigger (so a run never grows past it), at least one.
  let count = Math.min(files.length, Math.max(1, files.length - Math.max(2, rules.minFileNum) + 1));
  let size = files.slice(files.length - count).reduce((n, f) => n + f.fileSize, 0);
  while (count < files.length && count < rules.maxFileNum) {
    const older = files[files.length - 1 - count]!;
    if ((size * (100 + rules.sizeRatio)) / 100 < older.fileSize) break;
    size += older.fileSize;
    count++;
  }
  return files.slice(files.length - count);
}

/**
 * The tasks for the files of one fixed bucket (any order given): runs of consecutive small files in sequence order,
 * each of at least `minFileNum` files, cut into chunks of at most `maxFileNum`. Pure, so a writer that knows its
 * bucket's files can plan without reading manifests.
 */
export function pickBucketed(files: readonly DataFileMeta[], rules: CompactionRules): DataFileMeta[][] {
  const sorted = [...files].sort(bySequence);
  const runs: DataFileMeta[][] = [];
  let run: DataFileMeta[] = [];
  for (const f of sorted) {
    if (isSmallFile(f, rules)) run.push(f);
    else {
      runs.push(run);
      run = [];
    }
  }
  runs.push(run);
  const out: DataFileMeta[][] = [];
  for (const whole of runs) {
    if (whole.length < Math.max(2, rules.minFileNum)) continue;
    const r = bySizeRatio(whole, rules);
    const chunks = Math.ceil(r.length / rules.maxFileNum);
    for (let i = 0; i < chunks; i++) {
      const chunk = r.slice(Math.floor((i * r.length) / chunks), Math.floor(((i + 1) * r.length) / chunks));
      if (reduces(chunk, rules)) out.push(chunk);
    }
  }
  return out;
}

/** The tasks for the files of one partition of an unaware-bucket table: Paimon's size-ordered bin packing. */
export function packUnaware(files: readonly DataFileMeta[], rules: CompactionRules): DataFileMeta[][] {
  const all = files.filter((f) => isSmallFile(f, rules)).sort((a, b) => a.fileSize - b.fileSize || bySequence(a, b));
  if (rules.sizeRatio !== undefined && all.length < Math.max(2, rules.minFileNum)) return [];
  // With a size ratio: the smallest files, each next one admitted while it is not much larger than those before.
  const small = rules.sizeRatio === undefined ? all : bySizeRatio([...all].reverse(), rules).reverse();
  const out: DataFileMeta[][] = [];
  let bin: DataFileMeta[] = [];
  let size = 0;
  const drain = (): void => {
    // Rewritten in sequence order: rows of one input stay together, the first input's number starts the outputs.
    if (reduces(bin, rules)) out.push([...bin].sort(bySequence));
    bin = [];
    size = 0;
  };
  for (const f of small) {
    bin.push(f);
    size += f.fileSize + OPEN_FILE_COST;
    if ((bin.length > 1 && size >= 2 * rules.targetFileSize) || bin.length >= rules.maxFileNum) drain();
  }
  if (bin.length >= Math.max(2, rules.minFileNum)) drain();
  return out;
}

function checkCompactable(table: Table): void {
  if (table.isPrimaryKeyTable) throw new LakeError(ErrorKind.Unsupported, `${table.name} has a primary key; only append tables can be compacted`);
  if (table.options.fileFormat !== "parquet") throw new LakeError(ErrorKind.Unsupported, `file.format '${table.options.fileFormat}' is not supported for writing (parquet is)`);
}

/** Plans the compaction of a table at its latest snapshot (or of one partition or bucket). */
export async function planCompaction(table: Table, o: PlanOptions = {}, store = new ManifestStore(table)): Promise<CompactionPlan> {
  checkCompactable(table);
  const rules = compactionRules(table, { maxSchemaId: table.schema.id, ...o.rules });
  const latest: Snapshot | null = await table.snapshots.latest();
  const plan: CompactionPlan = { snapshotId: latest?.id ?? null, tasks: [], filesBefore: 0, bytesBefore: 0, liveFileNames: new Set() };
  if (latest === null) return plan;
  for (const g of await liveBuckets(table, latest, o, store)) {
    for (const f of g.files) {
      plan.liveFileNames.add(f.fileName);
      plan.filesBefore++;
      plan.bytesBefore += f.fileSize;
    }
    // A bucket of a fixed-bucket table is a queue; files of an unaware table (written as bucket 0) are a set.
    const picked = g.totalBuckets > 0 || table.bucket > 0 ? pickBucketed(g.files, rules) : packUnaware(g.files, rules);
    for (const files of picked) plan.tasks.push({ ...g, files });
  }
  return plan;
}

/** What one task produced: the inputs to DELETE and the outputs to ADD, and the paths written (for cleanup). */
export interface CompactResult {
  task: CompactionTask;
  inputs: DataFileMeta[];
  outputs: DataFileMeta[];
  writtenPaths: string[];
  /** Rows whose row groups were copied byte for byte rather than decoded and encoded again. */
  rowsCopied: number;
}

/**
 * Writes the outputs of one task: the inputs' rows, read in the task's order through the current schema (files
 * written with an older schema come out in the current one), into files of the current schema with `_FILE_SOURCE`
 * COMPACT. Nothing is visible until `commitCompaction`. On failure the files written so far are removed.
 */
export async function rewrite(table: Table, task: CompactionTask, o: { rules?: Partial<CompactionRules>; pool?: ParquetEncoderPool | null | undefined } = {}): Promise<CompactResult> {
  checkCompactable(table);
  const rules = compactionRules(table, o.rules);
  // A writer node passes its compaction pool (workers at a lower CPU priority); the CLI's compaction the shared one.
  const pool = o.pool !== undefined ? o.pool : sharedParquetPool();
  // One output per group (never split further by the writer): a compaction aims at fewer files. Every output is
  // encoded in the pool, small ones too (`poolMinRows: 0`), as every input is decoded there: the writer's default
  // keeps batches under 8,192 rows on the calling thread, which put a writer node's compactions (a few thousand
  // rows each at 100 ms commits) on its main thread — ~2 % of the leader node's main thread in issue 11's profile.
  const writer = new DataFileWriter(table, { pool, fileSource: FileSource.COMPACT, minRowsPerFile: Number.MAX_SAFE_INTEGER, poolMinRows: 0 });
  const ppath = partitionPath(table.partitionKeys, table.partitionTypes, task.partitionValues, {
    defaultName: table.options.partitionDefaultName,
    legacyName: table.options.partitionLegacyName,
  });
  const newer = task.files.find((f) => f.schemaId > table.schema.id);
  if (newer !== undefined) {
    throw new LakeError(ErrorKind.Conflict, `${newer.fileName} of ${table.name} was written with schema ${newer.schemaId}, newer than this handle's ${table.schema.id}: reopen the table to compact it`, { retryable: false });
  }
  const result: CompactResult = { task, inputs: task.files, outputs: [], writtenPaths: [], rowsCopied: 0 };
  let seq = task.files.reduce((min, f) => (f.minSequenceNumber < min ? f.minSequenceNumber : min), task.files[0]!.minSequenceNumber);
  try {
    for (const group of outputGroups(task.files, rules)) {
      // Row groups are copied, not decoded and encoded again, where src/maintenance/compact-copy.ts allows: large
      // ones, and the small ones at the output's end until they add up to a large one (reencodedFrom).
      if (rules.copyRowGroupRows > 0) {
        const copied = await writeByCopy(table, writer, { partitionPath: ppath, bucket: task.bucket }, group, seq, rules.copyRowGroupRows, pool, (p) => result.writtenPaths.push(p));
        if (copied.kind === "written") {
          result.outputs.push(copied.file);
          result.rowsCopied += copied.stats.rowsCopied;
          seq = copied.file.maxSequenceNumber + 1n;
          await failpointAsync("compact.rewrite.after-output");
          continue;
        }
      }
      const batches: arrow.RecordBatch[] = [];
      // Every input decodes in the pool, small ones too (0: no inline threshold): a writer node compacts on its main
      // thread's time otherwise — small inputs are most of them, and decoding them inline took ~7 % of a writer
      // node's main thread at 50k rows/s, delaying its ingest, flushes and (on the leader) commits. One file at a
      // time, so a compaction holds at most one of the pool's workers (flushes a TableWrite encodes share the pool).
      for (const f of group) batches.push(...(await readDataFile(table, task, f, table.schema.fields, pool, 0)));
      const rows = batches.reduce((n, b) => n + b.numRows, 0);
      if (rows === 0) continue;
      const data = new arrow.Table(batches[0]!.schema, batches);
      const files = await writer.writeFiles(ppath, task.bucket, [data], seq, (p) => result.writtenPaths.push(p));
      result.outputs.push(...files);
      seq = files[files.length - 1]!.maxSequenceNumber + 1n;
      // Mid-rewrite: an output on disk that nothing references yet (a crash here leaves it to orphan cleanup).
      await failpointAsync("compact.rewrite.after-output");
    }
  } catch (e) {
    await removeFiles(table, result.writtenPaths);
    throw e;
  }
  const rowsIn = task.files.reduce((n, f) => n + f.rowCount, 0);
  const rowsOut = result.outputs.reduce((n, f) => n + f.rowCount, 0);
  if (rowsIn !== rowsOut) {
    await removeFiles(table, result.writtenPaths);
    throw new LakeError(ErrorKind.Unexpected, `compaction of ${table.name} bucket ${task.bucket} read ${rowsOut} rows from files whose manifest entries say ${rowsIn}`);
  }
  return result;
}

async function removeFiles(table: Table, paths: readonly string[]): Promise<void> {
  await Promise.all(paths.map((p) => table.io.delete(p)));
}

/** Removes the outputs of results that will not be committed. */
export async function abortCompaction(table: Table, results: readonly CompactResult[]): Promise<void> {
  await removeFiles(table, results.flatMap((r) => r.writtenPaths));
}

export interface CommitCompactionOptions {
  commitUser?: string;
  /** See CommitRequest.exclusive. */
  exclusive?: ExclusiveCommitTurn;
}

/**
 * Commits results as one COMPACT snapshot on the latest snapshot (appends committed meanwhile stay; properties are
 * carried forward). An input no longer live is a Conflict: nothing is committed and every output is deleted (also
 * after losing every race). On an unknown outcome (an IO error around the link) the outputs are kept: they may be
 * referenced; orphan cleanup removes them if not.
 */
export async function commitCompaction(table: Table, results: readonly CompactResult[], o: CommitCompactionOptions = {}): Promise<Snapshot | null> {
  const messages: CommitMessage[] = results
    .filter((r) => r.inputs.length > 0)
    .map((r) => ({ partition: r.task.partition, bucket: r.task.bucket, totalBuckets: r.task.totalBuckets, newFiles: r.outputs, deletedFiles: r.inputs }));
  if (messages.length === 0) return null;
  try {
    const res = await new FileStoreCommit(table).commit({ commitUser: o.commitUser ?? randomUUID(), kind: CommitKind.COMPACT, messages, ...(o.exclusive !== undefined ? { exclusive: o.exclusive } : {}) });
    return res.snapshot;
  } catch (e) {
    if (isLakeError(e, ErrorKind.Conflict) || isLakeError(e, ErrorKind.CommitRace)) await abortCompaction(table, results);
    throw e;
  }
}

export interface CompactOptions extends CompactRunOptions {
  rules?: Partial<CompactionRules>;
}

export type { CompactSummary } from "./compact-summary.ts";

/**
 * Plans, rewrites and commits in one go (the CLI's `natslake compact`). A primary-key table is compacted by its
 * LSM rules (./compact-pk.ts), never by the append rules above.
 */
export async function compactTable(table: Table, o: CompactOptions = {}): Promise<CompactSummary> {
  // A rewrite that does not apply a file's deletion vector would bring its deleted rows back.
  refuseDeletionVectors(table, "compaction");
  if (table.isPrimaryKeyTable) return compactPrimaryKeyTable(table, o);
  if (o.full === true) throw new LakeError(ErrorKind.DataInvalid, `${table.name} is an append table: a full compaction (--full) applies to primary-key tables, whose buckets have levels; an append table's compaction always takes every long enough run of small files`);
  const plan = await planCompaction(table, o);
  const inputFiles = plan.tasks.reduce((n, t) => n + t.files.length, 0);
  const inputBytes = plan.tasks.reduce((n, t) => n + t.files.reduce((m, f) => m + f.fileSize, 0), 0);
  const rules = compactionRules(table, o.rules);
  const summary: CompactSummary = {
    table: table.name,
    dryRun: o.dryRun === true,
    planSnapshotId: plan.snapshotId,
    snapshotId: null,
    tasks: plan.tasks.length,
    filesBefore: plan.filesBefore,
    // A dry run counts the outputs as the planned groups.
    filesAfter: plan.filesBefore - inputFiles + plan.tasks.reduce((n, t) => n + outputGroups(t.files, rules).length, 0),
    bytesBefore: plan.bytesBefore,
    bytesAfter: plan.bytesBefore,
    inputFiles,
    outputFiles: 0,
    rows: plan.tasks.reduce((n, t) => n + t.files.reduce((m, f) => m + f.rowCount, 0), 0),
    rowsCopied: 0,
  };
  if (o.dryRun === true || plan.tasks.length === 0) return summary;
  const results: CompactResult[] = [];
  try {
    for (const task of plan.tasks) {
      results.push(await rewrite(table, task, o.rules === undefined ? {} : { rules: o.rules }));
      o.onProgress?.(results.length, plan.tasks.length, task);
    }
  } catch (e) {
    await abortCompaction(table, results);
    throw e;
  }
  await failpointAsync("compact.after-rewrite");
  const snapshot = await commitCompaction(table, results, { ...(o.commitUser !== undefined ? { commitUser: o.commitUser } : {}), ...(o.exclusive !== undefined ? { exclusive: o.exclusive } : {}) });
  const outputs = results.flatMap((r) => r.outputs);
  summary.snapshotId = snapshot?.id ?? null;
  summary.outputFiles = outputs.length;
  summary.rowsCopied = results.reduce((n, r) => n + r.rowsCopied, 0);
  summary.filesAfter = plan.filesBefore - inputFiles + outputs.length;
  summary.bytesAfter = plan.bytesBefore - inputBytes + outputs.reduce((n, f) => n + f.fileSize, 0);
  return summary;
}
