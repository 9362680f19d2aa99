/**
 * Where a snapshot's metadata and data files are: its manifest lists, a data file's identity across snapshots and
 * its path — what expiration, tag deletion and rollback need to tell which files a snapshot holds.
 */
import { deserializeBinaryRow } from "../format/binary-row.ts";
import type { ManifestEntry } from "../format/manifest.ts";
import { partitionPath } from "../format/partition.ts";
import type { Snapshot } from "../format/snapshot.ts";
import type { Table } from "./table.ts";

/** The manifest lists a snapshot names (base, delta and, when present, changelog). */
export function manifestListsOf(s: Snapshot): string[] {
  const out = [s.baseManifestList, s.deltaManifestList];
  if (s.changelogManifestList) out.push(s.changelogManifestList);
  return out;
}

/** A data file's identity across snapshots: partition, bucket and name. */
export function fileKey(e: ManifestEntry): string {
  return `${Buffer.from(e.partition).toString("hex")}/${e.bucket}/${e.file.fileName}`;
}

export function dataFilePath(table: Table, e: ManifestEntry): string {
  const values = deserializeBinaryRow(table.partitionTypes, e.partition);
  const ppath = partitionPath(table.partitionKeys, table.partitionTypes, values, {
    defaultName: table.options.partitionDefaultName,
    legacyName: table.options.partitionLegacyName,
  });
  return table.paths.dataFilePath(ppath, e.bucket, e.file.fileName, e.file.externalPath);
}
