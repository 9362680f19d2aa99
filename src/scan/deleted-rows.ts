/**
 * A data file's batches without the rows its deletion vector marks (Paimon's ApplyDeletionVectorReader): positions
 * count the file's rows in order across its batches. A batch that loses no row is passed on as it is; the others are
 * gathered anew from their kept rows (src/lsm/gather.ts copies flat columns buffer to buffer).
 */
import * as arrow from "apache-arrow";
import type { DataField } from "../format/data-types.ts";
import type { DeletedPositions } from "../format/wire/deletion-vectors.ts";
import { gatherColumn } from "../lsm/gather.ts";

/** `batches` (one file's, in file order, with `fields` as columns) less the rows at `deleted`. */
export function dropDeletedRows(batches: readonly arrow.RecordBatch[], deleted: DeletedPositions, fields: readonly DataField[]): arrow.RecordBatch[] {
  if (deleted.length === 0) return [...batches];
  const out: arrow.RecordBatch[] = [];
  let first = 0;
  let next = 0; // the first deleted position at or after `first`
  for (const batch of batches) {
    const end = first + batch.numRows;
    const from = next;
    while (next < deleted.length && deleted[next]! < end) next++;
    if (next === from) out.push(batch);
    else if (next - from < batch.numRows) out.push(keptRows(batch, deleted.subarray(from, next), first, fields));
    first = end;
  }
  return out;
}

/** The batch's rows but those at `gone` (positions in the file; the batch starts at `first`), in order. */
function keptRows(batch: arrow.RecordBatch, gone: Float64Array, first: number, fields: readonly DataField[]): arrow.RecordBatch {
  const rowOf = new Int32Array(batch.numRows - gone.length);
  let n = 0;
  let g = 0;
  for (let row = 0; row < batch.numRows; row++) {
    if (g < gone.length && gone[g] === first + row) g++;
    else rowOf[n++] = row;
  }
  const picks = { length: n, batchOf: null, rowOf };
  const children = fields.map((f, k) => gatherColumn(f.type, [batch.data.children[k]!], picks, f.name));
  return new arrow.RecordBatch(batch.schema, arrow.makeData({ type: new arrow.Struct(batch.schema.fields), length: n, nullCount: 0, children }));
}
