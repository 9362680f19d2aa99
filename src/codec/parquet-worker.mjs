/**
 * Entry of a Parquet worker thread (started by ParquetEncoderPool in parquet-pool.ts). Plain JavaScript, so it
 * loads without a TypeScript loader however the main thread was started.
 *
 * Protocol, one job at a time:
 *   in:  { id, op: "encode", payload: Uint8Array (Arrow IPC stream), spec: ParquetWriterSpec }
 *        { id, op: "decode", payload: Uint8Array (Parquet file), spec: ParquetDecodeSpec }
 *        { id, op: "flush-keyed", payload: Uint8Array (Arrow IPC stream of a bucket's buffer), spec: KeyedFlushSpec }
 *        { id, op: "merge-bucket", spec: MergeBucketSpec (the files' bytes inside, transferred) }
 *        { id, ack: true }                                             (merge-bucket: the caller took one batch)
 *        { id, cancel: true }                                          (merge-bucket: the caller wants no more)
 *        { id, taken: true }                                           (merge-bucket: the caller reached this bucket)
 *   out: { id, ok: true, payload: Uint8Array, wasmBytes }            (payload's buffer is transferred)
 *        { id, ok: true, payload: EncodedKeyedFlush, wasmBytes }      (flush-keyed; the files' bytes are transferred)
 *        { id, chunk: true, payload: PostedBatch }                     (merge-bucket: one output batch, its buffers transferred)
 *        { id, ok: true, payload: rows, wasmBytes }                    (merge-bucket: done)
 *        { id, ok: false, name, message, fatal, wasmBytes, kind?, context?, fileIndex? }
 *        { id: 0, priorityError }                                      (once, at start: see `nice` below)
 * `fatal` marks a WebAssembly trap (a Rust panic, out of memory): the wasm instance may be left inconsistent, so
 * the worker exits after replying and the pool starts a fresh one.
 *
 * A primary-key flush (src/lsm/keyed-flush.ts: sort, fold, statistics, encoding) is TypeScript with the library's
 * modules behind it: loaded on the first such job only — the compiled `.js` beside it in a build (dist/), else the
 * sources through the TypeScript loader the worker registers itself (loader flags are not passed on to workers) —
 * so a pool that only encodes and decodes starts as light as before.
 *
 * A bucket's merge-on-read (src/scan/merge-bucket-job.ts) is loaded the same way, on its first job. It streams:
 * each output batch is posted as a chunk; once `spec.window` chunks are unacknowledged it waits for the caller's
 * `ack`, so neither thread holds more than that many batches of a bucket however large it is. A `cancel` (the
 * caller stopped reading) ends the job at its next chunk, with a failure reply nobody waits for. A caller that takes
 * the bucket (`taken`) and acks nothing for `spec.pauseAfterMs` ends it too (`Paused`): a slow consumer does not
 * hold a worker of the pool.
 *
 * Failpoints (FAILPOINTS, read once at start): `parquet.worker.encode` / `parquet.worker.decode` /
 * `parquet.worker.flush-keyed` / `parquet.worker.merge-bucket` with `exit` (the worker thread ends with code 137, as
 * a crash would), `throw`, `kill` (SIGKILL the whole process) or `sleep(ms)`; a suffix `@N` fires on this thread's
 * N-th such job only (a crash in the middle of a multi-bucket read).
 */
/* global WebAssembly, structuredClone */
import { importCompiledOrSource } from "../compiled-or-source.mjs";
import { URL } from "node:url";
import process from "node:process";
import { clearTimeout, setTimeout } from "node:timers";
import { setTimeout as sleep } from "node:timers/promises";
import { parentPort, workerData } from "node:worker_threads";
import { lowerThreadPriority } from "./thread-priority.mjs";
import { decodeToTransferableIpcStream, encodeIpcStream, retainedMemoryBytes, transferableBuffer } from "./parquet-ops.mjs";

/**
 * A pool of background work (compaction) asks its workers to run at a lower CPU priority (`workerData.nice`; see
 * thread-priority.mjs). Best effort: where that fails (another OS) the worker says why, once, in a message the pool
 * keeps (`priorityError`), and works on at the usual priority.
 */
const priorityError = lowerThreadPriority(Number(workerData?.nice ?? 0));
if (priorityError !== null) parentPort.postMessage({ id: 0, priorityError });

const failpoints = new Map();
for (const part of (process.env.FAILPOINTS ?? "").split(",")) {
  const i = part.lastIndexOf(":");
  if (i > 0 && part.trim().startsWith("parquet.worker.")) failpoints.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
}

/** Jobs this thread ran per failpoint name (for `@N`). */
const reached = new Map();

async function failpoint(name) {
  let action = failpoints.get(name);
  if (action === undefined) return;
  const nth = /^(.*)@(\d+)$/.exec(action);
  if (nth) {
    const count = (reached.get(name) ?? 0) + 1;
    reached.set(name, count);
    if (count !== Number(nth[2])) return;
    action = nth[1];
  }
  const pause = /^sleep\((\d+)\)$/.exec(action);
  if (pause) await sleep(Number(pause[1]));
  else if (action === "exit") process.exit(137);
  else if (action === "kill") process.kill(process.pid, "SIGKILL");
  else if (action === "throw") throw new Error(`failpoint ${name}`);
}

/** @type {Promise<{ encodeKeyedFlushIpc: (ipc: Uint8Array, spec: unknown) => { data: { bytes: Uint8Array } | null, changelog: { bytes: Uint8Array } | null } }> | null} */
let keyedFlush = null;

