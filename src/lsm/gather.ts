/**
 * Gathering chosen rows of several Arrow batches into new columns: what a flush ends with (the rows that survive the
 * merge, in key order). The rows are named by (batch, row) pairs in output order — or by rows alone when every row
 * comes from one batch, the common case of a flush whose builder held the whole buffer.
 *
 * Flat columns whose every source has the output's Arrow layout — fixed-width values (integers, floats, dates,
 * timestamps, decimals), UTF-8 and binary — are copied buffer to buffer (values, offsets and validity bits), which is
 * what a flush of builder-made batches always has: 64-bit values as pairs of 32-bit words (never through a
 * BigInt64Array's elements, each of which would be a BigInt), short strings byte by byte (a `subarray` per row would
 * be an object per row for the GC). Anything else (nested types, dictionary pages or other units from another
 * engine's files) passes through the canonical form of the column's type, value by value.
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
}

/** One column of the picked rows, from the same column (`sources[b]`: its data in batch b) of every batch. */
export function gatherColumn(type: DataType, sources: readonly arrow.Data[], picks: RowPicks, name = "?"): arrow.Data {
  const target = toArrowType(type);
  if (sources.every((d) => arrow.util.compareTypes(d.type, target))) {
    const fast = gatherFlat(target, sources, picks);
    if (fast !== null) return fast;
  }
  const readers: ValueReader[] = sources.map((d) => columnReader(type, d));
  const out = makeColumnBuilder(type, name, Math.max(1, picks.length));
  const { batchOf, rowOf } = picks;
  for (let i = 0; i < picks.length; i++) out.append(readers[batchOf === null ? 0 : batchOf[i]!]!(rowOf[i]!));
  return out.finish();
}

