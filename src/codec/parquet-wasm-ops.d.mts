/** Types of parquet-wasm-ops.mjs (plain JavaScript so worker threads need no TypeScript loader): a `ParquetOps`. */
export { decodeAllToIpcStream, decodeToIpcStream, decodeToTransferableIpcStream, encodeIpcStream, openBucketMerge, retainedMemoryBytes, schemaToIpcStream, transferableBuffer } from "./parquet-ops.d.mts";
