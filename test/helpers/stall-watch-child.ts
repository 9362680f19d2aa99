/**
 * A process with a stall watch (cluster/stall-watch.ts) of deadline argv[3] ms, doing what argv[2] says:
 * - `block`: blocks its main thread (Atomics.wait) for 30 s — the watch must SIGKILL it;
 * - `busy`: keeps its main thread busy in short slices (never blocked past the deadline) for 2.5 deadlines, then ends
 *   without stopping the watch — it must exit 0 by itself (the watch thread is unref'd);
 * - `stop`: stops the watch, then blocks its main thread for 2.5 deadlines — it must survive and exit 0.
 * Writes `{"blockingAt": epoch ms}` on stdout as its main thread starts to block (block, stop), and on stderr the watch's
 * line. Run under `node --import tsx`.
 */
import { startStallWatch } from "../../cluster/stall-watch.ts";

const [mode, deadlineArg] = process.argv.slice(2);
const deadlineMs = Number(deadlineArg);
const watch = startStallWatch({ deadlineMs, nodeId: "stall-child", onError: (e) => process.stderr.write(`watch failed: ${e.message}\n`) });
// The watch thread's start: it must be reading the counter before the main thread blocks.
await new Promise((r) => setTimeout(r, 500));

const block = (ms: number): void => {
  process.stdout.write(JSON.stringify({ blockingAt: Date.now() }) + "\n");
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

switch (mode) {
  case "block":
    block(30_000);
    break;
  case "busy": {
    const until = Date.now() + 2.5 * deadlineMs;
    while (Date.now() < until) {
      const slice = Date.now() + 50;
      while (Date.now() < slice); // CPU-bound work in slices, yielding between them
      await new Promise((r) => setImmediate(r));
    }
    break;
  }
  case "stop":
    await watch.stop();
    block(2.5 * deadlineMs);
    break;
  default:
    throw new Error(`mode must be block, busy or stop (got ${mode})`);
}
