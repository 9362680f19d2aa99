/**
 * DuckDB reads every data file natslake writes, with the row count the manifest declares and the same values; a
 * large file comes in row groups of at most MAX_ROW_GROUP_ROWS (so readers decode it in parallel).
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { planScan } from "../../src/scan/plan.ts";
import { partitionPath } from "../../src/format/partition.ts";
import { createTable, tempDir, writeRows } from "../helpers/tables.ts";
import { rowsToRecordBatch } from "../../src/codec/columns/record-batch-builder.ts";
import { parquetFooterInfo } from "../../src/codec/parquet.ts";
import { ParquetEncoderPool } from "../../src/codec/parquet-pool.ts";
import { FileStoreCommit } from "../../src/commit/file-store-commit.ts";
import { readBatches } from "../../src/scan/read.ts";
import { serializeBinaryRow } from "../../src/format/binary-row.ts";
import { DataFileWriter, MAX_ROW_GROUP_ROWS } from "../../src/write/data-file-writer.ts";

const wh = tempDir();
after(() => wh.cleanup());

test("duckdb - reads every natslake data file with its declared row count and values", async () => {
  const t = await createTable(
    wh.path,
    "duck.t",
    "id BIGINT NOT NULL, dt STRING NOT NULL, amount DECIMAL(10, 2), big DECIMAL(30, 4), at TIMESTAMP(6), day DATE, tags ARRAY<STRING>, m MAP<STRING, BIGINT>, flag BOOLEAN",
    { partitionKeys: ["dt"], options: { bucket: "2", "bucket-key": "id" } },
  );
  const rows = Array.from({ length: 120 }, (_, i) => ({
    id: i,
    dt: i % 2 ? "x" : "y",
    amount: i % 9 ? `${i}.25` : null,
    big: `${i}12345678901234567890.1234`,
    at: `2026-11-29T00:00:00.${String(i).padStart(6, "0")}`,
    day: "2026-11-29",
    tags: [`t${i}`],
    m: { a: i },
    flag: i % 3 === 0,
  }));
  await writeRows(t, rows);
  await writeRows(t, rows.map((r) => ({ ...r, id: r.id + 1000 })));
  const plan = await planScan(t);
  const db = await DuckDBInstance.create(":memory:");
  const conn = await db.connect();
  let files = 0;
  let total = 0;
  for (const split of plan.splits) {
    const dir = join(t.root, partitionPath(t.partitionKeys, t.partitionTypes, split.partitionValues, { defaultName: "__DEFAULT_PARTITION__", legacyName: true }), `bucket-${split.bucket}`);
    for (const f of split.files) {
      const path = join(dir, f.fileName);
      const count = await conn.runAndReadAll(`select count(*)::BIGINT as n, sum(id)::BIGINT as s, count(amount)::BIGINT as a, min(big)::VARCHAR as b, max(len(tags))::BIGINT as tl from read_parquet('${path}')`);
      const [n, , a, b, tl] = count.getRows()[0]!;
      assert.equal(Number(n), f.rowCount, `${f.fileName}: row count`);
      assert.ok(Number(a) <= Number(n));
      assert.match(String(b), /^\d*12345678901234567890\.1234$/);
      assert.equal(Number(tl), 1);
      const codec = await conn.runAndReadAll(`select distinct compression from parquet_metadata('${path}')`);
      assert.deepEqual(codec.getRows().map((r) => String(r[0])), ["ZSTD"]);
      files++;
      total += f.rowCount;
    }
  }
  assert.equal(total, 240);
  assert.ok(files >= 4, `expected files in 2 partitions × 2 buckets × 2 commits, got ${files}`);
  conn.closeSync();
});

test("duckdb - a large file is written in row groups of at most MAX_ROW_GROUP_ROWS, and reads whole and in order", async () => {
  const t = await createTable(wh.path, "duck.big", "id BIGINT NOT NULL, s STRING");
  const n = 2 * MAX_ROW_GROUP_ROWS + 1_000;
  // One bucket, no pool: the batch writer keeps this in one file, as a compaction's output is.
  const writer = new DataFileWriter(t, { pool: null });
  const batch = rowsToRecordBatch(t.schema.fields, Array.from({ length: n }, (_, i) => ({ id: BigInt(i), s: i % 7 === 0 ? null : `v${i % 1000}` })));
  const [meta, ...more] = await writer.writeFiles("", 0, [batch], 0n, () => undefined);
  assert.equal(more.length, 0, "one file");
  const path = t.paths.dataFilePath("", 0, meta!.fileName);
  assert.deepEqual(parquetFooterInfo(await t.io.readFile(path)), { numRows: n, numRowGroups: 3 });
  const db = await DuckDBInstance.create(":memory:");
  const conn = await db.connect();
  const groups = await conn.runAndReadAll(`select row_group_id::BIGINT, max(row_group_num_rows)::BIGINT from parquet_metadata('${path}') group by 1 order by 1`);
  assert.deepEqual(groups.getRows().map(([g, r]) => [Number(g), Number(r)]), [[0, MAX_ROW_GROUP_ROWS], [1, MAX_ROW_GROUP_ROWS], [2, 1_000]]);
  const [[count, sum, nulls]] = (await conn.runAndReadAll(`select count(*)::BIGINT, sum(id)::BIGINT, count(*) filter (where s is null)::BIGINT from read_parquet('${path}')`)).getRows() as unknown as [[bigint, bigint, bigint]];
  assert.deepEqual([Number(count), Number(sum), Number(nulls)], [n, (n * (n - 1)) / 2, Math.ceil(n / 7)]);
  conn.closeSync();
  // natslake's scan hands the row groups to different decoder workers and puts them back in order.
  await new FileStoreCommit(t).commit({ commitUser: "u", messages: [{ partition: serializeBinaryRow([], []), bucket: 0, totalBuckets: t.bucket, newFiles: [meta!], deletedFiles: [] }] });
  const pool = new ParquetEncoderPool({ size: 2 });
  try {
    let next = 0;
    for await (const b of readBatches(t, { decoderPool: pool, projection: ["id"] })) {
      const ids = b.getChildAt(0)!.toArray() as BigInt64Array;
      for (const id of ids) assert.equal(id, BigInt(next++));
    }
    assert.equal(next, n);
  } finally {
    await pool.close();
  }
});
