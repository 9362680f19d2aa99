/**
 * The merge-on-read of live primary-key buckets alone (src/lsm/merge-reader.ts `mergeBucketFiles`), on this thread,
 * over runs already decoded (no Parquet, no IO): what a merged scan costs beyond the decode that a compacted table's
 * scan costs too (issues 27 and 30). Not a test: it prints figures; no targets.
 *
 * Shapes (`--shape`):
 *   live     issue 27's live table as the cluster benchmark leaves it (bench/cluster-pk.bench.ts, its "live files
 *            (level:rows)" line): 4 buckets of 250,000 keys, each one top-level run holding every key plus a few
 *            smaller runs of updates to keys spread over the whole range (per bucket, as measured: L4 22k–103k rows,
 *            L3 12k–34k, and level-2 / level-0 runs of a few hundred to 1.4k rows)
 *   engines  issue 30's scan table (bench/pk-engines.bench.ts): 500,000 keys in 4 buckets × 5 level-0 runs, the first
 *            every key, each later one a fifth of the keys (k ≡ v-1 mod 5) with new values and `event`, `qty` null;
 *            `--engine` deduplicate (default), partial-update or aggregation (that benchmark's options)
 * The rows are the benchmarks' six columns (bench/shape.ts).
 *
 * A/B: `--src DIR` (repeatable) loads the merge from another checkout's src/ (e.g. /work/main), so two versions run
 * alternately in one process on the same decoded runs: `--reps` rounds of A B, median of each, and B ÷ A.
 *
 * `--job`: the whole job of a Parquet worker instead (src/scan/merge-bucket-job.ts: the runs' Parquet files decoded,
 * merged, each output batch made postable), the native merge (src/scan/native-bucket-merge.ts) against the JS one
 * (decode, `mergeBucketFiles`) alternately, in this checkout: `--reps` rounds, median of each, and native ÷ JS.
 *
 *   node --expose-gc --import tsx bench/merge-runs.bench.ts [--shape live|engines] [--engine NAME] [--reps N] [--src DIR]... [--job]
 */
