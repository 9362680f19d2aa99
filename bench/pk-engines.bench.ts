/**
 * Merge-engine benchmark (issue 30, part of `npm run bench`, section `pk_engines`): per merge engine — deduplicate,
 * partial-update, aggregation (`amount` sum, `qty` max, the other columns the default last_non_null_value) and
 * first-row — natslake against Java Paimon 1.4.2 in the same run, on tables of the bench shape (bench/shape.ts) with
 * primary key `id` and 4 buckets.
 *
 * Write: n upserts (`benchSparseUpsertRow`: 0.9·n keys, every tenth row an update of an earlier key that leaves
 * `event` and `qty` null), one commit, by Java's BatchTableWrite on one thread (PaimonPk.java `bench-write`, the same
 * table options; its warm-up run of the same rows excluded, so the JIT has compiled the path) and by natslake's
 * BatchWriter.upsert (its warm-up run of the same rows excluded). first-row: both writes end with the rows readable —
 * Java's batch write compacts level 0 up at prepareCommit (a first-row table is a lookup table), natslake's timed run
 * adds the library's compaction of the table (`compactPrimaryKeyTable`, one pick per bucket), since Paimon's readers
 * skip a first-row table's level 0. natslake reads both tables back: the same rows, 0.9·n keys each, and the same
 * checksum of the merged values (bench/read-checksum.ts), or the benchmark fails.
 *
 * Scan: per engine a table of k keys with five sorted runs in every bucket, written by natslake once, read by both.
 * deduplicate, partial-update, aggregation: five commits, never compacted, each bucket's five level-0 files its five
 * runs — the first commit every key, each later one a fifth of the keys (k ≡ v-1 mod 5) with new values and
 * `event`, `qty` null, so a key merges up to two versions and every run spans the bucket's key range. first-row: its
 * level 0 is invisible to batch reads, so its five commits (each a disjoint fifth of the keys, k ≡ v mod 5) are
 * committed at levels 1..5 — what a first-row table looks like after its compactions: each key once above level 0.
 * The library checks five sorted runs per bucket. Timed: full scans (plan + read of every row, all columns), natslake's
 * `readBatches` (merge-on-read; a warm-up scan excluded) and Java's batch read (PaimonPk.java `bench-read`: warm-up
 * reads excluded, then the measured ones counting rows). Both reads' rows and checksums must agree.
 *
 * Prints rows/s, CPU seconds (natslake: the process, Parquet workers included; Java: the JVM and the reading or
 * writing thread) and natslake ÷ Java (target ≥ 1.0) per engine, with the load average; records them
 * (bench/figures.ts). A benchmark, not a test: nothing here fails on a slow machine.
 *
 *   node --expose-gc --import tsx bench/pk-engines.bench.ts [--rows N] [--keys K] [--reads R]
 * Defaults: 500,000 upserts, 500,000 scan keys, 5 measured scans; `--rows 1000000 --keys 1000000` for the 1M form.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sharedParquetPool } from "../src/codec/parquet-pool.ts";
import { FileStoreCommit } from "../src/commit/file-store-commit.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { compactPrimaryKeyTable } from "../src/maintenance/compact-pk.ts";
import { readBatches } from "../src/scan/read.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import type { Table } from "../src/table/table.ts";
import { BatchWriter } from "../src/write/batch-writer.ts";
import { TableWrite } from "../src/write/table-write.ts";
import { javaPkBenchRead, javaPkBenchWrites, type JavaBenchFigures, type JavaReadFigures, type ReadChecksum } from "../test/helpers/java-pk.ts";
import { recordFigures, targetAtLeast, type Figures, type Target } from "./figures.ts";
import { bucketShapes, scanKeys } from "./pk-tables.ts";
import { checksumDifferences, ReadChecksummer } from "./read-checksum.ts";
import { BENCH_COLUMNS, benchInputRow, benchSparseUpsertRow } from "./shape.ts";

const BUCKETS = 4;
const RUNS = 5;
const TARGET_VS_JAVA = 1.0;
const JAVA_WARMUP_READS = 3;

interface Engine {
  name: "deduplicate" | "partial-update" | "aggregation" | "first-row";
  /** Figure-name prefix and table name. */
  id: string;
  options: Record<string, string>;
}

const ENGINES: readonly Engine[] = [
  { name: "deduplicate", id: "dedup", options: {} },
  { name: "partial-update", id: "partial", options: { "merge-engine": "partial-update" } },
  { name: "aggregation", id: "agg", options: { "merge-engine": "aggregation", "fields.amount.aggregate-function": "sum", "fields.qty.aggregate-function": "max" } },
  { name: "first-row", id: "first_row", options: { "merge-engine": "first-row" } },
];

