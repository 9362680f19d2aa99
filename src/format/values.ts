/**
 * Canonical in-memory values of Paimon types, and the one place where user input (JSON, CSV, msgpack, JS objects)
 * is checked and converted into them. Everything downstream (BinaryRow, Arrow columns, statistics) accepts only
 * canonical values, so it never has to guess.
 *
 * | type                         | canonical JS value                                     |
 * | ---------------------------- | ------------------------------------------------------ |
 * | BOOLEAN                      | boolean                                                |
 * | TINYINT / SMALLINT / INT     | number (integer in range)                              |
 * | BIGINT                       | bigint                                                 |
 * | FLOAT / DOUBLE               | number                                                 |
 * | DECIMAL(p, s)                | bigint: the unscaled value (12.34 in DECIMAL(10,2) = 1234n; `formatDecimal(v, s)` = "12.34") |
 * | CHAR / VARCHAR / STRING      | string                                                 |
 * | BINARY / VARBINARY / BYTES   | Uint8Array                                             |
 * | DATE                         | number: days since 1970-01-01                          |
 * | TIME(p)                      | number: milliseconds of the day                        |
 * | TIMESTAMP(p) / TIMESTAMP_LTZ | Timestamp: epoch millis + nanos within the millisecond (LTZ = UTC instant; without TZ = wall clock as if UTC) |
 * | ARRAY / MULTISET             | array of canonical values                              |
 * | MAP                          | array of [key, value] pairs (keys need not be strings)  |
 * | ROW                          | object keyed by field name                             |
 * | null (any nullable type)     | null                                                   |
 */
import { dataInvalid } from "../errors.ts";
import type { DataType } from "./data-types.ts";

export class Timestamp {
  constructor(
    readonly millis: number,
    readonly nanoOfMilli: number,
  ) {}

  static fromEpochMicros(micros: bigint): Timestamp {
    const millis = floorDiv(micros, 1000n);
    return new Timestamp(Number(millis), Number(micros - millis * 1000n) * 1000);
  }
  static fromEpochNanos(nanos: bigint): Timestamp {
    const millis = floorDiv(nanos, 1_000_000n);
    return new Timestamp(Number(millis), Number(nanos - millis * 1_000_000n));
  }
  toEpochMicros(): bigint {
    return BigInt(this.millis) * 1000n + BigInt(Math.floor(this.nanoOfMilli / 1000));
  }
  toEpochNanos(): bigint {
    return BigInt(this.millis) * 1_000_000n + BigInt(this.nanoOfMilli);
  }
  /** ISO-8601 without zone, with as many fraction digits as the precision asks for. */
  toIsoString(precision = 9): string {
    const base = new Date(this.millis).toISOString().slice(0, 23); // yyyy-mm-ddThh:mm:ss.SSS
    if (precision <= 0) return base.slice(0, 19);
    const frac = (base.slice(20, 23) + String(this.nanoOfMilli).padStart(6, "0")).slice(0, precision);
    return `${base.slice(0, 19)}.${frac}`;
  }
  /** Truncates to the given precision (digits after the second). */
  truncate(precision: number): Timestamp {
    if (precision >= 9) return this;
    if (precision >= 3) {
      const unit = 10 ** (9 - precision);
      return new Timestamp(this.millis, Math.floor(this.nanoOfMilli / unit) * unit);
    }
    const unit = 10 ** (3 - precision);
    return new Timestamp(Math.floor(this.millis / unit) * unit, 0);
  }
  compare(o: Timestamp): number {
    return this.millis !== o.millis ? this.millis - o.millis : this.nanoOfMilli - o.nanoOfMilli;
  }
  toJSON(): string {
    return this.toIsoString();
  }
}

const floorDiv = (a: bigint, b: bigint): bigint => {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
};

export type Value =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | Timestamp
  | Value[]
  | Array<[Value, Value]>
  | { [field: string]: Value };

