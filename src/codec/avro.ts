/**
 * Avro object-container files, in memory, on top of avsc's datum encoding.
 *
 * Contract:
 * - `encodeAvroFile(schema, records, { codec })` returns a complete container file: magic `Obj\x01`, header metadata
 *   `avro.schema` (the caller's schema JSON verbatim, so logical types, defaults and names survive exactly) and
 *   `avro.codec`, a 16-byte sync marker, then blocks of at most ~64 KiB of uncompressed data, each followed by the
 *   marker. Writers may choose `null` or `deflate` (Node 20 has no zstd compressor); readers take the codec from
 *   the header, so this is what Java and pypaimon accept regardless of `manifest.compression`.
 * - `decodeAvroFile(bytes)` reads any such file with its own writer schema and the codecs `null`, `deflate`,
 *   `zstandard` (including frames without a content size, which Java's streaming compressor writes) and `snappy`
 *   (raw snappy plus the big-endian CRC32 trailer, checked). Anything else is `LakeError` Unsupported; a malformed
 *   file is `LakeError` DataInvalid.
 *
 * Value mapping (both directions): Avro `long` ⇄ `bigint` (the full int64 range; on write a safe-integer `number` is
 * accepted too), long-based logical types such as `timestamp-millis` ⇄ the raw `bigint` (e.g. epoch millis),
 * `int`/`float`/`double` ⇄ `number`, `string` ⇄ `string`, `bytes` ⇄ `Buffer` (on decode the buffer may share
 * memory with the decompressed block: copy it if you keep it), record ⇄ plain object keyed by field name,
 * array ⇄ array, map ⇄ object. Unions are unwrapped: a `["null", T]` value is either `null` or the `T` value.
 *
 * avsc is untyped at its edges; the `any` it forces on us stays inside this module.
 */
import { crc32, deflateRawSync, inflateRawSync } from "node:zlib";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import avro from "avsc";
import { decompress as zstdDecompress } from "fzstd";
import { LakeError, ErrorKind } from "../errors.ts";

/** An Avro schema as JSON (a type name, a union array or a complex type object). */
export type AvroSchema = string | readonly unknown[] | { readonly [key: string]: unknown };

/** Codecs this module can write. */
export type AvroWriteCodec = "null" | "deflate";

export interface AvroEncodeOptions {
  /** Block compression; `deflate` unless stated. */
  codec?: AvroWriteCodec;
  /** Sync marker (16 bytes); random unless given, so tests can pin the output. */
  syncMarker?: Uint8Array;
}

export interface DecodedAvroFile {
  /** The writer schema from the header, as parsed JSON. */
  schema: AvroSchema;
  /** The header's `avro.codec` (`null` when absent, as the spec says). */
  codec: string;
  records: unknown[];
}

/**
 * avsc reads past the end of its buffer without failing (bytes there read as 0) and checks only once a value is done;
 * an array or map whose damaged count says billions of items then "reads" them all from nothing — a hang of seconds
 * to hours for a few KiB of file (test/fuzz/files.test.ts found one). Its integer reader, which every count, length,
 * union branch and long goes through, therefore fails at the end of the buffer; decodeAt turns that into DataInvalid.
 * (avsc's Tap is shared by every avsc type in the process; this module is avsc's only user.)
 */
const AVSC_TAP = (createRequire(import.meta.url)("avsc/lib/utils") as { Tap: { prototype: AvscTap } }).Tap.prototype;
interface AvscTap {
  buf: Buffer;
  pos: number;
  readLong(): number;
  readInt(): number;
}
if (!(AVSC_TAP.readLong as { bounded?: true }).bounded) {
  const readLong = AVSC_TAP.readLong;
  const bounded = Object.assign(
    function (this: AvscTap): number {
      if (this.pos >= this.buf.length) throw new Error(`read past the end (${this.buf.length} bytes)`);
      return readLong.call(this);
    },
    { bounded: true as const },
  );
  AVSC_TAP.readLong = bounded;
  AVSC_TAP.readInt = bounded;
}

const MAGIC = Buffer.from([0x4f, 0x62, 0x6a, 0x01]); // "Obj" 1
const SYNC_SIZE = 16;
/** Java's DataFileWriter default sync interval: a block is closed once its uncompressed data reaches this size. */
const BLOCK_TARGET_BYTES = 64 * 1024;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const toBigInt = (v: unknown): bigint => (typeof v === "bigint" ? v : BigInt(v as number));

/**
 * avsc's built-in long refuses values beyond 2^53; this one maps Avro longs to bigint over the whole int64 range.
 * avsc hands us (and takes from us) the value as 8 little-endian two's-complement bytes.
 */