const usage = (why: string): never => {
  process.stderr.write(`bench/pk-engines.bench.ts [--rows N] [--keys K] [--reads R]: ${why}\n`);
  process.exit(2);
};
let parsed: ReturnType<typeof parseFlags>;
function parseFlags() {
  return parseArgs({ options: { rows: { type: "string", default: "500000" }, keys: { type: "string", default: "500000" }, reads: { type: "string", default: "5" } }, strict: true });
}
try {
  parsed = parseFlags();
} catch (e) {
  usage((e as Error).message);
}
const ROWS = Number(parsed!.values.rows);
const KEYS = Number(parsed!.values.keys);
const READS = Number(parsed!.values.reads);
if (!Number.isSafeInteger(ROWS) || ROWS < 1000 || ROWS > 20_000_000) usage(`--rows must be an integer in 1000..20000000, got ${parsed!.values.rows}`);
if (!Number.isSafeInteger(KEYS) || KEYS < 1000 || KEYS > 20_000_000) usage(`--keys must be an integer in 1000..20000000, got ${parsed!.values.keys}`);
if (!Number.isSafeInteger(READS) || READS < 1 || READS > 100) usage(`--reads must be an integer in 1..100, got ${parsed!.values.reads}`);

const say = (line: string): void => void process.stdout.write(line + "\n");
const fmt = (n: number): string => Math.round(n).toLocaleString("en-US");
const load = (): string => loadavg().map((l) => l.toFixed(1)).join(" ");
const r3 = (x: number): number => Math.round(x * 1000) / 1000;
const cpuSeconds = (c: NodeJS.CpuUsage): number => (c.user + c.system) / 1e6;
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

async function createTable(catalog: Catalog, name: string, engine: Engine): Promise<Table> {
  return catalog.createTable(parseIdentifier(name), { columns: parseColumnList(BENCH_COLUMNS), primaryKeys: ["id"], options: { bucket: String(BUCKETS), ...engine.options } });
}

/** natslake's timed write of `rows` into a new table `name` (first-row: and the compaction that makes them readable). */
async function natslakeWrite(catalog: Catalog, name: string, engine: Engine, rows: ReadonlyArray<Record<string, unknown>>): Promise<{ wallS: number; cpuS: number }> {
  const table = await createTable(catalog, name, engine);
  gc();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const w = await BatchWriter.open(table);
  await w.upsert(rows);
  await w.commit();
  if (engine.name === "first-row") await compactPrimaryKeyTable(await catalog.getTable(parseIdentifier(name)));
  const wallS = (performance.now() - t0) / 1000;
  return { wallS, cpuS: cpuSeconds(process.cpuUsage(c0)) };
}

/** natslake's read of a whole table: its rows, distinct keys and checksum. */
async function readBack(table: Table): Promise<{ rows: number; keys: number; checksum: ReadChecksum }> {
  const sum = new ReadChecksummer(table.schema.fields);
  for await (const batch of readBatches(table)) sum.add(batch);
  const { keys } = await scanKeys(table, "id", ["id"]);
  return { rows: sum.rows, keys, checksum: sum.checksum };
}

interface WriteResult {
  engine: Engine;
  java: JavaBenchFigures;
  natslake: { wallS: number; cpuS: number };
  load: string;
}

async function writePart(dir: string): Promise<WriteResult[]> {
  const javaDir = join(dir, "java");
  const runs = ENGINES.map((e) => ({ rows: ROWS, warmupRows: ROWS, buckets: BUCKETS, options: e.options, table: `bench.${e.id}`, sparseUpdates: true }));
  // One more run first, not measured: the JIT of the write path the engines share is warm before the first engine's
  // own warm-up (else the first engine measured pays for compilation the later ones do not).
  const [, ...java] = await javaPkBenchWrites(javaDir, [{ ...runs[0]!, table: "bench.jit" }, ...runs]);
  const javaLoad = load();
  const catalog = new Catalog(join(dir, "natslake"));
  const out: WriteResult[] = [];
  let rows: Array<Record<string, unknown>> | null = Array.from({ length: ROWS }, (_, i) => benchSparseUpsertRow(i));
  for (const [i, engine] of ENGINES.entries()) {
    await natslakeWrite(catalog, `warmup.${engine.id}`, engine, rows);
    const natslake = await natslakeWrite(catalog, `bench.${engine.id}`, engine, rows);
    out.push({ engine, java: java[i]!, natslake, load: `${load()} (Java's run ended at ${javaLoad})` });
  }
  rows = null;
  for (const { engine, java: j } of out) {
    const ours = await readBack(await catalog.getTable(parseIdentifier(`bench.${engine.id}`)));
    const theirs = await readBack(await new Catalog(javaDir).getTable(parseIdentifier(`bench.${engine.id}`)));
    if (ours.rows !== j.keys || ours.keys !== j.keys) throw new Error(`${engine.name}: natslake's table reads back as ${ours.rows} rows with ${ours.keys} keys; the rows hold ${j.keys} keys`);
    if (theirs.rows !== j.keys || theirs.keys !== j.keys) throw new Error(`${engine.name}: Java's table reads back as ${theirs.rows} rows with ${theirs.keys} keys; the rows hold ${j.keys} keys`);
    const diff = checksumDifferences(ours.checksum, theirs.checksum);
    if (diff.length > 0) throw new Error(`${engine.name}: natslake's and Java's tables hold different values — ${diff.join("; ")}`);
  }
  return out;
}

