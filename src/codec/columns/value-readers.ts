/**
 * Reading Arrow data back as canonical values (format/values.ts): `columnReader(type, data)` returns `i => Value` for
 * one chunk (Int64 → bigint, Decimal → unscaled bigint, Date → days, Time → millis of day, Timestamp of any unit →
 * Timestamp, Map → [key, value] pairs, Struct → object by field name), and `columnValues` reads a whole column. It is
 * driven by the Arrow type, so files written by other engines in other units still read correctly; the Paimon type
 * only adds integer-width coercions, names ROW fields and expands MULTISET counts.
 */
import * as arrow from "apache-arrow";
import { dataInvalid, ErrorKind, LakeError } from "../../errors.ts";
import type { DataType } from "../../format/data-types.ts";
import { Timestamp, type Value } from "../../format/values.ts";
import { findField } from "./column-lookup.ts";

const TWO_32 = 4294967296;

/** The canonical value at row `i` of one chunk. */
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
