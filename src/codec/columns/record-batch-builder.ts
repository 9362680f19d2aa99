/**
 * Assembling a whole record batch: `RecordBatchBuilder` holds one column builder per field and appends rows of
 * canonical values (`appendRow`), input records (`appendInput`, `appendArray`: validated as `compileConverter` would,
 * without making canonical values on the common paths), or lets a decoder fill its `columns` directly;
 * `rowsToRecordBatch` builds one batch from rows.
 */
import * as arrow from "apache-arrow";
import { dataInvalid, ErrorKind, LakeError } from "../../errors.ts";
import { MAX_LENGTH, type DataType } from "../../format/data-types.ts";
import { compileConverter } from "../../format/row-converter.ts";
import { toCanonical, type Row, type Value } from "../../format/values.ts";
import { toArrowSchema, type ColumnSpec } from "../arrow-schema.ts";
import { DEFAULT_CAPACITY, type ColumnBuilder } from "./column-builder.ts";
import {
  narrowIntShift,
  type BooleanColumnBuilder,
  type Int64ColumnBuilder,
  type NumberColumnBuilder,
  type TimestampColumnBuilder,
} from "./fixed-width-builders.ts";
import { makeColumnBuilder } from "./nested-builders.ts";
import { HEAP_ARRAYS, type ArrayAllocator } from "./buffer-recycler.ts";
import type { Utf8ColumnBuilder } from "./variable-width-builders.ts";

/**
 * The fast path of one column for *input* values (as a producer sends them: numbers for BIGINT and epoch-millis
 * timestamps, strings, …): appends a value the converter would pass through unchanged (or only widen) and the
 * builder would accept, without making the canonical value first (no BigInt, no Timestamp object), and returns
 * true; returns false for anything else, which then takes the converter + `append` path. Exactly the conditions
 * of `compileConverter`'s fast paths, so accepted values and errors are unchanged.
 */
function inputFastPath(col: ColumnBuilder): (v: unknown) => boolean {
  const type = col.type;
  switch (type.root) {
    case "INT":
    case "SMALLINT":
    case "TINYINT": {
      const b = col as NumberColumnBuilder;
      const shift = narrowIntShift(type.root);
      return (v) => typeof v === "number" && (v << shift) >> shift === v && (b.appendNumber(v), true);
    }
    case "BIGINT": {
      const b = col as Int64ColumnBuilder;
      return (v) => {
        if (typeof v === "number" && Number.isSafeInteger(v)) b.appendNumber(v);
        else if (typeof v === "bigint" && BigInt.asIntN(64, v) === v) b.appendBigInt(v);
        else return false;
        return true;
      };
    }
    case "DOUBLE": {
      const b = col as NumberColumnBuilder;
      return (v) => typeof v === "number" && (b.appendNumber(v), true);
    }
    case "FLOAT": {
      const b = col as NumberColumnBuilder;
      return (v) => typeof v === "number" && (b.appendNumber(Math.fround(v)), true);
    }
    case "BOOLEAN": {
      const b = col as BooleanColumnBuilder;
      return (v) => typeof v === "boolean" && (b.appendBoolean(v), true);
    }
    case "VARCHAR": {
      if (type.length !== MAX_LENGTH) return () => false;
      const b = col as Utf8ColumnBuilder;
      return (v) => typeof v === "string" && (b.appendString(v), true);
    }
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ": {
      const b = col as TimestampColumnBuilder;
      return (v) => typeof v === "number" && Number.isSafeInteger(v) && (b.appendTimestamp(v, 0), true);
    }
    default:
      return () => false;
  }
}

interface InputColumn {
  name: string;
  type: DataType;
  col: ColumnBuilder;
  fast: (v: unknown) => boolean;
  convert: (v: unknown) => Value;
}

/** Builds record batches column by column; `columns[i]` may also be filled directly by a decoder. */
export class RecordBatchBuilder {
  readonly schema: arrow.Schema;
  readonly columns: ColumnBuilder[];
  private readonly names: string[];
  private inputColumns: InputColumn[] | null = null;

  /** `arrays`: where the columns' first buffers come from (default: allocated as usual). */
  constructor(
    readonly fields: readonly ColumnSpec[],
    capacity = DEFAULT_CAPACITY,
    arrays: ArrayAllocator = HEAP_ARRAYS,
  ) {
    this.schema = toArrowSchema(fields);
    this.names = fields.map((f) => f.name);
    this.columns = fields.map((f) => makeColumnBuilder(f.type, f.name, capacity, arrays));
  }

  get length(): number {
    return this.columns[0]?.length ?? 0;
  }

  /**
   * Appends a row of canonical values keyed by column name; a missing key is a null. A row that fails (DataInvalid)
   * is rolled back from every column, so the builder stays usable and the caller can route the row elsewhere.
   */
  appendRow(row: Row): void {
    const cols = this.columns;
    const before = this.length;
    try {
      for (let k = 0; k < cols.length; k++) cols[k]!.append(row[this.names[k]!]);
    } catch (e) {
      for (const c of cols) c.truncate(before);
      throw e;
    }
  }

