/** Types of parquet-wasm-ops.mjs (plain JavaScript so worker threads need no TypeScript loader). */
import type { FooterPlan } from "./parquet-footer.d.mts";

/** Fully resolved Parquet writer settings: plain numbers and strings, so they can be posted to a worker. */
export interface ParquetWriterSpec {
  /** A `parquet-wasm` `Compression` value. */
  compression: number;
  maxRowGroupSize: number;
  /** A `parquet-wasm` `EnabledStatistics` value (0 none, 1 chunk, 2 chunk + page). */
  statistics: number;
  /** Dictionary encoding for every column. */
  dictionary: boolean;
  /** Columns with dictionary encoding even when `dictionary` is false. */
  dictionaryColumns: string[];
  /** A `parquet-wasm` `WriterVersion` value (0 = 1.0, 1 = 2.0). */
  writerVersion: number;
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

export function encodeIpcStream(ipc: Uint8Array, spec: ParquetWriterSpec): Uint8Array;
export function decodeToIpcStream(bytes: Uint8Array, opts?: ParquetDecodeSpec): Promise<Uint8Array>;
export function wasmMemoryBytes(): number;
/** The ArrayBuffer behind `bytes` if it covers all of it and may be transferred (not wasm memory, not shared). */
export function transferableBuffer(bytes: Uint8Array): ArrayBuffer | null;
