/**
 * Field values of Debezium change events in JSON (Kafka Connect's JsonConverter) → input values natslake's row
 * converter takes (format/values.ts `toCanonical`), by the Kafka Connect schema the event's wrapper gives each field:
 * its literal `type` and, for Debezium's and Kafka Connect's semantic types, its `name` and `parameters`.
 *
 * | semantic type (`name`)                                   | JSON value                       | becomes                        |
 * | -------------------------------------------------------- | -------------------------------- | ------------------------------ |
 * | io.debezium.time.Date, org.apache.kafka.connect.data.Date | days since 1970-01-01            | DATE (days)                    |
 * | io.debezium.time.Time, org.apache.kafka.connect.data.Time | milliseconds of the day          | TIME (ms)                      |
 * | io.debezium.time.MicroTime / NanoTime                    | µs / ns of the day               | TIME (ms, truncated)           |
 * | io.debezium.time.Timestamp, …connect.data.Timestamp      | epoch ms (no zone: UTC wall time) | TIMESTAMP                      |
 * | io.debezium.time.MicroTimestamp / NanoTimestamp          | epoch µs / ns                    | TIMESTAMP (exact to the ns)    |
 * | io.debezium.time.ZonedTimestamp                          | ISO-8601 text with its offset    | the instant (UTC)              |
 * | io.debezium.time.ZonedTime                               | `HH:mm:ss[.f]Z` or with an offset | TIME of day in UTC             |
 * | io.debezium.time.IsoDate / IsoTime / IsoTimestamp        | ISO-8601 text, `Z` suffixed       | DATE / TIME / TIMESTAMP        |
 * | org.apache.kafka.connect.data.Decimal                    | base64 two's-complement bytes (or a number, `decimal.format=numeric`) | DECIMAL: unscaled value and `parameters.scale` |
 * | io.debezium.data.VariableScaleDecimal                    | `{scale, value}`, value as above | DECIMAL                        |
 * | io.debezium.data.Bits                                    | base64, little-endian            | bytes, most significant first  |
 * | (none) with type `bytes`                                 | base64                           | bytes; text (UTF-8) for a string column |
 *
 * The time types apply to temporal columns (DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ; a date into a timestamp column is
 * its midnight, a timestamp into a date column its day); into a column of another type (BIGINT, STRING) the value
 * passes as it is. Paimon's DebeziumSchemaUtils maps these types the same way (time without a zone read as UTC;
 * Bits reversed; bytes as UTF-8 text for string columns), except that it takes decimals only as JSON numbers
 * (`decimal.format=numeric`) where natslake takes Debezium's default base64 too. Structs and arrays are decoded field by field and element
 * by element; any other name (Json, Uuid, Enum, Xml, Year, geometry, …) passes its value on as it is, for the
 * column's type to take or refuse. A value that does not have the form its schema says: DataInvalid naming the
 * column and the type (`context.reason` = `bad-value`).
 */
import { dataInvalid } from "../errors.ts";
import type { DataType } from "../format/data-types.ts";
import { formatDecimal, Timestamp } from "../format/values.ts";

/** The Kafka Connect schema of one field (or element) as JsonConverter writes it in the wrapper's `schema`. */
export interface ConnectSchema {
  type: string;
  name?: string;
  optional?: boolean;
  field?: string;
  parameters?: Record<string, unknown>;
  fields?: ConnectSchema[];
  items?: ConnectSchema;
  keys?: ConnectSchema;
  values?: ConnectSchema;
}

const MS_PER_DAY = 86_400_000;
const MAX_EPOCH_MS = 8.64e15;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Decodes one JSON field value of a Debezium event into what `toCanonical` takes for `target`. `column` names the
 * field in messages. null stays null (the column's nullability is the converter's to check).
 */
