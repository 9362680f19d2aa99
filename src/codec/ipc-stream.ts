/**
 * Arrow IPC streams at the level of their messages (the Arrow columnar format's "Encapsulated message format"): a
 * stream is a schema message, then dictionary and record batch messages, then an end-of-stream marker; each message
 * is framed as `0xFFFFFFFF`, an int32 metadata length, the Message flatbuffer (padded to 8 bytes) and a body of
 * `bodyLength` bytes. Streams written before Arrow 0.15 lack the `0xFFFFFFFF`.
 *
 * Why: a reader node that sends decoded rows on (the consume protocol's chunks are IPC streams) gets IPC streams from
 * its Parquet workers. A record batch message does not name its columns — its buffers are laid out by the schema's
 * types alone — so when a file's columns have the target types in the target order, the worker's batch messages can
 * follow the target's schema message as they are: no decode into Arrow objects and no re-encode (measured: ~40 % of a
 * reader's main thread during a catch-up, and most of its garbage).
 *
 * The flatbuffers are read with apache-arrow's `Message`; only the framing is read here.
 */
import * as arrow from "apache-arrow";
import { DictionaryBatch as FbDictionaryBatch } from "apache-arrow/fb/dictionary-batch";
import type { Field as FbField } from "apache-arrow/fb/field";
import { Message as FbMessage } from "apache-arrow/fb/message";
import { MessageHeader } from "apache-arrow/fb/message-header";
import { RecordBatch as FbRecordBatch } from "apache-arrow/fb/record-batch";
import { Schema as FbSchema } from "apache-arrow/fb/schema";
import * as flatbuffers from "flatbuffers";

/** One record batch message of a stream: its framed bytes (a view into the stream) and its rows. */
export interface IpcBatchMessage {
  readonly bytes: Uint8Array;
  readonly rows: number;
}

export interface IpcStreamParts {
  readonly schema: arrow.Schema;
  readonly batches: IpcBatchMessage[];
}

/** 0xFFFFFFFF read as a little-endian int32. */
const CONTINUATION_AS_INT32 = -1;

/** The end-of-stream marker: a continuation and a zero metadata length. */
export const IPC_END_OF_STREAM = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0);

/** One message of a stream as framed: where it starts, its metadata (decoded) and where its body lies. */
export interface IpcFramedMessage {
  /** Offset of its framing (the continuation marker, or the length before Arrow 0.15). */
  readonly start: number;
  /** Offset of its body; `end` is one past it. */
  readonly bodyStart: number;
  readonly end: number;
  readonly message: arrow.Message;
}

/** The messages of an IPC stream in order, up to its end marker (or its last byte). Throws on a malformed stream. */
export function* ipcMessages(stream: Uint8Array): Generator<IpcFramedMessage> {
  const view = new DataView(stream.buffer, stream.byteOffset, stream.byteLength);
  let at = 0;
  while (at + 4 <= stream.byteLength) {
    const start = at;
    let metadataLength = view.getInt32(at, true);
    at += 4;
    if (metadataLength === CONTINUATION_AS_INT32) {
      if (at + 4 > stream.byteLength) throw malformed(start, "a continuation marker without a length");
      metadataLength = view.getInt32(at, true);
      at += 4;
    }
    if (metadataLength === 0) return; // end of stream
    if (metadataLength < 0 || at + metadataLength > stream.byteLength) throw malformed(start, `metadata of ${metadataLength} bytes`);
    if (!vectorsFit(stream.subarray(at, at + metadataLength))) throw malformed(start, "a message whose field or buffer list is longer than its metadata");
    const message = arrow.Message.decode(stream.subarray(at, at + metadataLength));
    at += metadataLength;
    const end = at + message.bodyLength;
    // A negative body length (a corrupt header) would move `at` backwards: the same bytes read again, for ever.
    if (!(message.bodyLength >= 0) || end > stream.byteLength) throw malformed(start, `a body of ${message.bodyLength} bytes`);
    yield { start, bodyStart: at, end, message };
    at = end;
  }
}

/**
 * Whether the lists a schema or batch message declares (fields, field nodes, buffers, variadic counts) fit in its
 * metadata. apache-arrow's `Message.decode` trusts a damaged list length and walks it — seconds and hundreds of MiB
 * for a few KiB of message (test/fuzz/files.test.ts) — so the lengths are read first, from the flatbuffer itself.
 */
