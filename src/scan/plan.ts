/**
 * Scan planning: snapshot → live files → splits, one per (partition, bucket), files ordered by their first
 * sequence number so that a bucket reads back in write order (the append queue). Planning reads manifests only,
 * never data files.
 *
 * Time travel, as Paimon does it (TimeTravelUtil, AbstractFileStoreTable.tryTimeTravel): a snapshot chosen by id,
 * by time or by tag is read in its own schema — `schema-<schemaId>` of the snapshot (a tag holds a copy of the
 * snapshot, with its schemaId) — so a column dropped since reads with its old values, and old names and types are
 * kept. A read of the latest snapshot, chosen by nothing, is in the table's current schema. Either way, files
 * written under older schemas are mapped to the schema read by field id (src/scan/read.ts).
 */
import { ErrorKind, isLakeError, LakeError } from "../errors.ts";
import { deserializeBinaryRow } from "../format/binary-row.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import type { TableSchema } from "../format/schema.ts";
import type { Snapshot } from "../format/snapshot.ts";
import type { Value } from "../format/values.ts";
import { SnapshotDeletionVectors } from "../table/deletion-vectors.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { getTagOrThrow } from "../table/tags.ts";

export interface DataSplit {
  snapshotId: number;
  partition: Uint8Array;
  partitionValues: Value[];
  bucket: number;
  totalBuckets: number;
  files: DataFileMeta[];
}

export interface ScanSpec {
  /** Read this snapshot instead of the latest. */
  snapshotId?: number;
  /** Read the newest snapshot committed at or before this time (epoch ms). */
  atTimeMillis?: number;
  /** Read the snapshot this tag holds (`tag/tag-<name>`; its snapshot file may have been expired). */
  tag?: string;
  /**
   * Read a snapshot chosen by id, time or tag in the table's current schema (the handle's), not in its own: for a
   * stream that starts with an older snapshot's rows and goes on into newer snapshots in one schema (as Paimon's
   * streaming sources do: copyWithoutTimeTravel).
   */
  inCurrentSchema?: boolean;
  /** Keep only partitions for which this returns true (values in partition-key order). */
  partitionFilter?: (values: Value[]) => boolean;
  buckets?: number[];
}

export interface ScanPlan {
  snapshot: Snapshot | null;
  /** The schema the plan's rows are read in: a chosen snapshot's own (time travel), else the table's current one. */
  schema: TableSchema;
  /** The snapshot was chosen (by id, time or tag) and is read in its own schema: `schema` is `snapshot`'s. */
  timeTravel: boolean;
  splits: DataSplit[];
  /**
   * A primary-key table's changes (incremental reads, streams): the files are read as they are, each row with its
   * kind — `changelog` files, or level-0 `delta` files — instead of merged. Absent: a snapshot's rows.
   */
  changes?: "changelog" | "delta";
  /**
   * A snapshot of a table with `deletion-vectors.enabled`: its deletion vectors, which a read of its rows applies to
   * each data file (as Java's batch and full scans do; its streaming reads of changes apply none). Absent: none.
   */
  deletionVectors?: SnapshotDeletionVectors;
}

export async function resolveSnapshot(table: Table, spec: ScanSpec): Promise<Snapshot | null> {
  if ([spec.snapshotId, spec.atTimeMillis, spec.tag].filter((x) => x !== undefined).length > 1) {
    throw new LakeError(ErrorKind.DataInvalid, "choose one of a snapshot id, a point in time or a tag");
  }
  if (spec.tag !== undefined) return (await getTagOrThrow(table, spec.tag)).snapshot;
  if (spec.snapshotId !== undefined) {
    if (!(await table.snapshots.snapshotExists(spec.snapshotId))) {
      const ids = await table.snapshots.listIds();
      const range = ids.length ? `snapshots ${ids[0]}..${ids[ids.length - 1]} exist` : "the table has no snapshots";
      throw new LakeError(ErrorKind.NotFound, `snapshot ${spec.snapshotId} of ${table.name} does not exist (${range})`);
    }
    return table.snapshots.snapshot(spec.snapshotId);
  }
  if (spec.atTimeMillis !== undefined) {
    const s = await table.snapshots.atOrBefore(spec.atTimeMillis);
    if (s === null) {
      throw new LakeError(ErrorKind.NotFound, `${table.name} has no snapshot at or before ${new Date(spec.atTimeMillis).toISOString()}`);
    }
    return s;
  }
  return table.snapshots.latest();
}