import type * as arrow from "apache-arrow";
import { execSync } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { RecordBatchBuilder } from "../src/codec/columns/record-batch-builder.ts";
import { serializeBinaryRow } from "../src/format/binary-row.ts";
import { parseColumnList, type DataField } from "../src/format/data-types.ts";
import type { DataFileMeta } from "../src/format/manifest.ts";
import { newTableSchema } from "../src/format/schema.ts";
import { SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "../src/lsm/key-value-fields.ts";
import type { mergeEngineOf } from "../src/lsm/merge-functions/merge-engine.ts";
import type { MergeEngine } from "../src/lsm/merge-functions/merge-function.ts";
import type { MergeReadSpec } from "../src/lsm/merge-reader.ts";
import { BENCH_COLUMNS, benchInputRow } from "./shape.ts";
import { seeded } from "../test/helpers/pk-lookup.ts";
import * as arrowJs from "apache-arrow";
import { writeParquet } from "../src/codec/parquet.ts";
import type { TableSchema } from "../src/format/schema.ts";
import { mergeBucketJob, type MergeBucketSpec } from "../src/scan/merge-bucket-job.ts";
import { schemaMapping } from "../src/scan/file-mapping.ts";
import { lsmFile } from "../test/helpers/lsm-files.ts";

type MergeBucketFiles = (files: readonly DataFileMeta[], spec: MergeReadSpec) => AsyncGenerator<arrow.RecordBatch>;

const FIELDS: DataField[] = parseColumnList(BENCH_COLUMNS).map((c, i) => ({ id: i, name: c.name, type: c.type }));
const KEY = [FIELDS[0]!];
/** Rows per decoded batch: the native decoder's default (native/parquet/src/lib.rs). */
const DECODED_BATCH_ROWS = 65_536;

/** A sorted run's versions: (key, row index for the values, sequence number), in key order, each key once. */
interface RunRows {
  level: number;
  keys: number[];
  rowOf: number[];
  seqs: number[];
  /** `event` and `qty` null (a partial update's row). */
  sparse?: boolean;
}

let fileNo = 0;
/** A decoded file of a run (batches of DECODED_BATCH_ROWS) and its meta. */
function decodedFile(run: RunRows): { meta: DataFileMeta; batches: arrow.RecordBatch[] } {
  const all = [...FIELDS, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD];
  const batches: arrow.RecordBatch[] = [];
  for (let from = 0; from < run.keys.length; from += DECODED_BATCH_ROWS) {
    const b = new RecordBatchBuilder(all, DECODED_BATCH_ROWS);
    for (let i = from; i < Math.min(run.keys.length, from + DECODED_BATCH_ROWS); i++) {
      const values = { ...benchInputRow(run.rowOf[i]!), id: run.keys[i]!, [SEQUENCE_NUMBER_FIELD.name]: run.seqs[i]!, [VALUE_KIND_FIELD.name]: 0 };
      b.appendInput(run.sparse === true ? { ...values, event: null, qty: null } : values);
    }
    batches.push(b.finish());
  }
  const types = KEY.map((f) => f.type);
  // The test helpers' file metadata, with this run's BIGINT key range, rows and sequence numbers.
  const meta: DataFileMeta = {
    ...lsmFile({ name: `m${fileNo++}`, level: run.level, minSeq: run.seqs.reduce((a, b) => Math.min(a, b)), maxSeq: run.seqs.reduce((a, b) => Math.max(a, b)) }),
    fileSize: 1,
    rowCount: run.keys.length,
    minKey: serializeBinaryRow(types, [BigInt(run.keys[0]!)]),
    maxKey: serializeBinaryRow(types, [BigInt(run.keys.at(-1)!)]),
  };
  return { meta, batches };
}

/** `n` distinct keys of `keys` drawn at random, in key order. */
function sample(keys: readonly number[], n: number, next: () => number): number[] {
  const picked = new Set<number>();
  while (picked.size < n) picked.add(keys[Math.floor(next() * keys.length)]!);
  return [...picked].sort((a, b) => a - b);
}

/** The live shape: per bucket (level, rows) of each run, as the cluster benchmark measured them. */
const LIVE_BUCKETS: Array<Array<[number, number]>> = [
  [[5, 250_000], [4, 21_852], [0, 1_000], [0, 297]],
  [[5, 250_000], [4, 53_485], [3, 21_794], [2, 1_367]],
  [[5, 250_000], [4, 102_834], [3, 34_114], [0, 1_254], [0, 419]],
  [[5, 250_000], [4, 37_194], [3, 12_410], [2, 1_417]],
];

function liveShape(): RunRows[][] {
  const next = seeded(27);
  return LIVE_BUCKETS.map((runs, bucket) => {
    const keys = Array.from({ length: 250_000 }, (_, i) => 4 * i + bucket);
    let seq = 0;
    // Lower levels are older: they get the smaller sequence numbers.
    return runs.map(([level, rows], r) => {
      const ks = r === 0 ? keys : sample(keys, rows, next);
      const base = seq;
      seq += ks.length;
      return { level, keys: ks, rowOf: ks.map((k, i) => (k * 7 + i) % 1_000_000), seqs: ks.map((_, i) => base + i) };
    });
  });
}

/** The engines shape: per bucket a run of every key, then four runs of a fifth of the keys each, newer. */
function enginesShape(): RunRows[][] {
  const keys = 500_000;
  return [0, 1, 2, 3].map((bucket) => {
    const all = Array.from({ length: keys / 4 }, (_, i) => 4 * i + bucket);
    let seq = 0;
    const run = (ks: number[], v: number): RunRows => {
      const base = seq;
      seq += ks.length;
      return { level: 0, keys: ks, rowOf: ks.map((k) => k + v * keys), seqs: ks.map((_, i) => base + i), sparse: v > 0 };
    };
    return [run(all, 0), ...[1, 2, 3, 4].map((v) => run(all.filter((k) => k % 5 === v - 1), v))];
  });
}

/** The engines of bench/pk-engines.bench.ts, by name. */
const ENGINE_OPTIONS: Record<string, Record<string, string>> = {
  deduplicate: {},
  "partial-update": { "merge-engine": "partial-update" },
  aggregation: { "merge-engine": "aggregation", "fields.amount.aggregate-function": "sum", "fields.qty.aggregate-function": "max" },
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { shape: { type: "string", default: "live" }, engine: { type: "string", default: "deduplicate" }, reps: { type: "string", default: "5" }, src: { type: "string", multiple: true, default: [] }, job: { type: "boolean", default: false } },
  });
  const options = ENGINE_OPTIONS[values.engine!];
  if (options === undefined) throw new Error(`--engine: one of ${Object.keys(ENGINE_OPTIONS).join(", ")}`);
  const schema = newTableSchema({ columns: FIELDS.map((f) => ({ name: f.name, type: f.type })), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "4", ...options } });
  const shape = values.shape === "engines" ? enginesShape() : liveShape();
  const reps = Number(values.reps);
  const srcs = values.src!.length === 0 ? [resolve(import.meta.dirname, "..")] : values.src!.map((s) => resolve(s));
  // Each checkout's merge with its own engine: a merge reader knows built rows by its own module's class.
  const merges: Array<{ merge: MergeBucketFiles; engine: MergeEngine }> = [];
  for (const dir of srcs) {
    const { mergeBucketFiles } = (await import(pathToFileURL(`${dir}/src/lsm/merge-reader.ts`).href)) as { mergeBucketFiles: MergeBucketFiles };
    const engines = (await import(pathToFileURL(`${dir}/src/lsm/merge-functions/merge-engine.ts`).href)) as { mergeEngineOf: typeof mergeEngineOf };
    merges.push({ merge: mergeBucketFiles, engine: engines.mergeEngineOf(schema) });
  }
  const buckets = shape.map((runs) => runs.map(decodedFile));
  if (values.job) return jobs(schema, buckets, Number(values.reps), String(values.shape), String(values.engine));
  const totalRows = buckets.reduce((n, files) => n + files.reduce((m, f) => m + f.meta.rowCount, 0), 0);
  const gc = (globalThis as { gc?: () => void }).gc;
  // CPU time of the process (this thread and V8's helpers): on a shared machine less noisy than wall time.
  const once = async ({ merge, engine }: { merge: MergeBucketFiles; engine: MergeEngine }): Promise<{ ms: number; rows: number }> => {
    gc?.();
    const t0 = process.cpuUsage();
    let rows = 0;
    for (const files of buckets) {
      const byName = new Map(files.map((f) => [f.meta.fileName, f.batches]));
      const spec: MergeReadSpec = { keyFields: KEY, sequence: null, ignoreDelete: false, engine, output: FIELDS, readFile: (f) => Promise.resolve(byName.get(f.fileName)!) };
      for await (const b of merge(files.map((f) => f.meta), spec)) rows += b.numRows;
    }
    const t = process.cpuUsage(t0);
    return { ms: (t.user + t.system) / 1000, rows };
  };
  const load = (): string => execSync("uptime").toString().trim().replace(/.*load/, "load");
  console.log(`merge-runs: shape ${values.shape}, engine ${values.engine}, ${buckets.length} buckets, ${totalRows} rows in runs of ${buckets.map((b) => b.map((f) => `L${f.meta.level}:${f.meta.rowCount}`).join(" ")).join("; ")}; ${load()}`);
  // Warm-up: each version once (JIT).
  for (const m of merges) await once(m);
  const times: number[][] = merges.map(() => []);
  let outRows = -1;
  // CLOCK_MONOTONIC µs, as a .cpuprofile counts: the timed rounds' window for bench/cpuprofile-summary.mjs.
  const from = process.hrtime.bigint() / 1000n;
  for (let r = 0; r < reps; r++) {
    for (let k = 0; k < merges.length; k++) {
      const t = await once(merges[k]!);
      if (outRows >= 0 && t.rows !== outRows) throw new Error(`${srcs[k]} merged ${t.rows} rows, another ${outRows}`);
      outRows = t.rows;
      times[k]!.push(t.ms);
    }
  }
  console.log(`  timed window (µs, for cpuprofile-summary): ${from} ${process.hrtime.bigint() / 1000n}`);
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  srcs.forEach((dir, k) => console.log(`  ${dir}: median ${median(times[k]!).toFixed(1)} CPU ms (${((outRows / median(times[k]!)) * 1000).toFixed(0)} merged rows per CPU s; runs ${times[k]!.map((t) => t.toFixed(0)).join(" ")})`));
  if (merges.length === 2) console.log(`  second ÷ first time: ${(median(times[1]!) / median(times[0]!)).toFixed(3)}; ${load()}`);
}

