/**
 * Input rows of a primary-key table → canonical rows with their kind: the `_row_kind` field ("+I", "-U", "+U", "-D";
 * absent: "+I") is taken off the row, and a retraction may carry only its key — a delete by key, as Debezium's
 * `before` of a Postgres table without REPLICA IDENTITY FULL does. The other columns of such a row are null, or the
 * zero value of their type where the column is NOT NULL (a -D's values are never read by deduplicate; they only
 * keep the file's NOT NULL columns non-null, and a changelog shows them as such).
 *
 * A kind that is not one of the four, a retraction the table's merge engine refuses, a row without its key, a null
 * key: DataInvalid with the reason (a cluster
 * writer turns that into a dead letter; the rest of the batch lands). The errors carry `context.reason`
 * (`KeyedInputReason`) so callers can tell them apart without reading the message.
 *
 * `rowkind.field` (Paimon's RowKindGenerator): the kind comes from a string column of the table as well — one of the
 * four short names, stored in that column as given. When the kind is also given another way (`_row_kind`, or the
 * producer's upsert/delete), the two must agree; a row whose kind column is null and that names no kind otherwise is
 * refused as Java refuses it ("Row kind cannot be null").
 *
 * The rules themselves (`keyedInputRules`) are shared by every way rows come in: TableWrite converts with
 * `compileKeyedInput`, the producer client checks the kind and key before it packs a row, and the router before it
 * routes one — so a row refused at one door is refused, in the same words, at every other.
 */
import { dataInvalid } from "../errors.ts";
import type { DataField, DataType } from "../format/data-types.ts";
import type { TableSchema } from "../format/schema.ts";
import { compileRowConverter } from "../format/row-converter.ts";
import { Timestamp, type Row, type Value } from "../format/values.ts";
import { isRetract, parseRowKind, ROW_KIND_COLUMN, RowKind, rowKindName } from "./row-kind.ts";
import { retractionRefusal, retractionValueRefusal } from "./merge-functions/merge-engine.ts";

export interface KeyedRow {
  row: Row;
  kind: RowKind;
}

/** Why an input row of a primary-key table was refused (`context.reason` of the DataInvalid error). */
export type KeyedInputReason = "bad-row-kind" | "missing-key" | "null-key" | "retraction-refused";

/** What an input row of one primary-key table must satisfy, whichever way it comes in. */
export interface KeyedInputRules {
  /**
   * The row's kind: `given` (the caller's: an upsert or a delete), the table's `rowkind.field` column, `_row_kind` —
   * whichever of them the row has, all agreeing; none: +I (with a `rowkind.field`: refused, its column is null).
   * DataInvalid (`bad-row-kind`) for a kind that is not one of the four, or two that disagree.
   */
  kindOf(input: Readonly<Record<string, unknown>>, given?: RowKind): RowKind;
  /**
   * Throws DataInvalid (`retraction-refused`) for a kind the table's merge engine refuses (a retraction on a
   * partial-update table without ignore-delete or remove-record-on-delete: Java would fail every later merge of it).
   */
  checkKind(kind: RowKind): void;
  /** Throws DataInvalid (`missing-key`, `null-key`) when a primary-key column is missing, or null where it may not be. */
  checkKey(input: Readonly<Record<string, unknown>>, kind: RowKind): void;
  /** The fields a retraction (-U, -D) is converted by: key columns as declared, every other column nullable. */
  retractionFields: DataField[];
  /** Non-key NOT NULL columns: a retraction that leaves them out (or null) gets their type's zero (`zeroValue`). */
  fillers: DataField[];
}

/** The input rules of a primary-key table's schema. */
export function keyedInputRules(schema: TableSchema): KeyedInputRules {
  const keys = new Set(schema.primaryKeys);
  const keyFields = schema.primaryKeys.map((k) => schema.fields.find((f) => f.name === k)!);
  const refusal = retractionRefusal(schema);
  const kindField = rowKindFieldOf(schema);
  return {
    kindOf: kindField === null ? (input, given) => (given === undefined ? rowKindOf(input) : agreeingKind(given, input)) : (input, given) => fieldKindOf(kindField, input, given),
    checkKind: (kind) => {
      const why = refusal(kind);
      if (why !== null) throw dataInvalid(`${rowKindName(kind)} refused: ${why}`, { column: ROW_KIND_COLUMN, reason: "retraction-refused" });
    },
    checkKey: (input, kind) => {
      for (const f of keyFields) {
        const v = input[f.name];
        if (v === undefined) throw dataInvalid(`${describeKind(kind)} without its key: primary-key column '${f.name}' is missing`, { column: f.name, reason: "missing-key" });
        if (v === null && !f.type.nullable) throw dataInvalid(`primary-key column '${f.name}' is null`, { column: f.name, reason: "null-key" });
      }
    },
    retractionFields: schema.fields.map((f) => (keys.has(f.name) ? f : { ...f, type: { ...f.type, nullable: true } })),
    fillers: schema.fields.filter((f) => !keys.has(f.name) && !f.type.nullable),
  };
}

/**
 * Compiles the conversion of one table schema's input rows: `kind` given (upsert, delete) or read from the row's
 * `_row_kind`. The input object is read, never copied (the converters pass `_row_kind` over).
 */
