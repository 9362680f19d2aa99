/**
 * All path rules of a table directory in one place (Paimon's FileStorePathFactory): where schemas, snapshots,
 * manifests and data files live, and how new files are named. Readers recompute data file paths from manifest
 * entries, so the partition directory written here must equal what Java and pypaimon compute (format/partition.ts).
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { dataInvalid } from "../errors.ts";
import { showName } from "../names.ts";

/**
 * A file name a table's metadata gives (a manifest list names its manifests, a manifest its data files): one path
 * component. A damaged — or hostile — file naming `../../other.db/t/…` would otherwise have natslake read another
 * table's files, and expiration or orphan cleanup delete them.
 */
function plainFileName(name: string, what: string): string {
  if (name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\\") || name.includes("\u0000"))
    throw dataInvalid(`the table's metadata names ${what} '${showName(name)}': not a file name (a path component)`);
  return name;
}

export class PathFactory {
  /** One uuid per writer instance with a counter, as Java names files; names stay unique across processes. */
  private readonly uuid = randomUUID();
  private counter = 0;

  constructor(readonly root: string) {}

  get schemaDir(): string {
    return join(this.root, "schema");
  }
  get snapshotDir(): string {
    return join(this.root, "snapshot");
  }
  get manifestDir(): string {
    return join(this.root, "manifest");
  }
  get consumerDir(): string {
    return join(this.root, "consumer");
  }
  schemaPath(id: number): string {
    return join(this.schemaDir, `schema-${id}`);
  }
  snapshotPath(id: number): string {
    return join(this.snapshotDir, `snapshot-${id}`);
  }
  /** A manifest or manifest list by the name a snapshot or a manifest list gives it. */
  manifestPath(name: string): string {
    return join(this.manifestDir, plainFileName(name, "manifest"));
  }
  /** `partitionPath` is `k=v/…` or "" for unpartitioned tables. */
  bucketDir(partitionPath: string, bucket: number): string {
    return join(this.root, partitionPath, bucket === -2 ? "bucket-postpone" : `bucket-${bucket}`);
  }
  dataFilePath(partitionPath: string, bucket: number, fileName: string, externalPath?: string | null): string {
    return externalPath ? externalPath.replace(/^file:\/\//, "") : join(this.bucketDir(partitionPath, bucket), plainFileName(fileName, "data file"));
  }
  /** An index file (deletion vectors, a hash index) by the name its index manifest gives, under `index/`. */
  indexFilePath(name: string): string {
    return join(this.root, "index", plainFileName(name, "index file"));
  }
  newDataFileName(prefix = "data-", ext = "parquet"): string {
    return `${prefix}${this.uuid}-${this.counter++}.${ext}`;
  }
  newManifestName(): string {
    return `manifest-${this.uuid}-${this.counter++}`;
  }
  newManifestListName(): string {
    return `manifest-list-${this.uuid}-${this.counter++}`;
  }
}
