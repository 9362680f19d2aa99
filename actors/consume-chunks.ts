/**
 * Record batches → the consume protocol's chunk bodies (actors/wire/consume.ts): Arrow IPC streams of about
 * CHUNK_TARGET_BYTES each (never above the payload limit), several consecutive batches packed into one stream while
 * they fit. Fewer, fuller messages cost the reader, nats-server and the consumer less per row than one message per
 * batch (a snapshot of a few thousand rows is one message); a batch larger than the target is cut by rows.
 *
 * Why not chunks as large as the server allows (1 MiB by default): a session's window counts chunks, and what a
 * window holds in flight — in the reader's NATS buffers, per session — is `window` chunks. At 256 KiB, the default
 * window of 8 is 2 MiB per session.
 */
import * as arrow from "apache-arrow";

/** The size chunks are packed to, at most (the payload limit, if lower, wins). */
export const CHUNK_TARGET_BYTES = 256 * 1024;

/** Packs batches into IPC stream bodies: add() returns the bodies completed by a batch, flush() the rest. */
export class ChunkPacker {
  private pending: arrow.RecordBatch[] = [];
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

  /** Takes a batch; returns the bodies that are complete now (possibly none: the batch waits for more). */
  add(batch: arrow.RecordBatch): Uint8Array[] {
    if (batch.numRows === 0) return [];
    const size = estimate(batch);
    const out: Uint8Array[] = [];
    if (this.pending.length > 0 && this.pendingBytes + size > this.target) out.push(...this.flush());
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

  /** The batches held back, as bodies (none when nothing is held). */
  flush(): Uint8Array[] {
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