/** Copies flat columns buffer to buffer; null for layouts it does not take (the caller goes value by value). */
function gatherFlat(type: arrow.DataType, sources: readonly arrow.Data[], picks: RowPicks): arrow.Data | null {
  const n = picks.length;
  const validity = gatherValidity(sources, picks);
  const nullCount = validity === null ? 0 : n - popcount(validity, n);
  const nullBitmap = validity ?? undefined;
  if (arrow.DataType.isUtf8(type) || arrow.DataType.isBinary(type)) {
    const gathered = gatherVarBytes(sources, picks);
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
  const bytes = gatherFixed(sources, picks, bytesPerRow);
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
 * Picks that continue a stretch this long — consecutive rows of one batch, the usual shape of a live bucket's merge,
 * whose compacted run goes out between a few fresh keys — are copied from there on as one block (`TypedArray.set`)
 * instead of row by row. Rows are copied one by one until a stretch is this long, so picks that alternate between
 * batches (most keys merged) pay one comparison per row for it.
 */
const BLOCK_ROWS = 8;

/** How many picks from `i` on are consecutive rows of the same batch as pick `i` (at least 1). */
export function stretchAt(picks: RowPicks, i: number): number {
  const { length: n, batchOf, rowOf } = picks;
  const r = rowOf[i]! - i;
  let j = i + 1;
  if (batchOf === null) while (j < n && rowOf[j] === r + j) j++;
  else {
    const b = batchOf[i]!;
    while (j < n && rowOf[j] === r + j && batchOf[j] === b) j++;
  }
  return j - i;
}

/** Whether pick `i` (> 0) is the row after pick `i - 1`, in the same batch. */
const continues = (batchOf: Int32Array | null, rowOf: Int32Array, i: number): boolean => rowOf[i] === rowOf[i - 1]! + 1 && (batchOf === null || batchOf[i] === batchOf[i - 1]);

/** The picked rows' fixed-width values (`bytesPerRow` each), copied as 32-bit words or narrower integers. */
function gatherFixed(sources: readonly arrow.Data[], picks: RowPicks, bytesPerRow: number): ArrayBuffer {
  const n = picks.length;
  const wordBytes = Math.min(4, bytesPerRow);
  const stride = bytesPerRow / wordBytes;
  const views = sources.map((d) => wordsOf(d, wordBytes, stride));
  const out = wordBytes === 4 ? new Int32Array(n * stride) : wordBytes === 2 ? new Int16Array(n * stride) : new Int8Array(n * stride);
  const { batchOf, rowOf } = picks;
  let run = 0;
  for (let i = 0; i < n; ) {
    const src = views[batchOf === null ? 0 : batchOf[i]!]!;
    const r = rowOf[i]! * stride;
    if (i > 0 && continues(batchOf, rowOf, i)) {
      if (++run >= BLOCK_ROWS) {
        const len = stretchAt(picks, i);
        out.set(src.subarray(r, r + len * stride), i * stride);
        i += len;
        run = 0;
        continue;
      }
    } else run = 0;
    if (stride === 1) out[i] = src[r]!;
    else if (stride === 2) {
      out[i << 1] = src[r]!;
      out[(i << 1) + 1] = src[r + 1]!;
    } else for (let k = 0; k < stride; k++) out[i * stride + k] = src[r + k]!;
    i++;
  }
  return out.buffer as ArrayBuffer;
}

/**
 * The picked rows' variable-width values: offsets and bytes, in one pass over the rows (the bytes grow by doubling
 * from the sources' mean value size, and are cut to size at the end); null beyond 2 GiB (the caller goes value by
 * value).
 */
function gatherVarBytes(sources: readonly arrow.Data[], picks: RowPicks): { offsets: Int32Array; data: Uint8Array } | null {
  const n = picks.length;
  const { batchOf, rowOf } = picks;
  const offs = sources.map((d) => d.valueOffsets as Int32Array); // sliced with the Data (see wordsOf)
  const bytes = sources.map((d) => d.values as Uint8Array);
  const offsets = new Int32Array(n + 1);
  let sourceBytes = 0;
  let sourceRows = 0;
  for (const d of sources) {
    const o = d.valueOffsets as Int32Array;
    sourceBytes += o[d.length]! - o[0]!;
    sourceRows += d.length;
  }
  let data = new Uint8Array(Math.max(64, Math.ceil((sourceBytes / Math.max(1, sourceRows)) * n * 1.25)));
  let at = 0;
  let run = 0;
  for (let i = 0; i < n; ) {
    const b = batchOf === null ? 0 : batchOf[i]!;
    const o = offs[b]!;
    const src = bytes[b]!;
    const r = rowOf[i]!;
    if (i > 0 && continues(batchOf, rowOf, i)) {
      if (++run >= BLOCK_ROWS) {
        // The rest of a stretch of consecutive rows: their bytes are contiguous, copied at once; offsets shifted.
        const len = stretchAt(picks, i);
        const from = o[r]!;
        const to = o[r + len]!;
        if (at + (to - from) > data.length) {
          const grown = grownTo(data, at, at + (to - from));
          if (grown === null) return null;
          data = grown;
        }
        data.set(src.subarray(from, to), at);
        const shift = at - from;
        for (let k = 1; k <= len; k++) offsets[i + k] = o[r + k]! + shift;
        at += to - from;
        i += len;
        run = 0;
        continue;
      }
    } else run = 0;
    let from = o[r]!;
    const to = o[r + 1]!;
    if (at + (to - from) > data.length) {
      const grown = grownTo(data, at, at + (to - from));
      if (grown === null) return null;
      data = grown;
    }
    if (to - from > 32) {
      data.set(src.subarray(from, to), at);
      at += to - from;
    } else while (from < to) data[at++] = src[from++]!;
    offsets[++i] = at;
  }
  return { offsets, data: at === data.length ? data : data.slice(0, at) };
}

/** `data` (its first `used` bytes) in a buffer of at least `end` bytes, doubled; null beyond 2 GiB. */
function grownTo(data: Uint8Array, used: number, end: number): Uint8Array<ArrayBuffer> | null {
  if (end > 2147483647) return null;
  const grown = new Uint8Array(Math.min(2147483647, Math.max(end, 2 * data.length)));
  grown.set(data.subarray(0, used));
  return grown;
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
