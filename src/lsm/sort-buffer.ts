/**
 * A bucket's write buffer at its flush, as Java's SortBufferWriteBuffer + MergeTreeWriter.flushWriteBuffer do it:
 * the buffered rows (in arrival order; row i takes sequence number firstSeq + i, so every row written takes one,
 * merged away or not) are sorted by key — Paimon's key order, then the versions' merge order — and folded per key
 * through the table's merge function (src/lsm/merge-functions/: deduplicate's inlined here, the hot path; the
 * others' rows built from several versions — for partial-update the fold of a flush's partial rows); what survives
 * becomes one level-0 sorted run in Paimon's physical layout (`_KEY_`
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
import { gatherColumn, stretchesOf, type RowPicks } from "./gather.ts";
import { integerKeyColumn, integerKeyOrder } from "./integer-key-order.ts";
import { compareValues } from "../codec/stats.ts";
import { BUFFER_KIND_FIELD, keyCopyField, keyFields, keyValueFields, VALUE_KIND_FIELD } from "./key-value-fields.ts";
import { sequenceFieldSpec, type SequenceFieldSpec } from "./merge-order.ts";
import { isRetract } from "./row-kind.ts";
import { TableOptions } from "../options.ts";
import { makeColumnBuilder } from "../codec/columns/nested-builders.ts";
import type { ValueReader } from "../codec/columns/value-readers.ts";
import { mergeEngineOf } from "./merge-functions/merge-engine.ts";
import { isBuilt, type MergeEngine, type VersionAccess } from "./merge-functions/merge-function.ts";

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
  /** The merge engine whose function folds each key's buffered versions. */
  engine: MergeEngine;
  /** `ignore-delete`: retractions are dropped as they come (Java's RowKindFilter drops them before the buffer). */
  ignoreDelete: boolean;
  /** `changelog-producer = input`: the unfolded rows are written too. */
  changelogInput: boolean;
}

