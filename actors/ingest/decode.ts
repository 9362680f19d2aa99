/**
 * Ingest decoding: a writer's fetched messages (msgpack RowBatches of one bucket, in stream order) → the table's
 * Arrow columns, plus a dead letter for every row or payload that does not fit (`decodeSized`, which a bucket buffer
 * runs in its worker thread); or canonical rows, one by one, for tables whose rows are routed (`decodeRows`).
 *
 * Pure functions of their input: they run the same on the writer's thread and in a worker thread. Payloads travel in
 * one buffer (`packPayloads`), transferred to a worker rather than copied.
 */
import { RecordBatchBuilder } from "../../src/codec/columns/record-batch-builder.ts";
import { ensureError } from "../../src/errors.ts";
import type { DataField } from "../../src/format/data-types.ts";
import type { Row } from "../../src/format/values.ts";
import type { RowBatch } from "../wire/messages.ts";
import { batchRowConverter, decodeRowBatch, jsonSafe, originalRow, unpackValue } from "../wire/row-batch.ts";
import { DirectReader, directDecoderFor, readHeader, type DirectDecoder } from "./direct.ts";
import { nativeDecoderFor } from "./native-decode.ts";
import type { TableSchema } from "../../src/format/schema.ts";
import { compileKeyedInput } from "../../src/lsm/keyed-input.ts";
import { VALUE_KIND_FIELD } from "../../src/lsm/key-value-fields.ts";

