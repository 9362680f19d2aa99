/** Types of parquet-native-ops.mjs (plain JavaScript so worker threads need no TypeScript loader): a `ParquetOps`. */
export { decodeAllToIpcStream, decodeToIpcStream, decodeToTransferableIpcStream, encodeIpcStream, openBucketMerge, retainedMemoryBytes, schemaToIpcStream, transferableBuffer } from "./parquet-ops.d.mts";
/** Where the addon is looked for (native/parquet/natslake-parquet.node of the package root). */
export declare const ADDON_PATH: string;
/** The addon's zstd context pool counters (native/parquet/src/zstd_pool.rs); null where it is not built in. */
export declare function zstdContextPool(): { created: number; reused: number; idle: number; idleBytes: number } | null;
