/**
 * Fuzz: binary structures inside a table's files and the consume protocol — Avro manifests and manifest lists
 * (`decodeManifest`, `decodeManifestList`, the container format and its snappy blocks), BinaryRow (partitions,
 * statistics, keys), and Arrow IPC chunks a consumer receives (`IpcStreamDecoder`). Every case: the value or a typed
 * error (DataInvalid, Unsupported for a codec this reader lacks; apache-arrow's own errors for IPC, see below);
 * valid values round-trip exactly; declared lengths far beyond the input fail without allocating them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as arrow from "apache-arrow";
import fc from "fast-check";
import * as flatbuffers from "flatbuffers";
import { Message as FbMessage } from "apache-arrow/fb/message";
import { Schema as FbSchema } from "apache-arrow/fb/schema";
import { decodeAvroFile, snappyDecompress } from "../../src/codec/avro.ts";
import { IpcStreamDecoder } from "../../src/codec/ipc-decode.ts";
import { rowsToRecordBatch } from "../../src/codec/columns/record-batch-builder.ts";
import { toIpcStream } from "../../src/codec/parquet.ts";
import { decodeBinaryRow, deserializeBinaryRow, serializeBinaryRow } from "../../src/format/binary-row.ts";
import { decodeManifest, decodeManifestList, encodeManifest, encodeManifestList } from "../../src/format/wire/manifest-avro.ts";
import { ALL_ROWS, ALL_TYPES } from "../helpers/codec-fixtures.ts";
import { decodeOutcome, fuzzParams, fuzzTimeout, mutated, randomBytes } from "../helpers/fuzz.ts";
import { manifestEntry, manifestFileMeta } from "../helpers/fuzz-values.ts";

const plainBytes = (v: unknown): unknown => {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (Array.isArray(v)) return v.map(plainBytes);
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plainBytes(x)]));
  return v;
};

const manifests = fc.tuple(fc.array(manifestEntry, { minLength: 1, maxLength: 4 }), fc.constantFrom("null" as const, "deflate" as const)).map(([e, codec]) => ({ entries: e, bytes: encodeManifest(e, { codec }) }));
const lists = fc.tuple(fc.array(manifestFileMeta, { minLength: 1, maxLength: 4 }), fc.constantFrom("null" as const, "deflate" as const)).map(([m, codec]) => ({ metas: m, bytes: encodeManifestList(m, { codec }) }));

test("fuzz files - manifests and manifest lists round-trip exactly (int64 sequence numbers and row ids)", { timeout: fuzzTimeout() }, () => {
  fc.assert(
    fc.property(manifests, lists, (m, l) => {
      assert.deepEqual(plainBytes(decodeManifest(m.bytes)), plainBytes(m.entries));
      // Lists written here carry no pypaimon-only fields: they read back as null.
      assert.deepEqual(plainBytes(decodeManifestList(l.bytes)), plainBytes(l.metas.map((x) => ({ ...x, totalBuckets: null, extraFiles: null }))));
    }),
    fuzzParams(),
  );
});

test("fuzz files - damaged manifests and manifest lists: entries or a DataInvalid / Unsupported", { timeout: fuzzTimeout(40) }, () => {
  const damaged = fc.oneof(mutated(manifests.map((m) => m.bytes)), mutated(lists.map((l) => l.bytes)), randomBytes());
  fc.assert(
    fc.property(damaged, (bytes) => {
      decodeOutcome(() => decodeManifest(bytes), bytes);
      decodeOutcome(() => decodeManifestList(bytes), bytes);
      decodeOutcome(() => decodeAvroFile(bytes), bytes);
    }),
    fuzzParams(),
  );
});

test("fuzz files - snappy blocks: a declared length far beyond the block fails without allocating it", { timeout: fuzzTimeout() }, () => {
  // A varint preamble of up to 2^32−1, then a few elements.
  const varint = (n: number): number[] => {
    const out: number[] = [];
    while (n >= 0x80) {
      out.push((n % 0x80) | 0x80);
      n = Math.floor(n / 0x80);
    }
    out.push(n);
    return out;
  };
  const blocks = fc.oneof(fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.uint8Array({ maxLength: 32 })).map(([n, rest]) => Uint8Array.from([...varint(n), ...rest])), randomBytes(64));
  fc.assert(
    fc.property(blocks, (block) => {
      decodeOutcome(() => snappyDecompress(block), block, { maxBytes: 16 * 1024 * 1024 });
    }),
    fuzzParams(),
  );
});

/** The columns a BinaryRow holds (partitions, keys, statistics): the fixture's types BinaryRow encodes. */
const BINARY_COLUMNS = ALL_TYPES.filter((c) => {
  try {
    serializeBinaryRow([c.type], [ALL_ROWS[0]![c.name] ?? null]);
    return true;
  } catch {
    return false;
  }
});
const PARTITION_TYPES = BINARY_COLUMNS.map((c) => c.type);
const rowBytes = fc.constantFrom(...ALL_ROWS).map((row) => serializeBinaryRow(PARTITION_TYPES, BINARY_COLUMNS.map((c) => row[c.name] ?? null)));

