/**
 * Gathering chosen rows of several Arrow batches into new columns: what a flush (the rows that survive the merge,
 * in key order) and a merge read (the winners of each key, across sorted runs) both end with. The rows are named by
 * (batch, row) pairs in output order.
 *
 * Flat columns whose every source has the output's Arrow layout — fixed-width values (integers, floats, dates,
 * timestamps, decimals), UTF-8 and binary — are copied buffer to buffer (values, offsets and validity bits), which is
 * what a flush of builder-made batches always has. Anything else (nested types, dictionary pages or other units from
 * another engine's files) passes through the canonical form of the column's type, value by value.
 */
import * as arrow from "apache-arrow";
import { toArrowType } from "../codec/arrow-schema.ts";
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
  const target = toArrowType(type);
  if (sources.every((d) => arrow.util.compareTypes(d.type, target))) {
    const fast = gatherFlat(target, sources, picks);
    if (fast !== null) return fast;
  }
  const readers: ValueReader[] = sources.map((d) => columnReader(type, d));
  const out = makeColumnBuilder(type, name, Math.max(1, picks.length));
  const { batchOf, rowOf } = picks;
  for (let i = 0; i < picks.length; i++) out.append(readers[batchOf[i]!]!(rowOf[i]!));
  return out.finish();
}

/** Copies flat columns buffer to buffer; null for layouts it does not take (the caller goes value by value). */
function gatherFlat(type: arrow.DataType, sources: readonly arrow.Data[], picks: RowPicks): arrow.Data | null {
  const n = picks.length;
  const validity = gatherValidity(sources, picks);
  const nullCount = validity === null ? 0 : n - popcount(validity, n);
  const { batchOf, rowOf } = picks;
  if (arrow.DataType.isUtf8(type) || arrow.DataType.isBinary(type)) {
    let total = 0;
    for (let i = 0; i < n; i++) {
      const d = sources[batchOf[i]!]!;
      const o = d.valueOffsets as Int32Array;
      const r = d.offset + rowOf[i]!;
      total += o[r + 1]! - o[r]!;
    }
    if (total > 2147483647) return null;
    const offsets = new Int32Array(n + 1);
    const data = new Uint8Array(total);
    let at = 0;
    for (let i = 0; i < n; i++) {
      const d = sources[batchOf[i]!]!;
      const o = d.valueOffsets as Int32Array;
      const r = d.offset + rowOf[i]!;
      const from = o[r]!;
      const to = o[r + 1]!;
      if (to > from) data.set((d.values as Uint8Array).subarray(from, to), at);
      at += to - from;
      offsets[i + 1] = at;
    }
    return arrow.makeData({ type: type as arrow.Utf8, length: n, nullCount, nullBitmap: validity ?? undefined, valueOffsets: offsets, data } as never);
  }
  // Fixed width: copied as 32-bit words (`stride` per row: 2 for 64-bit values, 4 for a decimal) or narrower
  // integers — never through a BigInt64Array's elements, each of which would be a BigInt.
  let bytesPerRow: number;
  if (arrow.DataType.isDecimal(type)) bytesPerRow = type.bitWidth / 8;
  else if (arrow.DataType.isInt(type) || arrow.DataType.isFloat(type) || arrow.DataType.isDate(type) || arrow.DataType.isTime(type) || arrow.DataType.isTimestamp(type)) {
    const v = sources[0]?.values as ArrayBufferView & { BYTES_PER_ELEMENT: number } | undefined;
    if (v === undefined) return null;
    bytesPerRow = v.BYTES_PER_ELEMENT;
  } else return null;
  const wordBytes = Math.min(4, bytesPerRow);
  const stride = bytesPerRow / wordBytes;
  const View = wordBytes === 4 ? Int32Array : wordBytes === 2 ? Int16Array : Int8Array;
  const views = sources.map((d) => {
    const v = d.values as ArrayBufferView;
    return new View(v.buffer as ArrayBuffer, v.byteOffset, v.byteLength / wordBytes);
  });
  const out = new View(n * stride);
  for (let i = 0; i < n; i++) {
    const d = sources[batchOf[i]!]!;
    const src = views[batchOf[i]!]!;
    const r = (d.offset + rowOf[i]!) * stride;
    for (let k = 0; k < stride; k++) out[i * stride + k] = src[r + k]!;
  }
  const First = (sources[0]!.values as ArrayBufferView).constructor as new (b: ArrayBuffer, o: number, l: number) => ArrayBufferView;
  const values = new First(out.buffer as ArrayBuffer, 0, (n * bytesPerRow) / (sources[0]!.values as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT);
  return arrow.makeData({ type: type as arrow.Int32, length: n, nullCount, nullBitmap: validity ?? undefined, data: values } as never);
}

/** The picked rows' validity bits, or null when no source has a null. */
function gatherValidity(sources: readonly arrow.Data[], picks: RowPicks): Uint8Array | null {
  if (sources.every((d) => d.nullCount === 0)) return null;
  const n = picks.length;
  const out = new Uint8Array((n + 7) >> 3);
  for (let i = 0; i < n; i++) {
    const d = sources[picks.batchOf[i]!]!;
    const bits = d.nullBitmap;
    const j = d.offset + picks.rowOf[i]!;
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
