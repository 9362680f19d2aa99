/**
 * IpcStreamDecoder: the record batches of a sequence of Arrow IPC streams that mostly share one schema — the consume
 * protocol's chunks, each a stream of one session's projection (actors/consume-chunks.ts).
 *
 * Why not `tableFromIPC` per stream: it parses the schema message of every stream again, and its message reader copies
 * every body before loading it. A consumer receives a chunk per snapshot and session, so with ten sessions in one
 * process those costs were most of its decode time (issue 11's benchmark: `tableFromIPC` about 40 % of the consumer
 * process's busy time). Here a schema message whose bytes equal the previous one's reuses its parsed schema, and the
 * batches' vectors are views of the stream's bytes (copied once, whole, only when they are not 8-byte aligned, which
 * 64-bit columns need).
 *
 * Streams this cannot load (dictionary batches, compressed bodies) go to `tableFromIPC`, so every valid stream
 * decodes. Batches reference the stream's buffer: a caller that reuses the buffer must copy it first.
 */
import * as arrow from "apache-arrow";
import { VectorLoader } from "apache-arrow/visitor/vectorloader";
import { ipcMessages } from "./ipc-stream.ts";
import { ErrorKind, LakeError } from "../errors.ts";

export class IpcStreamDecoder {
  /** The framed bytes of the last schema message parsed, and the schema they parse to. */
  private schemaBytes: Uint8Array | null = null;
  private schema: arrow.Schema | null = null;
  /** Streams decoded with a schema parsed earlier, and streams handed to `tableFromIPC` (for tests and metrics). */
  readonly stats = { schemaReused: 0, fallback: 0 };

  /** The record batches of one IPC stream (none for a stream of only a schema, or an empty body). */
  decode(stream: Uint8Array): arrow.RecordBatch[] {
    try {
      return this.decodeStream(stream);
    } catch (e) {
      if (e instanceof LakeError) throw e;
      // apache-arrow fails on malformed bytes with whatever it meets first (a TypeError converting a length beyond
      // 2^53, a RangeError reading past a buffer): one typed error for all of them.
      const message = (e as Error).message;
      throw new LakeError(ErrorKind.DataInvalid, message.startsWith("malformed Arrow IPC stream") ? message : `malformed Arrow IPC stream: ${message}`, { cause: e });
    }
  }

  private decodeStream(stream: Uint8Array): arrow.RecordBatch[] {
    if (stream.byteLength === 0) return [];
    // BigInt64Array and Float64Array views need offsets that are multiples of 8; IPC aligns buffers within the stream.
    // (A copy through the Uint8Array constructor: a Node Buffer's `slice` is a view, not a copy.)
    const bytes = stream.byteOffset % 8 === 0 ? stream : new Uint8Array(stream);
    let schema: arrow.Schema | null = null;
    const out: arrow.RecordBatch[] = [];
    for (const { start, bodyStart, end, message } of ipcMessages(bytes)) {
      if (message.isSchema()) {
        const framed = bytes.subarray(start, end);
        if (this.schema !== null && sameBytes(this.schemaBytes!, framed)) {
          this.stats.schemaReused++;
        } else {
          this.schema = message.header();
          this.schemaBytes = new Uint8Array(framed);
        }
        schema = this.schema;
        continue;
      }
      if (schema === null) throw new LakeError(ErrorKind.DataInvalid, "malformed Arrow IPC stream: a batch before the schema message");
      if (message.isDictionaryBatch()) return this.fallback(stream);
      if (!message.isRecordBatch()) continue;
      const header = message.header();
      if (header.compression !== null) return this.fallback(stream);
      const body = bytes.subarray(bodyStart, end);
      // A batch's rows take at least a bit each in any column but a Null one (a validity or boolean bit, an offset, a
      // value): a declared length beyond that is corrupt, and reading it would walk billions of rows of nothing.
      if (header.length > body.byteLength * 8 + 64 && schema.fields.some((f) => f.type.typeId !== arrow.Type.Null))
        throw new LakeError(ErrorKind.DataInvalid, `malformed Arrow IPC stream: a batch of ${header.length} rows in ${body.byteLength} bytes`);
      const children = new VectorLoader(body, header.nodes, header.buffers, new Map(), schema.metadataVersion, header.variadicBufferCounts).visitMany(schema.fields);
      out.push(new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: header.length, children })));
    }
    return out;
  }

  private fallback(stream: Uint8Array): arrow.RecordBatch[] {
    this.stats.fallback++;
    return arrow.tableFromIPC(stream).batches;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}
