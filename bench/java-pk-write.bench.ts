/**
 * Primary-key write benchmark against Java Paimon 1.4.2: n upsert rows of the 6-column shape (bench/shape.ts
 * `benchUpsertRow`: 0.9·n keys, every tenth row an update of an earlier key) into a table with primary key `id` and 4
 * buckets, one commit — by Java's BatchTableWrite on one thread (test/compat/java/PaimonPk.java `bench-write`, full
 * JIT, its warm-up run excluded) and by natslake's BatchWriter.upsert (its warm-up run excluded). Prints wall time,
 * rows/s and CPU time of each measured run (Java: the writing thread and the whole JVM; natslake: the process, its
 * Parquet workers included) and records them (bench/figures.ts, section `pk_write`). A benchmark, not a test.
 *
 *   node --expose-gc --import tsx bench/java-pk-write.bench.ts [rows]      (default 1000000)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseColumnList } from "../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { BatchWriter } from "../src/write/batch-writer.ts";
import { javaPkBenchWrite } from "../test/helpers/java-pk.ts";
import { BENCH_COLUMNS, benchUpsertRow } from "./shape.ts";
import { recordFigures } from "./figures.ts";

const ROWS = Number(process.argv[2] ?? 1_000_000);
const BUCKETS = 4;

if (!Number.isSafeInteger(ROWS) || ROWS < 10) {
  process.stderr.write(`rows must be an integer ≥ 10, got ${process.argv[2]}\n`);
  process.exit(2);
}

/** natslake's upsert of the rows into a new table; wall and process CPU seconds. */
async function natslakeRun(warehouse: string, name: string, rows: ReadonlyArray<Record<string, unknown>>): Promise<{ wallS: number; cpuS: number }> {
  const columns = parseColumnList(BENCH_COLUMNS); // the primary key `id` becomes NOT NULL
  const t = await new Catalog(warehouse).createTable(parseIdentifier(name), { columns, primaryKeys: ["id"], options: { bucket: String(BUCKETS) } });
  (globalThis as { gc?: () => void }).gc?.();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const w = await BatchWriter.open(t);
  await w.upsert(rows);
  await w.commit();
  const wallS = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { wallS, cpuS: (c.user + c.system) / 1e6 };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "natslake-bench-pk-"));
  try {
    const java = await javaPkBenchWrite(join(dir, "java"), { rows: ROWS, warmupRows: ROWS, buckets: BUCKETS });
    const rows = Array.from({ length: ROWS }, (_, i) => benchUpsertRow(i));
    await natslakeRun(join(dir, "natslake"), "bench.warmup", rows);
    const ours = await natslakeRun(join(dir, "natslake"), "bench.measured", rows);
    const rate = (s: number): string => `${Math.round(ROWS / s).toLocaleString("en-US")} rows/s`;
    process.stdout.write(
      [
        `primary-key write, ${ROWS.toLocaleString("en-US")} upserts (${java.keys.toLocaleString("en-US")} keys) × 6 columns, ${BUCKETS} buckets, one commit, after a warm-up run`,
        `  Java Paimon ${java.jvm}, one thread  ${(java.wallMs / 1000).toFixed(3)} s  ${rate(java.wallMs / 1000)}  (cpu: writing thread ${(java.threadCpuMs / 1000).toFixed(3)} s, JVM ${(java.processCpuMs / 1000).toFixed(3)} s, gc ${(java.gcMs / 1000).toFixed(3)} s)`,
        `  natslake BatchWriter.upsert          ${ours.wallS.toFixed(3)} s  ${rate(ours.wallS)}  (cpu: process ${ours.cpuS.toFixed(3)} s)`,
        `  Java figures: ${JSON.stringify(java)}`,
      ].join("\n") + "\n",
    );
    const r3 = (x: number): number => Math.round(x * 1000) / 1000;
    recordFigures("pk_write", {
      rows: ROWS,
      keys: java.keys,
      buckets: BUCKETS,
      java_rows_per_sec: Math.round(java.rowsPerSec),
      java_wall_s: r3(java.wallMs / 1000),
      java_thread_cpu_s: r3(java.threadCpuMs / 1000),
      java_process_cpu_s: r3(java.processCpuMs / 1000),
      natslake_rows_per_sec: Math.round(ROWS / ours.wallS),
      natslake_wall_s: r3(ours.wallS),
      natslake_cpu_s: r3(ours.cpuS),
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
