/**
 * Compaction planning rules (pure): fixed-bucket runs of small files in sequence order, cut by large files and by
 * compaction.max.file-num; unaware-bucket bin packing as Paimon's AppendCompactCoordinator.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { packUnaware, pickBucketed, type CompactionRules } from "../../../src/maintenance/compact.ts";
import { EMPTY_STATS, type DataFileMeta } from "../../../src/format/manifest.ts";
import { TableOptions, validateCreateOptions } from "../../../src/options.ts";
import { WRITER_SIZE_RATIO } from "../../../actors/bucket-compactor.ts";

const MB = 1024 * 1024;
const rules: CompactionRules = { smallFileSize: 70 * MB, targetFileSize: 100 * MB, minFileNum: 3, maxFileNum: 6, maxRowsPerFile: 1_000_000, copyRowGroupRows: 0 };

let nextSeq = 0n;
function file(name: string, size: number, rows = 10): DataFileMeta {
  const min = nextSeq;
  nextSeq += BigInt(rows);
  return {
    fileName: name, fileSize: size, rowCount: rows, minKey: EMPTY_STATS.minValues, maxKey: EMPTY_STATS.maxValues, keyStats: EMPTY_STATS, valueStats: EMPTY_STATS,
    minSequenceNumber: min, maxSequenceNumber: min + BigInt(rows) - 1n, schemaId: 0, level: 0, extraFiles: [], creationTimeMillis: 0, deleteRowCount: 0,
    embeddedIndex: null, fileSource: 0, valueStatsCols: null, externalPath: null, firstRowId: null, writeCols: null,
  };
}
const names = (groups: DataFileMeta[][]): string[][] => groups.map((g) => g.map((f) => f.fileName));

test("pickBucketed - runs of consecutive small files in sequence order; a large file ends a run; short runs stay", () => {
  nextSeq = 0n;
  const fs = [file("s1", MB), file("s2", MB), file("s3", MB), file("L", 80 * MB), file("s4", MB), file("s5", MB), file("s6", MB), file("s7", MB)];
  // Given in any order: planning sorts by sequence number.
  assert.deepEqual(names(pickBucketed([...fs].reverse(), rules)), [["s1", "s2", "s3"], ["s4", "s5", "s6", "s7"]]);
  assert.deepEqual(names(pickBucketed(fs.slice(0, 5), rules)), [["s1", "s2", "s3"]], "the run after the large file is too short");
  // A file at the row bound is not small even when its bytes are.
  nextSeq = 0n;
  const rowFull = [file("a", MB), file("b", MB, 1_000_000), file("c", MB), file("d", MB), file("e", MB)];
  assert.deepEqual(names(pickBucketed(rowFull, rules)), [["c", "d", "e"]]);
});

test("pickBucketed - a run longer than max.file-num is cut into near-equal contiguous chunks", () => {
  nextSeq = 0n;
  const fs = Array.from({ length: 14 }, (_, i) => file(`f${i}`, MB));
  const got = pickBucketed(fs, rules);
  assert.deepEqual(got.map((g) => g.length), [4, 5, 5]);
  assert.deepEqual(got.flat().map((f) => f.fileName), fs.map((f) => f.fileName), "every file once, in order");
});

test("pickBucketed - a task whose files would not come out fewer is dropped", () => {
  nextSeq = 0n;
  // Each 60 MB: any two exceed the 100 MB target, so they would be written back one by one.
  assert.deepEqual(pickBucketed(Array.from({ length: 5 }, (_, i) => file(`f${i}`, 60 * MB)), rules), []);
});

test("packUnaware - small files by size into bins closed at 2 × target (4 MB open cost each) or max.file-num; a last bin needs min.file-num", () => {
  nextSeq = 0n;
  const big = [file("b1", 60 * MB), file("b2", 60 * MB), file("b3", 60 * MB), file("b4", 60 * MB)];
  const tiny = [file("t1", MB), file("t2", MB)];
  const large = file("L", 90 * MB);
  const got = packUnaware([...big, large, ...tiny], rules);
  // By size: t1, t2 (5 MB each with the open cost), b1, b2 (138 MB), b3 → 202 MB ≥ 200: a bin, rewritten in sequence
  // order; b4 alone is fewer than min.file-num; the large file is not small.
  assert.deepEqual(names(got), [["b1", "b2", "b3", "t1", "t2"]]);
  nextSeq = 0n;
  const many = Array.from({ length: 8 }, (_, i) => file(`m${i}`, MB));
  assert.deepEqual(packUnaware(many, rules).map((g) => g.length), [6], "closed at max.file-num; the 2 left are fewer than min.file-num");
});

test("options - compaction.small-file-ratio is a number (default 0.7)", () => {
  validateCreateOptions({ "compaction.small-file-ratio": "0.5", "compaction.min.file-num": "3" });
  assert.throws(() => validateCreateOptions({ "compaction.small-file-ratio": "half" }), /expected a number/);
  assert.equal(new TableOptions({}).double("compaction.small-file-ratio"), 0.7);
  assert.equal(new TableOptions({ "compaction.small-file-ratio": "0.25" }).double("compaction.small-file-ratio"), 0.25);
});

test("pickBucketed with a size ratio - the newest files over the trigger are forced, older neighbours join by the ratio", () => {
  nextSeq = 0n;
  const ratio = { ...rules, minFileNum: 3, maxFileNum: 50, sizeRatio: 1 };
  // 40, 16, 8 and two fresh 1s: 5 files, 3 over the trigger of 3 → the newest three (8, 1, 1 = 10) are forced;
  // 16 ≤ 10 × 1.01? no: it stays, and so does 40.
  const fs = [file("a40", 40 * MB), file("b16", 16 * MB), file("c8", 8 * MB), file("d1", MB), file("e1", MB)];
  assert.deepEqual(names(pickBucketed(fs, ratio)), [["c8", "d1", "e1"]]);
  // At the trigger exactly, only the newest is forced: it needs an older neighbour within the ratio.
  nextSeq = 0n;
  assert.deepEqual(names(pickBucketed([file("x8", 8 * MB), file("y4", 4 * MB), file("z1", MB)], ratio)), [], "4 > 1 × 1.01: nothing to do yet");
  nextSeq = 0n;
  assert.deepEqual(names(pickBucketed([file("x8", 8 * MB), file("y1", MB), file("z1", MB)], ratio)), [["y1", "z1"]], "1 ≤ 1.01: the two fresh files");
  // Excluded files (inputs of a compaction in flight) end a run like large ones.
  nextSeq = 0n;
  const ex = [file("p", MB), file("q", MB), file("r", MB), file("busy", MB), file("s", MB), file("t", MB)];
  assert.deepEqual(names(pickBucketed(ex, { ...rules, exclude: (f) => f.fileName === "busy" })), [["p", "q", "r"]]);
});

test("pickBucketed with a size ratio - a bucket fed one small file per flush and compacted every 4 flushes stays at ≤ 10 files, each byte rewritten ≤ 12 times", () => {
  nextSeq = 0n;
  const ratio = { ...rules, smallFileSize: 1e12, targetFileSize: 1e12, minFileNum: 5, maxFileNum: 50, sizeRatio: 1 };
  let files: DataFileMeta[] = [];
  let rewritten = 0;
  let ingested = 0;
  let maxLive = 0;
  for (let i = 0; i < 2400; i++) {
    const f = file(`f${i}`, 30_000 + ((i * 7919) % 3000));
    files.push(f);
    ingested += f.fileSize;
    maxLive = Math.max(maxLive, files.length);
    if (i % 4 !== 3) continue;
    for (const task of pickBucketed(files, ratio)) {
      const size = task.reduce((n, x) => n + x.fileSize, 0);
      rewritten += size;
      const at = files.indexOf(task[0]!);
      assert.deepEqual(files.slice(at, at + task.length), task, "a task is a contiguous run of the bucket's files");
      const out: DataFileMeta = { ...task[0]!, fileName: `c${i}-${at}`, fileSize: size, maxSequenceNumber: task[task.length - 1]!.maxSequenceNumber };
      files = [...files.slice(0, at), out, ...files.slice(at + task.length)];
    }
  }
  assert.ok(maxLive <= 10, `at most 10 live files (saw ${maxLive})`);
  assert.ok(rewritten / ingested <= 12, `write amplification ${(rewritten / ingested).toFixed(1)}`);
  for (let i = 1; i < files.length; i++) assert.ok(files[i]!.minSequenceNumber > files[i - 1]!.maxSequenceNumber, "sequence order kept");
});

/**
 * The writers' cadence, modelled: one small file per flush, a plan every `period` flushes while no job is in flight,
 * the job's inputs out of planning (in flight) until its COMPACT snapshot lands `lag` flushes later.
 */
