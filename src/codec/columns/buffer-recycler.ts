/**
 * Where column builders get their first, large buffers: `HEAP_ARRAYS` allocates them as usual; a `BufferRecycler`
 * hands out buffers given back by earlier writes. A primary-key write's bucket builders hold tens of megabytes that
 * die once the flush has taken their rows; allocating that much anew on every write makes V8 collect the whole heap
 * (its external-memory trigger), and a heap holding the caller's millions of row objects is slow to mark. Reused,
 * the buffers cost no new external memory and the collection does not come.
 *
 * Only buffers nothing else can reach may be given back: a write gives back the buffers of the batches its own
 * builders made, after the flush that read them has settled.
 */
import type * as arrow from "apache-arrow";

type TypedArray = Int8Array | Uint8Array | Int16Array | Int32Array | Float32Array | Float64Array | BigInt64Array;

/** A typed array class, as the builders use them. */
export type TypedArrayClass<T extends TypedArray> = { new (length: number): T; new (buffer: ArrayBuffer, byteOffset: number, length: number): T; readonly BYTES_PER_ELEMENT: number };

/** How a builder gets a zeroed typed array. */
export interface ArrayAllocator {
  make<T extends TypedArray>(Class: TypedArrayClass<T>, length: number): T;
}

/** Plain allocation. */
export const HEAP_ARRAYS: ArrayAllocator = { make: (Class, length) => new Class(length) };

/** Buffers smaller than this are allocated as usual and never kept: they cost the collector nothing worth saving. */
const MIN_RECYCLED_BYTES = 64 * 1024;

/** Largest power-of-two exponent at most `bytes`. */
const floorLog2 = (bytes: number): number => 31 - Math.clz32(bytes);

export class BufferRecycler implements ArrayAllocator {
  /** Kept buffers by size class: class c holds buffers of 2^c to 2^(c+1) − 1 bytes. */
  private readonly free = new Map<number, ArrayBuffer[]>();
  private held = 0;
  /** Buffers `make` handed out (the only ones `give` keeps). */
  private readonly issued = new WeakSet<ArrayBuffer>();

  /** `maxHeldBytes`: buffers given back beyond this many bytes kept are dropped (left to the collector). */
  constructor(readonly maxHeldBytes: number) {}

  /** Bytes of the buffers kept for reuse. */
  get heldBytes(): number {
    return this.held;
  }

  make<T extends TypedArray>(Class: TypedArrayClass<T>, length: number): T {
    const bytes = length * Class.BYTES_PER_ELEMENT;
    if (bytes < MIN_RECYCLED_BYTES) return new Class(length);
    const kept = this.take(bytes);
    if (kept !== null) new Uint8Array(kept, 0, bytes).fill(0);
    const buffer = kept ?? new ArrayBuffer(bytes);
    this.issued.add(buffer);
    return new Class(buffer, 0, length);
  }

  /** A kept buffer of at least `bytes` and at most about four times as many, taken out of the pool; null if none. */
  private take(bytes: number): ArrayBuffer | null {
    const c = floorLog2(bytes);
    for (const cls of [c, c + 1]) {
      const list = this.free.get(cls);
      if (list === undefined) continue;
      const at = list.findIndex((b) => b.byteLength >= bytes);
      if (at < 0) continue;
      const [buffer] = list.splice(at, 1);
      this.held -= buffer!.byteLength;
      return buffer!;
    }
    return null;
  }

  /**
   * Keeps a buffer nothing else uses any more, while the pool holds less than its bound — only one this recycler
   * handed out: buffers a builder grew into, or made elsewhere, would never be asked for again (a writer whose
   * builders start small and grow would fill the pool with them).
   */
  give(buffer: ArrayBuffer): void {
    const bytes = buffer.byteLength;
    if (!this.issued.has(buffer) || this.held + bytes > this.maxHeldBytes) return;
    const c = floorLog2(bytes);
    const list = this.free.get(c) ?? [];
    if (list.includes(buffer)) return;
    list.push(buffer);
    this.free.set(c, list);
    this.held += bytes;
  }

  /** Gives back every buffer of these batches (and their nested columns): the caller's builders made them, and nothing reads them any more. */
  giveBatches(batches: readonly arrow.RecordBatch[]): void {
    const seen = new Set<ArrayBuffer>();
    const visit = (d: arrow.Data): void => {
      for (const b of [d.values, d.valueOffsets, d.nullBitmap] as Array<ArrayBufferView | undefined>) {
        const buffer = b?.buffer;
        if (buffer instanceof ArrayBuffer && !seen.has(buffer)) seen.add(buffer);
      }
      for (const child of d.children) visit(child);
    };
    for (const batch of batches) visit(batch.data);
    for (const buffer of seen) this.give(buffer);
  }
}

let shared: BufferRecycler | null = null;

/** The process's (thread's) recycler of write buffers: keeps up to 128 MiB. */
export function sharedBufferRecycler(): BufferRecycler {
  return (shared ??= new BufferRecycler(128 * 1024 * 1024));
}
