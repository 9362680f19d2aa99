/**
 * Columnar building and reading of Arrow data for Paimon types, without apache-arrow's slow generic builders.
 *
 * Writing: one `ColumnBuilder` per column (`makeColumnBuilder(type)`), fed canonical values (format/values.ts) with
 * `append(value)` / `appendNull()`, or — for decoders that want to skip intermediate JS values — the typed
 * methods of the concrete builders (`Int64ColumnBuilder.appendNumber`, `TimestampColumnBuilder.appendEpochMillis`,
 * `Utf8ColumnBuilder.appendUtf8`, …). `finish()` hands over an `arrow.Data` whose type is exactly `toArrowType(type)`
 * and resets the builder. `RecordBatchBuilder` / `rowsToRecordBatch` assemble a whole batch.
 *
 * Buffers are plain growable typed arrays: strings as Int32 offsets + UTF-8 bytes, 64-bit integers and timestamps
 * written through an Int32 view of a BigInt64Array (so numbers never become BigInts), DECIMAL as four little-endian
 * 32-bit words per value (two's complement of the unscaled value). A validity bitmap is allocated only when the first
 * null arrives. Values are assumed canonical (`toCanonical` checked them); builders still reject wrong JS types,
 * out-of-range integers, decimals over their precision and nulls in NOT NULL positions with DataInvalid, because a
 * typed array would otherwise store garbage silently.
 *
 * Reading: `columnReader(type, data)` returns `i => Value` converting Arrow values back to canonical values (Int64 →
 * bigint, Decimal → unscaled bigint, Date → days, Time → millis of day, Timestamp of any unit → Timestamp, Map →
 * [key, value] pairs, Struct → object by field name). It is driven by the Arrow type, so files written by other
 * engines in other units still read correctly; the Paimon type only adds integer-width coercions and names ROW
 * fields. `recordBatchToRows(fields, batchOrTable)` matches columns by name (exact, then case-insensitive, like Java).
 */
import * as arrow from "apache-arrow";
import { dataInvalid, ErrorKind, LakeError } from "../errors.ts";
import { MAX_LENGTH, type DataType } from "../format/data-types.ts";
import { compileConverter } from "../format/row-converter.ts";
import { Timestamp, toCanonical, type Row, type Value } from "../format/values.ts";
import { toArrowSchema, toArrowType, type ColumnSpec } from "./arrow-schema.ts";

// ---------------------------------------------------------------------------------------------------------------
// Builders

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

type CollectionType = Extract<DataType, { root: "ARRAY" | "MULTISET" }>;
type MapType = Extract<DataType, { root: "MAP" }>;

const DEFAULT_CAPACITY = 1024;
const TWO_32 = 4294967296;
const MAX_OFFSET = 2147483647;

const bad = (path: string, expected: string, v: unknown): LakeError =>
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

