/**
 * Fixed-bucket assignment, exactly as Java Paimon computes it (paimon-format.md §6.2).
 *
 * - `default` function: bucket = `Math.abs(hash % n)` (Java int semantics) where hash is Paimon's Murmur3-based
 *   `MurmurHashUtils.hashBytes` (seed 42) over the BinaryRow bytes of the bucket-key fields, without the
 *   manifest's arity prefix. The row bytes come from binary-row.ts, which reproduces Java's projection bytes.
 * - `mod` function: a single INT or BIGINT key, bucket = `Math.floorMod(key, n)`; a null key reads as 0.
 * - `hive` is not implemented (Unsupported).
 *
 * `createBucketFunction` compiles the per-type writers once and reuses one row buffer, so the per-record cost is
 * a few slot writes plus the hash over (typically) 16–32 bytes.
 */
import { ErrorKind, LakeError, dataInvalid } from "../errors.ts";
import { typeToSql, type DataType } from "./data-types.ts";
import type { Value } from "./values.ts";
import { BinaryRowWriter, createRowEncoder } from "./binary-row.ts";

const SEED = 42;

const rotl32 = (x: number, r: number): number => (x << r) | (x >>> (32 - r));

const mixK1 = (k: number): number => Math.imul(rotl32(Math.imul(k, 0xcc9e2d51), 15), 0x1b873593);
const mixH1 = (h: number, k: number): number => (Math.imul(rotl32(h ^ k, 13), 5) + 0xe6546b64) | 0;

/**
 * Java `MurmurHashUtils.hashBytes(segment, offset, length)` over `bytes[offset, offset + length)`, as a signed
 * 32-bit int. Row bytes are always a multiple of 8 long; the byte-wise tail (sign-extended bytes, not standard
 * Murmur3 tail handling) is kept for fidelity with Java on arbitrary input.
 */
export function paimonHashRange(bytes: Uint8Array, offset: number, length: number): number {
  let h = SEED;
  const aligned = offset + (length - (length % 4));
  let i = offset;
  for (; i < aligned; i += 4) {
    const k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    h = mixH1(h, mixK1(k));
  }
  const end = offset + length;
  for (; i < end; i++) h = mixH1(h, mixK1((bytes[i]! << 24) >> 24));
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}

/** Java `BinaryRow.hashCode()` of row bytes (no arity prefix). */
export const paimonHash = (rowBytes: Uint8Array): number => paimonHashRange(rowBytes, 0, rowBytes.length);

/** Java `Math.abs(hash % n)` for a signed 32-bit hash. */
export function bucketFromHash(hash: number, numBuckets: number): number {
  // `% n` of a signed int lies in (-n, n), so abs never overflows as Java's Math.abs(Integer.MIN_VALUE) would.
  return Math.abs((hash | 0) % numBuckets);
}

/** Default-function bucket of row bytes (no arity prefix). */
export const bucketOf = (rowBytes: Uint8Array, numBuckets: number): number => bucketFromHash(paimonHash(rowBytes), numBuckets);

/** Java `Math.floorMod(value, n)` for an INT or BIGINT key. */
export function modBucket(value: number | bigint, numBuckets: number): number {
  if (typeof value === "bigint") {
    const n = BigInt(numBuckets);
    const r = value % n;
    return Number(r < 0n ? r + n : r);
  }
  const r = value % numBuckets;
  return r < 0 ? r + numBuckets : r === 0 ? 0 : r;
}

export type BucketFunctionType = "default" | "mod" | "hive";
/** Maps the canonical values of the bucket-key fields (in bucket-key order) to a bucket in [0, numBuckets). */
export type BucketFunction = (keyValues: readonly Value[]) => number;

function checkNumBuckets(numBuckets: number): void {
  if (!Number.isInteger(numBuckets) || numBuckets <= 0 || numBuckets > 0x7fffffff)
    throw dataInvalid(`fixed bucket count must be a positive 32-bit integer, got ${numBuckets}`);
}

/**
 * The `default` bucket function for keys of `bucketKeyTypes`. The returned function reuses one buffer and is
 * not reentrant (JS is single-threaded; do not share it across workers).
 */
