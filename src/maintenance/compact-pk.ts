/**
 * Compaction of a primary-key table (`compactTable` on a table with a primary key; `natslake compact`): each bucket
 * of the latest snapshot compacted by its LSM rules (src/lsm/compact-bucket.ts) — one pick of the table's universal
 * compaction per bucket, or with `full` every sorted run into the max level — and all of them committed as ONE
 * COMPACT snapshot (DELETE of each input at its level, ADD of each output and of each upgraded file at its new one,
 * as Java's FileStoreCommitImpl writes compactBefore / compactAfter). Readers see the same rows before and after.
 *
 * Conflicts: the commit builds on the latest snapshot at commit time; flushes committed meanwhile stay. It fails
 * with a Conflict (not retried; every output removed) when an input is no longer live, or when the bucket's levels
 * with the compaction applied would overlap (Java's LSM conflict detection) — another compaction or a writer
 * changed the bucket since it was read. The latest snapshot's properties (natslake's stream offsets) are carried
 * forward unchanged.
 *
 * Crash safety: outputs are new files nothing references until the COMPACT snapshot is linked. Every path is
 * recorded before its file is written; an error or a lost conflict removes them; a crash (failpoints
 * `compact.rewrite.after-output` after each rewrite, `compact.after-rewrite` before the commit, the commit's own)
 * leaves the table as it was and the outputs to orphan cleanup. Upgraded files are never removed: they are live.
 */
import { randomUUID } from "node:crypto";
import type * as arrow from "apache-arrow";
import { ErrorKind, isLakeError, LakeError } from "../errors.ts";
import { failpointAsync } from "../failpoints.ts";
import { sharedParquetPool, type ParquetEncoderPool } from "../codec/parquet-pool.ts";
import type { CommitMessage } from "../commit/commit-message.ts";
import { FileStoreCommit, type ExclusiveCommitTurn } from "../commit/file-store-commit.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import { partitionPath } from "../format/partition.ts";
import { CommitKind } from "../format/snapshot.ts";
import { abortBucketCompaction, checkCompactionApplies, executeCompactTask, planBucketCompaction, type BucketCompaction, type BucketFiles } from "../lsm/compact-bucket.ts";
import type { CompactTaskPlan } from "../lsm/compact-task.ts";
import { readLsmCompactionOptions, type LsmCompactionOptions } from "../lsm/compaction-options.ts";
import { checkMergeReadable, mergeReadFields } from "../lsm/merge-read.ts";
import { readDataFile } from "../scan/read.ts";
import { DecodedFile, type DecodedFileCache } from "../scan/lookup.ts";
import { SerializedKeys } from "../lsm/key-comparator.ts";
import { keyFields } from "../lsm/key-value-fields.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import type { Value } from "../format/values.ts";
import type { BucketCompactionReport, CompactRunOptions, CompactSummary } from "./compact-summary.ts";
import { liveBuckets } from "./live-buckets.ts";

export interface PrimaryKeyCompactOptions extends CompactRunOptions {
  /** Decoding and encoding; default the process-wide pool. */
  pool?: ParquetEncoderPool | null;
}

/** A bucket and what compacting it will do. */
type PlannedBucket = BucketPlan;

/** What a bucket's compaction did (or, in a dry run, would do): the counts a summary adds up. */
type BucketCounts = Pick<BucketCompaction, "outputLevel" | "dropDelete" | "upgradedFiles" | "rewrittenFiles" | "outputFiles" | "rowsRead" | "bytesRead" | "bytesWritten">;

