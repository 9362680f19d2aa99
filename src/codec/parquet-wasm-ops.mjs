/**
 * The WebAssembly Parquet codec (parquet-wasm 0.8: arrow-rs compiled to WebAssembly): Arrow IPC stream → Parquet
 * bytes, and Parquet bytes → Arrow IPC stream. One of the two codecs parquet-ops.mjs chooses between (the other is
 * the native addon, parquet-native-ops.mjs, which writes the same bytes); the fallback where the addon is not built.
 *
 * Plain JavaScript on purpose: a worker thread gets no TypeScript loader when the process registered tsx through
 * `tsx/esm/api` (bin/natslake.mjs), and loading tsx in every worker costs ~150 ms of start-up. Types live in
 * parquet-ops.d.mts. Inputs are plain, structured-cloneable values (see `ParquetWriterSpec` there), so the same
 * request can run here or in a worker with identical results.
 */
import * as arrow from "apache-arrow";
import * as pw from "parquet-wasm";
import { rewriteFooter } from "./parquet-footer.mjs";

/** Writer properties from a resolved spec (every field set by `writerSpec` in parquet.ts). */
function writerProperties(spec) {
  let b = new pw.WriterPropertiesBuilder()
    .setCompression(spec.compression)
    .setMaxRowGroupSize(Math.max(1, spec.maxRowGroupSize))
    .setStatisticsEnabled(spec.statistics)
    .setDictionaryEnabled(spec.dictionary)
    .setWriterVersion(spec.writerVersion);
  for (const column of spec.dictionaryColumns) b = b.setColumnDictionaryEnabled(column, true);
  // INT96 stand-ins (parquet-footer.mjs) must be PLAIN: writer 2.0 would pick DELTA_BYTE_ARRAY for
  // FIXED_LEN_BYTE_ARRAY, which INT96 does not allow. parquet-wasm names columns by a single path part, so a nested
  // stand-in can only be reached through the file-wide default.
  for (const column of spec.plainColumns) {
    b = b.setColumnDictionaryEnabled(column, false).setColumnEncoding(column, pw.Encoding.PLAIN).setColumnStatisticsEnabled(column, pw.EnabledStatistics.None);
  }
  if (spec.plainEverywhere) b = b.setEncoding(pw.Encoding.PLAIN);
  if (spec.createdBy !== undefined) b = b.setCreatedBy(spec.createdBy);
  return b.build();
}

/** Encodes an Arrow IPC stream as one Parquet file, its footer rewritten when `spec.footer` asks for it. */
export function encodeIpcStream(ipc, spec) {
  const bytes = encodeWithArrowRs(ipc, spec);
  return spec.footer === undefined ? bytes : rewriteFooter(bytes, spec.footer);
}

function encodeWithArrowRs(ipc, spec) {
  const props = writerProperties(spec);
  let table;
  try {
    table = pw.Table.fromIPCStream(ipc);
  } catch (e) {
    props.free();
    throw e;
  }
  // Consumes both wasm objects, also when it throws.
  return pw.writeParquet(table, props);
}

/**
 * Decodes a Parquet file into an Arrow IPC stream: the chosen row groups (default all), the named columns (names the
 * file lacks are skipped; default all).
 *
 * Always parquet-wasm's synchronous reader, never its asynchronous file reader: a trap inside the asynchronous reader
 * (a Rust panic on a damaged page) is thrown from a callback its future runs, outside any promise of ours, so it
 * escapes as an uncaught exception that ends the thread and the caller never learns which file did it. The synchronous
 * reader throws where it is called. It decodes every column (it does not take `columns`), so the columns are selected
 * from its stream afterwards: more decoding than needed, which only this fallback codec pays.
 */
export async function decodeToIpcStream(bytes, opts = {}) {
  const batchSize = opts.batchSize ?? 65536;
  if (opts.columns === undefined && opts.rowGroups === undefined) return decodeAllToIpcStream(bytes, batchSize);
  const options = { batchSize };
  if (opts.rowGroups !== undefined) options.rowGroups = opts.rowGroups;
  const stream = pw.readParquet(bytes, options).intoIPCStream();
  if (opts.columns === undefined) return stream;
  const table = arrow.tableFromIPC(stream);
  const wanted = new Set(opts.columns);
  const kept = table.schema.fields.map((f) => f.name).filter((name) => wanted.has(name));
  if (kept.length === table.schema.fields.length) return stream;
  return arrow.tableToIPC(table.select(kept), "stream");
}

/** `decodeToIpcStream`: its stream is a copy out of wasm memory already, which a postMessage can transfer. */
export const decodeToTransferableIpcStream = decodeToIpcStream;

/** Decodes every column and row group on this thread (parquet-wasm's synchronous reader). */
export function decodeAllToIpcStream(bytes, batchSize) {
  // intoIPCStream consumes the wasm table and copies the stream out of wasm memory.
  return pw.readParquet(bytes, { batchSize }).intoIPCStream();
}

/** The file's Arrow schema as an IPC stream without batches. */
export function schemaToIpcStream(bytes) {
  return pw.readSchema(bytes).intoIPCStream();
}

/** Bytes of wasm linear memory (it grows to the largest job and never shrinks). */
/** No native bucket merge without the addon: src/scan/native-bucket-merge.ts merges in JavaScript. */
export function openBucketMerge() {
  return null;
}

export function retainedMemoryBytes() {
  return pw.wasmMemory().buffer.byteLength;
}

/**
 * The ArrayBuffer behind `bytes` when `bytes` covers all of it and it may be transferred to another thread
 * (not wasm memory, not shared, not empty), else null. Never an empty one: a buffer already transferred away
 * (detached) is empty too, and a postMessage that lists a detached buffer drops the message without an error — its
 * job would never settle and its worker stay taken (`ParquetEncoderPool.decode` refuses empty bytes before this).
 */
export function transferableBuffer(bytes) {
  if (bytes.byteLength === 0) return null;
  const buffer = bytes.buffer;
  if (!(buffer instanceof ArrayBuffer) || buffer === pw.wasmMemory().buffer) return null;
  return bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength ? buffer : null;
}
