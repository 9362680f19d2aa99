/**
 * The node's stall watch: a thread that kills the process when the main thread is blocked past a deadline.
 *
 * A decode or a flush that stalls on a bucket-buffer worker thread is stopped at the node's `decodeDeadline`
 * (actors/ingest/bucket-buffers.ts). What runs on the main thread cannot be stopped that way — a partitioned table's
 * rows are decoded and routed there (actors/writer.ts), and with NATSLAKE_DECODE_WORKERS=0 every table's are — and a
 * message stalling it would block the whole node for good. So the main thread moves a counter in shared memory every
 * BEAT_MS, and a worker thread (stall-watch-worker.mjs) that sees it stand still for the deadline SIGKILLs the
 * process: the stall becomes a death, which the poison guard already handles (its attempts counted in KV across
 * deaths, the bucket isolating, a message that kills the node while tried alone dead-lettered).
 *
 * The thread is unref'd (it never keeps the process alive) and `stop()` ends it with the node's normal shutdown.
 */
import { Worker } from "node:worker_threads";

/** How often the main thread moves the counter. The kill comes at the deadline plus at most this and CHECK_MS. */
const BEAT_MS = 1000;
/** How often the watch thread reads the counter. */
const CHECK_MS = 250;

const WORKER_URL = new URL("./stall-watch-worker.mjs", import.meta.url);

export interface StallWatch {
  /** Ends the watch thread and the beat; resolves once the thread is gone. */
  stop(): Promise<void>;
}

export interface StallWatchOptions {
  /** How long the main thread may go without running a timer before the process is killed (ms). */
  deadlineMs: number;
  /** Named in the line written before the kill. */
  nodeId: string;
  /** The watch thread failed (it did not start, or threw): the node runs on without it. */
  onError: (error: Error) => void;
}

export function startStallWatch(o: StallWatchOptions): StallWatch {
  if (!Number.isFinite(o.deadlineMs) || o.deadlineMs <= 0) throw new Error(`stall watch: deadline must be a positive number of ms (got ${o.deadlineMs})`);
  const beat = new SharedArrayBuffer(4);
  const counter = new Int32Array(beat);
  // `add` wraps at 2^31: only a change is looked for, never the value.
  const beater = setInterval(() => Atomics.add(counter, 0, 1), BEAT_MS);
  beater.unref();
  const worker = new Worker(WORKER_URL, { execArgv: [], workerData: { beat, beatMs: BEAT_MS, deadlineMs: o.deadlineMs, checkMs: Math.min(CHECK_MS, o.deadlineMs), nodeId: o.nodeId } });
  worker.unref();
  worker.on("error", o.onError);
  let stopped: Promise<void> | null = null;
  return {
    stop: () =>
      (stopped ??= (async () => {
        clearInterval(beater);
        await worker.terminate();
      })()),
  };
}