/** Plans, compacts and commits every (chosen) bucket of a primary-key table; see the module comment. */
export async function compactPrimaryKeyTable(table: Table, o: PrimaryKeyCompactOptions = {}): Promise<CompactSummary> {
  checkPrimaryKeyCompactable(table);
  const options = readLsmCompactionOptions(table.options);
  const store = new ManifestStore(table);
  const latest = await table.snapshots.latest();
  const summary: CompactSummary = {
    table: table.name,
    dryRun: o.dryRun === true,
    planSnapshotId: latest?.id ?? null,
    snapshotId: null,
    tasks: 0,
    filesBefore: 0,
    filesAfter: 0,
    bytesBefore: 0,
    bytesAfter: 0,
    inputFiles: 0,
    outputFiles: 0,
    rows: 0,
    rowsCopied: 0,
    primaryKey: { full: o.full === true, upgradedFiles: 0, rewrittenFiles: 0, rowsWritten: o.dryRun === true ? null : 0, buckets: [] },
  };
  if (latest === null) return summary;

  const planned: PlannedBucket[] = [];
  for (const live of await liveBuckets(table, latest, o, store)) {
    for (const f of live.files) {
      summary.filesBefore++;
      summary.bytesBefore += f.fileSize;
    }
    const plan = planBucketCompaction(table, live.files, { full: o.full === true, options });
    if (plan === null) continue;
    const ppath = partitionPath(table.partitionKeys, table.partitionTypes, live.partitionValues, { defaultName: table.options.partitionDefaultName, legacyName: table.options.partitionLegacyName });
    planned.push({ bucket: { ...live, partitionPath: ppath }, partitionValues: live.partitionValues, plan });
  }
  summary.tasks = planned.length;
  summary.filesAfter = summary.filesBefore;
  summary.bytesAfter = summary.bytesBefore;
  if (o.dryRun === true || planned.length === 0) {
    for (const p of planned) addBucket(summary, p.bucket, estimate(p.plan, options.targetFileSize));
    return summary;
  }

  const pool = o.pool !== undefined ? o.pool : sharedParquetPool();
  const results: BucketCompaction[] = [];
  try {
    for (const { bucket, partitionValues, plan } of planned) {
      const done = await executeBucketPlan(table, { bucket, partitionValues, plan }, { pool, options });
      results.push(done);
      o.onProgress?.(results.length, planned.length, { files: done.deletedFiles });
    }
  } catch (e) {
    await Promise.all(results.map((r) => abortBucketCompaction(table, r)));
    throw e;
  }
  await failpointAsync("compact.after-rewrite");
  summary.snapshotId = await commitBucketCompactions(table, results, { store, options, ...(o.commitUser !== undefined ? { commitUser: o.commitUser } : {}), ...(o.exclusive !== undefined ? { exclusive: o.exclusive } : {}) });
  results.forEach((r, i) => addBucket(summary, planned[i]!.bucket, r));
  summary.primaryKey!.rowsWritten = results.reduce((n, r) => n + r.rowsWritten, 0);
  return summary;
}

/** A bucket's compaction plan and what executing it needs to know of the bucket. */
export interface BucketPlan {
  bucket: BucketFiles;
  /** The partition's values (to read its files). */
  partitionValues: Value[];
  plan: CompactTaskPlan;
}

/**
 * Executes one bucket's plan (`executeCompactTask`), its files read with the merge's columns. Every input decodes in
 * `pool` (null: on this thread), small ones too (no inline threshold), as the append compaction's do.
 */
export async function executeBucketPlan(
  table: Table,
  p: BucketPlan,
  o: { pool: ParquetEncoderPool | null; options?: LsmCompactionOptions; onPath?: (path: string) => void; cache?: DecodedFileCache },
): Promise<BucketCompaction> {
  const readFields = mergeReadFields(table, table.schema.fields);
  const where = { partitionValues: p.partitionValues, bucket: p.bucket.bucket };
  const readFile = (file: DataFileMeta): Promise<arrow.RecordBatch[]> => readDataFile(table, where, file, readFields, o.pool, 0);
  const keys = keyFields(table.schema);
  const compare = new SerializedKeys(keys.map((f) => f.type)).compare;
  // A lookup table's files above the output level, searched by key: each decoded once (kept in the cache when there
  // is one: files never change, so a writer's next compaction finds the levels above decoded).
  const decoded = new Map<string, Promise<DecodedFile>>();
  const decode = (file: DataFileMeta): Promise<DecodedFile> => {
    const key = `${table.location}|${table.schema.id}|${file.fileName}`;
    const cached = o.cache?.get(key);
    if (cached !== undefined) return Promise.resolve(cached);
    let pending = decoded.get(key);
    if (pending === undefined) {
      pending = readFile(file).then((batches) => {
        const d = new DecodedFile(batches, readFields, keys);
        o.cache?.set(key, d);
        return d;
      });
      decoded.set(key, pending);
    }
    return pending;
  };
  const rowsOf = async (file: DataFileMeta, wanted: readonly Value[][]): Promise<arrow.RecordBatch[]> => (await decode(file)).rowsOf(wanted, compare);
  return executeCompactTask(table, p.bucket, p.plan, { readFile, rowsOf, pool: o.pool, ...(o.options !== undefined ? { options: o.options } : {}), ...(o.onPath !== undefined ? { onPath: o.onPath } : {}) });
}

export interface CommitBucketCompactionsOptions {
  commitUser?: string;
  /** See CommitRequest.exclusive. */
  exclusive?: ExclusiveCommitTurn;
  /** A manifest store to share (its cache) with the caller. */
  store?: ManifestStore;
  options?: LsmCompactionOptions;
}

