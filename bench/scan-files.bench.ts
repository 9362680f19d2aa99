/**
 * Scan cost per data file (issue 10's scan target; a benchmark, not a test: it prints figures and a ratio).
 *
 * The same rows of the bench shape in two tables of 6 buckets, library only (no servers):
 *   maintained  written as the cluster writes them — commits of COMMIT_ROWS rows (10k rows/s in 250 ms commits, one
 *               ~12 KB file per bucket each; the older history in larger commits, see LIVE_COMMITS) — and compacted
 *               every COMPACT_EVERY commits with the size-ratio rule the writers' BucketCompactor uses
 *               (writerSizeRatio: `compaction.size-ratio` when set, else 100; `compaction.min.file-num`), the last TAIL_COMMITS commits left uncompacted:
 *               per bucket a few large files plus several small ones, the mix the maintenance bench's table ends with;
 *   batch       written by one BatchWriter in one commit (the maintenance bench's yardstick).
 * Full scans (`readBatches`, the shared decoder pool, plan included, as the maintenance bench times them) of the two
 * alternate SCAN_ROUNDS times after one warm-up scan of each; medians are reported with every run. Prints rows/s,
 * files, the ratio maintained / batch (issue 10's target: ≥ 0.8) and the extra time per extra file.
 *
 *   node --import tsx bench/scan-files.bench.ts [--rows N] [--rounds N] [--warehouse DIR]
 * Default 6,000,000 rows (the maintenance bench's 10-minute load: 1M rows per bucket, whose compacted files are the
 * large ones whose decoding the scan must spread over the workers), 5 rounds, a temporary warehouse. `--warehouse
 * DIR` keeps the tables there and reuses them on the next run with the same DIR (for profiling the scans without the
 * set-up: `node --cpu-prof …`).
 * Its figures go to the benchmark results file too (bench/figures.ts, section `scan_files`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CLUSTER_TABLE_DEFAULTS } from "../cluster/admin.ts";
import { compactTable } from "../src/maintenance/compact.ts";
import { planScan } from "../src/scan/plan.ts";
import { readBatches } from "../src/scan/read.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import type { Table } from "../src/table/table.ts";
import { BatchWriter } from "../src/write/batch-writer.ts";
import { BENCH_COLUMNS, benchInputRow } from "./shape.ts";
import { writerSizeRatio } from "../actors/bucket-compactor.ts";
import { recordFigures, targetAtLeast } from "./figures.ts";

const BUCKETS = 6;
/** 10k rows/s in 250 ms commits, as the maintenance bench's load. */
const COMMIT_ROWS = 2_500;
/** The cluster's writers plan a compaction every commit interval, at least 250 ms (defaultCompactionInterval). */
const COMPACT_EVERY = 1;
/** Commits after the last compaction: the fresh small files a live table always has. */
const TAIL_COMMITS = 6;
/**
 * The last this-many commits are of COMMIT_ROWS; the rows before them (the table's history, which compaction has
 * long folded into large files) are written in commits HISTORY_FACTOR times larger, only to keep the set-up short.
 */
const LIVE_COMMITS = 80;
const HISTORY_FACTOR = 10;
const TARGET_RATIO = 0.8;

const { values: flags } = parseArgs({
  options: { rows: { type: "string", default: "6000000" }, rounds: { type: "string", default: "5" }, warehouse: { type: "string" } },
});
const ROWS = Number(flags.rows);
const SCAN_ROUNDS = Number(flags.rounds);
if (!(ROWS >= COMMIT_ROWS * (TAIL_COMMITS + 1))) throw new Error(`--rows must be at least ${COMMIT_ROWS * (TAIL_COMMITS + 1)}, got ${flags.rows}`);
if (!(SCAN_ROUNDS >= 1 && SCAN_ROUNDS <= 50)) throw new Error(`--rounds must be in 1..50, got ${flags.rounds}`);

