/**
 * Ordering of canonical values, as Paimon orders them for statistics and keys: numbers numerically, strings and
 * binaries as unsigned UTF-8 / raw bytes (not JavaScript's UTF-16 order), timestamps by instant, booleans false < true.
 * Nested types have no order (statistics leave them null).
 */
import { ErrorKind, LakeError } from "../errors.ts";
import type { DataType } from "./data-types.ts";
import { Timestamp, type Value } from "./values.ts";

const encoder = new TextEncoder();

export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** Compares two strings by their UTF-8 bytes without encoding when both are ASCII-only up to the difference. */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x < 0x80 && y < 0x80) return x - y;
    // Surrogates and non-ASCII: UTF-16 order differs from UTF-8 byte order; compare the encoded tails.
    return compareBytes(encoder.encode(a.slice(i)), encoder.encode(b.slice(i)));
  }
  return a.length - b.length;
}

export const isComparable = (t: DataType): boolean => !(t.root === "ARRAY" || t.root === "MAP" || t.root === "ROW" || t.root === "MULTISET");

/** Compares two non-null canonical values of type `t`. */
export function compareValues(t: DataType, a: Value, b: Value): number {
  switch (t.root) {
    case "BOOLEAN":
      return Number(a) - Number(b);
    case "TINYINT":
    case "SMALLINT":
    case "INT":
    case "DATE":
    case "TIME":
    case "FLOAT":
    case "DOUBLE":
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case "BIGINT":
    case "DECIMAL":
      return (a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0;
    case "CHAR":
    case "VARCHAR":
      return compareUtf8(a as string, b as string);
    case "BINARY":
    case "VARBINARY":
      return compareBytes(a as Uint8Array, b as Uint8Array);
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      return (a as Timestamp).compare(b as Timestamp);
    default:
      throw new LakeError(ErrorKind.Unsupported, `values of type ${t.root} have no order`);
  }
}
