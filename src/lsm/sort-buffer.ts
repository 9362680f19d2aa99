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
import { BUFFER_KIND_FIELD, keyCopyField, keyFields, keyValueFields, VALUE_KIND_FIELD } from "./key-value-fields.ts";
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
    bufferFields: [...schema.fields, BUFFER_KIND_FIELD],
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
  const kinds = new Int8Array(n);
  let i = 0;
  for (const [bi, b] of batches.entries()) {
    const kindData = columnOf(b, VALUE_KIND_FIELD.name);
    const kindValues = kindData.values as Int8Array;
    // A null kind is +I (rows written without one: upserts).
    const kindNulls = kindData.nullCount > 0 ? kindData.nullBitmap : undefined;
    for (let r = 0; r < b.numRows; r++, i++) {
      batchOf[i] = bi;
      rowOf[i] = r;
      const j = kindData.offset + r;
      kinds[i] = kindNulls !== undefined && (kindNulls[j >> 3]! & (1 << (j & 7))) === 0 ? 0 : kindValues[j]!;
    }
  }
  // Key order, then merge order: the user's sequence field, then arrival (= the system sequence number). One integer
  // key without a sequence field (the common case) sorts natively; anything else with Paimon's comparator.
  const integerKeys = layout.sequence === null && layout.keyFields.length === 1 ? integerKeyColumn(batches, layout.keyFields[0]!.name, n) : null;
  let order: Int32Array | null = integerKeys === null ? null : compactIntegerOrder(integerKeys);
  let keyOf: (x: number) => Value[];
  let sameKey: (a: number, b: number) => boolean;
  if (order !== null && integerKeys !== null) {
    const readers = batches.map((b) => columnReader(layout.keyFields[0]!.type, columnOf(b, layout.keyFields[0]!.name)));
    keyOf = (x) => [readers[batchOf[x]!]!(rowOf[x]!)];
    sameKey = (a, b) => integerKeys[a] === integerKeys[b];
  } else {
    const keys = layout.keyFields.map(() => new Array<Value>(n));
    const seqValues = layout.sequence === null ? null : layout.sequence.fields.map(() => new Array<Value>(n));
    i = 0;
    for (const b of batches) {
      const keyReaders = layout.keyFields.map((f) => columnReader(f.type, columnOf(b, f.name)));
      const seqReaders = layout.sequence?.fields.map((f) => columnReader(f.type, columnOf(b, f.name))) ?? [];
      for (let r = 0; r < b.numRows; r++, i++) {
        for (let k = 0; k < keyReaders.length; k++) keys[k]![i] = keyReaders[k]!(r);
        if (seqValues !== null) for (let k = 0; k < seqReaders.length; k++) seqValues[k]![i] = seqReaders[k]!(r);
      }
    }
    keyOf = (x) => keys.map((col) => col[x]!);
    const compareKeyAt = columnsComparator(layout.keyFields.map((f) => nullsFirst(f.type, 1)), keys);
    const compareSeqAt = layout.sequence === null ? null : columnsComparator(layout.sequence.fields.map((f) => nullsFirst(f.type, layout.sequence!.ascending ? 1 : -1)), seqValues!);
    sameKey = (a, b) => compareKeyAt(a, b) === 0;
    order = new Int32Array(n);
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
  }

  // Deduplicate: per key the last version in merge order; ignore-delete passes retractions over (a key whose every
  // version retracts leaves nothing). A surviving retraction is written: it deletes the key's older versions.
  const survivors: number[] = [];
  let at = 0;
  while (at < n) {
    let end = at + 1;
    while (end < n && sameKey(order[at]!, order[end]!)) end++;
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

/**
 * A single integer key column (TINYINT … BIGINT, DATE, TIME) of every batch as doubles, read from the Arrow buffers
 * (no BigInt per value); null when a value is null or beyond ±2^53, or the column is of another type.
 */
function integerKeyColumn(batches: readonly arrow.RecordBatch[], name: string, n: number): Float64Array | null {
  const out = new Float64Array(n);
  let i = 0;
  for (const b of batches) {
    const d = columnOf(b, name);
    if (d.nullCount > 0) return null;
    const t = d.type;
    if (arrow.DataType.isInt(t) && t.bitWidth === 64) {
      const words = new Int32Array((d.values as BigInt64Array).buffer, (d.values as BigInt64Array).byteOffset, (d.values as BigInt64Array).length * 2);
      for (let r = 0; r < b.numRows; r++, i++) {
        const hi = words[2 * (d.offset + r) + 1]!;
        if (hi >= 2097152 || hi < -2097152) return null; // |v| ≥ 2^53
        out[i] = hi * 4294967296 + (words[2 * (d.offset + r)]! >>> 0);
      }
    } else if (arrow.DataType.isInt(t) || (arrow.DataType.isDate(t) && t.unit === arrow.DateUnit.DAY) || (arrow.DataType.isTime(t) && t.bitWidth === 32)) {
      const v = d.values as Int32Array;
      for (let r = 0; r < b.numRows; r++, i++) out[i] = v[d.offset + r]!;
    } else return null;
  }
  return out;
}

/**
 * The sort of the common case without a comparator: when (max − min + 1) × n is below 2^53, (key − min) × n + index
 * is exact in a double, and a native sort of those numbers orders by key, then by arrival. Null when it is not.
 */
function compactIntegerOrder(keys: Float64Array): Int32Array | null {
  const n = keys.length;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const x = keys[i]!;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  if (n === 0 || (max - min + 1) * n >= 2 ** 53) return null;
  const packed = new Float64Array(n);
  for (let i = 0; i < n; i++) packed[i] = (keys[i]! - min) * n + i;
  packed.sort();
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = packed[i]! % n;
  return order;
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
