/**
 * What every column builder is: the `ColumnBuilder` interface the batch assembly and the decoders append through,
 * and `BaseBuilder`, the validity bitmap and append / truncate / finish cycle the concrete builders share, with the
 * buffer helpers they grow by.
 *
 * A validity bitmap is allocated only when the first null arrives. Values are assumed canonical (`toCanonical`
 * checked them); builders still reject wrong JS types, out-of-range integers, decimals over their precision and nulls
 * in NOT NULL positions with DataInvalid, because a typed array would otherwise store garbage silently.
 */
import type * as arrow from "apache-arrow";
import { dataInvalid, type LakeError } from "../../errors.ts";
import type { DataType } from "../../format/data-types.ts";
import { Timestamp, type Value } from "../../format/values.ts";

export interface ColumnBuilder {
  readonly type: DataType;
  readonly arrowType: arrow.DataType;
  /** Number of values appended since the last `finish()`. */
  readonly length: number;
  readonly nullCount: number;
  /** Appends a canonical value; `null` (or undefined) appends a null. */
  append(value: Value | undefined): void;
  appendNull(): void;
  /**
   * Drops everything after the first `length` values, including values a failed `append` left in nested children,
   * so a rejected row can be rolled back (`RecordBatchBuilder.appendRow` does this itself).
   */
  truncate(length: number): void;
  /** Returns the column built so far and resets the builder to empty. */
  finish(): arrow.Data;
}

/** The values a builder has room for before its buffers grow, unless its maker says otherwise. */
export const DEFAULT_CAPACITY = 1024;
/** The largest Int32 offset: variable-width and list columns hold at most this many bytes / elements per chunk. */
export const MAX_OFFSET = 2147483647;

/** The DataInvalid error of a value a column does not take. */
export const bad = (path: string, expected: string, v: unknown): LakeError =>
  dataInvalid(`column ${path}: expected ${expected}, got ${describe(v)}`, { column: path });

function describe(v: unknown): string {
  if (typeof v === "string") return `'${v.length > 40 ? v.slice(0, 40) + "…" : v}'`;
  if (typeof v === "bigint") return `${v}n`;
  if (Array.isArray(v)) return "an array";
  if (v instanceof Uint8Array) return "bytes";
  if (v instanceof Timestamp) return "a Timestamp";
  if (v !== null && typeof v === "object") return "an object";
  return `${typeof v} ${String(v)}`;
}

/** What every concrete builder shares: length, null count and validity bitmap, and rollback and hand-over of its buffers. */
export abstract class BaseBuilder implements ColumnBuilder {
  length = 0;
  nullCount = 0;
  /** LSB-first validity bits; null until the first null value (Arrow allows omitting it). */
  private validity: Uint8Array | null = null;

  constructor(
    readonly type: DataType,
    readonly arrowType: arrow.DataType,
    protected readonly path: string,
  ) {}

  abstract append(value: Value | undefined): void;

  appendNull(): void {
    if (!this.type.nullable) throw dataInvalid(`column ${this.path} is NOT NULL but the value is null`, { column: this.path });
    this.markNull();
    this.pushEmpty();
  }

  /**
   * Appends a slot hidden by a null parent (a field of a null ROW): a null where allowed, else an empty value,
   * because Arrow children keep their parent's length and NOT NULL children must not hold unmasked nulls.
   */
  appendHidden(): void {
    if (this.type.nullable) this.markNull();
    else this.markValid();
    this.pushEmpty();
  }

  truncate(n: number): void {
    if (n < this.length) {
      const v = this.validity;
      if (v !== null) for (let i = n; i < this.length; i++) if ((v[i >> 3]! & (1 << (i & 7))) === 0) this.nullCount--;
      this.length = n;
    }
    this.truncateChildren();
  }

  /** Rolls back nested storage to match `length` (children may be ahead after a failed append). */
  protected truncateChildren(): void {}
  /** Writes an empty (zero) slot at `length` and advances `length`. */
  protected abstract pushEmpty(): void;
  /** Builds the Data for the current contents (the base class resets afterwards). */
  protected abstract build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data;
  /** Drops the buffers handed over to the built Data. */
  protected abstract reset(): void;

  /** Must be called before `length` advances for a non-null value. */
  protected markValid(): void {
    const v = this.validity;
    if (v === null) return;
    const i = this.length;
    const byte = i >> 3;
    const bits = byte < v.length ? v : this.growValidity(byte);
    bits[byte]! |= 1 << (i & 7);
  }

