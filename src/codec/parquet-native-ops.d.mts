/** Types of parquet-native-ops.mjs (plain JavaScript so worker threads need no TypeScript loader): a `ParquetOps`. */
export { decodeAllToIpcStream, decodeToIpcStream, decodeToTransferableIpcStream, encodeIpcStream, retainedMemoryBytes, schemaToIpcStream, transferableBuffer } from "./parquet-ops.d.mts";
/** Where the addon is looked for (native/parquet/natslake-parquet.node of the package root). */
export declare const ADDON_PATH: string;