  /**
   * Validates and appends an input record (an object keyed by column name, as `compileRowConverter` takes it): the
   * same rules and the same DataInvalid errors as `appendRow(compileRowConverter(fields)(input))`, including the
   * rejection of unknown keys, at about half the cost, because common values go into the column buffers without
   * becoming canonical values first. A rejected record is rolled back from every column.
   */
  appendInput(input: Readonly<Record<string, unknown>>): void {
    const cols = (this.inputColumns ??= this.makeInputColumns());
    const before = this.length;
    try {
      // The converter's order of errors: conversion errors (column order), then an unknown key, then what the
      // builders reject (e.g. a timestamp beyond ±2^53 ms) — so a builder error waits until the end.
      let appendError: { e: unknown } | null = null;
      let seen = 0;
      for (let k = 0; k < cols.length; k++) {
        const c = cols[k]!;
        const v = input[c.name];
        if (v === undefined || v === null) {
          if (v === null) seen++;
          // A missing value of a nullable column is its null (a primary-key buffer's kind column, on every upsert).
          if (c.type.nullable) {
            if (appendError === null) c.col.appendNull();
            continue;
          }
        } else {
          seen++;
          if (c.fast(v)) continue;
        }
        const value = v === null || v === undefined ? toCanonical(c.type, v, c.name) : c.convert(v);
        if (appendError !== null) continue;
        try {
          c.col.append(value);
        } catch (e) {
          appendError = { e };
        }
      }
      // Only when the record has more defined keys than the columns it matched is a key unknown.
      let defined = 0;
      for (const key in input) if (input[key] !== undefined) defined++;
      if (defined !== seen) {
        const unknown = Object.keys(input).filter((key) => !this.names.includes(key));
        throw dataInvalid(`unknown column '${unknown[0]}' (columns: ${this.names.join(", ")})`, { column: unknown[0] });
      }
      if (appendError !== null) throw appendError.e;
    } catch (e) {
      for (const c of this.columns) c.truncate(before);
      throw e;
    }
  }

  /**
   * Validates and appends a row given as an array of input values: column `k` takes `values[index[k]]` (a null when
   * `index[k]` is −1). The same rules and DataInvalid errors, in the same order, as converting each value with
   * `compileConverter` (a missing or undefined value as `toCanonical(type, null)`) and then `appendRow` — without a
   * canonical value per cell on the common paths (see `appendInput`). A rejected row is rolled back from every column.
   */
  appendArray(values: readonly unknown[], index: readonly number[]): void {
    const cols = (this.inputColumns ??= this.makeInputColumns());
    const before = this.length;
    try {
      let appendError: { e: unknown } | null = null;
      for (let k = 0; k < cols.length; k++) {
        const c = cols[k]!;
        const j = index[k]!;
        const v = j < 0 ? undefined : values[j];
        try {
          // A fast path may still be refused by the builder (a timestamp beyond its unit's range): reported last.
          if (c.fast(v)) continue;
        } catch (e) {
          appendError ??= { e };
          continue;
        }
        const value = v === null || v === undefined ? toCanonical(c.type, v, c.name) : c.convert(v);
        if (appendError !== null) continue;
        try {
          c.col.append(value);
        } catch (e) {
          appendError = { e };
        }
      }
      if (appendError !== null) throw appendError.e;
    } catch (e) {
      for (const c of this.columns) c.truncate(before);
      throw e;
    }
  }

  private makeInputColumns(): InputColumn[] {
    return this.columns.map((col, k) => {
      const name = this.names[k]!;
      return { name, type: col.type, col, fast: inputFastPath(col), convert: compileConverter(col.type, name) };
    });
  }

  /** The batch built so far; the builders are reset. Throws if a decoder left the columns of unequal length. */
  finish(): arrow.RecordBatch {
    const length = this.length;
    for (let k = 0; k < this.columns.length; k++) {
      if (this.columns[k]!.length !== length)
        throw new LakeError(ErrorKind.Unexpected, `column ${this.names[k]} has ${this.columns[k]!.length} values, expected ${length}`);
    }
    const children = this.columns.map((c) => c.finish());
    const data = arrow.makeData({ type: new arrow.Struct(this.schema.fields), length, nullCount: 0, children });
    return new arrow.RecordBatch(this.schema, data);
  }
}

/** Builds one record batch from rows of canonical values keyed by column name. */
export function rowsToRecordBatch(fields: readonly ColumnSpec[], rows: readonly Row[]): arrow.RecordBatch {
  const b = new RecordBatchBuilder(fields, Math.max(1, rows.length));
  // Column by column: each loop sees one builder class and one property name, which V8 optimises far better than
  // row by row (measured ~2x). A bad value fails the whole call, so no per-row rollback is needed.
  fields.forEach((f, k) => appendColumn(b.columns[k]!, f.name, rows));
  return b.finish();
}

function appendColumn(col: ColumnBuilder, name: string, rows: readonly Row[]): void {
  for (let i = 0; i < rows.length; i++) col.append(rows[i]![name]);
}
