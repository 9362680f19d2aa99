/**
 * Entry of the node's stall watch thread (cluster/stall-watch.ts): reads the heartbeat counter the main thread moves
 * every `beatMs`, and when the main thread has been blocked for `deadlineMs` (below) — it ran no timer that long: a decode, a
 * flush or a loop that never returns — writes one JSON line to stderr and SIGKILLs the whole process. Its buckets then
 * move to other nodes, and the poison guard (actors/poison-guard.ts) counts the death against what was being read.
 *
 * Plain JavaScript with no project imports: it must start fast and hold nothing the main thread may be blocked on.
 * workerData: { beat: SharedArrayBuffer (one Int32), beatMs, deadlineMs, checkMs, nodeId }
 *
 * The counter moved last at some time b, in (seenAt − checkMs, seenAt]; the main thread was free at least until b and
 * owed its next beat at b + beatMs, so by t it has been blocked at least t − seenAt − beatMs: the kill waits for that to
 * reach the deadline (a main thread blocked right after a beat dies at most beatMs + checkMs past its deadline).
 */
import { writeSync } from "node:fs";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { setInterval } from "node:timers";
import { workerData } from "node:worker_threads";

const { beat, beatMs, deadlineMs, checkMs, nodeId } = workerData;
const counter = new Int32Array(beat);
let seen = Atomics.load(counter, 0);
/** When `seen` was first read (this thread's monotonic clock): the main thread's last beat was at most checkMs before. */
let seenAt = performance.now();

setInterval(() => {
  const now = Atomics.load(counter, 0);
  const t = performance.now();
  if (now !== seen) {
    seen = now;
    seenAt = t;
    return;
  }
  const blockedMs = Math.round(t - seenAt - beatMs);
  if (blockedMs < deadlineMs) return;
  const line = {
    time: new Date().toISOString(),
    level: "error",
    msg: "the node's main thread is blocked past its decodeDeadline: the node kills itself (SIGKILL), so its buckets move to other nodes and the poison guard counts the attempt against the message being read",
    nodeId,
    blockedMs,
    deadlineMs,
  };
  // fd 2 directly: a worker's process.stderr is forwarded through the (blocked) main thread and would never be written.
  try {
    writeSync(2, JSON.stringify(line) + "\n");
  } catch {
    // stderr closed: the kill is still due
  }
  process.kill(process.pid, "SIGKILL");
}, checkMs);
