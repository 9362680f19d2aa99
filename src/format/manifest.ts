/**
 * Manifest domain types (Paimon's ManifestEntry, DataFileMeta, SimpleStats, ManifestFileMeta) and the rule that
 * turns a sequence of manifest entries into a live file set. No IO and no Avro here: `format/wire/manifest-avro.ts`
 * converts these to and from the files.
 *
 * Conventions:
 * - BinaryRow-valued fields (`partition`, `minKey`, stats min/max) are the *framed serialized* rows exactly as they
 *   appear in manifests (4-byte big-endian arity + row bytes, format doc §5.2). They are opaque bytes here: copying
 *   them verbatim is what keeps a DELETE's identifier equal to the ADD written by another engine.
 * - Sizes and counts that fit a double exactly in practice (file sizes, row counts, schema ids, levels) are
 *   `number`; sequence numbers and row ids, which may approach 2^63, are `bigint`.
 */
import { LakeError, ErrorKind } from "../errors.ts";

/** Min/max/null-count statistics over some columns (`_KEY_STATS`, `_VALUE_STATS`, `_PARTITION_STATS`). */
export interface SimpleStats {
  /** Framed BinaryRow of per-column minimums (arity = number of stats columns). */
  minValues: Uint8Array;
  /** Framed BinaryRow of per-column maximums. */
  maxValues: Uint8Array;
  /** One entry per stats column; `null` = unknown. A file's `null` list is read as `[]`. */
  nullCounts: Array<bigint | null>;
}

/** The framed empty BinaryRow: arity 0 (4 bytes) + an 8-byte null-bit header. */
const EMPTY_ROW = new Uint8Array(12);

/**
 * Stats over zero columns: what append files carry as key stats, and every file carries as value stats when
 * stats are off. `nullCounts` must be `[]`, not null: Java calls `.size()` on it.
 */
export const EMPTY_STATS: SimpleStats = Object.freeze({
  minValues: EMPTY_ROW,
  maxValues: EMPTY_ROW,
  nullCounts: Object.freeze([]) as unknown as Array<bigint | null>,
}) as SimpleStats;

/** Paimon's FileSource: whether a file was written by an append/flush or produced by compaction. */
export const FileSource = {
  APPEND: 0,
  COMPACT: 1,
} as const;
export type FileSource = (typeof FileSource)[keyof typeof FileSource];

/** Metadata of one data file (Java `DataFileMeta`), fields in the order of the manifest schema. */
export interface DataFileMeta {
  /** File name only; the directory follows from partition and bucket (or `externalPath`). */
  fileName: string;
  /** Exact byte size; readers locate Parquet footers with it. */
  fileSize: number;
  /** Rows in the file, including retract rows. */
  rowCount: number;
  /** Framed BinaryRow of the first key (PK tables); the empty row for append files. */
  minKey: Uint8Array;
  maxKey: Uint8Array;
  keyStats: SimpleStats;
  valueStats: SimpleStats;
  minSequenceNumber: bigint;
  maxSequenceNumber: bigint;
  /** Schema the file was written with; its column names resolve through this schema. */
  schemaId: number;
  /** LSM level; 0 for new files and for every append file. */
  level: number;
  extraFiles: string[];
  /** `_CREATION_TIME` as stored: local wall-clock millis (Java's `Timestamp.fromLocalDateTime`), not UTC epoch. */
  creationTimeMillis: number | null;
  /** Rows of kind -U/-D; 0 enables raw reads of PK files. */
  deleteRowCount: number | null;
  embeddedIndex: Uint8Array | null;
  fileSource: number | null;
  /** null: stats cover all value fields; []: no value stats; a list: stats only for these columns. */
  valueStatsCols: string[] | null;
  externalPath: string | null;
  firstRowId: bigint | null;
  writeCols: string[] | null;
}

/** ADD or DELETE of a data file in a manifest. */
export const FileKind = {
  ADD: 0,
  DELETE: 1,
} as const;
export type FileKind = (typeof FileKind)[keyof typeof FileKind];

/** One record of a manifest file. */
export interface ManifestEntry {
  kind: FileKind;
  /** Framed BinaryRow of the partition values. */
  partition: Uint8Array;
  bucket: number;
  /** The table's `bucket` option when the file was written (N, or -1 / -2). */
  totalBuckets: number;
  file: DataFileMeta;
}