/** A snapshot is chosen (by id, time or tag) and read in its own schema. */
export const travelsInTime = (spec: ScanSpec): boolean => (spec.snapshotId !== undefined || spec.atTimeMillis !== undefined || spec.tag !== undefined) && spec.inCurrentSchema !== true;

/**
 * The schema a read of `snapshot` by `spec` is in: the snapshot's own when `spec` chose it (time travel, as Paimon
 * reads it), else the table's current one (the handle's).
 */
export async function readSchemaOf(table: Table, spec: ScanSpec, snapshot: Snapshot | null): Promise<TableSchema> {
  if (snapshot === null || !travelsInTime(spec) || snapshot.schemaId === table.schema.id) return table.schema;
  try {
    return await table.schemas.schema(snapshot.schemaId);
  } catch (e) {
    if (!isLakeError(e, ErrorKind.NotFound)) throw e;
    throw new LakeError(ErrorKind.NotFound, `snapshot ${snapshot.id} of ${table.name} was written under schema ${snapshot.schemaId}, which does not exist (a read of it is in its own schema)`, { cause: e });
  }
}

/**
 * The table as a read by `spec` sees it: in the chosen snapshot's own schema (time travel), else the handle itself.
 * Column names and partition values of such a read are resolved against this table's schema.
 */
export async function tableForRead(table: Table, spec: ScanSpec): Promise<Table> {
  return table.inSchema(await readSchemaOf(table, spec, await resolveSnapshot(table, spec)));
}

export async function planScan(table: Table, spec: ScanSpec = {}, store = new ManifestStore(table)): Promise<ScanPlan> {
  return planSnapshot(table, await resolveSnapshot(table, spec), spec, store);
}

/** `planScan` of the snapshot `spec` chose, resolved already (`resolveSnapshot`). */
export async function planSnapshot(table: Table, snapshot: Snapshot | null, spec: ScanSpec = {}, store = new ManifestStore(table)): Promise<ScanPlan> {
  const schema = await readSchemaOf(table, spec, snapshot);
  const timeTravel = snapshot !== null && travelsInTime(spec);
  if (snapshot === null) return { snapshot, schema, timeTravel, splits: [] };
  const entries = await store.readLiveEntries(snapshot);
  const types = table.partitionTypes;
  const bySplit = new Map<string, DataSplit>();
  const partitionCache = new Map<string, Value[]>();
  for (const e of entries) {
    // Postpone-bucket files are not yet in a real bucket; Java batch reads skip them too.
    if (e.bucket === -2) continue;
    if (spec.buckets && !spec.buckets.includes(e.bucket)) continue;
    const pkey = Buffer.from(e.partition).toString("hex");
    let values = partitionCache.get(pkey);
    if (values === undefined) {
      values = deserializeBinaryRow(types, e.partition);
      partitionCache.set(pkey, values);
    }
    if (spec.partitionFilter && !spec.partitionFilter(values)) continue;
    const key = `${pkey}/${e.bucket}`;
    let split = bySplit.get(key);
    if (split === undefined) {
      split = { snapshotId: snapshot.id, partition: e.partition, partitionValues: values, bucket: e.bucket, totalBuckets: e.totalBuckets, files: [] };
      bySplit.set(key, split);
    }
    split.files.push(e.file);
  }
  const splits = [...bySplit.values()];
  for (const s of splits) s.files.sort((a, b) => (a.minSequenceNumber < b.minSequenceNumber ? -1 : a.minSequenceNumber > b.minSequenceNumber ? 1 : 0));
  const deletionVectors = table.options.bool("deletion-vectors.enabled") ? await SnapshotDeletionVectors.of(table, snapshot) : null;
  return { snapshot, schema, timeTravel, splits, ...(deletionVectors !== null ? { deletionVectors } : {}) };
}
