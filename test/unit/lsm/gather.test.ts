/**
 * Gathering picked rows into new columns (src/lsm/gather.ts): stretches of consecutive rows of one batch are copied
 * as blocks, the rest row by row; either way every value, null and string is the picked row's — across several
 * source batches, sliced batches (a Data with an offset) and every flat layout (8-, 16-, 32-, 64-bit and 128-bit
 * values, strings, binaries).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { columnReader } from "../../../src/codec/columns/value-readers.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { Timestamp, type Row } from "../../../src/format/values.ts";
import { gatherColumn, stretchesOf, type RowPicks, type Stretches } from "../../../src/lsm/gather.ts";

const FIELDS = parseColumnList("t TINYINT, s SMALLINT, i INT, b BIGINT, d DOUBLE, dec DECIMAL(20, 2), ts TIMESTAMP(3), str STRING, bin BYTES");

function row(batch: number, r: number): Row {
  const k = batch * 1000 + r;
  const nul = k % 7 === 3;
  return {
    t: nul ? null : (k % 200) - 100,
    s: nul ? null : k - 500,
    i: nul ? null : k * 3,
    b: nul ? null : BigInt(k) * 1_000_003n,
    d: nul ? null : k / 4,
    dec: nul ? null : BigInt(k) * 100n + 25n,
    ts: nul ? null : new Timestamp(1_700_000_000_000 + k, 0),
    str: nul ? null : `v${k}-${"x".repeat(k % 40)}`,
    bin: nul ? null : Uint8Array.from({ length: k % 5 }, (_, j) => (k + j) % 256),
  };
}

/** Three batches of 300 rows; the last one sliced (its Data starts at row 20 of what was built). */
const BATCHES = [0, 1, 2].map((b) => {
  const built = rowsToRecordBatch(FIELDS, Array.from({ length: b === 2 ? 320 : 300 }, (_, r) => row(b, r)));
  return b === 2 ? built.slice(20, 320) : built;
});
const rowOfSource = (b: number, r: number): Row => row(b, b === 2 ? r + 20 : r);

/** Picks mixing long stretches (block copies), short ones and single rows from alternating batches. */
function picks(): { batchOf: number[]; rowOf: number[] } {
  const batchOf: number[] = [];
  const rowOf: number[] = [];
  const take = (b: number, from: number, n: number): void => {
    for (let k = 0; k < n; k++) {
      batchOf.push(b);
      rowOf.push(from + k);
    }
  };
  take(0, 0, 50);
  take(1, 10, 3);
  take(2, 0, 120);
  for (let k = 0; k < 40; k++) take(k % 3, 200 + k, 1);
  take(0, 120, 9);
  take(0, 129, 7);
  take(2, 250, 50);
  take(1, 299, 1);
  return { batchOf, rowOf };
}

test("gathered columns hold the picked rows' values, over block-copied stretches and single rows alike", () => {
  const { batchOf, rowOf } = picks();
  const p: RowPicks = { length: rowOf.length, batchOf: Int32Array.from(batchOf), rowOf: Int32Array.from(rowOf) };
  FIELDS.forEach((f, k) => {
    const out = gatherColumn(f.type, BATCHES.map((b) => b.data.children[k]!), p, f.name);
    assert.equal(out.length, p.length);
    const read = columnReader(f.type, out);
    for (let i = 0; i < p.length; i++) assert.deepEqual(read(i), columnReader(f.type, BATCHES[batchOf[i]!]!.data.children[k]!)(rowOf[i]!), `${f.name} row ${i}`);
    const expectedNulls = batchOf.filter((b, i) => rowOfSource(b, rowOf[i]!)[f.name] === null).length;
    assert.equal(out.nullCount, expectedNulls, `${f.name} nulls`);
  });
});

test("picks of one batch (no batch numbers): a stretch and scattered rows", () => {
  const rowOf = [...Array.from({ length: 100 }, (_, i) => i + 5), 3, 1, 299, ...Array.from({ length: 20 }, (_, i) => 200 + 2 * i)];
  const p: RowPicks = { length: rowOf.length, batchOf: null, rowOf: Int32Array.from(rowOf) };
  FIELDS.forEach((f, k) => {
    const out = gatherColumn(f.type, [BATCHES[1]!.data.children[k]!], p, f.name);
    const read = columnReader(f.type, out);
    const src = columnReader(f.type, BATCHES[1]!.data.children[k]!);
    for (let i = 0; i < p.length; i++) assert.deepEqual(read(i), src(rowOf[i]!), `${f.name} row ${i}`);
  });
});

test("a stretch is consecutive rows of the same batch", () => {
  const p: RowPicks = { length: 7, batchOf: Int32Array.from([0, 0, 0, 1, 1, 1, 1]), rowOf: Int32Array.from([4, 5, 6, 7, 8, 10, 11]) };
  const listed = (s: Stretches): Array<[number, number, number]> => Array.from({ length: s.count }, (_, k) => [s.batch[k]!, s.row[k]!, s.length[k]!]);
  // [batch, first row, rows]: rows 4–6 of batch 0, then 7–8 and 10–11 of batch 1.
  assert.deepEqual(listed(stretchesOf(p)), [
    [0, 4, 3],
    [1, 7, 2],
    [1, 10, 2],
  ]);
  assert.deepEqual(listed(stretchesOf({ length: 4, batchOf: null, rowOf: Int32Array.from([0, 1, 2, 3]) })), [[0, 0, 4]]);
});
