/**
 * Record batches (or tables) as rows of canonical values, columns matched by name (exact, then case-insensitive, like
 * Java).
 */
import * as arrow from "apache-arrow";
import { dataInvalid } from "../../errors.ts";
import type { Row } from "../../format/values.ts";
import type { ColumnSpec } from "../arrow-schema.ts";
import { batchColumn } from "./column-lookup.ts";
import { columnReader } from "./value-readers.ts";

function batchesOf(source: arrow.RecordBatch | arrow.Table): arrow.RecordBatch[] {
  return source instanceof arrow.Table ? source.batches : [source];
}

/**
 * Canonical rows of a batch or table, with the given columns (matched by name). A column missing from the data is
 * an error: schema evolution (added columns read as null) is the caller's decision.
 */
export function recordBatchToRows(fields: readonly ColumnSpec[], source: arrow.RecordBatch | arrow.Table): Row[] {
  const rows: Row[] = [];
  for (const batch of batchesOf(source)) {
    const readers = fields.map((f) => {
      const data = batchColumn(batch, f.name);
      if (data === undefined) throw dataInvalid(`column '${f.name}' is missing from the data`, { column: f.name });
      return columnReader(f.type, data);
    });
    const names = fields.map((f) => f.name);
    for (let i = 0; i < batch.numRows; i++) {
      const row: Row = {};
      for (let k = 0; k < readers.length; k++) row[names[k]!] = readers[k]!(i);
      rows.push(row);
    }
  }
  return rows;
}
