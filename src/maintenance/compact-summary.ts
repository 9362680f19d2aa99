/**
 * What `compactTable` is asked and what it reports, for append tables (./compact.ts) and primary-key tables
 * (./compact-pk.ts) alike: one summary object, which `natslake compact --json` prints whichever path ran.
 */
import type { ExclusiveCommitTurn } from "../commit/file-store-commit.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import type { Value } from "../format/values.ts";

/** What a progress callback learns of a finished task: the files it took. */
export interface CompactProgressTask {
  readonly files: readonly DataFileMeta[];
}

/** The options both kinds of table take. */
export interface CompactRunOptions {
  /** Only this partition (values in partition-key order). */
  partition?: Value[];
  /** Only this bucket. */
  bucket?: number;
  /** Primary-key tables: every sorted run of each bucket into the max level (append tables refuse it). */
  full?: boolean;
  /** Plan and report, write nothing. */
  dryRun?: boolean;
  commitUser?: string;
  /** The commit takes the table's turn after losing races (see CommitRequest.exclusive). */
  exclusive?: ExclusiveCommitTurn;
  /** Called after each task (append: a rewrite; primary key: a bucket) is done (done, total). */
  onProgress?: (done: number, total: number, task: CompactProgressTask) => void;
}

/** One bucket of a primary-key table's compaction. */
export interface BucketCompactionReport {
  /** `dt=2026-12-01` ("" when unpartitioned). */
  partition: string;
  bucket: number;
  outputLevel: number;
  /** Retractions were dropped (the output is the bucket's highest level). */
  dropDelete: boolean;
  /** Files that only changed level, and files rewritten. */
  upgradedFiles: number;
  rewrittenFiles: number;
  /** Files the rewrites wrote (a dry run: estimated from the inputs' bytes and the target file size). */
  outputFiles: number;
}

/** What a primary-key table's compaction did beyond the common counts. */
export interface PrimaryKeyCompactDetail {
  full: boolean;
  upgradedFiles: number;
  rewrittenFiles: number;
  /** Rows the rewrites wrote (null in a dry run): fewer than they read by the versions merged away and deletes dropped. */
  rowsWritten: number | null;
  buckets: BucketCompactionReport[];
}

export interface CompactSummary {
  table: string;
  dryRun: boolean;
  /** Snapshot planned against, and the COMPACT snapshot committed (null: none). */
  planSnapshotId: number | null;
  snapshotId: number | null;
  /** Append tables: rewrite tasks; primary-key tables: buckets compacted. */
  tasks: number;
  filesBefore: number;
  filesAfter: number;
  bytesBefore: number;
  bytesAfter: number;
  /** Files taken (rewritten, or upgraded in place) and files written or upgraded. */
  inputFiles: number;
  outputFiles: number;
  /** Rows of the files rewritten. */
  rows: number;
  /** Of `rows`, those whose row groups were copied byte for byte (not decoded and encoded again). */
  rowsCopied: number;
  /** Present for primary-key tables. */
  primaryKey?: PrimaryKeyCompactDetail;
}
