import { test } from "node:test";
import assert from "node:assert/strict";
import { ParquetEncoderPool } from "../../../src/codec/parquet-pool.ts";
import { warmUpParquet, warmUpParquetDecode } from "../../../src/codec/warm-up.ts";

test("warmUpParquet - encodes on this thread and on every worker of the pool, and reports what it did", async () => {
  const pool = new ParquetEncoderPool({ size: 2 });
  try {
    const r = await warmUpParquet(pool, { rounds: 3, rows: 256 });
    assert.equal(r.rounds, 3);
    assert.ok(r.ms >= 0);
    assert.equal(pool.startedWorkers, 2, "both workers started (and compiled parquet-wasm) during the warm-up");
    const none = await warmUpParquet(null, { rounds: 2, rows: 16 });
    assert.equal(none.rounds, 2);
  } finally {
    await pool.close();
  }
});

test("warmUpParquet - a closed pool makes it fail (the node logs and starts anyway)", async () => {
  const pool = new ParquetEncoderPool({ size: 1 });
  await pool.close();
  await assert.rejects(warmUpParquet(pool, { rounds: 1, rows: 8 }), /closed/);
});

test("setSharedParquetPoolDefaultSize - sets the shared pool's size before its first use, and only then", async () => {
  const { setSharedParquetPoolDefaultSize, sharedParquetPool } = await import("../../../src/codec/parquet-pool.ts");
  const before = process.env["NATSLAKE_PARQUET_WORKERS"];
  delete process.env["NATSLAKE_PARQUET_WORKERS"];
  try {
    assert.equal(setSharedParquetPoolDefaultSize(1), true);
    assert.equal(sharedParquetPool()?.size, 1);
    assert.equal(setSharedParquetPoolDefaultSize(3), false, "the pool exists: too late");
    assert.equal(sharedParquetPool()?.size, 1);
  } finally {
    if (before !== undefined) process.env["NATSLAKE_PARQUET_WORKERS"] = before;
  }
});

test("warmUpParquetDecode - decodes on every worker of the pool", async () => {
  const pool = new ParquetEncoderPool({ size: 2 });
  try {
    const r = await warmUpParquetDecode(pool, { rounds: 3, rows: 256 });
    assert.equal(r.rounds, 3);
    assert.equal(pool.startedWorkers, 2, "both workers started and decoded");
    assert.equal(pool.completed.decode, 6, "three decodes per worker");
  } finally {
    await pool.close();
  }
});
