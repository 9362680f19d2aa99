/**
 * Rewrites the footer (Thrift compact-encoded `FileMetaData`) of a Parquet file that arrow-rs wrote, for what
 * arrow-rs cannot express:
 *
 * - **INT96 timestamps.** Java Paimon writes TIMESTAMP / TIMESTAMP_LTZ of precision 7–9 as INT96 (8 bytes
 *   little-endian nanos of the day, then 4 bytes little-endian Julian day) and released Java Paimon (1.4.2) reads
 *   nothing else for them: an INT64 NANOS column reads as millis, or fails for LTZ. arrow-rs writes no INT96 from
 *   Arrow, so such a column is written as FIXED_LEN_BYTE_ARRAY(12) holding exactly those bytes (PLAIN: the values
 *   back to back, which is also INT96's PLAIN layout) and the footer then says INT96. Page headers do not name the
 *   physical type, so the data pages stay valid. The column's statistics (FLBA byte order is not INT96's order) and
 *   column index are dropped.
 * - **NaN in FLOAT/DOUBLE.** arrow-rs leaves NaN out of min/max, so a reader pruning on `d > 1e300` skips a chunk
 *   whose NaN row Java's comparator (NaN above everything) would return. For a chunk of such a column, min/max are
 *   dropped (null count kept) and so is its column index.
 * - The `ARROW:schema` key is replaced by the schema the caller meant (Timestamp(ns) instead of the stand-in
 *   FixedSizeBinary(12)), so pyarrow and arrow-rs restore the intended Arrow types.
 *
 * Plain JavaScript (with parquet-footer.d.mts) because the Parquet worker threads run it without a TypeScript loader.
 * The codec below is generic: it decodes any struct into `{ id, type, value }` fields, so fields this module does
 * not know survive a rewrite unchanged, and an unmodified footer re-encodes to the same bytes.
 */

import { TextDecoder, TextEncoder } from "node:util";

// Thrift compact-protocol type codes.
export const T = Object.freeze({
  STOP: 0,
  TRUE: 1,
  FALSE: 2,
  BYTE: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  DOUBLE: 7,
  BINARY: 8,
  LIST: 9,
  SET: 10,
  MAP: 11,
  STRUCT: 12,
});

// Parquet's physical types and encodings (parquet.thrift).
const INT96 = 3;
const FIXED_LEN_BYTE_ARRAY = 7;
/** Encodings valid for INT96 values and levels: PLAIN, PLAIN_DICTIONARY, RLE, BIT_PACKED, RLE_DICTIONARY. */
const INT96_ENCODINGS = new Set([0, 2, 3, 4, 8]);

const MAGIC = [0x50, 0x41, 0x52, 0x31];

