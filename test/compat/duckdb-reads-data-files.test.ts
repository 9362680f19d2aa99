/**
 * DuckDB reads every data file natslake writes, with the row count the manifest declares and the same values.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { planScan } from "../../src/scan/plan.ts";
import { partitionPath } from "../../src/spec/partition.ts";
import { createTable, tempDir, writeRows } from "../helpers/tables.ts";

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
