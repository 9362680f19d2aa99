/**
 * The native Parquet codec (native/parquet/, the Node-API addon) against the WebAssembly one (parquet-wasm 0.8):
 * for the same request both write the same bytes, and each decodes the other's file to the same Arrow data.
 * Skipped, with the reason printed, where the addon is not built (no cargo: scripts/setup.sh builds it).
 */
import { test } from "node:test";
import { MessageChannel } from "node:worker_threads";
import assert from "node:assert/strict";
import * as arrow from "apache-arrow";
import * as pw from "parquet-wasm";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { encodeRequest, toIpcStream, type ParquetWriteOptions } from "../../../src/codec/parquet.ts";
import { Compression, EnabledStatistics, loadParquetOps, WriterVersion, type ParquetOps } from "../../../src/codec/parquet-ops.mjs";
import { parseColumnList } from "../../../src/format/data-types.ts";
import type { Row } from "../../../src/format/values.ts";
import { ALL_ROWS, ALL_TYPES, ts } from "../../helpers/codec-fixtures.ts";

const wasm = await loadParquetOps("wasm");
const native: ParquetOps | string = await loadParquetOps("native").catch((e: unknown) => (e instanceof Error ? e.message : String(e)));
const skip = typeof native === "string" ? `the native Parquet addon is not built (${native.split("\n")[0]})` : false;
if (skip !== false) console.log(`# parquet native parity skipped: ${skip}`);
const nativeOps = (): ParquetOps => native as ParquetOps;

// Every fixture type, plus a nested TIMESTAMP(9): an INT96 stand-in inside a list, which writer 2.0 can only keep
// PLAIN through the file-wide encoding (`plainEverywhere`).
const TYPES = [...ALL_TYPES, ...parseColumnList("nts ARRAY<TIMESTAMP(9)>")];
/** 1,500 rows: the fixture rows over and over with varying keys and strings, so row groups differ in statistics. */
const ROWS: Row[] = Array.from({ length: 1500 }, (_, i) => {
  const base = ALL_ROWS[i % ALL_ROWS.length]!;
  const varied: Row = { ...base, i32: i, nts: i % 7 === 0 ? null : [ts("2024-01-02T03:04:05.678", i), null] };
  if (base["s"] !== null) varied["s"] = `${String(base["s"]).slice(0, 20)}-${i % 97}`;
  if (base["i64"] !== null) varied["i64"] = BigInt(i) * 1_000_003n;
  return varied;
});
const BATCH = rowsToRecordBatch(TYPES, ROWS);

const COMPRESSIONS = ["zstd", "snappy", "gzip", "lz4", "brotli", "none"] as const;
const SETTINGS: Array<{ name: string; opts: ParquetWriteOptions }> = [
  { name: "defaults", opts: {} },
  { name: "dictionary, page statistics", opts: { dictionary: true, statistics: "page" } },
  { name: "dictionary on two columns, writer 2.0", opts: { dictionary: ["s", "tags"], writerVersion: "2.0" } },
  { name: "writer 2.0, no statistics, created_by", opts: { writerVersion: "2.0", statistics: "none", createdBy: "natslake parity" } },
];

function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;
}

test("parquet native parity - the codec enums are parquet-wasm's numbering", () => {
  assert.deepEqual({ ...Compression }, { UNCOMPRESSED: pw.Compression.UNCOMPRESSED, SNAPPY: pw.Compression.SNAPPY, GZIP: pw.Compression.GZIP, BROTLI: pw.Compression.BROTLI, LZ4: pw.Compression.LZ4, ZSTD: pw.Compression.ZSTD, LZ4_RAW: pw.Compression.LZ4_RAW });
  assert.deepEqual({ ...EnabledStatistics }, { None: pw.EnabledStatistics.None, Chunk: pw.EnabledStatistics.Chunk, Page: pw.EnabledStatistics.Page });
  assert.deepEqual({ ...WriterVersion }, { V1: pw.WriterVersion.V1, V2: pw.WriterVersion.V2 });
});

for (const compression of COMPRESSIONS) {
  test(`parquet native parity - ${compression}: identical bytes under every writer setting, each path reads the other's file`, { skip }, async () => {
    for (const { name, opts } of SETTINGS) {
      const { table, spec } = encodeRequest(BATCH, { ...opts, compression, maxRowGroupSize: 600 });
      const ipc = toIpcStream(table);
      const fromWasm = wasm.encodeIpcStream(ipc, spec);
      const fromNative = nativeOps().encodeIpcStream(ipc, spec);
      assert.ok(same(fromWasm, fromNative), `${compression}, ${name}: the native file (${fromNative.byteLength} B) differs from parquet-wasm's (${fromWasm.byteLength} B)`);
      // Cross-decoding: each path decodes the other's file to the same IPC stream, holding the rows written.
      const byWasm = wasm.decodeAllToIpcStream(fromNative, 512);
      const byNative = nativeOps().decodeAllToIpcStream(fromWasm, 512);
      assert.ok(same(byWasm, byNative), `${compression}, ${name}: the decoded IPC streams differ`);
      assert.deepEqual(recordBatchToRows(TYPES, arrow.tableFromIPC(byNative)), ROWS, `${compression}, ${name}: the rows read back`);
    }
  });
}