export function createBucketFunction(bucketKeyTypes: readonly DataType[], numBuckets: number): BucketFunction {
  checkNumBuckets(numBuckets);
  if (bucketKeyTypes.length === 0) throw dataInvalid("a bucket function needs at least one bucket-key field");
  const encode = createRowEncoder(bucketKeyTypes);
  const writer = new BinaryRowWriter(bucketKeyTypes.length, 64);
  return (keyValues) => {
    writer.reset();
    encode(writer, keyValues);
    return bucketFromHash(paimonHashRange(writer.buffer, 0, writer.size), numBuckets);
  };
}

/** The `mod` bucket function: exactly one INT or BIGINT bucket-key field. */
export function createModBucketFunction(bucketKeyTypes: readonly DataType[], numBuckets: number): BucketFunction {
  checkNumBuckets(numBuckets);
  const t = bucketKeyTypes[0];
  if (bucketKeyTypes.length !== 1 || t === undefined) throw dataInvalid("bucket key must have exactly one field in mod bucket function");
  if (t.root !== "INT" && t.root !== "BIGINT") throw dataInvalid(`bucket key type must be INT or BIGINT in mod bucket function, but got ${typeToSql(t)}`);
  return (keyValues) => {
    if (keyValues.length !== 1) throw dataInvalid(`mod bucket function expects 1 key value, got ${keyValues.length}`);
    const v = keyValues[0]!;
    // Java reads the zeroed slot of a null key: 0.
    if (v === null) return 0;
    if (typeof v !== "number" && typeof v !== "bigint") throw dataInvalid(`mod bucket key must be an integer, got ${typeof v}`);
    return modBucket(v, numBuckets);
  };
}

/** The bucket function named by the table option `bucket-function.type`. */
export function createBucketFunctionOfType(type: BucketFunctionType, bucketKeyTypes: readonly DataType[], numBuckets: number): BucketFunction {
  switch (type) {
    case "default":
      return createBucketFunction(bucketKeyTypes, numBuckets);
    case "mod":
      return createModBucketFunction(bucketKeyTypes, numBuckets);
    case "hive":
      throw new LakeError(ErrorKind.Unsupported, "bucket-function.type 'hive' is not supported");
  }
}

/** The Murmur state after the two zero words a one-field BinaryRow starts with (its header and null bits, +I). */
const AFTER_EMPTY_HEADER = mixH1(mixH1(SEED, mixK1(0)), mixK1(0));

/** The default function's bucket of a one-field row whose 8-byte slot holds the words `lo`, `hi` (16 bytes hashed). */
function oneSlotBucket(lo: number, hi: number, numBuckets: number): number {
  let h = mixH1(mixH1(AFTER_EMPTY_HEADER, mixK1(lo)), mixK1(hi));
  h ^= 16;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return bucketFromHash(h, numBuckets);
}

/**
 * A writer's fast path for the most common bucket key, one INT or BIGINT column whose value arrives as a JS number:
 * the bucket `createBucketFunctionOfType` gives for that value, computed from the number itself — no canonical
 * BigInt, no BinaryRow (the default function hashes the row's words: two zero words of header, then the slot's low
 * and high word). The function returns −1 for any other value (a bigint, a string, a null, a number out of the
 * column's range), which the caller then routes the usual way, with the usual errors. Null when the bucket key is
 * not one such column.
 */
export function createIntegerKeyBucketFunction(type: BucketFunctionType, bucketKeyTypes: readonly DataType[], numBuckets: number): ((v: unknown) => number) | null {
  checkNumBuckets(numBuckets);
  const root = bucketKeyTypes.length === 1 ? bucketKeyTypes[0]!.root : null;
  if (root !== "INT" && root !== "BIGINT") return null;
  if (type === "mod") {
    if (root === "INT") return (v) => (typeof v === "number" && (v | 0) === v ? modBucket(v, numBuckets) : -1);
    return (v) => (typeof v === "number" && Number.isSafeInteger(v) ? modBucket(v, numBuckets) : -1);
  }
  if (type !== "default") return null;
  if (root === "INT") return (v) => (typeof v === "number" && (v | 0) === v ? oneSlotBucket(v, 0, numBuckets) : -1);
  return (v) => {
    if (typeof v !== "number" || !Number.isSafeInteger(v)) return -1;
    const hi = Math.floor(v / 4294967296);
    return oneSlotBucket((v - hi * 4294967296) | 0, hi | 0, numBuckets);
  };
}
