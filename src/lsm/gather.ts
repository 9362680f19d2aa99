/**
 * Gathering chosen rows of several Arrow batches into new columns: what a flush ends with (the rows that survive the
 * merge, in key order). The rows are named by (batch, row) pairs in output order — or by rows alone when every row
 * comes from one batch, the common case of a flush whose builder held the whole buffer.
 *
 * Flat columns whose every source has the output's Arrow layout — fixed-width values (integers, floats, dates,
 * timestamps, decimals), UTF-8 and binary — are copied buffer to buffer (values, offsets and validity bits), which is
 * what a flush of builder-made batches always has, a stretch of consecutive picked rows at a time (`stretchesOf`):
 * 64-bit values as pairs of 32-bit words (never through a BigInt64Array's elements, each of which would be a BigInt),
 * short stretches element by element (a `subarray` per stretch would be an object for the GC), long ones as blocks.
 * Anything else (nested types, dictionary pages or other units from another engine's files) passes through the
 * canonical form of the column's type, value by value.
 */
import * as arrow from "apache-arrow";
import { toArrowType } from "../codec/arrow-schema.ts";
import { makeColumnBuilder } from "../codec/columns/nested-builders.ts";
import { columnReader, type ValueReader } from "../codec/columns/value-readers.ts";
import type { DataType } from "../format/data-types.ts";

/** Rows to gather: the i-th output row is row `rowOf[i]` of batch `batchOf[i]` (of batch 0 when `batchOf` is null). */
export interface RowPicks {
  readonly length: number;
  readonly batchOf: Int32Array | null;
  readonly rowOf: Int32Array;
  /** The same picks as stretches (`stretchesOf`), when the caller found them once for several columns. */
  readonly stretches?: Stretches;
}

/** One column of the picked rows, from the same column (`sources[b]`: its data in batch b) of every batch. */
export function gatherColumn(type: DataType, sources: readonly arrow.Data[], picks: RowPicks, name = "?"): arrow.Data {
  const target = toArrowType(type);
  if (sources.every((d) => arrow.util.compareTypes(d.type, target))) {
    const fast = gatherFlat(target, sources, picks, picks.stretches ?? stretchesOf(picks));
    if (fast !== null) return fast;
  }
  const readers: ValueReader[] = sources.map((d) => columnReader(type, d));
  const out = makeColumnBuilder(type, name, Math.max(1, picks.length));
  const { batchOf, rowOf } = picks;
  for (let i = 0; i < picks.length; i++) out.append(readers[batchOf === null ? 0 : batchOf[i]!]!(rowOf[i]!));
  return out.finish();
}

/** Copies flat columns buffer to buffer; null for layouts it does not take (the caller goes value by value). */
function gatherFlat(type: arrow.DataType, sources: readonly arrow.Data[], picks: RowPicks, stretches: Stretches): arrow.Data | null {
  const n = picks.length;
  const validity = gatherValidity(sources, picks);
  const nullCount = validity === null ? 0 : n - popcount(validity, n);
  const nullBitmap = validity ?? undefined;
  if (arrow.DataType.isUtf8(type) || arrow.DataType.isBinary(type)) {
    const gathered = gatherVarBytes(sources, picks, stretches);
    if (gathered === null) return null;
    return arrow.makeData({ type: type as arrow.Utf8, length: n, nullCount, nullBitmap, valueOffsets: gathered.offsets, data: gathered.data } as never);
  }
  let bytesPerRow: number;
  if (arrow.DataType.isDecimal(type)) bytesPerRow = type.bitWidth / 8;
  else if (arrow.DataType.isInt(type) || arrow.DataType.isFloat(type) || arrow.DataType.isDate(type) || arrow.DataType.isTime(type) || arrow.DataType.isTimestamp(type)) {
    const v = sources[0]?.values as (ArrayBufferView & { BYTES_PER_ELEMENT: number }) | undefined;
    if (v === undefined) return null;
    bytesPerRow = v.BYTES_PER_ELEMENT;
  } else return null;
  const first = sources[0]!.values as ArrayBufferView & { BYTES_PER_ELEMENT: number };
  const bytes = gatherFixed(sources, picks, stretches, bytesPerRow);
  const First = first.constructor as new (b: ArrayBuffer, o: number, l: number) => ArrayBufferView;
  const values = new First(bytes, 0, (n * bytesPerRow) / first.BYTES_PER_ELEMENT);
  return arrow.makeData({ type: type as arrow.Int32, length: n, nullCount, nullBitmap, data: values } as never);
}

/**
 * Words of `wordBytes` bytes over a column's values. Arrow JS slices a Data's value and offset buffers with it (its
 * `offset` counts only in the validity bitmap), so row r's values start at word r · stride.
 */
function wordsOf(d: arrow.Data, wordBytes: number, stride: number): Int32Array | Int16Array | Int8Array {
  const v = d.values as ArrayBufferView;
  const View = wordBytes === 4 ? Int32Array : wordBytes === 2 ? Int16Array : Int8Array;
  return new View(v.buffer as ArrayBuffer, v.byteOffset, d.length * stride);
}

/**
 * The picks as stretches of consecutive rows of one batch, found once for every column: the k-th stretch is `length[k]`
 * rows of batch `batch[k]` from row `row[k]` on. A live bucket's merge picks its compacted run's rows a few at a time
 * between fresh keys: per stretch, not per row, a column then pays its lookups, its checks and its copy loop's start.
 */
