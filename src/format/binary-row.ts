/**
 * Paimon's BinaryRow: the byte layout of partition values, min/max keys, statistics rows and bucket keys.
 *
 * Contract (paimon-format.md §5; Java `BinaryRow`, `BinaryRowWriter`, `AbstractBinaryWriter`):
 * - Row bytes = header+null bitset (W bytes) | one 8-byte slot per field | 8-byte aligned variable part, all
 *   little-endian. Byte 0 is the RowKind (0 = +I for every row this library writes by default).
 * - `encodeBinaryRow` produces the bytes Java's code-generated projection produces for the same values, so the
 *   Murmur hash over them (bucket.ts) gives Java's bucket. That includes one Java quirk pypaimon does not copy:
 *   a null DECIMAL(p > 18) or TIMESTAMP(p > 3) still reserves its variable-part chunk (16 resp. 8 zero bytes)
 *   and its slot holds `offset << 32` (Java `writeDecimal(pos, null, p)` / `writeTimestamp(pos, null, p)`).
 * - `serializeBinaryRow` adds the manifest framing: a 4-byte big-endian arity before the row bytes (§5.2).
 * - Decoding accepts Java's and pypaimon's encodings (pypaimon's decimal byte length differs and it zeroes the
 *   slot of null non-compact fields); it never trusts offsets without bounds checks.
 * - Values are the canonical values of values.ts. Only atomic types are supported: ARRAY/MAP/MULTISET/ROW never
 *   appear in partition, key or statistics rows this library writes, and they raise an Unsupported error.
 *
 * `BinaryRowWriter` is the reusable, allocation-light writer for hot paths (bucket assignment hashes one row per
 * input record): `reset()`, then `writeX(pos, v)` / `setNull(pos)` per field, then read `buffer[0, size)`.
 */
import { ErrorKind, LakeError, dataInvalid } from "../errors.ts";
import { typeToSql, type DataType } from "./data-types.ts";
import { Timestamp, type Value } from "./values.ts";

export const RowKind = { INSERT: 0, UPDATE_BEFORE: 1, UPDATE_AFTER: 2, DELETE: 3 } as const;
export type RowKind = (typeof RowKind)[keyof typeof RowKind];

const HEADER_SIZE_IN_BITS = 8;
/** Strings and binaries up to this many bytes live inside their slot instead of the variable part. */
export const MAX_FIX_PART_DATA_SIZE = 7;

/** Width W of the header + null bitset: 8 bytes for arity 0..56, 16 for 57..120, … */
export const nullBitsSizeInBytes = (arity: number): number => Math.floor((arity + 63 + HEADER_SIZE_IN_BITS) / 64) * 8;
/** Size of header + slots; the variable part starts here. */
export const fixedPartSize = (arity: number): number => nullBitsSizeInBytes(arity) + 8 * arity;
/** DECIMAL(p) with p ≤ 18 stores the unscaled value as an int64 in its slot. */
export const isCompactDecimal = (precision: number): boolean => precision <= 18;
/** TIMESTAMP(p) with p ≤ 3 stores epoch millis in its slot (sub-millisecond digits are dropped). */
export const isCompactTimestamp = (precision: number): boolean => precision <= 3;

/** Serialized (framed) empty row: arity 0 + an 8-byte header. Shared — never mutate it. */
export const EMPTY_ROW_SERIALIZED: Uint8Array = new Uint8Array(12);

const TWO_POW_32 = 4294967296;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const utf8Decoder = new TextDecoder("utf-8");

const unsupported = (type: DataType): LakeError =>
  new LakeError(ErrorKind.Unsupported, `BinaryRow fields of type ${typeToSql(type)} are not supported (only atomic types)`);

const roundUpTo8 = (n: number): number => (n + 7) & ~7;

// ---------------------------------------------------------------------------------------------------------------
// Writer

/**
 * Reusable writer of one row of a fixed arity. Each field must be written (or set null) at most once between
 * `reset()` calls, as in Java: a second variable-length write would leave the first chunk behind as garbage.
 * The bytes are `buffer.subarray(0, size)` and stay valid until the next `reset()`.
 */
export class BinaryRowWriter {
  readonly arity: number;
  private readonly nullBitsBytes: number;
  private readonly fixedSize: number;
  private buf: Uint8Array;
  private dv: DataView;
  private cursor: number;

