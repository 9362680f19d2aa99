/**
 * Entry of a primary-key compaction worker thread (actors/lsm-rewriter.ts): rewrites one bucket's compaction plan at
 * a time — reading, merging and writing its files on this thread, never on the node's main thread. Plain JavaScript:
 * in the compiled build (dist/) it loads lsm-rewrite-job.js next to it; from the sources it registers the
 * TypeScript loader itself (loader flags are not passed on to workers). It warms its Parquet encoder and decoder
 * before it says it is ready.
 *
 * Once warm, the thread lowers its own CPU priority to `workerData.nice` (src/codec/thread-priority.mjs), so compaction
 * yields the cores to ingest and commits; where that fails it says why once ({ id: 0, priorityError }) and works on.
 * Not before: loading the modules and the warm-up at that priority took seconds on a busy machine (the node starts
 * its workers before it takes buckets), and a bucket's first compaction waited for them — at 250 ms commits its
 * sorted runs reached the stop trigger meanwhile. Requests posted before it is ready wait in the port.
 *
 * in:  { id, request }                    (an LsmRewriteRequest)
 * out: { id, path }                       (an output's path, before its file is written; any number)
 *      { id, ok: true, result }           (the BucketCompaction)
 *      { id, ok: false, message, kind, retryable }
 */
import { URL } from "node:url";
import { importCompiledOrSource } from "../src/compiled-or-source.mjs";
import { parentPort, workerData } from "node:worker_threads";
import { lowerThreadPriority } from "../src/codec/thread-priority.mjs";

const mod = await importCompiledOrSource(new URL("./lsm-rewrite-job.ts", import.meta.url));
const { runLsmRewrite, warmUpLsmRewrite } = mod;
await warmUpLsmRewrite().catch(() => undefined);

const priorityError = lowerThreadPriority(Number(workerData?.nice ?? 0));
if (priorityError !== null) parentPort.postMessage({ id: 0, priorityError });

parentPort.on("message", async (msg) => {
  try {
    const result = await runLsmRewrite(msg.request, (path) => parentPort.postMessage({ id: msg.id, path }));
    parentPort.postMessage({ id: msg.id, ok: true, result });
  } catch (e) {
    parentPort.postMessage({ id: msg.id, ok: false, message: e instanceof Error ? e.message : String(e), kind: e?.kind, retryable: e?.retryable === true });
  }
});
parentPort.postMessage({ id: 0, ready: true });
