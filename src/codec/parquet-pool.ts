/**
 * ParquetEncoderPool: Parquet encoding (and decoding) in worker threads, so CPU-heavy codec work runs off the main
 * thread and on several cores at once.
 *
 * - `encode(batch, opts)`: the main thread serialises the batch to an Arrow IPC stream and hands it to a worker, which
 *   runs the Parquet codec (parquet-ops.mjs: native or parquet-wasm) and transfers the Parquet bytes back. The result is byte-for-byte what `writeParquet` produces
 *   on the main thread. The stream is written (one copy of the column buffers) into a SharedArrayBuffer that each
 *   worker keeps and reuses, not into a fresh ArrayBuffer per job: measured on the table-core bench, the ~50 MB of new
 *   ArrayBuffers per million rows made V8 run a full mark-compact per write, 100–150 ms each on a large heap.
 * - `decode(bytes, opts)`: the reverse — Parquet bytes in, an apache-arrow Table out (projected columns are skipped
 *   inside the decoder; `rowGroups` selects row groups so one file can be decoded by several workers).
 * - `flushKeyed(batches, spec)`: a primary-key bucket's whole flush (src/lsm/keyed-flush.ts: sort, fold, encode,
 *   statistics), its buffered batches handed over as an IPC stream like an encode's: the sorting and gathering, and
 *   the garbage they make, stay off the calling thread, whose heap may hold millions of the caller's row objects
 *   that every full collection there would mark again.
 * - `mergeBucket(spec, transfer, onChunk)`: a primary-key bucket's merge-on-read (src/scan/merge-bucket-job.ts), its
 *   files' bytes handed over; its output batches stream back one chunk (a batch's column buffers, transferred) at a time, the worker
 *   waiting for the caller's `ack` once `spec.window` chunks are unacknowledged — once the caller reached the bucket
 *   (`taken`), for `spec.pauseAfterMs` at most: then the job fails with the error name `Paused` (context `error`),
 *   so a caller that stops taking chunks does not hold a worker for long (it merges the rest itself:
 *   src/scan/worker-merges.ts).
 *
 * Workers start lazily (up to `size`, default `os.availableParallelism()`), one job runs per worker at a time and
 * the rest wait in one FIFO queue on the main thread, so a slow job never holds up jobs another worker could take.
 * An idle worker is unref'ed: the pool never keeps a process alive, while a pending job does (its worker is ref'ed
 * until the job settles).
 *
 * Robustness: a worker that dies (crash, `process.exit`, a WebAssembly trap, failing to start) rejects the job it
 * was running with a retryable `LakeError` (kind Unexpected) naming the operation and the exit code, and is
 * dropped; the next job starts a replacement. Under the wasm codec, whose memory never shrinks, a worker whose wasm
 * memory grew past `maxWasmMemoryBytes` is retired after its job and replaced on demand (the native codec keeps none). `close()` rejects queued and running jobs
 * and stops the workers; a closed pool rejects new jobs.
 *
 * The worker entry (parquet-worker.mjs) and the codec calls it shares with parquet.ts (parquet-ops.mjs) are
 * plain JavaScript: a worker gets no TypeScript loader when the main thread registered tsx through `tsx/esm/api`
 * (bin/natslake.mjs), and tsx in every worker would add ~150 ms to its start. Loader flags of the main thread
 * (`--import tsx`) are therefore not passed on to workers.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import * as arrow from "apache-arrow";
import { ErrorKind, LakeError } from "../errors.ts";
import type { PostedBatch } from "./batch-transfer.ts";
import { workerCountFromEnv } from "../env.ts";
import { encodeRequest, toIpcChunks, type IpcChunks, type ParquetReadOptions, type ParquetWriteOptions } from "./parquet.ts";
import { transferableBuffer, type ParquetDecodeSpec, type ParquetWriterSpec } from "./parquet-ops.mjs";
/**
 * A primary-key flush's spec and result (src/lsm/keyed-flush.ts's KeyedFlushSpec and EncodedKeyedFlush): plain,
 * structured-cloneable values the worker passes through. Opaque here: src/lsm's writers use this pool, so importing
 * their types would close a circle; the caller names them (`flushKeyed<EncodedKeyedFlush>`).
 */