/** The five commits of an engine's scan table (see the file comment); the rows stored. */
async function writeScanTable(table: Table, engine: Engine): Promise<number> {
  const firstRow = engine.name === "first-row";
  let stored = 0;
  for (let v = 0; v < RUNS; v++) {
    const rows: Array<Record<string, unknown>> = [];
    if (firstRow) for (let k = v; k < KEYS; k += RUNS) rows.push(benchInputRow(k));
    else if (v === 0) for (let k = 0; k < KEYS; k++) rows.push(benchInputRow(k));
    else for (let k = v - 1; k < KEYS; k += RUNS) rows.push({ ...benchInputRow(v * KEYS + k), id: k, event: null, qty: null });
    stored += rows.length;
    const write = new TableWrite(table);
    write.upsert(rows);
    const messages = await write.prepareCommit();
    // first-row: run v at level v + 1 (each key once above level 0, as its compactions leave it); else level 0.
    const placed = firstRow ? messages.map((m) => ({ ...m, newFiles: m.newFiles.map((f) => ({ ...f, level: v + 1 })) })) : messages;
    await new FileStoreCommit(table).commit({ commitUser: randomUUID(), messages: placed });
  }
  const shapes = await bucketShapes(table);
  if (shapes.length !== BUCKETS || shapes.some((s) => s.sortedRuns !== RUNS)) throw new Error(`${table.name}: expected ${RUNS} sorted runs in each of ${BUCKETS} buckets, found ${JSON.stringify(shapes)}`);
  return stored;
}

interface ScanResult {
  engine: Engine;
  rows: number;
  storedRows: number;
  java: JavaReadFigures;
  natslake: { wallS: number; cpuS: number; readS: number[] };
  load: string;
}

async function scanPart(dir: string): Promise<ScanResult[]> {
  const warehouse = join(dir, "scan");
  const catalog = new Catalog(warehouse);
  const stored: number[] = [];
  for (const engine of ENGINES) {
    stored.push(await writeScanTable(await createTable(catalog, `scan.${engine.id}`, engine), engine));
  }
  const java = await javaPkBenchRead(
    warehouse,
    ENGINES.map((e) => `scan.${e.id}`),
    { reads: READS, warmupReads: JAVA_WARMUP_READS },
  );
  const javaLoad = load();
  const out: ScanResult[] = [];
  for (const [i, engine] of ENGINES.entries()) {
    const table = await catalog.getTable(parseIdentifier(`scan.${engine.id}`));
    // The warm-up scan (not measured) computes the checksum.
    const sum = new ReadChecksummer(table.schema.fields);
    for await (const batch of readBatches(table)) sum.add(batch);
    const j = java[i]!;
    if (sum.rows !== j.rows) throw new Error(`${engine.name}: natslake's scan gave ${sum.rows} rows, Java's ${j.rows}`);
    const diff = checksumDifferences(sum.checksum, j.checksum);
    if (diff.length > 0) throw new Error(`${engine.name}: natslake's and Java's scans differ — ${diff.join("; ")}`);
    gc();
    const readS: number[] = [];
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let r = 0; r < READS; r++) {
      const r0 = performance.now();
      let rows = 0;
      for await (const batch of readBatches(await catalog.getTable(parseIdentifier(`scan.${engine.id}`)))) rows += batch.numRows;
      readS.push((performance.now() - r0) / 1000);
      if (rows !== sum.rows) throw new Error(`${engine.name}: scan ${r} gave ${rows} rows, the warm-up scan ${sum.rows}`);
    }
    const wallS = (performance.now() - t0) / 1000;
    out.push({ engine, rows: sum.rows, storedRows: stored[i]!, java: j, natslake: { wallS, cpuS: cpuSeconds(process.cpuUsage(c0)), readS }, load: `${load()} (Java's run ended at ${javaLoad})` });
  }
  return out;
}

