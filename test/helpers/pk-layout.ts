/**
 * Paimon's layout of one primary-key (key-value) file, checked against the file itself: columns in Java's order,
 * rows in key order with one row per key, and the meta its rows imply (row count, min/max key, delete count,
 * sequence range). Shared by the tests of what natslake writes and what it compacts. And a table's buckets as
 * levels, validated as Java restores them.
 */
import assert from "node:assert/strict";
import { readParquet } from "../../src/codec/parquet.ts";
import { recordBatchToRows } from "../../src/codec/columns/batch-to-rows.ts";
import { deserializeBinaryRow } from "../../src/format/binary-row.ts";
import type { DataFileMeta, ManifestEntry } from "../../src/format/manifest.ts";
import type { Row } from "../../src/format/values.ts";
import { keyComparator } from "../../src/lsm/key-comparator.ts";
import { framedKeyComparator } from "../../src/lsm/compact-bucket.ts";
import { readLsmCompactionOptions } from "../../src/lsm/compaction-options.ts";
import { Levels } from "../../src/lsm/levels.ts";
import { liveBuckets, type LiveBucket } from "../../src/maintenance/live-buckets.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { keyFields, keyValueFields } from "../../src/lsm/key-value-fields.ts";
import { dataFilePath } from "../../src/table/file-refs.ts";
import type { Table } from "../../src/table/table.ts";

/** Checks the file of a live entry and returns its rows (physical columns). */
export async function checkKeyValueFile(t: Table, e: ManifestEntry): Promise<Row[]> {
  const f: DataFileMeta = e.file;
  const fields = keyValueFields(t.schema);
  const keys = keyFields(t.schema);
  const compare = keyComparator(keys.map((k) => k.type));
  const table = readParquet(await t.io.readFile(dataFilePath(t, e)));
  assert.deepEqual(table.schema.fields.map((x) => x.name), fields.map((x) => x.name), "Paimon's column order");
  const rows = recordBatchToRows(fields, table);
  const keyOf = (r: Row): Row[string][] => keys.map((k) => r[`_KEY_${k.name}`] ?? null);
  for (let i = 1; i < rows.length; i++) assert.ok(compare(keyOf(rows[i - 1]!), keyOf(rows[i]!)) < 0, `${f.fileName}: rows ${i - 1} and ${i} out of key order`);
  assert.equal(f.rowCount, rows.length);
  assert.deepEqual(deserializeBinaryRow(keys.map((k) => k.type), f.minKey), keyOf(rows[0]!));
  assert.deepEqual(deserializeBinaryRow(keys.map((k) => k.type), f.maxKey), keyOf(rows[rows.length - 1]!));
  assert.equal(f.deleteRowCount, rows.filter((r) => r["_VALUE_KIND"] === 1 || r["_VALUE_KIND"] === 3).length);
  const seqs = rows.map((r) => r["_SEQUENCE_NUMBER"] as bigint);
  assert.equal(f.minSequenceNumber, seqs.reduce((a, b) => (b < a ? b : a)));
  assert.equal(f.maxSequenceNumber, seqs.reduce((a, b) => (b > a ? b : a)));
  return rows;
}

/**
 * Every live bucket of the table's latest snapshot with its levels — validated: `Levels` throws when a level ≥ 1 is
 * not a sorted run (files overlapping in key range), as Java's restore would refuse it. None before a first snapshot.
 */
export async function liveBucketLevels(t: Table): Promise<Array<{ bucket: LiveBucket; levels: Levels }>> {
  const latest = await t.snapshots.latest();
  if (latest === null) return [];
  const numLevels = readLsmCompactionOptions(t.options).numLevels;
  return (await liveBuckets(t, latest, {}, new ManifestStore(t))).map((bucket) => ({ bucket, levels: new Levels(bucket.files, numLevels, framedKeyComparator(t)) }));
}
