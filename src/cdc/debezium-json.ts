/**
 * Debezium change events in JSON → the rows they change, with their kinds: one message on a table's bare subject is
 * one event, as Debezium Server's sinks publish the value Kafka Connect's JsonConverter makes of it — with the schema
 * wrapper (`{"schema": {…}, "payload": {…}}`, `schemas.enable=true`, Debezium Server's default) or without it (the
 * envelope itself: `{"before", "after", "source", "op", "ts_ms", …}`).
 *
 * | op                   | rows                                                           |
 * | -------------------- | -------------------------------------------------------------- |
 * | `c` create, `r` read | +I of `after`                                                  |
 * | `u` update           | -U of `before` when the event has one, then +U of `after`     |
 * | `d` delete           | -D of `before` (its key suffices: Postgres without REPLICA IDENTITY FULL sends only the key) |
 * | tombstone            | none: an empty message or a null value, as Kafka-style connectors follow a delete with; acknowledged and ignored |
 * | `t` truncate, `m` message, anything else | refused (DataInvalid `unsupported-op`): a dead letter with the reason |
 *
 * Truncate and message events are refused as Paimon's own Debezium CDC action refuses them (DebeziumJsonRecordParser
 * throws "Unknown record operation" for any op but c, r, u, d, which stops its job): here the event becomes a dead
 * letter and the rest of the stream lands. A truncate cannot be applied row by row, and emptying the table from an
 * event would need an overwrite natslake does not do from the ingest path.
 *
 * Paimon writes an update as -D of `before` merged over `after`, then +I of `after`; natslake writes -U/+U, the kinds
 * of an update (a table with changelog-producer = input shows it as one). Deduplicate tables end with the same rows
 * either way.
 *
 * Values: with the wrapper, each field is decoded by the Kafka Connect schema it gives (debezium-values.ts: Debezium's
 * time types, decimals as base64 bytes and a scale, …); without it, values convert by the table's column types as
 * JSON rows do. An event of another table shape — a column the table lacks, a row image without its key — is refused
 * with the reason. Every refusal is a DataInvalid LakeError whose `context.reason` says which (`DebeziumReason`).
 */
import { dataInvalid, isLakeError, type LakeError } from "../errors.ts";
import type { DataType } from "../format/data-types.ts";
import type { TableSchema } from "../format/schema.ts";
import { compileKeyedInput, type KeyedInputReason, type KeyedRow } from "../lsm/keyed-input.ts";
import { ROW_KIND_COLUMN, RowKind, rowKindName } from "../lsm/row-kind.ts";
import { decodeDebeziumValue, rowImageSchemas, type ConnectSchema } from "./debezium-values.ts";

/** Why an event was refused (`context.reason` of the DataInvalid error). */
export type DebeziumReason = "not-an-event" | "unsupported-op" | "missing-image" | "unknown-column" | "bad-value" | KeyedInputReason;

/** What one message holds: nothing to apply (a tombstone), or the rows of one change, in the order to apply them. */
export type DebeziumChange = { op: "tombstone" } | { op: "c" | "r" | "u" | "d"; rows: KeyedRow[] };

type Image = Record<string, unknown>;

const OP_NAMES: Record<string, string> = { c: "create", r: "read (snapshot)", u: "update", d: "delete", t: "truncate", m: "message" };

/**
 * Compiles the reader of one table's Debezium events. The reader takes the event's parsed JSON (null or undefined for
 * a tombstone) and returns its change; it throws DataInvalid with a `DebeziumReason`, never anything else for any
 * input (a bug aside).
 */