export function compileKeyedInput(schema: TableSchema): (input: Readonly<Record<string, unknown>>, kind?: RowKind) => KeyedRow {
  const rules = keyedInputRules(schema);
  const full = compileRowConverter(schema.fields, { ignore: ROW_KIND_COLUMN });
  // Retractions: every non-key column may be missing (filled below); key columns stay required.
  const relaxed = compileRowConverter(rules.retractionFields, { ignore: ROW_KIND_COLUMN });
  const refusedValue = retractionValueRefusal(schema);
  return (values, given) => {
    const kind = rules.kindOf(values, given);
    rules.checkKind(kind);
    rules.checkKey(values, kind);
    if (!isRetract(kind)) return { row: full(values), kind };
    const row = relaxed(values);
    for (const f of rules.fillers) if (row[f.name] === null) row[f.name] = zeroValue(f.type);
    const why = refusedValue?.(row, kind) ?? null;
    if (why !== null) throw dataInvalid(`${rowKindName(kind)} refused: ${why}`, { column: ROW_KIND_COLUMN, reason: "retraction-refused" });
    return { row, kind };
  };
}

/** The kind an input row names in `_row_kind` (absent or null: +I); DataInvalid (`bad-row-kind`) otherwise. */
export function rowKindOf(input: Readonly<Record<string, unknown>>): RowKind {
  const raw = input[ROW_KIND_COLUMN];
  if (raw === undefined || raw === null) return RowKind.INSERT;
  const kind = parseRowKind(raw);
  if (kind === null) throw dataInvalid(`row kind ${describeRaw(raw)} is not one of +I, -U, +U, -D`, { column: ROW_KIND_COLUMN, reason: "bad-row-kind" });
  return kind;
}

/** The `rowkind.field` option's column, or null (create-time validation makes sure it names a string column). */
export function rowKindFieldOf(schema: TableSchema): string | null {
  const name = schema.options["rowkind.field"];
  return name === undefined || name === "" ? null : name;
}

/** `given`, when the row's `_row_kind` names no other kind. */
function agreeingKind(given: RowKind, input: Readonly<Record<string, unknown>>): RowKind {
  const named = input[ROW_KIND_COLUMN];
  if (named !== undefined && named !== null) {
    const kind = rowKindOf(input);
    if (kind !== given) throw disagreeing(`${ROW_KIND_COLUMN} says ${rowKindName(kind)}`, `the write is ${rowKindName(given)} (${given === RowKind.DELETE ? "a delete" : "an upsert"})`, ROW_KIND_COLUMN);
  }
  return given;
}

/** The kind of a table with `rowkind.field`: its column, `_row_kind` and `given` — each where present, agreeing. */
function fieldKindOf(field: string, input: Readonly<Record<string, unknown>>, given: RowKind | undefined): RowKind {
  const raw = input[field];
  if (raw === undefined || raw === null) {
    if (given !== undefined) return agreeingKind(given, input);
    const named = input[ROW_KIND_COLUMN];
    if (named !== undefined && named !== null) return rowKindOf(input);
    throw dataInvalid(`Row kind cannot be null: the rowkind.field column '${field}' is ${raw === null ? "null" : "missing"} (it takes +I, -U, +U or -D)`, { column: field, reason: "bad-row-kind" });
  }
  const kind = parseRowKind(raw);
  if (kind === null) throw dataInvalid(`row kind ${describeRaw(raw)} in the rowkind.field column '${field}' is not one of +I, -U, +U, -D`, { column: field, reason: "bad-row-kind" });
  if (given !== undefined && given !== kind) throw disagreeing(`the rowkind.field column '${field}' says ${rowKindName(kind)}`, `the write is ${rowKindName(given)} (${given === RowKind.DELETE ? "a delete" : "an upsert"})`, field);
  const named = input[ROW_KIND_COLUMN];
  if (named !== undefined && named !== null) {
    const other = rowKindOf(input);
    if (other !== kind) throw disagreeing(`the rowkind.field column '${field}' says ${rowKindName(kind)}`, `${ROW_KIND_COLUMN} says ${rowKindName(other)}`, field);
  }
  return kind;
}

const disagreeing = (one: string, other: string, column: string): Error => dataInvalid(`the row's kind is named twice, differently: ${one}, ${other}`, { column, reason: "bad-row-kind" });

/** A field value as a message shows it (JSON text where it has one; bigints and bytes by what they are). */
function describeRaw(v: unknown): string {
  if (typeof v === "bigint") return `${v} (a bigint)`;
  if (v instanceof Uint8Array) return `of ${v.length} bytes`;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return `of type ${typeof v}`; // a value without a JSON or text form (a cycle, a throwing toJSON)
  }
}


const describeKind = (kind: RowKind): string => (kind === RowKind.DELETE ? "a delete" : kind === RowKind.UPDATE_BEFORE ? "an update-before" : "a row");

/** The canonical zero of a type: what a NOT NULL column of a delete by key holds. */
export function zeroValue(type: DataType): Value {
  switch (type.root) {
    case "BOOLEAN":
      return false;
    case "TINYINT":
    case "SMALLINT":
    case "INT":
    case "DATE":
    case "TIME":
    case "FLOAT":
    case "DOUBLE":
      return 0;
    case "BIGINT":
    case "DECIMAL":
      return 0n;
    case "CHAR":
      return " ".repeat(type.length);
    case "VARCHAR":
      return "";
    case "BINARY":
      return new Uint8Array(type.length);
    case "VARBINARY":
      return new Uint8Array(0);
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      return new Timestamp(0, 0);
    case "ARRAY":
    case "MULTISET":
    case "MAP":
      return [];
    case "ROW": {
      const out: Record<string, Value> = {};
      for (const f of type.fields as DataField[]) out[f.name] = f.type.nullable ? null : zeroValue(f.type);
      return out;
    }
    default:
      return null;
  }
}