export function keyValueLayout(schema: TableSchema): KeyValueLayout {
  const options = new TableOptions(schema.options);
  const engine = mergeEngineOf(schema);
  return {
    schema,
    bufferFields: [...schema.fields, BUFFER_KIND_FIELD],
    keyFields: keyFields(schema),
    fileFields: keyValueFields(schema),
    sequence: sequenceFieldSpec(schema),
    engine,
    ignoreDelete: engine.ignoreDelete,
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
  const at = positionsOf(batches, n);
  const kinds = kindsOf(batches, n);
  // Key order, then merge order: the user's sequence field, then arrival (= the system sequence number). One integer
  // key without a sequence field (the common case) sorts without a comparator; anything else with Paimon's.
  const keyField = layout.keyFields[0]!;
  const integerKeys =
    layout.sequence === null && layout.keyFields.length === 1
      ? integerKeyColumn(
          batches.map((b) => columnOf(b, keyField.name)),
          n,
        )
      : null;
  let order = integerKeys === null ? null : integerKeyOrder(integerKeys);
  let keyOf: (x: number) => Value[];
  let sameKey: (a: number, b: number) => boolean;
  const integerOrdered = order !== null && integerKeys !== null;
  if (order !== null && integerKeys !== null) {
    const readers = batches.map((b) => columnReader(keyField.type, columnOf(b, keyField.name)));
    keyOf = (x) => [readers[at.batchOf === null ? 0 : at.batchOf[x]!]!(at.rowOf === null ? x : at.rowOf[x]!)];
    sameKey = (a, b) => integerKeys[a] === integerKeys[b];
  } else {
    const keys = layout.keyFields.map(() => new Array<Value>(n));
    const seqValues = layout.sequence === null ? null : layout.sequence.fields.map(() => new Array<Value>(n));
    let i = 0;
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
    const sorted = new Int32Array(n);
    for (let x = 0; x < n; x++) sorted[x] = x;
    sorted.sort((a, b) => {
      const c = compareKeyAt(a, b);
      if (c !== 0) return c;
      if (compareSeqAt !== null) {
        const s = compareSeqAt(a, b);
        if (s !== 0) return s;
      }
      return a - b;
    });
    order = sorted;
    sameKey = (a, b) => compareKeyAt(a, b) === 0;
  }
  const source: RowSource = { ...at, kinds, firstSeq, keyOf, built: null };
  const sortedRows = (indexes: Int32Array): SortedRows | null => (indexes.length === 0 ? null : physicalRows(layout, batches, indexes, source));
  let data: SortedRows | null;
  if (layout.engine.name === "deduplicate") {
    // Deduplicate's function inlined (the hot path: no value is read, nothing is built).
    data = sortedRows(integerOrdered ? foldIntegerKeys(order, integerKeys!, kinds, layout.ignoreDelete) : fold(order, sameKey, kinds, layout.ignoreDelete));
  } else {
    data = foldThroughEngine(layout, batches, order, sameKey, source);
  }
  return { data, changelog: layout.changelogInput ? sortedRows(order) : null };
}

/**
 * The fold of any engine, through its merge function: per key, one version passes as it is (Java's
 * ReducerMergeFunctionWrapper), several are merged. Built rows go into one more batch after the buffered ones, so
 * the output gathers every surviving row alike (a built row's index is n + its place in that batch).
 */
function foldThroughEngine(layout: KeyValueLayout, batches: readonly arrow.RecordBatch[], order: Int32Array, sameKey: (a: number, b: number) => boolean, source: RowSource): SortedRows | null {
  const n = order.length;
  const fields = layout.schema.fields;
  const readers: Array<ValueReader[] | undefined> = new Array<ValueReader[] | undefined>(fields.length);
  const access: VersionAccess<number> = {
    kind: (x) => source.kinds[x]!,
    sequence: (x) => source.firstSeq + BigInt(x),
    value: (x, k) => {
      const r = (readers[k] ??= batches.map((b) => columnReader(fields[k]!.type, columnOf(b, fields[k]!.name))));
      return r[source.batchOf === null ? 0 : source.batchOf[x]!]!(source.rowOf === null ? x : source.rowOf[x]!);
    },
  };
  const merge = layout.engine.create(access, fields);
  const out = new Int32Array(n);
  let m = 0;
  const builders = fields.map((f) => makeColumnBuilder(f.type, f.name, 16));
  const builtKinds: number[] = [];
  const builtSeqs: bigint[] = [];
  const builtFrom: number[] = [];
  const group: number[] = [];
  let at = 0;
  while (at < n) {
    let end = at + 1;
    while (end < n && sameKey(order[at]!, order[end]!)) end++;
    group.length = 0;
    for (let k = at; k < end; k++) if (!(layout.ignoreDelete && isRetract(source.kinds[order[k]!]!))) group.push(order[k]!);
    at = end;
    if (group.length === 0) continue;
    if (group.length === 1) {
      out[m++] = group[0]!;
      continue;
    }
    merge.reset();
    for (const x of group) merge.add(x);
    const r = merge.result();
    if (r === null) continue;
    if (!isBuilt(r)) {
      out[m++] = r;
      continue;
    }
    out[m++] = n + builtKinds.length;
    r.values.forEach((v, k) => builders[k]!.append(v));
    builtKinds.push(r.kind);
    builtSeqs.push(r.sequence);
    builtFrom.push(r.from);
  }
  if (m === 0) return null;
  if (builtKinds.length === 0) return physicalRows(layout, batches, out.subarray(0, m), source);
  // The built rows as one more batch (the buffer's columns: the table's, then the kind).
  const b = builtKinds.length;
  const builtSchema = toArrowSchema(layout.bufferFields);
  const children = [...builders.map((x) => x.finish()), arrow.makeData({ type: new arrow.Int8(), length: b, nullCount: 0, data: Int8Array.from(builtKinds) })];
  const built = new arrow.RecordBatch(builtSchema, arrow.makeData({ type: new arrow.Struct(builtSchema.fields), length: b, nullCount: 0, children }));
  const batchOf = new Int32Array(n + b);
  const rowOf = new Int32Array(n + b);
  const kinds = new Int8Array(n + b);
  if (source.batchOf !== null) batchOf.set(source.batchOf);
  if (source.rowOf !== null) rowOf.set(source.rowOf);
  else for (let x = 0; x < n; x++) rowOf[x] = x;
  kinds.set(source.kinds);
  for (let j = 0; j < b; j++) {
    batchOf[n + j] = batches.length;
    rowOf[n + j] = j;
    kinds[n + j] = builtKinds[j]!;
  }
  const keyOf = (x: number): Value[] => source.keyOf(x < n ? x : builtFrom[x - n]!);
  const built_ = { from: n, sequences: BigInt64Array.from(builtSeqs) };
  return physicalRows(layout, [...batches, built], out.subarray(0, m), { batchOf, rowOf, kinds, firstSeq: source.firstSeq, keyOf, built: built_ });
}

/** Where row x of the concatenation lives: with one batch, row x of it (both null); else the arrays. */
interface Positions {
  batchOf: Int32Array | null;
  rowOf: Int32Array | null;
}

function positionsOf(batches: readonly arrow.RecordBatch[], n: number): Positions {
  if (batches.length === 1) return { batchOf: null, rowOf: null };
  const batchOf = new Int32Array(n);
  const rowOf = new Int32Array(n);
  let i = 0;
  for (let bi = 0; bi < batches.length; bi++) {
    for (let r = 0; r < batches[bi]!.numRows; r++, i++) {
      batchOf[i] = bi;
      rowOf[i] = r;
    }
  }
  return { batchOf, rowOf };
}

/** The kind of every buffered row; a null kind is +I (rows written without one: upserts). */
function kindsOf(batches: readonly arrow.RecordBatch[], n: number): Int8Array {
  const kinds = new Int8Array(n); // zeros: +I
  let i = 0;
  for (const b of batches) {
    const kindData = columnOf(b, VALUE_KIND_FIELD.name);
    if (kindData.nullCount === b.numRows) {
      i += b.numRows;
      continue;
    }
    const kindValues = kindData.values as Int8Array;
    const kindNulls = kindData.nullCount > 0 ? kindData.nullBitmap : undefined;
    // The values are sliced with the Data; its offset counts only in the validity bitmap.
    for (let r = 0; r < b.numRows; r++, i++) {
      const j = kindData.offset + r;
      kinds[i] = kindNulls !== undefined && (kindNulls[j >> 3]! & (1 << (j & 7))) === 0 ? 0 : kindValues[r]!;
    }
  }
  return kinds;
}

/**
 * Deduplicate: per key the last version in merge order; ignore-delete passes retractions over (a key whose every
 * version retracts leaves nothing). A surviving retraction is written: it deletes the key's older versions.
 */
function fold(order: Int32Array, sameKey: (a: number, b: number) => boolean, kinds: Int8Array, ignoreDelete: boolean): Int32Array {
  const n = order.length;
  const out = new Int32Array(n);
  let m = 0;
  let at = 0;
  while (at < n) {
    let end = at + 1;
    while (end < n && sameKey(order[at]!, order[end]!)) end++;
    for (let k = end - 1; k >= at; k--) {
      const x = order[k]!;
      if (ignoreDelete && isRetract(kinds[x]!)) continue;
      out[m++] = x;
      break;
    }
    at = end;
  }
  return out.subarray(0, m);
}

/** `fold` of integer keys, compared inline. */
function foldIntegerKeys(order: Int32Array, keys: Float64Array, kinds: Int8Array, ignoreDelete: boolean): Int32Array {
  if (ignoreDelete) return fold(order, (a, b) => keys[a] === keys[b], kinds, true);
  const n = order.length;
  const out = new Int32Array(n);
  let m = 0;
  for (let k = 0; k < n; k++) {
    const x = order[k]!;
    // The last of each run of equal keys.
    if (k + 1 === n || keys[order[k + 1]!] !== keys[x]) out[m++] = x;
  }
  return out.subarray(0, m);
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
/** The rows a flush chooses from: where each lives, its kind, key and sequence number. */
interface RowSource extends Positions {
  kinds: Int8Array;
  firstSeq: bigint;
  keyOf: (x: number) => Value[];
  /** Row x's sequence number is `firstSeq + x`, but for the built rows from `built.from` on: theirs. */
  built: { from: number; sequences: BigInt64Array } | null;
}

function physicalRows(layout: KeyValueLayout, batches: readonly arrow.RecordBatch[], indexes: Int32Array, at: RowSource): SortedRows {
  const m = indexes.length;
  let picks: RowPicks;
  if (at.batchOf === null || at.rowOf === null) picks = { length: m, batchOf: null, rowOf: indexes };
  else {
    const batchOf = new Int32Array(m);
    const rowOf = new Int32Array(m);
    for (let j = 0; j < m; j++) {
      const x = indexes[j]!;
      batchOf[j] = at.batchOf[x]!;
      rowOf[j] = at.rowOf[x]!;
    }
    picks = { length: m, batchOf, rowOf };
  }
  const kind = new Int8Array(m);
  let deleteRows = 0;
  const built = at.built;
  const from = built === null ? Infinity : built.from;
  // The sequence range of the buffered rows chosen (row x's is firstSeq + x), then of the built ones.
  let minX = Infinity;
  let maxX = -1;
  let maxIndex = 0;
  for (let j = 0; j < m; j++) {
    const x = indexes[j]!;
    if (x < from) {
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
    }
    if (x > maxIndex) maxIndex = x;
    const k = at.kinds[x]!;
    kind[j] = k;
    if (isRetract(k)) deleteRows++;
  }
  // Built rows' places are filled with their own numbers (the last merged version's, which need not be the largest).
  const seq = sequenceColumn(at.firstSeq, indexes, maxIndex);
  let minSeq: bigint | null = maxX < 0 ? null : at.firstSeq + BigInt(minX);
  let maxSeq: bigint | null = maxX < 0 ? null : at.firstSeq + BigInt(maxX);
  if (built !== null) {
    for (let j = 0; j < m; j++) {
      const x = indexes[j]!;
      if (x < from) continue;
      const s = built.sequences[x - from]!;
      seq[j] = s;
      if (minSeq === null || s < minSeq) minSeq = s;
      if (maxSeq === null || s > maxSeq) maxSeq = s;
    }
  }
  // Stretches found once for every column.
  const columnPicks: RowPicks = { ...picks, stretches: stretchesOf(picks) };
  const valueColumns = layout.schema.fields.map((f) =>
    gatherColumn(
      f.type,
      batches.map((b) => columnOf(b, f.name)),
      columnPicks,
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
  return {
    batch,
    minKey: at.keyOf(indexes[0]!),
    maxKey: at.keyOf(indexes[m - 1]!),
    minSequenceNumber: minSeq!,
    maxSequenceNumber: maxSeq!,
    deleteRows,
  };
}

/** Sequence numbers `firstSeq + x` of the rows `indexes` (each below `maxX + 1`): doubles into 32-bit words while exact. */
function sequenceColumn(firstSeq: bigint, indexes: Int32Array, maxX: number): BigInt64Array {
  const m = indexes.length;
  const seq = new BigInt64Array(m);
  if (firstSeq < 0n || firstSeq + BigInt(maxX) > BigInt(Number.MAX_SAFE_INTEGER)) {
    for (let j = 0; j < m; j++) seq[j] = firstSeq + BigInt(indexes[j]!);
    return seq;
  }
  const words = new Int32Array(seq.buffer);
  const base = Number(firstSeq);
  for (let j = 0; j < m; j++) {
    const s = base + indexes[j]!;
    const hi = Math.floor(s / 4294967296);
    words[2 * j] = (s - hi * 4294967296) | 0;
    words[2 * j + 1] = hi;
  }
  return seq;
}

/** The key copies' fields (for statistics): `_KEY_<k>` of each key field. */
export function keyCopyFields(layout: KeyValueLayout): DataField[] {
  return layout.keyFields.map(keyCopyField);
}