export type Row = Record<string, Value>;

const RANGES: Record<string, [number, number]> = {
  TINYINT: [-128, 127],
  SMALLINT: [-32768, 32767],
  INT: [-2147483648, 2147483647],
};
const BIGINT_MIN = -(2n ** 63n);
const BIGINT_MAX = 2n ** 63n - 1n;
const MS_PER_DAY = 86_400_000;

/** Path of a value inside a row, for error messages (`tags[2]`, `address.zip`). */
type Where = string;

/**
 * Converts an input value into the canonical value of `type`, or throws a DataInvalid error that names the column
 * and says what was expected. `where` is the column path for messages.
 */
export function toCanonical(type: DataType, input: unknown, where: Where): Value {
  if (input === null || input === undefined) {
    if (!type.nullable) throw dataInvalid(`column ${where} is NOT NULL but the value is missing`, { column: where });
    return null;
  }
  const bad = (expected: string): never => {
    throw dataInvalid(`column ${where}: expected ${expected}, got ${describe(input)}`, { column: where });
  };
  // Text of the right shape that names no real date or time (2026-02-30, 25:00): said as such, never rolled over.
  const notReal = (what: string, why: string): never => {
    throw dataInvalid(`column ${where}: ${describe(input)} is not a valid ${what}: ${why}`, { column: where });
  };
  switch (type.root) {
    case "BOOLEAN":
      if (typeof input === "boolean") return input;
      if (input === "true" || input === "false") return input === "true";
      return bad("a boolean");
    case "TINYINT":
    case "SMALLINT":
    case "INT": {
      const n = typeof input === "string" && input.trim() !== "" ? Number(input) : typeof input === "bigint" ? Number(input) : input;
      const [lo, hi] = RANGES[type.root]!;
      if (typeof n !== "number" || !Number.isInteger(n) || n < lo || n > hi) return bad(`an integer in [${lo}, ${hi}] for ${type.root}`);
      return n;
    }
    case "BIGINT": {
      let b: bigint | undefined;
      if (typeof input === "bigint") b = input;
      else if (typeof input === "number" && Number.isSafeInteger(input)) b = BigInt(input);
      else if (typeof input === "string" && /^-?\d+$/.test(input.trim())) b = BigInt(input.trim());
      if (b === undefined || b < BIGINT_MIN || b > BIGINT_MAX) return bad("a 64-bit integer (a number within 2^53, a bigint or a decimal string)");
      return b;
    }
    case "FLOAT":
    case "DOUBLE": {
      const n = typeof input === "string" && input.trim() !== "" ? Number(input) : input;
      if (typeof n !== "number" || (Number.isNaN(n) && input !== "NaN" && !(typeof input === "number"))) return bad("a number");
      return type.root === "FLOAT" ? Math.fround(n) : n;
    }
    case "DECIMAL":
      return decimalToUnscaled(input, type.precision, type.scale, where);
    case "CHAR":
    case "VARCHAR": {
      if (typeof input !== "string") return bad("a string");
      if (type.length !== 2147483647 && [...input].length > type.length) return bad(`at most ${type.length} characters`);
      return input;
    }
    case "BINARY":
    case "VARBINARY": {
      let bytes: Uint8Array | undefined;
      if (input instanceof Uint8Array) bytes = input;
      else if (typeof input === "string") bytes = Buffer.from(input, "base64");
      else if (Array.isArray(input) && input.every((x) => Number.isInteger(x) && x >= 0 && x < 256)) bytes = Uint8Array.from(input as number[]);
      if (bytes === undefined) return bad("bytes (a Uint8Array, a base64 string or an array of byte values)");
      if (type.length !== 2147483647 && bytes.length > type.length) return bad(`at most ${type.length} bytes`);
      return bytes;
    }
    case "DATE": {
      if (typeof input === "number" && Number.isInteger(input)) return input;
      if (input instanceof Date) return Math.floor(input.getTime() / MS_PER_DAY);
      if (typeof input === "string") {
        const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(input);
        if (m) {
          // Only a real calendar day: Date.parse would roll 2026-02-30 over to March 2nd.
          const why = invalidDate(Number(m[1]), Number(m[2]), Number(m[3]));
          if (why !== undefined) return notReal("date", why);
          return Math.floor(Date.parse(input + "T00:00:00Z") / MS_PER_DAY);
        }
      }
      return bad("a date ('YYYY-MM-DD' or days since 1970-01-01)");
    }
    case "TIME": {
      if (typeof input === "number" && Number.isInteger(input) && input >= 0 && input < MS_PER_DAY) return input;
      if (typeof input === "string") {
        const m = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$/.exec(input);
        if (m) {
          const why = invalidTime(Number(m[1]), Number(m[2]), Number(m[3] ?? 0));
          if (why !== undefined) return notReal("time", why);
          return ((Number(m[1]) * 60 + Number(m[2])) * 60 + Number(m[3] ?? 0)) * 1000 + Number((m[4] ?? "0").padEnd(3, "0").slice(0, 3));
        }
      }
      return bad("a time ('HH:MM:SS[.fff]' or milliseconds of the day)");
    }
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ": {
      const ts = toTimestamp(input, (why) => notReal("timestamp", why));
      if (ts === undefined) return bad("a timestamp (ISO-8601 text, epoch milliseconds, a Date or a Timestamp)");
      return ts.truncate(type.precision);
    }
    case "ARRAY":
    case "MULTISET": {
      if (!Array.isArray(input)) return bad("an array");
      return input.map((x, i) => toCanonical(type.element, x, `${where}[${i}]`));
    }
    case "MAP": {
      let pairs: Array<[unknown, unknown]>;
      if (input instanceof Map) pairs = [...input.entries()];
      else if (Array.isArray(input) && input.every((p) => Array.isArray(p) && p.length === 2)) pairs = input as Array<[unknown, unknown]>;
      else if (typeof input === "object" && !Array.isArray(input) && !(input instanceof Uint8Array)) pairs = Object.entries(input as object);
      else return bad("a map (an object, a Map or an array of [key, value] pairs)");
      return pairs.map(([k, v]) => {
        // Paimon's Parquet layout stores map keys as required: a null key is not representable.
        if (k === null || k === undefined) return bad("a map without null keys");
        return [toCanonical({ ...type.key, nullable: false }, k, `${where}.key`), toCanonical(type.value, v, `${where}[${String(k)}]`)] as [Value, Value];
      });
    }
    case "ROW": {
      if (typeof input !== "object" || Array.isArray(input) || input instanceof Uint8Array) return bad("an object");
      const o = input as Record<string, unknown>;
      const out: Record<string, Value> = {};
      for (const f of type.fields) out[f.name] = toCanonical(f.type, o[f.name], `${where}.${f.name}`);
      return out;
    }
  }
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (y: number): boolean => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);

