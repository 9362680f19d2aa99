/**
 * Primary-key write benchmark (issue 27, part of `npm run bench`): n upsert rows of the 6-column shape (bench/shape.ts
 * `benchUpsertRow`: 0.9·n keys, every tenth row an update of an earlier key) into a table with primary key `id` and 4
 * buckets, one commit, written in the same run by
 *   - Java Paimon 1.4.2's BatchTableWrite on one thread (test/compat/java/PaimonPk.java `bench-write`, full JIT): its
 *     warm-up run of the same n rows is excluded; timed: table creation + write of every row + prepareCommit + commit,
 *     the rows built as GenericRow[] before the clock starts;
 *   - natslake's BatchWriter.upsert, its warm-up run of the same rows excluded; timed: open + upsert(the row objects,
 *     which it validates and converts) + commit;
 *   - pypaimon's batch write of the same rows as one Arrow table (bench/py/pypaimon_pk_bench.py, which says what it
 *     times: write_arrow + prepare_commit + commit inside Python, after an untimed warm-up; interpreter start and the
 *     building of the Arrow table are not timed).
 * Each result is read back by natslake (merged, the key column): its rows and distinct keys must both be the 0.9·n
 * keys, or the benchmark fails — a write that lost or duplicated rows cannot look fast.
 * Prints wall time, rows/s and CPU time of each measured run (Java: the writing thread and the whole JVM; natslake:
 * the process, its Parquet workers included; pypaimon: the process) and the ratios natslake ÷ Java and natslake ÷
 * pypaimon (of rows/s; target natslake ≥ 1.0× Java), and records them (bench/figures.ts, section `pk_write`).
 * A benchmark, not a test: nothing here fails on a slow machine.
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
import { PYPAIMON_PK_BENCH_PY, runPython } from "../test/helpers/python.ts";
import { BENCH_COLUMNS, benchUpsertRow } from "./shape.ts";
import { recordFigures, targetAtLeast } from "./figures.ts";
import { scanKeys } from "./pk-tables.ts";

const ROWS = Number(process.argv[2] ?? 1_000_000);
const BUCKETS = 4;
const TARGET_VS_JAVA = 1.0;

if (process.argv.length > 3 || !Number.isSafeInteger(ROWS) || ROWS < 10) {
  process.stderr.write(`usage: bench/java-pk-write.bench.ts [rows]: rows must be an integer ≥ 10, got ${process.argv.slice(2).join(" ")}\n`);
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

interface PypaimonRun {
  rows: number;
  keys: number;
  warmup_rows: number;
  write_s: number;
  write_cpu_s: number;
  record_count: number | null;
  pypaimon: string;
}

/** natslake reads the writer's table back: every key once, none lost. */
async function checkReadBack(who: string, warehouse: string, keys: number): Promise<void> {
  const table = await new Catalog(warehouse).getTable(parseIdentifier("bench.measured"));
  const got = await scanKeys(table, "id", ["id"]);
  if (got.rows !== keys || got.keys !== keys) throw new Error(`${who}'s table reads back as ${got.rows} rows with ${got.keys} distinct keys; the rows hold ${keys} keys`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "natslake-bench-pk-"));
  try {
    const java = await javaPkBenchWrite(join(dir, "java"), { rows: ROWS, warmupRows: ROWS, buckets: BUCKETS });
    let rows: Array<Record<string, unknown>> | null = Array.from({ length: ROWS }, (_, i) => benchUpsertRow(i));
    await natslakeRun(join(dir, "natslake"), "bench.warmup", rows);
    const ours = await natslakeRun(join(dir, "natslake"), "bench.measured", rows);
    rows = null;
    const py = JSON.parse((await runPython(PYPAIMON_PK_BENCH_PY, [join(dir, "pypaimon"), String(ROWS), String(BUCKETS)], { timeoutMs: 1_200_000 })).trim().split("\n").pop()!) as PypaimonRun;
    if (py.keys !== java.keys) throw new Error(`pypaimon's rows hold ${py.keys} keys, Java's ${java.keys}: the generators differ`);
    await checkReadBack("Java", join(dir, "java"), java.keys);
    await checkReadBack("natslake", join(dir, "natslake"), java.keys);
    await checkReadBack("pypaimon", join(dir, "pypaimon"), java.keys);

    const javaRate = ROWS / (java.wallMs / 1000);
    const oursRate = ROWS / ours.wallS;
    const pyRate = ROWS / py.write_s;
    const vsJava = oursRate / javaRate;
    const vsPy = oursRate / pyRate;
    const rate = (r: number): string => `${Math.round(r).toLocaleString("en-US")} rows/s`;
    const verdict = vsJava >= TARGET_VS_JAVA ? "PASS" : "MISS";
    process.stdout.write(
      [
        `primary-key write, ${ROWS.toLocaleString("en-US")} upserts (${java.keys.toLocaleString("en-US")} keys, ${(ROWS - java.keys).toLocaleString("en-US")} updates) × 6 columns, ${BUCKETS} buckets, one commit`,
        `  Java Paimon ${java.jvm}, one thread   ${(java.wallMs / 1000).toFixed(3)} s  ${rate(javaRate)}  (after a warm-up run of ${java.warmupRows.toLocaleString("en-US")} rows that JIT-compiled the write path, excluded; cpu: writing thread ${(java.threadCpuMs / 1000).toFixed(3)} s, JVM ${(java.processCpuMs / 1000).toFixed(3)} s, gc ${(java.gcMs / 1000).toFixed(3)} s)`,
        `  natslake BatchWriter.upsert           ${ours.wallS.toFixed(3)} s  ${rate(oursRate)}  (after a warm-up run of the same rows, excluded; cpu: process ${ours.cpuS.toFixed(3)} s)`,
        `  pypaimon ${py.pypaimon} write_arrow         ${py.write_s.toFixed(3)} s  ${rate(pyRate)}  (after a warm-up run of ${py.warmup_rows.toLocaleString("en-US")} rows, excluded; Arrow table built before; cpu: process ${py.write_cpu_s.toFixed(3)} s)`,
        `  read back by natslake: each table ${java.keys.toLocaleString("en-US")} rows, ${java.keys.toLocaleString("en-US")} distinct keys`,
        `ratios (rows/s natslake ÷ rows/s other; ≥ 1.0 means natslake is faster)`,
        `  natslake / Java       ${vsJava.toFixed(2)}×   (target ≥ ${TARGET_VS_JAVA.toFixed(1)}) ${verdict}`,
        `  natslake / pypaimon   ${vsPy.toFixed(2)}×`,
        `  Java figures: ${JSON.stringify(java)}`,
      ].join("\n") + "\n",
    );
    const r3 = (x: number): number => Math.round(x * 1000) / 1000;
    recordFigures(
      "pk_write",
      {
        rows: ROWS,
        keys: java.keys,
        buckets: BUCKETS,
        java_rows_per_sec: Math.round(javaRate),
        java_wall_s: r3(java.wallMs / 1000),
        java_thread_cpu_s: r3(java.threadCpuMs / 1000),
        java_process_cpu_s: r3(java.processCpuMs / 1000),
        java_warmup_rows: java.warmupRows,
        natslake_rows_per_sec: Math.round(oursRate),
        natslake_wall_s: r3(ours.wallS),
        natslake_cpu_s: r3(ours.cpuS),
        pypaimon_rows_per_sec: Math.round(pyRate),
        pypaimon_wall_s: r3(py.write_s),
        pypaimon_cpu_s: r3(py.write_cpu_s),
        pypaimon_warmup_rows: py.warmup_rows,
        natslake_vs_java_ratio: r3(vsJava),
        natslake_vs_pypaimon_ratio: r3(vsPy),
        read_back_keys: java.keys,
      },
      [targetAtLeast("natslake_vs_java_ratio", r3(vsJava), TARGET_VS_JAVA)],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