/** `--job`: a worker's whole merge job over Parquet files, native merge and JS merge alternately. */
async function jobs(schema: TableSchema, buckets: Array<Array<{ meta: DataFileMeta; batches: arrow.RecordBatch[] }>>, reps: number, shape: string, engine: string): Promise<void> {
  const fields = [...FIELDS, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD];
  const mapping = schemaMapping(schema, fields, true);
  const files = buckets.map((b) => b.map((f) => ({ meta: f.meta, bytes: writeParquet(new arrowJs.Table(f.batches)) })));
  const bytes = files.reduce((n, b) => n + b.reduce((m, f) => m + f.bytes.length, 0), 0);
  const load = (): string => execSync("uptime").toString().trim().replace(/.*load/, "load");
  console.log(`merge-runs --job: shape ${shape}, engine ${engine}, ${files.length} buckets, ${(bytes / 1e6).toFixed(1)} MB of Parquet; ${load()}`);
  const gc = (globalThis as { gc?: () => void }).gc;
  const once = async (nativeMerge: boolean): Promise<{ ms: number; rows: number }> => {
    gc?.();
    const t0 = process.cpuUsage();
    let rows = 0;
    for (const b of files) {
      const spec: MergeBucketSpec = {
        schema,
        ignoreDelete: false,
        fields,
        output: FIELDS,
        wanted: null,
        // The job takes each file's bytes: a copy per round.
        files: b.map((f) => ({ meta: f.meta, path: f.meta.fileName, bytes: f.bytes.slice(), mapping })),
        window: 4,
        pauseAfterMs: 1000,
        nativeMerge,
      };
      rows += await mergeBucketJob(spec, () => Promise.resolve());
    }
    const t = process.cpuUsage(t0);
    return { ms: (t.user + t.system) / 1000, rows };
  };
  const modes = [true, false];
  for (const m of modes) await once(m);
  const times: number[][] = [[], []];
  let outRows = -1;
  for (let r = 0; r < reps; r++) {
    for (let k = 0; k < modes.length; k++) {
      const t = await once(modes[k]!);
      if (outRows >= 0 && t.rows !== outRows) throw new Error(`${modes[k] ? "native" : "JS"} merged ${t.rows} rows, the other ${outRows}`);
      outRows = t.rows;
      times[k]!.push(t.ms);
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  modes.forEach((m, k) => console.log(`  ${m ? "native" : "JS"} merge: median ${median(times[k]!).toFixed(1)} CPU ms (${((outRows / median(times[k]!)) * 1000).toFixed(0)} merged rows per CPU s; runs ${times[k]!.map((t) => t.toFixed(0)).join(" ")})`));
  console.log(`  native ÷ JS time: ${(median(times[0]!) / median(times[1]!)).toFixed(3)}; ${load()}`);
}

await main();
