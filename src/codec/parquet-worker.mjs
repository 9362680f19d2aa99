/**
 * Entry of a Parquet worker thread (started by ParquetEncoderPool in parquet-pool.ts). Plain JavaScript, so it
 * loads without a TypeScript loader however the main thread was started.
 *
 * Protocol, one job at a time:
 *   in:  { id, op: "encode", payload: Uint8Array (Arrow IPC stream), spec: ParquetWriterSpec }
 *        { id, op: "decode", payload: Uint8Array (Parquet file), spec: ParquetDecodeSpec }
 *        { id, op: "flush-keyed", payload: Uint8Array (Arrow IPC stream of a bucket's buffer), spec: KeyedFlushSpec }
 *   out: { id, ok: true, payload: Uint8Array, wasmBytes }            (payload's buffer is transferred)
 *        { id, ok: true, payload: EncodedKeyedFlush, wasmBytes }      (flush-keyed; the files' bytes are transferred)
 *        { id, ok: false, name, message, fatal, wasmBytes }
 *        { id: 0, priorityError }                                      (once, at start: see `nice` below)
 * `fatal` marks a WebAssembly trap (a Rust panic, out of memory): the wasm instance may be left inconsistent, so
 * the worker exits after replying and the pool starts a fresh one.
 *
 * A primary-key flush (src/lsm/keyed-flush.ts: sort, fold, statistics, encoding) is TypeScript with the library's
 * modules behind it: loaded on the first such job only — the compiled `.js` beside it in a build (dist/), else the
 * sources through the TypeScript loader the worker registers itself (loader flags are not passed on to workers) —
 * so a pool that only encodes and decodes starts as light as before.
 *
 * Failpoints (FAILPOINTS, read once at start): `parquet.worker.encode` / `parquet.worker.decode` with `exit`
 * (the worker thread ends with code 137, as a crash would), `throw`, `kill` (SIGKILL the whole process) or
 * `sleep(ms)`.
 */
/* global WebAssembly */
import { importCompiledOrSource } from "../compiled-or-source.mjs";
import { URL } from "node:url";
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";
import { parentPort, workerData } from "node:worker_threads";
import { lowerThreadPriority } from "./thread-priority.mjs";
import { decodeToIpcStream, encodeIpcStream, retainedMemoryBytes, transferableBuffer } from "./parquet-ops.mjs";

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

async function failpoint(name) {
  const action = failpoints.get(name);
  if (action === undefined) return;
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

async function run(msg) {
  await failpoint(`parquet.worker.${msg.op}`);
  if (msg.op === "encode") return encodeIpcStream(msg.payload, msg.spec);
  if (msg.op === "decode") return decodeToIpcStream(msg.payload, msg.spec);
  if (msg.op === "flush-keyed") return (await loadKeyedFlush()).encodeKeyedFlushIpc(msg.payload, msg.spec);
  throw new Error(`unknown Parquet worker operation '${msg.op}'`);
}

/**
 * Hands buffers over without a copy when a result owns all of its buffer (results are fresh copies out of the codec):
 * the bytes, or a flush's files' bytes.
 */
const transferList = (payload) => {
  const parts = payload instanceof Uint8Array ? [payload] : [payload.data?.bytes, payload.changelog?.bytes].filter((b) => b !== undefined);
  const out = [];
  for (const bytes of parts) {
    const buffer = transferableBuffer(bytes);
    if (buffer !== null && !out.includes(buffer)) out.push(buffer);
  }
  return out;
};

parentPort.on("message", (msg) => {
  run(msg).then(
    (payload) => parentPort.postMessage({ id: msg.id, ok: true, payload, wasmBytes: retainedMemoryBytes() }, transferList(payload)),
    (e) => {
      const fatal = e instanceof WebAssembly.RuntimeError;
      const message = e instanceof Error ? e.message : String(e);
      const name = e instanceof Error ? e.name : "Error";
      parentPort.postMessage({ id: msg.id, ok: false, name, message, fatal, wasmBytes: retainedMemoryBytes() });
      if (fatal) process.exit(1);
    },
  );
});
