/**
 * Which Parquet codec this process uses — the one place that decides, for the main thread and every worker thread:
 *
 * - `native` (parquet-native-ops.mjs, the Node-API addon scripts/setup.sh builds from native/parquet/) when the addon
 *   is built and loads;
 * - `wasm` (parquet-wasm-ops.mjs, parquet-wasm 0.8) otherwise.
 *
 * `NATSLAKE_PARQUET=wasm|native` overrides the choice; `native` when the addon cannot load is an error (thrown when
 * this module loads), so a process never silently runs on the path it was told not to. Both codecs write the same
 * bytes for the same request, so files do not depend on the choice. `parquetCodec` says which one is in use and why
 * (a node logs it once, in its "node started" line). The codec enums (parquet-wasm's numbering, which both take)
 * live here so that callers need not load parquet-wasm to name a compression.
 *
 * Plain JavaScript so worker threads need no TypeScript loader; types in parquet-ops.d.mts.
 */
import process from "node:process";

export const Compression = Object.freeze({ UNCOMPRESSED: 0, SNAPPY: 1, GZIP: 2, BROTLI: 3, LZ4: 4, ZSTD: 5, LZ4_RAW: 6 });
export const EnabledStatistics = Object.freeze({ None: 0, Chunk: 1, Page: 2 });
export const WriterVersion = Object.freeze({ V1: 0, V2: 1 });

/** The codec module for `path`; the native one throws when the addon is not built or does not load. */
export function loadParquetOps(path) {
  return path === "native" ? import("./parquet-native-ops.mjs") : import("./parquet-wasm-ops.mjs");
}

async function choose() {
  const asked = (process.env.NATSLAKE_PARQUET ?? "").trim().toLowerCase();
  if (asked !== "" && asked !== "native" && asked !== "wasm") {
    throw new Error(`NATSLAKE_PARQUET must be 'native' or 'wasm' (or unset: native when the addon is built), not '${process.env.NATSLAKE_PARQUET}'`);
  }
  if (asked === "wasm") return { ops: await loadParquetOps("wasm"), choice: { path: "wasm", reason: "NATSLAKE_PARQUET=wasm" } };
  try {
    return { ops: await loadParquetOps("native"), choice: { path: "native", reason: asked === "native" ? "NATSLAKE_PARQUET=native" : "the native addon is built" } };
  } catch (e) {
    const why =
      e instanceof Error && "code" in e && e.code === "MODULE_NOT_FOUND" ? "it is not built" : e instanceof Error ? e.message.split("\n")[0] : String(e);
    if (asked === "native") {
      throw new Error(`NATSLAKE_PARQUET=native, but the native Parquet addon does not load (${why}); scripts/setup.sh builds it where cargo is installed`);
    }
    return { ops: await loadParquetOps("wasm"), choice: { path: "wasm", reason: `the native addon does not load: ${why}` } };
  }
}

const { ops, choice } = await choose();

export const parquetCodec = Object.freeze(choice);
export const encodeIpcStream = ops.encodeIpcStream;
export const decodeToIpcStream = ops.decodeToIpcStream;
export const decodeToTransferableIpcStream = ops.decodeToTransferableIpcStream;
export const decodeAllToIpcStream = ops.decodeAllToIpcStream;
export const schemaToIpcStream = ops.schemaToIpcStream;
export const openBucketMerge = ops.openBucketMerge;
export const retainedMemoryBytes = ops.retainedMemoryBytes;
export const transferableBuffer = ops.transferableBuffer;
