/**
 * BigInt-safe JSON for Paimon's metadata files. Integers beyond 2^53 (commitIdentifier = Long.MAX_VALUE, watermarks)
 * parse as bigint and serialise without rounding; everything else stays a plain number.
 */
import { isInteger, isSafeNumber, parse, stringify } from "lossless-json";

const parseNumber = (text: string): number | bigint => (isInteger(text) && !isSafeNumber(text) ? BigInt(text) : Number(text));

export function parseJson(text: string): unknown {
  return parse(text, null, parseNumber);
}

/** Pretty-printed like Jackson's default printer (readers do not care about whitespace). */
export function stringifyJson(value: unknown): string {
  const s = stringify(value, null, 2);
  if (s === undefined) throw new Error("value is not serialisable as JSON");
  return s;
}
