/**
 * Row batches on the wire: the msgpack codec of `RowBatch`, the parser of payloads on a table's bare (raw) subject,
 * the canonical → wire value forms producers send, and the row converters the writers' decoding builds on
 * (actors/ingest/decode.ts).
 *
 * msgpack (msgpackr, records extension off so any msgpack library reads it):
 * - 64-bit integers decode as numbers when they are within ±2^53 and as bigints beyond (`int64AsType: "auto"`), so
 *   BIGINT 2^63−1 survives while epoch millis and small BIGINTs cost no BigInt allocation. Encoding a bigint writes
 *   msgpack int64 (uint64 above 2^63−1, which the converters then reject for BIGINT).
 * - msgpackr writes JS integers beyond 32 bits as float64 (exact up to 2^53); every reader decodes them exactly.
 * - maps decode as plain objects (keys become strings).
 *
 * JSON payloads parse with `parseRowJson` (src/format/wire/json.ts, shared with the CLI's JSONL input): integers
 * beyond 2^53 become bigints and long decimals stay strings (exact for DECIMAL columns).
 */
import { C1, Packr } from "msgpackr";
import { ErrorKind, LakeError, dataInvalid } from "../../src/errors.ts";
import type { DataField, DataType } from "../../src/format/data-types.ts";
import { compileConverter, type ValueConverter } from "../../src/format/row-converter.ts";
import { parseRowJson } from "../../src/format/wire/json.ts";
import { Timestamp, dateToString, toCanonical, formatDecimal, type Row, type Value } from "../../src/format/values.ts";
import type { RowBatch } from "./messages.ts";

// ---------------------------------------------------------------------------------------------------------------
// Errors

/** Why a payload could not be read at all (the whole message goes to the dead-letter subject). */
export type PayloadErrorReason =
  | "empty"
  | "bad-json"
  | "bad-msgpack"
  | "not-rows" // valid JSON/msgpack, but not a row object, an array of row objects, or a RowBatch
  | "bad-batch"; // looks like a RowBatch but its fields are malformed

export class PayloadError extends LakeError {
  constructor(
    readonly reason: PayloadErrorReason,
    message: string,
  ) {
    super(ErrorKind.DataInvalid, message, { context: { reason } });
  }
}

export const isPayloadError = (e: unknown): e is PayloadError => e instanceof PayloadError;

// ---------------------------------------------------------------------------------------------------------------
// msgpack codec

// `int64AsType: "auto"` exists in msgpackr 2.1 but is missing from its type declarations.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: "auto" as "bigint" });

/** msgpack bytes of any value with natslake's settings (bigints as int64, no records extension). */
export function packValue(value: unknown): Uint8Array {
  return packr.pack(value);
}

/** Decodes msgpack with natslake's settings; throws PayloadError("bad-msgpack"). */
export function unpackValue(bytes: Uint8Array): unknown {
  let v: unknown;
  try {
    v = packr.unpack(bytes);
  } catch (e) {
    throw new PayloadError("bad-msgpack", `payload is not valid msgpack: ${(e as Error).message}`);
  }
  // msgpackr decodes the never-used byte 0xc1 into a marker object instead of failing.
  if (v === C1) throw new PayloadError("bad-msgpack", "payload is not valid msgpack: byte 0xc1 is never used");
  return v;
}

export function encodeRowBatch(batch: RowBatch): Uint8Array {
  return packr.pack(batch);
}

/** Decodes a msgpack RowBatch and checks its shape (not its values: rows are checked against the schema later). */
export function decodeRowBatch(bytes: Uint8Array): RowBatch {
  if (bytes.length === 0) throw new PayloadError("empty", "empty payload");
  const v = unpackValue(bytes);
  if (!looksLikeBatch(v)) throw new PayloadError("not-rows", "payload is not a RowBatch (an object with v, cols and rows)");
  return checkBatch(v);
}

/** A RowBatch-shaped object: `v`, `cols` and `rows` keys (a row with exactly these columns is not supported). */
function looksLikeBatch(v: unknown): v is Record<string, unknown> {
  return isRecord(v) && "v" in v && "cols" in v && "rows" in v;
}