const BIGINT_LONG = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer): bigint => buf.readBigInt64LE(0),
  toBuffer: (v: bigint | number): Buffer => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(toBigInt(v));
    return buf;
  },
  // Used for field defaults in schemas; JSON numbers there are small.
  fromJSON: (v: unknown): bigint => toBigInt(v),
  toJSON: (v: bigint): number | string => (v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : v.toString()),
  isValid: (v: unknown): boolean =>
    (typeof v === "bigint" && v >= INT64_MIN && v <= INT64_MAX) ||
    (typeof v === "number" && Number.isSafeInteger(v)),
  compare: (a: bigint | number, b: bigint | number): number => {
    const x = toBigInt(a);
    const y = toBigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  },
});

/**
 * Builds an avsc type with this module's value mapping. A fresh registry per call matters: avsc adds every named
 * type to it, and a shared one would reject the second file that defines `record`.
 *
 * Long-based logical types (`timestamp-millis` on `_CREATION_TIME`, and any other) are read and written as their
 * raw bigint: avsc would otherwise build them from its number-only long (object-form `{"type":"long",…}` schemas
 * bypass the registry). The logical type itself is not lost — the header carries the caller's schema verbatim.
 */
function avroType(schema: AvroSchema, text = JSON.stringify(schema)): avro.Type {
  // Kept with a schema of its own (parsed from the text), not the caller's object: decoders hand it out.
  return typedSchema(text, () => JSON.parse(text) as AvroSchema).type;
}

/** A schema and its compiled avsc type. */
interface TypedSchema {
  schema: AvroSchema;
  type: avro.Type;
}

/**
 * The schema of `text` and its compiled type, made on the text's first use (`schemaOf`) and kept: avsc generates and
 * compiles code for every type it builds (~1 ms for a manifest's schema), and every manifest of a table carries the
 * same schema text. Types hold no state between reads; callers must not change the schema.
 */
function typedSchema(text: string, schemaOf: () => AvroSchema): TypedSchema {
  const hit = TYPES.get(text);
  if (hit !== undefined) return hit;
  const schema = schemaOf();
  const typed = { schema, type: compileType(schema) };
  if (TYPES.size >= 64) TYPES.delete(TYPES.keys().next().value!);
  TYPES.set(text, typed);
  return typed;
}

/** Schemas and their compiled types by the schema's JSON text (bounded: a process sees a handful of schemas). */
const TYPES = new Map<string, TypedSchema>();

function compileType(schema: AvroSchema): avro.Type {
  return avro.Type.forSchema(schema as avro.Schema, {
    registry: { long: BIGINT_LONG },
    wrapUnions: false,
    omitRecordMethods: true,
    typeHook: (s: unknown) =>
      typeof s === "object" && s !== null && (s as { type?: unknown }).type === "long" ? BIGINT_LONG : undefined,
  });
}

const HEADER_TYPE = avro.Type.forSchema({
  type: "record",
  name: "org.apache.avro.file.Header",
  fields: [
    { name: "magic", type: { type: "fixed", name: "Magic", size: 4 } },
    { name: "meta", type: { type: "map", values: "bytes" } },
    { name: "sync", type: { type: "fixed", name: "Sync", size: SYNC_SIZE } },
  ],
});
/** Block counts and sizes are small; avsc's own long (number) is right for them. */
const BLOCK_LONG = avro.Type.forSchema("long");

// ---------------------------------------------------------------------------------------------------------------
// Encoding

