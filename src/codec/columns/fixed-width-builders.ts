/**
 * The builders of fixed-width columns: BOOLEAN (a bitmap), TINYINT to DOUBLE with DATE and TIME (one typed array),
 * BIGINT and TIMESTAMP (64-bit slots written through an Int32 view of a BigInt64Array, so numbers never become
 * BigInts) and DECIMAL (Decimal128: four little-endian 32-bit words per value, two's complement of the unscaled
 * value). Their typed `append…` methods are the decoders' fast paths (actors/ingest/direct.ts).
 */
import * as arrow from "apache-arrow";
import { dataInvalid, ErrorKind, LakeError } from "../../errors.ts";
import type { DataType } from "../../format/data-types.ts";
import { Timestamp, type Value } from "../../format/values.ts";
import { toArrowType } from "../arrow-schema.ts";
import { afterFinish, bad, BaseBuilder, copyBits, DEFAULT_CAPACITY, grown } from "./column-builder.ts";
import { HEAP_ARRAYS, type ArrayAllocator } from "./buffer-recycler.ts";

const TWO_32 = 4294967296;

export class BooleanColumnBuilder extends BaseBuilder {
  private bits: Uint8Array;
  constructor(type: DataType, path: string, private readonly capacity = DEFAULT_CAPACITY, arrays: ArrayAllocator = HEAP_ARRAYS) {
    super(type, new arrow.Bool(), path);
    this.bits = arrays.make(Uint8Array, (capacity + 7) >> 3);
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (typeof value !== "boolean") throw bad(this.path, "a boolean", value);
    this.appendBoolean(value);
  }
  appendBoolean(b: boolean): void {
    this.markValid();
    this.write(b);
  }
  /**
   * Appends `count` values at once: value bits `values` and validity bits `validity` (both LSB first from bit 0;
   * `nulls` nulls, whose value bits are 0), as a native decoder lays a column out.
   */
  appendBits(count: number, values: Uint8Array, validity: Uint8Array | null, nulls: number): void {
    const end = this.length + count;
    if ((end + 7) >> 3 > this.bits.length) this.bits = grown(this.bits, (end + 7) >> 3, (n) => new Uint8Array(n), (this.capacity + 7) >> 3);
    this.markValidityBits(count, validity, nulls);
    copyBits(this.bits, this.length, values, count);
    this.length = end;
  }
  protected pushEmpty(): void {
    this.write(false);
  }
  private write(b: boolean): void {
    const i = this.length++;
    if (i >> 3 >= this.bits.length) this.bits = grown(this.bits, (i >> 3) + 1, (n) => new Uint8Array(n), (this.capacity + 7) >> 3);
    if (b) this.bits[i >> 3]! |= 1 << (i & 7);
    else this.bits[i >> 3]! &= ~(1 << (i & 7));
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    const len = this.length;
    return arrow.makeData({ type: this.arrowType as arrow.Bool, length: len, nullCount, nullBitmap, data: this.bits.subarray(0, (len + 7) >> 3) });
  }
  protected reset(): void {
    this.bits = new Uint8Array((afterFinish(this.capacity) + 7) >> 3);
  }
}

type NumberArray = Int8Array | Int16Array | Int32Array | Float32Array | Float64Array;
type NumberArrayCtor = new (n: number) => NumberArray;

/** TINYINT, SMALLINT, INT, DATE, TIME (int32 millis of day), FLOAT, DOUBLE. */
export class NumberColumnBuilder extends BaseBuilder {
  private values: NumberArray;
  private readonly ctor: NumberArrayCtor;
  private readonly isValid: (n: number) => boolean;
  private readonly expected: string;

