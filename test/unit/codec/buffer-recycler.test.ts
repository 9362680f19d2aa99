/**
 * The write-buffer recycler (src/codec/columns/buffer-recycler.ts): buffers given back serve later requests of their
 * size zeroed, within a bound of bytes kept; small buffers and buffers it did not hand out are never kept; builders made with it build the same
 * batches as builders that allocate as usual, also when their buffers held another write's rows before.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { BufferRecycler } from "../../../src/codec/columns/buffer-recycler.ts";
import { RecordBatchBuilder } from "../../../src/codec/columns/record-batch-builder.ts";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { Timestamp, type Row } from "../../../src/format/values.ts";

test("buffer recycler - a buffer given back serves a later request of its size, zeroed; too small or over the bound is not kept", () => {
  const r = new BufferRecycler(1 << 20);
  const a = r.make(Float64Array, 20_000); // 160 kB: kept when given back
  a.fill(7);
  r.give(a.buffer as ArrayBuffer);
  assert.equal(r.heldBytes, 160_000);
  const b = r.make(Int32Array, 30_000); // 120 kB: same size class, fits
  assert.equal(b.buffer, a.buffer, "the kept buffer was reused");
  assert.ok(b.every((x) => x === 0), "zeroed");
  assert.equal(r.heldBytes, 0);
  const c = r.make(BigInt64Array, 10_000); // nothing kept: a new buffer
  assert.notEqual(c.buffer, a.buffer);
  assert.equal(c.length, 10_000);
  r.give(r.make(Uint8Array, 1024).buffer as ArrayBuffer); // small: never kept
  r.give(new ArrayBuffer(600_000)); // not handed out by this recycler (a builder grew into it): not kept
  assert.equal(r.heldBytes, 0);
  r.give(r.make(Uint8Array, 600_000).buffer as ArrayBuffer);
  r.give(r.make(Uint8Array, 600_000).buffer as ArrayBuffer); // over the 1 MiB bound: dropped
  assert.equal(r.heldBytes, 600_000);
  // A request far smaller than any kept buffer does not take one (at most about four times the bytes asked).
  assert.notEqual(r.make(Uint8Array, 70_000).byteLength, 600_000);
  assert.equal(r.heldBytes, 600_000);
});

test("buffer recycler - builders on recycled buffers build the same batches, after the buffers held other rows", () => {
  const fields = parseColumnList("id BIGINT NOT NULL, ts TIMESTAMP(3), s STRING, x DOUBLE, n INT, b BOOLEAN, d DECIMAL(20, 2), bin BYTES");
  const rowsOf = (from: number, n: number): Row[] =>
    Array.from({ length: n }, (_, i) => ({
      id: BigInt(from + i),
      ts: i % 5 === 0 ? null : new Timestamp(1_700_000_000_000 + i, 0),
      s: i % 7 === 0 ? null : `s-${from + i}`,
      x: i * 0.5,
      n: i % 11 === 0 ? null : i,
      b: i % 2 === 0,
      d: BigInt(i) * 100n,
      bin: new Uint8Array([i & 255, from & 255]),
    }));
  const r = new BufferRecycler(256 << 20);
  const build = (rows: Row[], arrays?: BufferRecycler): ReturnType<RecordBatchBuilder["finish"]> => {
    const b = new RecordBatchBuilder(fields, rows.length, arrays);
    for (const row of rows) b.appendRow(row);
    return b.finish();
  };
  const first = build(rowsOf(0, 20_000), r);
  r.giveBatches([first]);
  assert.ok(r.heldBytes > 0, "the batch's large buffers were kept");
  const again = rowsOf(50_000, 15_000);
  const reused = build(again, r);
  assert.deepEqual(recordBatchToRows(fields, reused), recordBatchToRows(fields, build(again)));
  assert.deepEqual(recordBatchToRows(fields, reused), again);
});

test("buffer recycler - a 64-bit column built on a recycled buffer of an odd byte length (a string column's, given back) builds its rows", () => {
  const r = new BufferRecycler(1 << 22);
  // A string column's data buffer: its length need not be a multiple of 4 or 8.
  const odd = r.make(Uint8Array, 800_001);
  r.give(odd.buffer as ArrayBuffer);
  const fields = parseColumnList("k BIGINT NOT NULL, v BIGINT");
  const rows = Array.from({ length: 60_000 }, (_, i) => ({ k: BigInt(i) - 30_000n, v: i % 7 === 0 ? null : BigInt(i) * 3n }));
  // 60,000 slots of 8 bytes = 480 kB: the kept 800,001-byte buffer serves the first column's slots.
  const b = new RecordBatchBuilder(fields, rows.length, r);
  for (const row of rows) b.appendRow(row);
  assert.equal(r.heldBytes, 0, "the odd buffer was taken");
  assert.deepEqual(recordBatchToRows(fields, b.finish()), rows);
});
