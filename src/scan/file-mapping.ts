/**
 * How a decoded data file becomes columns of the read's schema: the mapping of the file's schema to the target
 * fields by field id (a renamed column keeps its id, a column added later reads as nulls, a dropped column is not
 * read, a type change converts value by value), and the check of its row count against the manifest.
 *
 * Pure: no table, no IO. A read resolves each file schema's mapping once (src/scan/read.ts FileReadContext, which
 * looks the schema up through the table) and applies it here; a Parquet worker thread merging a bucket
 * (src/scan/merge-bucket-job.ts) is handed the mappings, plain data, and applies them the same way.
 */
import * as arrow from "apache-arrow";
import { ErrorKind, LakeError } from "../errors.ts";
import { makeColumnBuilder } from "../codec/columns/nested-builders.ts";
import { columnReader } from "../codec/columns/value-readers.ts";
import type { DataField, DataType } from "../format/data-types.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import type { TableSchema } from "../format/schema.ts";
import { toCanonical } from "../format/values.ts";
import { isSystemField } from "../lsm/key-value-fields.ts";

/** How files written with one schema are read into the target fields (the same for every file of that schema). */
export interface SchemaMapping {
  /** The file schema's field for each target field (by id), undefined for a column added later. */
  sources: Array<DataField | undefined>;
  /** The file columns to decode, by name. */
  columns: string[];
  /** Not every column of the file is wanted. */
  projected: boolean;
  /** Per target field: the file column has the same logical type (renaming is free). */
  sameLogicalType: boolean[];
}

/** The target fields as an Arrow schema and struct type, made once per read. */
export interface TargetLayout {
  fields: readonly DataField[];
  schema: arrow.Schema;
  struct: arrow.Struct;
}

const sameType = (a: DataType, b: DataType): boolean => JSON.stringify({ ...a, nullable: true }) === JSON.stringify({ ...b, nullable: true });

/**
 * How files of `fileSchema` map to `fields`. `keyValueFiles`: the files are a primary-key table's, which hold the
 * system columns (`_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`) besides the schema's.
 */
export function schemaMapping(fileSchema: TableSchema, fields: readonly DataField[], keyValueFiles = false): SchemaMapping {
  // Paimon's system columns of primary-key files are in no table schema: read by their own name.
  const sources = fields.map((f) => fileSchema.fields.find((x) => x.id === f.id) ?? (isSystemField(f) ? f : undefined));
  const columns = [...new Set(sources.filter((s): s is DataField => s !== undefined).map((s) => s.name))];
  return {
    sources,
    columns,
    // Every column of the file wanted: no projection (the cheaper full decode). A primary-key file's system columns
    // are wanted only by a merge, which names them: a read that does not (a raw read of a first-row table, of a bucket
    // that needs no merge) decodes without them — a third of a narrow table's decode and IPC bytes.
    projected: keyValueFiles || columns.length !== fileSchema.fields.length,
    sameLogicalType: fields.map((f, k) => sources[k] !== undefined && sameType(sources[k].type, f.type)),
  };
}

type ColumnSource = { kind: "take"; index: number } | { kind: "convert"; index: number; from: DataType } | { kind: "null" };

export function checkRowCount(rows: number, file: DataFileMeta, path: string): void {
  if (rows !== file.rowCount) {
    throw new LakeError(ErrorKind.DataInvalid, `data file ${path} has ${rows} rows but its manifest entry says ${file.rowCount}`, { context: { path } });
  }
}

/**
 * The decoded file's batches in the target layout: columns taken, converted or null-filled by the mapping.
 * `expectedRows`: the rows decoded (default the file's manifest count, a mismatch reported as such).
 */
export function mapToTarget(data: arrow.Table, mapping: SchemaMapping, target: TargetLayout, file: DataFileMeta, path: string, expectedRows = file.rowCount): arrow.RecordBatch[] {
  const { fields, schema: targetSchema, struct } = target;
  const { sources, sameLogicalType } = mapping;
  if (expectedRows === file.rowCount) checkRowCount(data.numRows, file, path);
  else if (data.numRows !== expectedRows) throw new LakeError(ErrorKind.DataInvalid, `row groups of data file ${path} decoded to ${data.numRows} rows but its footer says ${expectedRows}`, { context: { path } });
  // How each target column comes out of the file, decided once per file (its batches share one schema).
  const names = data.schema.fields.map((x) => x.name);
  const plan: ColumnSource[] = fields.map((f, k) => {
    const src = sources[k];
    const index = src ? names.indexOf(src.name) : -1;
    if (!src || index < 0) return { kind: "null" };
    // Same physical type: take the column as it is (renaming is free). Otherwise convert value by value.
    if (sameLogicalType[k] && arrow.util.compareTypes(data.schema.fields[index]!.type, targetSchema.fields[k]!.type)) return { kind: "take", index };
    return { kind: "convert", index, from: src.type };
  });
  return data.batches.map((batch) => {
    const children = plan.map((p, k) => {
      if (p.kind === "null") return nullColumn(fields[k]!.type, batch.numRows);
      const col = batch.data.children[p.index]!;
      return p.kind === "take" ? col : convertColumn(p.from, fields[k]!, col);
    });
    return new arrow.RecordBatch(targetSchema, arrow.makeData({ type: struct, length: batch.numRows, nullCount: 0, children }));
  });
}

function nullColumn(type: DataType, length: number): arrow.Data {
  const b = makeColumnBuilder({ ...type, nullable: true } as DataType, "null", Math.max(1, length));
  for (let i = 0; i < length; i++) b.appendNull();
  return b.finish();
}

/** Schema evolution with a type change (e.g. INT → BIGINT): read old values, convert them to the new type. */
function convertColumn(from: DataType, to: DataField, col: arrow.Data): arrow.Data {
  const read = columnReader(from, col);
  const b = makeColumnBuilder(to.type, to.name, Math.max(1, col.length));
  for (let i = 0; i < col.length; i++) {
    const v = read(i);
    b.append(v === null ? null : toCanonical({ ...to.type, nullable: true } as DataType, typeof v === "bigint" && to.type.root !== "BIGINT" && to.type.root !== "DECIMAL" ? Number(v) : v, to.name));
  }
  return b.finish();
}
