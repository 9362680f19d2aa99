import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { decodeAvroFile, encodeAvroFile, type AvroSchema } from "../../../src/codec/avro.ts";
import { ErrorKind, isLakeError } from "../../../src/errors.ts";
import {
  EMPTY_STATS,
  FileKind,
  fileIdentifier,
  mergeEntries,
  type DataFileMeta,
  type ManifestEntry,
  type ManifestFileMeta,
} from "../../../src/format/manifest.ts";
import {
  MANIFEST_ENTRY_SCHEMA,
  MANIFEST_FILE_META_SCHEMA,
  decodeManifest,
  decodeManifestList,
  encodeManifest,
  encodeManifestList,
} from "../../../src/format/wire/manifest-avro.ts";

const FIXTURES = new URL("../../fixtures/pypaimon/", import.meta.url);
const MAX_LONG = 2n ** 63n - 1n;
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const fromHex = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, "hex"));
const isKind = (kind: ErrorKind) => (e: unknown) => isLakeError(e, kind);

// Partition ('2024-01-01') as pypaimon serialises it (format doc §5.4).
const PARTITION = fromHex("0000000100000000000000000a00000010000000323032342d30312d3031000000000000");

function dataFile(over: Partial<DataFileMeta> = {}): DataFileMeta {
  return {
    fileName: "data-1.parquet",
    fileSize: 1024,
    rowCount: 10,
    minKey: EMPTY_STATS.minValues,
    maxKey: EMPTY_STATS.maxValues,
    keyStats: EMPTY_STATS,
    valueStats: EMPTY_STATS,
    minSequenceNumber: 0n,
    maxSequenceNumber: 9n,
    schemaId: 0,
    level: 0,
    extraFiles: [],
    creationTimeMillis: 1_720_000_000_123,
    deleteRowCount: 0,
    embeddedIndex: null,
    fileSource: 0,
    valueStatsCols: [],
    externalPath: null,
    firstRowId: null,
    writeCols: null,
    ...over,
  };
}

function entry(kind: FileKind, over: Partial<DataFileMeta> = {}, partition = PARTITION, bucket = 0): ManifestEntry {
  return { kind, partition, bucket, totalBuckets: 2, file: dataFile(over) };
}

function listMeta(over: Partial<ManifestFileMeta> = {}): ManifestFileMeta {
  return {
    fileName: "manifest-1-0",
    fileSize: 2048,
    numAddedFiles: 3,
    numDeletedFiles: 1,
    partitionStats: { minValues: PARTITION, maxValues: PARTITION, nullCounts: [0n] },
    schemaId: 0,
    minBucket: 0,
    maxBucket: 1,
    minLevel: 0,
    maxLevel: 0,
    minRowId: null,
    maxRowId: null,
    totalBuckets: null,
    extraFiles: null,
    ...over,
  };
}

type SchemaNode = { name?: string; type?: unknown; fields?: SchemaNode[]; items?: unknown; logicalType?: string };

