/**
 * Index manifest domain types (Paimon's IndexManifestEntry, IndexFileMeta, DeletionVectorMeta): what a snapshot's
 * `indexManifest` lists — per (partition, bucket, index type) the index files in force. Java writes the whole list
 * anew whenever an index changes (IndexManifestFileHandler: previous entries combined with the commit's ADDs and
 * DELETEs), so an index manifest holds only ADD entries, and a snapshot whose indexes did not change names its
 * parent's. No IO and no Avro here: `wire/index-manifest-avro.ts` decodes the files.
 */
import type { FileKind } from "./manifest.ts";

/** `_INDEX_TYPE` of deletion vector index files (the dynamic-bucket hash index is `HASH`). */
export const DELETION_VECTORS_INDEX = "DELETION_VECTORS";

/** Where one data file's deletion vector lies in its index file (`_DELETIONS_VECTORS_RANGES` element). */
export interface DeletionVectorRange {
  /** The data file (a name in the same partition and bucket). */
  dataFileName: string;
  /** Byte offset in the index file of the vector's frame (its length field). */
  offset: number;
  /** The frame's length as Java records it (see wire/deletion-vectors.ts: it differs between the two bitmap formats). */
  length: number;
  /** Deleted rows; null when the writer did not record it (Paimon before 1.0). */
  cardinality: number | null;
}

/** One index file (Java `IndexFileMeta`). */
export interface IndexFileMeta {
  indexType: string;
  fileName: string;
  fileSize: number;
  /** Deletion vectors: how many the file holds; hash index: its entries. */
  rowCount: number;
  /** Deletion vector files only, in file order. */
  dvRanges: DeletionVectorRange[] | null;
  /** Where the file is when not under the table's index directory. */
  externalPath: string | null;
}

/** One record of an index manifest. */
export interface IndexManifestEntry {
  kind: FileKind;
  /** Framed BinaryRow of the partition values. */
  partition: Uint8Array;
  bucket: number;
  indexFile: IndexFileMeta;
}