/**
 * Commits bucket compactions as one COMPACT snapshot on the latest snapshot (properties carried forward), after
 * checking each against its bucket's files there (`checkCompactionApplies`). On a Conflict or after losing every
 * race the outputs are removed; on an unknown outcome (an IO error around the link) they are kept — they may be
 * referenced; orphan cleanup removes them if not. Returns the snapshot id (null: nothing to commit).
 */
export async function commitBucketCompactions(table: Table, compactions: readonly BucketCompaction[], o: CommitBucketCompactionsOptions = {}): Promise<number | null> {
  const messages: CommitMessage[] = compactions
    .filter((c) => c.deletedFiles.length > 0 || c.newFiles.length > 0)
    .map((c) => ({ partition: c.partition, bucket: c.bucket, totalBuckets: c.totalBuckets, newFiles: c.newFiles, deletedFiles: c.deletedFiles, changelogFiles: c.changelogFiles }));
  if (messages.length === 0) return null;
  const store = o.store ?? new ManifestStore(table);
  const numLevels = (o.options ?? readLsmCompactionOptions(table.options)).numLevels;
  const bucketKey = (partition: Uint8Array, bucket: number): string => `${Buffer.from(partition).toString("hex")}/${bucket}`;
  try {
    const res = await new FileStoreCommit(table, store).commit({
      commitUser: o.commitUser ?? randomUUID(),
      kind: CommitKind.COMPACT,
      messages,
      ...(o.exclusive !== undefined ? { exclusive: o.exclusive } : {}),
      prepare: async (base) => {
        if (base !== null) {
          const touched = new Map(messages.map((m) => [bucketKey(m.partition, m.bucket), [] as DataFileMeta[]]));
          for (const e of await store.readLiveEntries(base)) touched.get(bucketKey(e.partition, e.bucket))?.push(e.file);
          for (const m of messages) checkCompactionApplies(table, touched.get(bucketKey(m.partition, m.bucket))!, m, numLevels);
        }
        return { properties: base?.properties ?? null };
      },
    });
    return res.snapshot?.id ?? null;
  } catch (e) {
    if (isLakeError(e, ErrorKind.Conflict) || isLakeError(e, ErrorKind.CommitRace)) await Promise.all(compactions.map((c) => abortBucketCompaction(table, c)));
    throw e;
  }
}

/** Refuses what natslake cannot compact: another merge engine, deletion vectors, a format other than Parquet. */
function checkPrimaryKeyCompactable(table: Table): void {
  checkMergeReadable(table, "compaction");
  if (table.options.fileFormat !== "parquet") throw new LakeError(ErrorKind.Unsupported, `file.format '${table.options.fileFormat}' is not supported for writing (parquet is)`);
}

/** A dry run's counts: each rewrite's outputs estimated as its inputs' bytes in target-size files. */
function estimate(plan: CompactTaskPlan, targetFileSize: number): BucketCounts {
  const c: BucketCounts = { outputLevel: plan.outputLevel, dropDelete: plan.dropDelete, upgradedFiles: 0, rewrittenFiles: 0, outputFiles: 0, rowsRead: 0, bytesRead: 0, bytesWritten: 0 };
  for (const step of plan.steps) {
    if (step.kind === "upgrade") {
      c.upgradedFiles++;
      continue;
    }
    const inputs = step.sections.flat(2);
    const bytes = inputs.reduce((n, f) => n + f.fileSize, 0);
    c.rewrittenFiles += inputs.length;
    c.rowsRead += inputs.reduce((n, f) => n + f.rowCount, 0);
    c.bytesRead += bytes;
    c.bytesWritten += bytes;
    c.outputFiles += Math.max(1, Math.ceil(bytes / targetFileSize));
  }
  return c;
}

/** Adds one bucket's counts to the summary. */
function addBucket(summary: CompactSummary, bucket: BucketFiles, c: BucketCounts): void {
  const pk = summary.primaryKey!;
  const report: BucketCompactionReport = {
    partition: bucket.partitionPath,
    bucket: bucket.bucket,
    outputLevel: c.outputLevel,
    dropDelete: c.dropDelete,
    upgradedFiles: c.upgradedFiles,
    rewrittenFiles: c.rewrittenFiles,
    outputFiles: c.outputFiles,
  };
  pk.buckets.push(report);
  pk.upgradedFiles += c.upgradedFiles;
  pk.rewrittenFiles += c.rewrittenFiles;
  summary.inputFiles += c.upgradedFiles + c.rewrittenFiles;
  summary.outputFiles += c.upgradedFiles + c.outputFiles;
  summary.filesAfter += c.outputFiles - c.rewrittenFiles;
  summary.bytesAfter += c.bytesWritten - c.bytesRead;
  summary.rows += c.rowsRead;
}
