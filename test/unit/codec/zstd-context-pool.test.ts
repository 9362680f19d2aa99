/**
 * The native addon's zstd context pool (native/parquet/src/zstd_pool.rs): arrow-rs makes a compression and a
 * decompression context per column chunk, and each creation runs `cpuid`, which traps under a hypervisor. The pool
 * answers creations with contexts freed earlier, reset to their defaults. What must hold: writes and reads through
 * pooled contexts give the same bytes and rows as through fresh ones, and the pool is really in use (the linker's
 * --wrap took: a build without it would create a context for every column chunk). Skipped where the addon is not
 * built or the pool is not built in.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as arrow from "apache-arrow";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { encodeRequest, toIpcStream } from "../../../src/codec/parquet.ts";
import { loadParquetOps, type ParquetOps } from "../../../src/codec/parquet-ops.mjs";
import { parseColumnList } from "../../../src/format/data-types.ts";

type PoolStats = { created: number; reused: number; idle: number; idleBytes: number };
const loaded = await (async () => {
  try {
    const ops: ParquetOps = await loadParquetOps("native");
    const { zstdContextPool } = (await import("../../../src/codec/parquet-native-ops.mjs")) as { zstdContextPool: () => PoolStats | null };
    return zstdContextPool() === null ? "the zstd context pool is not built in on this platform" : { ops, pool: () => zstdContextPool()! };
  } catch (e) {
    return `the native Parquet addon is not built (${(e instanceof Error ? e.message : String(e)).split("\n")[0]})`;
  }
})();
const skip = typeof loaded === "string" ? loaded : false;

const TYPES = parseColumnList("id BIGINT, name STRING, score DOUBLE, flag BOOLEAN");
const rowsFrom = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: BigInt(from + i), name: i % 5 === 0 ? null : `name-${(from + i) % 313}`, score: (from + i) / 7, flag: i % 3 === 0 }));

test("zstd context pool - pooled contexts write and read the same bytes and rows as fresh ones, and creations are answered from the pool", { skip }, async () => {
  const { ops, pool } = loaded as { ops: ParquetOps; pool: () => PoolStats };
  const encode = (from: number, rowGroupRows: number) => {
    const { table, spec } = encodeRequest(rowsToRecordBatch(TYPES, rowsFrom(from, 3000)), { compression: "zstd", maxRowGroupSize: rowGroupRows });
    return ops.encodeIpcStream(toIpcStream(table), spec);
  };
  // Two different files first, so that later writes take contexts that compressed other data before.
  const first = encode(0, 1000);
  const other = encode(50_000, 700);
  const before = pool();
  const again = encode(0, 1000);
  const after = pool();
  assert.deepEqual(again, first, "a file written through reused contexts is byte for byte the first one");
  // 4 columns × 3 row groups, each chunk's codec taking one compression and one decompression context.
  assert.ok(after.reused - before.reused >= 12, `creations answered from the pool: ${after.reused - before.reused} (${JSON.stringify({ before, after })})`);
  assert.ok(after.idle > 0 && after.idle <= 64, `idle contexts are kept, within the bound: ${after.idle}`);
  assert.ok(after.idleBytes > 0 && after.idleBytes <= 16 << 20, `idle contexts' bytes within the bound (8 MiB of each kind): ${after.idleBytes}`);
  // Reading through reused decompression contexts gives the rows written, for both files.
  for (const [bytes, from] of [[first, 0], [other, 50_000]] as const) {
    const rows = recordBatchToRows(TYPES, arrow.tableFromIPC(await ops.decodeToIpcStream(bytes, {})));
    assert.deepEqual(rows, rowsFrom(from, 3000));
  }
});
