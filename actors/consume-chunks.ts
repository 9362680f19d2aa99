/**
 * Record batches → the consume protocol's chunk bodies (actors/wire/consume.ts): Arrow IPC streams of about
 * CHUNK_TARGET_BYTES each (never above the payload limit), several consecutive batches packed into one stream while
 * they fit. Fewer, fuller messages cost the reader, nats-server and the consumer less per row than one message per
 * batch (a snapshot of a few thousand rows is one message); a batch larger than the target is cut by rows.
 *
 * The size: what a chunk costs besides its bytes — a NATS message with headers each way, the consumer's IPC schema
 * decode, an actor turn on the reader — was a third of a 1M-row catch-up's consumer CPU at 256 KiB; at 768 KiB the
 * catch-up took 0.67–0.89 s instead of 0.94–1.13 (consumer 0.2–0.3 CPU s instead of 0.4–0.5). What a session holds
 * in flight is bounded in bytes by the protocol's window (actors/wire/consume.ts, step 3), not by the chunk size. A
 * delta of a few thousand rows is one message either way.
 *
 * A file whose decoder output is already the target schema's comes as record batch messages (src/scan/read.ts
 * `readPlanMessages`, decoded `messageBytes` at a time): those are packed as they are, behind the schema message.
 */
import * as arrow from "apache-arrow";
import { IPC_END_OF_STREAM, ipcStreamOf, type IpcBatchMessage } from "../src/codec/ipc-stream.ts";
import type { FileRows } from "../src/scan/read.ts";

/** The size chunks are packed to, at most (the payload limit, if lower, wins). */
export const CHUNK_TARGET_BYTES = 768 * 1024;

/** Packs batches into IPC stream bodies: add() returns the bodies completed by a batch, flush() the rest. */
export class ChunkPacker {
  /** Held back: batches, or messages of `pendingSchema` (never both). */
  private pending: arrow.RecordBatch[] = [];
  private pendingMessages: IpcBatchMessage[] = [];
  private pendingSchema: Uint8Array = EMPTY;
  private pendingBytes = 0;
  /** What the packer aims at: below the limit, since IPC adds metadata and padding to the buffers it counts. */
  private readonly target: number;

  /** `limit`: the largest body a message may carry; `target`: the size to pack to. */
  constructor(
    private readonly limit: number,
    target = CHUNK_TARGET_BYTES,
  ) {
    this.target = Math.floor(Math.min(target, limit * 0.85));
  }

  /** The size of record batch messages to ask a decoder for: about one per chunk. */
  get messageBytes(): number {
    return Math.floor(this.target * 0.9);
  }

  /** Takes a batch; returns the bodies that are complete now (possibly none: the batch waits for more). */
  add(batch: arrow.RecordBatch): Uint8Array[] {
    if (batch.numRows === 0) return [];
    const size = estimate(batch);
    const out: Uint8Array[] = [];
    if (this.pendingMessages.length > 0 || (this.pending.length > 0 && this.pendingBytes + size > this.target)) out.push(...this.flush());
    if (size > this.target) {
      // Larger than one message on its own: cut by rows, sized from its bytes per row; all but the last piece go now.
      const rows = Math.max(1, Math.floor((batch.numRows * this.target) / size));
      for (let at = 0; at < batch.numRows; at += rows) {
        const piece = batch.slice(at, Math.min(batch.numRows, at + rows));
        if (at + rows < batch.numRows) out.push(...encodeFitting([piece], this.limit));
        else this.hold(piece, estimate(piece));
      }
      return out;
    }
    this.hold(batch, size);
    return out;
  }

  /**
   * Takes record batch messages that follow `schema` (a framed schema message); returns the bodies complete now. A
   * message too large for one body on its own (rows far wider than the decoder's batch size assumed) is decoded and
   * cut by rows as a batch is.
   */
  addMessages(schema: Uint8Array, messages: readonly IpcBatchMessage[]): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (const m of messages) {
      if (m.rows === 0) continue;
      const size = m.bytes.byteLength;
      if (this.pending.length > 0 || (this.pendingMessages.length > 0 && (this.pendingSchema !== schema || this.pendingBytes + size > this.target))) out.push(...this.flush());
      if (schema.byteLength + size + IPC_END_OF_STREAM.byteLength > this.limit) {
        for (const b of arrow.tableFromIPC(ipcStreamOf(schema, [m])).batches) out.push(...this.add(b));
        continue;
      }
      this.pendingSchema = schema;
      this.pendingMessages.push(m);
      this.pendingBytes += size;
    }
    return out;
  }

  /** Takes a file's rows as a read gave them (messages to forward, or batches); returns the bodies complete now. */
  addFile(file: FileRows): Uint8Array[] {
    return file.kind === "messages" ? this.addMessages(file.schema, file.messages) : file.batches.flatMap((b) => this.add(b));
  }

  /** What is held back, as bodies (none when nothing is held). */
  flush(): Uint8Array[] {
    if (this.pendingMessages.length > 0) {
      const body = ipcStreamOf(this.pendingSchema, this.pendingMessages);
      this.pendingMessages = [];
      this.pendingBytes = 0;
      return [body];
    }
    if (this.pending.length === 0) return [];
    const batches = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    return encodeFitting(batches, this.limit);
  }

  private hold(batch: arrow.RecordBatch, size: number): void {
    this.pending.push(batch);
    this.pendingBytes += size;
  }
}

const EMPTY = new Uint8Array(0);

/** All of `batches` as chunk bodies (a convenience for a whole set known at once). */
export function packBatches(batches: Iterable<arrow.RecordBatch>, limit: number, target = CHUNK_TARGET_BYTES): Uint8Array[] {
  const packer = new ChunkPacker(limit, target);
  const out: Uint8Array[] = [];
  for (const b of batches) out.push(...packer.add(b));
  out.push(...packer.flush());
  return out;
}

/**
 * The bytes a batch's buffers hold (a slice counts the buffers it shares whole, so this errs high for slices): an
 * estimate of its IPC body, without encoding it.
 */
function estimate(batch: arrow.RecordBatch): number {
  return batch.data.byteLength + 64 * batch.numCols + 256;
}

/**
 * `batches` as one IPC stream when it fits `limit`; otherwise each batch on its own, and a batch still too large
 * cut once more by its measured bytes per row (the estimate was off: rows of very uneven size).
 */
function encodeFitting(batches: arrow.RecordBatch[], limit: number): Uint8Array[] {
  const bytes = arrow.tableToIPC(new arrow.Table(batches), "stream");
  if (bytes.length <= limit) return [bytes];
  if (batches.length > 1) return batches.flatMap((b) => encodeFitting([b], limit));
  const batch = batches[0]!;
  if (batch.numRows === 1) return [bytes]; // one row larger than a message: sent as it is, the server refuses it loudly
  const rows = Math.max(1, Math.min(Math.ceil(batch.numRows / 2), Math.floor((batch.numRows * limit * 0.8) / bytes.length)));
  const out: Uint8Array[] = [];
  for (let at = 0; at < batch.numRows; at += rows) out.push(...encodeFitting([batch.slice(at, Math.min(batch.numRows, at + rows))], limit));
  return out;
}
