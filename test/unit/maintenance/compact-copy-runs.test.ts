/**
 * Which runs of small row groups a compaction encodes again (reencodedFrom), and what that does to a bucket fed one
 * flush-sized file per commit and compacted by the writers' size-ratio pick: rows encoded again per row ingested, and
 * small groups per file.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { MIDDLE_GROUP_DIVISORS, reencodedFrom } from "../../../src/maintenance/compact-copy.ts";
import { pickBucketed, type CompactionRules } from "../../../src/maintenance/compact.ts";
import { MAX_ROW_GROUP_ROWS } from "../../../src/write/data-file-writer.ts";
import { EMPTY_STATS, type DataFileMeta } from "../../../src/format/manifest.ts";
import { WRITER_SIZE_RATIO } from "../../../actors/append-compaction.ts";

test("reencodedFrom - one group is copied; a run before a large group is encoded; the last run in part, or whole once large", () => {
  const copyMinRows = 800;
  assert.deepEqual(MIDDLE_GROUP_DIVISORS, [4, 16], "middle sizes 200 and 50 here");
  assert.equal(reencodedFrom([10], false, copyMinRows), 1, "one group alone");
  assert.equal(reencodedFrom([10], true, copyMinRows), 1);
  assert.equal(reencodedFrom([10, 10, 10], false, copyMinRows), 0, "followed by a large group: it cannot grow");
  assert.equal(reencodedFrom([300, 100, 20, 20], true, copyMinRows), 4, "the last run: its groups below 50 make less than 50, below 200 less than 200");
  assert.equal(reencodedFrom([300, 100, 20, 20, 15], true, copyMinRows), 2, "the newest groups below 50 make 55: one group");
  assert.equal(reencodedFrom([300, 100, 55, 40], true, copyMinRows), 4, "below 50 only one group; below 200, 195 rows");
  assert.equal(reencodedFrom([300, 100, 55, 45], true, copyMinRows), 1, "the newest groups below 200 make 200: one group");
  assert.equal(reencodedFrom([300, 150, 49], true, copyMinRows), 3, "a single group below a middle size stays");
  assert.equal(reencodedFrom([500, 200, 50, 50], true, copyMinRows), 0, "the last run at copyMinRows: encoded whole");
});

/** A data file as the model sees it: its row groups (rows each) and, per group, how often its rows were encoded. */
interface ModelFile {
  meta: DataFileMeta;
  groups: Array<{ rows: number; encodes: number }>;
}

/** The row groups of a compaction's output, by the rules of writeByCopy (runs of small groups; reencodedFrom). */
function mergeGroups(inputs: readonly ModelFile[], copyMinRows: number): { groups: ModelFile["groups"]; reencoded: number } {
  const out: ModelFile["groups"] = [];
  let run: ModelFile["groups"] = [];
  let reencoded = 0;
  const flush = (last: boolean): void => {
    const from = reencodedFrom(run.map((g) => g.rows), last, copyMinRows);
    out.push(...run.slice(0, from));
    const encoded = run.slice(from);
    const rows = encoded.reduce((n, g) => n + g.rows, 0);
    if (encoded.length > 0) {
      const encodes = Math.max(...encoded.map((g) => g.encodes)) + 1;
      // The encoder cuts groups at MAX_ROW_GROUP_ROWS.
      for (let left = rows; left > 0; left -= MAX_ROW_GROUP_ROWS) out.push({ rows: Math.min(left, MAX_ROW_GROUP_ROWS), encodes });
      reencoded += rows;
    }
    run = [];
  };
  for (const f of inputs) {
    for (const g of f.groups) {
      if (g.rows >= copyMinRows) {
        flush(false);
        out.push(g);
      } else run.push(g);
    }
  }
  flush(true);
  return { groups: out, reencoded };
}

test("a bucket fed 417-row flushes, compacted by the writers' pick: rows encoded again ≤ 3 per row (4.8 when every merge encoded its last run), ≤ 10 small groups in the bucket on average", () => {
  const copyMinRows = 32_768;
  // Bytes in proportion to rows; large enough a target that only the 1M-row bound closes a file.
  const rules: CompactionRules = { smallFileSize: 1e12, targetFileSize: 1e12, minFileNum: 5, maxFileNum: 50, maxRowsPerFile: 1_000_000, copyRowGroupRows: copyMinRows, sizeRatio: WRITER_SIZE_RATIO };
  let seq = 0n;
  const meta = (name: string, rows: number, first: bigint): DataFileMeta => ({
    fileName: name, fileSize: rows * 60, rowCount: rows, minKey: EMPTY_STATS.minValues, maxKey: EMPTY_STATS.maxValues, keyStats: EMPTY_STATS, valueStats: EMPTY_STATS,
    minSequenceNumber: first, maxSequenceNumber: first + BigInt(rows) - 1n, schemaId: 0, level: 0, extraFiles: [], creationTimeMillis: 0, deleteRowCount: 0,
    embeddedIndex: null, fileSource: 0, valueStatsCols: null, externalPath: null, firstRowId: null, writeCols: null,
  });
  let files: ModelFile[] = [];
  let ingested = 0;
  let reencoded = 0;
  let maxSmallGroups = 0;
  let smallGroupsSeen = 0;
  let plans = 0;
  // 10 minutes of 250 ms flushes, planned every 2 flushes.
  for (let i = 0; i < 2400; i++) {
    const rows = 417;
    files.push({ meta: meta(`f${i}`, rows, seq), groups: [{ rows, encodes: 1 }] });
    seq += BigInt(rows);
    ingested += rows;
    if (i % 2 !== 1) continue;
    for (const task of pickBucketed(files.map((f) => f.meta), rules)) {
      const at = files.findIndex((f) => f.meta === task[0]);
      const inputs = files.slice(at, at + task.length);
      const merged = mergeGroups(inputs, copyMinRows);
      reencoded += merged.reencoded;
      const rowsOut = task.reduce((n, f) => n + f.rowCount, 0);
      assert.equal(merged.groups.reduce((n, g) => n + g.rows, 0), rowsOut, "every row kept");
      files = [...files.slice(0, at), { meta: meta(`c${i}-${at}`, rowsOut, task[0]!.minSequenceNumber), groups: merged.groups }, ...files.slice(at + task.length)];
    }
    for (const f of files) maxSmallGroups = Math.max(maxSmallGroups, f.groups.filter((g) => g.rows < copyMinRows).length);
    // What a reader of the bucket decodes one by one.
    smallGroupsSeen += files.reduce((n, f) => n + f.groups.filter((g) => g.rows < copyMinRows).length, 0);
    plans++;
  }
  const amplification = reencoded / ingested;
  // Measured: 2.70 rows encoded per row, 8.1 small groups in the bucket on average, 6 in one file at most (encoding
  // every merge's last run: 4.84, 4.2, 3; never before copyMinRows: 0.94, 102, 76).
  assert.ok(amplification <= 3, `rows encoded again per row ingested: ${amplification.toFixed(2)}`);
  assert.ok(smallGroupsSeen / plans <= 10, `small groups in the bucket on average: ${(smallGroupsSeen / plans).toFixed(1)}`);
  assert.ok(maxSmallGroups <= 8, `small groups in one file at most: ${maxSmallGroups}`);
  const maxEncodes = Math.max(...files.flatMap((f) => f.groups.map((g) => g.encodes)));
  assert.ok(maxEncodes <= 4, `a row encoded at most ${maxEncodes} times (its flush included)`);
});