type KeyedFlushSpec = object;
type EncodedKeyedFlush = object;
/**
 * A bucket's merge (src/scan/merge-bucket-job.ts MergeBucketSpec), opaque here for the same reason; `window`: chunks
 * unacknowledged at most; `pauseAfterMs`: how long the worker waits for an ack before it ends the job (`Paused`).
 */
type MergeBucketSpec = { window: number; pauseAfterMs: number; taken?: boolean };

/** A merge-bucket job under way: its end (the rows it sent), and how the caller steers it. */
export interface MergeBucketJob {
  /** Resolves with the rows sent once every chunk was posted; rejects with the job's failure (or its cancel). */
  done: Promise<number>;
  /** The caller took one chunk: the worker may send one more. */
  ack(): void;
  /** The caller wants no more chunks: a queued job is dropped, a running one ends at its next chunk. */
  cancel(): void;
  /** The caller reached this bucket: from now on the worker waits `pauseAfterMs` at most for an ack. */
  taken(): void;
}

export interface ParquetPoolOptions {
  /** Worker threads at most; default `os.availableParallelism()`. */
  size?: number;
  /** A worker whose wasm memory exceeds this after a job is replaced (wasm memory never shrinks). Default 1 GiB. */
  maxWasmMemoryBytes?: number;
  /**
   * The workers' CPU priority as a Unix nice value (1–19 lowers it; default 0: the process's): a pool of background
   * work — a writer node's compactions — yields the cores to the threads that ingest, commit and deliver when the
   * machine is saturated, as RocksDB lowers its compaction threads' priority. Linux only (each worker thread sets
   * its own; elsewhere `priorityError` says why not).
   */
  nice?: number;
  /** Told once when a worker could not lower its priority (the reason): it works on at the process's priority. */
  onPriorityError?: (message: string) => void;
}

export interface ParquetDecodeOptions extends ParquetReadOptions {
  /** Row groups to decode (indexes); default all. */
  rowGroups?: number[];
  /**
   * Hand the input's buffer to the worker instead of copying it (the caller's `bytes` become unusable). Only done
   * when `bytes` spans its whole ArrayBuffer.
   */
  transfer?: boolean;
}

type Op = "encode" | "decode" | "flush-keyed" | "merge-bucket";

interface Job {
  id: number;
  op: Op;
  /** The input: bytes to post as they are, or IPC pieces to stage in the worker's arena at dispatch. */
  payload: Uint8Array | IpcChunks;
  spec: ParquetWriterSpec | ParquetDecodeSpec | KeyedFlushSpec | MergeBucketSpec;
  transfer: ArrayBuffer[];
  /** Bytes (encode, decode), the encoded files of a flush (flush-keyed) or the rows sent (merge-bucket). */
  resolve: (payload: Uint8Array | EncodedKeyedFlush | number) => void;
  /** A streaming job's chunks (merge-bucket), as they arrive. */
  onChunk?: (chunk: PostedBatch) => void;
  reject: (e: Error) => void;
}

interface Reply {
  id: number;
  /** Set on the message a worker sends when it could not lower its priority (id 0, no job). */
  priorityError?: string;
  ok: boolean;
  /** One chunk of a streaming job's output (the job goes on). */
  chunk?: boolean;
  payload?: Uint8Array | EncodedKeyedFlush | number | PostedBatch;
  name?: string;
  message?: string;
  fatal?: boolean;
  wasmBytes?: number;
  /** A failure that was a LakeError in the worker: its kind and context. */
  kind?: ErrorKind;
  context?: Record<string, unknown>;
  /** A merge whose file could not be decoded: that file's index in the spec's files. */
  fileIndex?: number;
}

