/**
 * Paimon's layout of one primary-key (key-value) file, checked against the file itself: columns in Java's order,
 * rows in key order with one row per key, and the meta its rows imply (row count, min/max key, delete count,
 * sequence range). Shared by the tests of what natslake writes and what it compacts. (A table's buckets as levels,
 * validated as Java restores them: src/maintenance/bucket-levels.ts.)
 */
import assert from "node:assert/strict";
import { readParquet } from "../../src/codec/parquet.ts";
import { recordBatchToRows } from "../../src/codec/columns/batch-to-rows.ts";
import { deserializeBinaryRow } from "../../src/format/binary-row.ts";
import type { DataFileMeta, ManifestEntry } from "../../src/format/manifest.ts";
import type { Row } from "../../src/format/values.ts";
import { keyComparator } from "../../src/lsm/key-comparator.ts";
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
