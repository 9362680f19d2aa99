/**
 * Partition directory names and partition specs (paimon-format.md §1.3).
 *
 * Readers recompute every data file's directory from the manifest's partition row, so `partitionPath` must
 * produce exactly what Java's `InternalRowPartitionComputer.generatePartValues` + `PartitionPathUtils
 * .generatePartitionPath` produce (Java is the reference; pypaimon uses Python `str()` and no escaping):
 * - value text: with `partition.legacy-name=true` (Java's default) the internal value's `toString()` (DATE as
 *   int days, TIME as int millis, TIMESTAMP as `LocalDateTime.toString()`); otherwise CAST(… AS STRING)
 *   (DATE `yyyy-MM-dd`, TIMESTAMP `yyyy-MM-dd HH:mm:ss[.f]`, TIME `HH:mm:ss[.f]`);
 * - null, empty or whitespace-only text (Java `Character.isWhitespace`) → the default partition name;
 * - keys and values escaped: 0x00–0x1F, 0x7F and the characters " # % ' * / : = ? \ { } [ ] ^ become `%XX`
 *   (uppercase hex); space and non-ASCII are kept;
 * - `k1=v1/k2=v2`, in partition-key order, no trailing slash ("" for an unpartitioned table).
 *
 * Known gap: Java casts TIMESTAMP_LTZ to text in the JVM's default time zone when legacy names are off; this
 * module uses UTC.
 *
 * `parsePartitionSpec` turns CLI text `k=v,k2=v2` into canonical values, one per partition key.
 */
import { ErrorKind, LakeError, dataInvalid } from "../errors.ts";
import { typeToSql, type DataType } from "./data-types.ts";
import { Timestamp, toCanonical, formatDecimal, type Value } from "./values.ts";

export const DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__";

export interface PartitionPathOptions {
  /** `partition.default-name`. */
  defaultName: string;
  /** `partition.legacy-name` (Java default: true). */
  legacyName: boolean;
}

// ---------------------------------------------------------------------------------------------------------------
// Escaping (Java PartitionPathUtils)

const ESCAPED = new Uint8Array(128);
for (let c = 0; c < 0x20; c++) ESCAPED[c] = 1;
for (const ch of "\"#%'*/:=?\\\u007f{}[]^") ESCAPED[ch.charCodeAt(0)] = 1;

/** Java `PartitionPathUtils.escapePathName`: `%XX` for control characters and path/URI specials. */
export function escapePathName(s: string): string {
  if (s.length === 0) throw dataInvalid("a partition path name must not be empty");
  let out: string | undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 128 && ESCAPED[c] === 1) {
      out ??= s.slice(0, i);
      out += "%" + c.toString(16).toUpperCase().padStart(2, "0");
    } else if (out !== undefined) {
      out += s[i];
    }
  }
  return out ?? s;
}

/**
 * Java `PartitionPathUtils.unescapePathName`: every `%` followed by two characters that Java's
 * `Integer.parseInt(…, 16)` reads as a non-negative number becomes that character; anything else is kept.
 */
export function unescapePathName(s: string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "%" && i + 2 < s.length) {
      const pair = s.slice(i + 1, i + 3);
      // Java's parseInt also accepts a sign: "+5" is 5, "-0" is 0; a negative code leaves the text alone.
      if (/^[+-]?[0-9a-fA-F]+$/.test(pair)) {
        const code = parseInt(pair, 16);
        if (code >= 0) {
          out += String.fromCharCode(code);
          i += 2;
          continue;
        }
      }
    }
    out += c;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Value → text

/** Java `Character.isWhitespace` (unlike JS `\s`: includes U+001C–U+001F, excludes no-break spaces and U+FEFF). */
function isJavaWhitespace(c: number): boolean {
  return (
    (c >= 0x09 && c <= 0x0d) ||
    (c >= 0x1c && c <= 0x20) ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x2006) ||
    (c >= 0x2008 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x205f ||
    c === 0x3000
  );
}