function modelBucket(o: { flushes: number; period: number; lag: number; sizeRatio: number }): { maxLive: number; amplification: number; files: DataFileMeta[] } {
  nextSeq = 0n;
  const r: CompactionRules = { ...rules, smallFileSize: 1e12, targetFileSize: 1e12, minFileNum: 5, maxFileNum: 50, sizeRatio: o.sizeRatio };
  let files: DataFileMeta[] = [];
  let inFlight: { landsAt: number; task: DataFileMeta[] } | null = null;
  let rewritten = 0;
  let ingested = 0;
  let maxLive = 0;
  for (let i = 0; i < o.flushes; i++) {
    if (inFlight !== null && inFlight.landsAt <= i) {
      const task = inFlight.task;
      const at = files.indexOf(task[0]!);
      const out: DataFileMeta = { ...task[0]!, fileName: `c${i}`, fileSize: task.reduce((n, x) => n + x.fileSize, 0), maxSequenceNumber: task[task.length - 1]!.maxSequenceNumber };
      files = [...files.slice(0, at), out, ...files.slice(at + task.length)];
      inFlight = null;
    }
    const f = file(`f${i}`, 30_000 + ((i * 7919) % 3000));
    files.push(f);
    ingested += f.fileSize;
    maxLive = Math.max(maxLive, files.length);
    if (i % o.period !== o.period - 1 || inFlight !== null) continue;
    const task = pickBucketed(files, r)[0];
    if (task === undefined) continue;
    rewritten += task.reduce((n, x) => n + x.fileSize, 0);
    inFlight = { landsAt: i + o.lag, task };
  }
  return { maxLive, amplification: rewritten / ingested, files };
}