  constructor(arity: number, initialVarCapacity = 64) {
    if (!Number.isInteger(arity) || arity < 0) throw dataInvalid(`BinaryRow arity must be a non-negative integer, got ${arity}`);
    this.arity = arity;
    this.nullBitsBytes = nullBitsSizeInBytes(arity);
    this.fixedSize = this.nullBitsBytes + 8 * arity;
    this.buf = new Uint8Array(this.fixedSize + Math.max(0, initialVarCapacity));
    this.dv = new DataView(this.buf.buffer);
    this.cursor = this.fixedSize;
  }

  /** Starts a new row: clears header, null bits and slots; forgets the variable part. */
  reset(rowKind: RowKind = RowKind.INSERT): void {
    // Slots are cleared too (Java only clears the bitset), so narrow writes never see stale high bytes.
    this.buf.fill(0, 0, this.fixedSize);
    this.buf[0] = rowKind;
    this.cursor = this.fixedSize;
  }

  /** The writer's buffer; the row occupies `[0, size)`. Replaced when the writer grows. */
  get buffer(): Uint8Array {
    return this.buf;
  }
  /** Length of the row in bytes (fixed part + variable part written so far). */
  get size(): number {
    return this.cursor;
  }
  /** A view of the row bytes (no copy; valid until the next reset or write). */
  view(): Uint8Array {
    return this.buf.subarray(0, this.cursor);
  }
  /** A copy of the row bytes. */
  toBytes(): Uint8Array {
    return this.buf.slice(0, this.cursor);
  }
  /** A copy of the row bytes with the 4-byte big-endian arity prefix of manifests. */
  toSerialized(): Uint8Array {
    const out = new Uint8Array(4 + this.cursor);
    new DataView(out.buffer).setInt32(0, this.arity, false);
    out.set(this.buf.subarray(0, this.cursor), 4);
    return out;
  }

  setNull(pos: number): void {
    const slot = this.slot(pos);
    this.setNullBit(pos);
    this.dv.setUint32(slot, 0, true);
    this.dv.setUint32(slot + 4, 0, true);
  }

  writeBoolean(pos: number, v: boolean): void {
    const slot = this.slot(pos);
    this.buf[slot] = v ? 1 : 0;
  }
  writeByte(pos: number, v: number): void {
    this.dv.setInt8(this.slot(pos), v);
  }
  writeShort(pos: number, v: number): void {
    this.dv.setInt16(this.slot(pos), v, true);
  }
  /** INT, DATE (days) and TIME (millis of day). */
  writeInt(pos: number, v: number): void {
    this.dv.setInt32(this.slot(pos), v, true);
  }
  writeLong(pos: number, v: bigint): void {
    this.dv.setBigInt64(this.slot(pos), v, true);
  }
  /** An int64 slot from a JS safe integer, without a bigint round trip (millis, small BIGINTs). */
  writeLongNumber(pos: number, v: number): void {
    this.putLongNumber(this.slot(pos), v);
  }
  writeFloat(pos: number, v: number): void {
    this.dv.setFloat32(this.slot(pos), v, true);
  }
  writeDouble(pos: number, v: number): void {
    this.dv.setFloat64(this.slot(pos), v, true);
  }

  /** CHAR/VARCHAR/STRING as UTF-8, encoded the way Java's `String.getBytes(UTF_8)` does (lone surrogate → '?'). */
  writeString(pos: number, s: string): void {
    const slot = this.slot(pos);
    // Encode into the free space after the cursor first: only then is the byte length known.
    this.ensureCapacity(s.length * 3 + 8);
    const start = this.cursor;
    const n = encodeUtf8Java(s, this.buf, start);
    if (n <= MAX_FIX_PART_DATA_SIZE) {
      this.buf.copyWithin(slot, start, start + n);
      this.buf.fill(0, slot + n, slot + 7);
      this.buf[slot + 7] = 0x80 | n;
    } else {
      this.finishVarChunk(slot, n);
    }
  }

