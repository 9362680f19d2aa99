/**
 * A primary-key bucket's whole flush as one pure step — its buffered batches sorted and folded (sort-buffer.ts), the
 * sorted run and, with `changelog-producer = input`, the changelog encoded as Parquet with their keys, statistics
 * and sequence range (key-value-file-writer.ts) — so it can run on any thread: TableWrite hands large buckets to a
 * Parquet worker (`ParquetEncoderPool.flushKeyed`, as an Arrow IPC stream), whose small heap collects the flush's
 * garbage cheaply, while the calling thread, whose heap may hold millions of the caller's row objects, only routes
 * rows and writes files.
 */
import * as arrow from "apache-arrow";
import type { TableSchema } from "../format/schema.ts";
import { encodeKeyValueFile, type EncodedKeyValueFile, type KeyValueEncodeSpec } from "./key-value-file-writer.ts";
import { flushBuffer, keyValueLayout } from "./sort-buffer.ts";

/** What a flush needs besides its rows, as plain values (structured-cloneable for a worker thread). */
export interface KeyedFlushSpec {
  schema: TableSchema;
  encode: KeyValueEncodeSpec;
  /** The sequence number of the first buffered row (row i takes firstSeq + i). */
  firstSeq: bigint;
}

/** The files of one flush, encoded: the level-0 sorted run (null when nothing survives) and the changelog. */
export interface EncodedKeyedFlush {
  data: EncodedKeyValueFile | null;
  changelog: EncodedKeyValueFile | null;
}

/** Sorts, folds and encodes a bucket's buffered batches (columns: the table's, then the buffer's kind column). */
export function encodeKeyedFlush(batches: readonly arrow.RecordBatch[], spec: KeyedFlushSpec): EncodedKeyedFlush {
  const flushed = flushBuffer(keyValueLayout(spec.schema), batches, spec.firstSeq);
  return {
    data: flushed.data === null ? null : encodeKeyValueFile(flushed.data, spec.encode),
    changelog: flushed.changelog === null ? null : encodeKeyValueFile(flushed.changelog, spec.encode),
  };
}

/** `encodeKeyedFlush` of the batches of an Arrow IPC stream (a Parquet worker's input). */
export function encodeKeyedFlushIpc(ipc: Uint8Array, spec: KeyedFlushSpec): EncodedKeyedFlush {
  return encodeKeyedFlush(arrow.tableFromIPC(ipc).batches, spec);
}