  constructor(type: DataType, path: string, private readonly capacity = DEFAULT_CAPACITY, arrays: ArrayAllocator = HEAP_ARRAYS) {
    super(type, toArrowType(type), path);
    switch (type.root) {
      case "TINYINT":
        this.ctor = Int8Array;
        this.isValid = (n) => n === (n << 24) >> 24;
        this.expected = "a TINYINT (integer in [-128, 127])";
        break;
      case "SMALLINT":
        this.ctor = Int16Array;
        this.isValid = (n) => n === (n << 16) >> 16;
        this.expected = "a SMALLINT (integer in [-32768, 32767])";
        break;
      case "INT":
      case "DATE":
      case "TIME":
        this.ctor = Int32Array;
        this.isValid = (n) => n === (n | 0);
        this.expected = type.root === "INT" ? "a 32-bit integer" : type.root === "DATE" ? "days since 1970-01-01" : "milliseconds of the day";
        break;
      case "FLOAT":
        this.ctor = Float32Array;
        this.isValid = () => true;
        this.expected = "a number";
        break;
      case "DOUBLE":
        this.ctor = Float64Array;
        this.isValid = () => true;
        this.expected = "a number";
        break;
      default:
        throw new LakeError(ErrorKind.Unexpected, `NumberColumnBuilder cannot build ${type.root}`);
    }
    this.values = arrays.make(this.ctor as typeof Float64Array, capacity);
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (typeof value !== "number" || !this.isValid(value)) throw bad(this.path, this.expected, value);
    this.appendNumber(value);
  }
  /** Appends without checks: the caller guarantees a number of the column's range. */
  appendNumber(n: number): void {
    if (this.length === this.values.length) this.values = grown(this.values, this.length + 1, (k) => new this.ctor(k), this.capacity);
    this.markValid();
    this.values[this.length++] = n;
  }
  /**
   * Appends `values.length` values at once (of the column's array type: Int8 … Float64), with validity bits
   * `validity` (LSB first from bit 0; `nulls` nulls, whose values are 0), as a native decoder lays a column out.
   */
  appendValues(values: NumberArray, validity: Uint8Array | null, nulls: number): void {
    const end = this.length + values.length;
    if (end > this.values.length) this.values = grown(this.values, end, (k) => new this.ctor(k), this.capacity);
    this.markValidityBits(values.length, validity, nulls);
    this.values.set(values, this.length);
    this.length = end;
  }
  protected pushEmpty(): void {
    if (this.length === this.values.length) this.values = grown(this.values, this.length + 1, (k) => new this.ctor(k), this.capacity);
    this.values[this.length++] = 0;
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    return arrow.makeData({
      type: this.arrowType as arrow.Int,
      length: this.length,
      nullCount,
      nullBitmap,
      data: this.values.subarray(0, this.length) as Int32Array,
    });
  }
  protected reset(): void {
    this.values = new this.ctor(afterFinish(this.capacity));
  }
}

/** `(v << shift) >> shift === v` holds exactly for the JS numbers an INT / SMALLINT / TINYINT column takes as they are. */
export function narrowIntShift(root: "INT" | "SMALLINT" | "TINYINT"): number {
  return root === "INT" ? 0 : root === "SMALLINT" ? 16 : 24;
}

/**
 * The 32-bit words of exactly `big`'s slots. Not `new Int32Array(big.buffer)`: a recycled buffer (buffer-recycler.ts)
 * may be larger than the slots and of any length — one of an odd byte length threw "byte length of Int32Array should
 * be a multiple of 4" on a primary-key table's second large write.
 */
function wordsOf(big: BigInt64Array): Int32Array {
  return new Int32Array(big.buffer, big.byteOffset, big.length * 2);
}