  /** BINARY/VARBINARY/BYTES. */
  writeBinary(pos: number, bytes: Uint8Array): void {
    const slot = this.slot(pos);
    const n = bytes.length;
    if (n <= MAX_FIX_PART_DATA_SIZE) {
      this.buf.fill(0, slot, slot + 7);
      this.buf.set(bytes, slot);
      this.buf[slot + 7] = 0x80 | n;
    } else {
      this.ensureCapacity(roundUpTo8(n));
      this.buf.set(bytes, this.cursor);
      this.finishVarChunk(slot, n);
    }
  }

  /**
   * DECIMAL(precision) from its unscaled value. `null` writes a null the way Java does for the type (for p > 18
   * the 16-byte chunk is still reserved).
   */
  writeDecimal(pos: number, unscaled: bigint | null, precision: number): void {
    const slot = this.slot(pos);
    if (isCompactDecimal(precision)) {
      if (unscaled === null) this.setNull(pos);
      else this.dv.setBigInt64(slot, unscaled, true);
      return;
    }
    this.ensureCapacity(16);
    const at = this.cursor;
    this.buf.fill(0, at, at + 16);
    if (unscaled === null) {
      this.setNullBit(pos);
      this.setOffsetAndSize(slot, at, 0);
    } else {
      const len = twosComplementLength(unscaled);
      if (len > 16) throw dataInvalid(`DECIMAL(${precision}) unscaled value ${unscaled} does not fit in 16 bytes`);
      let v = unscaled;
      for (let i = at + len - 1; i >= at; i--) {
        this.buf[i] = Number(v & 0xffn);
        v >>= 8n;
      }
      this.setOffsetAndSize(slot, at, len);
    }
    this.cursor = at + 16;
  }

  /**
   * TIMESTAMP / TIMESTAMP_LTZ (precision). `null` writes a null the way Java does for the type (for p > 3 the
   * 8-byte chunk is still reserved).
   */
  writeTimestamp(pos: number, ts: Timestamp | null, precision: number): void {
    const slot = this.slot(pos);
    if (isCompactTimestamp(precision)) {
      if (ts === null) this.setNull(pos);
      else this.putLongNumber(slot, ts.millis);
      return;
    }
    this.ensureCapacity(8);
    const at = this.cursor;
    if (ts === null) {
      this.setNullBit(pos);
      this.putLongNumber(at, 0);
      this.setOffsetAndSize(slot, at, 0);
    } else {
      this.putLongNumber(at, ts.millis);
      this.setOffsetAndSize(slot, at, ts.nanoOfMilli);
    }
    this.cursor = at + 8;
  }

  private slot(pos: number): number {
    if (!(pos >= 0 && pos < this.arity)) throw dataInvalid(`BinaryRow field index ${pos} is out of range for arity ${this.arity}`);
    return this.nullBitsBytes + 8 * pos;
  }

  private setNullBit(pos: number): void {
    const bit = pos + HEADER_SIZE_IN_BITS;
    this.buf[bit >>> 3]! |= 1 << (bit & 7);
  }

  private setOffsetAndSize(slot: number, offset: number, size: number): void {
    this.dv.setUint32(slot, size, true);
    this.dv.setUint32(slot + 4, offset, true);
  }

  private putLongNumber(at: number, v: number): void {
    // ToUint32 is exact modulo 2^32 for any integer, and dividing by 2^32 is exact in binary floating point.
    this.dv.setUint32(at, v >>> 0, true);
    this.dv.setInt32(at + 4, Math.floor(v / TWO_POW_32), true);
  }

  /** `n` bytes were written at the cursor: zero the padding, point the slot at them, advance. */
  private finishVarChunk(slot: number, n: number): void {
    const at = this.cursor;
    const rounded = roundUpTo8(n);
    this.buf.fill(0, at + n, at + rounded);
    this.setOffsetAndSize(slot, at, n);
    this.cursor = at + rounded;
  }

  private ensureCapacity(extra: number): void {
    const needed = this.cursor + extra;
    if (needed <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(needed, this.buf.length + (this.buf.length >> 1)));
    grown.set(this.buf.subarray(0, this.cursor));
    this.buf = grown;
    this.dv = new DataView(grown.buffer);
  }
}

/**
 * UTF-8 of `s` into `out` at `at` (caller guarantees 3 bytes per UTF-16 unit), returning the byte count.
 * Unpaired surrogates become '?' as in Java's `String.getBytes(UTF_8)`; TextEncoder would write U+FFFD (3
 * bytes), which would change the bucket of such a key.
 */
