/**
 * Scan planning: snapshot → live files → splits, one per (partition, bucket), files ordered by their first
 * sequence number so that a bucket reads back in write order (the append queue). Planning reads manifests only,
 * never data files.
 */
import { ErrorKind, LakeError } from "../errors.ts";
import { deserializeBinaryRow } from "../format/binary-row.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import type { Snapshot } from "../format/snapshot.ts";
import type { Value } from "../format/values.ts";
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
  /** Keep only partitions for which this returns true (values in partition-key order). */
  partitionFilter?: (values: Value[]) => boolean;
  buckets?: number[];
}

export interface ScanPlan {
  snapshot: Snapshot | null;
  splits: DataSplit[];
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

export async function planScan(table: Table, spec: ScanSpec = {}, store = new ManifestStore(table)): Promise<ScanPlan> {
  const snapshot = await resolveSnapshot(table, spec);
  if (snapshot === null) return { snapshot, splits: [] };
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
  return { snapshot, splits };
}
