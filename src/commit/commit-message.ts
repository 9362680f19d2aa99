/**
 * CommitMessage: what a writer hands the committer for one (partition, bucket) — the split between write and
 * commit (Paimon's CommitMessage). Files named here are invisible until a snapshot references them.
 */
import type { DataFileMeta } from "../format/manifest.ts";

export interface CommitMessage {
  /** Serialized (framed) BinaryRow of the partition values; the empty row for unpartitioned tables. */
  partition: Uint8Array;
  bucket: number;
  /** The table's `bucket` option when the files were written. */
  totalBuckets: number;
  newFiles: DataFileMeta[];
  /** Files this commit removes (compaction inputs). */
  deletedFiles: DataFileMeta[];
  /** Changelog files (primary-key tables: `changelog-producer = input`), listed in the snapshot's changelog manifests. */
  changelogFiles?: DataFileMeta[];
}