export function decodeDebeziumValue(schema: ConnectSchema, value: unknown, target: DataType, column: string): unknown {
  if (value === null || value === undefined) return value;
  const bad = (expected: string): never => {
    throw dataInvalid(`column ${column}: Debezium type ${schema.name ?? schema.type} expects ${expected}, got ${describe(value)}`, { column, reason: "bad-value" });
  };
  const temporal = decodeTemporal(schema.name, value, target, bad);
  if (temporal !== NOT_TEMPORAL) return temporal;
  switch (schema.name) {
    case "org.apache.kafka.connect.data.Decimal":
      return decimalText(value, scaleOf(schema.parameters?.["scale"]) ?? bad("a 'scale' parameter in its schema"), bad);
    case "io.debezium.data.VariableScaleDecimal": {
      if (value === null || typeof value !== "object" || Array.isArray(value)) return bad("an object {scale, value}");
      const o = value as Record<string, unknown>;
      return decimalText(o["value"], scaleOf(o["scale"]) ?? bad("an integer 'scale'"), bad);
    }
    case "io.debezium.data.Bits":
      return isBinary(target) ? base64Bytes(value, bad).reverse() : value;
  }
  switch (schema.type) {
    case "bytes": {
      if (target.root === "VARCHAR" || target.root === "CHAR") return Buffer.from(base64Bytes(value, bad)).toString("utf8");
      return isBinary(target) ? base64Bytes(value, bad) : value;
    }
    case "struct": {
      if (target.root !== "ROW" || typeof value !== "object" || Array.isArray(value) || schema.fields === undefined) return value;
      const o = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(o)) {
        const sub = schema.fields.find((f) => f.field === k);
        const t = target.fields.find((f) => f.name === k)?.type;
        out[k] = sub !== undefined && t !== undefined ? decodeDebeziumValue(sub, v, t, `${column}.${k}`) : v;
      }
      return out;
    }
    case "array": {
      if ((target.root !== "ARRAY" && target.root !== "MULTISET") || !Array.isArray(value) || schema.items === undefined) return value;
      const items = schema.items;
      const element = target.element;
      return value.map((v, i) => decodeDebeziumValue(items, v, element, `${column}[${i}]`));
    }
    default:
      return value;
  }
}

const NOT_TEMPORAL = Symbol("not temporal");

/**
 * Debezium's and Kafka Connect's time types into a temporal column (DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ): a date
 * into a timestamp column is its midnight, a timestamp into a date column its day. Into any other column (BIGINT,
 * STRING) the value passes as it is — the raw epoch count or text is what such a column can hold.
 */
function decodeTemporal(name: string | undefined, value: unknown, target: DataType, bad: (expected: string) => never): unknown {
  const into = target.root === "DATE" ? "date" : target.root === "TIME" ? "time" : target.root === "TIMESTAMP" || target.root === "TIMESTAMP_LTZ" ? "timestamp" : null;
  if (into === null) return NOT_TEMPORAL;
  const fromTimestamp = (ts: Timestamp): unknown => {
    // JavaScript's dates (and natslake's renderings of timestamps) end at ±8.64e15 ms, some 270,000 years out.
    if (!(Math.abs(ts.millis) <= MAX_EPOCH_MS)) return bad("a time within ±8.64e15 ms of 1970");
    return into === "date" ? Math.floor(ts.millis / MS_PER_DAY) : ts;
  };
  switch (name) {
    case "io.debezium.time.Date":
    case "org.apache.kafka.connect.data.Date": {
      const days = integer(value) ?? bad("days since 1970-01-01");
      return into === "timestamp" ? fromTimestamp(new Timestamp(days * MS_PER_DAY, 0)) : days;
    }
    case "io.debezium.time.Time":
    case "org.apache.kafka.connect.data.Time":
      return integer(value) ?? bad("milliseconds of the day");
    case "io.debezium.time.MicroTime":
      return ofDay(bigInteger(value) ?? bad("microseconds of the day"), 1000n);
    case "io.debezium.time.NanoTime":
      return ofDay(bigInteger(value) ?? bad("nanoseconds of the day"), 1_000_000n);
    case "io.debezium.time.Timestamp":
    case "org.apache.kafka.connect.data.Timestamp":
      return fromTimestamp(new Timestamp(integer(value) ?? bad("epoch milliseconds"), 0));
    case "io.debezium.time.MicroTimestamp":
      return fromTimestamp(Timestamp.fromEpochMicros(bigInteger(value) ?? bad("epoch microseconds")));
    case "io.debezium.time.NanoTimestamp":
      return fromTimestamp(Timestamp.fromEpochNanos(bigInteger(value) ?? bad("epoch nanoseconds")));
    case "io.debezium.time.ZonedTimestamp":
    case "io.debezium.time.IsoTimestamp":
      if (typeof value !== "string") return bad("ISO-8601 text");
      return into === "date" ? value.slice(0, 10) : value;
    case "io.debezium.time.ZonedTime": {
      const ms = typeof value === "string" ? zonedTimeOfDay(value) : undefined;
      return ms ?? bad("a time of day with its zone (HH:mm:ss[.f]Z)");
    }
    case "io.debezium.time.IsoDate":
    case "io.debezium.time.IsoTime":
      // `2017-09-15Z`, `04:05:11.789Z`: the values are UTC, which is how natslake reads zone-less text.
      return typeof value === "string" ? value.replace(/Z$/, "") : bad("ISO-8601 text");
    default:
      return NOT_TEMPORAL;
  }
}

