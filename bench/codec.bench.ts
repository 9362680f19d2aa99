/**
 * Codec micro-benchmark: the Arrow/Parquet layer alone (no table, no IO), on 1M rows of 6 columns (BIGINT id,
 * STRING name ~10–20 chars, INT, DOUBLE, TIMESTAMP(3), STRING with 10% nulls). Prints wall and CPU medians of 3 runs
 * for: rows → RecordBatch, column-wise appends (how a msgpack decoder would fill builders), stats, the IPC hand-off,
 * Parquet writes per codec and writer setting, the same in the worker pool (the batch split in one piece per
 * worker), Parquet reads (inline and in the pool), and Arrow → canonical rows. A benchmark, not a test.
 *
 *   node --import tsx bench/codec.bench.ts [rows]      (default 1000000; NATSLAKE_PARQUET=wasm|native picks the codec)
 */
import * as arrow from "apache-arrow";
import { recordBatchToRows } from "../src/codec/columns/batch-to-rows.ts";
import type {
  Int64ColumnBuilder,
  NumberColumnBuilder,
  TimestampColumnBuilder,
} from "../src/codec/columns/fixed-width-builders.ts";
import { RecordBatchBuilder, rowsToRecordBatch } from "../src/codec/columns/record-batch-builder.ts";
import type { Utf8ColumnBuilder } from "../src/codec/columns/variable-width-builders.ts";
import { readParquet, readParquetAsync, writeParquet } from "../src/codec/parquet.ts";
import { ParquetEncoderPool } from "../src/codec/parquet-pool.ts";
import { parquetCodec, retainedMemoryBytes } from "../src/codec/parquet-ops.mjs";
import { computeStats } from "../src/codec/stats.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { Timestamp, type Row } from "../src/format/values.ts";

const N = Number(process.argv[2] ?? 1_000_000);
const FIELDS = parseColumnList("id BIGINT NOT NULL, name STRING, qty INT, price DOUBLE, ts TIMESTAMP(3), note STRING");
const NAMES = ["alice", "bob", "charlie", "dmitri", "eve-marie", "françois", "grace"];
const names = Array.from({ length: N }, (_, i) => `${NAMES[i % 7]}-${i}`);
const notes = Array.from({ length: 977 }, (_, i) => `note number ${i} of the day`);
const rows: Row[] = names.map((name, i) => ({
  id: BigInt(i),
  name,
  qty: i % 1000,
  price: i * 0.25,
  ts: new Timestamp(1_700_000_000_000 + i, 0),
  note: i % 10 === 0 ? null : notes[i % 977]!,
}));

const lines: string[] = [];
async function measure<T>(label: string, f: () => T | Promise<T>, runs = 3): Promise<T> {
  const walls: number[] = [];
  const cpus: number[] = [];
  let out: T | undefined;
  for (let r = 0; r < runs; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    out = await f();
    walls.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpus.push((c.user + c.system) / 1000);
  }
  const median = (a: number[]): number => a.sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
  const wall = median(walls);
  lines.push(`${label.padEnd(46)} wall ${wall.toFixed(0).padStart(6)} ms  cpu ${median(cpus).toFixed(0).padStart(6)} ms  ${(N / wall / 1000).toFixed(2).padStart(6)} M rows/s`);
  return out!;
}

const batch = await measure("rows → RecordBatch (rowsToRecordBatch)", () => rowsToRecordBatch(FIELDS, rows));
await measure("column appends → RecordBatch (decoder style)", () => {
  const b = new RecordBatchBuilder(FIELDS, N);
  const [id, name, qty, price, ts, note] = b.columns as [Int64ColumnBuilder, Utf8ColumnBuilder, NumberColumnBuilder, NumberColumnBuilder, TimestampColumnBuilder, Utf8ColumnBuilder];
  for (let i = 0; i < N; i++) {
    id.appendNumber(i);
    name.appendString(names[i]!);
    qty.appendNumber(i % 1000);
    price.appendNumber(i * 0.25);
    ts.appendEpochMillis(1_700_000_000_000 + i);
    if (i % 10 === 0) note.appendNull();
    else note.appendString(notes[i % 977]!);
  }
  return b.finish();
});
await measure("computeStats", () => computeStats(FIELDS, batch));
await measure("IPC hand-off alone (tableToIPC)", () => arrow.tableToIPC(new arrow.Table(batch), "stream"));
for (const compression of ["zstd", "snappy", "none"]) {
  const bytes = await measure(`writeParquet ${compression}`, () => writeParquet(batch, { compression }));
  lines.push(`    ${compression} file: ${(bytes.length / 1e6).toFixed(1)} MB`);
}
for (const [label, opts] of [
  ["zstd, arrow-rs defaults (dictionary, page stats)", { dictionary: true, statistics: "page" }],
  ["zstd, dictionary, chunk stats", { dictionary: true }],
  ["zstd, no statistics", { statistics: false }],
  ["zstd, writer version 2.0", { writerVersion: "2.0" }],
] as const) {
  const bytes = await measure(`writeParquet ${label}`, () => writeParquet(batch, opts));
  lines.push(`    file: ${(bytes.length / 1e6).toFixed(1)} MB`);
}
const pool = new ParquetEncoderPool();
const pieces = Array.from({ length: pool.size }, (_, i) => batch.slice(Math.floor((i * N) / pool.size), Math.floor(((i + 1) * N) / pool.size)));
await Promise.all(pieces.map((p) => pool.encode(p))); // start the workers
const files = await measure(`pool.encode zstd, ${pool.size} workers × 1 piece`, () => Promise.all(pieces.map((p) => pool.encode(p))));
const file = writeParquet(batch);
const table = await measure("readParquet (→ Arrow table)", () => readParquet(file));
await measure(`pool.decode, ${pool.size} files in parallel`, () => Promise.all(files.map((f) => pool.decode(f))));
await measure("readParquetAsync, one column", () => readParquetAsync(file, { columns: ["qty"] }));
await pool.close();
await measure("recordBatchToRows (Arrow → canonical rows)", () => recordBatchToRows(FIELDS, table));

console.log(`${N} rows, ${FIELDS.length} columns, Parquet codec ${parquetCodec.path} (${parquetCodec.reason})`);
console.log(lines.join("\n"));
console.log(`codec memory kept ${(retainedMemoryBytes() / 1e6).toFixed(0)} MB (wasm's never shrinks; native keeps none), rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`);
