import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { crc32 } from "node:zlib";
import avro from "avsc";
import { decodeAvroFile, encodeAvroFile, snappyDecompress, type AvroSchema } from "../../../src/codec/avro.ts";
import { ErrorKind, isLakeError } from "../../../src/errors.ts";

const FIXTURES = new URL("../../fixtures/pypaimon/", import.meta.url);

const LONGS_SCHEMA: AvroSchema = {
  type: "record",
  name: "Longs",
  fields: [
    { name: "v", type: "long" },
    { name: "maybe", type: ["null", "long"], default: null },
    { name: "list", type: { type: "array", items: ["null", "long"] } },
    { name: "ts", type: ["null", { type: "long", logicalType: "timestamp-millis" }], default: null },
  ],
};

const EXTREMES = [2n ** 63n - 1n, -(2n ** 63n), 0n, -1n, 1n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 1234567890123456789n];

/** A container file assembled with avsc alone, to feed the decoder inputs our encoder never produces. */
function container(schema: AvroSchema, codec: string, blocks: { count: number; data: Buffer }[]): Uint8Array {
  const header = avro.Type.forSchema({
    type: "record",
    name: "Header",
    fields: [
      { name: "magic", type: { type: "fixed", name: "Magic", size: 4 } },
      { name: "meta", type: { type: "map", values: "bytes" } },
      { name: "sync", type: { type: "fixed", name: "Sync", size: 16 } },
    ],
  });
  const sync = Buffer.alloc(16, 7);
  const long = avro.Type.forSchema("long");
  const parts = [
    header.toBuffer({
      magic: Buffer.from("Obj\x01", "latin1"),
      meta: { "avro.schema": Buffer.from(JSON.stringify(schema)), "avro.codec": Buffer.from(codec) },
      sync,
    }),
  ];
  for (const b of blocks) parts.push(long.toBuffer(b.count), long.toBuffer(b.data.length), b.data, sync);
  return Buffer.concat(parts);
}

const isKind = (kind: ErrorKind) => (e: unknown) => isLakeError(e, kind);

void test("avro - long 2^63-1 round-trips", () => {
  const records = EXTREMES.map((v) => ({ v, maybe: v, list: [v, null], ts: v }));
  for (const codec of ["null", "deflate"] as const) {
    const back = decodeAvroFile(encodeAvroFile(LONGS_SCHEMA, records, { codec }));
    assert.equal(back.codec, codec);
    assert.deepEqual(back.records, records);
  }
});

void test("avro - longs decode as bigint also when written as safe numbers; nulls stay null", () => {
  const back = decodeAvroFile(encodeAvroFile(LONGS_SCHEMA, [{ v: 42, maybe: null, list: [], ts: null }]));
  assert.deepEqual(back.records, [{ v: 42n, maybe: null, list: [], ts: null }]);
});