/** The primary-key flush module, loaded once (see the module comment). */
function loadKeyedFlush() {
  keyedFlush ??= importCompiledOrSource(new URL("../lsm/keyed-flush.ts", import.meta.url));
  return keyedFlush;
}

/** @type {Promise<{ mergeBucketJob: (spec: unknown, emit: (batch: unknown, transfer: ArrayBuffer[]) => Promise<void>) => Promise<number> }> | null} */
let mergeBucket = null;

function loadMergeBucket() {
  mergeBucket ??= importCompiledOrSource(new URL("../scan/merge-bucket-job.ts", import.meta.url));
  return mergeBucket;
}

/** The running merge-bucket job's flow control (one job at a time per thread). */
const stream = { id: 0, credit: 0, cancelled: false, taken: false, /** @type {(() => void) | null} */ wake: null };

class Cancelled extends Error {
  name = "Cancelled";
}

class Paused extends Error {
  name = "Paused";
}

/**
 * Posts one output batch of the running merge, first waiting for credit (the caller's acks). Once the caller is
 * taking this bucket (`taken`), it waits `spec.pauseAfterMs` at most: a caller that takes no batch for that long (a
 * slow consumer) does not hold this thread, the job ends with `Paused` and the caller merges the rest of the bucket
 * itself. A bucket merged ahead waits until the caller reaches it: its wait says nothing about the caller's pace.
 */
async function emitChunk(id, batch, transfer, pauseAfterMs) {
  let deadline = stream.taken ? Date.now() + pauseAfterMs : Infinity;
  while (stream.credit <= 0 && !stream.cancelled) {
    if (deadline === Infinity && stream.taken) deadline = Date.now() + pauseAfterMs;
    const left = deadline - Date.now();
    if (left <= 0) throw new Paused(`the reader took no batch for ${pauseAfterMs} ms`);
    let timer;
    await new Promise((resolve) => {
      stream.wake = resolve;
      if (left !== Infinity) timer = setTimeout(resolve, left);
    });
    clearTimeout(timer);
    stream.wake = null;
  }
  if (stream.cancelled) throw new Cancelled("the reader stopped reading this bucket");
  stream.credit--;
  parentPort.postMessage({ id, chunk: true, payload: batch }, transfer);
}

async function runMerge(msg) {
  Object.assign(stream, { id: msg.id, credit: Math.max(1, msg.spec.window ?? 2), cancelled: false, taken: msg.spec.taken === true, wake: null });
  const pauseAfterMs = msg.spec.pauseAfterMs ?? 1000;
  try {
    return await (await loadMergeBucket()).mergeBucketJob(msg.spec, (batch, transfer) => emitChunk(msg.id, batch, transfer, pauseAfterMs));
  } finally {
    stream.id = 0;
  }
}

/** An ack or a cancel for the running merge (those for a job that ended already are dropped). */
function steer(msg) {
  if (msg.id !== stream.id) return;
  if (msg.ack === true) stream.credit++;
  if (msg.cancel === true) stream.cancelled = true;
  if (msg.taken === true) stream.taken = true;
  const wake = stream.wake;
  stream.wake = null;
  wake?.();
}

async function run(msg) {
  await failpoint(`parquet.worker.${msg.op}`);
  if (msg.op === "encode") return encodeIpcStream(msg.payload, msg.spec);
  if (msg.op === "decode") return decodeToTransferableIpcStream(msg.payload, msg.spec);
  if (msg.op === "flush-keyed") return (await loadKeyedFlush()).encodeKeyedFlushIpc(msg.payload, msg.spec);
  if (msg.op === "merge-bucket") return runMerge(msg);
  throw new Error(`unknown Parquet worker operation '${msg.op}'`);
}

/** What the caller needs of a failure besides its message: a LakeError's kind and context, a merge's failed file. */
function failureDetail(e) {
  const out = {};
  if (e !== null && typeof e === "object") {
    if (typeof e.kind === "string" && e.name === "LakeError") {
      out.kind = e.kind;
      try {
        out.context = structuredClone(e.context);
      } catch {
        // a context that cannot be posted is left out
      }
    }
    if (typeof e.fileIndex === "number") out.fileIndex = e.fileIndex;
  }
  return out;
}

/**
 * Hands buffers over without a copy when a result owns all of its buffer (results are fresh copies out of the codec):
 * the bytes, or a flush's files' bytes.
 */
const transferList = (payload) => {
  if (typeof payload === "number") return [];
  const parts = payload instanceof Uint8Array ? [payload] : [payload.data?.bytes, payload.changelog?.bytes].filter((b) => b !== undefined);
  const out = [];
  for (const bytes of parts) {
    const buffer = transferableBuffer(bytes);
    if (buffer !== null && !out.includes(buffer)) out.push(buffer);
  }
  return out;
};

parentPort.on("message", (msg) => {
  if (msg.op === undefined) return steer(msg);
  run(msg).then(
    (result) => {
      // Every result is in memory V8 owns (an encode's stream, a decode's transferable stream, a flush's files), so
      // its buffers are transferred rather than copied.
      parentPort.postMessage({ id: msg.id, ok: true, payload: result, wasmBytes: retainedMemoryBytes() }, transferList(result));
    },
    (e) => {
      // A merge's decode wraps the trap (naming its file): the wasm instance is just as suspect.
      const fatal = e instanceof WebAssembly.RuntimeError || e?.cause instanceof WebAssembly.RuntimeError;
      const message = e instanceof Error ? e.message : String(e);
      const name = e instanceof Error ? e.name : "Error";
      parentPort.postMessage({ id: msg.id, ok: false, name, message, fatal, wasmBytes: retainedMemoryBytes(), ...failureDetail(e) });
      if (fatal) process.exit(1);
    },
  );
});