/** Encodes `records` (plain objects valid for `schema`, see the value mapping above) as one container file. */
export function encodeAvroFile(
  schema: AvroSchema,
  records: readonly unknown[],
  options: AvroEncodeOptions = {},
): Uint8Array {
  const codec = options.codec ?? "deflate";
  if (codec !== "null" && codec !== "deflate") {
    throw new LakeError(ErrorKind.Unsupported, `cannot write Avro codec '${String(codec)}'`);
  }
  const sync = Buffer.from(options.syncMarker ?? randomBytes(SYNC_SIZE));
  if (sync.length !== SYNC_SIZE) {
    throw new LakeError(ErrorKind.Unexpected, `Avro sync marker must be ${SYNC_SIZE} bytes, got ${sync.length}`);
  }
  const type = avroType(schema);
  // The caller's schema, not avsc's export of it: avsc drops logical types it has no class for, and Java needs
  // `"logicalType":"timestamp-millis"` on `_CREATION_TIME` to decode a Timestamp.
  const schemaJson = JSON.stringify(schema);

  const parts: Buffer[] = [
    HEADER_TYPE.toBuffer({
      magic: MAGIC,
      meta: { "avro.schema": Buffer.from(schemaJson, "utf8"), "avro.codec": Buffer.from(codec, "utf8") },
      sync,
    }),
  ];
  let block: Buffer[] = [];
  let blockBytes = 0;
  const flush = (): void => {
    if (block.length === 0) return;
    const raw = Buffer.concat(block);
    const data = codec === "deflate" ? deflateRawSync(raw) : raw;
    parts.push(BLOCK_LONG.toBuffer(block.length), BLOCK_LONG.toBuffer(data.length), data, sync);
    block = [];
    blockBytes = 0;
  };
  records.forEach((record, i) => {
    let datum: Buffer;
    try {
      datum = type.toBuffer(record);
    } catch (e) {
      const reason = invalidPath(type, record);
      throw new LakeError(ErrorKind.DataInvalid, `record ${i} does not match its Avro schema: ${reason}`, { cause: e });
    }
    block.push(datum);
    blockBytes += datum.length;
    if (blockBytes >= BLOCK_TARGET_BYTES) flush();
  });
  flush();
  const out = Buffer.concat(parts);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/**
 * Names the first invalid field of a record. avsc's own message cannot be used: it JSON-formats the offending value,
 * which itself throws for bigints.
 */
function invalidPath(type: avro.Type, record: unknown): string {
  let found = "value is not valid";
  type.isValid(record, {
    errorHook: (path: string[], value: unknown, t: avro.Type) => {
      const shown =
        typeof value === "bigint" ? `${value}n` : typeof value === "string" ? JSON.stringify(value) : String(value);
      found = `${path.join(".") || "(root)"} = ${shown} is not a valid ${t.typeName}`;
    },
  });
  return found;
}

// ---------------------------------------------------------------------------------------------------------------
// Decoding

/** Decodes a whole container file. Throws `LakeError` DataInvalid for malformed input, Unsupported for codecs. */
export function decodeAvroFile(bytes: Uint8Array): DecodedAvroFile {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < MAGIC.length || !buf.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw malformed("not an Avro object container file (bad magic)");
  }
  const header = decodeAt(HEADER_TYPE, buf, 0, "header") as {
    value: { meta: Record<string, Buffer>; sync: Buffer };
    offset: number;
  };
  const meta = header.value.meta;
  const schemaBytes = meta["avro.schema"];
  if (schemaBytes === undefined) throw malformed("header has no avro.schema");
  const { schema, type } = readerOf(schemaBytes.toString("utf8"));
  const codec = meta["avro.codec"]?.toString("utf8") ?? "null";
  const inflate = blockDecompressor(codec);

  const sync = header.value.sync;
  const records: unknown[] = [];
  let pos = header.offset;
  while (pos < buf.length) {
    const count = decodeAt(BLOCK_LONG, buf, pos, "block count") as { value: number; offset: number };
    const size = decodeAt(BLOCK_LONG, buf, count.offset, "block size") as { value: number; offset: number };
    const start = size.offset;
    const end = start + size.value;
    if (count.value < 0 || size.value < 0 || end + SYNC_SIZE > buf.length) {
      throw malformed(`truncated block at offset ${pos}`);
    }
    if (!buf.subarray(end, end + SYNC_SIZE).equals(sync)) {
      throw malformed(`sync marker mismatch after block at offset ${pos}`);
    }
    const data = inflate(buf.subarray(start, end));
    // Every record of a Paimon file takes at least a byte; a count beyond the block's bytes is corrupt, and a schema
    // of zero-width records (a damaged header's) would otherwise decode that many records from nothing — a hang.
    if (count.value > Math.max(1, data.length)) throw malformed(`block at offset ${pos} declares ${count.value} records in ${data.length} bytes`);
    let at = 0;
    for (let i = 0; i < count.value; i++) {
      const r = decodeAt(type, data, at, "record");
      records.push(plain(r.value));
      at = r.offset;
    }
    if (at !== data.length) throw malformed(`block at offset ${pos} has ${data.length - at} trailing bytes`);
    pos = end + SYNC_SIZE;
  }
  return { schema, codec, records };
}

/**
 * A file's writer schema, parsed, and its compiled type: kept by the schema's text (`typedSchema`), since parsing it
 * again for each file (1.9 KB of JSON, ~10 µs) was 7 % of decoding a bench manifest of 11 entries (~140 µs), 12 % of
 * a manifest list (~6 of ~50 µs).
 */
function readerOf(schemaText: string): TypedSchema {
  const hit = TYPES.get(schemaText);
  if (hit !== undefined) return hit;
  let schema: AvroSchema;
  try {
    schema = JSON.parse(schemaText) as AvroSchema;
  } catch (e) {
    throw malformed(`avro.schema is not JSON: ${errorText(e)}`);
  }
  try {
    return typedSchema(schemaText, () => schema);
  } catch (e) {
    throw malformed(`avro.schema is not a valid schema: ${errorText(e)}`);
  }
}

/**
 * avsc decodes records as instances of classes it generates per parsed schema, so two decodes of the same data are
 * not deep-equal; callers get plain objects instead.
 */
