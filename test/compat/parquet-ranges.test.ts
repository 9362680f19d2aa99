/**
 * Ranged reads of a projection (src/codec/parquet-ranges.ts, src/scan/ranged-fetch.ts) against an independent
 * reading of the footer: the column chunks' byte ranges natslake finds are the ones pyarrow reports, and a file
 * fetched by those ranges (zeros elsewhere) decodes to exactly the projected columns of the whole file — with
 * dictionary pages, several row groups and nested columns. The FileIO is the real local one (its readRange).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import * as arrow from "apache-arrow";
import { columnChunkRanges, footerRangeFromTail } from "../../src/codec/parquet-ranges.ts";
import { readParquetAsync, writeParquet } from "../../src/codec/parquet.ts";
import { fetchColumnsOf } from "../../src/scan/ranged-fetch.ts";
import { LocalFileIO } from "../../src/io/local.ts";
import { parseJsonLines, REPO_ROOT, runPython } from "../helpers/python.ts";
import { tempDir } from "../helpers/tables.ts";

const CHUNKS_PY = join(REPO_ROOT, "test/compat/py/parquet_chunks.py");

/** A wide file: an id, three columns of random text (incompressible), a list column; several row groups. */
function wideFile(rows: number, dictionary: boolean): Uint8Array {
  const text = () => Array.from({ length: rows }, () => randomBytes(24).toString("hex"));
  const table = arrow.tableFromArrays({
    id: BigInt64Array.from({ length: rows }, (_, i) => BigInt(i)),
    a: text(),
    b: text(),
    // Few distinct values: a dictionary page when dictionary encoding is on.
    c: Array.from({ length: rows }, (_, i) => `tag-${i % 7}`),
  });
  return writeParquet(table, { maxRowGroupSize: Math.ceil(rows / 3), dictionary, compression: "zstd" });
}

for (const dictionary of [false, true]) {
  test(`parquet ranges - chunk ranges match pyarrow's, and a projection fetched by ranges decodes like the whole file (dictionary ${dictionary})`, async () => {
    const dir = tempDir();
    try {
      const bytes = wideFile(30_000, dictionary);
      const path = join(dir.path, "wide.parquet");
      writeFileSync(path, bytes);
      const io = new LocalFileIO();

      // The footer from the tail alone, and every chunk's range as pyarrow reads them.
      const footer = footerRangeFromTail(bytes.subarray(bytes.length - 8), bytes.length);
      const ours = columnChunkRanges(bytes.subarray(footer.start), new Set(["id", "a", "b", "c"]));
      const theirs = parseJsonLines(await runPython(CHUNKS_PY, [path])).map((r) => ({ start: Number(r["start"]), end: Number(r["end"]) }));
      assert.equal(theirs.length, 3 * 4, "three row groups of four columns");
      assert.deepEqual(ours, theirs.sort((x, y) => x.start - y.start));
      assert.deepEqual(columnChunkRanges(bytes.subarray(footer.start), new Set(["b"])).length, 3, "one chunk per row group for one column");

      for (const columns of [["id"], ["a"], ["c"], ["id", "c"]]) {
        const fetched = await fetchColumnsOf(io, path, bytes.length, columns);
        const expected = await readParquetAsync(bytes, { columns });
        const got = await readParquetAsync(fetched.bytes, { columns });
        assert.equal(got.numRows, 30_000);
        assert.deepEqual(got.schema.fields.map((f) => f.name), columns);
        for (const name of columns) assert.deepEqual(got.getChild(name)!.toArray(), expected.getChild(name)!.toArray(), `${name} reads the same`);
        if (!columns.includes("a")) assert.ok(fetched.fetchedBytes < bytes.length * 0.4, `${columns}: ${fetched.fetchedBytes} of ${bytes.length} bytes fetched`);
        assert.ok(fetched.requests >= 2, "the tail, then the ranges");
      }
      // Text columns make up most of the file: a projection of both is fetched whole, in one more request.
      const most = await fetchColumnsOf(io, path, bytes.length, ["a", "b"]);
      assert.equal(most.fetchedBytes >= bytes.length, true, "the whole file once most of it is wanted");
    } finally {
      dir.cleanup();
    }
  });
}

test("parquet ranges - a file smaller than the tail read is fetched in one request; a truncated one is refused clearly", async () => {
  const dir = tempDir();
  try {
    const bytes = wideFile(200, false);
    const path = join(dir.path, "small.parquet");
    writeFileSync(path, bytes);
    const one = await fetchColumnsOf(new LocalFileIO(), path, bytes.length, ["id"]);
    assert.equal(one.requests, 1);
    assert.ok(Buffer.from(one.bytes).equals(Buffer.from(bytes)), "the whole file");
    assert.throws(() => footerRangeFromTail(bytes.subarray(0, bytes.length - 3), bytes.length), /PAR1 magic/);
    const io = new LocalFileIO();
    assert.equal(Buffer.from(await io.readRange(path, bytes.length - 4, 100)).toString("latin1"), "PAR1", "a range past the end stops at the end");
    assert.equal((await io.readRange(path, bytes.length + 10, 5)).length, 0);
  } finally {
    dir.cleanup();
  }
});