function encodeUtf8Java(s: string, out: Uint8Array, at: number): number {
  let p = at;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      out[p++] = c;
    } else if (c < 0x800) {
      out[p++] = 0xc0 | (c >> 6);
      out[p++] = 0x80 | (c & 0x3f);
    } else if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < n ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        const cp = ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
        out[p++] = 0xf0 | (cp >> 18);
        out[p++] = 0x80 | ((cp >> 12) & 0x3f);
        out[p++] = 0x80 | ((cp >> 6) & 0x3f);
        out[p++] = 0x80 | (cp & 0x3f);
        i++;
      } else {
        out[p++] = 0x3f;
      }
    } else {
      out[p++] = 0xe0 | (c >> 12);
      out[p++] = 0x80 | ((c >> 6) & 0x3f);
      out[p++] = 0x80 | (c & 0x3f);
    }
  }
  return p - at;
}

/** Byte length of Java's `BigInteger.toByteArray()`: the minimal two's complement, at least one byte. */
function twosComplementLength(v: bigint): number {
  const m = v < 0n ? ~v : v;
  if (m === 0n) return 1;
  const hex = m.toString(16);
  const bitLength = (hex.length - 1) * 4 + (32 - Math.clz32(parseInt(hex[0]!, 16)));
  return (bitLength >> 3) + 1;
}

// ---------------------------------------------------------------------------------------------------------------
// Typed field writers (validate canonical values, then dispatch once per field instead of once per value)

/** Writes one canonical value (possibly null) of a known type into field `pos`. */
export type FieldWriter = (w: BinaryRowWriter, pos: number, v: Value) => void;
/** Writes all fields of a row; the caller resets the writer first. */
export type RowEncoder = (w: BinaryRowWriter, values: readonly Value[]) => void;

function describeValue(v: unknown): string {
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v);
  if (v instanceof Uint8Array) return "bytes";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object" && v !== null) return `an object (${v.constructor?.name ?? "Object"})`;
  return `${typeof v} ${String(v)}`;
}

const isValidTimestamp = (v: Value): v is Timestamp =>
  v instanceof Timestamp && Number.isSafeInteger(v.millis) && Number.isInteger(v.nanoOfMilli) && v.nanoOfMilli >= 0 && v.nanoOfMilli < 1_000_000;

function badValue(type: DataType, pos: number, v: unknown, expected: string): never {
  throw dataInvalid(`BinaryRow field ${pos} (${typeToSql(type)}): expected ${expected}, got ${describeValue(v)}`, { field: pos });
}

