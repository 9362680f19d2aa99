/**
 * The two Parquet codecs side by side (a benchmark, not a test): CPU per million rows of each stage of a write and a
 * scan of the table-core bench's rows (bench/shape.ts), parquet-wasm against the native addon in the same process,
 * then the memory a process keeps after encode/decode-heavy work under each codec (one child process per codec: the
 * main thread and a 2-worker pool each encode and decode the million rows five times).
 *
 *   node --expose-gc --import tsx bench/parquet-codecs.bench.ts [rows]      (default 1000000)
 *
 * CPU is the process's (all threads) over one stage, median of 5; the stages run on the main thread. Without the
 * native addon built, only parquet-wasm is measured.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import * as arrow from "apache-arrow";
import { RecordBatchBuilder } from "../src/codec/columns/record-batch-builder.ts";
import { encodeRequest, readParquet, toIpcStream, writeParquet } from "../src/codec/parquet.ts";
import { loadParquetOps, parquetCodec, retainedMemoryBytes, type ParquetOps } from "../src/codec/parquet-ops.mjs";
import { ParquetEncoderPool } from "../src/codec/parquet-pool.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { Timestamp } from "../src/format/values.ts";
import { BENCH_COLUMNS, BENCH_EVENTS, benchUser } from "./shape.ts";

const memoryMode = process.argv.includes("--memory");
const ROWS = Number(process.argv.slice(2).find((a) => !a.startsWith("--")) ?? 1_000_000);
const perMillion = 1_000_000 / ROWS;

function benchBatch(): arrow.RecordBatch {
  const fields = parseColumnList(BENCH_COLUMNS).map((c, i) => ({ id: i, ...c }));
  const b = new RecordBatchBuilder(fields, ROWS);
  for (let i = 0; i < ROWS; i++) {
    b.appendRow({ id: BigInt(i), ts: new Timestamp(1700000000000 + i, 0), user: benchUser(i), event: BENCH_EVENTS[i % 10]!, amount: (i % 1000) * 0.25, qty: i % 100 });
  }
  return b.finish();
}

const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

/** Median CPU milliseconds (all threads) of `f`, per million rows. */
function cpuPerMillion(f: () => unknown, runs = 5): number {
  const xs: number[] = [];
  for (let r = 0; r < runs; r++) {
    gc();
    const c0 = process.cpuUsage();
    f();
    const c = process.cpuUsage(c0);
    xs.push(((c.user + c.system) / 1000) * perMillion);
  }
  return xs.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
}

async function stages(): Promise<void> {
  const batch = benchBatch();
  const ms = (x: number): string => `${x.toFixed(0).padStart(5)} ms`;
  const { table, spec } = encodeRequest(batch, {});
  const ipc = toIpcStream(table);
  console.log(`${ROWS} rows × ${batch.numCols} columns (bench shape), zstd, one row group; CPU per million rows, median of 5`);
  console.log(`  ${"layout (encodeRequest)".padEnd(34)}${ms(cpuPerMillion(() => encodeRequest(batch, {})))}`);
  console.log(`  ${"Arrow IPC hand-off (toIpcStream)".padEnd(34)}${ms(cpuPerMillion(() => toIpcStream(table)))}   (${(ipc.byteLength / 1e6).toFixed(1)} MB)`);
  const codecs: Array<[string, ParquetOps]> = [["wasm", await loadParquetOps("wasm")]];
  try {
    codecs.push(["native", await loadParquetOps("native")]);
  } catch (e) {
    console.log(`  (native addon not loadable: ${e instanceof Error ? e.message.split("\n")[0] : String(e)})`);
  }
  for (const [name, ops] of codecs) {
    const file = ops.encodeIpcStream(ipc, spec);
    const decoded = ops.decodeAllToIpcStream(file, 65536);
    console.log(
      `  ${name.padEnd(6)} encode ${ms(cpuPerMillion(() => ops.encodeIpcStream(ipc, spec)))}  decode ${ms(cpuPerMillion(() => ops.decodeAllToIpcStream(file, 65536)))}  ` +
        `IPC → Arrow table ${ms(cpuPerMillion(() => arrow.tableFromIPC(decoded)))}  file ${(file.byteLength / 1e6).toFixed(2)} MB`,
    );
  }
  for (const path of codecs.map(([name]) => name)) {
    const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--memory", String(ROWS)], {
      env: { ...process.env, NATSLAKE_PARQUET: path },
      encoding: "utf8",
    });
    console.log(child.status === 0 ? `  ${child.stdout.trim()}` : `  ${path}: memory run failed: ${child.stderr.trim().split("\n").slice(-3).join(" ")}`);
  }
}

/** Encodes and decodes the rows five times on the main thread and in a 2-worker pool; prints what the process keeps. */
async function memory(): Promise<void> {
  const batch = benchBatch();
  const pool = new ParquetEncoderPool({ size: 2 });
  const halves = [batch.slice(0, ROWS >> 1), batch.slice(ROWS >> 1)];
  for (let round = 0; round < 5; round++) {
    readParquet(writeParquet(batch));
    const files = await Promise.all(halves.map((h) => pool.encode(h)));
    await Promise.all(files.map((f) => pool.decode(f)));
  }
  gc();
  await new Promise((r) => setTimeout(r, 500));
  const mb = (n: number): string => `${(n / 1048576).toFixed(0)} MiB`;
  console.log(
    `${parquetCodec.path.padEnd(6)} after 5 rounds (main thread + 2 workers): RSS ${mb(process.memoryUsage().rss)}, peak RSS ${mb(process.resourceUsage().maxRSS * 1024)}, ` +
      `main thread's codec keeps ${mb(retainedMemoryBytes())}`,
  );
  await pool.close();
}

await (memoryMode ? memory() : stages());
