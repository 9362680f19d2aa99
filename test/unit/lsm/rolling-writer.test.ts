/**
 * The rolling key-value writer of compactions (src/lsm/rolling-writer.ts) on a real filesystem: chunks of physical
 * rows become files of at least the target size (the last one aside), each one Parquet file stitched from its chunks'
 * row groups, whose meta is exactly what writing its rows as one file gives (key and value statistics, first and last
 * key, sequence range, retractions); with the worker pool or without; abort leaves only paths it reported.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import type * as arrow from "apache-arrow";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { readParquet } from "../../../src/codec/parquet.ts";
import { parquetRowGroupRows } from "../../../src/codec/parquet-stitch.ts";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { ParquetEncoderPool } from "../../../src/codec/parquet-pool.ts";
import { FileSource, type DataFileMeta } from "../../../src/format/manifest.ts";
import { encodeKeyValueFile, KeyValueFileWriter } from "../../../src/lsm/key-value-file-writer.ts";
import { keyValueFields } from "../../../src/lsm/key-value-fields.ts";
import { RollingKeyValueWriter } from "../../../src/lsm/rolling-writer.ts";
import { flushBuffer, keyValueLayout, type SortedRows } from "../../../src/lsm/sort-buffer.ts";
import { RowKind } from "../../../src/lsm/row-kind.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import type { Table } from "../../../src/table/table.ts";
import type { Row } from "../../../src/format/values.ts";
import { tempDir } from "../../helpers/tables.ts";

const wh = tempDir();
const pool = new ParquetEncoderPool({ size: 2 });
after(async () => {
  await pool.close();
  wh.cleanup();
});

async function table(name: string): Promise<Table> {
  return new Catalog(wh.path).createTable(parseIdentifier(name), {
    columns: parseColumnList("id INT NOT NULL, name STRING, score DOUBLE"),
    primaryKeys: ["id"],
    options: { bucket: "1", "metadata.stats-mode": "truncate(4)" },
  });
}

/** `n` rows with distinct keys in key order (every 7th a delete), as one sorted run; then cut into chunks. */
function chunksOf(t: Table, n: number, chunkRows: number): { whole: SortedRows; chunks: SortedRows[] } {
  const layout = keyValueLayout(t.schema);
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) rows.push({ id: i, name: `name-${"x".repeat(i % 13)}-${i}`, score: i % 5 === 0 ? null : i / 3, _VALUE_KIND: i % 7 === 3 ? RowKind.DELETE : RowKind.INSERT });
  const whole = flushBuffer(layout, [rowsToRecordBatch(layout.bufferFields, rows)], 100n).data!;
  const physical = keyValueFields(t.schema);
  const chunks: SortedRows[] = [];
  for (let at = 0; at < n; at += chunkRows) chunks.push(sortedRowsOf(physical, whole.batch.slice(at, Math.min(n, at + chunkRows))));
  return { whole, chunks };
}

/** The meta a batch of physical rows carries, computed from its rows. */
function sortedRowsOf(physical: ReturnType<typeof keyValueFields>, batch: arrow.RecordBatch): SortedRows {
  const rows = recordBatchToRows(physical, batch);
  const seqs = rows.map((r) => r["_SEQUENCE_NUMBER"] as bigint);
  return {
    batch,
    minKey: [rows[0]!["_KEY_id"]!],
    maxKey: [rows[rows.length - 1]!["_KEY_id"]!],
    minSequenceNumber: seqs.reduce((a, b) => (b < a ? b : a)),
    maxSequenceNumber: seqs.reduce((a, b) => (b > a ? b : a)),
    deleteRows: rows.filter((r) => r["_VALUE_KIND"] === RowKind.DELETE).length,
  };
}