/** The writer of one field of `type`; throws Unsupported for nested types. */
export function createFieldWriter(type: DataType): FieldWriter {
  switch (type.root) {
    case "BOOLEAN":
      return (w, pos, v) => {
        if (v === null) w.setNull(pos);
        else if (typeof v === "boolean") w.writeBoolean(pos, v);
        else badValue(type, pos, v, "a boolean");
      };
    case "TINYINT":
      return (w, pos, v) => {
        if (v === null) w.setNull(pos);
        else if (typeof v === "number" && (v << 24) >> 24 === v) w.writeByte(pos, v);
        else badValue(type, pos, v, "an integer in [-128, 127]");
      };
    case "SMALLINT":
      return (w, pos, v) => {
        if (v === null) w.setNull(pos);
        else if (typeof v === "number" && (v << 16) >> 16 === v) w.writeShort(pos, v);
        else badValue(type, pos, v, "an integer in [-32768, 32767]");
      };
    case "INT":
    case "DATE":
    case "TIME":
      return (w, pos, v) => {
        if (v === null) w.setNull(pos);
        else if (typeof v === "number" && (v | 0) === v) w.writeInt(pos, v);
        else badValue(type, pos, v, "a 32-bit integer");
      };
    case "BIGINT":
      return (w, pos, v) => {
        if (v === null) w.setNull(pos);
        else if (typeof v === "bigint" && v >= INT64_MIN && v <= INT64_MAX) w.writeLong(pos, v);
        else if (typeof v === "number" && Number.isSafeInteger(v)) w.writeLongNumber(pos, v);
        else badValue(type, pos, v, "a 64-bit integer (bigint)");
      };
    case "FLOAT":
      return (w, pos, v) => {
        if (v === null) w.setNull(pos);
        else if (typeof v === "number") w.writeFloat(pos, v);
        else badValue(type, pos, v, "a number");
      };
    case "DOUBLE":
      return (w, pos, v) => {
        if (v === null) w.setNull(pos);
        else if (typeof v === "number") w.writeDouble(pos, v);
        else badValue(type, pos, v, "a number");
      };
    case "DECIMAL": {
      const { precision } = type;
      const compact = isCompactDecimal(precision);
      return (w, pos, v) => {
        if (v === null) w.writeDecimal(pos, null, precision);
        else if (typeof v === "bigint" && (!compact || (v >= INT64_MIN && v <= INT64_MAX))) w.writeDecimal(pos, v, precision);
        else badValue(type, pos, v, "an unscaled decimal value (bigint)");
      };
    }
    case "CHAR":
    case "VARCHAR":
      return (w, pos, v) => {
        if (v === null) w.setNull(pos);
        else if (typeof v === "string") w.writeString(pos, v);
        else badValue(type, pos, v, "a string");
      };
    case "BINARY":
    case "VARBINARY":
      return (w, pos, v) => {
        if (v === null) w.setNull(pos);
        else if (v instanceof Uint8Array) w.writeBinary(pos, v);
        else badValue(type, pos, v, "a Uint8Array");
      };
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ": {
      const { precision } = type;
      return (w, pos, v) => {
        if (v === null) w.writeTimestamp(pos, null, precision);
        else if (isValidTimestamp(v)) w.writeTimestamp(pos, v, precision);
        else badValue(type, pos, v, "a Timestamp");
      };
    }
    case "ARRAY":
    case "MULTISET":
    case "MAP":
    case "ROW":
      throw unsupported(type);
  }
}

/** Compiles the writer of a whole row of `types` (field i ← values[i]). */
export function createRowEncoder(types: readonly DataType[]): RowEncoder {
  const writers = types.map(createFieldWriter);
  const n = writers.length;
  return (w, values) => {
    if (values.length !== n) throw dataInvalid(`BinaryRow expects ${n} values, got ${values.length}`);
    for (let i = 0; i < n; i++) writers[i]!(w, i, values[i]!);
  };
}

// ---------------------------------------------------------------------------------------------------------------
// One-shot encode / serialize

/** Row bytes (no arity prefix) of `values` typed by `types`. */
export function encodeBinaryRow(types: readonly DataType[], values: readonly Value[], rowKind: RowKind = RowKind.INSERT): Uint8Array {
  const w = new BinaryRowWriter(types.length, 32);
  w.reset(rowKind);
  createRowEncoder(types)(w, values);
  return w.toBytes();
}

/** Manifest framing: 4-byte big-endian arity, then the row bytes (Java `SerializationUtils.serializeBinaryRow`). */
export function serializeBinaryRow(types: readonly DataType[], values: readonly Value[], rowKind: RowKind = RowKind.INSERT): Uint8Array {
  return frameBinaryRow(types.length, encodeBinaryRow(types, values, rowKind));
}

/** Prefixes already-encoded row bytes with their arity. */
export function frameBinaryRow(arity: number, rowBytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + rowBytes.length);
  new DataView(out.buffer).setInt32(0, arity, false);
  out.set(rowBytes, 4);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Decode

const corrupt = (msg: string): LakeError => dataInvalid(`corrupt BinaryRow: ${msg}`);

/** The RowKind byte of row bytes. */
export function binaryRowKind(bytes: Uint8Array): RowKind {
  const k = bytes[0];
  if (k === undefined || k > 3) throw corrupt(`invalid row kind ${k}`);
  return k as RowKind;
}

