/**
 * A bucket's write buffer at its flush, as Java's SortBufferWriteBuffer + MergeTreeWriter.flushWriteBuffer do it:
 * the buffered rows (in arrival order; row i takes sequence number firstSeq + i, so every row written takes one,
 * merged away or not) are sorted by key — Paimon's key order, then the versions' merge order — and folded per key
 * through the merge function; what survives becomes one level-0 sorted run in Paimon's physical layout (`_KEY_`
 * copies, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, the row). With `changelog-producer = input` every buffered row, unfolded,
 * also goes out in the same layout and order: the changelog file.
 *
 * Pure: Arrow in, Arrow out, no IO — it runs wherever the buffer lives (a cluster writer's worker thread, or the
 * library's TableWrite).
 */
import * as arrow from "apache-arrow";
import { toArrowSchema } from "../codec/arrow-schema.ts";
import { columnReader } from "../codec/columns/value-readers.ts";
import type { DataField, DataType } from "../format/data-types.ts";
import type { TableSchema } from "../format/schema.ts";
import type { Value } from "../format/values.ts";
import { ErrorKind, LakeError } from "../errors.ts";
import { gatherColumn, type RowPicks } from "./gather.ts";
import { compareValues } from "../codec/stats.ts";
import { keyCopyField, keyFields, keyValueFields, VALUE_KIND_FIELD } from "./key-value-fields.ts";
import { sequenceFieldSpec, type SequenceFieldSpec } from "./merge-order.ts";
import { isRetract } from "./row-kind.ts";
import { TableOptions } from "../options.ts";

/** How a table's buffers fold and what they write: derived once per table schema. */
export interface KeyValueLayout {
  schema: TableSchema;
  /** The buffered batches' columns: the table's, then `_VALUE_KIND`. */
  bufferFields: DataField[];
  /** The trimmed primary key, in key order. */
  keyFields: DataField[];
  /** The physical columns of a key-value file. */
  fileFields: DataField[];
  sequence: SequenceFieldSpec | null;
  /** `ignore-delete`: retractions are dropped as they come. */
  ignoreDelete: boolean;
  /** `changelog-producer = input`: the unfolded rows are written too. */
  changelogInput: boolean;
}

export function keyValueLayout(schema: TableSchema): KeyValueLayout {
  const options = new TableOptions(schema.options);
  const engine = options.get("merge-engine") ?? "deduplicate";
  if (engine !== "deduplicate") throw new LakeError(ErrorKind.Unsupported, `merge-engine = ${engine} is not written yet (deduplicate is)`);
  return {
    schema,
    bufferFields: [...schema.fields, VALUE_KIND_FIELD],
    keyFields: keyFields(schema),
    fileFields: keyValueFields(schema),
    sequence: sequenceFieldSpec(schema),
    ignoreDelete: options.bool("ignore-delete") || options.bool("deduplicate.ignore-delete"),
    changelogInput: (options.get("changelog-producer") ?? "none") === "input",
  };
}

/** One sorted run's worth of rows in the physical layout, with what its DataFileMeta needs. */
export interface SortedRows {
  batch: arrow.RecordBatch;
  /** Key values of the first and last row (trimmed key fields). */
  minKey: Value[];
  maxKey: Value[];
  minSequenceNumber: bigint;
  maxSequenceNumber: bigint;
  /** Rows of kind -U or -D. */
  deleteRows: number;
}

export interface FlushedBuffer {
  /** The folded rows (null when nothing survives: every row was a retraction that ignore-delete dropped). */
  data: SortedRows | null;
  /** With `changelog-producer = input`: every buffered row, unfolded, in the same order. */
  changelog: SortedRows | null;
}

/**
 * Sorts and folds a bucket's buffered batches (columns `layout.bufferFields`; row i of the concatenation takes
 * sequence number `firstSeq + i`).
 */
