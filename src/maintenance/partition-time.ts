/**
 * The time of a partition, extracted from its values by the rules of Paimon's PartitionTimeExtractor (used by
 * partition expiration, `partition.expiration-strategy = values-time`):
 *
 * - the text: `partition.timestamp-pattern` with every `$key` replaced by that partition key's value (longer keys
 *   first, so `$dt` never matches inside `$dt1`); without a pattern, the first partition value;
 * - parsed with `partition.timestamp-formatter`, a Java `DateTimeFormatter` pattern (SMART resolution: a day past
 *   the month's end is moved back to its last day, `24:00:00` is the next midnight; the whole text must match). A
 *   formatter without a time of day gives midnight; an hour alone is `HH:00:00`. Without a formatter: `y-M-d` or
 *   `y-M-d H:m:s[.fraction]` with 1–2 digit fields, resolved leniently (month 13 rolls into the next year), as
 *   Paimon's default.
 *
 * Times are local wall-clock times, as in Paimon (Java `LocalDateTime`): "wall-clock milliseconds", the local date
 * and time read as if it were UTC (`localWallClockMillis`).
 *
 * Supported pattern letters: `y`/`u` (year; `yy` = 2000–2099), `M` (month; `MMM`/`MMMM` English names), `d`, `H`,
 * `m`, `s`, `S` (fraction of the second); `'quoted text'` and any other non-letter character are literals. Any other
 * letter (`E`, `a`, `h`, `D`, zones, …) is refused when the formatter is compiled — at table create.
 */
import { dataInvalid } from "../errors.ts";

/** A partition value that does not parse: the partition is not expired (Paimon logs and skips it). */
export class PartitionTimeParseError extends Error {
  override readonly name = "PartitionTimeParseError";
}

type Field = "year" | "yearReduced" | "month" | "monthText" | "day" | "hour" | "minute" | "second" | "fraction";

interface Part {
  field: Field;
  regex: string;
  width?: number;
  full?: boolean;
}

export interface CompiledFormatter {
  readonly pattern: string;
  /** Wall-clock milliseconds of `text`; throws PartitionTimeParseError when it does not match. */
  parse(text: string): number;
}

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const DAY_MS = 86_400_000;

/** Wall-clock ms of a date and time; NaN when out of JavaScript's range. */
function wallMillis(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  return d.getTime();
}

const isLeap = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const monthLength = (y: number, m: number): number => (m === 2 ? (isLeap(y) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31);

/** Compiles a Java DateTimeFormatter pattern; throws DataInvalid naming the problem. */
export function compileFormatter(pattern: string): CompiledFormatter {
  const bad = (what: string): never => {
    throw dataInvalid(`partition.timestamp-formatter '${pattern}': ${what}`, { option: "partition.timestamp-formatter" });
  };
  const parts: Array<Part | string> = [];
  const seen = new Set<Field>();
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i]!;
    if (c === "'") {
      // 'text' is literal; '' is one quote, inside or outside quotes.
      let j = i + 1;
      let text = "";
      for (;;) {
        if (j >= pattern.length) bad("unclosed quote");
        if (pattern[j] === "'") {
          if (pattern[j + 1] === "'") {
            text += "'";
            j += 2;
            continue;
          }
          break;
        }
        text += pattern[j];
        j++;
      }
      parts.push(j === i + 1 ? "'" : text);
      i = j + 1;
      continue;
    }
    if (/[A-Za-z]/.test(c)) {
      let n = 1;
      while (pattern[i + n] === c) n++;
      i += n;
      const field = letterField(c, n, bad);
      const key: Field = field.field === "yearReduced" ? "year" : field.field === "monthText" ? "month" : field.field;
      if (seen.has(key)) bad(`the ${key} appears twice`);
      seen.add(key);
      parts.push(field);
      continue;
    }
    if ("[]{}#".includes(c)) bad(`'${c}' (optional sections and reserved characters) is not supported`);
    parts.push(c);
    i++;
  }
  if (!seen.has("year") || !seen.has("month") || !seen.has("day")) bad("it must have a year (y or u), a month (M) and a day (d)");
  const fields = parts.filter((p): p is Part => typeof p !== "string");
  const regex = new RegExp("^" + parts.map((p) => (typeof p === "string" ? escapeRegex(p) : `(${p.regex})`)).join("") + "$");
  return {
    pattern,
    parse(text: string): number {
      const m = regex.exec(text);
      if (!m) throw new PartitionTimeParseError(`'${text}' does not match the formatter '${pattern}'`);
      const v: Partial<Record<Field, number>> = {};
      fields.forEach((f, k) => {
        const s = m[k + 1]!;
        if (f.field === "monthText") v.month = MONTHS.findIndex((name) => (f.full ? name : name.slice(0, 3)) === s) + 1;
        else if (f.field === "yearReduced") v.year = 2000 + Number(s);
        else if (f.field === "fraction") v.fraction = Number((s + "000").slice(0, 3));
        else v[f.field] = Number(s);
      });
      return resolveSmart(text, v);
    },
  };
}

