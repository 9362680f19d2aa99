/**
 * What the primary-key benchmarks (bench/java-pk-write.bench.ts, bench/cluster-pk.bench.ts) read from a table with the
 * library: a timed scan that also counts the rows and the distinct keys it gave (so a broken write or merge cannot
 * look fast), and each bucket's live files and sorted runs at the latest snapshot (src/lsm/levels.ts: a sorted run is
 * each level-0 file plus each non-empty level ≥ 1, what `num-sorted-run.*` counts).
 */
import { framedKeyComparator } from "../src/lsm/compact-bucket.ts";
import { readLsmCompactionOptions } from "../src/lsm/compaction-options.ts";
import { Levels } from "../src/lsm/levels.ts";
import { liveBuckets } from "../src/maintenance/live-buckets.ts";
import { readBatches } from "../src/scan/read.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";

export interface KeyScan {
  rows: number;
  /** Distinct values of the key column among the rows. */
  keys: number;
  /** Wall seconds of the scan itself (counting the keys comes after). */
  seconds: number;
}

/**
 * Reads the table's latest snapshot (merged, as any reader gets it) and counts its rows and the distinct values of
 * `keyColumn`, a BIGINT column. `projection`: the columns read (default all; the key column is added when missing).
 */
export async function scanKeys(table: Table, keyColumn: string, projection?: string[]): Promise<KeyScan> {
  const columns = projection === undefined ? undefined : projection.includes(keyColumn) ? projection : [...projection, keyColumn];
  const ids: BigInt64Array[] = [];
  let rows = 0;
  const t0 = performance.now();
  for await (const batch of readBatches(table, columns === undefined ? {} : { projection: columns })) {
    const column = batch.getChild(keyColumn);
    if (column === null) throw new Error(`${table.name}: the scan gave no column ${keyColumn}`);
    ids.push(column.toArray() as BigInt64Array);
    rows += batch.numRows;
  }
  const seconds = (performance.now() - t0) / 1000;
  const all = new BigInt64Array(rows);
  let at = 0;
  for (const a of ids) {
    all.set(a, at);
    at += a.length;
  }
  all.sort();
  let keys = 0;
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) keys++;
  return { rows, keys, seconds };
}

export interface BucketShape {
  bucket: number;
  files: number;
  sortedRuns: number;
  /** Each live file as `L<level>:<rows>`, highest level first (what a merged scan of the bucket merges). */
  fileRows: string[];
}

/** Each bucket's live files and sorted runs at the latest snapshot, by bucket number; [] before the first snapshot. */
export async function bucketShapes(table: Table, store: ManifestStore = new ManifestStore(table)): Promise<BucketShape[]> {
  const latest = await table.snapshots.latest();
  if (latest === null) return [];
  const { numLevels } = readLsmCompactionOptions(table.options);
  const compareKeys = framedKeyComparator(table);
  return (await liveBuckets(table, latest, {}, store))
    .map((b) => ({
      bucket: b.bucket,
      files: b.files.length,
      sortedRuns: new Levels(b.files, numLevels, compareKeys).numberOfSortedRuns(),
      fileRows: [...b.files].sort((x, y) => y.level - x.level || y.rowCount - x.rowCount).map((f) => `L${f.level}:${f.rowCount}`),
    }))
    .sort((a, b) => a.bucket - b.bucket);
}
