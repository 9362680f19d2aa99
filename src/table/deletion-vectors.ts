/**
 * A snapshot's deletion vectors (tables Java Paimon wrote with `deletion-vectors.enabled`): its index manifest
 * (`manifest/index-manifest-*`, every index file in force), the `DELETION_VECTORS` entries of it by bucket, and the
 * vectors themselves, read from the index files on demand — an index file (at most `deletion-vector.index-file.
 * target-size`, 2 MiB by default, per bucket) once per `SnapshotDeletionVectors`.
 *
 * Where an index file is (Java's FileStorePathFactory.indexFileFactory): its `_EXTERNAL_PATH` when set, else the
 * bucket's data directory when the table has `index-file-in-data-file-dir`, else `<table>/index/<name>`.
 */
import { deserializeBinaryRow } from "../format/binary-row.ts";
import { DELETION_VECTORS_INDEX, type DeletionVectorRange, type IndexManifestEntry } from "../format/index-manifest.ts";
import { FileKind } from "../format/manifest.ts";
import { partitionPath } from "../format/partition.ts";
import type { Snapshot } from "../format/snapshot.ts";
import { checkIndexFileVersion, readDeletionVector, type DeletedPositions } from "../format/wire/deletion-vectors.ts";
import { decodeIndexManifest } from "../format/wire/index-manifest-avro.ts";
import { dataInvalid, ErrorKind, LakeError } from "../errors.ts";
import { decodeTableFile, readTableFile } from "./damaged-file.ts";
import type { Table } from "./table.ts";

/** One data file's deletion vector: the index file that holds it and where. */
export interface DeletionFile {
  /** The index file's path (as the table's FileIO takes it). */
  path: string;
  range: DeletionVectorRange;
}

/** Reads a snapshot's index manifest (every entry, any index type); [] when the snapshot has none. */
export async function readIndexManifest(table: Table, s: Pick<Snapshot, "indexManifest">): Promise<IndexManifestEntry[]> {
  if (s.indexManifest === null) return [];
  const path = table.paths.manifestPath(s.indexManifest);
  const remedy = `restore the file from a backup, or roll ${table.name} back to a snapshot that does not use it (natslake doctor ${table.name} lists the snapshots that do)`;
  return readTableFile("index-manifest", path, () => table.io.readFile(path, { metadata: true }), (bytes) => decodeIndexManifest(bytes as Uint8Array), remedy, table.io.uriOf(path));
}

/** Where an index file of `entry` is (see the module comment). */
export function indexFilePath(table: Table, entry: IndexManifestEntry): string {
  const f = entry.indexFile;
  if (table.options.bool("index-file-in-data-file-dir") || f.externalPath !== null) {
    const ppath = partitionPath(table.partitionKeys, table.partitionTypes, deserializeBinaryRow(table.partitionTypes, entry.partition), {
      defaultName: table.options.partitionDefaultName,
      legacyName: table.options.partitionLegacyName,
    });
    return table.paths.dataFilePath(ppath, entry.bucket, f.fileName, f.externalPath);
  }
  return table.paths.indexFilePath(f.fileName);
}

/** The deletion vectors of one snapshot, by bucket, read on demand. */
export class SnapshotDeletionVectors {
  private readonly byBucket = new Map<string, Map<string, DeletionFile>>();
  private readonly files = new Map<string, Promise<Uint8Array>>();

  private constructor(private readonly table: Table) {}

  /** The snapshot's deletion vectors; null when its index manifest has no deletion vector entry. */
  static async of(table: Table, s: Pick<Snapshot, "indexManifest">): Promise<SnapshotDeletionVectors | null> {
    const entries = (await readIndexManifest(table, s)).filter((e) => e.kind === FileKind.ADD && e.indexFile.indexType === DELETION_VECTORS_INDEX);
    if (entries.length === 0) return null;
    const dvs = new SnapshotDeletionVectors(table);
    for (const e of entries) {
      const key = bucketKey(e.partition, e.bucket);
      let files = dvs.byBucket.get(key);
      if (files === undefined) dvs.byBucket.set(key, (files = new Map()));
      const path = indexFilePath(table, e);
      for (const range of e.indexFile.dvRanges ?? []) files.set(range.dataFileName, { path, range });
    }
    return dvs;
  }

  /** The deletion files of a bucket's data files, by data file name (empty: none has a vector). */
  ofBucket(partition: Uint8Array, bucket: number): ReadonlyMap<string, DeletionFile> {
    return this.byBucket.get(bucketKey(partition, bucket)) ?? new Map();
  }

  /** The deleted positions of a data file of `rowCount` rows from its deletion file. */
  async read(file: DeletionFile, rowCount: number): Promise<DeletedPositions> {
    let bytes = this.files.get(file.path);
    if (bytes === undefined) {
      bytes = this.readIndexFile(file.path);
      // A failed read is not remembered: the next file asks again.
      bytes.catch(() => this.files.delete(file.path));
      this.files.set(file.path, bytes);
    }
    const all = await bytes;
    const uri = this.table.io.uriOf(file.path);
    return decodeTableFile("index-file", file.path, () => readDeletionVector(all, file.range, rowCount, `index file ${uri}`), this.remedy(), uri);
  }

  private async readIndexFile(path: string): Promise<Uint8Array> {
    const uri = this.table.io.uriOf(path);
    return readTableFile(
      "index-file",
      path,
      () => this.table.io.readFile(path),
      (bytes) => {
        if (typeof bytes === "string") throw dataInvalid("not bytes");
        checkIndexFileVersion(bytes, `index file ${uri}`);
        return bytes;
      },
      this.remedy(),
      uri,
    );
  }

  private remedy(): string {
    return `restore the file from a backup, or roll ${this.table.name} back to a snapshot before the one that added it (natslake doctor ${this.table.name} names the snapshots that use it)`;
  }
}

const bucketKey = (partition: Uint8Array, bucket: number): string => `${Buffer.from(partition).toString("hex")}/${bucket}`;

/** What natslake does to a table's files that would have to keep its deletion vectors, and so refuses. */
const DELETION_VECTOR_REFUSALS = {
  lookup: "natslake does not look keys up in tables with deletion vectors; read the table (natslake read, with a filter) instead",
  compaction: "natslake does not compact tables with deletion vectors (a compaction must maintain them); compact it with Java Paimon",
  "partition-expiration": "natslake does not expire partitions of tables with deletion vectors (the index manifest must drop the partitions' vectors with their files); expire them with Java Paimon",
} as const;

/** Unsupported, saying why and what to use instead, when the table has `deletion-vectors.enabled`. */
export function refuseDeletionVectors(table: Table, what: keyof typeof DELETION_VECTOR_REFUSALS): void {
  if (table.options.bool("deletion-vectors.enabled")) throw new LakeError(ErrorKind.Unsupported, `${table.name} has deletion vectors enabled: ${DELETION_VECTOR_REFUSALS[what]}`);
}
