/**
 * Entry of a bucket-buffer worker thread (actors/ingest/bucket-buffers.ts): holds the BucketBuffers of the sessions
 * pinned to it and answers their requests one at a time, in the order they were posted — so a flush covers exactly
 * the appends posted before it. Plain JavaScript: in the compiled build (dist/) it loads bucket-buffer.js next to
 * it; from the sources it registers the TypeScript loader itself (loader flags are not passed on to workers).
 *
 * in:  { id, op: "open", session, spec } | { id, op: "append", session, payloads } (payload buffer transferred)
 *    | { id, op: "flush", session, firstSeq } | { id, op: "close", session }
 * out: { ready: true } once, when its code is loaded (a request's deadline counts from then at the earliest)
 *    | { id, ok: true, result } | { id, ok: false, message }; a flush's file bytes are transferred, not copied.
 */
import { URL } from "node:url";
import { importCompiledOrSource } from "../../src/compiled-or-source.mjs";
import { parentPort } from "node:worker_threads";

const mod = await importCompiledOrSource(new URL("./bucket-buffer.ts", import.meta.url));
const { BucketBuffer, warmUpBucketEncoder } = mod;

/** @type {Map<string, InstanceType<typeof BucketBuffer>>} */
const sessions = new Map();

function handle(msg) {
  switch (msg.op) {
    case "open":
      sessions.set(msg.session, new BucketBuffer(msg.spec));
      return { result: null, transfer: [] };
    case "append": {
      const buffer = sessions.get(msg.session);
      if (buffer === undefined) throw new Error(`no bucket buffer '${msg.session}' in this worker`);
      return { result: buffer.append(msg.payloads), transfer: [] };
    }
    case "flush": {
      const buffer = sessions.get(msg.session);
      if (buffer === undefined) throw new Error(`no bucket buffer '${msg.session}' in this worker`);
      const flushed = buffer.flush(msg.firstSeq);
      const files = flushed.kind === "append" ? flushed.files : [flushed.data, flushed.changelog].filter((f) => f !== null);
      const transfer = [];
      for (const f of files) if (f.bytes.byteOffset === 0 && f.bytes.byteLength === f.bytes.buffer.byteLength) transfer.push(f.bytes.buffer);
      return { result: flushed, transfer };
    }
    case "close":
      sessions.delete(msg.session);
      return { result: null, transfer: [] };
    case "warm-up":
      return { result: warmUpBucketEncoder(), transfer: [] };
    default:
      throw new Error(`unknown bucket buffer request '${msg.op}'`);
  }
}

parentPort.on("message", (msg) => {
  let reply;
  try {
    const { result, transfer } = handle(msg);
    reply = () => parentPort.postMessage({ id: msg.id, ok: true, result }, transfer);
  } catch (e) {
    reply = () => parentPort.postMessage({ id: msg.id, ok: false, message: e instanceof Error ? e.message : String(e) });
  }
  reply();
});
// After the listener: requests posted meanwhile wait in the port, and are answered after this.
parentPort.postMessage({ ready: true });
