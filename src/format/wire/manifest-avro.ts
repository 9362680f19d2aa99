/**
 * Manifest files and manifest lists as Avro container files: the pinned writer schemas and the wire ⇄ domain
 * converters (format doc §4.2–4.4).
 *
 * Writing: the schemas below, in Java's shape (record names `org.apache.paimon.avro.generated.record`,
 * `record__FILE`, `record__FILE__KEY_STATS`, … — the two stats records need distinct names, Avro forbids redefining
 * one), nullable fields as `["null", T]` with null first (Java's reader assumes branch 0 is null), `_VERSION` = 2,
 * `_CREATION_TIME` with its `timestamp-millis` logical type. Codec `deflate` unless the caller picks another; readers
 * take it from the header.
 *
 * Reading: whatever Java or pypaimon wrote. Fields are taken by name from the file's own writer schema, so record
 * names and field order do not matter and unknown fields are ignored; a missing nullable field reads as null; a
 * missing required field, a wrong type or a value out of range is LakeError DataInvalid. `_VERSION`, when present,
 * must be 2 (Java's rule; pypaimon does not check) — otherwise LakeError Unsupported.
 */
import { decodeAvroFile, encodeAvroFile, type AvroSchema, type AvroWriteCodec } from "../../codec/avro.ts";
import { LakeError, ErrorKind } from "../../errors.ts";
import { Fields } from "./avro-fields.ts";
import { FileKind, type DataFileMeta, type ManifestEntry, type ManifestFileMeta, type SimpleStats } from "../manifest.ts";

/** `_VERSION` of manifest entries and manifest-list records (Java `ManifestEntrySerializer`, `ManifestFileMeta`). */
export const MANIFEST_FORMAT_VERSION = 2;

export interface ManifestWriteOptions {
  codec?: AvroWriteCodec;
}

const NAMESPACE = "org.apache.paimon.avro.generated";

const nullable = (type: unknown): { type: unknown[]; default: null } => ({ type: ["null", type], default: null });

const simpleStatsRecord = (name: string): AvroSchema => ({
  type: "record",
  name,
  fields: [
    { name: "_MIN_VALUES", type: "bytes" },
    { name: "_MAX_VALUES", type: "bytes" },
    { name: "_NULL_COUNTS", ...nullable({ type: "array", items: ["null", "long"] }) },
  ],
});

/** Writer schema of manifest files: ManifestEntry, DataFileMeta fields 0..19 (not HEAD's `_WRITE_COLS_SEQUENCES`). */
export const MANIFEST_ENTRY_SCHEMA: AvroSchema = {
  type: "record",
  name: "record",
  namespace: NAMESPACE,
  fields: [
    { name: "_VERSION", type: "int" },
    { name: "_KIND", type: "int" },
    { name: "_PARTITION", type: "bytes" },
    { name: "_BUCKET", type: "int" },
    { name: "_TOTAL_BUCKETS", type: "int" },
    {
      name: "_FILE",
      type: {
        type: "record",
        name: "record__FILE",
        fields: [
          { name: "_FILE_NAME", type: "string" },
          { name: "_FILE_SIZE", type: "long" },
          { name: "_ROW_COUNT", type: "long" },
          { name: "_MIN_KEY", type: "bytes" },
          { name: "_MAX_KEY", type: "bytes" },
          { name: "_KEY_STATS", type: simpleStatsRecord("record__FILE__KEY_STATS") },
          { name: "_VALUE_STATS", type: simpleStatsRecord("record__FILE__VALUE_STATS") },
          { name: "_MIN_SEQUENCE_NUMBER", type: "long" },
          { name: "_MAX_SEQUENCE_NUMBER", type: "long" },
          { name: "_SCHEMA_ID", type: "long" },
          { name: "_LEVEL", type: "int" },
          { name: "_EXTRA_FILES", type: { type: "array", items: "string" } },
          { name: "_CREATION_TIME", ...nullable({ type: "long", logicalType: "timestamp-millis" }) },
          { name: "_DELETE_ROW_COUNT", ...nullable("long") },
          { name: "_EMBEDDED_FILE_INDEX", ...nullable("bytes") },
          { name: "_FILE_SOURCE", ...nullable("int") },
          { name: "_VALUE_STATS_COLS", ...nullable({ type: "array", items: "string" }) },
          { name: "_EXTERNAL_PATH", ...nullable("string") },
          { name: "_FIRST_ROW_ID", ...nullable("long") },
          { name: "_WRITE_COLS", ...nullable({ type: "array", items: "string" }) },
        ],
      },
    },
  ],
};

/**
 * Writer schema of manifest lists: Java 2.x's ManifestFileMeta fields, then pypaimon 2.1's `_TOTAL_BUCKETS` and
 * `_EXTRA_FILES` (Java skips fields it does not know, so writing them is harmless and keeps pypaimon's values).
 */
