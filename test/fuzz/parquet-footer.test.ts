/**
 * Fuzz: Parquet footers as readers find them in data files — the Thrift compact codec (`decodeStruct`,
 * `readFileMetaData`), the row count a scan and the checker read (`parquetFooterInfo`), and the column-chunk ranges
 * a ranged read fetches (`columnChunkRanges`). Every case: the value or a typed error (DataInvalid; the footer
 * codec's own "corrupt Parquet footer" error, which parquet.ts turns into DataInvalid); an unmodified footer
 * re-encodes to the same bytes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { decodeStruct, encodeStruct, footerRange, readFileMetaData } from "../../src/codec/parquet-footer.mjs";
import { parquetFooterInfo, writeParquet } from "../../src/codec/parquet.ts";
import { columnChunkRanges } from "../../src/codec/parquet-ranges.ts";
import { rowsToRecordBatch } from "../../src/codec/columns/record-batch-builder.ts";
import { ALL_ROWS, ALL_TYPES } from "../helpers/codec-fixtures.ts";
import { decodeOutcome, fuzzParams, fuzzTimeout, mutated, randomBytes } from "../helpers/fuzz.ts";

const isCorruptFooter = (e: unknown): boolean => e instanceof Error && e.message.startsWith("corrupt Parquet footer");
const FIELDS = ALL_TYPES.map((c, id) => ({ id, name: c.name, type: c.type }));
const FILES = [writeParquet(rowsToRecordBatch(FIELDS, ALL_ROWS)), writeParquet(rowsToRecordBatch(FIELDS, ALL_ROWS), { compression: "snappy", maxRowGroupSize: 2 })];
const FOOTERS = FILES.map((f) => {
  const { start, end } = footerRange(f);
  return f.subarray(start, end);
});

/** A footer nested `depth` structs deep (field 1 of type STRUCT, again and again): a stack bomb. */
const deepFooter = fc.integer({ min: 1000, max: 100_000 }).map((depth) => {
  const b = new Uint8Array(depth + depth);
  b.fill(0x1c, 0, depth); // field delta 1, type STRUCT
  return b; // then as many STOPs (zeros)
});
const footers = fc.oneof(mutated(fc.constantFrom(...FOOTERS)), randomBytes(256), deepFooter);

test("fuzz parquet footer - an unmodified footer decodes and re-encodes to the same bytes", () => {
  for (const f of FOOTERS) assert.deepEqual(encodeStruct(decodeStruct(f)), new Uint8Array(f));
  for (const f of FILES) assert.equal(parquetFooterInfo(f).numRows, ALL_ROWS.length);
});

test("fuzz parquet footer - the Thrift codec and the ranged read's column chunks: a value or a typed error", { timeout: fuzzTimeout() }, () => {
  fc.assert(
    fc.property(footers, (footer) => {
      decodeOutcome(() => decodeStruct(footer), footer, { typed: isCorruptFooter });
      const r = decodeOutcome(() => columnChunkRanges(footer, new Set(FIELDS.map((f) => f.name))), footer, { typed: isCorruptFooter });
      if (r.ok) for (const range of r.value) assert.ok(Number.isSafeInteger(range.start) && Number.isSafeInteger(range.end) && range.start <= range.end, JSON.stringify(range));
    }),
    fuzzParams(),
  );
});

test("fuzz parquet footer - whole files (footer, length and magic mutated): a row count or a DataInvalid", { timeout: fuzzTimeout() }, () => {
  const files = fc.oneof(mutated(fc.constantFrom(...FILES)), fc.constantFrom(...FILES).chain((f) => mutated(fc.constant(f.subarray(f.length - 600)))), randomBytes(64));
  fc.assert(
    fc.property(files, (file) => {
      const r = decodeOutcome(() => parquetFooterInfo(file), file);
      if (r.ok) assert.ok(Number.isSafeInteger(r.value.numRows) && r.value.numRows >= 0 && Number.isSafeInteger(r.value.numRowGroups), JSON.stringify(r.value));
      decodeOutcome(() => readFileMetaData(file), file, { typed: isCorruptFooter });
    }),
    fuzzParams(),
  );
});
