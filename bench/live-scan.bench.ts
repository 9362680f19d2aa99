/**
 * Issue 27's scan ratio in the library alone (no cluster): a full scan of a live primary-key table ÷ the same table
 * fully compacted, as bench/cluster-pk.bench.ts's phase C measures it, on a table laid out like the one that benchmark
 * leaves (its "live files (level:rows)" line): 1,000,000 keys in 4 buckets, each bucket one level-5 run of every key,
 * then updates of keys spread over the whole range at level 4 (215,000 rows in all), level 3 (68,000) and level 0
 * (5,000) — files placed at those levels by their commits, as bench/pk-engines.bench.ts places its first-row runs.
 * The compacted table is the same commits then `compactPrimaryKeyTable --full`. Not a test: it prints figures.
 *
 * A/B: `--src DIR` (repeatable) reads with another checkout's src/ (e.g. /work/main), alternately in one process on
 * the same tables: `--rounds` rounds of (live with each src, compacted), wall seconds and process CPU of each scan.
 *
 * `--native-ab`: each checkout twice, its workers merging live buckets in the native addon and then in JavaScript
 * (src/scan/worker-merges.ts `WorkerMerges.nativeMerge`), alternately.
 *
 *   node --expose-gc --import tsx bench/live-scan.bench.ts [--rounds N] [--src DIR]... [--native-ab]
 */