export const MANIFEST_FILE_META_SCHEMA: AvroSchema = {
  type: "record",
  name: "record",
  namespace: NAMESPACE,
  fields: [
    { name: "_VERSION", type: "int" },
    { name: "_FILE_NAME", type: "string" },
    { name: "_FILE_SIZE", type: "long" },
    { name: "_NUM_ADDED_FILES", type: "long" },
    { name: "_NUM_DELETED_FILES", type: "long" },
    { name: "_PARTITION_STATS", type: simpleStatsRecord("record__PARTITION_STATS") },
    { name: "_SCHEMA_ID", type: "long" },
    { name: "_MIN_BUCKET", ...nullable("int") },
    { name: "_MAX_BUCKET", ...nullable("int") },
    { name: "_MIN_LEVEL", ...nullable("int") },
    { name: "_MAX_LEVEL", ...nullable("int") },
    { name: "_MIN_ROW_ID", ...nullable("long") },
    { name: "_MAX_ROW_ID", ...nullable("long") },
    { name: "_TOTAL_BUCKETS", ...nullable("int") },
    { name: "_EXTRA_FILES", ...nullable({ type: "array", items: "string" }) },
  ],
};

// ---------------------------------------------------------------------------------------------------------------
// Domain → wire

export function encodeManifest(entries: readonly ManifestEntry[], options: ManifestWriteOptions = {}): Uint8Array {
  const records = entries.map((e, i) => {
    const at = `manifest entry ${i} (${e.file.fileName})`;
    const f = e.file;
    return {
      _VERSION: MANIFEST_FORMAT_VERSION,
      _KIND: e.kind,
      _PARTITION: buf(e.partition),
      _BUCKET: e.bucket,
      _TOTAL_BUCKETS: e.totalBuckets,
      _FILE: {
        _FILE_NAME: f.fileName,
        _FILE_SIZE: long(f.fileSize, at, "fileSize"),
        _ROW_COUNT: long(f.rowCount, at, "rowCount"),
        _MIN_KEY: buf(f.minKey),
        _MAX_KEY: buf(f.maxKey),
        _KEY_STATS: statsToWire(f.keyStats),
        _VALUE_STATS: statsToWire(f.valueStats),
        _MIN_SEQUENCE_NUMBER: f.minSequenceNumber,
        _MAX_SEQUENCE_NUMBER: f.maxSequenceNumber,
        _SCHEMA_ID: long(f.schemaId, at, "schemaId"),
        _LEVEL: f.level,
        _EXTRA_FILES: f.extraFiles,
        _CREATION_TIME: f.creationTimeMillis === null ? null : long(f.creationTimeMillis, at, "creationTimeMillis"),
        _DELETE_ROW_COUNT: f.deleteRowCount === null ? null : long(f.deleteRowCount, at, "deleteRowCount"),
        _EMBEDDED_FILE_INDEX: f.embeddedIndex === null ? null : buf(f.embeddedIndex),
        _FILE_SOURCE: f.fileSource,
        _VALUE_STATS_COLS: f.valueStatsCols,
        _EXTERNAL_PATH: f.externalPath,
        _FIRST_ROW_ID: f.firstRowId,
        _WRITE_COLS: f.writeCols,
      },
    };
  });
  return encodeAvroFile(MANIFEST_ENTRY_SCHEMA, records, { codec: options.codec ?? "deflate" });
}

export function encodeManifestList(metas: readonly ManifestFileMeta[], options: ManifestWriteOptions = {}): Uint8Array {
  const records = metas.map((m) => {
    const at = `manifest list record (${m.fileName})`;
    return {
      _VERSION: MANIFEST_FORMAT_VERSION,
      _FILE_NAME: m.fileName,
      _FILE_SIZE: long(m.fileSize, at, "fileSize"),
      _NUM_ADDED_FILES: long(m.numAddedFiles, at, "numAddedFiles"),
      _NUM_DELETED_FILES: long(m.numDeletedFiles, at, "numDeletedFiles"),
      _PARTITION_STATS: statsToWire(m.partitionStats),
      _SCHEMA_ID: long(m.schemaId, at, "schemaId"),
      _MIN_BUCKET: m.minBucket,
      _MAX_BUCKET: m.maxBucket,
      _MIN_LEVEL: m.minLevel,
      _MAX_LEVEL: m.maxLevel,
      _MIN_ROW_ID: m.minRowId,
      _MAX_ROW_ID: m.maxRowId,
      _TOTAL_BUCKETS: m.totalBuckets ?? null,
      _EXTRA_FILES: m.extraFiles ?? null,
    };
  });
  return encodeAvroFile(MANIFEST_FILE_META_SCHEMA, records, { codec: options.codec ?? "deflate" });
}

function statsToWire(s: SimpleStats): Record<string, unknown> {
  // Always a list, never null: Java's SimpleStats.fromRow calls size() on it.
  return { _MIN_VALUES: buf(s.minValues), _MAX_VALUES: buf(s.maxValues), _NULL_COUNTS: s.nullCounts };
}

