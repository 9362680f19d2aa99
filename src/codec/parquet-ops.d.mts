/** Types of parquet-ops.mjs and of the two codecs behind it (plain JavaScript so worker threads need no TypeScript loader). */
import type { FooterPlan } from "./parquet-footer.d.mts";

/** Parquet codecs, numbered as parquet-wasm 0.8 numbers them (both codecs take these values). */
export declare const Compression: Readonly<{ UNCOMPRESSED: 0; SNAPPY: 1; GZIP: 2; BROTLI: 3; LZ4: 4; ZSTD: 5; LZ4_RAW: 6 }>;
export type Compression = (typeof Compression)[keyof typeof Compression];
/** Footer statistics: none, per column chunk, per chunk and page (parquet-wasm's numbering). */
export declare const EnabledStatistics: Readonly<{ None: 0; Chunk: 1; Page: 2 }>;
export type EnabledStatistics = (typeof EnabledStatistics)[keyof typeof EnabledStatistics];
/** Parquet writer version 1.0 or 2.0 (parquet-wasm's numbering). */
export declare const WriterVersion: Readonly<{ V1: 0; V2: 1 }>;
export type WriterVersion = (typeof WriterVersion)[keyof typeof WriterVersion];

/** Fully resolved Parquet writer settings: plain numbers and strings, so they can be posted to a worker. */
export interface ParquetWriterSpec {
  compression: Compression;
  maxRowGroupSize: number;
  statistics: EnabledStatistics;
  /** Dictionary encoding for every column. */
  dictionary: boolean;
  /** Columns with dictionary encoding even when `dictionary` is false. */
  dictionaryColumns: string[];
  writerVersion: WriterVersion;
  createdBy?: string | undefined;
  /** Top-level columns written PLAIN without dictionary (INT96 stand-ins). */
  plainColumns: string[];
  /** PLAIN as every column's encoding (writer 2.0 with a nested INT96 stand-in). */
  plainEverywhere: boolean;
  /** Footer changes applied after arrow-rs wrote the file (parquet-footer.mjs); none when undefined. */
  footer?: FooterPlan | undefined;
}

export interface ParquetDecodeSpec {
  /** Top-level columns to decode, by name (unknown names are skipped); default all. */
  columns?: string[] | undefined;
  /** Row groups to decode (indexes); default all. */
  rowGroups?: number[] | undefined;
  /** Rows per record batch; default 65536. */
  batchSize?: number | undefined;
}

/** What each codec module (parquet-wasm-ops.mjs, parquet-native-ops.mjs) exports. */
export interface ParquetOps {
  /** Arrow IPC stream → one Parquet file, its footer rewritten when `spec.footer` asks for it. */
  encodeIpcStream(ipc: Uint8Array, spec: ParquetWriterSpec): Uint8Array;
  /** Parquet file → Arrow IPC stream of the chosen columns and row groups. */
  decodeToIpcStream(bytes: Uint8Array, opts?: ParquetDecodeSpec): Promise<Uint8Array>;
  /** `decodeToIpcStream`'s stream in memory that a postMessage can transfer (for a worker thread that posts it). */
  decodeToTransferableIpcStream(bytes: Uint8Array, opts?: ParquetDecodeSpec): Promise<Uint8Array>;
  /** Parquet file → Arrow IPC stream of every column and row group, on this thread before returning. */
  decodeAllToIpcStream(bytes: Uint8Array, batchSize: number): Uint8Array;
  /** The Arrow schema of a Parquet file (from its footer) as an IPC stream without batches. */
  schemaToIpcStream(bytes: Uint8Array): Uint8Array;
  /**
   * A deduplicate bucket's merge in the native addon (src/scan/native-bucket-merge.ts), or null when the codec has
   * none (wasm, or an addon built before it). Throws `[unsupported] …` for a bucket it does not handle, `[file k] …`
   * for a file that does not decode, `[rows k n] …` for a row count that differs from the manifest.
   */
  openBucketMerge(files: Uint8Array[], spec: NativeBucketMergeSpec): NativeBucketMerge | null;
  /** Bytes the codec keeps after its calls return (wasm linear memory never shrinks; the native codec keeps none). */
  retainedMemoryBytes(): number;
  /** The ArrayBuffer behind `bytes` if it covers all of it and may be transferred (not wasm memory, not shared). */
  transferableBuffer(bytes: Uint8Array): ArrayBuffer | null;
}

/** What the native bucket merge reads and returns (native/parquet/src/merge.rs `BucketMergeSpec`). */
export interface NativeBucketMergeSpec {
  keyColumns: string[];
  outputColumns: string[];
  /** The bucket's sections in key order, each its sorted runs, each run its files (indexes) in key order. */
  sections: number[][][];
  /** The manifest's row count of each file. */
  rowCounts: number[];
  ignoreDelete: boolean;
  batchRows: number;
}

/** A bucket's merge in the addon: the output schema, then one output batch per `next()` (null at the end). */
export interface NativeBucketMerge {
  /** The output columns' schema as an Arrow IPC stream without batches. */
  schema(): Uint8Array;
  /** The next output batch as an Arrow IPC stream (its schema, then the batch); null when the merge is done. */
  next(): Uint8Array | null;
  /** Lets go of the files' bytes and decoded batches at once (a read stopped early); `next` fails after it. */
  close(): void;
}

/** Which codec this process uses and why (`NATSLAKE_PARQUET`, or whether the addon loaded). */
export interface ParquetCodecChoice {
  path: "native" | "wasm";
  reason: string;
}

export declare const parquetCodec: ParquetCodecChoice;
export declare const encodeIpcStream: ParquetOps["encodeIpcStream"];
export declare const decodeToIpcStream: ParquetOps["decodeToIpcStream"];
export declare const decodeToTransferableIpcStream: ParquetOps["decodeToTransferableIpcStream"];
export declare const decodeAllToIpcStream: ParquetOps["decodeAllToIpcStream"];
export declare const schemaToIpcStream: ParquetOps["schemaToIpcStream"];
export declare const openBucketMerge: ParquetOps["openBucketMerge"];
export declare const retainedMemoryBytes: ParquetOps["retainedMemoryBytes"];
export declare const transferableBuffer: ParquetOps["transferableBuffer"];
/** A codec module itself, for tests and benchmarks that compare the two; rejects for `native` when the addon does not load. */
export declare function loadParquetOps(path: "native" | "wasm"): Promise<ParquetOps>;
