/**
 * A primary-key table's buckets as LSM levels, validated as Java Paimon restores them: a level ≥ 1 is one sorted
 * run (its files' key ranges do not overlap), else Java refuses the bucket ("SortedRun is not sorted…") and natslake's
 * writers and compactions refuse it too. `natslake doctor` checks every retained snapshot's buckets with it; tests
 * check what writes and compactions leave.
 */
import type { Snapshot } from "../format/snapshot.ts";
import { framedKeyComparator } from "../lsm/compact-bucket.ts";
import { readLsmCompactionOptions } from "../lsm/compaction-options.ts";
import type { FramedKeyComparator } from "../lsm/levels.ts";
import { Levels } from "../lsm/levels.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { liveBuckets, type LiveBucket } from "./live-buckets.ts";

/** How a table's buckets are built into levels: its `num-levels` and its key order. */
export interface LevelRules {
  numLevels: number;
  compareKeys: FramedKeyComparator;
}

export const levelRulesOf = (t: Table): LevelRules => ({ numLevels: readLsmCompactionOptions(t.options).numLevels, compareKeys: framedKeyComparator(t) });

/** The bucket's files as levels; throws DataInvalid when a level ≥ 1 overlaps (see `Levels`). */
export const bucketLevels = (bucket: LiveBucket, rules: LevelRules): Levels => new Levels(bucket.files, rules.numLevels, rules.compareKeys);

/**
 * Every live bucket of `snapshot` (default: the table's latest) with its levels — validated: throws when a level ≥ 1
 * is not a sorted run. None before a first snapshot.
 */
export async function liveBucketLevels(t: Table, snapshot?: Snapshot | null, store = new ManifestStore(t)): Promise<Array<{ bucket: LiveBucket; levels: Levels }>> {
  const s = snapshot === undefined ? await t.snapshots.latest() : snapshot;
  if (s === null) return [];
  const rules = levelRulesOf(t);
  return (await liveBuckets(t, s, {}, store)).map((bucket) => ({ bucket, levels: bucketLevels(bucket, rules) }));
}
