import { after, test } from "node:test";
import { randomBytes } from "node:crypto";
import assert from "node:assert/strict";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { ParquetEncoderPool } from "../../../src/codec/parquet-pool.ts";
import { readParquet } from "../../../src/codec/parquet.ts";
import { computeStats } from "../../../src/codec/stats.ts";
import { serializeBinaryRow } from "../../../src/format/binary-row.ts";
import type { Row } from "../../../src/format/values.ts";
import { FileStoreCommit } from "../../../src/commit/file-store-commit.ts";
import { readAllRows, readBatches } from "../../../src/scan/read.ts";
import { DataFileWriter, encodeDataFile } from "../../../src/write/data-file-writer.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";

const wh = tempDir();
const pool = new ParquetEncoderPool({ size: 3 });
after(async () => {
  await pool.close();
  wh.cleanup();
});

const rowsFrom = (from: number, n: number): Row[] =>
  Array.from({ length: n }, (_, i) => ({ id: BigInt(from + i), s: (from + i) % 11 === 0 ? null : `s${(from + i) * 7919 % 1000}`, x: ((from + i) % 97) / 4 }));

test("data files - with a pool, a large batch becomes several files with contiguous sequence numbers and exact metadata", async () => {
  const t = await createTable(wh.path, "w.split", "id BIGINT, s STRING, x DOUBLE");
  const writer = new DataFileWriter(t, { pool, minRowsPerFile: 100, poolMinRows: 0 });
  const first = rowsFrom(0, 450);
  const second = rowsFrom(450, 150);
  const paths: string[] = [];
  const metas = await writer.writeFiles("", 0, [rowsToRecordBatch(t.schema.fields, first), rowsToRecordBatch(t.schema.fields, second)], 7n, (p) => paths.push(p));
  // 450 rows: min(3 workers, 450 / 100) = 3 pieces; 150 rows: 1 piece (two would be under 100 rows each).
  assert.deepEqual(metas.map((m) => m.rowCount), [150, 150, 150, 150]);
  assert.deepEqual(metas.map((m) => [m.minSequenceNumber, m.maxSequenceNumber]), [[7n, 156n], [157n, 306n], [307n, 456n], [457n, 606n]]);
  assert.equal(new Set(metas.map((m) => m.fileName)).size, 4);
  assert.equal(paths.length, 4);
  const all = [...first, ...second];
  const types = t.schema.fields.map((f) => f.type);
  for (const [k, m] of metas.entries()) {
    const path = t.paths.dataFilePath("", 0, m.fileName);
    const bytes = await t.io.readFile(path);
    assert.equal(m.fileSize, bytes.length);
    const rows = all.slice(k * 150, (k + 1) * 150);
    assert.deepEqual(recordBatchToRows(t.schema.fields, readParquet(bytes)), rows);
    const stats = computeStats(t.schema.fields, rowsToRecordBatch(t.schema.fields, rows));
    assert.deepEqual(Buffer.from(m.valueStats.minValues), Buffer.from(serializeBinaryRow(types, stats.min)));
    assert.deepEqual(Buffer.from(m.valueStats.maxValues), Buffer.from(serializeBinaryRow(types, stats.max)));
    assert.deepEqual(m.valueStats.nullCounts, stats.nullCounts.map(BigInt));
  }
  // Committed, the files read back in write order.
  await new FileStoreCommit(t).commit({ commitUser: "u", messages: [{ partition: serializeBinaryRow([], []), bucket: 0, totalBuckets: t.bucket, newFiles: metas, deletedFiles: [] }] });
  for (const decoderPool of [pool, null]) assert.deepEqual(await readAllRows(t, { decoderPool }), all);
  // Without a pool: one file per batch, same sequence numbers.
  const inline = await new DataFileWriter(t, { minRowsPerFile: 100 }).writeFiles("", 0, [rowsToRecordBatch(t.schema.fields, first)], 7n, () => undefined);
  assert.deepEqual(inline.map((m) => [m.rowCount, m.minSequenceNumber, m.maxSequenceNumber]), [[450, 7n, 456n]]);
});

test("data files - a failed encoding rejects the write; small files are encoded without the pool", async () => {
  const t = await createTable(wh.path, "w.fail", "id BIGINT, s STRING, x DOUBLE");
  const closed = new ParquetEncoderPool({ size: 2 });
  await closed.close();
  const paths: string[] = [];
  await assert.rejects(
    new DataFileWriter(t, { pool: closed, minRowsPerFile: 10, poolMinRows: 0 }).writeFiles("", 0, [rowsToRecordBatch(t.schema.fields, rowsFrom(0, 40))], 0n, (p) => paths.push(p)),
    /pool is closed/,
  );
  assert.equal(paths.length, 0);
  // Small files never reach the pool (below `poolMinRows`, default 8192 rows).
  const small = await new DataFileWriter(t, { pool: closed }).writeFiles("", 0, [rowsToRecordBatch(t.schema.fields, rowsFrom(0, 40))], 0n, (p) => paths.push(p));
  assert.equal(small[0]!.rowCount, 40);
});