function vectorsFit(meta: Uint8Array): boolean {
  try {
    const m = FbMessage.getRootAsMessage(new flatbuffers.ByteBuffer(meta));
    const type = m.headerType();
    if (type === MessageHeader.Schema) {
      const schema = m.header(new FbSchema()) as FbSchema | null;
      return schema === null || schemaFits(schema, meta.length);
    }
    let rb: FbRecordBatch | null = null;
    if (type === MessageHeader.RecordBatch) rb = m.header(new FbRecordBatch()) as FbRecordBatch | null;
    else if (type === MessageHeader.DictionaryBatch) rb = (m.header(new FbDictionaryBatch()) as FbDictionaryBatch | null)?.data(new FbRecordBatch()) ?? null;
    return rb === null || (rb.nodesLength() * 16 <= meta.length && rb.buffersLength() * 16 <= meta.length && rb.variadicBufferCountsLength() * 8 <= meta.length);
  } catch {
    return false; // not even a readable flatbuffer
  }
}

/** Deeper than any schema natslake or Arrow writers make: a damaged child list pointing back at its parent ends here. */
const MAX_FIELD_DEPTH = 64;

/**
 * Whether a schema's lists fit in its `size` bytes of metadata — at every level: a field's children and its custom
 * metadata too (a damaged child list of 2^31 fields in a 2 KiB schema took apache-arrow 4 GiB of heap and the process
 * with it; found by `npm run fuzz`), and all the fields together (each is a table of at least 4 bytes).
 */
function schemaFits(schema: FbSchema, size: number): boolean {
  if (schema.fieldsLength() * 4 > size || schema.customMetadataLength() * 4 > size || schema.featuresLength() * 8 > size) return false;
  let fieldsLeft = Math.floor(size / 4);
  const fits = (f: FbField | null, depth: number): boolean => {
    if (f === null || --fieldsLeft < 0 || depth > MAX_FIELD_DEPTH) return false;
    const children = f.childrenLength();
    if (children * 4 > size || f.customMetadataLength() * 4 > size) return false;
    for (let i = 0; i < children; i++) if (!fits(f.children(i), depth + 1)) return false;
    return true;
  };
  for (let i = 0; i < schema.fieldsLength(); i++) if (!fits(schema.fields(i), 1)) return false;
  return true;
}

/**
 * A stream's schema and record batch messages, or null when its batches cannot be forwarded as they are: it has
 * dictionary batches (their ids belong to the writer's schema) or compressed bodies. Throws on a malformed stream.
 */
export function splitIpcStream(stream: Uint8Array): IpcStreamParts | null {
  let schema: arrow.Schema | null = null;
  const batches: IpcBatchMessage[] = [];
  for (const { start, end, message } of ipcMessages(stream)) {
    if (message.isSchema()) {
      schema = message.header();
    } else if (message.isRecordBatch()) {
      const header = message.header();
      if (header.compression !== null) return null;
      batches.push({ bytes: stream.subarray(start, end), rows: header.length });
    } else if (message.isDictionaryBatch()) {
      return null;
    }
  }
  if (schema === null) throw malformed(0, "no schema message");
  return { schema, batches };
}

function malformed(offset: number, what: string): Error {
  return new Error(`malformed Arrow IPC stream: ${what} at byte ${offset}`);
}

/** The framed schema message of `schema` (a stream of no batches, without its end marker). */
export function schemaMessage(schema: arrow.Schema): Uint8Array {
  const empty = arrow.tableToIPC(new arrow.Table(schema), "stream");
  return empty.subarray(0, empty.byteLength - IPC_END_OF_STREAM.byteLength);
}

/** An IPC stream of a schema message and batch messages of that schema: the pieces concatenated, ended. */
export function ipcStreamOf(schemaBytes: Uint8Array, messages: readonly IpcBatchMessage[]): Uint8Array {
  let size = schemaBytes.byteLength + IPC_END_OF_STREAM.byteLength;
  for (const m of messages) size += m.bytes.byteLength;
  const out = new Uint8Array(size);
  out.set(schemaBytes, 0);
  let at = schemaBytes.byteLength;
  for (const m of messages) {
    out.set(m.bytes, at);
    at += m.bytes.byteLength;
  }
  out.set(IPC_END_OF_STREAM, at);
  return out;
}