  private markNull(): void {
    const i = this.length;
    const byte = i >> 3;
    let v = this.validity;
    if (v === null) {
      // Every earlier slot was valid.
      v = new Uint8Array(Math.max(64, (byte + 1) * 2));
      v.fill(0xff, 0, byte);
      v[byte] = (1 << (i & 7)) - 1;
      this.validity = v;
    } else {
      if (byte >= v.length) v = this.growValidity(byte);
      // Cleared explicitly: a rolled-back or failed append may have set it.
      v[byte]! &= ~(1 << (i & 7));
    }
    this.nullCount++;
  }

  /**
   * Marks the `count` slots from `length` on, before a bulk append writes their values and advances `length`: null
   * where `bits` (validity bits, LSB first from bit 0) has a 0 — `nulls` slots — or all valid when `nulls` is 0.
   */
  protected markValidityBits(count: number, bits: Uint8Array | null, nulls: number): void {
    const start = this.length;
    const end = start + count;
    if (count === 0) return;
    let v = this.validity;
    if (nulls === 0 || bits === null) {
      if (v === null) return;
      if ((end - 1) >> 3 >= v.length) v = this.growValidity((end - 1) >> 3);
      for (let i = start; i < end; i++) v[i >> 3]! |= 1 << (i & 7);
      return;
    }
    if (v === null) {
      // Every earlier slot was valid (as in markNull).
      v = new Uint8Array(Math.max(64, ((end + 7) >> 3) * 2));
      v.fill(0xff, 0, start >> 3);
      v[start >> 3] = (1 << (start & 7)) - 1;
      this.validity = v;
    } else if ((end - 1) >> 3 >= v.length) v = this.growValidity((end - 1) >> 3);
    copyBits(v, start, bits, count);
    this.nullCount += nulls;
  }

  private growValidity(byte: number): Uint8Array {
    const old = this.validity!;
    const next = new Uint8Array(Math.max(old.length * 2, byte + 1));
    next.set(old);
    this.validity = next;
    return next;
  }

  finish(): arrow.Data {
    const bitmap = this.nullCount > 0 && this.validity !== null ? this.validity.subarray(0, (this.length + 7) >> 3) : undefined;
    const data = this.build(bitmap, this.nullCount);
    this.length = 0;
    this.nullCount = 0;
    this.validity = null;
    this.reset();
    return data;
  }
}

/**
 * A copy of `arr` with room for `need` elements: at least double, and at least `min` (the builder's capacity, so a
 * builder emptied by `finish()` regrows in one step instead of doubling from a small buffer).
 */
export function grown<T extends { length: number; set(a: ArrayLike<number>): void }>(
  arr: T,
  need: number,
  make: (n: number) => T,
  min = 0,
): T {
  let n = Math.max(arr.length * 2, 16, min);
  while (n < need) n *= 2;
  const out = make(n);
  out.set(arr as unknown as ArrayLike<number>);
  return out;
}

/**
 * What `finish()` leaves a builder with: small buffers, not the full capacity again — a builder is often dropped
 * after its last `finish()`, and re-allocating megabytes for nothing only makes the GC run (`grown` restores the
 * capacity in one step if the builder is used again).
 */
export const afterFinish = (capacity: number): number => Math.min(capacity, DEFAULT_CAPACITY);

/** Copies bits `0 … count − 1` of `src` to bits `at …` of `dst` (LSB first), setting and clearing. */
export function copyBits(dst: Uint8Array, at: number, src: Uint8Array, count: number): void {
  if ((at & 7) === 0) {
    // Whole bytes, then the bits of the last, partial one (the destination's bits after it are left as they are).
    const whole = count >> 3;
    dst.set(src.subarray(0, whole), at >> 3);
    const rest = count & 7;
    if (rest > 0) {
      const mask = (1 << rest) - 1;
      const i = (at >> 3) + whole;
      dst[i] = (dst[i]! & ~mask) | (src[whole]! & mask);
    }
    return;
  }
  for (let i = 0; i < count; i++) {
    const j = at + i;
    if ((src[i >> 3]! >> (i & 7)) & 1) dst[j >> 3]! |= 1 << (j & 7);
    else dst[j >> 3]! &= ~(1 << (j & 7));
  }
}