/** Java `StringUtils.isNullOrWhitespaceOnly`. */
export function isNullOrWhitespaceOnly(s: string | null): boolean {
  if (s === null) return true;
  for (let i = 0; i < s.length; i++) if (!isJavaWhitespace(s.charCodeAt(i))) return false;
  return true;
}

/**
 * Java (JDK 19+) `Double.toString` / `Float.toString` digit selection, done exactly with BigInt: among the decimals
 * that read back as `x`, take those of minimal length m (lengths 1 and 2 when m = 1), then the one closest to `x`,
 * ties to an even last digit. JS `toString` differs for doubles like 5e-324 (Java: 4.9E-324), and float values
 * have no JS shortest form at all. Returns the significant digits (no trailing zeros) and the decimal exponent
 * of the first digit.
 */
function javaShortestDigits(x: number, isFloat: boolean): { digits: string; exp10: number } {
  // All values of the format are integers once scaled by 2^S; midpoints need one more bit.
  const S = isFloat ? 150n : 1075n;
  const bitsOf = (v: number): bigint => {
    if (isFloat) {
      const f = new Float32Array([v]);
      return BigInt(new Uint32Array(f.buffer)[0]!);
    }
    const d = new Float64Array([v]);
    return new BigUint64Array(d.buffer)[0]!;
  };
  const mantBits = isFloat ? 23n : 52n;
  const expMax = isFloat ? 0xffn : 0x7ffn;
  const scaled = (bits: bigint): bigint => {
    const e = bits >> mantBits;
    const m = bits & ((1n << mantBits) - 1n);
    // Subnormal (e = 0): m·2^(1-bias-mant); normal: (2^mant + m)·2^(e-bias-mant); scaled by 2^S both shifts are ≥ 0.
    return e === 0n ? m << 1n : ((1n << mantBits) | m) << e;
  };
  const bits = bitsOf(x);
  const X = scaled(bits);
  const P = bits === 0n ? -X : scaled(bits - 1n);
  const Q = (bits + 1n) >> mantBits === expMax ? X + (X - P) : scaled(bits + 1n);
  const lo2 = X + P; // 2 × lower rounding boundary, scale 2^S
  const hi2 = X + Q;
  const inclusive = (bits & 1n) === 0n;
  const pow10 = (n: number): bigint => 10n ** BigInt(n);

  // k = floor(log10 x), corrected exactly.
  let k = Math.floor(Math.log10(x));
  const geq10k = (kk: number): boolean => (kk >= 0 ? X >= pow10(kk) << S : X * pow10(-kk) >= 1n << S);
  while (!geq10k(k)) k--;
  while (geq10k(k + 1)) k++;

  // Candidates n·10^t around x with p significant digits: floor and ceil.
  const around = (p: number): { t: number; nf: bigint; nc: bigint } => {
    const t = k - p + 1;
    const num = t >= 0 ? X : X * pow10(-t);
    const den = t >= 0 ? pow10(t) << S : 1n << S;
    const nf = num / den;
    return { t, nf, nc: nf * den === num ? nf : nf + 1n };
  };
  /** Sign of (n·10^t − bound2 / 2^(S+1)), compared as integers. */
  const cmp2 = (n: bigint, t: number, bound2: bigint): number => {
    const a = t >= 0 ? (n * pow10(t)) << (S + 1n) : n << (S + 1n);
    const b = t >= 0 ? bound2 : bound2 * pow10(-t);
    return a === b ? 0 : a < b ? -1 : 1;
  };
  const inR = (n: bigint, t: number): boolean => {
    const l = cmp2(n, t, lo2);
    const h = cmp2(n, t, hi2);
    return (l > 0 || (inclusive && l === 0)) && (h < 0 || (inclusive && h === 0));
  };

  let p = 1;
  for (; ; p++) {
    const { t, nf, nc } = around(p);
    if (inR(nf, t) || inR(nc, t)) break;
  }
  if (p === 1) p = 2;
  const { t, nf, nc } = around(p);
  let n: bigint;
  const fOk = inR(nf, t);
  const cOk = inR(nc, t);
  if (fOk && cOk && nf !== nc) {
    const num = t >= 0 ? X : X * pow10(-t);
    const unit = t >= 0 ? pow10(t) << S : 1n << S;
    const dF = num - nf * unit;
    const dC = nc * unit - num;
    n = dF < dC ? nf : dC < dF ? nc : nf % 2n === 0n ? nf : nc;
  } else {
    n = fOk ? nf : nc;
  }
  let digits = n.toString();
  const exp10 = t + digits.length - 1;
  digits = digits.replace(/0+$/, "");
  return { digits: digits === "" ? "0" : digits, exp10 };
}

