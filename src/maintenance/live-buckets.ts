/**
 * A snapshot's live data files grouped by (partition, bucket), optionally of one partition or one bucket only: what
 * a compaction plans per bucket.
 */
import { deserializeBinaryRow, serializeBinaryRow } from "../format/binary-row.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import type { Snapshot } from "../format/snapshot.ts";
import type { Value } from "../format/values.ts";
import type { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";

export interface LiveBucket {
  /** Framed BinaryRow of the partition values, as the manifest entries carry it. */
  partition: Uint8Array;
  partitionValues: Value[];
  bucket: number;
  totalBuckets: number;
  files: DataFileMeta[];
}

/**
 * The live files of `snapshot` by (partition, bucket), in the order the manifests first name each bucket. Files of
 * postpone buckets (bucket < 0) are not in a real bucket yet and left out.
 */
export async function liveBuckets(table: Table, snapshot: Snapshot, o: { partition?: Value[] | undefined; bucket?: number | undefined }, store: ManifestStore): Promise<LiveBucket[]> {
  const types = table.partitionTypes;
  const want = o.partition === undefined ? null : Buffer.from(serializeBinaryRow(types, o.partition)).toString("hex");
  const groups = new Map<string, LiveBucket>();
  for (const e of await store.readLiveEntries(snapshot)) {
    if (e.bucket < 0) continue;
    if (o.bucket !== undefined && e.bucket !== o.bucket) continue;
    const pkey = Buffer.from(e.partition).toString("hex");
    // The same values may be framed differently by another writer: compare them re-serialized when the bytes differ.
    if (want !== null && pkey !== want && Buffer.from(serializeBinaryRow(types, deserializeBinaryRow(types, e.partition))).toString("hex") !== want) continue;
    const key = `${pkey}/${e.bucket}`;
    let g = groups.get(key);
    if (g === undefined) {
      g = { partition: e.partition, partitionValues: deserializeBinaryRow(types, e.partition), bucket: e.bucket, totalBuckets: e.totalBuckets, files: [] };
      groups.set(key, g);
    }
    g.files.push(e.file);
  }
  return [...groups.values()];
}
