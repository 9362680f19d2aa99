/**
 * A record batch handed from one thread to another as its column buffers, not as an Arrow IPC stream: the sender
 * (a Parquet worker merging a bucket, src/scan/merge-bucket-job.ts) posts each column's buffers — values, offsets,
 * validity, type ids, children's alike — and the receiver rebuilds the batch over them in the schema both know.
 * An IPC stream costs a copy of every buffer on each side (apache-arrow's writer joins them into one stream; its
 * reader makes the batch's objects from flatbuffer metadata) and the garbage of both; here a buffer that a column
 * owns whole — what the merge's gathering makes — is transferred, and only the others (views into a larger buffer:
 * a decoded file's, a builder's spare capacity) are copied, once.
 *
 * Pure: no threads here; the caller posts `posted` with `transfer` as its transfer list.
 */
import * as arrow from "apache-arrow";
import { transferableBuffer } from "./parquet-ops.mjs";

type Buffer = ArrayBufferView | undefined;

/** One column (or child) of a posted batch: its layout and buffers, in `arrow.Data`'s buffer order. */
export interface PostedData {
  length: number;
  nullCount: number;
  /** Offset into the validity bits (Arrow JS slices the other buffers with the Data). */
  offset: number;
  /** Value offsets, values, validity bits, type ids (each absent when the layout has none). */
  buffers: [Buffer, Buffer, Buffer, Buffer];
  children: PostedData[];
}

export interface PostedBatch {
  rows: number;
  columns: PostedData[];
}

/** `view` in memory that may be transferred: itself when it owns all of a transferable buffer, else a copy that does. */
function transferable(view: ArrayBufferView, transfer: ArrayBuffer[]): ArrayBufferView {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  let buffer = transferableBuffer(bytes);
  let out = view;
  if (buffer === null) {
    const copy = (view as unknown as { slice(): ArrayBufferView }).slice();
    buffer = copy.buffer as ArrayBuffer;
    out = copy;
  }
  if (!transfer.includes(buffer)) transfer.push(buffer);
  return out;
}

function postData(d: arrow.Data, transfer: ArrayBuffer[]): PostedData {
  const buffer = (b: ArrayBufferView | undefined | null): Buffer => {
    if (b === undefined || b === null) return undefined;
    // An empty buffer (a column of empty strings has no value bytes) stays one: Arrow reads it, where it expects one.
    if (b.byteLength === 0) return new (b.constructor as new (n: number) => ArrayBufferView)(0);
    return transferable(b, transfer);
  };
  return {
    length: d.length,
    nullCount: d.nullCount,
    offset: d.offset,
    buffers: [buffer(d.valueOffsets), buffer(d.values), buffer(d.nullCount > 0 ? d.nullBitmap : undefined), buffer(d.typeIds)],
    children: d.children.map((c) => postData(c, transfer)),
  };
}

/**
 * The batch as a structured-cloneable value and the buffers to transfer with it. A buffer a column's view covers
 * whole is transferred: it must belong to this batch alone (a merge's gathered columns do; a slice shares its
 * parent's, and a boolean slice covers them whole), since once posted it is gone from this thread — neither the batch
 * nor anything sharing its buffers may be used after.
 */
export function postableBatch(batch: arrow.RecordBatch): { posted: PostedBatch; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  return { posted: { rows: batch.numRows, columns: batch.data.children.map((c) => postData(c, transfer)) }, transfer };
}

function dataOf(type: arrow.DataType, p: PostedData): arrow.Data {
  const children = p.children.map((c, k) => dataOf((type.children as arrow.Field[])[k]!.type as arrow.DataType, c));
  const [offsets, values, validity, typeIds] = p.buffers;
  return new arrow.Data(type, p.offset, p.length, p.nullCount, [offsets, values, validity, typeIds] as never, children);
}

/** The posted batch in `schema` (the sender's batch's schema). */
export function batchFromPosted(schema: arrow.Schema, posted: PostedBatch): arrow.RecordBatch {
  if (posted.columns.length !== schema.fields.length) throw new Error(`a posted batch has ${posted.columns.length} columns, its schema ${schema.fields.length}`);
  const children = posted.columns.map((c, k) => dataOf(schema.fields[k]!.type as arrow.DataType, c));
  return new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: posted.rows, nullCount: 0, children }));
}
