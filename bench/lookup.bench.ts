/**
 * Point lookups by key (src/scan/lookup.ts) on a local primary-key table: a benchmark, not a test — it prints figures.
 *
 * The table: the bench shape (bench/shape.ts) under primary key `id`, 4 buckets, KEYS keys, 5 sorted runs per bucket
 * — a bulk load of every key, then 4 commits each updating a fifth of the keys (random ones), never compacted, so each
 * bucket holds 5 level-0 files whose key ranges all span the bucket: every lookup merges up to 5 versions.
 *   cold  a new KeyLookup (table handle and plan included, no cache) per single key, per batch of 100 keys: each
 *         decodes the key columns of the files of the keys' buckets, and the value columns of those a key's answer is
 *         in (how many of each, per single key, is printed);
 *   warm  one KeyLookup with a LruDecodedFileCache, its files decoded by a first pass: single keys and batches of 100
 *         answered from memory (latency p50/p99 per call).
 * Keys are random (half present and updated, a tenth never written). Every loop is bounded in count and time.
 *
 *   node --import tsx bench/lookup.bench.ts [--keys N] [--seconds S]
 * Default 1,000,000 keys; each measured loop stops after its count or S seconds (default 10), whichever comes first.
 * Figures go to the benchmark results file (bench/figures.ts, section `pk_lookup`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parseColumnList } from "../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { BatchWriter } from "../src/write/batch-writer.ts";
import { KeyLookup, LruDecodedFileCache, type LookupKey } from "../src/scan/lookup.ts";
import { planScan } from "../src/scan/plan.ts";
import { sharedParquetPool } from "../src/codec/parquet-pool.ts";
import type { Table } from "../src/table/table.ts";
import { BENCH_COLUMNS, benchInputRow } from "./shape.ts";
import { timedCalls, type TimedCalls } from "./timed-calls.ts";
import { recordFigures } from "./figures.ts";
import { seeded } from "../test/helpers/pk-lookup.ts";

const BUCKETS = 4;
const RUNS = 5;
const BATCH = 100;
const WRITE_CHUNK = 100_000;

const { values: flags } = parseArgs({ options: { keys: { type: "string", default: "1000000" }, seconds: { type: "string", default: "10" } } });
const KEYS = Number(flags.keys);
const SECONDS = Number(flags.seconds);
if (!(Number.isInteger(KEYS) && KEYS >= 1000 && KEYS <= 20_000_000)) throw new Error(`--keys must be an integer in 1000..20000000, got ${flags.keys}`);
if (!(SECONDS > 0 && SECONDS <= 600)) throw new Error(`--seconds must be in (0, 600], got ${flags.seconds}`);

const say = (line: string): void => void process.stdout.write(line + "\n");
const fmt = (n: number): string => Math.round(n).toLocaleString("en-US");
const percentile = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

/** The same keys every run. */
const random = seeded(2026_12_07);
/** A key to ask for: nine in ten written (0..KEYS-1), one in ten beyond them. */
const askedKey = (): LookupKey => ({ id: random() < 0.9 ? Math.floor(random() * KEYS) : KEYS + Math.floor(random() * KEYS) });

async function writeTable(t: Table): Promise<void> {
  const commit = async (ids: (k: number) => number, count: number, version: number): Promise<void> => {
    const w = await BatchWriter.open(t);
    for (let from = 0; from < count; from += WRITE_CHUNK) {
      const rows = Array.from({ length: Math.min(WRITE_CHUNK, count - from) }, (_, k) => ({ ...benchInputRow(from + k + version * KEYS), id: ids(from + k) }));
      await w.write(rows);
    }
    await w.commit();
  };
  await commit((k) => k, KEYS, 0);
  // Each update commit: a fifth of the keys, random, each at most once per commit (a stride through the key space).
  for (let v = 1; v < RUNS; v++) {
    const offset = Math.floor(random() * KEYS);
    await commit((k) => (offset + k * 5 + v) % KEYS, Math.floor(KEYS / 5), v);
  }
}

/** Runs `call` up to `count` times or SECONDS seconds, one at a time (bench/timed-calls.ts). */
const measure = (count: number, call: () => Promise<unknown>): Promise<TimedCalls> => timedCalls(count, SECONDS, call);

