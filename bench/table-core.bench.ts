/**
 * Table-core benchmark (`npm run bench`): writes 1M rows of the 6-column shape (bench/py/pypaimon_bench.py documents
 * it) into an unaware-bucket append table, from Arrow and from row objects, then scans them back; runs pypaimon on
 * the same data in the same run, and pyarrow.parquet.write_table as the native limit. Prints rows/s and ratios.
 * Medians of 3 runs. A benchmark, not a test: nothing here fails on a slow machine.
 *
 * Besides wall time, each line shows the process CPU time of the step (all threads: natslake's Parquet workers,
 * pyarrow's thread pool): on a shared machine wall time swings with the load, CPU time much less. natslake encodes
 * and decodes Parquet in worker threads (ParquetEncoderPool, one per core), so its wall time can be below its CPU
 * time; the ratios are of wall time, as the targets are.
 *
 *   node --expose-gc --import tsx bench/table-core.bench.ts [rows]      (default 1000000)
 * Its figures go to the benchmark results file too (bench/figures.ts, section `table_core`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RecordBatchBuilder } from "../src/codec/columns/record-batch-builder.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { Timestamp, type Row } from "../src/format/values.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { BatchWriter } from "../src/write/batch-writer.ts";
import { readBatches } from "../src/scan/read.ts";
import { PYPAIMON_BENCH_PY, runPython } from "../test/helpers/python.ts";
import { BENCH_COLUMNS, BENCH_EVENTS, benchInputRow, benchUser } from "./shape.ts";
import { recordFigures, targetAtLeast, targetAtMost } from "./figures.ts";
import { parquetCodec } from "../src/codec/parquet-ops.mjs";

const ROWS = Number(process.argv[2] ?? 1_000_000);
const RUNS = 3;
const COLUMNS = BENCH_COLUMNS;

function makeRows(n: number): Row[] {
  const out: Row[] = new Array<Row>(n);
  for (let i = 0; i < n; i++) {
    out[i] = { id: BigInt(i), ts: new Timestamp(1700000000000 + i, 0), user: benchUser(i), event: BENCH_EVENTS[i % 10]!, amount: (i % 1000) * 0.25, qty: i % 100 };
  }
  return out;
}

/** Rows as a service would hand them over: plain JSON-like objects, validated by the writer. */
function makeObjects(n: number): Array<Record<string, unknown>> {
  const out = new Array<Record<string, unknown>>(n);
  for (let i = 0; i < n; i++) out[i] = benchInputRow(i);
  return out;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rate = (s: number): string => `${Math.round(ROWS / s).toLocaleString("en-US")} rows/s`;

async function main(): Promise<void> {
  const fields = parseColumnList(COLUMNS).map((c, i) => ({ id: i, ...c }));
  const b = new RecordBatchBuilder(fields, ROWS);
  for (const r of makeRows(ROWS)) b.appendRow(r);
  const batch = b.finish();
  // Each timed step starts from a collected heap (`--expose-gc`): the bench measures the operation, not the
  // collection of the previous step's garbage or of the test data (the row objects live only for their own step).
  const settle = (): void => (globalThis as { gc?: () => void }).gc?.();

  const arrowWrite: number[] = [];
  const objectWrite: number[] = [];
  const scan: number[] = [];
  const cpu = { arrowWrite: [] as number[], objectWrite: [] as number[], scan: [] as number[] };
  const cpuSince = (c0: NodeJS.CpuUsage): number => {
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1e6;
  };
  // Run 0 warms up (worker threads start, wasm compiles, code gets optimised) and is not counted.
  for (let run = 0; run <= RUNS; run++) {
    if (run === 1) for (const xs of [arrowWrite, objectWrite, scan, cpu.arrowWrite, cpu.objectWrite, cpu.scan]) xs.length = 0;
    const dir = mkdtempSync(join(tmpdir(), "natslake-bench-"));
    try {
      const catalog = new Catalog(dir);
      const t1 = await catalog.createTable(parseIdentifier("bench.arrow"), { columns: parseColumnList(COLUMNS), options: { bucket: "-1" } });
      settle();
      let c0 = process.cpuUsage();
      let t0 = performance.now();
      const w1 = await BatchWriter.open(t1);
      await w1.writeArrow(batch);
      await w1.commit();
      arrowWrite.push((performance.now() - t0) / 1000);
      cpu.arrowWrite.push(cpuSince(c0));

      const t2 = await catalog.createTable(parseIdentifier("bench.objects"), { columns: parseColumnList(COLUMNS), options: { bucket: "-1" } });
      let objects: Array<Record<string, unknown>> | null = makeObjects(ROWS);
      settle();
      c0 = process.cpuUsage();
      t0 = performance.now();
      const w2 = await BatchWriter.open(t2);
      await w2.write(objects);
      await w2.commit();
      objectWrite.push((performance.now() - t0) / 1000);
      cpu.objectWrite.push(cpuSince(c0));
      objects = null;
      settle();

      c0 = process.cpuUsage();
      t0 = performance.now();
      let n = 0;
      for await (const rb of readBatches(await catalog.getTable(parseIdentifier("bench.arrow")))) n += rb.numRows;
      scan.push((performance.now() - t0) / 1000);
      cpu.scan.push(cpuSince(c0));
      if (n !== ROWS) throw new Error(`scan returned ${n} rows, expected ${ROWS}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  const pyDir = mkdtempSync(join(tmpdir(), "natslake-bench-py-"));
  let py: {
    pypaimon_write_s: number;
    pypaimon_scan_s: number;
    pyarrow_write_s: number;
    pypaimon_write_cpu_s: number;
    pypaimon_scan_cpu_s: number;
    pyarrow_write_cpu_s: number;
  };
  try {
    py = JSON.parse((await runPython(PYPAIMON_BENCH_PY, [pyDir, String(ROWS)], { timeoutMs: 600_000 })).trim().split("\n").pop()!) as typeof py;
  } finally {
    rmSync(pyDir, { recursive: true, force: true });
  }

  const aw = median(arrowWrite);
  const ow = median(objectWrite);
  const sc = median(scan);
  const c = (xs: number[]): string => `cpu ${median(xs).toFixed(3)} s`;
  const pc = (x: number): string => `cpu ${x.toFixed(3)} s`;
  const lines = [
    `table core, ${ROWS.toLocaleString("en-US")} rows × 6 columns, unaware-bucket append table, parquet + zstd, median of ${RUNS} after a warm-up run`,
    `  natslake write from Arrow    ${aw.toFixed(3)} s  ${rate(aw)}  (${c(cpu.arrowWrite)})`,
    `  natslake write from objects  ${ow.toFixed(3)} s  ${rate(ow)}  (${c(cpu.objectWrite)})`,
    `  natslake scan                ${sc.toFixed(3)} s  ${rate(sc)}  (${c(cpu.scan)})`,
    `  pypaimon write (Arrow)       ${py.pypaimon_write_s.toFixed(3)} s  ${rate(py.pypaimon_write_s)}  (${pc(py.pypaimon_write_cpu_s)})`,
    `  pypaimon scan                ${py.pypaimon_scan_s.toFixed(3)} s  ${rate(py.pypaimon_scan_s)}  (${pc(py.pypaimon_scan_cpu_s)})`,
    `  pyarrow write_table (limit)  ${py.pyarrow_write_s.toFixed(3)} s  ${rate(py.pyarrow_write_s)}  (${pc(py.pyarrow_write_cpu_s)})`,
    `ratios (rows/s natslake ÷ rows/s other; ≥ 1.0 means natslake is faster)`,
    `  write from Arrow / pypaimon     ${(py.pypaimon_write_s / aw).toFixed(2)}×   (target ≥ 1.2)`,
    `  write from objects / pypaimon   ${(py.pypaimon_write_s / ow).toFixed(2)}×`,
    `  scan / pypaimon                 ${(py.pypaimon_scan_s / sc).toFixed(2)}×   (target ≥ 1.2)`,
    `  write from Arrow / pyarrow      ${(py.pyarrow_write_s / aw).toFixed(2)}×`,
    `CPU per row (natslake ÷ pypaimon; ≤ 1.0 means natslake spends less)`,
    `  write from Arrow                ${(median(cpu.arrowWrite) / py.pypaimon_write_cpu_s).toFixed(2)}×   (target ≤ 1.0)`,
    `  scan                            ${(median(cpu.scan) / py.pypaimon_scan_cpu_s).toFixed(2)}×   (target ≤ 1.0)`,
    `Parquet codec: ${parquetCodec.path} (${parquetCodec.reason})`,
    `  all runs (s): Arrow write ${arrowWrite.map((x) => x.toFixed(3)).join(" ")}; objects ${objectWrite.map((x) => x.toFixed(3)).join(" ")}; scan ${scan.map((x) => x.toFixed(3)).join(" ")}`,
  ];
  process.stdout.write(lines.join("\n") + "\n");
  const rps = (secs: number): number => Math.round(ROWS / secs);
  const r3 = (x: number): number => Math.round(x * 1000) / 1000;
  const arrowVsPypaimon = r3(py.pypaimon_write_s / aw);
  const scanVsPypaimon = r3(py.pypaimon_scan_s / sc);
  const writeCpuVsPypaimon = r3(median(cpu.arrowWrite) / py.pypaimon_write_cpu_s);
  const scanCpuVsPypaimon = r3(median(cpu.scan) / py.pypaimon_scan_cpu_s);
  recordFigures(
    "table_core",
    {
      rows: ROWS,
      runs: RUNS,
      arrow_write_rows_per_sec: rps(aw),
      arrow_write_cpu_s: r3(median(cpu.arrowWrite)),
      object_write_rows_per_sec: rps(ow),
      object_write_cpu_s: r3(median(cpu.objectWrite)),
      scan_rows_per_sec: rps(sc),
      scan_cpu_s: r3(median(cpu.scan)),
      pypaimon_write_rows_per_sec: rps(py.pypaimon_write_s),
      pypaimon_write_cpu_s: r3(py.pypaimon_write_cpu_s),
      pypaimon_scan_rows_per_sec: rps(py.pypaimon_scan_s),
      pypaimon_scan_cpu_s: r3(py.pypaimon_scan_cpu_s),
      pyarrow_write_rows_per_sec: rps(py.pyarrow_write_s),
      pyarrow_write_cpu_s: r3(py.pyarrow_write_cpu_s),
      arrow_write_vs_pypaimon_ratio: arrowVsPypaimon,
      object_write_vs_pypaimon_ratio: r3(py.pypaimon_write_s / ow),
      scan_vs_pypaimon_ratio: scanVsPypaimon,
      arrow_write_vs_pyarrow_ratio: r3(py.pyarrow_write_s / aw),
      arrow_write_cpu_vs_pypaimon_ratio: writeCpuVsPypaimon,
      scan_cpu_vs_pypaimon_ratio: scanCpuVsPypaimon,
      parquet_codec: parquetCodec.path,
    },
    // Issue 28's targets: rows/s ≥ 1.2× pypaimon's, CPU per row ≤ 1.0× pypaimon's.
    [
      targetAtLeast("arrow_write_vs_pypaimon_ratio", arrowVsPypaimon, 1.2),
      targetAtLeast("scan_vs_pypaimon_ratio", scanVsPypaimon, 1.2),
      targetAtMost("arrow_write_cpu_vs_pypaimon_ratio", writeCpuVsPypaimon, 1.0),
      targetAtMost("scan_cpu_vs_pypaimon_ratio", scanCpuVsPypaimon, 1.0),
    ],
  );
}

await main();
