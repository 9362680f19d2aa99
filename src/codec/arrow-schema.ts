/**
 * Paimon data types ⇄ Apache Arrow types, chosen so that the Parquet file parquet-wasm (arrow-rs) writes from the
 * Arrow schema has the layout Java Paimon's `ParquetSchemaConverter` writes (paimon-format.md §7.1).
 *
 * | Paimon                         | Arrow                                   | Parquet (as written by parquet-wasm 0.8)      |
 * | ------------------------------ | --------------------------------------- | --------------------------------------------- |
 * | BOOLEAN                        | Bool                                    | BOOLEAN                                       |
 * | TINYINT / SMALLINT / INT       | Int8 / Int16 / Int32                    | INT32 (INT(8) / INT(16) / plain)              |
 * | BIGINT                         | Int64                                   | INT64                                         |
 * | FLOAT / DOUBLE                 | Float32 / Float64                       | FLOAT / DOUBLE                                |
 * | DECIMAL(p, s)                  | Decimal128(p, s)                        | INT32 p≤9, INT64 p≤18, else FIXED(16), DECIMAL |
 * | CHAR / VARCHAR / STRING        | Utf8                                    | BYTE_ARRAY (STRING)                           |
 * | BINARY(n) / VARBINARY / BYTES  | Binary                                  | BYTE_ARRAY                                    |
 * | DATE                           | DateDay                                 | INT32 (DATE)                                  |
 * | TIME(p)                        | TimeMillisecond                         | INT32 (TIME(MILLIS))                          |
 * | TIMESTAMP(p)                   | Timestamp ms p≤3, µs p≤6, ns p≤9; no tz | INT64 TIMESTAMP(unit, isAdjustedToUTC=false); INT96 p≥7 |
 * | TIMESTAMP_LTZ(p)               | same units, timezone "UTC"              | INT64 TIMESTAMP(unit, isAdjustedToUTC=true); INT96 p≥7 |
 * | ARRAY<T>                       | List, child field "element"             | 3-level LIST: `list` / `element`              |
 * | MAP<K, V>                      | Map, entries "key_value" {key NOT NULL, value} | MAP: repeated group `key_value` {key required, value} |
 * | MULTISET<T>                    | Map<T NOT NULL, Int32 NOT NULL>         | as MAP (Java stores a multiset as element → count) |
 * | ROW<…>                         | Struct                                  | GROUP                                         |
 *
 * NOT NULL types become non-nullable Arrow fields, which parquet-wasm writes as REQUIRED.
 *
 * Why BINARY(n) is `Binary`, not `FixedSizeBinary(n)`: Java writes BINARY(n) as plain BYTE_ARRAY, and its reader takes
 * BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY for BINARY; pyarrow reads BYTE_ARRAY back as `binary`, which pypaimon accepts for
 * BINARY columns. Fixed width would also reject shorter values, which Paimon allows.
 *
 * TIMESTAMP(7..9) / TIMESTAMP_LTZ(7..9) are Timestamp(ns) in Arrow but INT96 in the file, as Java writes them and
 * released Java Paimon (1.4.2) requires (it reads INT64 there as millis, or fails for LTZ). arrow-rs writes no INT96,
 * so the encoder substitutes FixedSizeBinary(12) holding the INT96 bytes and rewrites the footer (parquet-layout.ts,
 * parquet-footer.mjs); arrow-rs, pyarrow and DuckDB read INT96 back as nanosecond (DuckDB: microsecond) timestamps.
 *
 * The reverse mapping (`fromArrowType`, `fromArrowSchema`) reads what pyarrow, pypaimon, Java (via arrow-rs) and
 * DuckDB produce, and lets callers write arbitrary Arrow data into a Paimon table. It is lossy where Paimon has no
 * twin: unsigned integers widen (Uint8→SMALLINT, Uint16→INT, Uint32→BIGINT), Float16→FLOAT, large/view strings
 * and binaries → STRING/BYTES, dictionaries → their value type, FixedSizeList → ARRAY.
 */
import * as arrow from "apache-arrow";
import { assignFieldIds, MAX_LENGTH, type DataField, type DataType } from "../format/data-types.ts";
import { dataInvalid, ErrorKind, LakeError } from "../errors.ts";

/** A named column: `DataField` satisfies it; ids are not needed for Arrow. */
export interface ColumnSpec {
  readonly name: string;
  readonly type: DataType;
}