/** Java's layout: plain for 1e-3 ≤ |v| < 1e7 (at least one fraction digit), else `d.dddE±n`. */
function formatJavaFloating(v: number, isFloat: boolean): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  if (v === 0) return Object.is(v, -0) ? "-0.0" : "0.0";
  const sign = v < 0 ? "-" : "";
  const { digits, exp10: exp } = javaShortestDigits(Math.abs(v), isFloat);
  if (exp >= -3 && exp < 7) {
    if (exp >= 0) {
      const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
      const frac = digits.slice(exp + 1);
      return `${sign}${intPart}.${frac === "" ? "0" : frac}`;
    }
    return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  }
  return `${sign}${digits[0]}.${digits.length > 1 ? digits.slice(1) : "0"}E${exp}`;
}

/** Java `Double.toString` (JDK 19+ digit selection; JDK ≤ 18 prints other digits for ~0.4% of doubles). */
export const javaDoubleToString = (v: number): string => formatJavaFloating(v, false);

/** Java `Float.toString` of a float32 value (JDK 19+ digit selection; JDK ≤ 18 differs for ~10% of floats). */
export const javaFloatToString = (v: number): string => formatJavaFloating(Math.fround(v), true);

const MS_PER_DAY = 86_400_000;
const pad2 = (n: number): string => (n < 10 ? "0" : "") + n;

/** Java DateTimeUtils `int4`: four digits of the low decimal places, as Calcite prints years. */
const int4 = (i: number): string =>
  [Math.trunc(i / 1000) % 10, Math.trunc(i / 100) % 10, Math.trunc(i / 10) % 10, i % 10].map((d) => String.fromCharCode(48 + d)).join("");

function utcFields(millis: number): { y: number; mo: number; d: number; h: number; mi: number; s: number; ms: number } {
  const dt = new Date(millis);
  if (Number.isNaN(dt.getTime())) throw dataInvalid(`timestamp ${millis} ms is out of the supported range`);
  return {
    y: dt.getUTCFullYear(),
    mo: dt.getUTCMonth() + 1,
    d: dt.getUTCDate(),
    h: dt.getUTCHours(),
    mi: dt.getUTCMinutes(),
    s: dt.getUTCSeconds(),
    ms: dt.getUTCMilliseconds(),
  };
}

/** Java `LocalDate.toString` year: 4+ digits, sign for negative, '+' above 9999. */
function isoYear(y: number): string {
  const a = Math.abs(y);
  if (a < 1000) return (y < 0 ? "-" : "") + String(a).padStart(4, "0");
  return (y > 9999 ? "+" : "") + String(y);
}