/** One record of a manifest list: a manifest file and summary of what it holds. */
export interface ManifestFileMeta {
  fileName: string;
  /** Exact byte size of the manifest; Java passes it to the Avro reader as the read end. */
  fileSize: number;
  numAddedFiles: number;
  numDeletedFiles: number;
  /** Stats over the partition fields of all entries. */
  partitionStats: SimpleStats;
  schemaId: number;
  minBucket: number | null;
  maxBucket: number | null;
  minLevel: number | null;
  maxLevel: number | null;
  minRowId: bigint | null;
  maxRowId: bigint | null;
  /**
   * pypaimon ≥ 2.1 only (`_TOTAL_BUCKETS`, `_EXTRA_FILES` — the latter names manifest sidecar files). Java ignores
   * both. Kept so a manifest list that copies pypaimon's metas forward does not drop them; absent means null.
   */
  totalBuckets?: number | null;
  extraFiles?: string[] | null;
}

const hex = (b: Uint8Array | null): string =>
  b === null ? "-" : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");

/**
 * The identity of a file entry, as Java's `FileEntry.Identifier`: partition bytes, bucket, level, file name, extra
 * files, embedded index and external path. A DELETE cancels an ADD only if all of these are equal. The result is
 * an opaque string key (JSON, so no separator can be forged by a file name).
 */
export function fileIdentifier(entry: ManifestEntry): string {
  const f = entry.file;
  return JSON.stringify([
    hex(entry.partition),
    entry.bucket,
    f.level,
    f.fileName,
    f.extraFiles,
    hex(f.embeddedIndex),
    f.externalPath,
  ]);
}

export interface MergeEntriesOptions {
  /**
   * Also return DELETEs that matched no earlier ADD (they cancel an ADD in a manifest not part of this merge).
   * Needed when merging a subset of manifests into a new one; not when materialising a whole snapshot.
   */
  keepUnmatchedDeletes?: boolean;
}

/**
 * Applies entries in order, as Java's `FileEntry.mergeEntries`: an ADD is recorded, and throws LakeError
 * DataInvalid if its identifier is already recorded (as Java's "Trying to add file … which is already in the map");
 * a DELETE removes the recorded entry, or — if there is none, because the ADD is in an earlier manifest not part
 * of this merge — is itself recorded.
 *
 * Returns the surviving entries in first-seen order: the live ADDs, plus the unmatched DELETEs if asked.
 */
export function mergeEntries(entries: readonly ManifestEntry[], options: MergeEntriesOptions = {}): ManifestEntry[] {
  const merger = new EntryMerger();
  merger.apply(entries);
  return options.keepUnmatchedDeletes === true ? merger.survivors() : merger.live();
}

/**
 * `mergeEntries` that can go on: entries applied in several steps end in the state one merge of all of them would
 * (a caller that materialised a snapshot's manifests applies only the manifests the next snapshot added). A step
 * that throws leaves the state half-applied: drop the merger then.
 */
export class EntryMerger {
  private readonly map = new Map<string, ManifestEntry>();

  apply(entries: readonly ManifestEntry[]): void {
    const map = this.map;
    for (const entry of entries) {
      const id = fileIdentifier(entry);
      const previous = map.get(id);
      if (entry.kind === FileKind.ADD) {
        if (previous === undefined) {
          map.set(id, entry);
        } else {
          // Also when the recorded entry is a DELETE: a file is added once and deleted after, so a DELETE ahead of
          // its ADD is as corrupt as a second ADD. Java and pypaimon both reject it; accepting it would let us read
          // tables they cannot.
          throw new LakeError(
            ErrorKind.DataInvalid,
            `Trying to add file ${entry.file.fileName} which is already in the map ` +
              `(partition ${hex(entry.partition)}, bucket ${entry.bucket}, level ${entry.file.level})`,
            { context: { fileName: entry.file.fileName, bucket: entry.bucket, level: entry.file.level } },
          );
        }
      } else if (previous === undefined) {
        map.set(id, entry);
      } else {
        map.delete(id);
      }
    }
  }

  /** The live ADDs, in first-seen order. */
  live(): ManifestEntry[] {
    const out: ManifestEntry[] = [];
    for (const e of this.map.values()) if (e.kind === FileKind.ADD) out.push(e);
    return out;
  }

  /** The live ADDs and the unmatched DELETEs, in first-seen order. */
  survivors(): ManifestEntry[] {
    return [...this.map.values()];
  }
}
