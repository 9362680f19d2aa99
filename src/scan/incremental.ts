/**
 * Incremental reads: the rows added between snapshot A (exclusive) and B (inclusive) — Paimon's
 * `incremental-between = 'A,B'` in its delta mode, which is what a table without a changelog producer reads.
 *
 * What a reader sees, as in Paimon (IncrementalDeltaStartingScanner, DeltaFollowUpScanner): the files each APPEND
 * snapshot of the range added, snapshot by snapshot, a bucket's files in sequence order (the append queue). COMPACT
 * snapshots are skipped — they rewrite rows already delivered. OVERWRITE snapshots are skipped too: the rows an
 * overwrite writes are not delivered, and the rows it replaced stay delivered (a consumer that must follow overwrites
 * re-reads the partition as a batch). A range that reaches back past the earliest retained snapshot is refused:
 * rows of expired snapshots can no longer be told apart.
 *
 * Primary-key tables: what a range delivers is its changes, each row with its kind, as Paimon's streaming read follows
 * them (`changesOf`): with `changelog-producer = input` the changelog files the snapshots wrote (every change as it
 * came); with `none` the level-0 files APPEND snapshots added, read without merging (each flush's last change per key,
 * deletes included). The plan says so (`changes`), and the reader reads those files as they are.
 */
import { ErrorKind, LakeError } from "../errors.ts";
import { deserializeBinaryRow } from "../format/binary-row.ts";
import { FileKind, type ManifestEntry } from "../format/manifest.ts";
import { CommitKind, type Snapshot } from "../format/snapshot.ts";
import type { Value } from "../format/values.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import type { DataSplit, ScanPlan } from "./plan.ts";
import { changelogProducerOf } from "../lsm/lookup-changelog.ts";

export interface IncrementalRange {
  /** Exclusive: rows committed by snapshots after this one (0: from the first snapshot). */
  from: number;
  /** Inclusive: up to and including this snapshot. */
  to: number;
}

/** Parses `A..B` (or Paimon's `A,B`). */
export function parseIncrementalRange(text: string): IncrementalRange {
  const m = /^\s*(\d+)\s*(?:\.\.|,)\s*(\d+)\s*$/.exec(text);
  if (m === null) throw new LakeError(ErrorKind.DataInvalid, `an incremental range is A..B (snapshot ids: after A, up to and including B), not '${text}'`);
  const range = { from: Number(m[1]), to: Number(m[2]) };
  if (range.from >= range.to) throw new LakeError(ErrorKind.DataInvalid, `incremental range ${text}: A must be below B`);
  return range;
}

/** The splits of the rows APPEND snapshots in (from, to] added, in snapshot order. */
export async function planIncremental(
  table: Table,
  range: IncrementalRange,
  partitionFilter?: (values: Value[]) => boolean,
  store = new ManifestStore(table),
): Promise<ScanPlan> {
  const { from, to } = range;
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 0 && from < to)) throw new LakeError(ErrorKind.DataInvalid, `incremental range ${from}..${to}: need 0 <= A < B`);
  const latest = await table.snapshots.latestId();
  if (latest === null || to > latest) throw new LakeError(ErrorKind.NotFound, `incremental range ${from}..${to}: ${table.name}'s latest snapshot is ${latest ?? "none"}`);
  const earliest = (await table.snapshots.earliestId()) ?? 1;
  if (from + 1 < earliest)
    throw new LakeError(ErrorKind.NotFound, `incremental range ${from}..${to}: snapshots before ${earliest} of ${table.name} were expired, so the rows they added can no longer be told apart; start at ${earliest - 1} or later`);
  const splits: DataSplit[] = [];
  const changes = changesOf(table);
  for (let id = from + 1; id <= to; id++) {
    const s = await table.snapshots.snapshot(id);
    splits.push(...(await snapshotDeltaSplits(table, s, partitionFilter, store)));
  }
  // A range of snapshots is read in one schema, the current one (Paimon's incremental-between is no time travel).
  return { snapshot: await table.snapshots.snapshot(to), schema: table.schema, timeTravel: false, splits, ...(changes !== null ? { changes } : {}) };
}