const say = (line: string): void => void process.stdout.write(line + "\n");
const fmt = (n: number): string => Math.round(n).toLocaleString("en-US");
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rowsOf = (from: number, to: number): Array<Record<string, unknown>> => Array.from({ length: to - from }, (_, k) => benchInputRow(from + k));

async function newTable(catalog: Catalog, name: string): Promise<Table> {
  return catalog.createTable(parseIdentifier(`bench.${name}`), {
    columns: parseColumnList(BENCH_COLUMNS),
    options: { ...CLUSTER_TABLE_DEFAULTS, bucket: String(BUCKETS), "bucket-key": "id" },
  });
}

async function commitRows(table: Table, from: number, to: number): Promise<void> {
  const w = await BatchWriter.open(table);
  await w.write(rowsOf(from, to));
  await w.commit();
}

/** The maintained table: small commits, compacted every COMPACT_EVERY commits by the writers' size-ratio rule. */
async function writeMaintained(table: Table): Promise<{ commits: number; compactions: number }> {
  const rules = { sizeRatio: writerSizeRatio(table) };
  // Commit boundaries: large history commits, then LIVE_COMMITS of the cluster's size.
  const liveFrom = Math.max(0, ROWS - LIVE_COMMITS * COMMIT_ROWS);
  const bounds: number[] = [];
  for (let at = 0; at < liveFrom; at += COMMIT_ROWS * HISTORY_FACTOR) bounds.push(at);
  for (let at = liveFrom; at < ROWS; at += COMMIT_ROWS) bounds.push(at);
  bounds.push(ROWS);
  const commits = bounds.length - 1;
  let compactions = 0;
  for (let c = 0; c < commits; c++) {
    await commitRows(table, bounds[c]!, bounds[c + 1]!);
    if ((c + 1) % COMPACT_EVERY === 0 && c < commits - TAIL_COMMITS) {
      const s = await compactTable(table, { rules });
      if (s.snapshotId !== null) compactions++;
    }
  }
  return { commits, compactions };
}

async function liveFiles(table: Table): Promise<{ files: number; perBucket: number[]; smallPerBucket: number[]; bytes: number }> {
  const plan = await planScan(table);
  const perBucket = new Array<number>(BUCKETS).fill(0);
  const smallPerBucket = new Array<number>(BUCKETS).fill(0);
  let bytes = 0;
  for (const s of plan.splits) {
    perBucket[s.bucket] = s.files.length;
    smallPerBucket[s.bucket] = s.files.filter((f) => f.fileSize < 64 * 1024).length;
    bytes += s.files.reduce((n, f) => n + f.fileSize, 0);
  }
  return { files: perBucket.reduce((a, b) => a + b, 0), perBucket, smallPerBucket, bytes };
}

/** One full scan as the maintenance bench times it (plan + read of every batch); checks the row count. */
async function scanSeconds(table: Table): Promise<number> {
  const t0 = performance.now();
  let rows = 0;
  for await (const b of readBatches(table)) rows += b.numRows;
  const seconds = (performance.now() - t0) / 1000;
  if (rows !== ROWS) throw new Error(`a full scan of ${table.name} read ${rows} rows, expected ${ROWS}`);
  return seconds;
}

