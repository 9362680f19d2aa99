/**
 * A process that uses a ParquetEncoderPool and then simply ends, without closing the pool: it must exit by itself
 * (idle workers are unref'ed). Prints {"rows", "workers"}. Run under `node --import tsx` or through
 * pool-child-register.mjs (tsx's register(), as bin/natslake.mjs starts the CLI).
 */
import { rowsToRecordBatch } from "../../src/codec/columns/record-batch-builder.ts";
import { ParquetEncoderPool } from "../../src/codec/parquet-pool.ts";
import { parseColumnList } from "../../src/format/data-types.ts";

const fields = parseColumnList("id BIGINT, s STRING");
const pool = new ParquetEncoderPool({ size: 2 });
const batches = [0, 1].map((p) => rowsToRecordBatch(fields, Array.from({ length: 1000 }, (_, i) => ({ id: BigInt(p * 1000 + i), s: `v${i}` }))));
const files = await Promise.all(batches.map((b) => pool.encode(b)));
const tables = await Promise.all(files.map((f) => pool.decode(f)));
process.stdout.write(JSON.stringify({ rows: tables.reduce((n, t) => n + t.numRows, 0), workers: pool.startedWorkers }) + "\n");