function letterField(c: string, n: number, bad: (what: string) => never): Part {
  const numeric = (field: Field, max: number): Part => {
    if (n > max) bad(`too many pattern letters '${c.repeat(n)}'`);
    return { field, regex: n === 1 ? "\\d{1,19}" : `\\d{${n}}` };
  };
  switch (c) {
    case "y":
    case "u":
      // yy: two digits, 2000–2099; otherwise at least n digits (Java: n..19).
      return n === 2 ? { field: "yearReduced", regex: "\\d{2}" } : { field: "year", regex: `\\d{${n},19}` };
    case "M":
      if (n === 3) return { field: "monthText", regex: MONTHS.map((m) => m.slice(0, 3)).join("|") };
      if (n === 4) return { field: "monthText", regex: MONTHS.join("|"), full: true };
      return numeric("month", 2);
    case "d":
      return numeric("day", 2);
    case "H":
      return numeric("hour", 2);
    case "m":
      return numeric("minute", 2);
    case "s":
      return numeric("second", 2);
    case "S":
      if (n > 9) bad(`too many pattern letters '${c.repeat(n)}'`);
      return { field: "fraction", regex: `\\d{${n}}`, width: n };
    default:
      return bad(`pattern letter '${c}' is not supported (supported: y u M d H m s S and literals)`);
  }
}

/** Java's SMART resolution of a parsed date and time. */
function resolveSmart(text: string, v: Partial<Record<Field, number>>): number {
  const fail = (why: string): never => {
    throw new PartitionTimeParseError(`'${text}': ${why}`);
  };
  const year = v.year!;
  const month = v.month!;
  let day = v.day!;
  if (month < 1 || month > 12) fail(`month ${month} is out of range`);
  if (day < 1 || day > 31) fail(`day ${day} is out of range`);
  day = Math.min(day, monthLength(year, month));
  // Java resolves a time only from an hour (minute, second and fraction default to 0) and only when the fields
  // present leave no gap (a second without a minute); otherwise LocalDateTime fails and Paimon takes the date alone.
  let hour = 0;
  let minute = 0;
  let second = 0;
  let ms = 0;
  const gap = (v.minute === undefined && (v.second !== undefined || v.fraction !== undefined)) || (v.minute !== undefined && v.second === undefined && v.fraction !== undefined);
  if (v.hour !== undefined && !gap) {
    hour = v.hour;
    minute = v.minute ?? 0;
    second = v.second ?? 0;
    ms = v.fraction ?? 0;
    if (minute > 59) fail(`minute ${minute} is out of range`);
    if (second > 59) fail(`second ${second} is out of range`);
    if (hour > 24 || (hour === 24 && (minute !== 0 || second !== 0 || ms !== 0))) fail(`hour ${hour} is out of range`);
  }
  const t = wallMillis(year, month, day, hour, minute, second, ms);
  if (Number.isNaN(t)) fail("the year is out of range");
  return t;
}

const DEFAULT_FORMAT = /^(\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?$/;

/** Paimon's default (no formatter): `y-M-d[ H:m:s[.f]]`, resolved leniently (out-of-range fields roll over). */
export function parseDefaultPartitionTime(text: string): number {
  const m = DEFAULT_FORMAT.exec(text);
  if (!m) throw new PartitionTimeParseError(`'${text}' is not a date (yyyy-MM-dd) or timestamp (yyyy-MM-dd HH:mm:ss)`);
  const year = Number(m[1]);
  // LENIENT: the first of January of the year, plus (month - 1) months, plus (day - 1) days, plus the time.
  const y = year + Math.floor((Number(m[2]) - 1) / 12);
  const mo = (((Number(m[2]) - 1) % 12) + 12) % 12;
  let t = wallMillis(y, mo + 1, 1) + (Number(m[3]) - 1) * DAY_MS;
  if (m[4] !== undefined) t += Number(m[4]) * 3_600_000 + Number(m[5]) * 60_000 + Number(m[6]) * 1000 + Number(((m[7] ?? "") + "000").slice(0, 3));
  if (Number.isNaN(t)) throw new PartitionTimeParseError(`'${text}': the year is out of range`);
  return t;
}

/** `$key` substitution (longer keys first); a null value cannot be substituted. */
export function substitutePattern(pattern: string, keys: readonly string[], values: readonly (string | null)[]): string {
  const order = keys.map((_, i) => i).sort((a, b) => keys[b]!.length - keys[a]!.length);
  let out = "";
  for (let i = 0; i < pattern.length; ) {
    if (pattern[i] === "$" && i + 1 < pattern.length) {
      const idx = order.find((k) => pattern.startsWith(keys[k]!, i + 1));
      if (idx !== undefined) {
        const value = values[idx];
        if (value === null || value === undefined) throw new PartitionTimeParseError(`partition key ${keys[idx]} is null`);
        out += value;
        i += 1 + keys[idx]!.length;
        continue;
      }
    }
    out += pattern[i];
    i++;
  }
  return out;
}

/** Extracts partition times by a pattern and a formatter (either may be absent), as Paimon does. */
export class PartitionTimeExtractor {
  private readonly formatter: CompiledFormatter | null;

  constructor(
    readonly pattern: string | null,
    formatter: string | null,
  ) {
    this.formatter = formatter === null ? null : compileFormatter(formatter);
  }

  /** The partition's text: the pattern substituted, or the first value. */
  text(keys: readonly string[], values: readonly (string | null)[]): string {
    if (this.pattern === null) {
      const first = values[0];
      if (first === null || first === undefined) throw new PartitionTimeParseError(`partition key ${keys[0] ?? "?"} is null`);
      return first;
    }
    return substitutePattern(this.pattern, keys, values);
  }

  /** Wall-clock ms of the partition; throws PartitionTimeParseError for a value that does not parse (or a null). */
  extract(keys: readonly string[], values: readonly (string | null)[]): number {
    const text = this.text(keys, values);
    return this.formatter === null ? parseDefaultPartitionTime(text) : this.formatter.parse(text);
  }
}

/** Wall-clock ms rendered as `yyyy-MM-ddTHH:mm:ss` (for reports). */
export function formatWallClock(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}
