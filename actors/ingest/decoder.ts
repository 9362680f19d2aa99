/**
 * IngestDecoder: where a writer's row batches are decoded into Arrow columns — in worker threads (Piscina), so the
 * thread that renews the lease, heartbeats and moves messages never spends its time (or its garbage collector's)
 * on rows; or inline, for tests and `NATSLAKE_DECODE_WORKERS=0`.
 *
 * Decoding is CPU work without I/O, so it is no port: the node creates one decoder per process and hands it to its
 * writers. A worker that dies rejects its job (the writer re-reads the bucket from its committed offset) and Piscina
 * starts a replacement.
 */
import { workerCountFromEnv } from "../../src/env.ts";
import { availableParallelism } from "node:os";
import * as arrow from "apache-arrow";
import { Piscina } from "piscina";
import { ErrorKind, LakeError } from "../../src/errors.ts";
import type { DataField } from "../../src/spec/data-types.ts";
import { decodeSized, packPayloads, type DecodeJob, type EncodedDecodeOutput, type RejectedRow } from "./decode.ts";

export interface DecodedBatch {
  /** The rows that landed, as one record batch of the table's columns (null when none did). */
  batch: arrow.RecordBatch | null;
  rows: number;
  rejected: RejectedRow[];
}

export interface IngestDecoder {
  /** Decodes messages of one bucket (stream order) against `fields`, identified by `fieldsKey` (e.g. table#schema). */
  decode(fieldsKey: string, fields: readonly DataField[], messages: ReadonlyArray<{ seq: number; data: Uint8Array }>): Promise<DecodedBatch>;
  close(): Promise<void>;
}

/** Decodes on the calling thread. */
export class InlineIngestDecoder implements IngestDecoder {
  decode(_key: string, fields: readonly DataField[], messages: ReadonlyArray<{ seq: number; data: Uint8Array }>): Promise<DecodedBatch> {
    const { builder, rows, rejected } = decodeSized(fields, packPayloads(messages, { copy: false }));
    return Promise.resolve({ batch: builder === null || rows === 0 ? null : builder.finish(), rows, rejected });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

export interface WorkerDecoderOptions {
  /** Worker threads; default 1 (one core decodes ~2M rows/s; Parquet encoding has its own pool). */
  threads?: number;
  /**
   * Jobs of fewer payload bytes are decoded on the calling thread. A worker round trip (posting the job, the IPC
   * stream back, waking two threads) costs more than decoding a few hundred rows, and at a low rate every fetch is
   * such a job: measured at 30k rows/s on one node, posting alone took ~5% of a core. Default 64 KiB (~1500 rows of a
   * 6-column table); 0 sends every job to a worker.
   */
  inlineBelowBytes?: number;
}

/** Decodes in worker threads. */
export class WorkerIngestDecoder implements IngestDecoder {
  private readonly pool: Piscina;
  private readonly inline = new InlineIngestDecoder();
  private readonly inlineBelowBytes: number;

  constructor(opts: WorkerDecoderOptions = {}) {
    this.inlineBelowBytes = opts.inlineBelowBytes ?? 64 * 1024;
    const threads = Math.max(1, Math.min(opts.threads ?? 1, availableParallelism()));
    this.pool = new Piscina({
      filename: new URL("./decode-worker.mjs", import.meta.url).href,
      // Started with the first large job (a node at a low rate decodes inline and needs none), then kept.
      minThreads: 0,
      maxThreads: threads,
      idleTimeout: 60 * 60_000,
      execArgv: [],
      // No queue limit: the queue is bounded by the writers (one job in flight per bucket), and a refused job would
      // make a writer re-read its bucket.
    });
  }

  async decode(fieldsKey: string, fields: readonly DataField[], messages: ReadonlyArray<{ seq: number; data: Uint8Array }>): Promise<DecodedBatch> {
    let bytes = 0;
    for (const m of messages) bytes += m.data.byteLength;
    if (bytes < this.inlineBelowBytes) return this.inline.decode(fieldsKey, fields, messages);
    const payloads = packPayloads(messages);
    const job: DecodeJob = { ...payloads, fieldsKey, fields };
    let out: EncodedDecodeOutput;
    try {
      out = (await this.pool.run(job, { transferList: [payloads.data.buffer as ArrayBuffer] })) as EncodedDecodeOutput;
    } catch (e) {
      throw new LakeError(ErrorKind.Unexpected, `decoding row batches in a worker thread failed: ${(e as Error).message}`, { retryable: true, cause: e });
    }
    if (out.ipc === null) return { batch: null, rows: out.rows, rejected: out.rejected };
    const batches = arrow.tableFromIPC(out.ipc).batches;
    if (batches.length !== 1) throw new LakeError(ErrorKind.Unexpected, `a decoding worker returned ${batches.length} record batches (expected 1)`);
    return { batch: batches[0]!, rows: out.rows, rejected: out.rejected };
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}

/**
 * The decoder for a node: `threads` worker threads (`NATSLAKE_DECODE_WORKERS` when not given, default 1), or
 * inline with 0.
 */
export function createIngestDecoder(threads?: number): IngestDecoder {
  const n = threads ?? workerCountFromEnv("NATSLAKE_DECODE_WORKERS") ?? 1;
  return n === 0 ? new InlineIngestDecoder() : new WorkerIngestDecoder({ threads: n });
}