function plain(v: unknown): unknown {
  if (v === null || typeof v !== "object" || Buffer.isBuffer(v)) return v;
  if (Array.isArray(v)) return v.map(plain);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = plain(x);
  return out;
}

/** avsc's decode, with its "-1 means truncated" and exceptions turned into DataInvalid. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- avsc decodes to untyped values
function decodeAt(type: avro.Type, buf: Buffer, pos: number, what: string): { value: any; offset: number } {
  let r: { value: unknown; offset: number };
  try {
    r = type.decode(buf, pos);
  } catch (e) {
    throw malformed(`cannot decode ${what} at offset ${pos}: ${errorText(e)}`);
  }
  if (r.offset < 0) throw malformed(`truncated ${what} at offset ${pos}`);
  return r;
}

function blockDecompressor(codec: string): (data: Buffer) => Buffer {
  switch (codec) {
    case "null":
      return (data) => data;
    case "deflate":
      // Avro's deflate is raw RFC 1951 (Java: Deflater with nowrap), no zlib header.
      return (data) => guarded("deflate", () => inflateRawSync(data));
    case "zstandard":
      // fzstd's one-shot decompress accepts frames without a content size (it grows its output block by block).
      return (data) => guarded("zstandard", () => asBuffer(zstdDecompress(data)));
    case "snappy":
      return snappyBlock;
    default:
      throw new LakeError(
        ErrorKind.Unsupported,
        `unsupported Avro codec '${codec}' (supported: null, deflate, zstandard, snappy)`,
      );
  }
}

/** Avro's snappy codec: raw snappy data, then a 4-byte big-endian CRC32 of the *uncompressed* bytes. */
function snappyBlock(block: Buffer): Buffer {
  if (block.length < 4) throw malformed("snappy block shorter than its CRC");
  const out = snappyDecompress(block.subarray(0, block.length - 4));
  const expected = block.readUInt32BE(block.length - 4);
  if (crc32(out) >>> 0 !== expected) throw malformed("snappy block CRC32 mismatch");
  return out;
}

/**
 * Raw (unframed) snappy decompression: a varint uncompressed length, then literal and back-reference elements.
 * Every offset and length is checked against the output, so corrupt input fails instead of reading out of bounds.
 */
export function snappyDecompress(src: Uint8Array): Buffer {
  let pos = 0;
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    if (pos >= src.length || shift > 28) throw malformed("snappy: bad length preamble");
    const b = src[pos++] as number;
    length += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) break;
  }
  if (length > 0xffffffff) throw malformed("snappy: length too large");
  // One element makes at most 64 bytes from 2 (a literal copies its own bytes; a copy of 1 + 2 bytes writes up to
  // 64): a declared length beyond 32× the input cannot be produced, and must not be allocated (a 4-byte block could
  // otherwise claim 4 GiB).
  if (length > 32 * src.length) throw malformed(`snappy: a block of ${src.length} bytes cannot hold ${length} bytes`);
  const out = Buffer.alloc(length);
  let op = 0;
  const readLE = (n: number): number => {
    if (pos + n > src.length) throw malformed("snappy: truncated element");
    let v = 0;
    for (let i = 0; i < n; i++) v += (src[pos + i] as number) * 2 ** (8 * i);
    pos += n;
    return v;
  };
  while (pos < src.length) {
    const tag = src[pos++] as number;
    const kind = tag & 3;
    if (kind === 0) {
      let len = tag >>> 2;
      if (len >= 60) len = readLE(len - 59);
      len += 1;
      if (pos + len > src.length || op + len > length) throw malformed("snappy: literal out of bounds");
      out.set(src.subarray(pos, pos + len), op);
      pos += len;
      op += len;
      continue;
    }
    let len: number;
    let offset: number;
    if (kind === 1) {
      len = 4 + ((tag >>> 2) & 7);
      offset = ((tag >>> 5) << 8) | readLE(1);
    } else {
      len = 1 + (tag >>> 2);
      offset = readLE(kind === 2 ? 2 : 4);
    }
    if (offset === 0 || offset > op || op + len > length) throw malformed("snappy: copy out of bounds");
    // Byte by byte: a copy may overlap its own output (offset < len repeats a pattern).
    for (let i = 0; i < len; i++, op++) out[op] = out[op - offset] as number;
  }
  if (op !== length) throw malformed(`snappy: produced ${op} bytes, expected ${length}`);
  return out;
}

function guarded(codec: string, f: () => Buffer): Buffer {
  try {
    return f();
  } catch (e) {
    throw malformed(`cannot decompress ${codec} block: ${errorText(e)}`);
  }
}

const asBuffer = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

const malformed = (message: string): LakeError =>
  new LakeError(ErrorKind.DataInvalid, `malformed Avro file: ${message}`);

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));
