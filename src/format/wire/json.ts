/**
 * BigInt-safe JSON: Paimon's metadata files (`parseJson`, `stringifyJson`) and rows given as JSON text
 * (`parseRowJson`: the raw subject's JSON payloads, the CLI's JSONL input, `dlq replay` files).
 */
import { isInteger, isSafeNumber, parse, stringify } from "lossless-json";
import { ErrorKind, LakeError } from "../../errors.ts";

/** Metadata: integers beyond 2^53 (commitIdentifier = Long.MAX_VALUE, watermarks) as bigint, the rest as numbers. */
const parseMetadataNumber = (text: string): number | bigint => (isInteger(text) && !isSafeNumber(text) ? BigInt(text) : Number(text));

/** Metadata text as JSON; text that is not JSON is a DataInvalid (lossless-json's SyntaxError as its cause). */
export function parseJson(text: string): unknown {
  try {
    return parse(text, null, parseMetadataNumber);
  } catch (e) {
    throw new LakeError(ErrorKind.DataInvalid, `not valid JSON: ${(e as Error).message}`, { cause: e });
  }
}

/** Pretty-printed like Jackson's default printer (readers do not care about whitespace). */
export function stringifyJson(value: unknown): string {
  const s = stringify(value, null, 2);
  if (s === undefined) throw new Error("value is not serialisable as JSON");
  return s;
}

/** Row values: integers beyond 2^53 as bigint; numbers a double cannot hold exactly stay text (DECIMAL reads it exactly). */
function parseRowNumber(text: string): unknown {
  if (isInteger(text)) return isSafeNumber(text) ? Number(text) : BigInt(text);
  return isSafeNumber(text) ? Number(text) : text;
}

/**
 * Sixteen digits, one decimal point allowed among them: the least a number needs before a double can lose any of
 * it (every decimal of 15 significant digits round-trips). Text without such a run has no number JSON.parse would
 * round, so it takes the fast path.
 */
const MAYBE_INEXACT = /\d(?:\.?\d){15}/;

/**
 * JSON text holding rows, parsed without rounding: an integer beyond 2^53 becomes a bigint (a BIGINT column gets the
 * file's digits, and a value beyond 64 bits is refused quoting them), a number with more digits than a double keeps
 * stays its text. Text without a long run of digits is parsed by `JSON.parse` (faster, and then the same values).
 * Throws SyntaxError for text that is not JSON.
 */
export function parseRowJson(text: string): unknown {
  return MAYBE_INEXACT.test(text) ? parse(text, null, parseRowNumber) : JSON.parse(text);
}