export interface Stretches {
  readonly count: number;
  readonly batch: Int32Array;
  readonly row: Int32Array;
  readonly length: Int32Array;
}

/** `reuse`: an earlier result whose arrays are refilled when they are long enough (its reader is done with it). */
export function stretchesOf(picks: RowPicks, reuse?: Stretches): Stretches {
  const { length: n, batchOf, rowOf } = picks;
  const fits = reuse !== undefined && reuse.batch.length >= n;
  const batch = fits ? reuse.batch : new Int32Array(n);
  const row = fits ? reuse.row : new Int32Array(n);
  const length = fits ? reuse.length : new Int32Array(n);
  let count = 0;
  for (let i = 0; i < n; ) {
    const b = batchOf === null ? 0 : batchOf[i]!;
    const r = rowOf[i]!;
    let j = i + 1;
    if (batchOf === null) while (j < n && rowOf[j] === r + (j - i)) j++;
    else while (j < n && rowOf[j] === r + (j - i) && batchOf[j] === b) j++;
    batch[count] = b;
    row[count] = r;
    length[count++] = j - i;
    i = j;
  }
  return { count, batch, row, length };
}

/** Copies shorter than this many elements go element by element: a `subarray` for each would cost more. */
const SET_MIN = 32;

/** The picked rows' fixed-width values (`bytesPerRow` each), copied as 32-bit words or narrower integers. */
function gatherFixed(sources: readonly arrow.Data[], picks: RowPicks, stretches: Stretches, bytesPerRow: number): ArrayBuffer {
  const n = picks.length;
  const wordBytes = Math.min(4, bytesPerRow);
  const stride = bytesPerRow / wordBytes;
  if (wordBytes === 4) return copyStretches(sources.map((d) => wordsOf(d, 4, stride) as Int32Array), new Int32Array(n * stride), stretches, stride);
  if (wordBytes === 2) return copyStretches(sources.map((d) => wordsOf(d, 2, stride) as Int16Array), new Int16Array(n * stride), stretches, stride);
  return copyStretches(sources.map((d) => wordsOf(d, 1, stride) as Int8Array), new Int8Array(n * stride), stretches, stride);
}

/** Each stretch's words into `out`, in order (one element type per call, so element access stays monomorphic). */
function copyStretches<A extends Int32Array | Int16Array | Int8Array>(views: readonly A[], out: A, s: Stretches, stride: number): ArrayBuffer {
  let at = 0;
  for (let k = 0; k < s.count; k++) {
    const src = views[s.batch[k]!]!;
    const from = s.row[k]! * stride;
    const len = s.length[k]! * stride;
    if (len >= SET_MIN) out.set(src.subarray(from, from + len), at);
    else for (let w = 0; w < len; w++) out[at + w] = src[from + w]!;
    at += len;
  }
  return out.buffer as ArrayBuffer;
}

/**
 * The picked rows' variable-width values: offsets and bytes, a stretch at a time (its bytes are contiguous in its
 * source): the bytes' total is summed first, so the output is allocated once at its size; null beyond 2 GiB (the
 * caller goes value by value).
 */
function gatherVarBytes(sources: readonly arrow.Data[], picks: RowPicks, s: Stretches): { offsets: Int32Array; data: Uint8Array } | null {
  const offs = sources.map((d) => d.valueOffsets as Int32Array); // sliced with the Data (see wordsOf)
  const bytes = sources.map((d) => d.values as Uint8Array);
  let total = 0;
  for (let k = 0; k < s.count; k++) {
    const o = offs[s.batch[k]!]!;
    const r = s.row[k]!;
    total += o[r + s.length[k]!]! - o[r]!;
  }
  if (total > 2147483647) return null;
  const offsets = new Int32Array(picks.length + 1);
  const data = new Uint8Array(total);
  let at = 0;
  let i = 0;
  for (let k = 0; k < s.count; k++) {
    const b = s.batch[k]!;
    const o = offs[b]!;
    const src = bytes[b]!;
    const r = s.row[k]!;
    const len = s.length[k]!;
    let from = o[r]!;
    const to = o[r + len]!;
    const shift = at - from;
    for (let j = 1; j <= len; j++) offsets[i + j] = o[r + j]! + shift;
    i += len;
    if (to - from >= SET_MIN) {
      data.set(src.subarray(from, to), at);
      at += to - from;
    } else while (from < to) data[at++] = src[from++]!;
  }
  return { offsets, data };
}

/** The picked rows' validity bits, or null when no source has a null. */
function gatherValidity(sources: readonly arrow.Data[], picks: RowPicks): Uint8Array | null {
  if (sources.every((d) => d.nullCount === 0)) return null;
  const n = picks.length;
  const out = new Uint8Array((n + 7) >> 3);
  const { batchOf, rowOf } = picks;
  for (let i = 0; i < n; i++) {
    const d = sources[batchOf === null ? 0 : batchOf[i]!]!;
    const bits = d.nullBitmap;
    const j = d.offset + rowOf[i]!;
    const valid = d.nullCount === 0 || bits === undefined || bits.length === 0 || (bits[j >> 3]! & (1 << (j & 7))) !== 0;
    if (valid) out[i >> 3]! |= 1 << (i & 7);
  }
  return out;
}

function popcount(bits: Uint8Array, n: number): number {
  let c = 0;
  for (let i = 0; i < n; i++) if ((bits[i >> 3]! & (1 << (i & 7))) !== 0) c++;
  return c;
}