/** Arrow timestamp/time unit for a Paimon precision (digits after the second). */
export function timestampUnitFor(precision: number): arrow.TimeUnit {
  if (precision <= 3) return arrow.TimeUnit.MILLISECOND;
  if (precision <= 6) return arrow.TimeUnit.MICROSECOND;
  return arrow.TimeUnit.NANOSECOND;
}

/** The Arrow type Paimon's Parquet layout needs for `t` (nullability lives on the field, see `toArrowField`). */
export function toArrowType(t: DataType): arrow.DataType {
  switch (t.root) {
    case "BOOLEAN":
      return new arrow.Bool();
    case "TINYINT":
      return new arrow.Int8();
    case "SMALLINT":
      return new arrow.Int16();
    case "INT":
      return new arrow.Int32();
    case "BIGINT":
      return new arrow.Int64();
    case "FLOAT":
      return new arrow.Float32();
    case "DOUBLE":
      return new arrow.Float64();
    case "DECIMAL":
      return new arrow.Decimal(t.scale, t.precision, 128);
    case "CHAR":
    case "VARCHAR":
      return new arrow.Utf8();
    case "BINARY":
    case "VARBINARY":
      return new arrow.Binary();
    case "DATE":
      return new arrow.DateDay();
    case "TIME":
      return new arrow.TimeMillisecond();
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      return new arrow.Timestamp(timestampUnitFor(t.precision), t.root === "TIMESTAMP_LTZ" ? "UTC" : null);
    case "ARRAY":
      return new arrow.List(toArrowField("element", t.element));
    case "MULTISET":
      return mapType(toArrowType(t.element), new arrow.Int32(), false);
    case "MAP":
      return mapType(toArrowType(t.key), toArrowType(t.value), t.value.nullable);
    case "ROW":
      return new arrow.Struct(t.fields.map((f) => toArrowField(f.name, f.type)));
  }
}

/**
 * A Map type whose entries field is named `key_value`, like Java's Parquet MAP group. apache-arrow's `Map_`
 * constructor renames the entries field to "entries" (ARROW-8716); arrow-rs names the repeated Parquet group after
 * that field, so we rename it back after construction.
 */
export function mapType(key: arrow.DataType, value: arrow.DataType, valueNullable: boolean): arrow.Map_ {
  const entries = new arrow.Struct([new arrow.Field("key", key, false), new arrow.Field("value", value, valueNullable)]);
  const t = new arrow.Map_(new arrow.Field("key_value", entries, false));
  const entriesField = t.children[0] as unknown as { name: string };
  entriesField.name = "key_value";
  return t;
}

export function toArrowField(name: string, t: DataType): arrow.Field {
  return new arrow.Field(name, toArrowType(t), t.nullable);
}

export function toArrowSchema(fields: readonly ColumnSpec[]): arrow.Schema {
  return new arrow.Schema(fields.map((f) => toArrowField(f.name, f.type)));
}

const unsupported = (what: string): LakeError => new LakeError(ErrorKind.Unsupported, what);