test("parquet native parity - projected, row-group and schema reads match parquet-wasm's", { skip }, async () => {
  const { table, spec } = encodeRequest(BATCH, { maxRowGroupSize: 400 });
  const file = wasm.encodeIpcStream(toIpcStream(table), spec);
  const requests = [
    { columns: ["s", "i32", "not-a-column"] },
    { columns: ["r", "m", "ts9"], rowGroups: [2, 0] },
    { rowGroups: [3] },
    { columns: ["not-a-column"] },
    { columns: ["nts", "b"], batchSize: 100 },
  ];
  for (const request of requests) {
    const a = await wasm.decodeToIpcStream(file, request);
    const b = await nativeOps().decodeToIpcStream(file, request);
    const ta = arrow.tableFromIPC(a);
    const tb = arrow.tableFromIPC(b);
    assert.deepEqual(tb.schema.fields.map((f) => f.name), ta.schema.fields.map((f) => f.name), JSON.stringify(request));
    assert.equal(tb.numRows, ta.numRows, JSON.stringify(request));
    const types = TYPES.filter((t) => ta.schema.fields.some((f) => f.name === t.name));
    assert.deepEqual(recordBatchToRows(types, tb), recordBatchToRows(types, ta), JSON.stringify(request));
  }
  assert.ok(same(wasm.schemaToIpcStream(file), nativeOps().schemaToIpcStream(file)), "schema streams differ");
});

test("parquet native parity - the transferable decode is the same stream, in memory a postMessage transfers", { skip }, async () => {
  const { table, spec } = encodeRequest(BATCH, { maxRowGroupSize: 400 });
  const file = wasm.encodeIpcStream(toIpcStream(table), spec);
  const requests = [{}, { columns: ["s", "i32", "not-a-column"] }, { columns: ["r", "m", "ts9"], rowGroups: [2, 0] }, { columns: ["nts", "b"], batchSize: 100 }, { columns: ["not-a-column"] }];
  for (const request of requests) {
    const expected = await nativeOps().decodeToIpcStream(file, request);
    const stream = await nativeOps().decodeToTransferableIpcStream(file, request);
    assert.ok(same(stream, expected), `streams differ: ${JSON.stringify(request)}`);
    const buffer = nativeOps().transferableBuffer(stream);
    assert.ok(buffer !== null, `not transferable: ${JSON.stringify(request)}`);
    // Posted with its buffer in the transfer list: moved (detached here), not copied.
    const { port1, port2 } = new MessageChannel();
    const received = new Promise<Uint8Array>((resolve) => port2.once("message", resolve));
    port1.postMessage(stream, [buffer]);
    const got = await received;
    port1.close();
    assert.equal(buffer.byteLength, 0, "the buffer was transferred");
    assert.ok(same(got, expected));
  }
  await assert.rejects(nativeOps().decodeToTransferableIpcStream(file, { rowGroups: [5] }), /row group 5 does not exist/);
  await assert.rejects(nativeOps().decodeToTransferableIpcStream(new Uint8Array([1, 2, 3])), /Parquet/);
  // The wasm codec's stream is a copy out of its memory: transferable as it is.
  const w = await wasm.decodeToTransferableIpcStream(file, { columns: ["s"] });
  assert.ok(wasm.transferableBuffer(w) !== null);
});

test("parquet native parity - bad input is an error, not a crash", { skip }, async () => {
  const { table, spec } = encodeRequest(BATCH, {});
  const file = nativeOps().encodeIpcStream(toIpcStream(table), spec);
  assert.throws(() => nativeOps().decodeAllToIpcStream(new Uint8Array([1, 2, 3]), 1024), /Parquet/);
  assert.throws(() => nativeOps().decodeAllToIpcStream(file.subarray(0, file.byteLength - 9), 1024), /Parquet/);
  await assert.rejects(nativeOps().decodeToIpcStream(file, { rowGroups: [5] }), /row group 5 does not exist/);
  assert.throws(() => nativeOps().encodeIpcStream(new Uint8Array([255, 255, 255, 255, 8, 0, 0, 0]), spec), /Arrow IPC|Parquet/);
  assert.throws(() => nativeOps().encodeIpcStream(toIpcStream(table), { ...spec, compression: 7 as never }), /unsupported Parquet compression code 7/);
  // A corrupted page: arrow-rs reports it (or panics, which the addon turns into an error); the process lives on.
  const corrupt = Uint8Array.from(file);
  corrupt.fill(0x5a, 8, 400);
  assert.throws(() => nativeOps().decodeAllToIpcStream(corrupt, 1024));
});
