/**
 * BucketBuffer: one bucket writer's decoded rows, kept where they were decoded (a decoding worker thread) and
 * encoded there into Parquet data files at flush — so column data never crosses to the writer's thread, which
 * only ever sees payload bytes going in and file bytes plus statistics coming out.
 *
 * Why: with the rows decoded in a worker but buffered on the writer's thread, every decoded batch crossed back
 * (an ArrayBuffer per fetch, kept until the flush, so old enough to wait for a full GC), was serialised again to
 * an Arrow IPC stream for the Parquet pool, and the encoded file crossed back once more: a node owning six buckets
 * at full rate peaked near 340 MB, against ~170 MB for the same intake without buffering or encoding.
 *
 * Rows go into one column builder per bucket, grown as needed and emptied by each flush. A pure class: the same
 * code runs on the writer's thread (tests, `NATSLAKE_DECODE_WORKERS=0`) and in a worker (bucket-worker.mjs).
 */
import { RecordBatchBuilder } from "../../src/codec/columns/record-batch-builder.ts";
import { failpoint } from "../../src/failpoints.ts";
import type { DataField } from "../../src/format/data-types.ts";
import { encodeDataFile, type DataFileEncodeSpec, type EncodedFile } from "../../src/write/data-file-writer.ts";
import { decodeSized, type IngestPayloads, type RejectedRow } from "./decode.ts";
import { warmUpParquetHere, type WarmUpResult } from "../../src/codec/warm-up.ts";

export interface BucketBufferSpec extends DataFileEncodeSpec {
  fields: readonly DataField[];
}

export interface AppendResult {
  rows: number;
  rejected: RejectedRow[];
  /** Rows held now (every append since the last flush). */
  bufferedRows: number;
  /** Payload bytes of the appends since the last flush: the measure of what is held (column data is of that order). */
  bufferedBytes: number;
}

export class BucketBuffer {
  private builder: RecordBatchBuilder | null = null;
  private bytes = 0;
  /** Rows of the last flush: the next builder starts at that size instead of doubling up to it again. */
  private lastFlushRows = 0;

  constructor(private readonly spec: BucketBufferSpec) {}

  /** Decodes payloads (stream order) and keeps their rows; bad rows and payloads come back as rejections. */
  append(payloads: IngestPayloads): AppendResult {
    failpoint("bucket-buffer.append");
    // Each doubling copies every column and frees the old buffers into the thread's heap, where they fragment it.
    const builder = (this.builder ??= new RecordBatchBuilder(this.spec.fields, Math.max(16, Math.min(1 << 20, Math.max(Math.ceil(this.lastFlushRows * 1.1), Math.ceil(payloads.data.byteLength / 24))))));
    const out = decodeSized(this.spec.fields, payloads, { into: builder });
    this.bytes += payloads.data.byteLength;
    return { rows: out.rows, rejected: out.rejected, bufferedRows: builder.length, bufferedBytes: this.bytes };
  }

  /** Encodes everything held as one data file (none when nothing is held) and lets it go. */
  flush(): EncodedFile[] {
    const builder = this.builder;
    this.builder = null;
    this.bytes = 0;
    if (builder === null || builder.length === 0) return [];
    this.lastFlushRows = builder.length;
    failpoint("bucket-buffer.flush");
    return [encodeDataFile(builder.finish(), this.spec)];
  }
}

/** Warms this thread's Parquet encoder (a fresh worker's first encodes are 10–35× slow: src/codec/warm-up.ts). */
export function warmUpBucketEncoder(): WarmUpResult {
  return warmUpParquetHere();
}