abstract class BaseBuilder implements ColumnBuilder {
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
function grown<T extends { length: number; set(a: ArrayLike<number>): void }>(
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
const afterFinish = (capacity: number): number => Math.min(capacity, DEFAULT_CAPACITY);

export class BooleanColumnBuilder extends BaseBuilder {
  private bits: Uint8Array;
  constructor(type: DataType, path: string, private readonly capacity = DEFAULT_CAPACITY) {
    super(type, new arrow.Bool(), path);
    this.bits = new Uint8Array((capacity + 7) >> 3);
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

  constructor(type: DataType, path: string, private readonly capacity = DEFAULT_CAPACITY) {
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
    this.values = new this.ctor(capacity);
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

/** Shared storage of 64-bit slots: a BigInt64Array and an Int32Array over the same bytes. */
abstract class Int64SlotsBuilder extends BaseBuilder {
  protected big: BigInt64Array;
  protected words: Int32Array;
  constructor(type: DataType, arrowType: arrow.DataType, path: string, protected readonly capacity: number) {
    super(type, arrowType, path);
    this.big = new BigInt64Array(capacity);
    this.words = new Int32Array(this.big.buffer);
  }
  protected ensureSlot(): void {
    if (this.length < this.big.length) return;
    const big = new BigInt64Array(Math.max(this.big.length * 2, 16, this.capacity));
    big.set(this.big);
    this.big = big;
    this.words = new Int32Array(big.buffer);
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
    this.words = new Int32Array(this.big.buffer);
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export class Int64ColumnBuilder extends Int64SlotsBuilder {
  constructor(type: DataType, path: string, capacity = DEFAULT_CAPACITY) {
    super(type, new arrow.Int64(), path, capacity);
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
  constructor(type: DataType & { root: "TIMESTAMP" | "TIMESTAMP_LTZ" }, path: string, capacity = DEFAULT_CAPACITY) {
    const t = toArrowType(type) as arrow.Timestamp;
    super(type, t, path, capacity);
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
  constructor(type: DataType & { root: "DECIMAL" }, path: string, private readonly capacity = DEFAULT_CAPACITY) {
    super(type, toArrowType(type), path);
    this.big = new BigInt64Array(capacity * 2);
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
  ) {
    super(type, arrowType, path);
    this.offsets = new Int32Array(capacity + 1);
    this.bytes = new Uint8Array(byteCapacity);
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
  constructor(type: DataType, path: string, capacity = DEFAULT_CAPACITY) {
    super(type, new arrow.Utf8(), path, capacity, capacity * 16);
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
  constructor(type: DataType, path: string, capacity = DEFAULT_CAPACITY) {
    super(type, new arrow.Binary(), path, capacity, capacity * 16);
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (!(value instanceof Uint8Array)) throw bad(this.path, "bytes (Uint8Array)", value);
    this.appendBytesRange(value, 0, value.length);
  }
}

export class ListColumnBuilder extends BaseBuilder {
  private offsets: Int32Array;
  readonly child: ColumnBuilder & BaseBuilder;
  constructor(type: CollectionType, path: string, private readonly capacity = DEFAULT_CAPACITY) {
    super(type, toArrowType(type), path);
    this.child = makeBuilder(type.element, `${path}[]`, capacity);
    this.offsets = new Int32Array(capacity + 1);
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (!Array.isArray(value)) throw bad(this.path, "an array", value);
    this.ensureOffset();
    this.markValid();
    const child = this.child;
    for (let k = 0; k < value.length; k++) child.append(value[k] as Value);
    this.endList();
  }
  /** For decoders appending elements through `child` directly: closes the current list. */
  endList(): void {
    if (this.child.length > MAX_OFFSET) throw dataInvalid(`column ${this.path}: too many elements`, { column: this.path });
    this.offsets[++this.length] = this.child.length;
  }
  /** For decoders: marks the list about to be built as non-null (call before appending its elements). */
  beginList(): void {
    this.ensureOffset();
    this.markValid();
  }
  private ensureOffset(): void {
    if (this.length + 1 >= this.offsets.length) this.offsets = grown(this.offsets, this.length + 2, (n) => new Int32Array(n), this.capacity + 1);
  }
  protected pushEmpty(): void {
    this.ensureOffset();
    this.offsets[this.length + 1] = this.offsets[this.length]!;
    this.length++;
  }
  protected override truncateChildren(): void {
    this.child.truncate(this.offsets[this.length]!);
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    return arrow.makeData({
      type: this.arrowType as arrow.List,
      length: this.length,
      nullCount,
      nullBitmap,
      valueOffsets: this.offsets.subarray(0, this.length + 1),
      child: this.child.finish(),
    });
  }
  protected reset(): void {
    this.offsets = new Int32Array(afterFinish(this.capacity) + 1);
  }
}

/** MAP<K, V> (pairs) and MULTISET<T> (elements, stored as element → count like Java). */
export class MapColumnBuilder extends BaseBuilder {
  private offsets: Int32Array;
  readonly keys: ColumnBuilder & BaseBuilder;
  readonly values: ColumnBuilder & BaseBuilder;
  private readonly entriesType: arrow.Struct;
  private readonly multiset: boolean;

  constructor(type: CollectionType | MapType, path: string, private readonly capacity = DEFAULT_CAPACITY) {
    super(type, toArrowType(type), path);
    this.multiset = type.root === "MULTISET";
    // Parquet map keys are REQUIRED (Java writes them so): a null key cannot be stored.
    const keyType = type.root === "MAP" ? type.key : type.element;
    const valueType: DataType = type.root === "MAP" ? type.value : { root: "INT", nullable: false };
    this.keys = makeBuilder({ ...keyType, nullable: false } as DataType, `${path}.key`, capacity);
    this.values = makeBuilder(valueType, `${path}.value`, capacity);
    this.entriesType = (this.arrowType as arrow.Map_).children[0]!.type as arrow.Struct;
    this.offsets = new Int32Array(capacity + 1);
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    this.beginMap();
    if (this.multiset) {
      if (!Array.isArray(value)) throw bad(this.path, "an array (MULTISET)", value);
      for (const [element, count] of countElements(value as Value[])) {
        this.keys.append(element);
        this.values.append(count);
      }
    } else if (Array.isArray(value)) {
      for (let k = 0; k < value.length; k++) {
        const pair = value[k];
        if (!Array.isArray(pair) || pair.length !== 2) throw bad(this.path, "an array of [key, value] pairs", value);
        this.keys.append(pair[0] as Value);
        this.values.append(pair[1] as Value);
      }
    } else if ((value as unknown) instanceof Map) {
      for (const [k, v] of value as unknown as Map<Value, Value>) {
        this.keys.append(k);
        this.values.append(v);
      }
    } else throw bad(this.path, "an array of [key, value] pairs", value);
    this.endMap();
  }
  /** For decoders: begins a non-null map; append to `keys`/`values` in step, then `endMap()`. */
  beginMap(): void {
    if (this.length + 1 >= this.offsets.length) this.offsets = grown(this.offsets, this.length + 2, (n) => new Int32Array(n), this.capacity + 1);
    this.markValid();
  }
  endMap(): void {
    if (this.keys.length !== this.values.length) throw new LakeError(ErrorKind.Unexpected, `column ${this.path}: keys and values out of step`);
    this.offsets[++this.length] = this.keys.length;
  }
  protected pushEmpty(): void {
    if (this.length + 1 >= this.offsets.length) this.offsets = grown(this.offsets, this.length + 2, (n) => new Int32Array(n), this.capacity + 1);
    this.offsets[this.length + 1] = this.offsets[this.length]!;
    this.length++;
  }
  protected override truncateChildren(): void {
    const n = this.offsets[this.length]!;
    this.keys.truncate(n);
    this.values.truncate(n);
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    const n = this.keys.length;
    const entries = arrow.makeData({ type: this.entriesType, length: n, nullCount: 0, children: [this.keys.finish(), this.values.finish()] });
    return arrow.makeData({
      type: this.arrowType as arrow.Map_,
      length: this.length,
      nullCount,
      nullBitmap,
      valueOffsets: this.offsets.subarray(0, this.length + 1),
      child: entries,
    });
  }
  protected reset(): void {
    this.offsets = new Int32Array(afterFinish(this.capacity) + 1);
  }
}

/** Groups equal elements of a multiset; equality is by value (bytes and timestamps by content). */
function countElements(values: Value[]): Array<[Value, number]> {
  const counts = new Map<unknown, [Value, number]>();
  for (const v of values) {
    const key = v instanceof Uint8Array ? `b:${Buffer.from(v).toString("hex")}` : v instanceof Timestamp ? `t:${v.millis}:${v.nanoOfMilli}` : v !== null && typeof v === "object" ? `j:${stableJson(v)}` : v;
    const hit = counts.get(key);
    if (hit) hit[1]++;
    else counts.set(key, [v, 1]);
  }
  return [...counts.values()];
}

const stableJson = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? `${x}n` : x instanceof Uint8Array ? Buffer.from(x).toString("hex") : x));

export class StructColumnBuilder extends BaseBuilder {
  readonly children: Array<ColumnBuilder & BaseBuilder>;
  private readonly names: string[];
  constructor(type: DataType & { root: "ROW" }, path: string, capacity = DEFAULT_CAPACITY) {
    super(type, toArrowType(type), path);
    this.names = type.fields.map((f) => f.name);
    this.children = type.fields.map((f) => makeBuilder(f.type, `${path}.${f.name}`, capacity));
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (typeof value !== "object" || Array.isArray(value) || value instanceof Uint8Array || value instanceof Timestamp)
      throw bad(this.path, "an object (ROW)", value);
    const o = value as Record<string, Value>;
    this.markValid();
    for (let k = 0; k < this.children.length; k++) this.children[k]!.append(o[this.names[k]!]);
    this.length++;
  }
  /** For decoders filling `children` directly: records one non-null row (children must have advanced by one). */
  appendPresent(): void {
    this.markValid();
    this.length++;
  }
  protected pushEmpty(): void {
    for (const c of this.children) c.appendHidden();
    this.length++;
  }
  protected override truncateChildren(): void {
    for (const c of this.children) c.truncate(this.length);
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    return arrow.makeData({
      type: this.arrowType as arrow.Struct,
      length: this.length,
      nullCount,
      nullBitmap,
      children: this.children.map((c) => c.finish()),
    });
  }
  protected reset(): void {}
}

function makeBuilder(type: DataType, path: string, capacity: number): ColumnBuilder & BaseBuilder {
  switch (type.root) {
    case "BOOLEAN":
      return new BooleanColumnBuilder(type, path, capacity);
    case "TINYINT":
    case "SMALLINT":
    case "INT":
    case "DATE":
    case "TIME":
    case "FLOAT":
    case "DOUBLE":
      return new NumberColumnBuilder(type, path, capacity);
    case "BIGINT":
      return new Int64ColumnBuilder(type, path, capacity);
    case "DECIMAL":
      return new DecimalColumnBuilder(type, path, capacity);
    case "CHAR":
    case "VARCHAR":
      return new Utf8ColumnBuilder(type, path, capacity);
    case "BINARY":
    case "VARBINARY":
      return new BinaryColumnBuilder(type, path, capacity);
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      return new TimestampColumnBuilder(type, path, capacity);
    case "ARRAY":
    case "MULTISET":
      return type.root === "ARRAY" ? new ListColumnBuilder(type, path, Math.max(16, capacity)) : new MapColumnBuilder(type, path, Math.max(16, capacity));
    case "MAP":
      return new MapColumnBuilder(type, path, Math.max(16, capacity));
    case "ROW":
      return new StructColumnBuilder(type, path, capacity);
  }
}

/**
 * A builder for one column of `type`. `path` names the column in error messages; `capacity` is the expected number
 * of values (buffers grow by doubling past it).
 */
export function makeColumnBuilder(type: DataType, path = "?", capacity = DEFAULT_CAPACITY): ColumnBuilder {
  return makeBuilder(type, path, Math.max(1, capacity));
}

/** `(v << shift) >> shift === v` holds exactly for the JS numbers an INT / SMALLINT / TINYINT column takes as they are. */
export function narrowIntShift(root: "INT" | "SMALLINT" | "TINYINT"): number {
  return root === "INT" ? 0 : root === "SMALLINT" ? 16 : 24;
}

/**
 * The fast path of one column for *input* values (as a producer sends them: numbers for BIGINT and epoch-millis
 * timestamps, strings, …): appends a value the converter would pass through unchanged (or only widen) and the
 * builder would accept, without making the canonical value first (no BigInt, no Timestamp object), and returns
 * true; returns false for anything else, which then takes the converter + `append` path. Exactly the conditions
 * of `compileConverter`'s fast paths, so accepted values and errors are unchanged.
 */
function inputFastPath(col: ColumnBuilder): (v: unknown) => boolean {
  const type = col.type;
  switch (type.root) {
    case "INT":
    case "SMALLINT":
    case "TINYINT": {
      const b = col as NumberColumnBuilder;
      const shift = narrowIntShift(type.root);
      return (v) => typeof v === "number" && (v << shift) >> shift === v && (b.appendNumber(v), true);
    }
    case "BIGINT": {
      const b = col as Int64ColumnBuilder;
      return (v) => {
        if (typeof v === "number" && Number.isSafeInteger(v)) b.appendNumber(v);
        else if (typeof v === "bigint" && BigInt.asIntN(64, v) === v) b.appendBigInt(v);
        else return false;
        return true;
      };
    }
    case "DOUBLE": {
      const b = col as NumberColumnBuilder;
      return (v) => typeof v === "number" && (b.appendNumber(v), true);
    }
    case "FLOAT": {
      const b = col as NumberColumnBuilder;
      return (v) => typeof v === "number" && (b.appendNumber(Math.fround(v)), true);
    }
    case "BOOLEAN": {
      const b = col as BooleanColumnBuilder;
      return (v) => typeof v === "boolean" && (b.appendBoolean(v), true);
    }
    case "VARCHAR": {
      if (type.length !== MAX_LENGTH) return () => false;
      const b = col as Utf8ColumnBuilder;
      return (v) => typeof v === "string" && (b.appendString(v), true);
    }
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ": {
      const b = col as TimestampColumnBuilder;
      return (v) => typeof v === "number" && Number.isSafeInteger(v) && (b.appendTimestamp(v, 0), true);
    }
    default:
      return () => false;
  }
}

interface InputColumn {
  name: string;
  type: DataType;
  col: ColumnBuilder;
  fast: (v: unknown) => boolean;
  convert: (v: unknown) => Value;
}

/** Builds record batches column by column; `columns[i]` may also be filled directly by a decoder. */
export class RecordBatchBuilder {
  readonly schema: arrow.Schema;
  readonly columns: ColumnBuilder[];
  private readonly names: string[];
  private inputColumns: InputColumn[] | null = null;

  constructor(
    readonly fields: readonly ColumnSpec[],
    capacity = DEFAULT_CAPACITY,
  ) {
    this.schema = toArrowSchema(fields);
    this.names = fields.map((f) => f.name);
    this.columns = fields.map((f) => makeColumnBuilder(f.type, f.name, capacity));
  }

  get length(): number {
    return this.columns[0]?.length ?? 0;
  }

  /**
   * Appends a row of canonical values keyed by column name; a missing key is a null. A row that fails (DataInvalid)
   * is rolled back from every column, so the builder stays usable and the caller can route the row elsewhere.
   */
  appendRow(row: Row): void {
    const cols = this.columns;
    const before = this.length;
    try {
      for (let k = 0; k < cols.length; k++) cols[k]!.append(row[this.names[k]!]);
    } catch (e) {
      for (const c of cols) c.truncate(before);
      throw e;
    }
  }

  /**
   * Validates and appends an input record (an object keyed by column name, as `compileRowConverter` takes it): the
   * same rules and the same DataInvalid errors as `appendRow(compileRowConverter(fields)(input))`, including the
   * rejection of unknown keys, at about half the cost, because common values go into the column buffers without
   * becoming canonical values first. A rejected record is rolled back from every column.
   */
  appendInput(input: Readonly<Record<string, unknown>>): void {
    const cols = (this.inputColumns ??= this.makeInputColumns());
    const before = this.length;
    try {
      // The converter's order of errors: conversion errors (column order), then an unknown key, then what the
      // builders reject (e.g. a timestamp beyond ±2^53 ms) — so a builder error waits until the end.
      let appendError: { e: unknown } | null = null;
      let seen = 0;
      for (let k = 0; k < cols.length; k++) {
        const c = cols[k]!;
        const v = input[c.name];
        if (v !== undefined) seen++;
        if (c.fast(v)) continue;
        const value = v === null || v === undefined ? toCanonical(c.type, v, c.name) : c.convert(v);
        if (appendError !== null) continue;
        try {
          c.col.append(value);
        } catch (e) {
          appendError = { e };
        }
      }
      // Only when the record has more defined keys than the columns it matched is a key unknown.
      let defined = 0;
      for (const key in input) if (input[key] !== undefined) defined++;
      if (defined !== seen) {
        const unknown = Object.keys(input).filter((key) => !this.names.includes(key));
        throw dataInvalid(`unknown column '${unknown[0]}' (columns: ${this.names.join(", ")})`, { column: unknown[0] });
      }
      if (appendError !== null) throw appendError.e;
    } catch (e) {
      for (const c of this.columns) c.truncate(before);
      throw e;
    }
  }

  /**
   * Validates and appends a row given as an array of input values: column `k` takes `values[index[k]]` (a null when
   * `index[k]` is −1). The same rules and DataInvalid errors, in the same order, as converting each value with
   * `compileConverter` (a missing or undefined value as `toCanonical(type, null)`) and then `appendRow` — without a
   * canonical value per cell on the common paths (see `appendInput`). A rejected row is rolled back from every column.
   */
  appendArray(values: readonly unknown[], index: readonly number[]): void {
    const cols = (this.inputColumns ??= this.makeInputColumns());
    const before = this.length;
    try {
      let appendError: { e: unknown } | null = null;
      for (let k = 0; k < cols.length; k++) {
        const c = cols[k]!;
        const j = index[k]!;
        const v = j < 0 ? undefined : values[j];
        try {
          // A fast path may still be refused by the builder (a timestamp beyond its unit's range): reported last.
          if (c.fast(v)) continue;
        } catch (e) {
          appendError ??= { e };
          continue;
        }
        const value = v === null || v === undefined ? toCanonical(c.type, v, c.name) : c.convert(v);
        if (appendError !== null) continue;
        try {
          c.col.append(value);
        } catch (e) {
          appendError = { e };
        }
      }
      if (appendError !== null) throw appendError.e;
    } catch (e) {
      for (const c of this.columns) c.truncate(before);
      throw e;
    }
  }

  private makeInputColumns(): InputColumn[] {
    return this.columns.map((col, k) => {
      const name = this.names[k]!;
      return { name, type: col.type, col, fast: inputFastPath(col), convert: compileConverter(col.type, name) };
    });
  }

  /** The batch built so far; the builders are reset. Throws if a decoder left the columns of unequal length. */
  finish(): arrow.RecordBatch {
    const length = this.length;
    for (let k = 0; k < this.columns.length; k++) {
      if (this.columns[k]!.length !== length)
        throw new LakeError(ErrorKind.Unexpected, `column ${this.names[k]} has ${this.columns[k]!.length} values, expected ${length}`);
    }
    const children = this.columns.map((c) => c.finish());
    const data = arrow.makeData({ type: new arrow.Struct(this.schema.fields), length, nullCount: 0, children });
    return new arrow.RecordBatch(this.schema, data);
  }
}

/** Builds one record batch from rows of canonical values keyed by column name. */
export function rowsToRecordBatch(fields: readonly ColumnSpec[], rows: readonly Row[]): arrow.RecordBatch {
  const b = new RecordBatchBuilder(fields, Math.max(1, rows.length));
  // Column by column: each loop sees one builder class and one property name, which V8 optimises far better than
  // row by row (measured ~2x). A bad value fails the whole call, so no per-row rollback is needed.
  fields.forEach((f, k) => appendColumn(b.columns[k]!, f.name, rows));
  return b.finish();
}

function appendColumn(col: ColumnBuilder, name: string, rows: readonly Row[]): void {
  for (let i = 0; i < rows.length; i++) col.append(rows[i]![name]);
}

// ---------------------------------------------------------------------------------------------------------------
// Readers

export type ValueReader = (i: number) => Value;

/**
 * A reader of canonical values from one Arrow `Data` chunk. `type` is the Paimon type the caller wants (it adds
 * integer-width coercion, names ROW fields and expands MULTISET counts); pass `undefined` to derive everything from
 * the Arrow type.
 */
export function columnReader(type: DataType | undefined, data: arrow.Data): ValueReader {
  if (data.typeId === arrow.Type.Null) return () => null;
  const get = coerce(type, rawReader(type, data));
  const bitmap = data.nullBitmap;
  if (data.nullCount === 0 || !bitmap || bitmap.length === 0) return get;
  const off = data.offset;
  return (i) => {
    const j = off + i;
    return (bitmap[j >> 3]! & (1 << (j & 7))) === 0 ? null : get(i);
  };
}

const INT_ROOTS = new Set(["TINYINT", "SMALLINT", "INT", "DATE", "TIME"]);

/** Integer-width coercions between what the file holds and what the table type wants. */
function coerce(type: DataType | undefined, get: ValueReader): ValueReader {
  if (type === undefined) return get;
  if (type.root === "BIGINT") return (i) => {
    const v = get(i);
    return typeof v === "number" ? BigInt(v) : v;
  };
  if (INT_ROOTS.has(type.root)) return (i) => {
    const v = get(i);
    return typeof v === "bigint" ? Number(v) : v;
  };
  return get;
}

const MS_PER_DAY = 86_400_000;

function rawReader(type: DataType | undefined, data: arrow.Data): ValueReader {
  const t = data.type;
  const off = data.offset;
  switch (t.typeId) {
    case arrow.Type.Bool: {
      const bits = data.values as Uint8Array;
      return (i) => {
        const j = off + i;
        return (bits[j >> 3]! & (1 << (j & 7))) !== 0;
      };
    }
    case arrow.Type.Int: {
      const values = data.values as ArrayLike<number | bigint>;
      return (i) => values[i]!;
    }
    case arrow.Type.Float: {
      if ((t as arrow.Float).precision === arrow.Precision.HALF) {
        const values = data.values as Uint16Array;
        return (i) => halfToNumber(values[i]!);
      }
      const values = data.values as Float32Array | Float64Array;
      return (i) => values[i]!;
    }
    case arrow.Type.Decimal:
      return decimalReader(data);
    case arrow.Type.Utf8: {
      const offsets = data.valueOffsets as Int32Array;
      const bytes = data.values as Uint8Array;
      const slice = utf8Slicer(bytes);
      return (i) => slice(offsets[i]!, offsets[i + 1]!);
    }
    case arrow.Type.LargeUtf8: {
      const offsets = data.valueOffsets as unknown as ArrayLike<bigint | number>;
      const bytes = data.values as Uint8Array;
      const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      return (i) => buf.toString("utf8", Number(offsets[i]!), Number(offsets[i + 1]!));
    }
    case arrow.Type.Binary: {
      const offsets = data.valueOffsets as Int32Array;
      const bytes = data.values as Uint8Array;
      // Copies, so a row never pins the whole column buffer.
      return (i) => bytes.slice(offsets[i]!, offsets[i + 1]!);
    }
    case arrow.Type.LargeBinary: {
      const offsets = data.valueOffsets as unknown as ArrayLike<bigint | number>;
      const bytes = data.values as Uint8Array;
      return (i) => bytes.slice(Number(offsets[i]!), Number(offsets[i + 1]!));
    }
    case arrow.Type.FixedSizeBinary: {
      const w = (t as arrow.FixedSizeBinary).byteWidth;
      const bytes = data.values as Uint8Array;
      return (i) => bytes.slice(i * w, (i + 1) * w);
    }
    case arrow.Type.Date: {
      if ((t as arrow.Date_).unit === arrow.DateUnit.DAY) {
        const values = data.values as Int32Array;
        return (i) => values[i]!;
      }
      const values = data.values as unknown as ArrayLike<bigint | number>;
      return (i) => Math.floor(Number(values[i]!) / MS_PER_DAY);
    }
    case arrow.Type.Time: {
      const values = data.values as unknown as ArrayLike<bigint | number>;
      switch ((t as arrow.Time).unit) {
        case arrow.TimeUnit.SECOND:
          return (i) => Number(values[i]!) * 1000;
        case arrow.TimeUnit.MILLISECOND:
          return (i) => Number(values[i]!);
        case arrow.TimeUnit.MICROSECOND:
          return (i) => Math.floor(Number(values[i]!) / 1000);
        default:
          return (i) => Math.floor(Number(values[i]!) / 1_000_000);
      }
    }
    case arrow.Type.Timestamp:
      return timestampReader(data);
    case arrow.Type.List:
    case arrow.Type.LargeList: {
      const offsets = data.valueOffsets as unknown as ArrayLike<number | bigint>;
      const elementType = type?.root === "ARRAY" || type?.root === "MULTISET" ? type.element : undefined;
      const child = columnReader(elementType, data.children[0]!);
      return (i) => {
        const end = Number(offsets[i + 1]!);
        const out: Value[] = [];
        for (let k = Number(offsets[i]!); k < end; k++) out.push(child(k));
        return out;
      };
    }
    case arrow.Type.FixedSizeList: {
      const size = (t as arrow.FixedSizeList).listSize;
      const elementType = type?.root === "ARRAY" ? type.element : undefined;
      const child = columnReader(elementType, data.children[0]!);
      return (i) => {
        const out: Value[] = [];
        for (let k = i * size; k < (i + 1) * size; k++) out.push(child(k));
        return out;
      };
    }
    case arrow.Type.Map:
      return mapReader(type, data);
    case arrow.Type.Struct:
      return structReader(type, data);
    case arrow.Type.Dictionary:
      return dictionaryReader(type, data);
    default:
      return genericReader(data);
  }
}

function decimalReader(data: arrow.Data): ValueReader {
  const words = data.values as Uint32Array;
  const perValue = (data.type as arrow.Decimal).bitWidth / 32;
  if (perValue === 4 && words.byteOffset % 8 === 0) {
    const lo = new BigUint64Array(words.buffer, words.byteOffset, words.length >> 1);
    const signed = new BigInt64Array(words.buffer, words.byteOffset, words.length >> 1);
    return (i) => {
      const w = i * 4;
      const w1 = words[w + 1]!;
      const w2 = words[w + 2]!;
      const w3 = words[w + 3]!;
      // The high 64 bits merely sign-extend the low 64 bits for all but huge values: one BigInt read suffices.
      if ((w2 === 0 && w3 === 0 && w1 < 0x80000000) || (w2 === 0xffffffff && w3 === 0xffffffff && w1 >= 0x80000000)) return signed[i * 2]!;
      return (signed[i * 2 + 1]! << 64n) + lo[i * 2]!;
    };
  }
  return (i) => {
    let v = 0n;
    for (let k = perValue - 1; k >= 0; k--) v = (v << 32n) | BigInt(words[i * perValue + k]!);
    return BigInt.asIntN(perValue * 32, v);
  };
}

function timestampReader(data: arrow.Data): ValueReader {
  const values = data.values as unknown as BigInt64Array;
  const unit = (data.type as arrow.Timestamp).unit;
  if (values.byteOffset % 4 !== 0) {
    // Not expected from IPC or our builders; fall back to BigInt arithmetic.
    const factor = [1000n, 1n, 1n, 1n][unit]!;
    if (unit === arrow.TimeUnit.MICROSECOND) return (i) => Timestamp.fromEpochMicros(values[i]!);
    if (unit === arrow.TimeUnit.NANOSECOND) return (i) => Timestamp.fromEpochNanos(values[i]!);
    return (i) => new Timestamp(Number(values[i]! * factor), 0);
  }
  // Reading the two 32-bit halves as numbers avoids a BigInt allocation per value (measured ~2x faster).
  const words = new Int32Array(values.buffer, values.byteOffset, values.length * 2);
  switch (unit) {
    case arrow.TimeUnit.SECOND:
      return (i) => new Timestamp(int64At(words, i) * 1000, 0);
    case arrow.TimeUnit.MILLISECOND:
      return (i) => new Timestamp(int64At(words, i), 0);
    case arrow.TimeUnit.MICROSECOND:
      return (i) => {
        const n = int64At(words, i);
        if (!Number.isSafeInteger(n)) return Timestamp.fromEpochMicros(values[i]!);
        const ms = Math.floor(n / 1000);
        return new Timestamp(ms, (n - ms * 1000) * 1000);
      };
    default:
      return (i) => {
        // hi·2^32 + lo = hi·4294·10^6 + (hi·967296 + lo): both parts are exact doubles, so the split is exact.
        const hi = words[2 * i + 1]!;
        const r = hi * 967296 + (words[2 * i]! >>> 0);
        const q = Math.floor(r / 1_000_000);
        return new Timestamp(hi * 4294 + q, r - q * 1_000_000);
      };
  }
}

/** The int64 at slot i of a little-endian word view, as a double (exact within ±2^53). */
const int64At = (words: Int32Array, i: number): number => words[2 * i + 1]! * TWO_32 + (words[2 * i]! >>> 0);

function mapReader(type: DataType | undefined, data: arrow.Data): ValueReader {
  const offsets = data.valueOffsets as Int32Array;
  const entries = data.children[0]!;
  const keyType = type?.root === "MAP" ? type.key : type?.root === "MULTISET" ? type.element : undefined;
  const valueType = type?.root === "MAP" ? type.value : undefined;
  const keys = columnReader(keyType, entries.children[0]!);
  const values = columnReader(valueType, entries.children[1]!);
  if (type?.root === "MULTISET") {
    return (i) => {
      const out: Value[] = [];
      for (let k = offsets[i]!; k < offsets[i + 1]!; k++) {
        const key = keys(k);
        const count = Number(values(k) ?? 0);
        for (let c = 0; c < count; c++) out.push(key);
      }
      return out;
    };
  }
  return (i) => {
    const out: Array<[Value, Value]> = [];
    for (let k = offsets[i]!; k < offsets[i + 1]!; k++) out.push([keys(k), values(k)]);
    return out;
  };
}

function structReader(type: DataType | undefined, data: arrow.Data): ValueReader {
  const arrowFields = (data.type as arrow.Struct).children;
  const readers: Array<[string, ValueReader | undefined]> = [];
  if (type?.root === "ROW") {
    for (const f of type.fields) {
      const k = findField(arrowFields.map((a) => a.name), f.name);
      readers.push([f.name, k < 0 ? undefined : columnReader(f.type, data.children[k]!)]);
    }
  } else {
    arrowFields.forEach((a, k) => readers.push([a.name, columnReader(undefined, data.children[k]!)]));
  }
  return (i) => {
    const o: Record<string, Value> = {};
    for (const [name, r] of readers) o[name] = r === undefined ? null : r(i);
    return o;
  };
}

function dictionaryReader(type: DataType | undefined, data: arrow.Data): ValueReader {
  const indices = data.values as ArrayLike<number | bigint>;
  const dict = data.dictionary;
  if (!dict) throw dataInvalid("dictionary-encoded column without a dictionary");
  const chunks = dict.data.map((d) => columnReader(type, d));
  const starts: number[] = [];
  let s = 0;
  for (const d of dict.data) {
    starts.push(s);
    s += d.length;
  }
  return (i) => {
    const j = Number(indices[i]!);
    let c = chunks.length - 1;
    while (c > 0 && starts[c]! > j) c--;
    return chunks[c]!(j - starts[c]!);
  };
}

/** Anything else (views, durations): read through apache-arrow's own getters. */
function genericReader(data: arrow.Data): ValueReader {
  const v = arrow.makeVector(data);
  return (i) => {
    const x: unknown = v.get(i);
    if (x === null || x === undefined) return null;
    if (typeof x === "string" || typeof x === "number" || typeof x === "bigint" || typeof x === "boolean" || x instanceof Uint8Array) return x;
    throw new LakeError(ErrorKind.Unsupported, `cannot read Arrow type ${String(data.type)}`);
  };
}

/**
 * Decodes byte ranges of `bytes` as UTF-8. Node's `Buffer#utf8Slice` (what `toString("utf8")` calls after checking
 * its arguments) is measured ~1.6x faster than `toString` for short strings and 2x faster than TextDecoder.
 */
function utf8Slicer(bytes: Uint8Array): (start: number, end: number) => string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) as Buffer & { utf8Slice?: (s: number, e: number) => string };
  if (typeof buf.utf8Slice === "function") return (s, e) => buf.utf8Slice!(s, e);
  return (s, e) => buf.toString("utf8", s, e);
}

function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** Index of `name` among `names`: exact match first, then case-insensitive (Java's fallback). −1 if absent. */
export function findField(names: readonly string[], name: string): number {
  const exact = names.indexOf(name);
  if (exact >= 0) return exact;
  const lower = name.toLowerCase();
  return names.findIndex((n) => n.toLowerCase() === lower);
}

function batchesOf(source: arrow.RecordBatch | arrow.Table): arrow.RecordBatch[] {
  return source instanceof arrow.Table ? source.batches : [source];
}

/** Column `name` of a batch as one Data chunk (a RecordBatch column is always a single chunk). */
export function batchColumn(batch: arrow.RecordBatch, name: string): arrow.Data | undefined {
  const k = findField(
    batch.schema.fields.map((f) => f.name),
    name,
  );
  return k < 0 ? undefined : batch.data.children[k];
}

/**
 * Canonical rows of a batch or table, with the given columns (matched by name). A column missing from the data is
 * an error: schema evolution (added columns read as null) is the caller's decision.
 */
export function recordBatchToRows(fields: readonly ColumnSpec[], source: arrow.RecordBatch | arrow.Table): Row[] {
  const rows: Row[] = [];
  for (const batch of batchesOf(source)) {
    const readers = fields.map((f) => {
      const data = batchColumn(batch, f.name);
      if (data === undefined) throw dataInvalid(`column '${f.name}' is missing from the data`, { column: f.name });
      return columnReader(f.type, data);
    });
    const names = fields.map((f) => f.name);
    for (let i = 0; i < batch.numRows; i++) {
      const row: Row = {};
      for (let k = 0; k < readers.length; k++) row[names[k]!] = readers[k]!(i);
      rows.push(row);
    }
  }
  return rows;
}

/** All values of one column (a Vector of any number of chunks, or one Data) as canonical values. */
export function columnValues(type: DataType | undefined, column: arrow.Vector | arrow.Data): Value[] {
  const chunks = column instanceof arrow.Vector ? column.data : [column];
  const out: Value[] = [];
  for (const d of chunks) {
    const r = columnReader(type, d);
    for (let i = 0; i < d.length; i++) out.push(r(i));
  }
  return out;
}