function report(writes: WriteResult[], scans: ScanResult[]): void {
  const figures: Figures = { rows: ROWS, keys: writes[0]!.java.keys, scan_keys: KEYS, scan_reads: READS, buckets: BUCKETS, sorted_runs_per_bucket: RUNS };
  const targets: Target[] = [];
  say(`merge engines: write ${fmt(ROWS)} upserts (${fmt(writes[0]!.java.keys)} keys; updates leave event, qty null) × 6 columns, ${BUCKETS} buckets, one commit`);
  say(`  Java: BatchTableWrite on one thread after a warm-up run of the same rows (JIT), ${writes[0]!.java.jvm}; natslake: BatchWriter.upsert after a warm-up run`);
  for (const { engine, java, natslake, load: l } of writes) {
    const javaRate = ROWS / (java.wallMs / 1000);
    const oursRate = ROWS / natslake.wallS;
    const ratio = oursRate / javaRate;
    say(
      `  ${engine.name.padEnd(15)} Java ${fmt(javaRate)} rows/s (${(java.wallMs / 1000).toFixed(2)} s, cpu thread ${(java.threadCpuMs / 1000).toFixed(2)} s, JVM ${(java.processCpuMs / 1000).toFixed(2)} s, ${java.commitKind} snapshot ${java.snapshotId})` +
        `  natslake ${fmt(oursRate)} rows/s (${natslake.wallS.toFixed(2)} s, cpu ${natslake.cpuS.toFixed(2)} s)  natslake/Java ${ratio.toFixed(2)}× ${ratio >= TARGET_VS_JAVA ? "PASS" : "MISS"}  load ${l}`,
    );
    Object.assign(figures, {
      [`write_${engine.id}_java_rows_per_sec`]: Math.round(javaRate),
      [`write_${engine.id}_java_process_cpu_s`]: r3(java.processCpuMs / 1000),
      [`write_${engine.id}_natslake_rows_per_sec`]: Math.round(oursRate),
      [`write_${engine.id}_natslake_cpu_s`]: r3(natslake.cpuS),
      [`write_${engine.id}_ratio`]: r3(ratio),
    });
    targets.push(targetAtLeast(`write_${engine.id}_ratio`, r3(ratio), TARGET_VS_JAVA));
  }
  say(`  read back by natslake: each engine's two tables hold the same ${fmt(writes[0]!.java.keys)} keys and the same values (checksum)`);
  say(`merge engines: full scan of ${fmt(KEYS)} keys, ${RUNS} sorted runs per bucket (written by natslake), ${READS} measured scans each`);
  say(`  Java: batch read after ${JAVA_WARMUP_READS} warm-up reads, counting rows; natslake: readBatches (merge-on-read) after a warm-up scan`);
  for (const { engine, rows, storedRows, java, natslake, load: l } of scans) {
    const oursRate = (rows * READS) / natslake.wallS;
    const ratio = oursRate / java.rowsPerSec;
    say(
      `  ${engine.name.padEnd(15)} ${fmt(rows)} rows from ${fmt(storedRows)} stored  Java ${fmt(java.rowsPerSec)} rows/s (cpu thread ${(java.threadCpuMs / 1000).toFixed(2)} s, JVM ${(java.processCpuMs / 1000).toFixed(2)} s)` +
        `  natslake ${fmt(oursRate)} rows/s (cpu ${natslake.cpuS.toFixed(2)} s)  natslake/Java ${ratio.toFixed(2)}× ${ratio >= TARGET_VS_JAVA ? "PASS" : "MISS"}  load ${l}`,
    );
    Object.assign(figures, {
      [`scan_${engine.id}_rows`]: rows,
      [`scan_${engine.id}_java_rows_per_sec`]: Math.round(java.rowsPerSec),
      [`scan_${engine.id}_java_process_cpu_s`]: r3(java.processCpuMs / 1000),
      [`scan_${engine.id}_natslake_rows_per_sec`]: Math.round(oursRate),
      [`scan_${engine.id}_natslake_cpu_s`]: r3(natslake.cpuS),
      [`scan_${engine.id}_ratio`]: r3(ratio),
    });
    targets.push(targetAtLeast(`scan_${engine.id}_ratio`, r3(ratio), TARGET_VS_JAVA));
  }
  say(`  each scan: natslake's and Java's rows and checksums equal`);
  recordFigures("pk_engines", figures, targets);
}

const dir = mkdtempSync(join(tmpdir(), "natslake-bench-engines-"));
try {
  const writes = await writePart(dir);
  const scans = await scanPart(dir);
  report(writes, scans);
} finally {
  rmSync(dir, { recursive: true, force: true });
  await sharedParquetPool()?.close();
}