/** Shared storage of 64-bit slots: a BigInt64Array and an Int32Array over the same bytes. */
abstract class Int64SlotsBuilder extends BaseBuilder {
  protected big: BigInt64Array;
  protected words: Int32Array;
  constructor(type: DataType, arrowType: arrow.DataType, path: string, protected readonly capacity: number, arrays: ArrayAllocator) {
    super(type, arrowType, path);
    this.big = arrays.make(BigInt64Array, capacity);
    this.words = wordsOf(this.big);
  }
  protected ensureSlot(): void {
    if (this.length < this.big.length) return;
    const big = new BigInt64Array(Math.max(this.big.length * 2, 16, this.capacity));
    big.set(this.big);
    this.big = big;
    this.words = wordsOf(big);
  }
  /** Writes a safe integer into slot `length` without creating a BigInt. */
  protected writeNumber(n: number): void {
    const hi = Math.floor(n / TWO_32);
    const i = this.length << 1;
    this.words[i] = (n - hi * TWO_32) | 0;
    this.words[i + 1] = hi | 0;
  }
  /**
   * Writes `millis * factor + add` (factor ≤ 1e6, 0 ≤ add < factor) as an exact 64-bit integer using 32-bit limbs,
   * since the product exceeds 2^53 for micro/nanosecond timestamps.
   */
  protected writeScaled(millis: number, factor: number, add: number): void {
    const mh = Math.floor(millis / TWO_32);
    const ml = millis - mh * TWO_32;
    const low = ml * factor + add;
    const carry = Math.floor(low / TWO_32);
    const hi = mh * factor + carry;
    // The exact high word tells whether the value fits 64 bits (ns timestamps cover only 1677–2262).
    if (hi < -2147483648 || hi > 2147483647)
      throw dataInvalid(`column ${this.path}: timestamp out of the 64-bit range of its unit`, { column: this.path });
    const i = this.length << 1;
    this.words[i] = (low - carry * TWO_32) | 0;
    this.words[i + 1] = hi | 0;
  }
  /**
   * Appends `values.length` 64-bit values at once, already in the column's unit, with validity bits `validity` (LSB
   * first from bit 0; `nulls` nulls, whose slots are 0), as a native decoder lays a column out.
   */
  appendSlots(values: BigInt64Array, validity: Uint8Array | null, nulls: number): void {
    const end = this.length + values.length;
    if (end > this.big.length) {
      let n = Math.max(this.big.length * 2, 16, this.capacity);
      while (n < end) n *= 2;
      const big = new BigInt64Array(n);
      big.set(this.big.subarray(0, this.length));
      this.big = big;
      this.words = wordsOf(big);
    }
    this.markValidityBits(values.length, validity, nulls);
    this.big.set(values, this.length);
    this.length = end;
  }
  protected pushEmpty(): void {
    this.ensureSlot();
    this.big[this.length++] = 0n;
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    return arrow.makeData({
      type: this.arrowType as arrow.Int64,
      length: this.length,
      nullCount,
      nullBitmap,
      data: this.big.subarray(0, this.length),
    });
  }
  protected reset(): void {
    this.big = new BigInt64Array(afterFinish(this.capacity));
    this.words = wordsOf(this.big);
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export class Int64ColumnBuilder extends Int64SlotsBuilder {
  constructor(type: DataType, path: string, capacity = DEFAULT_CAPACITY, arrays: ArrayAllocator = HEAP_ARRAYS) {
    super(type, new arrow.Int64(), path, capacity, arrays);
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (typeof value === "bigint") {
      if (value < INT64_MIN || value > INT64_MAX) throw bad(this.path, "a 64-bit integer", value);
      this.appendBigInt(value);
    } else if (typeof value === "number" && Number.isSafeInteger(value)) {
      this.appendNumber(value);
    } else throw bad(this.path, "a BIGINT (bigint)", value);
  }
  appendBigInt(b: bigint): void {
    this.ensureSlot();
    this.markValid();
    this.big[this.length++] = b;
  }
  /** A safe integer, written without allocating a BigInt (msgpack decoders get most int64s as numbers). */
  appendNumber(n: number): void {
    this.ensureSlot();
    this.markValid();
    this.writeNumber(n);
    this.length++;
  }
}

export class TimestampColumnBuilder extends Int64SlotsBuilder {
  private readonly unit: arrow.TimeUnit;
  constructor(type: DataType & { root: "TIMESTAMP" | "TIMESTAMP_LTZ" }, path: string, capacity = DEFAULT_CAPACITY, arrays: ArrayAllocator = HEAP_ARRAYS) {
    const t = toArrowType(type) as arrow.Timestamp;
    super(type, t, path, capacity, arrays);
    this.unit = t.unit;
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (!(value instanceof Timestamp)) throw bad(this.path, "a Timestamp", value);
    this.appendTimestamp(value.millis, value.nanoOfMilli);
  }
  /** Epoch millis plus nanos within the millisecond; digits finer than the column's unit are dropped. */
  appendTimestamp(millis: number, nanoOfMilli: number): void {
    if (!Number.isSafeInteger(millis)) throw bad(this.path, "a timestamp within ±2^53 ms", millis);
    this.ensureSlot();
    this.markValid();
    switch (this.unit) {
      case arrow.TimeUnit.MILLISECOND:
        this.writeNumber(millis);
        break;
      case arrow.TimeUnit.MICROSECOND:
        this.writeScaled(millis, 1000, Math.floor(nanoOfMilli / 1000));
        break;
      default:
        this.writeScaled(millis, 1_000_000, nanoOfMilli);
    }
    this.length++;
  }
  appendEpochMillis(millis: number): void {
    this.appendTimestamp(millis, 0);
  }
  /** A raw value already in the column's unit (ms, µs or ns). */
  appendRaw(v: bigint): void {
    this.ensureSlot();
    this.markValid();
    this.big[this.length++] = v;
  }
}

/** DECIMAL(p, s) as Decimal128: value i occupies words 4i..4i+3, least significant first. */
export class DecimalColumnBuilder extends BaseBuilder {
  private big: BigInt64Array;
  private readonly maxUnscaled: bigint;
  constructor(type: DataType & { root: "DECIMAL" }, path: string, private readonly capacity = DEFAULT_CAPACITY, arrays: ArrayAllocator = HEAP_ARRAYS) {
    super(type, toArrowType(type), path);
    this.big = arrays.make(BigInt64Array, capacity * 2);
    this.maxUnscaled = 10n ** BigInt(type.precision) - 1n;
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    let v: bigint;
    if (typeof value === "bigint") v = value;
    else if (typeof value === "number" && Number.isSafeInteger(value)) v = BigInt(value);
    else throw bad(this.path, "a DECIMAL unscaled value (bigint)", value);
    if (v > this.maxUnscaled || v < -this.maxUnscaled)
      throw dataInvalid(`column ${this.path}: unscaled value ${v} does not fit DECIMAL precision`, { column: this.path });
    this.appendUnscaled(v);
  }
  /** Appends an unscaled value the caller has checked against the precision. */
  appendUnscaled(v: bigint): void {
    this.ensureSlot();
    this.markValid();
    const i = this.length++ << 1;
    // BigInt64Array stores modulo 2^64, which is exactly the low word; the shift sign-extends the high word.
    this.big[i] = v;
    this.big[i + 1] = v >> 64n;
  }
  private ensureSlot(): void {
    if ((this.length << 1) < this.big.length) return;
    const next = new BigInt64Array(Math.max(this.big.length * 2, 32, this.capacity * 2));
    next.set(this.big);
    this.big = next;
  }
  protected pushEmpty(): void {
    this.ensureSlot();
    const i = this.length++ << 1;
    this.big[i] = 0n;
    this.big[i + 1] = 0n;
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    const words = new Uint32Array(this.big.buffer, 0, this.length * 4);
    return arrow.makeData({ type: this.arrowType as arrow.Decimal, length: this.length, nullCount, nullBitmap, data: words });
  }
  protected reset(): void {
    this.big = new BigInt64Array(afterFinish(this.capacity) * 2);
  }
}