export function compileDebeziumJson(table: string, schema: TableSchema): (event: unknown) => DebeziumChange {
  const keyed = compileKeyedInput(schema);
  const columns = new Map(schema.fields.map((f) => [f.name, f.type]));
  const names = schema.fields.map((f) => f.name).join(", ");

  /** One row image (`before` or `after`) with its kind → a canonical row; errors name the event's op and image. */
  const rowOf = (image: Image, kind: RowKind, where: string, fields: Map<string, ConnectSchema> | null): KeyedRow => {
    const input: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(image)) {
      const type = columns.get(name);
      if (type === undefined) throw refused("unknown-column", `${where} has column '${name}', which ${table} does not have (columns: ${names}): is it an event of another table?`, { column: name });
      const field = fields?.get(name);
      input[name] = field === undefined ? value : reasoned(where, () => decodeDebeziumValue(field, value, type, name));
    }
    input[ROW_KIND_COLUMN] = rowKindName(kind);
    return reasoned(where, () => keyed(input));
  };

  return (event) => {
    if (event === null || event === undefined) return { op: "tombstone" };
    if (!isObject(event)) throw refused("not-an-event", `a Debezium change event is a JSON object, got ${describe(event)}`);
    // The wrapper: {"schema": …, "payload": …}; the envelope has an "op" of its own.
    const wrapped = "payload" in event && !("op" in event);
    const payload = wrapped ? event["payload"] : event;
    if (payload === null || payload === undefined) return { op: "tombstone" };
    if (!isObject(payload)) throw refused("not-an-event", `the event's payload is ${describe(payload)}, not a change event's envelope`);
    const fields = wrapped ? rowImageSchemas(event["schema"]) : null;
    const op = payload["op"];
    if (typeof op !== "string") throw refused("not-an-event", `the event has no "op" (a Debezium change event's envelope has "op", "before", "after" and "source")`);
    const image = (name: "before" | "after", required: boolean): Image | null => {
      const v = payload[name];
      if (isObject(v)) return v;
      if (v !== null && v !== undefined) throw refused("missing-image", `the ${OP_NAMES[op] ?? op} event's "${name}" is ${describe(v)}, not a row`);
      if (required) throw refused("missing-image", `the ${OP_NAMES[op] ?? op} event ('${op}') has no "${name}" row${name === "before" ? " (for deletes, Postgres needs a primary key or REPLICA IDENTITY FULL on the source table)" : ""}`);
      return null;
    };
    switch (op) {
      case "c":
      case "r":
        return { op, rows: [rowOf(image("after", true)!, RowKind.INSERT, `the ${OP_NAMES[op]} event's "after"`, fields)] };
      case "u": {
        const before = image("before", false);
        const after = image("after", true)!;
        const rows = before === null ? [] : [rowOf(before, RowKind.UPDATE_BEFORE, `the update event's "before"`, fields)];
        rows.push(rowOf(after, RowKind.UPDATE_AFTER, `the update event's "after"`, fields));
        return { op, rows };
      }
      case "d":
        return { op, rows: [rowOf(image("before", true)!, RowKind.DELETE, `the delete event's "before"`, fields)] };
      case "t":
        throw refused("unsupported-op", `a truncate event ('t') is not applied: natslake does not empty ${table} from its ingest stream (Paimon's Debezium CDC action refuses truncates too); leave them out with the connector's skipped.operations=t`);
      case "m":
        throw refused("unsupported-op", `a message event ('m') carries no row of ${table}; leave logical decoding messages out of the table's subject`);
      default:
        throw refused("unsupported-op", `unknown Debezium operation ${describe(op)} (expected c, r, u or d)`);
    }
  };
}

/**
 * Compiles a check of one table's events parsed by the plain, rounding `JSON.parse`: true when a value the rows
 * would take may have been rounded, so the message must be read again without rounding — an integer beyond 2^53 in
 * a row image, or any number bound for a DECIMAL (top-level or nested: a long fraction can round to any double,
 * even an integer one, and the decimal would take the rounded digits). Doubles and safe integers elsewhere are what
 * the plain parse makes of them. Debezium's envelopes carry 19-digit `ts_ns` numbers that the rows never take:
 * reading every event without rounding because of them cost three to five times the plain parse (measured on the
 * MySQL update event with and without its schema).
 */
export function compileDebeziumRoundingCheck(schema: TableSchema): (event: unknown) => boolean {
  const exact = new Set(schema.fields.filter((f) => holdsDecimal(f.type)).map((f) => f.name));
  const mayRound = (v: unknown, decimal: boolean): boolean => {
    if (typeof v === "number") return decimal || (Number.isInteger(v) && !Number.isSafeInteger(v));
    if (v === null || typeof v !== "object") return false;
    return Object.values(v).some((x) => mayRound(x, decimal));
  };
  const imageMayRound = (image: unknown): boolean => isObject(image) && Object.entries(image).some(([name, v]) => mayRound(v, exact.has(name)));
  return (event) => {
    if (!isObject(event)) return false;
    const payload = "payload" in event && !("op" in event) ? event["payload"] : event;
    return isObject(payload) && (imageMayRound(payload["before"]) || imageMayRound(payload["after"]));
  };
}

/** A DECIMAL, or a nested type with one inside. */
function holdsDecimal(t: DataType): boolean {
  switch (t.root) {
    case "DECIMAL":
      return true;
    case "ARRAY":
    case "MULTISET":
      return holdsDecimal(t.element);
    case "MAP":
      return holdsDecimal(t.key) || holdsDecimal(t.value);
    case "ROW":
      return t.fields.some((f) => holdsDecimal(f.type));
    default:
      return false;
  }
}

function refused(reason: DebeziumReason, message: string, context: Record<string, unknown> = {}): LakeError {
  return dataInvalid(message, { ...context, reason });
}

/** Runs `f`; a DataInvalid it throws says where in the event it arose, and gets `bad-value` unless it has a reason. */
function reasoned<T>(where: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (!isLakeError(e, "DataInvalid")) throw e;
    const reason = typeof e.context["reason"] === "string" ? e.context["reason"] : "bad-value";
    throw dataInvalid(`${where}: ${e.message}`, { ...e.context, reason });
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === "object") return "an object";
  return `${typeof v} ${String(v)}`;
}
