/**
 * Ingest decoding: a writer's fetched messages (msgpack RowBatches of one bucket, in stream order) → one Arrow
 * record batch of the table's columns, plus a dead letter for every row or payload that does not fit.
 *
 * A pure function of its input, so it runs the same on the writer's thread or in a worker thread
 * (decode-worker.mjs): the job carries the payloads in one buffer (transferred, not copied) and the result carries
 * the batch as an Arrow IPC stream (transferred back; the reader wraps its buffers without copying).
 */
import * as arrow from "apache-arrow";
import { RecordBatchBuilder } from "../../src/codec/columns.ts";
import { ensureError } from "../../src/errors.ts";
import type { DataField } from "../../src/spec/data-types.ts";
import { batchRowConverter, decodeRowBatch, jsonSafe, originalRow } from "../wire/row-batch.ts";

/** Messages of one bucket, in stream order: message `i` is `data[offsets[i] .. offsets[i + 1])` with `seqs[i]`. */
export interface IngestPayloads {
  seqs: number[];
  /** `seqs.length + 1` byte offsets into `data`. */
  offsets: number[];
  data: Uint8Array;
}

export interface DecodeJob extends IngestPayloads {
  /** Identifies `fields` (e.g. `db.table#schemaId`): a worker compiles a layout once per key. */
  fieldsKey: string;
  fields: readonly DataField[];
}

/** A row (rowIndex ≥ 0) or a whole payload (rowIndex −1) that goes to the dead-letter subject. */
export interface RejectedRow {
  seq: number;
  rowIndex: number;
  reason: string;
  /** JSON-safe original values (the row keyed by column name), or the payload's bytes in base64. */
  original: unknown;
}

export interface DecodeOutput {
  /** Rows appended (the batch's length). */
  rows: number;
  rejected: RejectedRow[];
}

/** Packs messages into the job's single buffer (one copy; the buffer is then transferable). */
export function packPayloads(messages: ReadonlyArray<{ seq: number; data: Uint8Array }>): IngestPayloads {
  let total = 0;
  for (const m of messages) total += m.data.byteLength;
  const data = new Uint8Array(total);
  const offsets = [0];
  const seqs: number[] = [];
  let pos = 0;
  for (const m of messages) {
    data.set(m.data, pos);
    pos += m.data.byteLength;
    offsets.push(pos);
    seqs.push(m.seq);
  }
  return { seqs, offsets, data };
}

/**
 * Decodes every message into `builder` (rows of one bucket, no partitions): a payload that is not a RowBatch, a
 * batch naming unknown columns, and a row whose values do not fit the schema are rejected with the reason; the rest
 * of the batch still lands. Errors other than bad input (a bug) propagate.
 */
export function decodeInto(builder: RecordBatchBuilder, fields: readonly DataField[], p: IngestPayloads): DecodeOutput {
  const rejected: RejectedRow[] = [];
  let rows = 0;
  for (let i = 0; i < p.seqs.length; i++) {
    const seq = p.seqs[i]!;
    const bytes = p.data.subarray(p.offsets[i], p.offsets[i + 1]);
    let batch;
    try {
      batch = decodeRowBatch(bytes);
    } catch (e) {
      rejected.push({ seq, rowIndex: -1, reason: ensureError(e).message, original: Buffer.from(bytes).toString("base64") });
      continue;
    }
    const { index, check, badCols } = batchRowConverter(fields, batch.cols);
    for (let r = 0; r < batch.rows.length; r++) {
      const values = batch.rows[r];
      try {
        if (badCols !== null) throw new Error(badCols);
        check(values);
        builder.appendArray(values as unknown[], index);
        rows++;
      } catch (e) {
        rejected.push({ seq, rowIndex: r, reason: ensureError(e).message, original: jsonSafe(originalRow(batch.cols, values)) });
      }
    }
  }
  return { rows, rejected };
}

/** Fields per key, so repeated jobs reuse one compiled layout (batchRowConverter caches by the fields' identity). */
const layouts = new Map<string, readonly DataField[]>();

function fieldsFor(job: DecodeJob): readonly DataField[] {
  let f = layouts.get(job.fieldsKey);
  if (f === undefined) {
    if (layouts.size >= 64) layouts.clear();
    f = job.fields;
    layouts.set(job.fieldsKey, f);
  }
  return f;
}

export interface EncodedDecodeOutput extends DecodeOutput {
  /** The rows as an Arrow IPC stream (one record batch); null when no row landed. */
  ipc: Uint8Array | null;
}

/** Decodes a job into a fresh batch, returned as an Arrow IPC stream (what a worker sends back). */
export function decodeJob(job: DecodeJob): EncodedDecodeOutput {
  const fields = fieldsFor(job);
  let total = 0;
  for (let i = 0; i < job.seqs.length; i++) total += job.offsets[i + 1]! - job.offsets[i]!;
  // Capacity from the payload size (≥ ~16 bytes per row on the wire): one allocation per column on the common path.
  const builder = new RecordBatchBuilder(fields, Math.max(64, Math.min(1 << 20, Math.ceil(total / 16))));
  const out = decodeInto(builder, fields, job);
  return { ...out, ipc: out.rows === 0 ? null : arrow.tableToIPC(new arrow.Table([builder.finish()]), "stream") };
}