function corrupt(what) {
  return new Error(`corrupt Parquet footer: ${what}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Decoding. Values: BOOL → boolean, BYTE/I16/I32 → number, I64 → bigint, DOUBLE → number, BINARY → Uint8Array,
// LIST/SET → { elem, items }, MAP → { key, val, entries: [k, v][] }, STRUCT → field[].

/**
 * Structs and collections nest at most this deep. A real footer nests about 8 deep (FileMetaData → row groups →
 * column chunk → its metadata → statistics); a corrupt one of bytes 0x1c (field 1: a struct) again and again would
 * otherwise recurse until the stack overflows — a RangeError instead of a "corrupt" error.
 */
const MAX_DEPTH = 64;

class Reader {
  constructor(bytes, pos, end) {
    this.b = bytes;
    this.pos = pos;
    this.end = end;
    this.depth = 0;
  }

  /** `read()` one level deeper. */
  nested(read) {
    if (++this.depth > MAX_DEPTH) throw corrupt(`nested more than ${MAX_DEPTH} deep`);
    const v = read();
    this.depth--;
    return v;
  }

  byte() {
    if (this.pos >= this.end) throw corrupt("truncated");
    return this.b[this.pos++];
  }

  /** Unsigned varint as a bigint (exact for all 64 bits). */
  varint64() {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const x = this.byte();
      result |= BigInt(x & 0x7f) << shift;
      if ((x & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 63n) throw corrupt("varint too long");
    }
  }

  /** Unsigned varint as a number, for lengths and 32-bit values. */
  varint() {
    let result = 0;
    let mul = 1;
    for (;;) {
      const x = this.byte();
      result += (x & 0x7f) * mul;
      if ((x & 0x80) === 0) return result;
      mul *= 128;
      if (mul > 2 ** 35) throw corrupt("varint too long");
    }
  }

  zigzag32() {
    const u = this.varint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }

  zigzag64() {
    const u = this.varint64();
    return (u >> 1n) ^ -(u & 1n);
  }

  value(type) {
    switch (type) {
      case T.TRUE:
        return true;
      case T.FALSE:
        return false;
      case T.BYTE: {
        const x = this.byte();
        return x > 127 ? x - 256 : x;
      }
      case T.I16:
      case T.I32:
        return this.zigzag32();
      case T.I64:
        return this.zigzag64();
      case T.DOUBLE: {
        if (this.pos + 8 > this.end) throw corrupt("truncated");
        const v = new DataView(this.b.buffer, this.b.byteOffset + this.pos, 8).getFloat64(0, true);
        this.pos += 8;
        return v;
      }
      case T.BINARY: {
        const len = this.varint();
        if (this.pos + len > this.end) throw corrupt("truncated");
        const v = this.b.slice(this.pos, this.pos + len);
        this.pos += len;
        return v;
      }
      case T.LIST:
      case T.SET: {
        const h = this.byte();
        const size = h >> 4 === 15 ? this.varint() : h >> 4;
        const elem = h & 0x0f;
        const items = [];
        this.nested(() => {
          for (let k = 0; k < size; k++) items.push(this.element(elem));
        });
        return { elem, items };
      }
      case T.MAP: {
        const size = this.varint();
        if (size === 0) return { key: 0, val: 0, entries: [] };
        const kv = this.byte();
        const entries = [];
        this.nested(() => {
          for (let k = 0; k < size; k++) entries.push([this.element(kv >> 4), this.element(kv & 0x0f)]);
        });
        return { key: kv >> 4, val: kv & 0x0f, entries };
      }
      case T.STRUCT:
        return this.nested(() => this.struct());
      default:
        throw corrupt(`unknown Thrift type ${type}`);
    }
  }

  /** A collection element: booleans are a whole byte there (1 true, 2 false), not part of a field header. */
  element(type) {
    if (type === T.TRUE || type === T.FALSE) return this.byte() === T.TRUE;
    return this.value(type);
  }

  struct() {
    const fields = [];
    let lastId = 0;
    for (;;) {
      const h = this.byte();
      const type = h & 0x0f;
      if (type === T.STOP) return fields;
      const delta = h >> 4;
      const id = delta === 0 ? this.zigzag32() : lastId + delta;
      lastId = id;
      fields.push({ id, type, value: this.value(type) });
    }
  }
}

/** Decodes the Thrift struct at `bytes[start, end)`; throws when it does not end exactly at `end`. */
export function decodeStruct(bytes, start = 0, end = bytes.length) {
  const r = new Reader(bytes, start, end);
  const fields = r.struct();
  if (r.pos !== end) throw corrupt(`${end - r.pos} bytes after the struct`);
  return fields;
}

// ---------------------------------------------------------------------------------------------------------------
// Encoding (the canonical form arrow-rs and parquet-mr write: short field headers when the id delta is 1..15).

class Writer {
  constructor() {
    this.buf = new Uint8Array(1024);
    this.len = 0;
  }

  ensure(n) {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  byte(x) {
    this.ensure(1);
    this.buf[this.len++] = x & 0xff;
  }

  varint(n) {
    // Numbers here are non-negative and below 2^53.
    while (n >= 0x80) {
      this.byte((n % 128) | 0x80);
      n = Math.floor(n / 128);
    }
    this.byte(n);
  }

  varint64(u) {
    while (u >= 0x80n) {
      this.byte(Number(u & 0x7fn) | 0x80);
      u >>= 7n;
    }
    this.byte(Number(u));
  }

  zigzag32(v) {
    this.varint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  zigzag64(v) {
    this.varint64(BigInt.asUintN(64, (v << 1n) ^ (v >> 63n)));
  }

  value(type, v) {
    switch (type) {
      case T.TRUE:
      case T.FALSE:
        return; // lives in the field header
      case T.BYTE:
        return this.byte(v);
      case T.I16:
      case T.I32:
        return this.zigzag32(v);
      case T.I64:
        return this.zigzag64(typeof v === "bigint" ? v : BigInt(v));
      case T.DOUBLE: {
        this.ensure(8);
        new DataView(this.buf.buffer, this.len, 8).setFloat64(0, v, true);
        this.len += 8;
        return;
      }
      case T.BINARY: {
        const b = typeof v === "string" ? new TextEncoder().encode(v) : v;
        this.varint(b.length);
        this.ensure(b.length);
        this.buf.set(b, this.len);
        this.len += b.length;
        return;
      }
      case T.LIST:
      case T.SET: {
        const n = v.items.length;
        if (n < 15) this.byte((n << 4) | v.elem);
        else {
          this.byte(0xf0 | v.elem);
          this.varint(n);
        }
        for (const item of v.items) this.element(v.elem, item);
        return;
      }
      case T.MAP: {
        this.varint(v.entries.length);
        if (v.entries.length === 0) return;
        this.byte((v.key << 4) | v.val);
        for (const [k, x] of v.entries) {
          this.element(v.key, k);
          this.element(v.val, x);
        }
        return;
      }
      case T.STRUCT:
        return this.struct(v);
      default:
        throw new Error(`unknown Thrift type ${type}`);
    }
  }

  element(type, v) {
    if (type === T.TRUE || type === T.FALSE) this.byte(v ? T.TRUE : T.FALSE);
    else this.value(type, v);
  }

  struct(fields) {
    let lastId = 0;
    for (const f of fields) {
      const type = f.type === T.TRUE || f.type === T.FALSE ? (f.value ? T.TRUE : T.FALSE) : f.type;
      const delta = f.id - lastId;
      if (delta > 0 && delta <= 15) this.byte((delta << 4) | type);
      else {
        this.byte(type);
        this.zigzag32(f.id);
      }
      lastId = f.id;
      this.value(type, f.value);
    }
    this.byte(T.STOP);
  }
}

/** Encodes fields (in ascending id order, as decoded) as a Thrift compact struct. */
export function encodeStruct(fields) {
  const w = new Writer();
  w.struct(fields);
  return w.buf.slice(0, w.len);
}

// ---------------------------------------------------------------------------------------------------------------
// The footer of a file.

/** `[start, end)` of the FileMetaData bytes of a Parquet file. */
export function footerRange(bytes) {
  const n = bytes.length;
  if (n < 12 || !hasMagic(bytes, 0) || !hasMagic(bytes, n - 4)) throw corrupt("missing PAR1 magic");
  const len = (bytes[n - 8] | (bytes[n - 7] << 8) | (bytes[n - 6] << 16) | (bytes[n - 5] << 24)) >>> 0;
  const start = n - 8 - len;
  if (len === 0 || start < 4) throw corrupt("bad footer length");
  return { start, end: n - 8 };
}

function hasMagic(b, at) {
  return MAGIC.every((m, k) => b[at + k] === m);
}

/** The decoded FileMetaData of a Parquet file. */
export function readFileMetaData(bytes) {
  const { start, end } = footerRange(bytes);
  return decodeStruct(bytes, start, end);
}

/**
 * The file with its footer replaced by `fields` (encoded), length and magic rewritten. Done in place when the new
 * footer is not longer (the result is then a view of `bytes`), else in a copy.
 */
export function replaceFileMetaData(bytes, fields) {
  const { start, end } = footerRange(bytes);
  const footer = encodeStruct(fields);
  const total = start + footer.length + 8;
  const out = footer.length <= end - start ? bytes.subarray(0, total) : copyPrefix(bytes, start, total);
  out.set(footer, start);
  const len = footer.length;
  out.set([len & 0xff, (len >>> 8) & 0xff, (len >>> 16) & 0xff, (len >>> 24) & 0xff], start + len);
  out.set(MAGIC, start + len + 4);
  return out;
}

function copyPrefix(bytes, prefix, total) {
  const out = new Uint8Array(total);
  out.set(bytes.subarray(0, prefix));
  return out;
}

const field = (fields, id) => fields.find((f) => f.id === id);
const without = (fields, ids) => fields.filter((f) => !ids.includes(f.id));

/**
 * Applies a footer plan (see parquet-footer.d.mts) to a file arrow-rs wrote; returns the file unchanged when the
 * plan asks for nothing.
 */
export function rewriteFooter(bytes, plan) {
  const int96 = new Set(plan.int96Leaves ?? []);
  const noMinMax = new Set(plan.noMinMaxLeaves ?? []);
  if (int96.size === 0 && noMinMax.size === 0 && plan.arrowSchema === undefined) return bytes;
  const meta = readFileMetaData(bytes);

  // 2: schema, the depth-first list of SchemaElements; leaves are the elements with a physical type (1).
  const schema = field(meta, 2);
  if (schema === undefined) throw corrupt("no schema");
  let leaf = 0;
  schema.value.items = schema.value.items.map((el, k) => {
    if (k === 0 || field(el, 1) === undefined) return el;
    const index = leaf++;
    if (!int96.has(index)) return el;
    const type = field(el, 1).value;
    const length = field(el, 2)?.value;
    if (type !== FIXED_LEN_BYTE_ARRAY || length !== 12) throw new Error(`Parquet leaf ${index} is not FIXED_LEN_BYTE_ARRAY(12); cannot mark it INT96`);
    // INT96 has no type_length (2) nor converted/logical type (6 converted_type, 7 scale, 8 precision, 10 logicalType).
    return without(el, [2, 6, 7, 8, 10]).map((f) => (f.id === 1 ? { ...f, value: INT96 } : f));
  });
  for (const k of [...int96, ...noMinMax]) if (k >= leaf) throw new Error(`Parquet leaf ${k} does not exist (the file has ${leaf})`);

  // 4: row_groups; RowGroup 1: columns, one ColumnChunk per leaf.
  for (const rowGroup of field(meta, 4)?.value.items ?? []) {
    const columns = field(rowGroup, 1);
    columns.value.items = columns.value.items.map((chunk, index) => {
      const isInt96 = int96.has(index);
      if (!isInt96 && !noMinMax.has(index)) return chunk;
      // ColumnChunk 3: meta_data; 6/7: column_index_offset/length (the column index repeats the page min/max).
      return without(chunk, [6, 7]).map((f) => (f.id === 3 ? { ...f, value: isInt96 ? int96ColumnMeta(f.value, index) : withoutMinMax(f.value) } : f));
    });
  }

  // 5: key_value_metadata, KeyValue 1: key, 2: value.
  if (plan.arrowSchema !== undefined) {
    const kv = field(meta, 5);
    for (const entry of kv?.value.items ?? []) {
      if (new TextDecoder().decode(field(entry, 1).value) !== "ARROW:schema") continue;
      const value = field(entry, 2);
      if (value !== undefined) value.value = new TextEncoder().encode(plan.arrowSchema);
    }
  }
  return replaceFileMetaData(bytes, meta);
}

/** ColumnMetaData of an INT96 chunk: 1 type INT96, no 12 statistics; its 2 encodings must be valid for INT96. */
function int96ColumnMeta(meta, index) {
  for (const e of field(meta, 2)?.value.items ?? []) {
    if (!INT96_ENCODINGS.has(e)) throw new Error(`Parquet leaf ${index} uses encoding ${e}, which INT96 does not allow`);
  }
  return without(meta, [12]).map((f) => (f.id === 1 ? { ...f, value: INT96 } : f));
}

/** ColumnMetaData whose Statistics (12) keep null_count (3) and distinct_count (4) but lose every min/max field. */
function withoutMinMax(meta) {
  return meta.map((f) => (f.id === 12 ? { ...f, value: without(f.value, [1, 2, 5, 6, 7, 8]) } : f));
}