/** avsc accepts only Buffers for `bytes`; this is a view, not a copy. */
const buf = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/** A domain `number` for an Avro long: must be an integer a double holds exactly. */
function long(n: number, at: string, field: string): bigint {
  if (!Number.isSafeInteger(n)) {
    throw new LakeError(ErrorKind.DataInvalid, `${at}: ${field} must be a safe integer, got ${n}`);
  }
  return BigInt(n);
}

// ---------------------------------------------------------------------------------------------------------------
// Wire → domain

export function decodeManifest(bytes: Uint8Array): ManifestEntry[] {
  return decodeAvroFile(bytes).records.map((raw, i) => {
    const r = new Fields(raw, `manifest entry ${i}`);
    checkVersion(r);
    return {
      kind: fileKind(r),
      partition: r.bytes("_PARTITION"),
      bucket: r.int("_BUCKET"),
      totalBuckets: r.int("_TOTAL_BUCKETS"),
      file: fileFromWire(r.record("_FILE")),
    };
  });
}

export function decodeManifestList(bytes: Uint8Array): ManifestFileMeta[] {
  return decodeAvroFile(bytes).records.map((raw, i) => {
    const r = new Fields(raw, `manifest list record ${i}`);
    checkVersion(r);
    return {
      fileName: r.string("_FILE_NAME"),
      fileSize: r.number("_FILE_SIZE"),
      numAddedFiles: r.number("_NUM_ADDED_FILES"),
      numDeletedFiles: r.number("_NUM_DELETED_FILES"),
      partitionStats: statsFromWire(r.record("_PARTITION_STATS")),
      schemaId: r.number("_SCHEMA_ID"),
      minBucket: r.optional("_MIN_BUCKET", (k) => r.int(k)),
      maxBucket: r.optional("_MAX_BUCKET", (k) => r.int(k)),
      minLevel: r.optional("_MIN_LEVEL", (k) => r.int(k)),
      maxLevel: r.optional("_MAX_LEVEL", (k) => r.int(k)),
      minRowId: r.optional("_MIN_ROW_ID", (k) => r.bigint(k)),
      maxRowId: r.optional("_MAX_ROW_ID", (k) => r.bigint(k)),
      totalBuckets: r.optional("_TOTAL_BUCKETS", (k) => r.int(k)),
      extraFiles: r.optional("_EXTRA_FILES", (k) => r.strings(k)),
    };
  });
}

function fileFromWire(f: Fields): DataFileMeta {
  return {
    fileName: f.string("_FILE_NAME"),
    fileSize: f.number("_FILE_SIZE"),
    rowCount: f.number("_ROW_COUNT"),
    minKey: f.bytes("_MIN_KEY"),
    maxKey: f.bytes("_MAX_KEY"),
    keyStats: statsFromWire(f.record("_KEY_STATS")),
    valueStats: statsFromWire(f.record("_VALUE_STATS")),
    minSequenceNumber: f.bigint("_MIN_SEQUENCE_NUMBER"),
    maxSequenceNumber: f.bigint("_MAX_SEQUENCE_NUMBER"),
    schemaId: f.number("_SCHEMA_ID"),
    level: f.int("_LEVEL"),
    extraFiles: f.strings("_EXTRA_FILES"),
    creationTimeMillis: f.optional("_CREATION_TIME", (k) => f.number(k)),
    deleteRowCount: f.optional("_DELETE_ROW_COUNT", (k) => f.number(k)),
    embeddedIndex: f.optional("_EMBEDDED_FILE_INDEX", (k) => f.bytes(k)),
    fileSource: f.optional("_FILE_SOURCE", (k) => f.int(k)),
    valueStatsCols: f.optional("_VALUE_STATS_COLS", (k) => f.strings(k)),
    externalPath: f.optional("_EXTERNAL_PATH", (k) => f.string(k)),
    firstRowId: f.optional("_FIRST_ROW_ID", (k) => f.bigint(k)),
    writeCols: f.optional("_WRITE_COLS", (k) => f.strings(k)),
  };
}

function statsFromWire(s: Fields): SimpleStats {
  const counts = s.optional("_NULL_COUNTS", (k) => s.array(k));
  return {
    minValues: s.bytes("_MIN_VALUES"),
    maxValues: s.bytes("_MAX_VALUES"),
    // A null list is what old writers left for "no columns"; the domain always has a list.
    nullCounts: (counts ?? []).map((c, i) => (c === null ? null : s.toBigint(c, `_NULL_COUNTS[${i}]`))),
  };
}

function fileKind(r: Fields): FileKind {
  const kind = r.int("_KIND");
  if (kind === FileKind.ADD || kind === FileKind.DELETE) return kind;
  return r.invalid("_KIND", `is an unknown file kind ${kind}`);
}

function checkVersion(r: Fields): void {
  const version = r.optional("_VERSION", (k) => r.int(k));
  if (version !== null && version !== MANIFEST_FORMAT_VERSION) {
    throw new LakeError(
      ErrorKind.Unsupported,
      `${r.where}: unsupported manifest _VERSION ${version} ` +
        `(expected ${MANIFEST_FORMAT_VERSION}; tables of version 1 must be recreated)`,
    );
  }
}
