/**
 * Paimon's statistics modes (`metadata.stats-mode`, per column `fields.<name>.stats-mode`): what a data file's value
 * statistics keep of a column's exact min/max/null count.
 *
 * - `none`: nothing — the column is left out of the file's statistics (dense mode: not in `_VALUE_STATS_COLS`).
 * - `counts`: the null count only; min and max are null ("unknown": readers skip nothing on them).
 * - `full`: the exact min and max.
 * - `truncate(N)` (Paimon's default, N = 16): strings (CHAR, VARCHAR) and binaries (BINARY, VARBINARY) are cut to
 *   a bound of at most N characters (code points) or N bytes; every other type is kept exact (numbers and NaN
 *   included: truncation does not apply to them).
 *
 * Truncation keeps the bounds sound — min ≤ every value ≤ max in Paimon's order (unsigned UTF-8 bytes = code
 * points, unsigned bytes) — which is what pypaimon's and Java Paimon's file skipping rely on:
 * - min: the first N code points (bytes). A prefix never sorts after the value.
 * - max: the value itself when it has at most N code points (bytes). Otherwise its first N code points with the
 *   last one incremented; when that code point cannot be incremented (U+10FFFF; byte 0xFF) the one before it is
 *   incremented and the rest dropped, and so on. Any string starting with the incremented prefix sorts after
 *   every string starting with the original prefix. When no code point (byte) can be incremented there is no short
 *   upper bound: the column's min and max are both null (unknown), as Paimon does.
 * - Incrementing a code point that lands in the surrogate range (U+D7FF + 1) jumps to U+E000: surrogates are not
 *   characters and have no UTF-8 form (Java appends the lone surrogate there, which its UTF-8 encoder turns into
 *   '?', a bound *below* the value; we keep a sound bound instead).
 *
 * Statistics are computed exact per file (src/codec/stats.ts) and cut here once, as Paimon converts the
 * statistics it reads from a Parquet footer: the cut of an exact min/max is the same bound the per-value collector
 * reaches, or a tighter one.
 */
import { dataInvalid } from "../errors.ts";
import type { DataType } from "../format/data-types.ts";
import type { Value } from "../format/values.ts";

/** A parsed statistics mode, as a plain value (it travels to the encoding workers by structured clone). */
export type StatsMode = { kind: "none" } | { kind: "counts" } | { kind: "full" } | { kind: "truncate"; length: number };

/** Paimon's default `metadata.stats-mode`. */
export const DEFAULT_STATS_MODE = "truncate(16)";

/** Parses `none`, `counts`, `full` or `truncate(N)` (N > 0), case-insensitive as in Paimon. */
export function parseStatsMode(text: string): StatsMode {
  const t = text.trim().toLowerCase();
  if (t === "none" || t === "counts" || t === "full") return { kind: t };
  const m = /^truncate\((\d+)\)$/.exec(t);
  if (m !== null) {
    const length = Number(m[1]);
    if (length > 0 && Number.isSafeInteger(length)) return { kind: "truncate", length };
  }
  throw dataInvalid(`'${text}' is not a statistics mode (none, counts, full, truncate(N) with N > 0)`);
}

/** The mode of each column: `fields.<name>.stats-mode`, else the table's `metadata.stats-mode`. */
export function columnStatsModes(options: { get(key: string): string | undefined }, columns: readonly string[]): StatsMode[] {
  const table = parseStatsMode(options.get("metadata.stats-mode") ?? DEFAULT_STATS_MODE);
  return columns.map((c) => {
    const own = options.get(`fields.${c}.stats-mode`);
    return own === undefined ? table : parseStatsMode(own);
  });
}

/** One column's exact statistics as the mode keeps them (`none` is the caller's business: the column is left out). */
export function applyStatsMode(type: DataType, mode: StatsMode, min: Value, max: Value, nullCount: number): { min: Value; max: Value; nullCount: number } {
  switch (mode.kind) {
    case "none":
    case "counts":
      return { min: null, max: null, nullCount };
    case "full":
      return { min, max, nullCount };
    case "truncate": {
      const root = type.root;
      const isString = root === "CHAR" || root === "VARCHAR";
      const isBinary = root === "BINARY" || root === "VARBINARY";
      if ((!isString && !isBinary) || min === null || max === null) return { min, max, nullCount };
      const lo = isString ? truncateStringMin(min as string, mode.length) : truncateBytesMin(min as Uint8Array, mode.length);
      const hi = isString ? truncateStringMax(max as string, mode.length) : truncateBytesMax(max as Uint8Array, mode.length);
      // No short upper bound: the column's range is unknown (a lone min would still be sound, but Paimon drops both).
      if (hi === null) return { min: null, max: null, nullCount };
      return { min: lo, max: hi, nullCount };
    }
  }
}

/** Index in `s` (UTF-16 units) after its first `n` code points, or −1 when it has no more than `n`. */
function codePointCut(s: string, n: number): number {
  // Fast exit: a string of at most n UTF-16 units has at most n code points.
  if (s.length <= n) return -1;
  let i = 0;
  for (let k = 0; k < n; k++) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1)) ? 2 : 1;
    if (i >= s.length) return -1;
  }
  return i;
}

const isLowSurrogate = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/** A lower bound of `s` of at most `n` code points: its prefix. */
export function truncateStringMin(s: string, n: number): string {
  const cut = codePointCut(s, n);
  return cut < 0 ? s : s.slice(0, cut);
}

/** An upper bound of `s` of at most `n` code points, or null when there is none (see the module comment). */
export function truncateStringMax(s: string, n: number): string | null {
  const cut = codePointCut(s, n);
  if (cut < 0) return s;
  const points = Array.from(s.slice(0, cut), (ch) => ch.codePointAt(0)!);
  for (let i = points.length - 1; i >= 0; i--) {
    let next = points[i]! + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
    if (next <= 0x10ffff) {
      let out = "";
      for (let k = 0; k < i; k++) out += String.fromCodePoint(points[k]!);
      return out + String.fromCodePoint(next);
    }
  }
  return null;
}

/** A lower bound of `b` of at most `n` bytes: its prefix. */
export function truncateBytesMin(b: Uint8Array, n: number): Uint8Array {
  return b.length <= n ? b : b.slice(0, n);
}

/** An upper bound of `b` of at most `n` bytes, or null when its first `n` bytes are all 0xFF. */
export function truncateBytesMax(b: Uint8Array, n: number): Uint8Array | null {
  if (b.length <= n) return b;
  for (let i = n - 1; i >= 0; i--) {
    if (b[i] !== 0xff) {
      const out = b.slice(0, i + 1);
      out[i]!++;
      return out;
    }
  }
  return null;
}
