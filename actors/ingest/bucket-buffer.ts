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
import { sharedBufferRecycler, type ArrayAllocator, type BufferRecycler } from "../../src/codec/columns/buffer-recycler.ts";
import { IpcStaging } from "../../src/codec/parquet.ts";
import { failpoint, failpointArmed, failpointMatches, failpointOnData } from "../../src/failpoints.ts";
import type { DataField } from "../../src/format/data-types.ts";
import type { TableSchema } from "../../src/format/schema.ts";
import { encodeDataFile, type DataFileEncodeSpec } from "../../src/write/data-file-writer.ts";
import { encodeKeyValueFile, type KeyValueEncodeSpec } from "../../src/lsm/key-value-file-writer.ts";
import type { EncodedFlush } from "../../src/write/encoded-flush.ts";
import { flushBuffer, keyValueLayout, type KeyValueLayout } from "../../src/lsm/sort-buffer.ts";
import { decodeKeyed, decodeSized, withoutOversized, type IngestPayloads, type RejectedRow } from "./decode.ts";
import { warmUpParquetHere, type WarmUpResult } from "../../src/codec/warm-up.ts";

/**
 * How a bucket's rows are kept and encoded (plain values: it crosses to a worker). `keyed`: a primary-key table —
 * rows carry their kind (`fields` end with `_VALUE_KIND`), and a flush sorts and folds them into a level-0 sorted run
 * (src/lsm/sort-buffer.ts) encoded as a key-value file, plus the changelog file with `changelog-producer = input`.
 */
export interface BucketBufferSpec extends DataFileEncodeSpec {
  fields: readonly DataField[];
  /** Rows one message may hold (`natslake.ingest.max-message-rows`); a message with more is rejected whole. */
  maxMessageRows?: number;
  keyed?: { schema: TableSchema; encode: KeyValueEncodeSpec };
}

/** What a flush hands back: an append table's data files, or a primary-key table's sorted run and changelog. */
export type BucketFlush = EncodedFlush;

export interface AppendResult {
  rows: number;
  rejected: RejectedRow[];
  /** Rows held now (every append since the last flush). */
  bufferedRows: number;
  /** Payload bytes of the appends since the last flush: the measure of what is held (column data is of that order). */
  bufferedBytes: number;
}

/**
 * The IPC stream of this thread's flushes (see IpcStaging): the buffer of the largest flush so far, kept up to this
 * bound. A flush is bounded by the bucket's write buffer (`write-buffer-size`, 256 MiB by default, of payload bytes).
 */
const MAX_KEPT_STAGING_BYTES = 64 * 1024 * 1024;
let threadStaging: IpcStaging | null = null;
const flushStaging = (): IpcStaging => (threadStaging ??= new IpcStaging(MAX_KEPT_STAGING_BYTES));

export class BucketBuffer {
  private builder: RecordBatchBuilder | null = null;
  private bytes = 0;
  /** Rows of the last flush: the next builder starts at that size instead of doubling up to it again. */
  private lastFlushRows = 0;

  private readonly layout: KeyValueLayout | null;
  /** Rows of a message marked for failpoint `ingest.flush-row` are held (tests: a row that makes the flush fail). */
  private holdsMarkedRow = false;

  /**
   * Append tables: the column buffers come from the thread's recycler and go back to it once their flush is encoded
   * (nothing of a flush's result refers to them), so the next flush's columns are not new external memory — which
   * V8 answers with full collections of the thread's heap (buffer-recycler.ts). A primary-key flush sorts and folds
   * its rows into new batches and keeps allocating as before.
   */
  private readonly recycler: BufferRecycler | null;

  constructor(private readonly spec: BucketBufferSpec) {
    this.layout = spec.keyed === undefined ? null : keyValueLayout(spec.keyed.schema);
    this.recycler = spec.keyed === undefined ? sharedBufferRecycler() : null;
  }

  /** Decodes payloads (stream order) and keeps their rows; bad rows and payloads come back as rejections. */
  append(payloads: IngestPayloads): AppendResult {
    failpoint("bucket-buffer.append");
    if (failpointArmed("ingest.message") || failpointArmed("ingest.stall") || failpointArmed("ingest.flush-row")) this.poisonPoints(payloads);
    // Each doubling copies every column and frees the old buffers into the thread's heap, where they fragment it.
    const capacity = Math.max(16, Math.min(1 << 20, Math.max(Math.ceil(this.lastFlushRows * 1.1), Math.ceil(payloads.data.byteLength / 24))));
    const arrays: ArrayAllocator | undefined = this.recycler ?? undefined;
    const builder = (this.builder ??= new RecordBatchBuilder(this.spec.fields, capacity, arrays));
    const bounded = this.spec.maxMessageRows === undefined ? { payloads, rejected: [] } : withoutOversized(payloads, this.spec.maxMessageRows);
    const input = bounded.payloads;
    const out = this.spec.keyed === undefined ? decodeSized(this.spec.fields, input, { into: builder }) : decodeKeyed(this.spec.keyed.schema, input, builder);
    this.bytes += input.data.byteLength;
    const rejected = bounded.rejected.length === 0 ? out.rejected : [...bounded.rejected, ...out.rejected];
    return { rows: out.rows, rejected, bufferedRows: builder.length, bufferedBytes: this.bytes };
  }

  /** The failpoints of poison messages (src/failpoints.ts, `name[marker]`), message by message. */
  private poisonPoints(p: IngestPayloads): void {
    for (let i = 0; i < p.seqs.length; i++) {
      const bytes = p.data.subarray(p.offsets[i], p.offsets[i + 1]);
      failpointOnData("ingest.message", bytes);
      failpointOnData("ingest.stall", bytes);
      if (failpointMatches("ingest.flush-row", bytes)) this.holdsMarkedRow = true;
    }
  }

  /**
   * Encodes everything held and lets it go: an append table's rows as one data file (none when nothing is held); a
   * primary-key table's sorted and folded, its rows taking the sequence numbers `firstSeq`, `firstSeq + 1`, ….
   */
  flush(firstSeq = 0n): BucketFlush {
    const builder = this.builder;
    this.builder = null;
    this.bytes = 0;
    const held = builder === null ? 0 : builder.length;
    if (held > 0) this.lastFlushRows = held;
    const marked = this.holdsMarkedRow;
    this.holdsMarkedRow = false;
    if (marked) failpoint("ingest.flush-row");
    if (this.layout === null || this.spec.keyed === undefined) {
      if (builder === null || held === 0) return { kind: "append", files: [] };
      failpoint("bucket-buffer.flush");
      const batch = builder.finish();
      const file = encodeDataFile(batch, this.spec, flushStaging());
      this.recycler?.giveBatches([batch]);
      return { kind: "append", files: [file] };
    }
    if (builder === null || held === 0) return { kind: "keyed", rows: 0, data: null, changelog: null };
    failpoint("bucket-buffer.flush");
    const flushed = flushBuffer(this.layout, [builder.finish()], firstSeq);
    const encode = this.spec.keyed.encode;
    return {
      kind: "keyed",
      rows: held,
      data: flushed.data === null ? null : encodeKeyValueFile(flushed.data, encode),
      changelog: flushed.changelog === null ? null : encodeKeyValueFile(flushed.changelog, encode),
    };
  }
}

/** Warms this thread's Parquet encoder (a fresh worker's first encodes are 10–35× slow: src/codec/warm-up.ts). */
export function warmUpBucketEncoder(): WarmUpResult {
  return warmUpParquetHere();
}
