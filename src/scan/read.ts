/**
 * Reading splits into Arrow record batches in the table's *current* schema.
 *
 * Each data file is read through the schema it was written with (`_SCHEMA_ID`) and mapped to the current schema by
 * field id: a renamed column keeps its id, a column added later reads as nulls, a dropped column is not read. Rows
 * of a bucket come out in sequence order (the split's files are ordered by their first sequence number). A file
 * whose row count differs from its manifest entry is reported as corrupt rather than read silently.
 */
import * as arrow from "apache-arrow";
import { ErrorKind, LakeError } from "../errors.ts";
import { columnReader, makeColumnBuilder, recordBatchToRows } from "../codec/columns.ts";
import { toArrowField } from "../codec/arrow-schema.ts";
import { readParquet } from "../codec/parquet.ts";
import type { DataField, DataType } from "../spec/data-types.ts";
import { serializeBinaryRow } from "../spec/binary-row.ts";
import { partitionPath } from "../spec/partition.ts";
import type { DataFileMeta } from "../spec/manifest.ts";
import type { TableSchema } from "../spec/schema.ts";
import { toCanonical, type Row, type Value } from "../spec/values.ts";
import type { Table } from "../table/table.ts";
import { planScan, type DataSplit, type ScanSpec } from "./plan.ts";

export interface ReadSpec extends ScanSpec {
  /** Columns to read, in this order; default all columns of the current schema. */
  projection?: string[];
  /** Read only this partition (values in partition-key order). */
  partition?: Value[];
  /** Stop after this many rows. */
  limit?: number;
}

function projectedFields(table: Table, projection?: string[]): DataField[] {
  if (!projection) return table.schema.fields;
  return projection.map((name) => {
    const f = table.schema.fields.find((x) => x.name === name);
    if (!f) throw new LakeError(ErrorKind.DataInvalid, `no column '${name}' in ${table.name} (columns: ${table.schema.fields.map((x) => x.name).join(", ")})`);
    return f;
  });
}

const sameType = (a: DataType, b: DataType): boolean => JSON.stringify({ ...a, nullable: true }) === JSON.stringify({ ...b, nullable: true });

/** Reads one data file and returns its batches with the target fields (by id), renamed and evolved. */
async function readFile(table: Table, split: DataSplit, file: DataFileMeta, fields: DataField[]): Promise<arrow.RecordBatch[]> {
  const fileSchema: TableSchema = file.schemaId === table.schema.id ? table.schema : await table.schemas.schema(file.schemaId);
  const ppath = partitionPath(table.partitionKeys, table.partitionTypes, split.partitionValues, {
    defaultName: table.options.partitionDefaultName,
    legacyName: table.options.partitionLegacyName,
  });
  const path = table.paths.dataFilePath(ppath, split.bucket, file.fileName, file.externalPath);
  const sources = fields.map((f) => fileSchema.fields.find((x) => x.id === f.id));
  const columns = [...new Set(sources.filter((s): s is DataField => s !== undefined).map((s) => s.name))];
  if (!file.fileName.endsWith(".parquet")) {
    throw new LakeError(ErrorKind.Unsupported, `data file ${file.fileName}: only Parquet data files can be read (file format from its extension)`);
  }
  const bytes = await table.io.readFile(path);
  const data = readParquet(bytes, { columns });
  if (data.numRows !== file.rowCount) {
    throw new LakeError(ErrorKind.DataInvalid, `data file ${path} has ${data.numRows} rows but its manifest entry says ${file.rowCount}`, { context: { path } });
  }
  const targetSchema = new arrow.Schema(fields.map((f) => toArrowField(f.name, f.type)));
  const out: arrow.RecordBatch[] = [];
  for (const batch of data.batches) {
    const names = batch.schema.fields.map((x) => x.name);
    const children = fields.map((f, k) => {
      const src = sources[k];
      const idx = src ? names.indexOf(src.name) : -1;
      if (!src || idx < 0) return nullColumn(f.type, batch.numRows);
      const col = batch.data.children[idx]!;
      // Same physical type: take the column as it is (renaming is free). Otherwise convert value by value.
      if (sameType(src.type, f.type) && arrow.util.compareTypes(col.type, toArrowField(f.name, f.type).type)) return col;
      return convertColumn(src.type, f, col);
    });
    const struct = arrow.makeData({ type: new arrow.Struct(targetSchema.fields), length: batch.numRows, nullCount: 0, children });
    out.push(new arrow.RecordBatch(targetSchema, struct));
  }
  return out;
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

/** Record batches of a table (or snapshot) in the current schema; splits in plan order, buckets in sequence order. */
export async function* readBatches(table: Table, spec: ReadSpec = {}): AsyncGenerator<arrow.RecordBatch> {
  if (table.isPrimaryKeyTable) throw new LakeError(ErrorKind.Unsupported, `${table.name} has a primary key; merge-on-read is not supported yet`);
  const fields = projectedFields(table, spec.projection);
  const ptypes = table.partitionTypes;
  const wantPartition = spec.partition ? Buffer.from(serializeBinaryRow(ptypes, spec.partition)).toString("hex") : null;
  const plan = await planScan(table, {
    ...spec,
    ...(wantPartition !== null ? { partitionFilter: (values: Value[]) => Buffer.from(serializeBinaryRow(ptypes, values)).toString("hex") === wantPartition } : {}),
  });
  let remaining = spec.limit ?? Infinity;
  for (const split of plan.splits) {
    for (const file of split.files) {
      if (remaining <= 0) return;
      for (const batch of await readFile(table, split, file, fields)) {
        if (remaining <= 0) return;
        if (batch.numRows > remaining) {
          yield batch.slice(0, remaining);
          remaining = 0;
          return;
        }
        remaining -= batch.numRows;
        yield batch;
      }
    }
  }
}

/** Rows of canonical values keyed by column name. */
export async function* readRows(table: Table, spec: ReadSpec = {}): AsyncGenerator<Row> {
  const fields = projectedFields(table, spec.projection);
  for await (const batch of readBatches(table, spec)) {
    for (const row of recordBatchToRows(fields, batch)) yield row;
  }
}

/** All rows at once (tests, small tables). */
export async function readAllRows(table: Table, spec: ReadSpec = {}): Promise<Row[]> {
  const out: Row[] = [];
  for await (const r of readRows(table, spec)) out.push(r);
  return out;
}
