/**
 * Where a snapshot's metadata and data files are: its manifest lists, a data file's identity across snapshots and
 * its path, the changelog files it added — what expiration, tag deletion and rollback need to tell which files a
 * snapshot holds.
 */
import { ifPresent } from "../errors.ts";
import { deserializeBinaryRow } from "../format/binary-row.ts";
import { FileKind, type ManifestEntry } from "../format/manifest.ts";
import { partitionPath } from "../format/partition.ts";
import type { Snapshot } from "../format/snapshot.ts";
import type { ManifestStore } from "./manifest-store.ts";
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

/**
 * The changelog files a snapshot added: the ADD entries of its changelog manifests. None when it has none, or when
 * they are gone (Java's expiration deletes them with the snapshot, tag or no tag; an interrupted expiration deletes
 * the files before their manifests).
 */
export async function changelogFilesOf(store: ManifestStore, s: Snapshot): Promise<ManifestEntry[]> {
  return (await ifPresent(store.readChangelogEntries(s), [])).filter((e) => e.kind === FileKind.ADD);
}
