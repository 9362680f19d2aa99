/**
 * A table's `natslake.ingest.max-message-rows` (issue 29): a message with more rows is rejected whole, before its rows
 * are decoded, with a reason that names the bound; the other messages of the same append land.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { encodeRowBatch, packValue } from "../../../actors/wire/row-batch.ts";
import { BucketBuffer } from "../../../actors/ingest/bucket-buffer.ts";
import { oversized, packPayloads, withoutOversized } from "../../../actors/ingest/decode.ts";
import { TableWrite } from "../../../src/write/table-write.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";

const batch = (from: number, n: number): Uint8Array => encodeRowBatch({ v: 1, schema: 0, cols: ["id", "note"], rows: Array.from({ length: n }, (_, i) => [from + i, null]) });

test("ingest limits - a message over the row bound is rejected whole; the rest of the append lands", async () => {
  const dir = tempDir();
  try {
    const table = await createTable(dir.path, "lim.rows", "id BIGINT NOT NULL, note STRING", { options: { bucket: "1", "bucket-key": "id" } });
    const spec = new TableWrite(table, { bucket: 0 }).bufferSpec;
    const buffer = new BucketBuffer({ ...spec, maxMessageRows: 100 });
    // Empty rows: one byte each on the wire, a null per column in memory — what the bound is for.
    const bomb = packValue({ v: 1, cols: ["id", "note"], rows: Array.from({ length: 5000 }, () => []) });
    const out = buffer.append(packPayloads([{ seq: 1, data: batch(0, 100) }, { seq: 2, data: bomb }, { seq: 3, data: batch(100, 50) }]));
    assert.equal(out.rows, 150, "the messages within the bound land");
    assert.equal(out.rejected.length, 1);
    const r = out.rejected[0]!;
    assert.deepEqual({ seq: r.seq, rowIndex: r.rowIndex }, { seq: 2, rowIndex: -1 });
    assert.equal(r.reason, "the message holds 5000 rows, more than the table's natslake.ingest.max-message-rows (100): publish smaller batches");
    assert.deepEqual(Buffer.from(String(r.original), "base64"), Buffer.from(bomb), "the letter keeps the message's bytes");
  } finally {
    dir.cleanup();
  }
});

test("ingest limits - within the bound the payloads are passed on as they are; a payload that is not a batch is left to the decoder", () => {
  const p = packPayloads([{ seq: 7, data: batch(0, 10) }]);
  assert.equal(withoutOversized(p, 10).payloads, p);
  assert.equal(oversized(8, new Uint8Array([0xc1]), 0), null);
  assert.match(oversized(9, batch(0, 11), 10)?.reason ?? "", /holds 11 rows/);
});