/** Java `LocalDateTime.toString()` (what `Timestamp.toString()` returns): minutes always, seconds/fraction if non-zero. */
function javaLocalDateTimeString(ts: Timestamp): string {
  const f = utcFields(ts.millis);
  const nano = f.ms * 1_000_000 + ts.nanoOfMilli;
  let out = `${isoYear(f.y)}-${pad2(f.mo)}-${pad2(f.d)}T${pad2(f.h)}:${pad2(f.mi)}`;
  if (f.s > 0 || nano > 0) {
    out += ":" + pad2(f.s);
    if (nano > 0) {
      if (nano % 1_000_000 === 0) out += "." + String(nano / 1_000_000 + 1000).slice(1);
      else if (nano % 1000 === 0) out += "." + String(nano / 1000 + 1_000_000).slice(1);
      else out += "." + String(nano + 1_000_000_000).slice(1);
    }
  }
  return out;
}

/** Java `DateTimeUtils.formatDate` (CAST(DATE AS STRING)). */
function castDateToString(days: number): string {
  const f = utcFields(days * MS_PER_DAY);
  return `${int4(f.y)}-${pad2(f.mo)}-${pad2(f.d)}`;
}

/** Java `DateTimeUtils.formatTimestamp(ts, precision)`: trailing zeros of the 9-digit fraction trimmed down to `precision`. */
function castTimestampToString(ts: Timestamp, precision: number): string {
  const f = utcFields(ts.millis);
  let fraction = String(f.ms * 1_000_000 + ts.nanoOfMilli).padStart(9, "0");
  while (fraction.length > precision && fraction.endsWith("0")) fraction = fraction.slice(0, -1);
  const base = `${int4(f.y)}-${pad2(f.mo)}-${pad2(f.d)} ${pad2(f.h)}:${pad2(f.mi)}:${pad2(f.s)}`;
  return fraction.length > 0 ? `${base}.${fraction}` : base;
}

/** Java `DateTimeUtils.formatTimestampMillis(millisOfDay, precision)` (CAST(TIME AS STRING)). */
function castTimeToString(millisOfDay: number, precision: number): string {
  let time = millisOfDay;
  while (time < 0) time += MS_PER_DAY;
  const h = Math.trunc(time / 3_600_000);
  const m = Math.trunc((time % 3_600_000) / 60_000);
  const s = Math.trunc((time % 60_000) / 1000);
  let ms = time % 1000;
  let out = `${pad2(h)}:${pad2(m)}:${pad2(s)}`;
  if (precision > 0) {
    out += ".";
    let p = precision;
    // Stops at the first all-zero remainder, like Java (so 500 ms prints ".5", 0 ms prints ".0").
    while (p > 0) {
      out += String(Math.trunc(ms / 100));
      ms = (ms % 100) * 10;
      if (ms === 0) break;
      p--;
    }
  }
  return out;
}

const utf8 = new TextDecoder("utf-8");

/**
 * The text Java puts in the directory name for one partition value (before default-name substitution and
 * escaping); `null` for a null value.
 */
export function partitionValueString(type: DataType, value: Value, legacyName: boolean): string | null {
  if (value === null) return null;
  const bad = (expected: string): never => {
    throw dataInvalid(`partition value of type ${typeToSql(type)}: expected ${expected}, got ${typeof value}`);
  };
  switch (type.root) {
    case "CHAR":
    case "VARCHAR":
      return typeof value === "string" ? value : bad("a string");
    case "BOOLEAN":
      return typeof value === "boolean" ? String(value) : bad("a boolean");
    case "TINYINT":
    case "SMALLINT":
    case "INT":
      return typeof value === "number" ? String(value) : bad("a number");
    case "BIGINT":
      return typeof value === "bigint" || typeof value === "number" ? value.toString() : bad("a bigint");
    case "FLOAT":
      return typeof value === "number" ? javaFloatToString(value) : bad("a number");
    case "DOUBLE":
      return typeof value === "number" ? javaDoubleToString(value) : bad("a number");
    case "DECIMAL":
      return typeof value === "bigint" ? formatDecimal(value, type.scale) : bad("an unscaled bigint");
    case "DATE":
      if (typeof value !== "number") return bad("days since epoch");
      return legacyName ? String(value) : castDateToString(value);
    case "TIME":
      if (typeof value !== "number") return bad("millis of day");
      return legacyName ? String(value) : castTimeToString(value, type.precision);
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      if (!(value instanceof Timestamp)) return bad("a Timestamp");
      return legacyName ? javaLocalDateTimeString(value) : castTimestampToString(value, type.precision);
    case "BINARY":
    case "VARBINARY":
      if (!(value instanceof Uint8Array)) return bad("bytes");
      // Java's legacy name is `byte[].toString()`, an identity hash: no stable directory exists.
      if (legacyName) throw new LakeError(ErrorKind.Unsupported, "binary partition keys need partition.legacy-name=false");
      return utf8.decode(value);
    default:
      throw new LakeError(ErrorKind.Unsupported, `partition keys of type ${typeToSql(type)} are not supported`);
  }
}

