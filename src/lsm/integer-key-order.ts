/**
 * The sort of a flush's most common key, one integer column (TINYINT … BIGINT, DATE, TIME) without a sequence field,
 * without a comparator: the keys are read from the Arrow buffers as doubles (no BigInt per value), and a stable LSD
 * radix sort of their offsets from the smallest key orders the rows by key, then by arrival — the merge order of a
 * key's versions. 11-bit digits; a digit every key shares is skipped, so a range of under 2^22 keys takes two
 * passes and one of under 2^33 three.
 */
import * as arrow from "apache-arrow";

/** Keys whose range (max − min) reaches this are not sorted here: their offsets would not be exact doubles. */
const MAX_RANGE = 2 ** 53;
const DIGIT_BITS = 11;
const DIGITS = 1 << DIGIT_BITS;
const MASK = DIGITS - 1;
const TWO_32 = 4294967296;

/**
 * A single integer key column of every batch (`columns[b]`: its data in batch b, `n` rows in all) as doubles; null
 * when a value is null or beyond ±2^53, or the column is of another type.
 */
export function integerKeyColumn(columns: readonly arrow.Data[], n: number): Float64Array | null {
  const out = new Float64Array(n);
  let i = 0;
  for (const d of columns) {
    if (d.nullCount > 0) return null;
    const t = d.type;
    if (arrow.DataType.isInt(t) && t.bitWidth === 64) {
      const big = d.values as BigInt64Array;
      // Arrow JS slices a Data's values with it: row r is value r, whatever the Data's offset.
      const words = new Int32Array(big.buffer, big.byteOffset, d.length * 2);
      for (let r = 0; r < d.length; r++, i++) {
        const hi = words[2 * r + 1]!;
        if (hi >= 2097152 || hi < -2097152) return null; // |v| ≥ 2^53
        out[i] = hi * TWO_32 + (words[2 * r]! >>> 0);
      }
    } else if (arrow.DataType.isInt(t) || (arrow.DataType.isDate(t) && t.unit === arrow.DateUnit.DAY) || (arrow.DataType.isTime(t) && t.bitWidth === 32)) {
      const v = d.values as Int32Array | Int16Array | Int8Array;
      for (let r = 0; r < d.length; r++, i++) out[i] = v[r]!;
    } else return null;
  }
  return out;
}

/**
 * The rows (indexes into `keys`) in key order, equal keys in index order; null when the keys span 2^53 or more (the
 * caller sorts with the comparator).
 */
export function integerKeyOrder(keys: Float64Array): Int32Array | null {
  const n = keys.length;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const x = keys[i]!;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  if (n === 0) return new Int32Array(0);
  const range = max - min;
  if (range >= MAX_RANGE) return null;
  // Offsets from the minimum as two unsigned 32-bit words (the high one only when the range needs it).
  const lo = new Uint32Array(n);
  const hi = range >= TWO_32 ? new Uint32Array(n) : null;
  if (hi === null) for (let i = 0; i < n; i++) lo[i] = keys[i]! - min;
  else {
    for (let i = 0; i < n; i++) {
      const d = keys[i]! - min;
      const h = Math.floor(d / TWO_32);
      hi[i] = h;
      lo[i] = d - h * TWO_32;
    }
  }
  const passes: Array<{ word: Uint32Array; shift: number }> = [];
  const loBits = hi === null ? bitLength(range) : 32;
  for (let s = 0; s < loBits; s += DIGIT_BITS) passes.push({ word: lo, shift: s });
  if (hi !== null) for (let s = 0, bits = bitLength(Math.floor(range / TWO_32)); s < bits; s += DIGIT_BITS) passes.push({ word: hi, shift: s });
  // Every pass's digit counts in one scan (they do not depend on the order).
  const counts = new Int32Array(passes.length * DIGITS);
  for (let p = 0; p < passes.length; p++) {
    const { word, shift } = passes[p]!;
    const base = p * DIGITS;
    for (let i = 0; i < n; i++) counts[base + ((word[i]! >>> shift) & MASK)]!++;
  }
  let from = new Int32Array(n);
  for (let i = 0; i < n; i++) from[i] = i;
  let to = new Int32Array(n);
  for (let p = 0; p < passes.length; p++) {
    const base = p * DIGITS;
    // A digit every key shares leaves the order as it is.
    let at = 0;
    let shared = false;
    for (let d = 0; d < DIGITS; d++) {
      const c = counts[base + d]!;
      if (c === n) shared = true;
      counts[base + d] = at;
      at += c;
    }
    if (shared) continue;
    const { word, shift } = passes[p]!;
    for (let i = 0; i < n; i++) {
      const x = from[i]!;
      to[counts[base + ((word[x]! >>> shift) & MASK)]!++] = x;
    }
    const t = from;
    from = to;
    to = t;
  }
  return from;
}

/** Bits needed for a non-negative integer below 2^53. */
function bitLength(x: number): number {
  let bits = 0;
  while (x >= 1) {
    x = Math.floor(x / 2);
    bits++;
  }
  return bits;
}