/**
 * What a primary-key table's snapshots deliver to a stream: its changelog files (`changelog-producer = input`: the
 * APPEND snapshots'; `lookup`: the COMPACT snapshots' — Java's ChangelogFollowUpScanner) or the data files APPEND
 * snapshots added (`none`); null for an append table (the rows APPEND snapshots added).
 */
export function changesOf(table: Table): "changelog" | "delta" | null {
  if (!table.isPrimaryKeyTable) return null;
  const producer = changelogProducerOf(table.options);
  return producer === "input" || producer === "lookup" ? "changelog" : "delta";
}

/**
 * Whether a snapshot delivers rows to a stream: one with changelog files, of a table whose changes are its changelog;
 * an APPEND snapshot otherwise (COMPACT snapshots rewrite rows already delivered, OVERWRITE ones are not followed).
 */
export function deliversRows(table: Table, s: Snapshot): boolean {
  return changesOf(table) === "changelog" ? s.changelogManifestList !== null : s.commitKind === CommitKind.APPEND;
}

/**
 * The splits of what one snapshot delivers to a stream or an incremental read: the files an APPEND snapshot added;
 * for a primary-key table with `changelog-producer = input` or `lookup`, the changelog files it wrote. Other
 * snapshots: none.
 */
export async function snapshotDeltaSplits(table: Table, s: Snapshot, partitionFilter?: (values: Value[]) => boolean, store = new ManifestStore(table)): Promise<DataSplit[]> {
  // Changelog files in the order they were committed: a bucket's compactions of one round each wrote theirs, and a
  // later one's rows come after an earlier one's (their sequence numbers are those of the rows' versions, not of the
  // changes).
  if (changesOf(table) === "changelog") return s.changelogManifestList === null ? [] : splitsOf(table, s, await store.readChangelogEntries(s), partitionFilter, false);
  return s.commitKind === CommitKind.APPEND ? deltaSplits(table, s, partitionFilter, store) : [];
}

/**
 * The splits of the files one snapshot added (its delta manifests' ADD entries), a bucket's files in sequence order —
 * what `planIncremental` gives for the range (id − 1, id] of an APPEND snapshot, without looking at the snapshot chain
 * (a caller that holds the snapshot knows it exists).
 */
export async function deltaSplits(table: Table, s: Snapshot, partitionFilter?: (values: Value[]) => boolean, store = new ManifestStore(table)): Promise<DataSplit[]> {
  return splitsOf(table, s, await store.readDeltaEntries(s), partitionFilter);
}

/** The ADD entries as splits per (partition, bucket), a bucket's files in sequence order (or as listed). */
function splitsOf(table: Table, s: Snapshot, entries: readonly ManifestEntry[], partitionFilter?: (values: Value[]) => boolean, inSequenceOrder = true): DataSplit[] {
  const types = table.partitionTypes;
  const bySplit = new Map<string, DataSplit>();
  for (const e of entries) {
    if (e.kind !== FileKind.ADD || e.bucket === -2) continue;
    const key = `${Buffer.from(e.partition).toString("hex")}/${e.bucket}`;
    let split = bySplit.get(key);
    if (split === undefined) {
      const values = deserializeBinaryRow(types, e.partition);
      if (partitionFilter && !partitionFilter(values)) continue;
      split = { snapshotId: s.id, partition: e.partition, partitionValues: values, bucket: e.bucket, totalBuckets: e.totalBuckets, files: [] };
      bySplit.set(key, split);
    }
    split.files.push(e.file);
  }
  const splits = [...bySplit.values()];
  if (inSequenceOrder) for (const split of splits) split.files.sort((a, b) => (a.minSequenceNumber < b.minSequenceNumber ? -1 : a.minSequenceNumber > b.minSequenceNumber ? 1 : 0));
  return splits;
}