test("pickBucketed with the writers' size ratio - planned every 2 flushes, landing 2 flushes later: ≤ 8 live files, each byte rewritten ≤ 8 times; fewer of both than Paimon's ratio of 1", () => {
  const writers = modelBucket({ flushes: 2400, period: 2, lag: 2, sizeRatio: WRITER_SIZE_RATIO });
  assert.ok(writers.maxLive <= 8, `at most 8 live files (saw ${writers.maxLive})`);
  assert.ok(writers.amplification <= 8, `write amplification ${writers.amplification.toFixed(1)}`);
  for (let i = 1; i < writers.files.length; i++) assert.ok(writers.files[i]!.minSequenceNumber > writers.files[i - 1]!.maxSequenceNumber, "sequence order kept");
  const paimonRatio = modelBucket({ flushes: 2400, period: 2, lag: 2, sizeRatio: 1 });
  assert.ok(paimonRatio.amplification > 1.5 * writers.amplification, `ratio 1 rewrites more: ${paimonRatio.amplification.toFixed(1)} vs ${writers.amplification.toFixed(1)}`);
  // Three times as long: the amplification grows slowly (a level more), the live files not at all.
  const longer = modelBucket({ flushes: 7200, period: 2, lag: 2, sizeRatio: WRITER_SIZE_RATIO });
  const longerPaimon = modelBucket({ flushes: 7200, period: 2, lag: 2, sizeRatio: 1 });
  assert.ok(longer.maxLive <= 8 && longer.amplification <= 12, `7,200 flushes: ${longer.maxLive} files, amplification ${longer.amplification.toFixed(1)}`);
  assert.ok(longerPaimon.amplification > 1.5 * longer.amplification, `7,200 flushes, ratio 1: ${longerPaimon.amplification.toFixed(1)} vs ${longer.amplification.toFixed(1)}`);
});