void test("avro - long out of int64 range or a fraction is rejected with the field named", () => {
  for (const v of [2n ** 63n, -(2n ** 63n) - 1n, 1.5]) {
    assert.throws(
      () => encodeAvroFile(LONGS_SCHEMA, [{ v, maybe: null, list: [], ts: null }]),
      (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /\bv\b/.test(e.message),
    );
  }
});

void test("avro - header schema keeps timestamp-millis and null-first unions", () => {
  const bytes = encodeAvroFile(LONGS_SCHEMA, []);
  const text = Buffer.from(bytes).toString("latin1");
  assert.ok(text.includes('"logicalType":"timestamp-millis"'), "logical type must be in the written header");
  const { schema } = decodeAvroFile(bytes);
  const fields = (schema as { fields: { name: string; type: unknown; default?: unknown }[] }).fields;
  assert.deepEqual(fields.find((f) => f.name === "ts"), {
    name: "ts",
    type: ["null", { type: "long", logicalType: "timestamp-millis" }],
    default: null,
  });
  assert.deepEqual(fields.find((f) => f.name === "maybe")?.type, ["null", "long"]);
});

void test("avro - an empty file has a header and no blocks", () => {
  const sync = new Uint8Array(16).fill(9);
  const bytes = encodeAvroFile(LONGS_SCHEMA, [], { codec: "null", syncMarker: sync });
  const back = decodeAvroFile(bytes);
  assert.deepEqual(back.records, []);
  // Header ends with the sync marker; nothing follows.
  assert.deepEqual(Buffer.from(bytes.subarray(bytes.length - 16)), Buffer.from(sync));
});

void test("avro - large inputs are split into several blocks and read back in order", () => {
  const schema: AvroSchema = { type: "record", name: "R", fields: [{ name: "s", type: "string" }, { name: "n", type: "long" }] };
  const records = Array.from({ length: 3000 }, (_, i) => ({ s: "x".repeat(100) + i, n: BigInt(i) }));
  const bytes = encodeAvroFile(schema, records, { codec: "null", syncMarker: new Uint8Array(16).fill(0xab) });
  const markers = Buffer.from(bytes).toString("hex").split("ab".repeat(16)).length - 1;
  assert.ok(markers >= 1 + 4, `expected header + several blocks, saw ${markers} sync markers`);
  assert.deepEqual(decodeAvroFile(bytes).records, records);
  assert.deepEqual(decodeAvroFile(encodeAvroFile(schema, records)).records, records);
});

void test("avro - bytes come back as the same bytes", () => {
  const schema: AvroSchema = { type: "record", name: "B", fields: [{ name: "b", type: "bytes" }] };
  const b = Buffer.from([0, 1, 2, 255]);
  const [rec] = decodeAvroFile(encodeAvroFile(schema, [{ b }])).records as { b: Uint8Array }[];
  assert.deepEqual(Buffer.from(rec!.b), b);
});

void test("avro - zstd blocks whose frames carry no content size decode (Java's streaming compressor)", () => {
  const bytes = readFileSync(new URL("append/manifest-zstd-stream.avro", FIXTURES));
  // Prove the fixture exercises the case: every zstd frame header has neither a content size nor single-segment.
  const magic = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
  let frames = 0;
  for (let at = bytes.indexOf(magic); at >= 0; at = bytes.indexOf(magic, at + 1)) {
    const descriptor = bytes[at + 4]!;
    assert.equal(descriptor >> 6, 0, "frame content size flag");
    assert.equal((descriptor >> 5) & 1, 0, "single segment flag");
    frames++;
  }
  assert.equal(frames, 2);
  const streamed = decodeAvroFile(bytes);
  assert.equal(streamed.codec, "zstandard");
  const original = decodeAvroFile(readFileSync(new URL(`append/${manifestName("append")}`, FIXTURES)));
  assert.equal(original.codec, "zstandard");
  assert.ok(streamed.records.length >= 2);
  assert.deepEqual(streamed.records, original.records);
});

void test("avro - snappy blocks (with CRC trailer) decode", () => {
  const snappy = decodeAvroFile(readFileSync(new URL("append/manifest-snappy.avro", FIXTURES)));
  assert.equal(snappy.codec, "snappy");
  const original = decodeAvroFile(readFileSync(new URL(`append/${manifestName("append")}`, FIXTURES)));
  assert.deepEqual(snappy.records, original.records);
});

void test("avro - snappy decompression handles literals and overlapping copies", () => {
  // "abcabcabcabcX": literal "abc", copy(len 9, offset 3) overlapping itself, literal "X".
  const src = Uint8Array.from([13, (3 - 1) << 2, 0x61, 0x62, 0x63, 1 | ((9 - 4) << 2), 3, 0, 0x58]);
  assert.equal(snappyDecompress(src).toString("latin1"), "abcabcabcabcX");
  // 2-byte-offset copy.
  const src2 = Uint8Array.from([6, (2 - 1) << 2, 0x68, 0x69, 2 | ((4 - 1) << 2), 2, 0]);
  assert.equal(snappyDecompress(src2).toString("latin1"), "hihihi");
  // A copy reaching before the start of the output is corrupt, not a crash.
  assert.throws(() => snappyDecompress(Uint8Array.from([5, 1 | (1 << 2), 9])), isKind(ErrorKind.DataInvalid));
});

void test("avro - snappy CRC mismatch is DataInvalid", () => {
  const schema: AvroSchema = { type: "record", name: "S", fields: [{ name: "s", type: "string" }] };
  const datum = avro.Type.forSchema(schema as avro.Schema).toBuffer({ s: "hi" });
  const literal = Buffer.concat([Buffer.from([datum.length, (datum.length - 1) << 2]), datum]);
  const good = Buffer.alloc(4);
  good.writeUInt32BE(crc32(datum) >>> 0);
  assert.deepEqual(decodeAvroFile(container(schema, "snappy", [{ count: 1, data: Buffer.concat([literal, good]) }])).records, [
    { s: "hi" },
  ]);
  const bad = Buffer.from(good);
  bad[3] = bad[3]! ^ 1;
  assert.throws(
    () => decodeAvroFile(container(schema, "snappy", [{ count: 1, data: Buffer.concat([literal, bad]) }])),
    isKind(ErrorKind.DataInvalid),
  );
});

void test("avro - unknown codec is Unsupported; writing a codec we lack is refused", () => {
  const schema: AvroSchema = { type: "record", name: "S", fields: [{ name: "s", type: "string" }] };
  assert.throws(() => decodeAvroFile(container(schema, "bzip2", [])), isKind(ErrorKind.Unsupported));
  assert.throws(
    () => encodeAvroFile(schema, [], { codec: "zstandard" as unknown as "deflate" }),
    isKind(ErrorKind.Unsupported),
  );
});

void test("avro - malformed input is DataInvalid", () => {
  const good = encodeAvroFile(LONGS_SCHEMA, [{ v: 1n, maybe: 2n, list: [3n], ts: 4n }], { codec: "null" });
  assert.throws(() => decodeAvroFile(new Uint8Array([1, 2, 3])), isKind(ErrorKind.DataInvalid));
  assert.throws(() => decodeAvroFile(good.subarray(0, good.length - 5)), isKind(ErrorKind.DataInvalid));
  const badSync = Uint8Array.from(good);
  badSync[badSync.length - 1] = badSync[badSync.length - 1]! ^ 0xff;
  assert.throws(() => decodeAvroFile(badSync), isKind(ErrorKind.DataInvalid));
  // A block whose declared record count exceeds its data.
  const schema: AvroSchema = { type: "record", name: "S", fields: [{ name: "s", type: "string" }] };
  const one = avro.Type.forSchema(schema as avro.Schema).toBuffer({ s: "x" });
  assert.throws(() => decodeAvroFile(container(schema, "null", [{ count: 2, data: one }])), isKind(ErrorKind.DataInvalid));
});

void test("avro - a writer schema with {\"type\":\"long\"} objects still decodes longs as bigint", () => {
  const schema: AvroSchema = {
    type: "record",
    name: "W",
    fields: [
      { name: "a", type: { type: "long" } },
      { name: "b", type: { type: "long", logicalType: "timestamp-micros" } },
    ],
  };
  const big = 2n ** 62n + 3n;
  const data = avro.Type.forSchema({
    type: "record",
    name: "W",
    fields: [
      { name: "a", type: "long" },
      { name: "b", type: "long" },
    ],
  }).toBuffer({ a: 1, b: 2 });
  assert.deepEqual(decodeAvroFile(container(schema, "null", [{ count: 1, data }])).records, [{ a: 1n, b: 2n }]);
  const written = encodeAvroFile(schema, [{ a: big, b: -big }]);
  assert.deepEqual(decodeAvroFile(written).records, [{ a: big, b: -big }]);
  // Logical types avsc has no class for are still in the header.
  assert.deepEqual(decodeAvroFile(written).schema, schema);
});

/** The single manifest of a fixture table, by its name in expected.json. */
function manifestName(table: string): string {
  const expected = JSON.parse(readFileSync(new URL(`${table}/expected.json`, FIXTURES), "utf8")) as {
    manifests: { fileName: string }[];
  };
  return expected.manifests[0]!.fileName;
}

void test("avro - files of different writer schemas under one record name decode each by its own, alternately (parsed schemas are shared by text)", () => {
  const narrow: AvroSchema = { type: "record", name: "Same", fields: [{ name: "a", type: "long" }] };
  const wide: AvroSchema = { type: "record", name: "Same", fields: [{ name: "a", type: "long" }, { name: "b", type: "string" }] };
  const narrowFile = encodeAvroFile(narrow, [{ a: 1n }], { codec: "deflate" });
  const wideFile = encodeAvroFile(wide, [{ a: 2n, b: "x" }], { codec: "deflate" });
  for (let i = 0; i < 2; i++) {
    const n = decodeAvroFile(narrowFile);
    const w = decodeAvroFile(wideFile);
    assert.deepEqual(n.schema, narrow);
    assert.deepEqual(n.records, [{ a: 1n }]);
    assert.deepEqual(w.schema, wide);
    assert.deepEqual(w.records, [{ a: 2n, b: "x" }]);
  }
});

void test("avro - a header schema that is not JSON, or not a valid schema, is refused on every read (a failure is not remembered as a schema)", () => {
  const bad = container({ type: "record", name: "R", fields: [{ name: "v", type: "nosuchtype" }] } as unknown as AvroSchema, "null", []);
  for (let i = 0; i < 2; i++) assert.throws(() => decodeAvroFile(bad), (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /not a valid schema/.test((e as Error).message));
});
