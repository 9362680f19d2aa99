/**
 * Input rows of a primary-key table → canonical rows with their kind: the `_row_kind` field ("+I", "-U", "+U", "-D";
 * absent: "+I") is taken off the row, and a retraction may carry only its key — a delete by key, as Debezium's
 * `before` of a Postgres table without REPLICA IDENTITY FULL does. The other columns of such a row are null, or the
 * zero value of their type where the column is NOT NULL (a -D's values are never read by deduplicate; they only
 * keep the file's NOT NULL columns non-null, and a changelog shows them as such).
 *
 * A kind that is not one of the four, a row without its key, a null key: DataInvalid with the reason (a cluster
 * writer turns that into a dead letter; the rest of the batch lands).
 */
import { dataInvalid } from "../errors.ts";
import type { DataField, DataType } from "../format/data-types.ts";
import type { TableSchema } from "../format/schema.ts";
import { compileRowConverter } from "../format/row-converter.ts";
import { Timestamp, type Row, type Value } from "../format/values.ts";
import { isRetract, parseRowKind, ROW_KIND_COLUMN, RowKind } from "./row-kind.ts";

export interface KeyedRow {
  row: Row;
  kind: RowKind;
}

/**
 * Compiles the conversion of one table schema's input rows: `kind` given (upsert, delete) or read from the row's
 * `_row_kind`. The input object is read, never copied.
 */
export function compileKeyedInput(schema: TableSchema): (input: Readonly<Record<string, unknown>>, kind?: RowKind) => KeyedRow {
  const full = compileRowConverter(schema.fields, { ignore: ROW_KIND_COLUMN });
  // Retractions: every non-key column may be missing (filled below); key columns stay required.
  const keys = new Set(schema.primaryKeys);
  const relaxed = compileRowConverter(
    schema.fields.map((f) => (keys.has(f.name) ? f : { ...f, type: { ...f.type, nullable: true } })),
    { ignore: ROW_KIND_COLUMN },
  );
  const fillers = schema.fields.filter((f) => !keys.has(f.name) && !f.type.nullable);
  return (values, given) => {
    const kind = given ?? kindOf(values);
    for (const k of schema.primaryKeys) {
      const v = values[k];
      if (v === undefined) throw dataInvalid(`${describeKind(kind)} without its key: primary-key column '${k}' is missing`, { column: k });
      if (v === null && !schema.fields.find((f) => f.name === k)!.type.nullable) throw dataInvalid(`primary-key column '${k}' is null`, { column: k });
    }
    if (!isRetract(kind)) return { row: full(values), kind };
    const row = relaxed(values);
    for (const f of fillers) if (row[f.name] === null) row[f.name] = zeroValue(f.type);
    return { row, kind };
  };
}

function kindOf(input: Readonly<Record<string, unknown>>): RowKind {
  const raw = input[ROW_KIND_COLUMN];
  if (raw === undefined || raw === null) return RowKind.INSERT;
  const kind = parseRowKind(raw);
  if (kind === null) throw dataInvalid(`row kind ${JSON.stringify(raw)} is not one of +I, -U, +U, -D`, { column: ROW_KIND_COLUMN });
  return kind;
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
