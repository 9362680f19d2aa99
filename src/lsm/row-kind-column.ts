/**
 * The `_row_kind` column of a primary-key table's changes as Arrow rows: a UTF-8 string "+I" / "-U" / "+U" / "-D" per
 * row (the name and form pypaimon's streaming reads give), appended after the row's columns. A stream of a
 * primary-key table carries it in every batch — the starting full scan's rows as "+I" (the table's state), then each
 * snapshot's changes with the kind they were written with.
 */
import * as arrow from "apache-arrow";
import type { DataField } from "../format/data-types.ts";
import { ROW_KIND_COLUMN } from "./row-kind.ts";

/** The column as a field (id −1: it is no column of the table). */
export const ROW_KIND_FIELD: DataField = { id: -1, name: ROW_KIND_COLUMN, type: { root: "VARCHAR", length: 2147483647, nullable: false } };

const KIND_BYTES = ["+I", "-U", "+U", "-D"].map((k) => new TextEncoder().encode(k));

/** `batch` with a `_row_kind` column after its columns: each row's kind from `kinds` (0..3), or "+I" for all when null. */
export function withRowKind(batch: arrow.RecordBatch, kinds: ArrayLike<number> | null): arrow.RecordBatch {
  const n = batch.numRows;
  const offsets = new Int32Array(n + 1);
  const data = new Uint8Array(2 * n);
  for (let i = 0; i < n; i++) {
    const k = kinds === null ? 0 : kinds[i]!;
    const bytes = KIND_BYTES[k];
    if (bytes === undefined) throw new Error(`row ${i} has row kind ${k}, not one of 0..3`);
    data.set(bytes, 2 * i);
    offsets[i + 1] = 2 * (i + 1);
  }
  const column = arrow.makeData({ type: new arrow.Utf8(), length: n, nullCount: 0, valueOffsets: offsets, data });
  const field = new arrow.Field(ROW_KIND_COLUMN, new arrow.Utf8(), false);
  const schema = new arrow.Schema([...batch.schema.fields, field]);
  return new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children: [...batch.data.children, column] }));
}