const dir = mkdtempSync(join(tmpdir(), "natslake-lookup-bench-"));
try {
  const catalog = new Catalog(dir);
  const table = await catalog.createTable(parseIdentifier("bench.lookup"), {
    columns: parseColumnList(BENCH_COLUMNS),
    primaryKeys: ["id"],
    options: { bucket: String(BUCKETS) },
  });
  const writeStart = performance.now();
  await writeTable(table);
  const plan = await planScan(table);
  const files = plan.splits.map((s) => s.files.length);
  say(`table: ${fmt(KEYS)} keys, ${BUCKETS} buckets, files per bucket ${files.join(", ")}, written in ${((performance.now() - writeStart) / 1000).toFixed(1)} s`);

  const open = async (cache?: LruDecodedFileCache): Promise<KeyLookup> => KeyLookup.open(await catalog.getTable(parseIdentifier("bench.lookup")), cache === undefined ? {} : { cache });
  const batch = (): LookupKey[] => Array.from({ length: BATCH }, askedKey);

  // What the cold single lookups decoded: files' key columns, and the value columns of the files a key's answer is in.
  const coldDecodes = { keyColumns: 0, valueColumns: 0 };
  const coldSingle = await measure(20, async () => {
    const lookup = await open();
    const rows = await lookup.get([askedKey()]);
    coldDecodes.keyColumns += lookup.stats.filesDecoded;
    coldDecodes.valueColumns += lookup.stats.valuesDecoded;
    return rows;
  });
  const coldBatch = await measure(10, async () => (await open()).get(batch()));
  const cache = new LruDecodedFileCache(4 * 1024 * 1024 * 1024);
  const warm = await open(cache);
  // A first pass decodes every file into the cache (one key per bucket is not enough to be sure: many keys).
  const firstPass = performance.now();
  await warm.get(Array.from({ length: 1000 }, (_, k) => ({ id: Math.floor((k * KEYS) / 1000) })));
  const decodeSeconds = (performance.now() - firstPass) / 1000;
  const warmSingle = await measure(20_000, () => warm.get([askedKey()]));
  const warmBatch = await measure(2_000, () => warm.get(batch()));
  if (warm.stats.filesDecoded !== plan.splits.reduce((n, s) => n + s.files.length, 0)) say(`note: the warm lookup decoded ${warm.stats.filesDecoded} files (the cache should hold every file after its first pass)`);

  const perSecond = (m: { calls: number; seconds: number }, keysPerCall: number): number => (m.calls * keysPerCall) / m.seconds;
  const figures = {
    keys: KEYS,
    buckets: BUCKETS,
    sorted_runs_per_bucket: RUNS,
    cold_single_keys_per_sec: perSecond(coldSingle, 1),
    cold_single_p50_ms: percentile(coldSingle.latencies, 0.5),
    cold_single_files_decoded: coldDecodes.keyColumns / coldSingle.calls,
    cold_single_value_decodes: coldDecodes.valueColumns / coldSingle.calls,
    cold_batch100_keys_per_sec: perSecond(coldBatch, BATCH),
    cold_batch100_p50_ms: percentile(coldBatch.latencies, 0.5),
    warm_first_pass_s: decodeSeconds,
    warm_cache_mib: cache.bytes / 1024 / 1024,
    warm_single_keys_per_sec: perSecond(warmSingle, 1),
    warm_single_p50_ms: percentile(warmSingle.latencies, 0.5),
    warm_single_p99_ms: percentile(warmSingle.latencies, 0.99),
    warm_batch100_keys_per_sec: perSecond(warmBatch, BATCH),
    warm_batch100_p50_ms: percentile(warmBatch.latencies, 0.5),
    warm_batch100_p99_ms: percentile(warmBatch.latencies, 0.99),
  };
  say(`cold single key:  ${fmt(figures.cold_single_keys_per_sec)} lookups/s, p50 ${figures.cold_single_p50_ms.toFixed(1)} ms (${coldSingle.calls} calls; per call ${figures.cold_single_files_decoded.toFixed(1)} files' key columns decoded, ${figures.cold_single_value_decodes.toFixed(1)} files' value columns)`);
  say(`cold 100 keys:    ${fmt(figures.cold_batch100_keys_per_sec)} keys/s, p50 ${figures.cold_batch100_p50_ms.toFixed(1)} ms per batch (${coldBatch.calls} calls)`);
  say(`warm first pass:  ${figures.warm_first_pass_s.toFixed(1)} s to decode every file, ${fmt(figures.warm_cache_mib)} MiB cached`);
  say(`warm single key:  ${fmt(figures.warm_single_keys_per_sec)} lookups/s, p50 ${figures.warm_single_p50_ms.toFixed(3)} ms, p99 ${figures.warm_single_p99_ms.toFixed(3)} ms (${warmSingle.calls} calls)`);
  say(`warm 100 keys:    ${fmt(figures.warm_batch100_keys_per_sec)} keys/s, p50 ${figures.warm_batch100_p50_ms.toFixed(2)} ms, p99 ${figures.warm_batch100_p99_ms.toFixed(2)} ms per batch (${warmBatch.calls} calls)`);
  recordFigures("pk_lookup", figures);
} finally {
  rmSync(dir, { recursive: true, force: true });
  await sharedParquetPool()?.close();
}
