/**
 * Gathering chosen rows of several Arrow batches into new columns: what a flush (the rows that survive the merge,
 * in key order) and a merge read (the winners of each key, across sorted runs) both end with. The rows are named by
 * (batch, row) pairs in output order; values pass through the canonical form of the column's type, so batches decoded
 * from files of different Arrow layouts (dictionary pages, other timestamp units) gather into one column.
 */
import type * as arrow from "apache-arrow";
import { makeColumnBuilder } from "../codec/columns/nested-builders.ts";
import { columnReader, type ValueReader } from "../codec/columns/value-readers.ts";
import type { DataType } from "../format/data-types.ts";

/** Rows to gather: the i-th output row is row `rowOf[i]` of batch `batchOf[i]`. */
export interface RowPicks {
  readonly length: number;
  readonly batchOf: ArrayLike<number>;
  readonly rowOf: ArrayLike<number>;
}

/** One column of the picked rows, from the same column (`sources[b]`: its data in batch b) of every batch. */
export function gatherColumn(type: DataType, sources: readonly arrow.Data[], picks: RowPicks, name = "?"): arrow.Data {
  const readers: ValueReader[] = sources.map((d) => columnReader(type, d));
  const out = makeColumnBuilder(type, name, Math.max(1, picks.length));
  const { batchOf, rowOf } = picks;
  if (readers.length === 1) {
    const r = readers[0]!;
    for (let i = 0; i < picks.length; i++) out.append(r(rowOf[i]!));
  } else {
    for (let i = 0; i < picks.length; i++) out.append(readers[batchOf[i]!]!(rowOf[i]!));
  }
  return out.finish();
}