/** Why year-month-day is not a calendar day (`undefined`: it is one). */
function invalidDate(y: number, m: number, d: number): string | undefined {
  if (m < 1 || m > 12) return `there is no month ${m}`;
  const days = m === 2 && isLeap(y) ? 29 : DAYS_IN_MONTH[m - 1]!;
  if (d < 1 || d > days) return `${y}-${String(m).padStart(2, "0")} has no day ${d} (it has ${days} days)`;
  return undefined;
}

/** Why hour:minute:second is not a time of day (24:00 included, as Java's LocalTime refuses it). */
function invalidTime(h: number, min: number, s: number): string | undefined {
  if (h > 23) return `hour ${h} is beyond 23`;
  if (min > 59) return `minute ${min} is beyond 59`;
  if (s > 59) return `second ${s} is beyond 59`;
  return undefined;
}

/** `invalid` is called (and must throw) when the text has the shape of a timestamp but is not a real one. */
function toTimestamp(input: unknown, invalid: (why: string) => never): Timestamp | undefined {
  if (input instanceof Timestamp) return input;
  if (input instanceof Date) return Number.isNaN(input.getTime()) ? undefined : new Timestamp(input.getTime(), 0);
  if (typeof input === "number" && Number.isFinite(input)) {
    // Epoch millis as the columns hold them (a safe integer, as the Arrow builders require): beyond, a dead letter
    // when the row is read, not a flush that fails on it every time.
    if (!Number.isSafeInteger(Math.floor(input))) invalid(`${input} ms since the epoch is beyond ±2^53`);
    return new Timestamp(Math.floor(input), Math.round((input - Math.floor(input)) * 1e6));
  }
  if (typeof input === "string") {
    // yyyy-mm-dd[T ]hh:mm[:ss[.fraction]][Z|±hh:mm]; a zone, when given, is applied (the result is UTC).
    const m = /^(\d{4,})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/.exec(input.trim());
    if (!m) return undefined;
    const why =
      invalidDate(Number(m[1]), Number(m[2]), Number(m[3])) ??
      invalidTime(Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)) ??
      (m[8] !== undefined && m[8] !== "Z" && (Number(m[8].slice(1, 3)) > 18 || Number(m[8].slice(-2)) > 59) ? `zone offset ${m[8]} is beyond ±18:00` : undefined);
    if (why !== undefined) invalid(why);
    const frac = (m[7] ?? "").padEnd(9, "0");
    const zone = m[8] === undefined || m[8] === "Z" ? "Z" : m[8];
    const ms = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4] ?? "00"}:${m[5] ?? "00"}:${m[6] ?? "00"}.${frac.slice(0, 3)}${zone}`);
    if (Number.isNaN(ms)) return undefined;
    return new Timestamp(ms, Number(frac.slice(3)));
  }
  return undefined;
}

/** Parses a decimal (string, number or bigint) into its unscaled value, checking precision and scale (never rounding). */
export function decimalToUnscaled(input: unknown, precision: number, scale: number, where: Where): bigint {
  let text: string;
  if (typeof input === "bigint") text = input.toString();
  else if (typeof input === "number" && Number.isFinite(input)) text = numberToPlainString(input);
  else if (typeof input === "string") text = input.trim();
  else throw dataInvalid(`column ${where}: expected a decimal, got ${describe(input)}`, { column: where });
  const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(text);
  if (!m || (m[2] === "" && (m[3] ?? "") === "")) throw dataInvalid(`column ${where}: '${text}' is not a decimal number`, { column: where });
  const intPart = m[2] || "0";
  let frac = m[3] ?? "";
  if (frac.length > scale) {
    // More fraction digits than the column keeps: refused, as Paimon's strict casts refuse them, rather than
    // silently rounded (1.239 into DECIMAL(5,2) is not 1.24). Trailing zeros change nothing and are dropped.
    if (!/^0*$/.test(frac.slice(scale))) {
      throw dataInvalid(`column ${where}: '${text}' has ${frac.replace(/0+$/, "").length} digits after the decimal point; DECIMAL(${precision}, ${scale}) keeps ${scale} (round it before writing)`, { column: where });
    }
    frac = frac.slice(0, scale);
  }
  frac = frac.padEnd(scale, "0");
  const unscaled = BigInt(intPart + frac);
  return checkDecimal(m[1] === "-" ? -unscaled : unscaled, precision, where);
}

function checkDecimal(unscaled: bigint, precision: number, where: Where): bigint {
  const digits = (unscaled < 0n ? -unscaled : unscaled).toString().length;
  if (unscaled !== 0n && digits > precision) throw dataInvalid(`column ${where}: value has more than ${precision} significant digits`, { column: where });
  return unscaled;
}

function numberToPlainString(n: number): string {
  const s = String(n);
  if (!/e/i.test(s)) return s;
  return n.toFixed(20).replace(/0+$/, "").replace(/\.$/, "");
}

/**
 * The decimal text of a DECIMAL's canonical (unscaled) value and its column's scale: `formatDecimal(1234n, 2)` =
 * "12.34", `formatDecimal(-5n, 2)` = "-0.05". Exact at any precision (no double in between); what
 * `decimalToUnscaled` reads back to the same value.
 */
export function formatDecimal(unscaled: bigint, scale: number): string {
  const neg = unscaled < 0n;
  let digits = (neg ? -unscaled : unscaled).toString();
  if (scale > 0) {
    digits = digits.padStart(scale + 1, "0");
    digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  }
  return (neg ? "-" : "") + digits;
}

export const dateToString = (days: number): string => new Date(days * MS_PER_DAY).toISOString().slice(0, 10);

export function timeToString(millisOfDay: number, precision: number): string {
  const d = new Date(millisOfDay).toISOString().slice(11, 23);
  return precision === 0 ? d.slice(0, 8) : d.slice(0, 9 + Math.min(precision, 3));
}

/** A JSON-friendly rendering of a canonical value (used by `read --format jsonl` and by tests). */
export function toJsonValue(type: DataType, v: Value): unknown {
  if (v === null) return null;
  switch (type.root) {
    case "BIGINT":
      return Number.isSafeInteger(Number(v)) ? Number(v) : String(v);
    case "DECIMAL":
      return formatDecimal(v as bigint, type.scale);
    case "BINARY":
    case "VARBINARY":
      return Buffer.from(v as Uint8Array).toString("base64");
    case "DATE":
      return dateToString(v as number);
    case "TIME":
      return timeToString(v as number, type.precision);
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      return (v as Timestamp).toIsoString(Math.max(type.precision, 0)) + (type.root === "TIMESTAMP_LTZ" ? "Z" : "");
    case "FLOAT":
    case "DOUBLE":
      return Number.isFinite(v as number) ? v : String(v);
    case "ARRAY":
    case "MULTISET":
      return (v as Value[]).map((x) => toJsonValue(type.element, x));
    case "MAP": {
      const pairs = v as Array<[Value, Value]>;
      if (type.key.root === "VARCHAR" || type.key.root === "CHAR") {
        const o: Record<string, unknown> = {};
        for (const [k, val] of pairs) o[k as string] = toJsonValue(type.value, val);
        return o;
      }
      return pairs.map(([k, val]) => [toJsonValue(type.key, k), toJsonValue(type.value, val)]);
    }
    case "ROW": {
      const o: Record<string, unknown> = {};
      const r = v as Record<string, Value>;
      for (const f of type.fields) o[f.name] = toJsonValue(f.type, r[f.name] ?? null);
      return o;
    }
    default:
      return v;
  }
}

/**
 * JSON text of a `toJsonValue` result. Unlike `JSON.stringify` it keeps the sign of negative zero: -0.0 is written
 * as `-0.0` (valid JSON, which parses back to -0), not as `0`.
 */
export function toJsonText(v: unknown): string {
  if (typeof v === "number") return Object.is(v, -0) ? "-0.0" : JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map((x) => toJsonText(x === undefined ? null : x)).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const parts: string[] = [];
    for (const [k, x] of Object.entries(v)) if (x !== undefined) parts.push(`${JSON.stringify(k)}:${toJsonText(x)}`);
    return `{${parts.join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

function describe(v: unknown): string {
  if (typeof v === "string") return `'${v.length > 40 ? v.slice(0, 40) + "…" : v}'`;
  // "integer", not `…n`: a CLI user gave digits in a file, not a JavaScript bigint.
  if (typeof v === "bigint") return `integer ${v}`;
  if (Array.isArray(v)) return "an array";
  if (v instanceof Uint8Array) return "bytes";
  if (typeof v === "object") return "an object";
  return `${typeof v} ${String(v)}`;
}