/** Every union in a schema, and every named record, found by walking it. */
function walk(schema: unknown, unions: unknown[][], names: string[]): void {
  if (Array.isArray(schema)) {
    unions.push(schema);
    schema.forEach((s) => walk(s, unions, names));
  } else if (typeof schema === "object" && schema !== null) {
    const n = schema as SchemaNode;
    if (n.fields) {
      names.push(String(n.name));
      n.fields.forEach((f) => walk(f.type, unions, names));
    } else {
      walk(n.type, unions, names);
      walk(n.items, unions, names);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Round trips

void test("manifest - entries round-trip with 2^63-1 sequence numbers, nulls and empty stats", () => {
  const entries: ManifestEntry[] = [
    entry(FileKind.ADD),
    entry(FileKind.DELETE, {
      fileName: "data-2.parquet",
      minSequenceNumber: MAX_LONG - 1n,
      maxSequenceNumber: MAX_LONG,
      firstRowId: MAX_LONG,
      level: 5,
      extraFiles: ["data-2.parquet.index"],
      creationTimeMillis: null,
      deleteRowCount: null,
      embeddedIndex: Uint8Array.from([1, 2, 3]),
      fileSource: null,
      valueStatsCols: null,
      externalPath: "s3://bucket/elsewhere/data-2.parquet",
      writeCols: ["a", "b"],
      minKey: fromHex("0000000100000000000000000500000000000000"),
      maxKey: fromHex("0000000100000000000000000900000000000000"),
      keyStats: {
        minValues: fromHex("0000000100000000000000000500000000000000"),
        maxValues: fromHex("0000000100000000000000000900000000000000"),
        nullCounts: [0n],
      },
      valueStats: {
        minValues: fromHex("000000020000000000000000"),
        maxValues: fromHex("000000020000000000000000"),
        nullCounts: [null, MAX_LONG],
      },
      fileSize: Number.MAX_SAFE_INTEGER,
      rowCount: 0,
      schemaId: 3,
    }),
    { ...entry(FileKind.ADD, { fileName: "data-3.parquet" }), partition: EMPTY_STATS.minValues, bucket: -2, totalBuckets: -2 },
  ];
  for (const codec of ["deflate", "null"] as const) {
    const bytes = encodeManifest(entries, { codec });
    assert.equal(decodeAvroFile(bytes).codec, codec);
    assert.deepEqual(decodeManifest(bytes), entries);
  }
});

void test("manifest - list round-trips with 2^63-1 row ids and null optionals", () => {
  const metas = [
    listMeta(),
    listMeta({
      fileName: "manifest-2-0",
      partitionStats: EMPTY_STATS,
      minBucket: null,
      maxBucket: null,
      minLevel: null,
      maxLevel: null,
      minRowId: 0n,
      maxRowId: MAX_LONG,
      totalBuckets: 4,
      extraFiles: ["manifest-2-0.avro.sidecar"],
    }),
  ];
  assert.deepEqual(decodeManifestList(encodeManifestList(metas)), metas);
  // totalBuckets / extraFiles may be left out by callers; they read back as null.
  const { totalBuckets: _t, extraFiles: _e, ...bare } = listMeta();
  assert.deepEqual(decodeManifestList(encodeManifestList([bare])), [listMeta()]);
});

void test("manifest - written schema: Java record names, _VERSION 2, null-first unions, timestamp-millis", () => {
  const file = decodeAvroFile(encodeManifest([entry(FileKind.ADD)]));
  const unions: unknown[][] = [];
  const names: string[] = [];
  walk(file.schema, unions, names);
  assert.equal((file.schema as { namespace?: string }).namespace, "org.apache.paimon.avro.generated");
  assert.deepEqual(names, ["record", "record__FILE", "record__FILE__KEY_STATS", "record__FILE__VALUE_STATS"]);
  assert.ok(unions.length > 0);
  for (const u of unions) assert.equal(u[0], "null", `union ${JSON.stringify(u)} must start with null`);
  const fileRecord = (file.schema as SchemaNode).fields!.find((f) => f.name === "_FILE")!.type as SchemaNode;
  const creation = fileRecord.fields!.find((f) => f.name === "_CREATION_TIME")!;
  assert.deepEqual(creation.type, ["null", { type: "long", logicalType: "timestamp-millis" }]);
  const fileNames = fileRecord.fields!.map((f) => f.name);
  assert.equal(fileNames.length, 20, "DataFileMeta fields 0..19");
  assert.equal(fileNames[0], "_FILE_NAME");
  assert.equal(fileNames[19], "_WRITE_COLS");
  const [raw] = file.records as { _VERSION: number }[];
  assert.equal(raw!._VERSION, 2);

  const list = decodeAvroFile(encodeManifestList([listMeta()]));
  const listNames: string[] = [];
  const listUnions: unknown[][] = [];
  walk(list.schema, listUnions, listNames);
  assert.equal((list.schema as { namespace?: string }).namespace, "org.apache.paimon.avro.generated");
  assert.deepEqual(listNames, ["record", "record__PARTITION_STATS"]);
  for (const u of listUnions) assert.equal(u[0], "null");
  assert.equal((list.records[0] as { _VERSION: number })._VERSION, 2);
});

void test("manifest - empty stats are written as a list, never null", () => {
  const file = decodeAvroFile(encodeManifest([entry(FileKind.ADD)]));
  const rec = file.records[0] as { _FILE: { _KEY_STATS: { _NULL_COUNTS: unknown }; _VALUE_STATS: { _NULL_COUNTS: unknown } } };
  assert.deepEqual(rec._FILE._KEY_STATS._NULL_COUNTS, []);
  assert.deepEqual(rec._FILE._VALUE_STATS._NULL_COUNTS, []);
  assert.equal(hex(EMPTY_STATS.minValues), "000000000000000000000000");
});

void test("manifest - domain numbers that are not safe integers are refused", () => {
  assert.throws(() => encodeManifest([entry(FileKind.ADD, { fileSize: 1.5 })]), isKind(ErrorKind.DataInvalid));
  assert.throws(() => encodeManifestList([listMeta({ fileSize: 2 ** 60 })]), isKind(ErrorKind.DataInvalid));
});

// ---------------------------------------------------------------------------------------------------------------
// Reading what other writers produce

/** A minimal Java-2.0-style manifest schema: no _EXTERNAL_PATH/_FIRST_ROW_ID/_WRITE_COLS, plus an unknown field. */
function foreignManifestSchema(version: boolean): AvroSchema {
  const full = MANIFEST_ENTRY_SCHEMA as { fields: SchemaNode[] };
  const file = full.fields.find((f) => f.name === "_FILE")!.type as SchemaNode;
  const keep = new Set(["_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS"]);
  return {
    type: "record",
    name: "ManifestEntry",
    fields: [
      ...full.fields.filter((f) => f.name !== "_FILE" && (version || f.name !== "_VERSION")),
      {
        name: "_FILE",
        type: {
          type: "record",
          name: "DataFileMeta",
          fields: [
            { name: "_FUTURE_FIELD", type: ["null", "string"], default: null },
            ...file.fields!.filter((f) => !keep.has(f.name!)).reverse(),
          ],
        },
      },
    ],
  };
}

function foreignRecord(over: Record<string, unknown> = {}, fileOver: Record<string, unknown> = {}): Record<string, unknown> {
  const stats = { _MIN_VALUES: Buffer.alloc(12), _MAX_VALUES: Buffer.alloc(12), _NULL_COUNTS: null };
  return {
    _VERSION: 2,
    _KIND: 0,
    _PARTITION: Buffer.from(PARTITION),
    _BUCKET: 1,
    _TOTAL_BUCKETS: 2,
    _FILE: {
      _FUTURE_FIELD: "ignored",
      _FILE_NAME: "data-x.parquet",
      _FILE_SIZE: 10n,
      _ROW_COUNT: 2n,
      _MIN_KEY: Buffer.alloc(12),
      _MAX_KEY: Buffer.alloc(12),
      _KEY_STATS: stats,
      _VALUE_STATS: stats,
      _MIN_SEQUENCE_NUMBER: 0n,
      _MAX_SEQUENCE_NUMBER: 1n,
      _SCHEMA_ID: 0n,
      _LEVEL: 0,
      _EXTRA_FILES: [],
      _CREATION_TIME: null,
      _DELETE_ROW_COUNT: null,
      _EMBEDDED_FILE_INDEX: null,
      _FILE_SOURCE: null,
      _VALUE_STATS_COLS: null,
      ...fileOver,
    },
    ...over,
  };
}

void test("manifest - reads by name: missing nullable fields are null, unknown fields ignored, null counts null → []", () => {
  for (const version of [true, false]) {
    const bytes = encodeAvroFile(foreignManifestSchema(version), [foreignRecord()]);
    const [e] = decodeManifest(bytes);
    assert.equal(e!.file.fileName, "data-x.parquet");
    assert.equal(e!.bucket, 1);
    assert.equal(e!.file.externalPath, null);
    assert.equal(e!.file.firstRowId, null);
    assert.equal(e!.file.writeCols, null);
    assert.deepEqual(e!.file.keyStats.nullCounts, []);
    assert.deepEqual(e!.file.valueStats.nullCounts, []);
    assert.equal(hex(e!.partition), hex(PARTITION));
  }
});

void test("manifest - _VERSION other than 2 is Unsupported", () => {
  const bytes = encodeAvroFile(foreignManifestSchema(true), [foreignRecord({ _VERSION: 1 })]);
  assert.throws(() => decodeManifest(bytes), isKind(ErrorKind.Unsupported));
  const list = encodeAvroFile(MANIFEST_FILE_META_SCHEMA, [
    {
      _VERSION: 3,
      _FILE_NAME: "m",
      _FILE_SIZE: 1n,
      _NUM_ADDED_FILES: 0n,
      _NUM_DELETED_FILES: 0n,
      _PARTITION_STATS: { _MIN_VALUES: Buffer.alloc(12), _MAX_VALUES: Buffer.alloc(12), _NULL_COUNTS: [] },
      _SCHEMA_ID: 0n,
    },
  ]);
  assert.throws(() => decodeManifestList(list), isKind(ErrorKind.Unsupported));
});

void test("manifest - missing required field, unknown kind or oversized number is DataInvalid naming the field", () => {
  const schema = foreignManifestSchema(true) as { fields: SchemaNode[] };
  const file = schema.fields.find((f) => f.name === "_FILE")!.type as SchemaNode;
  const noRowCount: AvroSchema = {
    ...schema,
    fields: [
      ...schema.fields.filter((f) => f.name !== "_FILE"),
      { name: "_FILE", type: { ...file, fields: file.fields!.filter((f) => f.name !== "_ROW_COUNT") } },
    ],
  };
  assert.throws(
    () => decodeManifest(encodeAvroFile(noRowCount, [foreignRecord()])),
    (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && e.message.includes("_FILE._ROW_COUNT is missing"),
  );
  assert.throws(
    () => decodeManifest(encodeAvroFile(foreignManifestSchema(true), [foreignRecord({ _KIND: 7 })])),
    (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && e.message.includes("_KIND"),
  );
  assert.throws(
    () => decodeManifest(encodeAvroFile(foreignManifestSchema(true), [foreignRecord({}, { _FILE_SIZE: MAX_LONG })])),
    (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && e.message.includes("_FILE._FILE_SIZE"),
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Golden files from pypaimon

interface Expected {
  manifestList: { fileName: string; codec: string; records: WireRecord[] };
  manifests: { fileName: string; fileSize: string; codec: string; records: WireRecord[] }[];
  splits: { bucket: number; files: { fileName: string; rowCount: string }[] }[];
}
type WireValue = string | null | { hex: string } | { timestampMillis: string } | WireValue[] | WireRecord;
interface WireRecord {
  [key: string]: WireValue;
}

const readExpected = (table: string): Expected =>
  JSON.parse(readFileSync(new URL(`${table}/expected.json`, FIXTURES), "utf8")) as Expected;
const fixture = (table: string, name: string): Uint8Array => readFileSync(new URL(`${table}/${name}`, FIXTURES));

const str = (v: WireValue | undefined): string => {
  assert.equal(typeof v, "string");
  return v as string;
};
const hexOf = (v: WireValue | undefined): string => (v as { hex: string }).hex;
const optBig = (v: WireValue | undefined): bigint | null => (v === null || v === undefined ? null : BigInt(str(v)));
const optNum = (v: WireValue | undefined): number | null => (v === null || v === undefined ? null : Number(str(v)));

function assertStats(actual: { minValues: Uint8Array; maxValues: Uint8Array; nullCounts: Array<bigint | null> }, wire: WireRecord): void {
  assert.equal(hex(actual.minValues), hexOf(wire._MIN_VALUES));
  assert.equal(hex(actual.maxValues), hexOf(wire._MAX_VALUES));
  const counts = (wire._NULL_COUNTS ?? []) as WireValue[];
  assert.deepEqual(actual.nullCounts, counts.map(optBig));
}

for (const table of ["append", "pk"]) {
  void test(`manifest - pypaimon ${table} table: manifest list (zstd) decodes`, () => {
    const expected = readExpected(table);
    assert.equal(expected.manifestList.codec, "zstandard");
    const metas = decodeManifestList(fixture(table, expected.manifestList.fileName));
    assert.equal(metas.length, expected.manifestList.records.length);
    metas.forEach((m, i) => {
      const w = expected.manifestList.records[i]!;
      assert.equal(m.fileName, str(w._FILE_NAME));
      assert.equal(m.fileSize, Number(str(w._FILE_SIZE)));
      // The recorded size is the manifest's exact byte length.
      assert.equal(m.fileSize, fixture(table, m.fileName).length);
      assert.equal(m.numAddedFiles, Number(str(w._NUM_ADDED_FILES)));
      assert.equal(m.numDeletedFiles, Number(str(w._NUM_DELETED_FILES)));
      assert.equal(m.schemaId, Number(str(w._SCHEMA_ID)));
      assert.equal(m.minBucket, optNum(w._MIN_BUCKET));
      assert.equal(m.maxBucket, optNum(w._MAX_BUCKET));
      assert.equal(m.minLevel, optNum(w._MIN_LEVEL));
      assert.equal(m.maxLevel, optNum(w._MAX_LEVEL));
      assert.equal(m.minRowId, optBig(w._MIN_ROW_ID));
      assert.equal(m.maxRowId, optBig(w._MAX_ROW_ID));
      assert.equal(m.totalBuckets, optNum(w._TOTAL_BUCKETS));
      assertStats(m.partitionStats, w._PARTITION_STATS as WireRecord);
    });
  });

  void test(`manifest - pypaimon ${table} table: manifest entries (zstd) decode`, () => {
    const expected = readExpected(table);
    for (const m of expected.manifests) {
      assert.equal(m.codec, "zstandard");
      const entries = decodeManifest(fixture(table, m.fileName));
      assert.equal(entries.length, m.records.length);
      entries.forEach((e, i) => {
        const w = m.records[i]!;
        const f = w._FILE as WireRecord;
        assert.equal(e.kind, Number(str(w._KIND)));
        assert.equal(hex(e.partition), hexOf(w._PARTITION));
        assert.equal(e.bucket, Number(str(w._BUCKET)));
        assert.equal(e.totalBuckets, Number(str(w._TOTAL_BUCKETS)));
        assert.equal(e.file.fileName, str(f._FILE_NAME));
        assert.equal(e.file.fileSize, Number(str(f._FILE_SIZE)));
        assert.equal(e.file.rowCount, Number(str(f._ROW_COUNT)));
        assert.equal(hex(e.file.minKey), hexOf(f._MIN_KEY));
        assert.equal(hex(e.file.maxKey), hexOf(f._MAX_KEY));
        assertStats(e.file.keyStats, f._KEY_STATS as WireRecord);
        assertStats(e.file.valueStats, f._VALUE_STATS as WireRecord);
        assert.equal(e.file.minSequenceNumber, BigInt(str(f._MIN_SEQUENCE_NUMBER)));
        assert.equal(e.file.maxSequenceNumber, BigInt(str(f._MAX_SEQUENCE_NUMBER)));
        assert.equal(e.file.schemaId, Number(str(f._SCHEMA_ID)));
        assert.equal(e.file.level, Number(str(f._LEVEL)));
        assert.deepEqual(e.file.extraFiles, f._EXTRA_FILES);
        const created = f._CREATION_TIME as { timestampMillis: string } | null;
        assert.equal(e.file.creationTimeMillis, created === null ? null : Number(created.timestampMillis));
        assert.equal(e.file.deleteRowCount, optNum(f._DELETE_ROW_COUNT));
        assert.equal(e.file.fileSource, optNum(f._FILE_SOURCE));
        assert.deepEqual(e.file.valueStatsCols, f._VALUE_STATS_COLS);
        assert.equal(e.file.externalPath, f._EXTERNAL_PATH);
        assert.equal(e.file.firstRowId, optBig(f._FIRST_ROW_ID));
        assert.deepEqual(e.file.writeCols, f._WRITE_COLS);
      });
    }
  });

  void test(`manifest - pypaimon ${table} table: live files match pypaimon's own scan`, () => {
    const expected = readExpected(table);
    const metas = decodeManifestList(fixture(table, expected.manifestList.fileName));
    const live = mergeEntries(metas.flatMap((m) => decodeManifest(fixture(table, m.fileName))));
    const ours = live.map((e) => `${e.bucket}/${e.file.fileName}/${e.file.rowCount}`).sort();
    const theirs = expected.splits.flatMap((s) => s.files.map((f) => `${s.bucket}/${f.fileName}/${f.rowCount}`)).sort();
    // The fixture holds the latest delta only; for the pk table that is a subset of the live files.
    for (const f of ours) assert.ok(theirs.includes(f), `${f} not in pypaimon's plan`);
    if (table === "append") assert.deepEqual(ours, theirs);
    assert.ok(ours.length >= 2);
  });

  void test(`manifest - pypaimon ${table} table: decoded entries re-encode to the same entries`, () => {
    const expected = readExpected(table);
    const entries = decodeManifest(fixture(table, expected.manifests[0]!.fileName));
    assert.deepEqual(decodeManifest(encodeManifest(entries)), entries);
    const metas = decodeManifestList(fixture(table, expected.manifestList.fileName));
    assert.deepEqual(decodeManifestList(encodeManifestList(metas)), metas);
  });
}

void test("manifest - pypaimon append manifest re-encoded with streaming zstd and with snappy decodes the same", () => {
  const expected = readExpected("append");
  const original = decodeManifest(fixture("append", expected.manifests[0]!.fileName));
  assert.deepEqual(decodeManifest(fixture("append", "manifest-zstd-stream.avro")), original);
  assert.deepEqual(decodeManifest(fixture("append", "manifest-snappy.avro")), original);
});

// ---------------------------------------------------------------------------------------------------------------
// mergeEntries

void test("manifest - mergeEntries: DELETE cancels an earlier ADD; order of survivors is kept", () => {
  const a = entry(FileKind.ADD, { fileName: "a" });
  const b = entry(FileKind.ADD, { fileName: "b" });
  const c = entry(FileKind.ADD, { fileName: "c" });
  const delB = entry(FileKind.DELETE, { fileName: "b" });
  assert.deepEqual(mergeEntries([a, b, c, delB]), [a, c]);
});

void test("manifest - mergeEntries: unmatched DELETEs are dropped unless asked for", () => {
  const a = entry(FileKind.ADD, { fileName: "a" });
  const delX = entry(FileKind.DELETE, { fileName: "x" });
  assert.deepEqual(mergeEntries([delX, a]), [a]);
  assert.deepEqual(mergeEntries([delX, a], { keepUnmatchedDeletes: true }), [delX, a]);
});

void test("manifest - mergeEntries: adding a file twice is DataInvalid", () => {
  const a = entry(FileKind.ADD, { fileName: "a" });
  assert.throws(
    () => mergeEntries([a, entry(FileKind.ADD, { fileName: "a" })]),
    (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /Trying to add file a which is already in the map/.test(e.message),
  );
  // Re-adding after a DELETE is fine: the pair cancelled and the file is new again.
  assert.deepEqual(mergeEntries([a, entry(FileKind.DELETE, { fileName: "a" }), a]), [a]);
  // A DELETE ahead of its ADD is rejected as Java and pypaimon do.
  assert.throws(() => mergeEntries([entry(FileKind.DELETE, { fileName: "a" }), a]), isKind(ErrorKind.DataInvalid));
});

void test("manifest - mergeEntries: a DELETE must match the ADD's whole identifier", () => {
  const a = entry(FileKind.ADD, { fileName: "a", level: 1, extraFiles: ["a.index"] });
  const variants: ManifestEntry[] = [
    entry(FileKind.DELETE, { fileName: "a", level: 2, extraFiles: ["a.index"] }),
    entry(FileKind.DELETE, { fileName: "a", level: 1, extraFiles: [] }),
    entry(FileKind.DELETE, { fileName: "a", level: 1, extraFiles: ["a.index"], externalPath: "/x/a" }),
    entry(FileKind.DELETE, { fileName: "a", level: 1, extraFiles: ["a.index"], embeddedIndex: Uint8Array.from([1]) }),
    entry(FileKind.DELETE, { fileName: "a", level: 1, extraFiles: ["a.index"] }, EMPTY_STATS.minValues),
    entry(FileKind.DELETE, { fileName: "a", level: 1, extraFiles: ["a.index"] }, PARTITION, 1),
  ];
  for (const d of variants) {
    assert.notEqual(fileIdentifier(d), fileIdentifier(a));
    assert.deepEqual(mergeEntries([a, d]), [a]);
  }
  // Fields outside the identifier (sizes, stats, sequence numbers) do not matter; partition is compared by bytes.
  const same = entry(FileKind.DELETE, { fileName: "a", level: 1, extraFiles: ["a.index"], rowCount: 99, minSequenceNumber: 5n }, Uint8Array.from(PARTITION));
  assert.equal(fileIdentifier(same), fileIdentifier(a));
  assert.deepEqual(mergeEntries([a, same]), []);
});
