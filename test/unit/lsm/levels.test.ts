/**
 * A bucket's LSM levels (src/lsm/levels.ts), with the scenarios of Java Paimon's LevelsTest and LevelsOrderingFixTest
 * (release-1.4.2): level-0 order newest first with its tie-breaks, sorted runs, the highest non-empty level, the
 * non-overlap rule of levels ≥ 1 (Java's SortedRun.validate) and applying compaction results.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isLakeError } from "../../../src/errors.ts";
import { compareLevel0, Levels } from "../../../src/lsm/levels.ts";
import { compareIntKeys, describeFile, lsmFile } from "../../helpers/lsm-files.ts";

const names = (files: readonly { fileName: string }[]): string[] => files.map((f) => f.fileName);

test("levels - the highest non-empty level: -1 empty, 0 with only level 0, else the top level holding a file (Java LevelsTest)", () => {
  assert.equal(new Levels([], 3, compareIntKeys).nonEmptyHighestLevel(), -1);
  assert.equal(new Levels([lsmFile({ name: "a" }), lsmFile({ name: "b" })], 3, compareIntKeys).nonEmptyHighestLevel(), 0);
  assert.equal(new Levels([lsmFile({ name: "a" }), lsmFile({ name: "b", level: 1 })], 3, compareIntKeys).nonEmptyHighestLevel(), 1);
  assert.equal(new Levels([lsmFile({ name: "a" }), lsmFile({ name: "b", level: 1 }), lsmFile({ name: "c", level: 2 })], 3, compareIntKeys).nonEmptyHighestLevel(), 2);
  // Two level-0 files with equal sequence numbers are both kept (the name breaks the tie).
  assert.equal(new Levels([lsmFile({ name: "a" }), lsmFile({ name: "b" })], 3, compareIntKeys).allFiles().length, 2);
});

test("levels - level 0 is newest first: max sequence desc, then min sequence, creation time, file name; independent of input order (Java LevelsOrderingFixTest, Paimon #5872)", () => {
  const earlier = lsmFile({ name: "z-file.parquet", minSeq: 98, maxSeq: 100, creationTimeMillis: 1000 });
  const later = lsmFile({ name: "a-file.parquet", minSeq: 99, maxSeq: 100, creationTimeMillis: 1001 });
  const a = new Levels([earlier, later], 2, compareIntKeys);
  const b = new Levels([later, earlier], 2, compareIntKeys);
  assert.deepEqual(names(a.allFiles()), ["z-file.parquet", "a-file.parquet"], "equal max sequence: the smaller min sequence first");
  assert.deepEqual(names(b.allFiles()), names(a.allFiles()));

  const files = [
    lsmFile({ name: "old", minSeq: 0, maxSeq: 9 }),
    lsmFile({ name: "new", minSeq: 20, maxSeq: 29 }),
    lsmFile({ name: "t2", minSeq: 10, maxSeq: 19, creationTimeMillis: 2 }),
    lsmFile({ name: "t1b", minSeq: 10, maxSeq: 19, creationTimeMillis: 1 }),
    lsmFile({ name: "t1a", minSeq: 10, maxSeq: 19, creationTimeMillis: 1 }),
    lsmFile({ name: "tnull", minSeq: 10, maxSeq: 19, creationTimeMillis: null }),
  ];
  assert.deepEqual(names(new Levels(files, 3, compareIntKeys).level0Files()), ["new", "tnull", "t1a", "t1b", "t2", "old"]);
  assert.equal(compareLevel0(files[0]!, files[0]!), 0);
});

test("levels - sorted runs: each level-0 file newest first, then each non-empty level in key order; counts", () => {
  const files = [
    lsmFile({ name: "l2b", level: 2, min: 50, max: 60 }),
    lsmFile({ name: "l0old", minSeq: 1, maxSeq: 1, min: 0, max: 100 }),
    lsmFile({ name: "l2a", level: 2, min: 0, max: 49 }),
    lsmFile({ name: "l0new", minSeq: 2, maxSeq: 2, min: 5, max: 6 }),
    lsmFile({ name: "l4", level: 4, min: 0, max: 1000, size: 7 }),
  ];
  const levels = new Levels(files, 5, compareIntKeys);
  const runs = levels.sortedRuns();
  assert.deepEqual(
    runs.map((r) => [r.level, names(r.files), r.totalSize]),
    [
      [0, ["l0new"], 2],
      [0, ["l0old"], 101],
      [2, ["l2a", "l2b"], 50 + 11],
      [4, ["l4"], 7],
    ],
  );
  assert.equal(levels.numberOfSortedRuns(), 4);
  assert.equal(levels.nonEmptyHighestLevel(), 4);
  assert.equal(levels.numberOfLevels, 5);
  assert.equal(levels.maxLevel, 4);
  assert.equal(levels.totalFileSize(), 2 + 101 + 61 + 7);
  assert.deepEqual(levels.runOfLevel(1), []);
});

test("levels - a level ≥ 1 whose files overlap (or touch at one key) is refused, naming both files", () => {
  const bad = [lsmFile({ name: "f1", level: 1, min: 0, max: 10 }), lsmFile({ name: "f2", level: 1, min: 10, max: 20 })];
  assert.throws(
    () => new Levels(bad, 3, compareIntKeys),
    (e: unknown) => isLakeError(e, "DataInvalid") && /level 1 is not a sorted run/.test(e.message) && e.message.includes("f1") && e.message.includes("f2"),
  );
  // Level 0 may overlap at will.
  assert.doesNotThrow(() => new Levels(bad.map((f) => ({ ...f, level: 0 })), 3, compareIntKeys));
});

test("levels - num-levels below 2, negative levels and duplicate files are refused; a file above num-levels widens the tree (as Java)", () => {
  assert.throws(() => new Levels([], 1, compareIntKeys), /at least 2/);
  assert.throws(() => new Levels([lsmFile({ name: "x", level: -1 })], 3, compareIntKeys), /level -1/);
  assert.throws(() => new Levels([lsmFile({ name: "x" }), lsmFile({ name: "x" })], 3, compareIntKeys), /already at level 0/);
  const wide = new Levels([lsmFile({ name: "x", level: 7 })], 3, compareIntKeys);
  assert.equal(wide.maxLevel, 7);
  assert.equal(new Levels([lsmFile({ name: "x", level: 1 })], 1, compareIntKeys).numberOfLevels, 2, "one level-1 file makes 2 levels");
});

test("levels - update applies a compaction result: rewritten files leave, outputs join, an upgraded file moves", () => {
  const a = lsmFile({ name: "a", min: 0, max: 5, maxSeq: 3 });
  const b = lsmFile({ name: "b", min: 3, max: 9, maxSeq: 2 });
  const c = lsmFile({ name: "c", level: 1, min: 20, max: 30 });
  const levels = new Levels([a, b, c], 3, compareIntKeys);
  const out = lsmFile({ name: "out", level: 2, min: 0, max: 9 });
  levels.update([a, b, c], [out, { ...c, level: 2 }]);
  assert.deepEqual(levels.sortedRuns().map((r) => [r.level, r.files.map(describeFile)]), [[2, [["out", 0, 9], ["c", 20, 30]]]]);

  levels.addLevel0File(lsmFile({ name: "d", min: 1, max: 1, maxSeq: 9 }));
  assert.deepEqual(names(levels.level0Files()), ["d"]);
  assert.throws(() => levels.addLevel0File(lsmFile({ name: "e", level: 1 })), /not a new level-0 file/);
});

test("levels - a result that does not fit is refused and changes nothing", () => {
  const a = lsmFile({ name: "a", min: 0, max: 5 });
  const c = lsmFile({ name: "c", level: 1, min: 20, max: 30 });
  const levels = new Levels([a, c], 3, compareIntKeys);
  const snapshot = JSON.stringify(levels.sortedRuns().map((r) => [r.level, names(r.files)]));
  const unchanged = (): void => assert.equal(JSON.stringify(levels.sortedRuns().map((r) => [r.level, names(r.files)])), snapshot);

  // The output overlaps the level-1 file left in place.
  assert.throws(() => levels.update([a], [lsmFile({ name: "o", level: 1, min: 0, max: 25 })]), (e: unknown) => isLakeError(e, "Unexpected") && /level 1 is not a sorted run/.test(e.message));
  unchanged();
  assert.throws(() => levels.update([lsmFile({ name: "ghost" })], []), /removes ghost from level 0, where it is not/);
  unchanged();
  assert.throws(() => levels.update([], [lsmFile({ name: "high", level: 3 })]), /outside this tree's levels 0…2/);
  unchanged();
  assert.throws(() => levels.update([a, a], []), /twice/);
  unchanged();
});