export function flushBuffer(layout: KeyValueLayout, batches: readonly arrow.RecordBatch[], firstSeq: bigint): FlushedBuffer {
  const n = batches.reduce((t, b) => t + b.numRows, 0);
  if (n === 0) return { data: null, changelog: null };
  const batchOf = new Int32Array(n);
  const rowOf = new Int32Array(n);
  const keys = layout.keyFields.map(() => new Array<Value>(n));
  const seqValues = layout.sequence === null ? null : layout.sequence.fields.map(() => new Array<Value>(n));
  const kinds = new Int8Array(n);
  const kindAt = layout.bufferFields.length - 1;
  let i = 0;
  for (const [bi, b] of batches.entries()) {
    const keyReaders = layout.keyFields.map((f) => columnReader(f.type, columnOf(b, f.name)));
    const seqReaders = layout.sequence?.fields.map((f) => columnReader(f.type, columnOf(b, f.name))) ?? [];
    const kindData = b.data.children[kindAt]!;
    const kindValues = kindData.values as Int8Array;
    for (let r = 0; r < b.numRows; r++, i++) {
      batchOf[i] = bi;
      rowOf[i] = r;
      for (let k = 0; k < keyReaders.length; k++) keys[k]![i] = keyReaders[k]!(r);
      if (seqValues !== null) for (let k = 0; k < seqReaders.length; k++) seqValues[k]![i] = seqReaders[k]!(r);
      kinds[i] = kindValues[kindData.offset + r]!;
    }
  }
  const keyOf = (x: number): Value[] => keys.map((col) => col[x]!);
  const compareKeyAt = columnsComparator(layout.keyFields.map((f) => nullsFirst(f.type, 1)), keys);
  const compareSeqAt = layout.sequence === null ? null : columnsComparator(layout.sequence.fields.map((f) => nullsFirst(f.type, layout.sequence!.ascending ? 1 : -1)), seqValues!);
  // Key order, then merge order: the user's sequence field, then arrival (= the system sequence number).
  const order = new Int32Array(n);
  for (let x = 0; x < n; x++) order[x] = x;
  order.sort((a, b) => {
    const c = compareKeyAt(a, b);
    if (c !== 0) return c;
    if (compareSeqAt !== null) {
      const s = compareSeqAt(a, b);
      if (s !== 0) return s;
    }
    return a - b;
  });

  // Deduplicate: per key the last version in merge order; ignore-delete passes retractions over (a key whose every
  // version retracts leaves nothing). A surviving retraction is written: it deletes the key's older versions.
  const survivors: number[] = [];
  let at = 0;
  while (at < n) {
    let end = at + 1;
    while (end < n && compareKeyAt(order[at]!, order[end]!) === 0) end++;
    for (let k = end - 1; k >= at; k--) {
      const x = order[k]!;
      if (layout.ignoreDelete && isRetract(kinds[x]!)) continue;
      survivors.push(x);
      break;
    }
    at = end;
  }
  const sortedRows = (indexes: ArrayLike<number>): SortedRows | null =>
    indexes.length === 0 ? null : physicalRows(layout, batches, indexes, { batchOf, rowOf, kinds, firstSeq, keyOf });
  return { data: sortedRows(survivors), changelog: layout.changelogInput ? sortedRows(order) : null };
}

/** Paimon's order of one field's values: nulls first, then by value (`sign` −1 reverses the values, not the nulls). */
function nullsFirst(type: DataType, sign: 1 | -1): (x: Value, y: Value) => number {
  return (x, y) => {
    if (x === null || y === null) return x === y ? 0 : x === null ? -1 : 1;
    return sign * compareValues(type, x, y);
  };
}

/** Compares entries a and b of parallel value columns, column by column. */
function columnsComparator(compare: ReadonlyArray<(x: Value, y: Value) => number>, columns: ReadonlyArray<readonly Value[]>): (a: number, b: number) => number {
  if (columns.length === 1) {
    const c0 = compare[0]!;
    const v0 = columns[0]!;
    return (a, b) => c0(v0[a]!, v0[b]!);
  }
  return (a, b) => {
    for (let k = 0; k < columns.length; k++) {
      const c = compare[k]!(columns[k]![a]!, columns[k]![b]!);
      if (c !== 0) return c;
    }
    return 0;
  };
}

function columnOf(b: arrow.RecordBatch, name: string): arrow.Data {
  const at = b.schema.fields.findIndex((f) => f.name === name);
  if (at < 0) throw new LakeError(ErrorKind.Unexpected, `buffered batch has no column ${name}`);
  return b.data.children[at]!;
}

/** The chosen buffered rows (indexes into the concatenation, in output order) in the physical layout. */
function physicalRows(
  layout: KeyValueLayout,
  batches: readonly arrow.RecordBatch[],
  indexes: ArrayLike<number>,
  at: { batchOf: Int32Array; rowOf: Int32Array; kinds: Int8Array; firstSeq: bigint; keyOf: (x: number) => Value[] },
): SortedRows {
  const m = indexes.length;
  const picks: RowPicks = { length: m, batchOf: new Int32Array(m), rowOf: new Int32Array(m) };
  const seq = new BigInt64Array(m);
  const kind = new Int8Array(m);
  let deleteRows = 0;
  let minSeq = 0n;
  let maxSeq = 0n;
  for (let j = 0; j < m; j++) {
    const x = indexes[j]!;
    (picks.batchOf as Int32Array)[j] = at.batchOf[x]!;
    (picks.rowOf as Int32Array)[j] = at.rowOf[x]!;
    const s = at.firstSeq + BigInt(x);
    seq[j] = s;
    if (j === 0 || s < minSeq) minSeq = s;
    if (j === 0 || s > maxSeq) maxSeq = s;
    kind[j] = at.kinds[x]!;
    if (isRetract(kind[j]!)) deleteRows++;
  }
  const valueColumns = layout.schema.fields.map((f) =>
    gatherColumn(
      f.type,
      batches.map((b) => columnOf(b, f.name)),
      picks,
      f.name,
    ),
  );
  const keyColumns = layout.keyFields.map((f) => valueColumns[layout.schema.fields.indexOf(f)]!);
  const children = [
    ...keyColumns,
    arrow.makeData({ type: new arrow.Int64(), length: m, nullCount: 0, data: seq }),
    arrow.makeData({ type: new arrow.Int8(), length: m, nullCount: 0, data: kind }),
    ...valueColumns,
  ];
  const schema = toArrowSchema(layout.fileFields);
  const batch = new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: m, nullCount: 0, children }));
  return { batch, minKey: at.keyOf(indexes[0]!), maxKey: at.keyOf(indexes[m - 1]!), minSequenceNumber: minSeq, maxSequenceNumber: maxSeq, deleteRows };
}

/** The key copies' fields (for statistics): `_KEY_<k>` of each key field. */
export function keyCopyFields(layout: KeyValueLayout): DataField[] {
  return layout.keyFields.map(keyCopyField);
}