test("scan - files decode in parallel in the pool (also by row groups), projected, in sequence order, with limits", async () => {
  const t = await createTable(wh.path, "w.scan", "id BIGINT, s STRING, x DOUBLE");
  // Incompressible strings, so files pass the 64 KiB below which the reader decodes on its own thread.
  const noise = (): string => randomBytes(30).toString("base64");
  const all: Row[] = Array.from({ length: 9000 }, (_, i) => ({ id: BigInt(i), s: i % 13 === 0 ? null : noise(), x: i / 8 }));
  const batch = rowsToRecordBatch(t.schema.fields, all);
  const split = await new DataFileWriter(t, { pool, minRowsPerFile: 3000, poolMinRows: 0 }).writeFiles("", 0, [batch.slice(0, 6000)], 0n, () => undefined);
  const grouped = await new DataFileWriter(t, { pool, poolMinRows: 0, parquet: { maxRowGroupSize: 700 } }).writeFiles("", 0, [batch.slice(6000)], 6000n, () => undefined);
  const metas = [...split, ...grouped];
  assert.deepEqual(metas.map((m) => m.rowCount), [3000, 3000, 3000]);
  assert.ok(metas.every((m) => m.fileSize > 64 * 1024), `files large enough for the pool: ${metas.map((m) => m.fileSize).join(", ")}`);
  await new FileStoreCommit(t).commit({ commitUser: "u", messages: [{ partition: serializeBinaryRow([], []), bucket: 0, totalBuckets: t.bucket, newFiles: metas, deletedFiles: [] }] });
  assert.deepEqual(await readAllRows(t, { decoderPool: pool }), all);
  assert.deepEqual(await readAllRows(t, { decoderPool: null }), all);
  assert.deepEqual(
    await readAllRows(t, { decoderPool: pool, projection: ["x", "id"] }),
    all.map((r) => ({ x: r["x"]!, id: r["id"]! })),
  );
  let n = 0;
  for await (const b of readBatches(t, { decoderPool: pool, limit: 7500 })) n += b.numRows;
  assert.equal(n, 7500);
  assert.deepEqual(await readAllRows(t, { decoderPool: pool, limit: 0 }), []);
});

test("scan - a bucket of large and many small files reads in sequence order with any read-ahead, limit and decoder", async () => {
  const t = await createTable(wh.path, "w.mixed", "id BIGINT, s STRING, x DOUBLE");
  const noise = (): string => randomBytes(30).toString("base64");
  // Per round: one file above the inline size (decoded in the pool), then ten small ones (decoded on this thread),
  // so the default read-ahead starts files of both kinds at once and they complete out of order.
  const sizes = [2500, 40, 40, 40, 40, 40, 40, 40, 40, 40, 40, 2500, 40, 40, 40, 40, 40, 40, 40, 40, 40, 40, 2500, 7];
  const total = sizes.reduce((a, b) => a + b, 0);
  const all: Row[] = Array.from({ length: total }, (_, i) => ({ id: BigInt(i), s: i % 11 === 0 ? null : noise(), x: i / 4 }));
  const batch = rowsToRecordBatch(t.schema.fields, all);
  const writer = new DataFileWriter(t, { pool, poolMinRows: 0 });
  const metas = [];
  let at = 0;
  for (const n of sizes) {
    metas.push(...(await writer.writeFiles("", 0, [batch.slice(at, at + n)], BigInt(at), () => undefined)));
    at += n;
  }
  assert.equal(metas.length, sizes.length);
  assert.equal(metas.filter((m) => m.fileSize >= 64 * 1024).length, 3, `three files for the pool: ${metas.map((m) => m.fileSize).join(", ")}`);
  // Committed newest first: the plan orders a bucket by sequence number, not by manifest order.
  await new FileStoreCommit(t).commit({ commitUser: "u", messages: [{ partition: serializeBinaryRow([], []), bucket: 0, totalBuckets: t.bucket, newFiles: [...metas].reverse(), deletedFiles: [] }] });
  assert.deepEqual(await readAllRows(t, { decoderPool: pool }), all);
  assert.deepEqual(await readAllRows(t, { decoderPool: pool, readAheadFiles: 1 }), all);
  assert.deepEqual(await readAllRows(t, { decoderPool: pool, inlineDecodeBelowBytes: 0 }), all);
  assert.deepEqual(await readAllRows(t, { decoderPool: null }), all);
  for (const limit of [1, 2539, 2541, 2900, total - 3]) {
    assert.deepEqual(await readAllRows(t, { decoderPool: pool, limit }), all.slice(0, limit), `limit ${limit}`);
  }
});

test("data files - a DOUBLE column holding NaN has null bounds in the file's value stats, on every encode path", async () => {
  const t = await createTable(wh.path, "w.nan", "id BIGINT, x DOUBLE");
  const types = t.schema.fields.map((f) => f.type);
  const rows: Row[] = [{ id: 1n, x: 1.5 }, { id: 2n, x: NaN }, { id: 3n, x: null }];
  for (const opts of [{}, { pool, poolMinRows: 0 }]) {
    const metas = await new DataFileWriter(t, opts).writeFiles("", 0, [rowsToRecordBatch(t.schema.fields, rows)], 1n, () => undefined);
    assert.equal(metas.length, 1);
    const m = metas[0];
    assert.deepEqual(Buffer.from(m!.valueStats.minValues), Buffer.from(serializeBinaryRow(types, [1n, null])));
    assert.deepEqual(Buffer.from(m!.valueStats.maxValues), Buffer.from(serializeBinaryRow(types, [3n, null])));
    assert.deepEqual(m!.valueStats.nullCounts, [0n, 1n]);
  }
  // encodeDataFile: the ingest bucket workers' path.
  const encoded = encodeDataFile(rowsToRecordBatch(t.schema.fields, rows), new DataFileWriter(t).encodeSpec);
  assert.deepEqual(Buffer.from(encoded.valueStats.maxValues), Buffer.from(serializeBinaryRow(types, [3n, null])));
});
