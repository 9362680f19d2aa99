/**
 * Parquet encoder (and decoder) warm-up. V8 runs WebAssembly first as baseline code and optimises a function only once it has
 * run for a while; measured here, parquet-wasm's first ~30 encodes of a 20k-row file take 2–6× the steady time
 * (10–35 ms instead of 5 ms). A writer node that starts cold pays that on its first flushes — seconds of extra
 * publish → visible latency and a slow catch-up. Encoding a small synthetic file a few dozen times on each thread
 * that will encode (the writer's own thread, for small flushes, and every worker of the pool), before any bucket is
 * taken, moves that cost to start-up.
 */
import type * as arrow from "apache-arrow";
import { rowsToRecordBatch } from "./columns/record-batch-builder.ts";
import { readParquetAsync, writeParquet } from "./parquet.ts";
import type { ParquetEncoderPool } from "./parquet-pool.ts";
import { assignFieldIds, parseColumnList, type DataField } from "../format/data-types.ts";
import { Timestamp } from "../format/values.ts";

/** The shapes the encoder's hot paths run on: 64- and 32-bit integers, timestamps, doubles, dictionary strings. */
const FIELDS: DataField[] = assignFieldIds(parseColumnList("id BIGINT NOT NULL, ts TIMESTAMP(3), s STRING, d DOUBLE, n INT").map((c) => ({ id: -1, ...c }))).fields;

function syntheticBatch(rows: number): arrow.RecordBatch {
  const out = [];
  for (let i = 0; i < rows; i++) {
    out.push({ id: BigInt(i), ts: new Timestamp(1_700_000_000_000 + i, 0), s: `v-${i % 997}`, d: i / 7, n: i % 100 });
  }
  return rowsToRecordBatch(FIELDS, out);
}

export interface WarmUpOptions {
  /** Encodes per thread (default 30). */
  rounds?: number;
  /** Rows of the synthetic file (default 4096). */
  rows?: number;
  compression?: string;
}

function warmUpWork(opts: WarmUpOptions): { rounds: number; batch: arrow.RecordBatch; compression: string } {
  return { rounds: opts.rounds ?? 30, batch: syntheticBatch(opts.rows ?? 4096), compression: opts.compression ?? "zstd" };
}

export interface WarmUpResult {
  rounds: number;
  ms: number;
}

/**
 * Encodes a small synthetic file `rounds` times on this thread and `rounds` times per worker of `pool` (the jobs are
 * spread over the workers by the pool's queue). Failures are the caller's to log: a warm-up is an optimisation only.
 */
export async function warmUpParquet(pool: ParquetEncoderPool | null, opts: WarmUpOptions = {}): Promise<WarmUpResult> {
  const started = performance.now();
  const { rounds, batch, compression } = warmUpWork(opts);
  const jobs: Array<Promise<Uint8Array>> = [];
  if (pool !== null) for (let i = 0; i < rounds * pool.size; i++) jobs.push(pool.encode(batch, { compression }));
  // Observed now, awaited after this thread's rounds: a refused job must not surface as an unhandled rejection.
  const workers = Promise.all(jobs);
  workers.catch(() => undefined);
  for (let i = 0; i < rounds; i++) {
    writeParquet(batch, { compression });
    // Let the event loop breathe between rounds: a warm-up never delays heartbeats.
    await new Promise((r) => setImmediate(r));
  }
  await workers;
  return { rounds, ms: Math.round(performance.now() - started) };
}

/**
 * The decoder's warm-up, for a process that decodes soon (a reader node: its first consumer catching up decodes a
 * table's files in the pool): a small synthetic file encoded once here, then decoded `rounds` times per worker of
 * `pool` — the same WebAssembly tier-up as the encoder's, measured on a 100k-row file in a fresh worker: 70, 58, 36 ms
 * for the first decodes, 27 ms once warm.
 */
export async function warmUpParquetDecode(pool: ParquetEncoderPool, opts: WarmUpOptions = {}): Promise<WarmUpResult> {
  const started = performance.now();
  const { rounds, batch, compression } = warmUpWork(opts);
  const file = writeParquet(batch, { compression });
  const jobs: Array<Promise<Uint8Array>> = [];
  for (let i = 0; i < rounds * pool.size; i++) jobs.push(pool.decodeIpc(file));
  await Promise.all(jobs);
  return { rounds, ms: Math.round(performance.now() - started) };
}

/** `warmUpParquet` for a thread that has nothing else to do meanwhile (a worker before its first job): no yielding. */
export function warmUpParquetHere(opts: WarmUpOptions = {}): WarmUpResult {
  const started = performance.now();
  const { rounds, batch, compression } = warmUpWork(opts);
  for (let i = 0; i < rounds; i++) writeParquet(batch, { compression });
  return { rounds, ms: Math.round(performance.now() - started) };
}

/**
 * The decoder's warm-up on this thread, for a thread that decodes Parquet itself (a primary-key compaction worker
 * reads its inputs on its own thread): a small synthetic file decoded `rounds` times here (default 20).
 */
export async function warmUpParquetDecodeHere(opts: WarmUpOptions = {}): Promise<WarmUpResult> {
  const started = performance.now();
  const { batch, compression } = warmUpWork(opts);
  const rounds = opts.rounds ?? 20;
  const file = writeParquet(batch, { compression });
  for (let i = 0; i < rounds; i++) {
    await readParquetAsync(file);
    await new Promise((r) => setImmediate(r));
  }
  return { rounds, ms: Math.round(performance.now() - started) };
}