/** Both tables, written now, or as a previous run with the same `--warehouse` left them. */
async function tables(catalog: Catalog): Promise<{ maintained: Table; batch: Table }> {
  if ((await catalog.listTables("bench").catch((): string[] => [])).includes("batch")) {
    const maintained = await catalog.getTable(parseIdentifier("bench.maintained"));
    const batch = await catalog.getTable(parseIdentifier("bench.batch"));
    say(`reusing the tables in ${flags.warehouse}`);
    return { maintained, batch };
  }
  const maintained = await newTable(catalog, "maintained");
  const batch = await newTable(catalog, "batch");
  let t0 = performance.now();
  const w = await writeMaintained(maintained);
  say(`maintained: ${fmt(ROWS)} rows in ${w.commits} commits (the last ${LIVE_COMMITS} of ${fmt(COMMIT_ROWS)} rows, those before ${HISTORY_FACTOR}× larger), ${w.compactions} compactions (every ${COMPACT_EVERY} commits, the last ${TAIL_COMMITS} commits left), ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  t0 = performance.now();
  const bw = await BatchWriter.open(batch);
  for (let from = 0; from < ROWS; from += 100_000) await bw.write(rowsOf(from, Math.min(ROWS, from + 100_000)));
  await bw.commit();
  say(`batch: the same rows by one batch write, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { maintained, batch };
}

const dir = flags.warehouse ?? mkdtempSync(join(tmpdir(), "natslake-scan-files-"));
try {
  const { maintained, batch } = await tables(new Catalog(flags.warehouse ?? join(dir, "wh")));

  const mFiles = await liveFiles(maintained);
  const bFiles = await liveFiles(batch);
  say(`  maintained: ${mFiles.files} files (${(mFiles.bytes / 1e6).toFixed(1)} MB), per bucket ${mFiles.perBucket.join(" ")}, of them < 64 KiB ${mFiles.smallPerBucket.join(" ")}`);
  say(`  batch:      ${bFiles.files} files (${(bFiles.bytes / 1e6).toFixed(1)} MB), per bucket ${bFiles.perBucket.join(" ")}`);

  // Warm-up (JIT, pool workers, wasm tiering, page cache), then alternate so drift hits both alike.
  await scanSeconds(maintained);
  await scanSeconds(batch);
  const mRuns: number[] = [];
  const bRuns: number[] = [];
  for (let r = 0; r < SCAN_ROUNDS; r++) {
    mRuns.push(await scanSeconds(maintained));
    bRuns.push(await scanSeconds(batch));
  }
  const mSec = median(mRuns);
  const bSec = median(bRuns);
  const ratio = bSec / mSec;
  const extraFiles = mFiles.files - bFiles.files;
  const msPerExtraFile = extraFiles > 0 ? ((mSec - bSec) * 1000) / extraFiles : null;
  const runs = (xs: number[]): string => xs.map((x) => (x * 1000).toFixed(0)).join(" ");
  say(`full scans, ${SCAN_ROUNDS} alternations (ms per run):`);
  say(`  maintained: median ${(mSec * 1000).toFixed(0)} ms = ${fmt(ROWS / mSec)} rows/s (runs ${runs(mRuns)})`);
  say(`  batch:      median ${(bSec * 1000).toFixed(0)} ms = ${fmt(ROWS / bSec)} rows/s (runs ${runs(bRuns)})`);
  say(`  extra time per extra file: ${msPerExtraFile === null ? "n/a" : `${msPerExtraFile.toFixed(2)} ms`} (${extraFiles} extra files)`);
  const met = ratio >= TARGET_RATIO;
  say(`  ${met ? "✔" : "✘"} maintained / batch rows/s ≥ ${TARGET_RATIO}: ${ratio.toFixed(2)}×`);

  const r3 = (x: number): number => Math.round(x * 1000) / 1000;
  recordFigures(
    "scan_files",
    {
      rows: ROWS,
      maintained_files: mFiles.files,
      batch_files: bFiles.files,
      maintained_rows_per_sec: Math.round(ROWS / mSec),
      batch_rows_per_sec: Math.round(ROWS / bSec),
      ms_per_extra_file: msPerExtraFile === null ? null : r3(msPerExtraFile),
      maintained_runs_ms: runs(mRuns),
      batch_runs_ms: runs(bRuns),
    },
    [targetAtLeast("scan_maintained_vs_batch_ratio", r3(ratio), TARGET_RATIO)],
  );
} finally {
  if (flags.warehouse === undefined) rmSync(dir, { recursive: true, force: true });
}
