/**
 * The builders of variable-width columns, CHAR/VARCHAR/STRING and BINARY/VARBINARY: Int32 offsets plus one growing
 * byte buffer. `Utf8ColumnBuilder.appendUtf8` copies UTF-8 bytes as they arrived (a msgpack str) without decoding.
 */
import * as arrow from "apache-arrow";
import { dataInvalid } from "../../errors.ts";
import type { DataType } from "../../format/data-types.ts";
import type { Value } from "../../format/values.ts";
import { afterFinish, bad, BaseBuilder, DEFAULT_CAPACITY, grown, MAX_OFFSET } from "./column-builder.ts";
import { HEAP_ARRAYS, type ArrayAllocator } from "./buffer-recycler.ts";

const encoder = new TextEncoder();

/** Variable-width bytes: Int32 offsets + one growing byte buffer (CHAR/VARCHAR/STRING and BINARY/VARBINARY). */
abstract class VarBytesBuilder extends BaseBuilder {
  protected offsets: Int32Array;
  protected bytes: Uint8Array;
  protected pos = 0;
  constructor(
    type: DataType,
    arrowType: arrow.DataType,
    path: string,
    protected readonly capacity: number,
    protected readonly byteCapacity: number,
    arrays: ArrayAllocator,
  ) {
    super(type, arrowType, path);
    this.offsets = arrays.make(Int32Array, capacity + 1);
    this.bytes = arrays.make(Uint8Array, byteCapacity);
  }
  protected ensureBytes(extra: number): void {
    const need = this.pos + extra;
    if (need <= this.bytes.length) return;
    if (need > MAX_OFFSET) throw dataInvalid(`column ${this.path}: more than 2 GiB of data in one column chunk`, { column: this.path });
    this.bytes = grown(this.bytes, need, (n) => new Uint8Array(Math.min(n, MAX_OFFSET)), this.byteCapacity);
  }
  protected ensureOffset(): void {
    if (this.length + 1 < this.offsets.length) return;
    this.offsets = grown(this.offsets, this.length + 2, (n) => new Int32Array(n), this.capacity + 1);
  }
  /** Appends raw bytes `src[start, end)` (for CHAR/VARCHAR the caller guarantees valid UTF-8). */
  appendBytesRange(src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    this.ensureBytes(n);
    this.ensureOffset();
    this.markValid();
    if (n < 16) for (let k = start; k < end; k++) this.bytes[this.pos++] = src[k]!;
    else {
      this.bytes.set(src.subarray(start, end), this.pos);
      this.pos += n;
    }
    this.offsets[++this.length] = this.pos;
  }
  /**
   * Appends `offsets.length − 1` values at once: value i is `bytes[offsets[i], offsets[i + 1])` (`offsets[0]` is 0),
   * with validity bits `validity` (LSB first from bit 0; `nulls` nulls, which are empty), as a native decoder lays a
   * column out. For CHAR/VARCHAR the caller guarantees valid UTF-8.
   */
  appendSpans(offsets: Int32Array, bytes: Uint8Array, validity: Uint8Array | null, nulls: number): void {
    const count = offsets.length - 1;
    this.ensureBytes(bytes.length);
    if (this.length + count >= this.offsets.length) this.offsets = grown(this.offsets, this.length + count + 1, (n) => new Int32Array(n), this.capacity + 1);
    this.markValidityBits(count, validity, nulls);
    this.bytes.set(bytes, this.pos);
    const base = this.pos;
    const out = this.offsets;
    const at = this.length;
    for (let i = 1; i <= count; i++) out[at + i] = base + offsets[i]!;
    this.pos += bytes.length;
    this.length += count;
  }
  protected pushEmpty(): void {
    this.ensureOffset();
    this.offsets[++this.length] = this.pos;
  }
  protected override truncateChildren(): void {
    this.pos = this.offsets[this.length]!;
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    return arrow.makeData({
      type: this.arrowType as arrow.Utf8,
      length: this.length,
      nullCount,
      nullBitmap,
      valueOffsets: this.offsets.subarray(0, this.length + 1),
      data: this.bytes.subarray(0, this.pos),
    });
  }
  protected reset(): void {
    this.offsets = new Int32Array(afterFinish(this.capacity) + 1);
    this.bytes = new Uint8Array(Math.min(this.byteCapacity, afterFinish(this.capacity) * 16));
    this.pos = 0;
  }
}

export class Utf8ColumnBuilder extends VarBytesBuilder {
  constructor(type: DataType, path: string, capacity = DEFAULT_CAPACITY, arrays: ArrayAllocator = HEAP_ARRAYS) {
    super(type, new arrow.Utf8(), path, capacity, capacity * 16, arrays);
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (typeof value !== "string") throw bad(this.path, "a string", value);
    this.appendString(value);
  }
  appendString(s: string): void {
    const n = s.length;
    // A UTF-16 code unit never needs more than 3 UTF-8 bytes (a surrogate pair: 2 units, 4 bytes).
    this.ensureBytes(n * 3);
    this.ensureOffset();
    this.markValid();
    const bytes = this.bytes;
    let pos = this.pos;
    let i = 0;
    if (n <= 64) {
      // Short strings: an ASCII copy loop beats encodeInto's per-call overhead (subarray + native call).
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        bytes[pos++] = c;
      }
    }
    if (i < n) pos += encoder.encodeInto(i === 0 ? s : s.slice(i), bytes.subarray(pos)).written;
    this.pos = pos;
    this.offsets[++this.length] = pos;
  }
  /** UTF-8 bytes as they arrived (e.g. a msgpack str), copied without decoding. */
  appendUtf8(src: Uint8Array, start = 0, end = src.length): void {
    this.appendBytesRange(src, start, end);
  }
}

export class BinaryColumnBuilder extends VarBytesBuilder {
  constructor(type: DataType, path: string, capacity = DEFAULT_CAPACITY, arrays: ArrayAllocator = HEAP_ARRAYS) {
    super(type, new arrow.Binary(), path, capacity, capacity * 16, arrays);
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (!(value instanceof Uint8Array)) throw bad(this.path, "bytes (Uint8Array)", value);
    this.appendBytesRange(value, 0, value.length);
  }
}