const isBinary = (t: DataType): boolean => t.root === "BINARY" || t.root === "VARBINARY";

/** The field schemas of the row images (`after`, else `before`) in a wrapper's envelope schema, by field name. */
export function rowImageSchemas(envelope: unknown): Map<string, ConnectSchema> | null {
  if (envelope === null || typeof envelope !== "object") return null;
  const fields = (envelope as { fields?: unknown }).fields;
  if (!Array.isArray(fields)) return null;
  const image = (fields as ConnectSchema[]).find((f) => f?.field === "after" && Array.isArray(f.fields)) ?? (fields as ConnectSchema[]).find((f) => f?.field === "before" && Array.isArray(f.fields));
  if (image === undefined) return null;
  const out = new Map<string, ConnectSchema>();
  for (const f of image.fields!) if (f !== null && typeof f === "object" && typeof f.field === "string" && typeof f.type === "string") out.set(f.field, f);
  return out;
}

function describe(v: unknown): string {
  if (typeof v === "string") return `'${v.length > 40 ? `${v.slice(0, 40)}…` : v}'`;
  if (typeof v === "bigint") return `${v}`;
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  return `${typeof v} ${String(v)}`;
}

/** A safe integer from a JSON number or a bigint within ±2^53; undefined otherwise. */
function integer(v: unknown): number | undefined {
  if (typeof v === "number" && Number.isSafeInteger(v)) return v;
  if (typeof v === "bigint" && v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
  return undefined;
}

/** Any integer (nanoseconds since 1970 exceed 2^53; lossless JSON parsing gives them as bigints). */
function bigInteger(v: unknown): bigint | undefined {
  if (typeof v === "bigint") return v;
  if (typeof v === "number" && Number.isSafeInteger(v)) return BigInt(v);
  return undefined;
}

/** Milliseconds of the day from a count of `perMs` units (truncated: natslake's TIME keeps milliseconds). */
const ofDay = (units: bigint, perMs: bigint): number => Number(units / perMs);

/** `HH:mm:ss[.f](Z|±hh:mm)` → milliseconds of the day in UTC; undefined when it has another form. */
function zonedTimeOfDay(text: string): number | undefined {
  const m = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(text);
  if (!m) return undefined;
  const [h, min, s] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (h > 23 || min > 59 || s > 59) return undefined;
  const local = ((h * 60 + min) * 60 + s) * 1000 + Number((m[4] ?? "0").padEnd(3, "0").slice(0, 3));
  const zone = m[5]!;
  const offset = zone === "Z" ? 0 : (zone[0] === "-" ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60_000;
  return (((local - offset) % MS_PER_DAY) + MS_PER_DAY) % MS_PER_DAY;
}

function scaleOf(v: unknown): number | undefined {
  const n = typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v;
  return typeof n === "number" && Number.isInteger(n) ? n : undefined;
}

function base64Bytes(value: unknown, bad: (expected: string) => never): Uint8Array {
  if (typeof value !== "string" || !BASE64.test(value)) return bad("base64 text");
  return new Uint8Array(Buffer.from(value, "base64"));
}

/**
 * A Decimal's value as decimal text: base64 of the unscaled value's big-endian two's-complement bytes (JsonConverter's
 * default `decimal.format=base64`), or a JSON number (`decimal.format=numeric`), which passes as it is.
 */
function decimalText(value: unknown, scale: number, bad: (expected: string) => never): unknown {
  if (typeof value === "number" || typeof value === "bigint") return value;
  // A numeric decimal too long for a double stays text when the JSON is read losslessly; base64 has no '.' or 'e'.
  if (typeof value === "string" && /^[+-]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][+-]?\d+)?$/.test(value)) return value;
  const bytes = base64Bytes(value, bad);
  if (bytes.length === 0) return bad("at least one byte");
  let unscaled = 0n;
  for (const b of bytes) unscaled = (unscaled << 8n) | BigInt(b);
  if (bytes[0]! & 0x80) unscaled -= 1n << BigInt(bytes.length * 8);
  if (scale >= 0) return formatDecimal(unscaled, scale);
  // A negative scale (Oracle NUMBER(p, -s)) moves the point right.
  return (unscaled * 10n ** BigInt(-scale)).toString();
}
