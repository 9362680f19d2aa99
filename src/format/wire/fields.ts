/**
 * Readers of one field of a decoded document (a snapshot or schema file's JSON, a control message's msgpack map): the
 * value when it has the field's type, else a DataInvalid naming the field — never a value made up from the wrong one
 * (`Number("x")` is NaN, `String(undefined)` is "undefined", a bigint beyond 2^53 rounds as a number).
 */
import { dataInvalid } from "../../errors.ts";

/** A short description of a value of the wrong type, for the error. */
export function describeValue(v: unknown): string {
  if (v === null || v === undefined) return String(v);
  if (v instanceof Uint8Array) return "bytes";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  return `${typeof v} ${String(v).slice(0, 40)}`;
}

/** A whole number within ±2^53 (a JSON or msgpack number, or a bigint of that range). */
export function intField(v: unknown, what: string): number {
  if (typeof v === "number" && Number.isSafeInteger(v)) return v;
  if (typeof v === "bigint" && v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
  throw dataInvalid(`${what} is not an integer (got ${describeValue(v)})`);
}

/** A 64-bit integer (a bigint, or a number within ±2^53). */
export function bigField(v: unknown, what: string): bigint {
  if (typeof v === "bigint" && v >= -(2n ** 63n) && v < 2n ** 64n) return v;
  if (typeof v === "number" && Number.isSafeInteger(v)) return BigInt(v);
  throw dataInvalid(`${what} is not a 64-bit integer (got ${describeValue(v)})`);
}

export function strField(v: unknown, what: string): string {
  if (typeof v === "string") return v;
  throw dataInvalid(`${what} is not a string (got ${describeValue(v)})`);
}

export function listField(v: unknown, what: string): unknown[] {
  if (Array.isArray(v)) return v;
  throw dataInvalid(`${what} is not an array (got ${describeValue(v)})`);
}

export const stringsField = (v: unknown, what: string): string[] => listField(v, what).map((x, i) => strField(x, `${what}[${i}]`));

/** An object (a JSON object, a msgpack map): not null, an array or bytes. */
export function objectField(v: unknown, what: string): Record<string, unknown> {
  if (v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array)) return v as Record<string, unknown>;
  throw dataInvalid(`${what} is not ${what === "file" ? "a JSON object" : "an object"} (got ${describeValue(v)})`);
}

/** `read(v)`, or null when the field is absent or null. */
export const nullableField = <T>(v: unknown, read: (v: unknown) => T): T | null => (v === null || v === undefined ? null : read(v));
