/**
 * The native Parquet codec: the same calls as parquet-wasm-ops.mjs, done by natslake's Node-API addon
 * (native/parquet/: arrow-rs's `parquet` crate, the release parquet-wasm 0.8 is built from, compiled for this machine).
 * For the same request it writes the same bytes as the WebAssembly codec (test/unit/codec/parquet-native-parity.test.ts),
 * with less CPU, and keeps no memory after a call: arrow-rs allocates from the process heap, which it returns when
 * a call ends, where wasm linear memory only grows. natslake's footer rewrite (parquet-footer.mjs) is shared.
 *
 * Loading this module loads the addon and throws when it is not built (scripts/setup.sh builds it where `cargo`
 * exists): parquet-ops.mjs imports it only to try. napi-rs addons are context-aware, so each worker thread loads its
 * own instance. Plain JavaScript so worker threads need no TypeScript loader; types in parquet-native-ops.d.mts.
 */
import { requireNativeAddon } from "./native-addon.mjs";
import { rewriteFooter } from "./parquet-footer.mjs";

export { ADDON_PATH } from "./native-addon.mjs";

const addon = requireNativeAddon();

/**
 * ArrayBuffers over memory arrow-rs allocated (decoded IPC streams, handed over without a copy). Node marks such
 * external buffers untransferable: a postMessage that lists one in its transfer list copies it (Node 20) or throws
 * (later Node), so `transferableBuffer` never offers them. Encoded files come in memory V8 owns (see lib.rs).
 */
const external = new WeakSet();

/**
 * Callers get a plain Uint8Array view of the addon's Node Buffer, as from the wasm codec: Buffer's `slice` shares
 * memory where Uint8Array's copies, and parquet-footer.mjs relies on the copy.
 */
const plain = (buffer) => new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);

function decoded(buffer) {
  external.add(buffer.buffer);
  return plain(buffer);
}

/** Encodes an Arrow IPC stream as one Parquet file, its footer rewritten when `spec.footer` asks for it. */
export function encodeIpcStream(ipc, spec) {
  const bytes = plain(addon.encodeIpcStream(ipc, spec));
  return spec.footer === undefined ? bytes : rewriteFooter(bytes, spec.footer);
}

/** Decodes the named top-level columns (names the file lacks are skipped) of the chosen row groups. */
export async function decodeToIpcStream(bytes, opts = {}) {
  return decoded(addon.decodeToIpcStream(bytes, opts));
}

/**
 * `decodeToIpcStream`'s stream in memory V8 owns, for a caller that posts it to another thread (a Parquet worker):
 * the addon writes the stream straight into a Node Buffer (one copy of the decoded columns, not two), which a
 * postMessage can transfer. (The addon is built from these sources, cached by their hash: it always has the call.)
 */
export async function decodeToTransferableIpcStream(bytes, opts = {}) {
  return plain(addon.decodeToTransferableIpcStream(bytes, opts));
}

/** Decodes every column and row group on this thread. */
export function decodeAllToIpcStream(bytes, batchSize) {
  return decoded(addon.decodeToIpcStream(bytes, { batchSize }));
}

/** The file's Arrow schema as an IPC stream without batches. */
export function schemaToIpcStream(bytes) {
  return decoded(addon.schemaToIpcStream(bytes));
}

/**
 * The addon's merge of a deduplicate bucket (native/parquet/src/merge.rs), or null when the loaded addon predates
 * it: src/scan/native-bucket-merge.ts then merges in JavaScript.
 */
export function openBucketMerge(files, spec) {
  return typeof addon.BucketMerge?.prototype?.close === "function" ? new addon.BucketMerge(files, spec) : null;
}

/**
 * Nothing grows from call to call: the only memory the addon keeps is its pool of idle zstd contexts, process-wide
 * and bounded in bytes (native/parquet/src/zstd_pool.rs), not a worker's to recycle.
 */
export function retainedMemoryBytes() {
  return 0;
}

/**
 * The addon's zstd context pool counters — contexts zstd created, creations answered from the pool, idle contexts and
 * their bytes —
 * or null where the pool is not built in (not Linux).
 */
export function zstdContextPool() {
  return addon.zstdContextPool() ?? null;
}

/**
 * The ArrayBuffer behind `bytes` when `bytes` covers all of it and it may be transferred to another thread (not the
 * addon's memory, not shared, not empty), else null. Never an empty one: a detached buffer is empty too, and a
 * postMessage that lists one drops the message without an error (`ParquetEncoderPool.decode` refuses empty bytes
 * before this).
 */
export function transferableBuffer(bytes) {
  if (bytes.byteLength === 0) return null;
  const buffer = bytes.buffer;
  if (!(buffer instanceof ArrayBuffer) || external.has(buffer)) return null;
  return bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength ? buffer : null;
}