/** The Paimon type of an Arrow type (see the module comment for the lossy cases). */
export function fromArrowType(t: arrow.DataType, nullable = true): DataType {
  if (arrow.DataType.isDictionary(t)) return fromArrowType(t.dictionary, nullable);
  if (arrow.DataType.isBool(t)) return { root: "BOOLEAN", nullable };
  if (arrow.DataType.isInt(t)) {
    const { bitWidth, isSigned } = t;
    if (isSigned) {
      const root = bitWidth === 8 ? "TINYINT" : bitWidth === 16 ? "SMALLINT" : bitWidth === 32 ? "INT" : "BIGINT";
      return { root, nullable };
    }
    if (bitWidth === 8) return { root: "SMALLINT", nullable };
    if (bitWidth === 16) return { root: "INT", nullable };
    if (bitWidth === 32) return { root: "BIGINT", nullable };
    throw unsupported("unsigned 64-bit integers have no Paimon type");
  }
  if (arrow.DataType.isFloat(t)) return { root: t.precision === arrow.Precision.DOUBLE ? "DOUBLE" : "FLOAT", nullable };
  if (arrow.DataType.isDecimal(t)) {
    if (t.precision > 38) throw unsupported(`DECIMAL precision ${t.precision} exceeds Paimon's 38`);
    return { root: "DECIMAL", precision: t.precision, scale: t.scale, nullable };
  }
  if (arrow.DataType.isUtf8(t) || arrow.DataType.isLargeUtf8(t) || arrow.DataType.isUtf8View(t))
    return { root: "VARCHAR", length: MAX_LENGTH, nullable };
  if (arrow.DataType.isBinary(t) || arrow.DataType.isLargeBinary(t) || arrow.DataType.isBinaryView(t))
    return { root: "VARBINARY", length: MAX_LENGTH, nullable };
  if (arrow.DataType.isFixedSizeBinary(t)) return { root: "BINARY", length: t.byteWidth, nullable };
  if (arrow.DataType.isDate(t)) return { root: "DATE", nullable };
  if (arrow.DataType.isTime(t)) return { root: "TIME", precision: unitPrecision(t.unit), nullable };
  if (arrow.DataType.isTimestamp(t)) {
    const root = t.timezone ? "TIMESTAMP_LTZ" : "TIMESTAMP";
    return { root, precision: unitPrecision(t.unit), nullable };
  }
  if (arrow.DataType.isList(t) || arrow.DataType.isFixedSizeList(t) || arrow.DataType.isLargeList(t)) {
    const child = t.children[0] as arrow.Field;
    return { root: "ARRAY", element: fromArrowType(child.type, child.nullable), nullable };
  }
  if (arrow.DataType.isMap(t)) {
    const entries = t.children[0]!.type as arrow.Struct;
    const [k, v] = entries.children as [arrow.Field, arrow.Field];
    return { root: "MAP", key: fromArrowType(k.type, false), value: fromArrowType(v.type, v.nullable), nullable };
  }
  if (arrow.DataType.isStruct(t)) {
    // Nested ids are placeholders here; `fromArrowSchema` assigns real ones.
    const fields: DataField[] = t.children.map((f: arrow.Field) => ({ id: -1, name: f.name, type: fromArrowType(f.type, f.nullable) }));
    return { root: "ROW", fields, nullable };
  }
  throw unsupported(`Arrow type ${String(t)} has no Paimon type`);
}

function unitPrecision(unit: arrow.TimeUnit): number {
  switch (unit) {
    case arrow.TimeUnit.SECOND:
      return 0;
    case arrow.TimeUnit.MILLISECOND:
      return 3;
    case arrow.TimeUnit.MICROSECOND:
      return 6;
    default:
      return 9;
  }
}

/** Paimon fields for an Arrow schema, with field ids assigned the way Java assigns them (depth-first from 0). */
export function fromArrowSchema(schema: arrow.Schema): DataField[] {
  const seen = new Set<string>();
  const fields = schema.fields.map((f): DataField => {
    if (seen.has(f.name)) throw dataInvalid(`duplicate column name '${f.name}' in Arrow schema`);
    seen.add(f.name);
    return { id: -1, name: f.name, type: fromArrowType(f.type, f.nullable) };
  });
  return assignFieldIds(fields).fields;
}

/**
 * Renames nested field names to Paimon's Parquet spelling (list child `element`; map entries `key_value` with
 * `key`/`value`) for Arrow data built elsewhere (`vectorFromArray` names list children "item", arrow-js names map
 * entries "entries"). Types and buffers are unchanged, so the same `Data` can be re-wrapped under the result.
 */
export function normalizeArrowSchema(schema: arrow.Schema): arrow.Schema {
  return new arrow.Schema(
    schema.fields.map((f) => normalizeField(f)),
    schema.metadata,
  );
}

function normalizeField(f: arrow.Field, name: string = f.name): arrow.Field {
  return new arrow.Field(name, normalizeType(f.type), f.nullable, f.metadata);
}

function normalizeType(t: arrow.DataType): arrow.DataType {
  if (arrow.DataType.isList(t)) return new arrow.List(normalizeField(t.children[0]!, "element"));
  if (arrow.DataType.isMap(t)) {
    const entries = t.children[0]!.type as arrow.Struct;
    const [k, v] = entries.children as [arrow.Field, arrow.Field];
    const m = mapType(normalizeType(k.type), normalizeType(v.type), v.nullable);
    return m;
  }
  if (arrow.DataType.isStruct(t)) return new arrow.Struct(t.children.map((c: arrow.Field) => normalizeField(c)));
  return t;
}