/** Messages of one bucket, in stream order: message `i` is `data[offsets[i] .. offsets[i + 1])` with `seqs[i]`. */
export interface IngestPayloads {
  seqs: number[];
  /** `seqs.length + 1` byte offsets into `data`. */
  offsets: number[];
  data: Uint8Array;
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

/**
 * Packs messages into the job's single buffer (one copy; the buffer is then transferable). With `copy: false` a single
 * message is used as it is (decoding on this thread needs no transferable buffer).
 */
export function packPayloads(messages: ReadonlyArray<{ seq: number; data: Uint8Array }>, opts: { copy?: boolean } = {}): IngestPayloads {
  if (opts.copy === false && messages.length === 1) {
    const m = messages[0]!;
    return { seqs: [m.seq], offsets: [0, m.data.byteLength], data: m.data };
  }
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
 * The table's bound on rows per message (`natslake.ingest.max-message-rows`): a message over it is rejected whole,
 * before its rows are decoded — a row can be one byte on the wire (an empty array) and a null in every column in
 * memory. Returns `p` itself when no message is over it, else the others packed anew.
 */
export function withoutOversized(p: IngestPayloads, maxRows: number): { payloads: IngestPayloads; rejected: RejectedRow[] } {
  const rejected: RejectedRow[] = [];
  const kept: Array<{ seq: number; data: Uint8Array }> = [];
  for (let i = 0; i < p.seqs.length; i++) {
    const seq = p.seqs[i]!;
    const data = p.data.subarray(p.offsets[i], p.offsets[i + 1]);
    const over = oversized(seq, data, maxRows);
    if (over === null) kept.push({ seq, data });
    else rejected.push(over);
  }
  return rejected.length === 0 ? { payloads: p, rejected } : { payloads: packPayloads(kept), rejected };
}

/** The rejection of one message over `maxRows` rows (see `withoutOversized`); null when it is within. */
export function oversized(seq: number, data: Uint8Array, maxRows: number): RejectedRow | null {
  const rows = rowCountOf(data);
  if (rows <= maxRows) return null;
  return { seq, rowIndex: -1, reason: `the message holds ${rows} rows, more than the table's natslake.ingest.max-message-rows (${maxRows}): publish smaller batches`, original: Buffer.from(data).toString("base64") };
}

/** Rows of a RowBatch payload, read from its envelope (0 for a payload that is not one: decoding rejects it). */
function rowCountOf(data: Uint8Array): number {
  const h = readHeader(new DirectReader(data));
  if (h !== null) return h.rowCount;
  try {
    return decodeRowBatch(data).rows.length;
  } catch {
    return 0;
  }
}

/**
 * Decodes every message into a fresh builder, or into `opts.into` (a bucket buffer's builder kept across jobs), for
 * rows of one bucket, no partitions: a payload that is not a RowBatch,
 * a batch naming unknown columns, and a row whose values do not fit the schema are rejected with the reason; the
 * rest of the batch still lands. Errors other than bad input (a bug) propagate. Tables whose columns all have a direct path (actors/ingest/direct.ts) are decoded
 * straight from the msgpack bytes, rows it does not take by msgpackr in place; others unpack every payload first,
 * so the builder is made with exactly the rows' capacity. Where the addon's decoder loads (native-decode.ts) it takes
 * the payloads the direct path would take whole (`opts.native: false`: never). `builder` is null when no payload held
 * a row (and no builder was given).
 */
export function decodeSized(fields: readonly DataField[], p: IngestPayloads, opts: { direct?: boolean; native?: boolean; into?: RecordBatchBuilder } = {}): DecodeOutput & { builder: RecordBatchBuilder | null } {
  const direct = opts.direct === false ? null : directFor(fields);
  if (direct === null) {
    const unpacked = unpackAll(p);
    let capacity = 0;
    for (const u of unpacked) if (u.batch !== null) capacity += u.batch.rows.length;
    if (capacity === 0) return { builder: opts.into ?? null, ...appendDecoded(null, fields, unpacked) };
    const builder = opts.into ?? new RecordBatchBuilder(fields, capacity);
    return { builder, ...appendDecoded(builder, fields, unpacked) };
  }
  // ~16 bytes per row at the least on the wire: no column grows more than once or twice.
  const builder = opts.into ?? new RecordBatchBuilder(fields, Math.max(16, Math.min(1 << 20, Math.ceil(p.data.byteLength / 24))));
  const rejected: RejectedRow[] = [];
  const native = opts.native === false ? null : nativeDecoderFor(fields);
  let rows = 0;
  for (let i = 0; i < p.seqs.length; i++) {
    const seq = p.seqs[i]!;
    const bytes = p.data.subarray(p.offsets[i], p.offsets[i + 1]);
    // The addon takes a payload only whole and exactly as the direct path below would (native-decode.ts).
    const taken = native === null ? -1 : native.decodeInto(builder, bytes);
    if (taken >= 0) {
      rows += taken;
      continue;
    }
    const rejectedBefore = rejected.length;
    let slowRows = 0;
    let cols: readonly string[] = [];
    const res = direct.decodeMessage(builder, bytes, (rowIndex, start, end) => {
      let values: unknown;
      try {
        values = unpackValue(bytes.subarray(start, end));
      } catch {
        return false;
      }
      if (appendRow(builder, fields, cols, seq, rowIndex, values, rejected)) slowRows++;
      return true;
    }, (c) => (cols = c));
    if (res !== null) {
      rows += res.appended + slowRows;
      continue;
    }
    // Not a plain RowBatch, or a row msgpackr could not read alone: the generic path takes the whole payload.
    rejected.length = rejectedBefore;
    const out = appendDecoded(builder, fields, [unpackOne(seq, bytes)]);
    rows += out.rows;
    for (const x of out.rejected) rejected.push(x);
  }
  return { builder: rows === 0 && opts.into === undefined ? null : builder, rows, rejected };
}

const directDecoders = new WeakMap<readonly DataField[], DirectDecoder | null>();

/** The direct decoder of a layout (cached); none with NATSLAKE_DECODE_DIRECT=0, the escape hatch. */
function directFor(fields: readonly DataField[]): DirectDecoder | null {
  if (process.env["NATSLAKE_DECODE_DIRECT"] === "0") return null;
  let d = directDecoders.get(fields);
  if (d === undefined) {
    d = directDecoderFor(fields);
    directDecoders.set(fields, d);
  }
  return d;
}

/** Appends one row by the generic rules, or records its rejection; true when it landed. */
function appendRow(builder: RecordBatchBuilder, fields: readonly DataField[], cols: readonly string[], seq: number, rowIndex: number, values: unknown, rejected: RejectedRow[]): boolean {
  const { index, check, badCols } = batchRowConverter(fields, cols);
  try {
    if (badCols !== null) throw new Error(badCols);
    check(values);
    builder.appendArray(values as unknown[], index);
    return true;
  } catch (e) {
    rejected.push({ seq, rowIndex, reason: ensureError(e).message, original: jsonSafe(originalRow(cols, values)) });
    return false;
  }
}

interface Unpacked {
  seq: number;
  batch: RowBatch | null;
  /** Why the payload is unreadable, with its bytes in base64 (when batch is null). */
  error?: { reason: string; original: string };
}

function unpackAll(p: IngestPayloads): Unpacked[] {
  const out: Unpacked[] = [];
  for (let i = 0; i < p.seqs.length; i++) out.push(unpackOne(p.seqs[i]!, p.data.subarray(p.offsets[i], p.offsets[i + 1])));
  return out;
}

function unpackOne(seq: number, bytes: Uint8Array): Unpacked {
  try {
    return { seq, batch: decodeRowBatch(bytes) };
  } catch (e) {
    return { seq, batch: null, error: { reason: ensureError(e).message, original: Buffer.from(bytes).toString("base64") } };
  }
}

function appendDecoded(builder: RecordBatchBuilder | null, fields: readonly DataField[], unpacked: readonly Unpacked[]): DecodeOutput {
  const rejected: RejectedRow[] = [];
  let rows = 0;
  for (const { seq, batch, error } of unpacked) {
    if (batch === null) {
      rejected.push({ seq, rowIndex: -1, reason: error!.reason, original: error!.original });
      continue;
    }
    for (let r = 0; r < batch.rows.length; r++) if (appendRow(builder!, fields, batch.cols, seq, r, batch.rows[r], rejected)) rows++;
  }
  return { rows, rejected };
}

/**
 * A primary-key table's bucket: every row of every message, with its kind (`_row_kind`, src/lsm/keyed-input.ts),
 * into `builder`, whose columns are the table's then `_VALUE_KIND`. A payload that is not a RowBatch, and a row with
 * a bad kind, without its key or that does not fit the schema, are rejected with the reason; the rest lands.
 */
export function decodeKeyed(schema: TableSchema, p: IngestPayloads, builder: RecordBatchBuilder): DecodeOutput {
  const keyed = keyedInputOf(schema);
  const rejected: RejectedRow[] = [];
  let rows = 0;
  for (let i = 0; i < p.seqs.length; i++) {
    const { seq, batch, error } = unpackOne(p.seqs[i]!, p.data.subarray(p.offsets[i], p.offsets[i + 1]));
    if (batch === null) {
      rejected.push({ seq, rowIndex: -1, reason: error!.reason, original: error!.original });
      continue;
    }
    for (let r = 0; r < batch.rows.length; r++) {
      const values = batch.rows[r];
      try {
        const { row, kind } = keyed(rowObject(batch.cols, values));
        row[VALUE_KIND_FIELD.name] = kind;
        builder.appendRow(row);
        rows++;
      } catch (e) {
        rejected.push({ seq, rowIndex: r, reason: ensureError(e).message, original: jsonSafe(originalRow(batch.cols, values)) });
      }
    }
  }
  return { rows, rejected };
}

const keyedInputs = new WeakMap<TableSchema, ReturnType<typeof compileKeyedInput>>();

function keyedInputOf(schema: TableSchema): ReturnType<typeof compileKeyedInput> {
  let k = keyedInputs.get(schema);
  if (k === undefined) {
    k = compileKeyedInput(schema);
    keyedInputs.set(schema, k);
  }
  return k;
}

/** A RowBatch row as an object keyed by column name (a row that is not an array of the columns' length is refused). */
function rowObject(cols: readonly string[], values: unknown): Record<string, unknown> {
  if (!Array.isArray(values) || values.length !== cols.length) throw new Error(`a row must be an array of ${cols.length} values (one per column of the batch)`);
  const out: Record<string, unknown> = {};
  for (let k = 0; k < cols.length; k++) out[cols[k]!] = values[k];
  return out;
}

/**
 * The row path, for tables whose rows are routed one by one (partitioned tables: `TableWrite.writeRow` picks the
 * partition): each message is unpacked, each row converted to a canonical row and handed to `sink`. The same
 * rejections as the columnar path: an unreadable payload is one dead letter (rowIndex −1, its bytes in base64); a
 * row that does not fit the schema, or that `sink` refuses, is one dead letter; the rest still lands.
 */
export function decodeRows(fields: readonly DataField[], messages: ReadonlyArray<{ seq: number; data: Uint8Array }>, sink: (row: Row) => void, keyed?: (input: Record<string, unknown>) => void): DecodeOutput {
  const rejected: RejectedRow[] = [];
  let rows = 0;
  for (const m of messages) {
    const { seq, batch, error } = unpackOne(m.seq, m.data);
    if (batch === null) {
      rejected.push({ seq, rowIndex: -1, reason: error!.reason, original: error!.original });
      continue;
    }
    // A primary-key table's rows go to `keyed` as objects (with their `_row_kind`), which converts and checks them.
    const { convert, badCols } = keyed === undefined ? batchRowConverter(fields, batch.cols) : { convert: null, badCols: null };
    for (let r = 0; r < batch.rows.length; r++) {
      const values = batch.rows[r];
      try {
        if (badCols !== null) throw new Error(badCols);
        if (keyed !== undefined) keyed(rowObject(batch.cols, values));
        else sink(convert!(values));
        rows++;
      } catch (e) {
        rejected.push({ seq, rowIndex: r, reason: ensureError(e).message, original: jsonSafe(originalRow(batch.cols, values)) });
      }
    }
  }
  return { rows, rejected };
}