interface PoolWorker {
  worker: Worker;
  job: Job | null;
  /** Shared input buffer of this worker, reused by every job it runs (one at a time); grows on demand. */
  arena: SharedArrayBuffer | null;
  /** Set once the worker is being stopped (retired, crashed or closed): it takes no further jobs. */
  gone: boolean;
}

const WORKER_URL = new URL("./parquet-worker.mjs", import.meta.url);

const EMPTY = new Uint8Array(0);
const MAX_KEPT_ARENA_BYTES = 256 * 1024 * 1024;

/** Copies the pieces into the worker's arena (grown by doubling when too small) and returns the view to post. */
function stage(w: PoolWorker, input: IpcChunks): Uint8Array {
  const size = input.byteLength;
  if (w.arena === null || w.arena.byteLength < size) {
    w.arena = new SharedArrayBuffer(Math.max(size, Math.min(2 * (w.arena?.byteLength ?? 0), 2 ** 31), 1 << 20));
  }
  const out = new Uint8Array(w.arena, 0, size);
  let pos = 0;
  for (const c of input.chunks) {
    out.set(c, pos);
    pos += c.byteLength;
  }
  return out;
}

/**
 * The main thread's Node options minus module loaders: the worker is plain JavaScript (see module comment). Other
 * options (--cpu-prof, --enable-source-maps, …) carry over, unless Node rejects them for workers.
 */
function workerExecArgv(): string[] {
  const out: string[] = [];
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--import" || a === "--loader" || a === "--experimental-loader" || a === "--require" || a === "-r") {
      i++;
      continue;
    }
    if (/^--(import|loader|experimental-loader|require)=/.test(a)) continue;
    out.push(a);
  }
  return out;
}

/** Whether workers take the main thread's (loader-free) Node options; false once Node refused them. */
let inheritExecArgv = true;

function newWorker(nice: number): Worker {
  const workerData = { nice };
  if (inheritExecArgv) {
    try {
      return new Worker(WORKER_URL, { execArgv: workerExecArgv(), workerData });
    } catch (e) {
      // V8 and process-wide flags (--trace-gc, --max-old-space-size, …) are not valid for workers.
      if ((e as { code?: string }).code !== "ERR_WORKER_INVALID_EXEC_ARGV") throw e;
      inheritExecArgv = false;
    }
  }
  return new Worker(WORKER_URL, { execArgv: [], workerData });
}