import type * as arrow from "apache-arrow";
import { randomUUID } from "node:crypto";
import { execSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { FileStoreCommit } from "../src/commit/file-store-commit.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { compactPrimaryKeyTable } from "../src/maintenance/compact-pk.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import type { Table } from "../src/table/table.ts";
import { TableWrite } from "../src/write/table-write.ts";
import { bucketShapes } from "./pk-tables.ts";
import { BENCH_COLUMNS, benchInputRow } from "./shape.ts";
import { seeded } from "../test/helpers/pk-lookup.ts";

const KEYS = 1_000_000;
const BUCKETS = 4;
/** The update commits: (level, rows over all buckets), after the level-5 commit of every key. */
const UPDATES: Array<[number, number]> = [
  [4, 215_000],
  [3, 68_000],
  [0, 5_000],
];

type ReadBatches = (table: Table) => AsyncGenerator<arrow.RecordBatch>;

/** Commits `rows` with every new file placed at `level`. */
async function commitAt(table: Table, rows: Array<Record<string, unknown>>, level: number): Promise<void> {
  const write = new TableWrite(table);
  write.upsert(rows);
  const messages = await write.prepareCommit();
  await new FileStoreCommit(table).commit({ commitUser: randomUUID(), messages: messages.map((m) => ({ ...m, newFiles: m.newFiles.map((f) => ({ ...f, level })) })) });
}

async function writeLive(catalog: Catalog, name: string): Promise<Table> {
  const id = parseIdentifier(name);
  await catalog.createTable(id, { columns: parseColumnList(BENCH_COLUMNS), primaryKeys: ["id"], options: { bucket: String(BUCKETS) } });
  const all: Array<Record<string, unknown>> = Array.from({ length: KEYS }, (_, k) => benchInputRow(k));
  await commitAt(await catalog.getTable(id), all, 5);
  const next = seeded(27);
  let row = KEYS;
  for (const [level, count] of UPDATES) {
    const keys = new Set<number>();
    while (keys.size < count) keys.add(Math.floor(next() * KEYS));
    await commitAt(await catalog.getTable(id), [...keys].map((k) => ({ ...benchInputRow(row++), id: k })), level);
  }
  return catalog.getTable(id);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: "string", default: "3" }, src: { type: "string", multiple: true, default: [] }, "native-ab": { type: "boolean", default: false } } });
  const rounds = Number(values.rounds);
  const srcs = values.src!.length === 0 ? [resolve(import.meta.dirname, "..")] : values.src!.map((s) => resolve(s));
  const dir = mkdtempSync(join(tmpdir(), "natslake-live-scan-"));
  const load = (): string => execSync("uptime").toString().trim().replace(/.*load/, "load");
  try {
    const catalog = new Catalog(dir);
    const live = await writeLive(catalog, "bench.live");
    await writeLive(catalog, "bench.compacted");
    await compactPrimaryKeyTable(await catalog.getTable(parseIdentifier("bench.compacted")), { full: true });
    const shapes = await bucketShapes(live);
    console.log(`live-scan: ${KEYS} keys, live files ${shapes.map((s) => `b${s.bucket} ${s.fileRows.join(" ")}`).join("; ")}; ${load()}`);
    // Each checkout's own catalog and read (its own Parquet pool and workers).
    type NativeSwitch = { nativeMerge?: boolean };
    const readers: Array<{ name: string; read: ReadBatches; catalog: { getTable(id: ReturnType<typeof parseIdentifier>): Promise<Table> }; native: boolean | null; merges: NativeSwitch }> = [];
    for (const src of srcs) {
      const { readBatches } = (await import(pathToFileURL(`${src}/src/scan/read.ts`).href)) as { readBatches: ReadBatches };
      const cat = (await import(pathToFileURL(`${src}/src/table/catalog.ts`).href)) as { Catalog: new (dir: string) => Catalog };
      const { WorkerMerges } = (await import(pathToFileURL(`${src}/src/scan/worker-merges.ts`).href)) as { WorkerMerges: NativeSwitch };
      const catalog = new cat.Catalog(dir);
      if (values["native-ab"]) for (const native of [true, false]) readers.push({ name: `${src} (${native ? "native" : "JS"} merge)`, read: readBatches, catalog, native, merges: WorkerMerges });
      else readers.push({ name: src, read: readBatches, catalog, native: null, merges: WorkerMerges });
    }
    const scan = async (r: (typeof readers)[number], table: string): Promise<{ s: number; cpu: number; rows: number }> => {
      (globalThis as { gc?: () => void }).gc?.();
      if (r.native !== null) r.merges.nativeMerge = r.native;
      const t = await r.catalog.getTable(parseIdentifier(table));
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      let rows = 0;
      for await (const b of r.read(t)) rows += b.numRows;
      const c = process.cpuUsage(c0);
      if (rows !== KEYS) throw new Error(`${r.name}: ${table} gave ${rows} rows, ${KEYS} keys were written`);
      return { s: (performance.now() - t0) / 1000, cpu: (c.user + c.system) / 1e6, rows };
    };
    // Warm-up: every reader once on both tables (workers started, JIT warm).
    for (const r of readers) {
      await scan(r, "bench.live");
      await scan(r, "bench.compacted");
    }
    const times = new Map<string, number[]>();
    const add = (k: string, s: number): void => void times.set(k, [...(times.get(k) ?? []), s]);
    for (let i = 0; i < rounds; i++) {
      for (const r of readers) {
        const l = await scan(r, "bench.live");
        const c = await scan(r, "bench.compacted");
        add(`${r.name} live`, l.s);
        add(`${r.name} compacted`, c.s);
        add(`${r.name} live cpu`, l.cpu);
        add(`${r.name} compacted cpu`, c.cpu);
        console.log(`  round ${i + 1} ${r.name}: live ${l.s.toFixed(3)} s (CPU ${l.cpu.toFixed(2)} s), compacted ${c.s.toFixed(3)} s (CPU ${c.cpu.toFixed(2)} s), ratio ${(c.s / l.s).toFixed(3)}; ${load()}`);
      }
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    for (const r of readers) {
      const l = median(times.get(`${r.name} live`)!);
      const c = median(times.get(`${r.name} compacted`)!);
      const lc = median(times.get(`${r.name} live cpu`)!);
      const cc = median(times.get(`${r.name} compacted cpu`)!);
      // On a shared machine the CPU seconds (Parquet workers included) move less than the wall time.
      console.log(`${r.name}: live ${(KEYS / l).toFixed(0)} rows/s, compacted ${(KEYS / c).toFixed(0)} rows/s (medians of ${rounds}): live ÷ compacted ${(c / l).toFixed(3)}; CPU s live ${lc.toFixed(3)}, compacted ${cc.toFixed(3)}: compacted ÷ live ${(cc / lc).toFixed(3)}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
}

await main();