/** `k1=v1/k2=v2` for one partition (no trailing slash; "" when there are no partition keys). */
export function partitionPath(partitionKeys: readonly string[], types: readonly DataType[], values: readonly Value[], opts: PartitionPathOptions): string {
  if (types.length !== partitionKeys.length || values.length !== partitionKeys.length)
    throw dataInvalid(`partition has ${partitionKeys.length} keys but ${types.length} types and ${values.length} values`);
  const parts: string[] = new Array<string>(partitionKeys.length);
  for (let i = 0; i < partitionKeys.length; i++) {
    let text = partitionValueString(types[i]!, values[i]!, opts.legacyName);
    if (isNullOrWhitespaceOnly(text)) text = opts.defaultName;
    parts[i] = `${escapePathName(partitionKeys[i]!)}=${escapePathName(text!)}`;
  }
  return parts.join("/");
}

// ---------------------------------------------------------------------------------------------------------------
// CLI spec → values

/**
 * Parses `k=v,k2=v2` (keys and values trimmed; values cannot contain ',') into one canonical value per
 * partition key, in partition-key order. Every partition key must be named exactly once. An empty value or the
 * default partition name means null. DATE accepts `yyyy-mm-dd` or int days (the legacy directory form);
 * BINARY values are taken as UTF-8 text.
 */
export function parsePartitionSpec(
  spec: string,
  partitionKeys: readonly string[],
  types: readonly DataType[],
  opts: { defaultName?: string } = {},
): Value[] {
  if (types.length !== partitionKeys.length) throw dataInvalid(`${partitionKeys.length} partition keys but ${types.length} types`);
  const defaultName = opts.defaultName ?? DEFAULT_PARTITION_NAME;
  const known = partitionKeys.length === 0 ? "the table is not partitioned" : `partition keys are ${partitionKeys.join(", ")}`;
  const texts = new Map<string, string>();
  if (spec.trim() !== "") {
    for (const part of spec.split(",")) {
      const eq = part.indexOf("=");
      if (eq < 0) throw dataInvalid(`partition spec '${spec}': '${part.trim()}' is not key=value`);
      const key = part.slice(0, eq).trim();
      if (!partitionKeys.includes(key)) throw dataInvalid(`partition spec '${spec}': unknown partition key '${key}' (${known})`);
      if (texts.has(key)) throw dataInvalid(`partition spec '${spec}': key '${key}' is given twice`);
      texts.set(key, part.slice(eq + 1).trim());
    }
  }
  const missing = partitionKeys.filter((k) => !texts.has(k));
  if (missing.length > 0) throw dataInvalid(`partition spec '${spec}': missing partition key(s) ${missing.join(", ")} (${known})`);
  return partitionKeys.map((key, i) => {
    const type = types[i]!;
    const text = texts.get(key)!;
    if (text === "" || text === defaultName) return toCanonical(type, null, key);
    if (type.root === "DATE" && /^-?\d+$/.test(text)) return Number(text);
    if (type.root === "BINARY" || type.root === "VARBINARY") return toCanonical(type, new TextEncoder().encode(text), key);
    return toCanonical(type, text, key);
  });
}