test("fuzz files - BinaryRow: every type round-trips; damaged rows decode to values or a DataInvalid", { timeout: fuzzTimeout() }, () => {
  for (const row of ALL_ROWS) {
    const values = BINARY_COLUMNS.map((c) => row[c.name] ?? null);
    assert.deepEqual(plainBytes(deserializeBinaryRow(PARTITION_TYPES, serializeBinaryRow(PARTITION_TYPES, values))), plainBytes(values));
  }
  fc.assert(
    fc.property(fc.oneof(mutated(rowBytes), randomBytes(256)), (bytes) => {
      decodeOutcome(() => deserializeBinaryRow(PARTITION_TYPES, bytes), bytes);
      decodeOutcome(() => decodeBinaryRow(PARTITION_TYPES, bytes.subarray(4)), bytes);
    }),
    fuzzParams(),
  );
});

// Arrow IPC: the consumer's chunks. Whatever apache-arrow throws on malformed bytes (a TypeError converting a length
// beyond 2^53 among them) the decoder reports as one DataInvalid.
const FIELDS = ALL_TYPES.map((c, id) => ({ id, name: c.name, type: c.type }));
const STREAMS = [toIpcStream(rowsToRecordBatch(FIELDS, ALL_ROWS)), toIpcStream(rowsToRecordBatch(FIELDS, ALL_ROWS.slice(0, 1)))];

test("fuzz files - Arrow IPC chunks: batches or an error of the stream, never a TypeError, RangeError or hang", { timeout: fuzzTimeout(40) }, () => {
  const decoder = new IpcStreamDecoder();
  for (const s of STREAMS) assert.equal(decoder.decode(s).reduce((n, b) => n + b.numRows, 0), arrow.tableFromIPC(s).numRows);
  fc.assert(
    fc.property(fc.oneof(mutated(fc.constantFrom(...STREAMS)), randomBytes(256)), (bytes) => {
      const r = decodeOutcome(() => new IpcStreamDecoder().decode(bytes).map((b) => b.numRows), bytes);
      if (r.ok) assert.ok(r.value.every((n) => Number.isSafeInteger(n)));
    }),
    fuzzParams(),
  );
});

test("fuzz files - Arrow IPC: a nested field whose child list claims 2^31 fields fails typed, at once, without the heap (found by npm run fuzz)", () => {
  // A schema with a struct column of one child; then its child list's length rewritten in place, as the fuzz case
  // that took 4 GiB of heap did (apache-arrow walks a declared list length without checking it).
  const struct = new arrow.Struct([new arrow.Field("inner", new arrow.Int32(), true)]);
  const stream = arrow.tableToIPC(new arrow.Table(new arrow.Schema([new arrow.Field("outer", struct, true)])), "stream");
  const metaLength = new DataView(stream.buffer, stream.byteOffset).getInt32(4, true);
  const meta = stream.subarray(8, 8 + metaLength);
  const bb = new flatbuffers.ByteBuffer(meta);
  const field = (FbMessage.getRootAsMessage(bb).header(new FbSchema()) as FbSchema).fields(0)!;
  const childrenAt = bb.__offset(field.bb_pos, 14); // Field.children: the table's 6th slot
  assert.ok(childrenAt !== 0 && field.childrenLength() === 1, "the struct field has its one child");
  const lengthAt = bb.__vector(field.bb_pos + childrenAt) - 4;
  new DataView(meta.buffer, meta.byteOffset).setUint32(lengthAt, 0x7fffffff, true);
  const r = decodeOutcome(() => new IpcStreamDecoder().decode(stream), stream, { maxMs: 1000, maxBytes: 16 * 1024 * 1024 });
  assert.equal(r.ok, false);
  if (!r.ok) assert.match(r.error.message, /field or buffer list is longer than its metadata/);
});
