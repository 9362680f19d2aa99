import { test } from "node:test";
import assert from "node:assert/strict";
import { mergedValueStats } from "../../../src/maintenance/compact-copy.ts";
import { deserializeBinaryRow, serializeBinaryRow } from "../../../src/format/binary-row.ts";
import { T, type DataField } from "../../../src/format/data-types.ts";
import { EMPTY_STATS, type DataFileMeta } from "../../../src/format/manifest.ts";
import type { Value } from "../../../src/format/values.ts";

const FIELDS: DataField[] = [
  { id: 0, name: "id", type: T.bigint() },
  { id: 1, name: "s", type: T.string() },
  { id: 2, name: "d", type: T.double() },
];
const types = FIELDS.map((f) => f.type);

function file(rows: number, min: Value[], max: Value[], nulls: Array<bigint | null>): DataFileMeta {
  return {
    fileName: "f.parquet", fileSize: 1, rowCount: rows, minKey: EMPTY_STATS.minValues, maxKey: EMPTY_STATS.maxValues, keyStats: EMPTY_STATS,
    valueStats: { minValues: serializeBinaryRow(types, min), maxValues: serializeBinaryRow(types, max), nullCounts: nulls },
    minSequenceNumber: 0n, maxSequenceNumber: BigInt(rows - 1), schemaId: 0, level: 0, extraFiles: [], creationTimeMillis: 0, deleteRowCount: 0,
    embeddedIndex: null, fileSource: 1, valueStatsCols: null, externalPath: null, firstRowId: null, writeCols: null,
  } as DataFileMeta;
}

const merged = (files: DataFileMeta[]): { min: Value[]; max: Value[]; nulls: Array<bigint | null> } => {
  const s = mergedValueStats(FIELDS, files);
  return { min: deserializeBinaryRow(types, s.minValues), max: deserializeBinaryRow(types, s.maxValues), nulls: s.nullCounts };
};

test("compaction copy - merged statistics: bounds of the union, null counts summed", () => {
  assert.deepEqual(
    merged([file(10, [5n, "b", 1.5], [9n, "k", 2], [0n, 1n, 0n]), file(4, [1n, "c", -3], [7n, "z", 0], [0n, 0n, 2n])]),
    { min: [1n, "b", -3], max: [9n, "z", 2], nulls: [0n, 1n, 2n] },
  );
});

test("compaction copy - merged statistics: a column all null in one file takes the other's bounds; unknown bounds or null counts stay unknown", () => {
  // File 2's `s` is all null (4 of 4): nothing to merge. Its `d` has no bounds over non-null values (NaN, or no
  // short upper bound): the output's are unknown. A null count unknown in one file is unknown in the output.
  assert.deepEqual(
    merged([file(10, [5n, "b", 1.5], [9n, "k", 2], [0n, 1n, 0n]), file(4, [1n, null, null], [7n, null, null], [null, 4n, 1n])]),
    { min: [1n, "b", null], max: [9n, "k", null], nulls: [null, 5n, 1n] },
  );
  // No statistics columns: no statistics.
  assert.equal(mergedValueStats([], [file(1, [1n, "a", 1], [1n, "a", 1], [0n, 0n, 0n])]), EMPTY_STATS);
});