function checkBatch(o: Record<string, unknown>): RowBatch {
  const fail = (why: string): never => {
    throw new PayloadError("bad-batch", `malformed RowBatch: ${why}`);
  };
  if (o["v"] !== 1) fail(`unsupported version ${String(o["v"])} (expected 1)`);
  const cols = o["cols"];
  if (!Array.isArray(cols) || !cols.every((c) => typeof c === "string")) return fail("'cols' must be an array of column names");
  if (new Set(cols).size !== cols.length) fail("'cols' names a column twice");
  if (!Array.isArray(o["rows"])) fail("'rows' must be an array");
  const schema = o["schema"] === undefined ? -1 : o["schema"];
  if (typeof schema !== "number") fail("'schema' must be a number");
  return { v: 1, schema: schema as number, cols: cols as string[], rows: o["rows"] as unknown[][] };
}

// ---------------------------------------------------------------------------------------------------------------
// Raw payloads (the bare subject)

export type RawPayload = { rows: Array<Record<string, unknown>> } | { batch: RowBatch };

const CH_SPACE = 0x20;
const CH_TAB = 0x09;
const CH_LF = 0x0a;
const CH_CR = 0x0d;
const CH_LBRACE = 0x7b;
const CH_LBRACKET = 0x5b;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a payload published to a table's bare subject: a JSON object (one row), a JSON array of objects, a msgpack
 * map (one row), a msgpack array of maps, or a RowBatch in JSON or msgpack. JSON is recognised by its first
 * non-blank byte (`{` or `[`, which in msgpack would be a lone small integer — never a valid payload). Throws
 * PayloadError with a reason.
 */
export function parseRawPayload(bytes: Uint8Array): RawPayload {
  let i = 0;
  while (i < bytes.length && (bytes[i] === CH_SPACE || bytes[i] === CH_TAB || bytes[i] === CH_LF || bytes[i] === CH_CR)) i++;
  if (i === bytes.length) throw new PayloadError("empty", "empty payload");
  const first = bytes[i];
  const value = first === CH_LBRACE || first === CH_LBRACKET ? parseJsonPayload(bytes) : unpackValue(bytes);
  return toRawPayload(value);
}

/**
 * The JSON value of a message whose format is JSON alone (a Debezium change event): undefined for an empty or blank
 * payload (a tombstone); PayloadError("bad-json") for anything that is not JSON text. Integers beyond 2^53 are read
 * exactly, as in `parseRawPayload` — unless `rounding`: then numbers are what `JSON.parse` makes of them (faster; for
 * a caller that checks whether any value it needs could have been rounded, and reads again without rounding if so).
 */
