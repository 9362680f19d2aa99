/**
 * All path rules of a table directory in one place (Paimon's FileStorePathFactory): where schemas, snapshots,
 * manifests and data files live, and how new files are named. Readers recompute data file paths from manifest
 * entries, so the partition directory written here must equal what Java and pypaimon compute (format/partition.ts).
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";

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
  manifestPath(name: string): string {
    return join(this.manifestDir, name);
  }
  /** `partitionPath` is `k=v/…` or "" for unpartitioned tables. */
  bucketDir(partitionPath: string, bucket: number): string {
    return join(this.root, partitionPath, bucket === -2 ? "bucket-postpone" : `bucket-${bucket}`);
  }
  dataFilePath(partitionPath: string, bucket: number, fileName: string, externalPath?: string | null): string {
    return externalPath ? externalPath.replace(/^file:\/\//, "") : join(this.bucketDir(partitionPath, bucket), fileName);
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