/** Decodes row bytes (no arity prefix) into canonical values. */
export function decodeBinaryRow(types: readonly DataType[], bytes: Uint8Array): Value[] {
  const arity = types.length;
  const nullBytes = nullBitsSizeInBytes(arity);
  const fixed = nullBytes + 8 * arity;
  if (bytes.length < fixed) throw corrupt(`${bytes.length} bytes is shorter than the fixed part (${fixed} bytes) of a row of arity ${arity}`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Value[] = new Array<Value>(arity);
  for (let i = 0; i < arity; i++) {
    const type = types[i]!;
    const bit = i + HEADER_SIZE_IN_BITS;
    if ((bytes[bit >>> 3]! & (1 << (bit & 7))) !== 0) {
      out[i] = null;
      continue;
    }
    out[i] = decodeField(type, bytes, dv, nullBytes + 8 * i, i);
  }
  return out;
}

/** Decodes manifest-framed row bytes; the arity prefix must equal `types.length`. */
export function deserializeBinaryRow(types: readonly DataType[], framed: Uint8Array): Value[] {
  if (framed.length < 4) throw corrupt(`serialized row has ${framed.length} bytes, fewer than the 4-byte arity prefix`);
  const arity = new DataView(framed.buffer, framed.byteOffset, framed.byteLength).getInt32(0, false);
  if (arity !== types.length) throw dataInvalid(`serialized BinaryRow has arity ${arity} but ${types.length} field types were given`);
  return decodeBinaryRow(types, framed.subarray(4));
}

function readLongNumber(dv: DataView, at: number): number {
  return dv.getInt32(at + 4, true) * TWO_POW_32 + dv.getUint32(at, true);
}

/** A (offset, length) reference into the variable part, checked against the row length. */
function varRange(bytes: Uint8Array, offset: number, length: number, pos: number): number {
  if (offset + length > bytes.length) throw corrupt(`field ${pos} points at bytes [${offset}, ${offset + length}) beyond the row length ${bytes.length}`);
  return offset;
}

function decodeField(type: DataType, bytes: Uint8Array, dv: DataView, slot: number, pos: number): Value {
  switch (type.root) {
    case "BOOLEAN":
      return bytes[slot] !== 0;
    case "TINYINT":
      return dv.getInt8(slot);
    case "SMALLINT":
      return dv.getInt16(slot, true);
    case "INT":
    case "DATE":
    case "TIME":
      return dv.getInt32(slot, true);
    case "BIGINT":
      return dv.getBigInt64(slot, true);
    case "FLOAT":
      return dv.getFloat32(slot, true);
    case "DOUBLE":
      return dv.getFloat64(slot, true);
    case "DECIMAL": {
      if (isCompactDecimal(type.precision)) return dv.getBigInt64(slot, true);
      const len = dv.getUint32(slot, true);
      const off = varRange(bytes, dv.getUint32(slot + 4, true), len, pos);
      if (len === 0) throw corrupt(`field ${pos} (${typeToSql(type)}) is not null but has no bytes`);
      let v = BigInt.asIntN(8, BigInt(bytes[off]!));
      for (let k = 1; k < len; k++) v = (v << 8n) | BigInt(bytes[off + k]!);
      // Java's getDecimal yields null when the value has more digits than the type allows.
      const digits = (v < 0n ? -v : v).toString().length;
      return v !== 0n && digits > type.precision ? null : v;
    }
    case "CHAR":
    case "VARCHAR":
    case "BINARY":
    case "VARBINARY": {
      const mark = bytes[slot + 7]!;
      let start: number;
      let len: number;
      if ((mark & 0x80) !== 0) {
        len = mark & 0x7f;
        if (len > MAX_FIX_PART_DATA_SIZE) throw corrupt(`field ${pos} has an inline length of ${len} bytes`);
        start = slot;
      } else {
        len = dv.getUint32(slot, true);
        start = varRange(bytes, dv.getUint32(slot + 4, true), len, pos);
      }
      const b = bytes.subarray(start, start + len);
      return type.root === "CHAR" || type.root === "VARCHAR" ? utf8Decoder.decode(b) : b.slice();
    }
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ": {
      if (isCompactTimestamp(type.precision)) return new Timestamp(readLongNumber(dv, slot), 0);
      const nano = dv.getUint32(slot, true);
      const off = varRange(bytes, dv.getUint32(slot + 4, true), 8, pos);
      if (nano > 999_999) throw corrupt(`field ${pos} has nano-of-millisecond ${nano}`);
      return new Timestamp(readLongNumber(dv, off), nano);
    }
    case "ARRAY":
    case "MULTISET":
    case "MAP":
    case "ROW":
      throw unsupported(type);
  }
}