export class ParquetEncoderPool {
  readonly size: number;
  private readonly maxWasmMemoryBytes: number;
  private readonly workers: PoolWorker[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  /** Jobs the workers completed, by kind (for tests and metrics: what ran off the calling thread). */
  readonly completed: Record<Op, number> = { encode: 0, decode: 0, "flush-keyed": 0, "merge-bucket": 0 };
  /** Jobs handed to a worker, by kind (a job cancelled or failed counts here, not in `completed`). */
  readonly started: Record<Op, number> = { encode: 0, decode: 0, "flush-keyed": 0, "merge-bucket": 0 };

  /** The workers' nice value (0: the process's priority). */
  readonly nice: number;
  /** Why a worker could not lower its priority, when one could not (null: none failed). */
  priorityError: string | null = null;

  constructor(opts: ParquetPoolOptions = {}) {
    this.size = Math.max(1, Math.floor(opts.size ?? availableParallelism()));
    this.maxWasmMemoryBytes = opts.maxWasmMemoryBytes ?? 1024 ** 3;
    const nice = opts.nice ?? 0;
    if (!Number.isInteger(nice) || nice < 0 || nice > 19) throw new LakeError(ErrorKind.DataInvalid, `a Parquet pool's nice value is an integer in 0..19, got ${nice}`);
    this.nice = nice;
    this.onPriorityError = opts.onPriorityError;
  }

  private readonly onPriorityError: ((message: string) => void) | undefined;

  /**
   * Starts the workers now (up to `size`), idle: a process that will decode soon — a reader node, whose first
   * consumer catching up would otherwise wait for threads and WebAssembly to start — pays that at start instead.
   */
  warm(): void {
    while (!this.closed && this.workers.length < this.size) {
      try {
        this.startWorker();
      } catch {
        return; // started on demand, as usual, by the first job (which then reports why it cannot)
      }
    }
  }

  /** Workers currently started (for tests and metrics). */
  get startedWorkers(): number {
    return this.workers.length;
  }

  /**
   * Encodes a batch or table as one Parquet file in a worker; resolves to the file's bytes. The data is serialised
   * when the job reaches a worker, so it must not be modified until the promise settles (Arrow data never is).
   */
  encode(data: arrow.RecordBatch | arrow.Table, opts: ParquetWriteOptions = {}): Promise<Uint8Array> {
    if (this.closed) return Promise.reject(closedError());
    let chunks: IpcChunks;
    let spec: ParquetWriterSpec;
    try {
      const request = encodeRequest(data, opts);
      spec = request.spec;
      chunks = toIpcChunks(request.table);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    return this.submit("encode", chunks, spec, []) as Promise<Uint8Array>;
  }

  /**
   * Sorts, folds and encodes a primary-key bucket's buffered batches in a worker (src/lsm/keyed-flush.ts); resolves
   * to the encoded files, exactly what `encodeKeyedFlush` returns on the calling thread. The batches are serialised
   * when the job reaches a worker, so they must not be modified until the promise settles.
   */
  flushKeyed<R extends EncodedKeyedFlush>(batches: readonly arrow.RecordBatch[], spec: KeyedFlushSpec): Promise<R> {
    if (this.closed) return Promise.reject(closedError());
    let chunks: IpcChunks;
    try {
      chunks = toIpcChunks(new arrow.Table(batches[0]!.schema, [...batches]));
    } catch (e) {
      return Promise.reject(e as Error);
    }
    return this.submit("flush-keyed", chunks, spec, []) as Promise<R>;
  }

  /**
   * Merges a primary-key bucket in a worker (see the module comment); `transfer`: the buffers of the files' bytes in
   * `spec`, handed over. `onChunk` gets each output batch's buffers (src/codec/batch-transfer.ts) in order; call the job's `ack` for each once
   * taken.
   */
  mergeBucket(spec: MergeBucketSpec, transfer: ArrayBuffer[], onChunk: (chunk: PostedBatch) => void): MergeBucketJob {
    const id = this.nextId++;
    const done = this.closed
      ? Promise.reject(closedError())
      : new Promise<number>((resolve, reject) => {
          this.queue.push({ id, op: "merge-bucket", payload: EMPTY, spec, transfer, resolve: resolve as (rows: unknown) => void, reject, onChunk });
          this.pump();
        });
    return {
      done,
      ack: () => this.workers.find((w) => w.job?.id === id)?.worker.postMessage({ id, ack: true }),
      taken: () => {
        spec.taken = true; // read at dispatch by a job still queued
        this.workers.find((w) => w.job?.id === id)?.worker.postMessage({ id, taken: true });
      },
      cancel: () => {
        const queued = this.queue.findIndex((j) => j.id === id);
        if (queued >= 0) this.queue.splice(queued, 1)[0]!.reject(new LakeError(ErrorKind.Unexpected, "the bucket's merge was cancelled before it started"));
        else this.workers.find((w) => w.job?.id === id)?.worker.postMessage({ id, cancel: true });
      },
    };
  }

  /** Decodes a Parquet file in a worker into an apache-arrow Table (see `ParquetDecodeOptions`). */
  async decode(bytes: Uint8Array, opts: ParquetDecodeOptions = {}): Promise<arrow.Table> {
    return arrow.tableFromIPC(await this.decodeIpc(bytes, opts));
  }

  /**
   * Decodes a Parquet file in a worker into an Arrow IPC stream, as the worker made it (transferred, not copied): for
   * a caller that forwards the stream's messages rather than reading them (src/codec/ipc-stream.ts).
   */
  async decodeIpc(bytes: Uint8Array, opts: ParquetDecodeOptions = {}): Promise<Uint8Array> {
    if (this.closed) throw closedError();
    // Empty bytes are no Parquet file; and bytes whose buffer was transferred away before (detached) are empty too.
    if (bytes.byteLength === 0) throw new LakeError(ErrorKind.DataInvalid, "nothing to decode: 0 bytes (an empty file, or bytes already transferred to a worker thread)");
    const spec: ParquetDecodeSpec = { columns: opts.columns, rowGroups: opts.rowGroups, batchSize: opts.batchSize };
    const transfer = opts.transfer === true ? transferableBuffer(bytes) : null;
    const decoded = transfer !== null ? this.submit("decode", bytes, spec, [transfer]) : this.submit("decode", { chunks: [bytes], byteLength: bytes.byteLength }, spec, []);
    return (await decoded) as Uint8Array;
  }

  /** Rejects queued and running jobs and stops every worker. Idempotent; a closed pool rejects new jobs. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(closedError());
    const stopping = this.workers.splice(0).map((w) => {
      w.gone = true;
      const job = w.job;
      w.job = null;
      job?.reject(closedError());
      return w.worker.terminate();
    });
    await Promise.all(stopping);
  }

  private submit(op: Op, payload: Uint8Array | IpcChunks, spec: Job["spec"], transfer: ArrayBuffer[]): Promise<Uint8Array | EncodedKeyedFlush> {
    return new Promise<Uint8Array | EncodedKeyedFlush>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, op, payload, spec, transfer, resolve: resolve as Job["resolve"], reject });
      this.pump();
    });
  }

  /** Hands queued jobs to idle workers, starting workers up to `size`. Never throws (it runs in event handlers). */
  private pump(): void {
    while (this.queue.length > 0 && !this.closed) {
      let w = this.workers.find((x) => x.job === null && !x.gone);
      if (w === undefined) {
        if (this.workers.length >= this.size) return;
        try {
          w = this.startWorker();
        } catch (e) {
          const job = this.queue.shift()!;
          job.reject(new LakeError(ErrorKind.Unexpected, `cannot start a Parquet worker thread: ${(e as Error).message}`, { cause: e }));
          continue;
        }
      }
      const job = this.queue.shift()!;
      w.job = job;
      w.worker.ref();
      try {
        const payload = job.payload instanceof Uint8Array ? job.payload : stage(w, job.payload);
        job.payload = EMPTY; // the pieces may pin large buffers: drop them once staged
        w.worker.postMessage({ id: job.id, op: job.op, payload, spec: job.spec }, job.transfer);
        this.started[job.op]++;
      } catch (e) {
        w.job = null;
        w.worker.unref();
        job.reject(e as Error);
      }
    }
  }

  private startWorker(): PoolWorker {
    const worker = newWorker(this.nice);
    const w: PoolWorker = { worker, job: null, arena: null, gone: false };
    worker.unref();
    worker.on("message", (msg: Reply) => this.onReply(w, msg));
    worker.on("error", (e: Error) => this.onDeath(w, `failed: ${e.message}`, e));
    worker.on("messageerror", (e: Error) => this.onDeath(w, `sent a message that could not be read: ${e.message}`, e));
    worker.on("exit", (code: number) => this.onDeath(w, `exited with code ${code}`));
    this.workers.push(w);
    return w;
  }

  private onReply(w: PoolWorker, msg: Reply): void {
    if (msg.priorityError !== undefined) {
      if (this.priorityError === null) this.onPriorityError?.(msg.priorityError);
      this.priorityError = msg.priorityError;
      return;
    }
    const job = w.job;
    if (job === null || job.id !== msg.id) return;
    if (msg.chunk === true) {
      job.onChunk?.(msg.payload as PostedBatch);
      return;
    }
    w.job = null;
    w.worker.unref();
    // An arena grown for an unusually large job is not kept around.
    if (w.arena !== null && w.arena.byteLength > MAX_KEPT_ARENA_BYTES) w.arena = null;
    if (msg.ok) {
      this.completed[job.op]++;
      job.resolve(msg.payload!);
    } else if (msg.kind !== undefined) {
      // The worker's own LakeError (a merge's row-count check, a NOT NULL field without a value): as it was thrown.
      job.reject(new LakeError(msg.kind, msg.message ?? "unknown error", { context: { ...msg.context, op: job.op } }));
    } else {
      job.reject(
        new LakeError(ErrorKind.Unexpected, `Parquet ${job.op} failed in a worker thread: ${msg.message ?? "unknown error"}`, {
          context: { op: job.op, error: msg.name, ...(msg.fileIndex !== undefined ? { fileIndex: msg.fileIndex } : {}) },
          retryable: msg.fatal === true,
        }),
      );
    }
    if (msg.fatal === true || (msg.wasmBytes ?? 0) > this.maxWasmMemoryBytes) this.retire(w);
    this.pump();
  }

  /** The worker is gone (or going): its running job fails, it leaves the pool, queued jobs go to the others. */
  private onDeath(w: PoolWorker, what: string, cause?: Error): void {
    const i = this.workers.indexOf(w);
    if (i >= 0) this.workers.splice(i, 1);
    w.gone = true;
    const job = w.job;
    w.job = null;
    if (job !== null) {
      job.reject(
        new LakeError(ErrorKind.Unexpected, `Parquet worker thread ${what} while ${JOB_DOING[job.op]}; that job was not completed`, {
          context: { op: job.op },
          retryable: true,
          cause,
        }),
      );
    }
    // A crashed worker may still be running (an 'error' precedes 'exit'); make sure it stops.
    if (cause !== undefined) void w.worker.terminate();
    this.pump();
  }

  /** Stops an idle worker on purpose (its wasm memory grew too large, or wasm trapped); replaced on demand. */
  private retire(w: PoolWorker): void {
    const i = this.workers.indexOf(w);
    if (i >= 0) this.workers.splice(i, 1);
    w.gone = true;
    void w.worker.terminate();
  }
}

/** What a job of each kind is doing, for the message of a worker that died running it. */
const JOB_DOING: Record<Op, string> = { encode: "encoding a file", decode: "decoding a file", "flush-keyed": "flushing a primary-key bucket", "merge-bucket": "merging a primary-key bucket" };

const closedError = (): LakeError => new LakeError(ErrorKind.Unexpected, "the Parquet worker pool is closed");

let shared: ParquetEncoderPool | null | undefined;

/**
 * The process-wide pool the table writer and reader use by default (created on first use; its workers are
 * unref'ed, so it needs no closing). `NATSLAKE_PARQUET_WORKERS` sets its size; `0` disables it (null: encode and
 * decode on the calling thread).
 */
export function sharedParquetPool(): ParquetEncoderPool | null {
  if (shared === undefined) {
    const size = workerCountFromEnv("NATSLAKE_PARQUET_WORKERS") ?? defaultSize;
    shared = size === 0 ? null : new ParquetEncoderPool(size === undefined ? {} : { size });
  }
  return shared;
}

let defaultSize: number | undefined;

/**
 * The shared pool's size when `NATSLAKE_PARQUET_WORKERS` does not set it (a cluster node, where the pool encodes
 * partitioned tables' files only, leaves a core to its main thread and its bucket-buffer worker). Default: one worker per core. Effective only before the pool's first use; returns
 * whether it was.
 */
export function setSharedParquetPoolDefaultSize(size: number): boolean {
  if (shared !== undefined) return false;
  defaultSize = Math.max(1, Math.floor(size));
  return true;
}