export function parseJsonMessage(bytes: Uint8Array, rounding = false): unknown {
  let i = 0;
  while (i < bytes.length && (bytes[i] === CH_SPACE || bytes[i] === CH_TAB || bytes[i] === CH_LF || bytes[i] === CH_CR)) i++;
  if (i === bytes.length) return undefined;
  // JSON text starts with an object, an array, a string, a number or a literal; anything else (msgpack, Avro) is not.
  if (!/[{["\-0-9tfn]/.test(String.fromCharCode(bytes[i]!))) throw new PayloadError("bad-json", `payload is not JSON text (it starts with byte 0x${bytes[i]!.toString(16).padStart(2, "0")})`);
  return parseJsonPayload(bytes, rounding ? JSON.parse : parseRowJson);
}

function parseJsonPayload(bytes: Uint8Array, parse: (text: string) => unknown = parseRowJson): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new PayloadError("bad-json", "payload starts like JSON but is not valid UTF-8");
  }
  try {
    return parse(text);
  } catch (e) {
    throw new PayloadError("bad-json", `payload is not valid JSON: ${(e as Error).message}`);
  }
}

/** A plain object (what JSON and msgpack maps decode to). */
function isRecord(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== "object") return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function toRawPayload(value: unknown): RawPayload {
  if (looksLikeBatch(value)) return { batch: checkBatch(value) };
  if (isRecord(value)) return { rows: [value] };
  if (Array.isArray(value)) {
    for (let k = 0; k < value.length; k++) {
      if (!isRecord(value[k])) throw new PayloadError("not-rows", `element ${k} of the payload array is not an object (a row)`);
    }
    return { rows: value as Array<Record<string, unknown>> };
  }
  throw new PayloadError("not-rows", `payload is ${describeKind(value)}, not a row object, an array of row objects or a RowBatch`);
}

function describeKind(v: unknown): string {
  if (v === null) return "null";
  if (v instanceof Uint8Array) return "binary";
  return `a ${typeof v}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Canonical values → wire forms (what producers put into RowBatch rows)

/**
 * The msgpack-friendly form of a canonical value of `type`, which `toCanonical` converts back to the same value:
 * BIGINT as a number within ±2^31 else a bigint (int64), DECIMAL as its decimal text, TIMESTAMP as epoch millis when
 * whole milliseconds else ISO text, DATE as 'YYYY-MM-DD', TIME as millis of the day, bytes as bin, ROW as a map by
 * field name, MAP as a map when its keys are strings else as [key, value] pairs.
 */
export function compileWireEncoder(type: DataType): (v: Value) => unknown {
  switch (type.root) {
    case "BIGINT":
      return (v) => (typeof v === "bigint" && v >= -2147483648n && v <= 2147483647n ? Number(v) : v);
    case "DECIMAL":
      return (v) => (v === null ? null : formatDecimal(v as bigint, type.scale));
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      return (v) => {
        if (v === null) return null;
        const ts = v as Timestamp;
        return ts.nanoOfMilli === 0 ? ts.millis : ts.toIsoString(9) + (type.root === "TIMESTAMP_LTZ" ? "Z" : "");
      };
    case "DATE":
      return (v) => (v === null ? null : dateToString(v as number));
    case "ARRAY":
    case "MULTISET": {
      const el = compileWireEncoder(type.element);
      return (v) => (v === null ? null : (v as Value[]).map(el));
    }
    case "MAP": {
      const k = compileWireEncoder(type.key);
      const val = compileWireEncoder(type.value);
      if (type.key.root === "VARCHAR" || type.key.root === "CHAR") {
        return (v) => {
          if (v === null) return null;
          const o: Record<string, unknown> = {};
          for (const [key, x] of v as Array<[Value, Value]>) o[key as string] = val(x);
          return o;
        };
      }
      return (v) => (v === null ? null : (v as Array<[Value, Value]>).map(([key, x]) => [k(key), val(x)]));
    }
    case "ROW": {
      const subs = type.fields.map((f) => [f.name, compileWireEncoder(f.type)] as const);
      return (v) => {
        if (v === null) return null;
        const r = v as Record<string, Value>;
        const o: Record<string, unknown> = {};
        for (const [name, enc] of subs) o[name] = enc(r[name] ?? null);
        return o;
      };
    }
    default:
      // BOOLEAN, TINYINT…INT, FLOAT, DOUBLE, TIME, CHAR/VARCHAR, BINARY/VARBINARY: already msgpack-native.
      return (v) => v;
  }
}

/** A JSON-safe rendering of any decoded value (bigint → decimal text, bytes → base64), for dead letters. */
export function jsonSafe(v: unknown): unknown {
  if (typeof v === "bigint") return v.toString();
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
  if (v instanceof Timestamp) return v.toIsoString();
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v instanceof Map) return [...v.entries()].map(([k, x]) => [jsonSafe(k), jsonSafe(x)]);
  if (v !== null && typeof v === "object") {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) o[k] = jsonSafe(x);
    return o;
  }
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  return v;
}

// ---------------------------------------------------------------------------------------------------------------
// Batch → canonical rows → column builders (the writer's hot path)

/** Converts one row array of a batch into a canonical Row keyed by schema column (columns absent from `cols` → null). */
export type BatchRowConverter = (values: unknown) => Row;

interface CompiledBatch {
  convert: BatchRowConverter;
  /** Per schema column: its position in the batch's rows, or −1 (a column the batch does not carry). */
  index: number[];
  /** Throws DataInvalid when a row is not an array of at most `cols.length` values (what `convert` checks first). */
  check: (values: unknown) => void;
  /** Set when `cols` names a column the schema lacks: every row of such a batch is rejected with this reason. */
  badCols: string | null;
}

const compiledCache = new WeakMap<readonly DataField[], Map<string, CompiledBatch>>();

/**
 * The converter of row arrays laid out as `cols` into canonical rows of `fields`, built once per (fields array,
 * cols) and cached (the fields array's identity is the key: pass the schema's own array, not a copy per call).
 */
export function batchRowConverter(fields: readonly DataField[], cols: readonly string[]): CompiledBatch {
  let byCols = compiledCache.get(fields);
  if (byCols === undefined) {
    byCols = new Map();
    compiledCache.set(fields, byCols);
  }
  const key = cols.join("\u0000");
  let c = byCols.get(key);
  if (c === undefined) {
    c = compileBatch(fields, cols);
    // Bounded: a producer sending ever-new column layouts must not grow memory without limit.
    if (byCols.size >= 256) byCols.clear();
    byCols.set(key, c);
  }
  return c;
}

function compileBatch(fields: readonly DataField[], cols: readonly string[]): CompiledBatch {
  const names = fields.map((f) => f.name);
  const unknown = cols.filter((c) => !names.includes(c));
  const dup = cols.find((c, i) => cols.indexOf(c) !== i);
  const badCols =
    unknown.length > 0
      ? `unknown column '${unknown[0]}' (columns: ${names.join(", ")})`
      : dup !== undefined
        ? `column '${dup}' appears twice in the batch's cols`
        : null;
  const width = cols.length;
  const index = fields.map((f) => cols.indexOf(f.name));
  // A compiled converter hands null and undefined to toCanonical, which owns the NOT NULL message.
  const convs: ValueConverter[] = fields.map((f) => compileConverter(f.type, f.name));
  // Columns absent from `cols` read as null (toCanonical rejects that for NOT NULL columns).
  const missing: ValueConverter[] = fields.map((f) => () => toCanonical(f.type, null, f.name));
  const check = (values: unknown): void => {
    if (!Array.isArray(values)) throw dataInvalid(`row is not an array of values (got ${describeKind(values)})`);
    if (values.length > width) throw dataInvalid(`row has ${values.length} values but the batch names ${width} columns`);
  };
  // A generated object literal gives every row one hidden class and one monomorphic store per column: measured ~2x
  // faster than filling `row[name]` in a loop, and the builders' `row[name]` reads stay monomorphic too. Column
  // names enter the source only as JSON string literals; converters are passed in as parameters.
  // (A key named __proto__ must be computed, or the literal would set the prototype instead.)
  const key = (name: string): string => (name === "__proto__" ? `[${JSON.stringify(name)}]` : JSON.stringify(name));
  const props = fields.map((f, k) => `${key(f.name)}: ${index[k]! < 0 ? `m${k}(undefined)` : `c${k}(v[${index[k]}])`}`);
  const params = ["check", ...fields.map((_, k) => `c${k}`), ...fields.map((_, k) => `m${k}`)];
  const source = `return function convertRow(v) { check(v); return { ${props.join(", ")} }; };`;
  const factory = new Function(...params, source) as (...args: unknown[]) => BatchRowConverter;
  const convert = factory(check, ...convs, ...missing);
  return { convert, index, check, badCols };
}

/** The original values of a row keyed by the batch's column names (for dead letters). */
export function originalRow(cols: readonly string[], values: unknown): unknown {
  if (!Array.isArray(values)) return values;
  const o: Record<string, unknown> = {};
  for (let j = 0; j < values.length; j++) o[cols[j] ?? `#${j}`] = values[j];
  return o;
}

// ---------------------------------------------------------------------------------------------------------------
// Producer side: input rows → msgpack row bytes, without canonical rows, wire values or a generic packer per row

/**
 * A growable msgpack byte writer with msgpackr's encoding choices for the values row batches carry (integers in
 * the smallest form, other numbers as float64, bigints as int64, strings as UTF-8 str), so its bytes decode exactly
 * as `packValue` of the same wire value does. Anything else is packed with `packValue` and copied in.
 */
export class MsgpackWriter {
  buf: Buffer;
  private dv: DataView;
  pos = 0;

  constructor(capacity = 1024) {
    this.buf = Buffer.allocUnsafeSlow(capacity);
    this.dv = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  }

  ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    let n = this.buf.length * 2;
    while (n < this.pos + extra) n *= 2;
    this.resize(n);
  }

  /** Reallocates to `capacity` bytes (at least what is written), keeping the contents. */
  resize(capacity: number): void {
    const next = Buffer.allocUnsafeSlow(Math.max(capacity, this.pos));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
    this.dv = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }

  nil(): void {
    this.ensure(1);
    this.buf[this.pos++] = 0xc0;
  }

  boolean(v: boolean): void {
    this.ensure(1);
    this.buf[this.pos++] = v ? 0xc3 : 0xc2;
  }

  number(v: number): void {
    this.ensure(9);
    const b = this.buf;
    let p = this.pos;
    if (v >>> 0 === v) {
      if (v < 0x80) b[p++] = v;
      else if (v < 0x100) {
        b[p++] = 0xcc;
        b[p++] = v;
      } else if (v < 0x10000) {
        b[p++] = 0xcd;
        b[p++] = v >> 8;
        b[p++] = v & 0xff;
      } else {
        b[p++] = 0xce;
        this.dv.setUint32(p, v);
        p += 4;
      }
    } else if (v >> 0 === v) {
      if (v >= -0x20) b[p++] = 0x100 + v;
      else if (v >= -0x80) {
        b[p++] = 0xd0;
        b[p++] = v + 0x100;
      } else if (v >= -0x8000) {
        b[p++] = 0xd1;
        this.dv.setInt16(p, v);
        p += 2;
      } else {
        b[p++] = 0xd2;
        this.dv.setInt32(p, v);
        p += 4;
      }
    } else {
      b[p++] = 0xcb;
      this.dv.setFloat64(p, v);
      p += 8;
    }
    this.pos = p;
  }

  /** msgpack int64 of a safe integer (what a bigint of the same value packs to). */
  int64Number(v: number): void {
    this.ensure(9);
    const hi = Math.floor(v / 4294967296);
    this.buf[this.pos] = 0xd3;
    this.dv.setInt32(this.pos + 1, hi);
    this.dv.setUint32(this.pos + 5, v - hi * 4294967296);
    this.pos += 9;
  }

  bigint(v: bigint): void {
    this.ensure(9);
    if (v >= -0x8000000000000000n && v <= 0x7fffffffffffffffn) {
      this.buf[this.pos] = 0xd3;
      this.dv.setBigInt64(this.pos + 1, v);
    } else {
      this.buf[this.pos] = 0xcf;
      this.dv.setBigUint64(this.pos + 1, v); // throws beyond uint64, as the generic packer does
    }
    this.pos += 9;
  }

  string(s: string): void {
    const n = s.length;
    if (n < 32) {
      // Short strings: ASCII copied by hand with a fixstr header; anything else falls through.
      this.ensure(n + 1);
      const b = this.buf;
      const start = this.pos + 1;
      let k = 0;
      for (; k < n; k++) {
        const c = s.charCodeAt(k);
        if (c >= 0x80) break;
        b[start + k] = c;
      }
      if (k === n) {
        b[this.pos] = 0xa0 | n;
        this.pos = start + n;
        return;
      }
    }
    const bytes = Buffer.byteLength(s, "utf8");
    this.ensure(bytes + 5);
    const b = this.buf;
    let p = this.pos;
    if (bytes < 32) b[p++] = 0xa0 | bytes;
    else if (bytes < 0x100) {
      b[p++] = 0xd9;
      b[p++] = bytes;
    } else if (bytes < 0x10000) {
      b[p++] = 0xda;
      this.dv.setUint16(p, bytes);
      p += 2;
    } else {
      b[p++] = 0xdb;
      this.dv.setUint32(p, bytes);
      p += 4;
    }
    this.pos = p + b.write(s, p, bytes, "utf8");
  }

  /** Array header for `n` elements. */
  arrayHeader(n: number): void {
    this.ensure(5);
    if (n < 16) this.buf[this.pos++] = 0x90 | n;
    else if (n < 0x10000) {
      this.buf[this.pos] = 0xdc;
      this.dv.setUint16(this.pos + 1, n);
      this.pos += 3;
    } else {
      this.buf[this.pos] = 0xdd;
      this.dv.setUint32(this.pos + 1, n);
      this.pos += 5;
    }
  }

  bytes(src: Uint8Array, start = 0, end = src.length): void {
    const n = end - start;
    this.ensure(n);
    const b = this.buf;
    if (n <= 64) for (let k = 0; k < n; k++) b[this.pos + k] = src[start + k]!;
    else b.set(src.subarray(start, end), this.pos);
    this.pos += n;
  }

  /** Any wire value: the common kinds inline, the rest through the generic packer. */
  value(v: unknown): void {
    if (v === null || v === undefined) this.nil();
    else if (typeof v === "number") this.number(v);
    else if (typeof v === "string") this.string(v);
    else if (typeof v === "boolean") this.boolean(v);
    else if (typeof v === "bigint") this.bigint(v);
    else this.bytes(packr.pack(v));
  }
}

/**
 * Writes one input value of a column as its wire form (msgpack) and returns the canonical value — or, on fast paths,
 * a value the bucket function treats identically (a safe-integer number for BIGINT). Throws DataInvalid naming the
 * column exactly as `compileConverter` does.
 */
export type InputPacker = (w: MsgpackWriter, v: unknown) => Value;

/**
 * The packer of input values of `field` into wire bytes: the same accepted values, errors and decoded wire values
 * as `compileWireEncoder(type)(compileConverter(type, name)(v))` packed with `packValue`, without the canonical value
 * in between on the common paths. `keyed`: the result feeds the bucket function, so TIMESTAMP returns a Timestamp.
 */
export function compileInputPacker(field: DataField, keyed: boolean): InputPacker {
  const type = field.type;
  const name = field.name;
  const conv = compileConverter(type, name);
  const enc = compileWireEncoder(type);
  const slow: InputPacker = (w, v) => {
    const c = v === null || v === undefined ? toCanonical(type, v, name) : conv(v);
    w.value(enc(c));
    return c;
  };
  switch (type.root) {
    case "INT":
      return (w, v) => (typeof v === "number" && (v | 0) === v ? (w.number(v), v) : slow(w, v));
    case "SMALLINT":
      return (w, v) => (typeof v === "number" && (v << 16) >> 16 === v ? (w.number(v), v) : slow(w, v));
    case "TINYINT":
      return (w, v) => (typeof v === "number" && (v << 24) >> 24 === v ? (w.number(v), v) : slow(w, v));
    case "BIGINT":
      return (w, v) => {
        if (typeof v !== "number" || !Number.isSafeInteger(v)) return slow(w, v);
        // The wire form of BIGINT: a number within ±2^31, int64 beyond.
        if ((v | 0) === v) w.number(v);
        else w.int64Number(v);
        return v;
      };
    case "DOUBLE":
      return (w, v) => (typeof v === "number" ? (w.number(v), v) : slow(w, v));
    case "FLOAT":
      return (w, v) => {
        if (typeof v !== "number") return slow(w, v);
        const f = Math.fround(v);
        w.number(f);
        return f;
      };
    case "BOOLEAN":
      return (w, v) => (typeof v === "boolean" ? (w.boolean(v), v) : slow(w, v));
    case "VARCHAR":
      if (type.length !== MAX_VARCHAR) return slow;
      return (w, v) => (typeof v === "string" ? (w.string(v), v) : slow(w, v));
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      // Epoch millis travel as they are (the wire form of a whole-millisecond timestamp).
      return (w, v) => {
        if (typeof v !== "number" || !Number.isSafeInteger(v)) return slow(w, v);
        w.number(v);
        return keyed ? new Timestamp(v, 0) : null;
      };
    default:
      return slow;
  }
}

const MAX_VARCHAR = 2147483647;

/**
 * The constant msgpack prefix of a RowBatch message up to its rows array: `{v: 1, schema, cols, rows: ` — the
 * caller appends the rows array header and the rows (see `MsgpackWriter.arrayHeader`).
 */
export function rowBatchPrefix(schemaId: number, cols: readonly string[]): Uint8Array {
  const w = new MsgpackWriter(256);
  w.bytes(Uint8Array.of(0x84));
  w.string("v");
  w.number(1);
  w.string("schema");
  w.number(schemaId);
  w.string("cols");
  w.arrayHeader(cols.length);
  for (const c of cols) w.string(c);
  w.string("rows");
  return w.buf.subarray(0, w.pos);
}