for (const withPool of [true, false]) {
  test(`rolling writer${withPool ? " (worker pool)" : ""} - files of at least the target size, each stitched from its chunks, with the meta of its rows written as one file`, async () => {
    const t = await table(`r.roll_${withPool ? "pool" : "inline"}`);
    const { whole, chunks } = chunksOf(t, 3000, 250);
    const writer = new KeyValueFileWriter(t, { pool: withPool ? pool : null });
    const paths: string[] = [];
    const target = 12 * 1024;
    const rolling = new RollingKeyValueWriter(writer, { partitionPath: "", bucket: 0 }, { level: 3, fileSource: FileSource.COMPACT, targetFileSize: target }, (p) => paths.push(p));
    for (const c of chunks) await rolling.write(c);
    const files = await rolling.close();
    assert.ok(files.length >= 3, `several files (${files.length})`);
    assert.equal(paths.length, files.length, "every path reported before its file was written");
    for (const f of files.slice(0, -1)) assert.ok(f.fileSize >= target, `${f.fileName}: ${f.fileSize} bytes, at least the target`);
    assert.equal(files.reduce((n, f) => n + f.rowCount, 0), 3000);
    const physical = keyValueFields(t.schema);
    const all: Row[] = [];
    for (const [i, f] of files.entries()) {
      assert.deepEqual([f.level, f.fileSource, f.schemaId], [3, FileSource.COMPACT, t.schema.id]);
      const bytes = await t.io.readFile(paths[i]!);
      assert.equal(bytes.length, f.fileSize);
      const groups = parquetRowGroupRows(bytes);
      assert.ok(groups.every((n) => n === 250), "one row group per chunk, copied as encoded");
      const read = readParquet(bytes);
      assert.equal(read.batches.length, 1, "a few thousand rows decode as one batch");
      const batch = read.batches[0]!;
      // The meta writing these rows as one file gives (the table writer's flush path).
      const expected = encodeKeyValueFile(sortedRowsOf(physical, batch), writer.encodeSpec);
      assert.deepEqual(
        [f.rowCount, f.minKey, f.maxKey, f.keyStats, f.valueStats, f.minSequenceNumber, f.maxSequenceNumber, f.deleteRowCount],
        [expected.rowCount, expected.minKey, expected.maxKey, expected.keyStats, expected.valueStats, expected.minSequenceNumber, expected.maxSequenceNumber, expected.deleteRowCount],
        `${f.fileName}: its meta`,
      );
      all.push(...recordBatchToRows(physical, batch));
    }
    assert.deepEqual(all, recordBatchToRows(physical, whole.batch), "the rows, in order, nothing lost or repeated");
  });
}

test("rolling writer - a target larger than everything: one file; abort waits for the chunk in flight and writes nothing more", async () => {
  const t = await table("r.one");
  const { chunks } = chunksOf(t, 500, 100);
  const writer = new KeyValueFileWriter(t, { pool });
  const one = new RollingKeyValueWriter(writer, { partitionPath: "", bucket: 0 }, { level: 5, fileSource: FileSource.COMPACT, targetFileSize: 1 << 30 }, () => undefined);
  for (const c of chunks) await one.write(c);
  const files: DataFileMeta[] = await one.close();
  assert.deepEqual(files.map((f) => [f.rowCount, f.deleteRowCount]), [[500, chunks.reduce((n, c) => n + c.deleteRows, 0)]]);

  const paths: string[] = [];
  const aborted = new RollingKeyValueWriter(writer, { partitionPath: "", bucket: 0 }, { level: 5, fileSource: FileSource.COMPACT, targetFileSize: 1 << 30 }, (p) => paths.push(p));
  for (const c of chunks) await aborted.write(c);
  await aborted.abort();
  assert.deepEqual(paths, [], "nothing reached the target: no file was written");
  assert.throws(() => new RollingKeyValueWriter(writer, { partitionPath: "", bucket: 0 }, { level: 1, fileSource: FileSource.COMPACT, targetFileSize: 0 }, () => undefined), /target file size must be positive/);
});
