/**
 * IntervalPartition (src/lsm/interval-partition.ts): Java Paimon's IntervalPartitionTest scenarios (release-1.4.2),
 * and fast-check properties — every file once, sections in key order and disjoint, each run a valid sorted run, and
 * each section in the fewest runs possible (the most key ranges sharing one key).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { DataFileMeta } from "../../../src/format/manifest.ts";
import { intervalPartition, type Section } from "../../../src/lsm/interval-partition.ts";
import { validateSortedRun } from "../../../src/lsm/levels.ts";
import { compareIntKeys, keyOf, lsmFile } from "../../helpers/lsm-files.ts";

let counter = 0;
const parse = (text: string): DataFileMeta[] =>
  [...text.matchAll(/\[(\d+), (\d+)\]/g)].map((m) => lsmFile({ name: `f${counter++}`, min: Number(m[1]), max: Number(m[2]) }));

const render = (run: readonly DataFileMeta[]): string => run.map((f) => `[${keyOf(f.minKey)}, ${keyOf(f.maxKey)}]`).join(", ");
/** Sections as Java's test writes them: runs split by " | ", sections by newlines; runs compared as a multiset. */
const renderSections = (sections: readonly Section[]): string[][] => sections.map((s) => s.map(render).sort());
const expected = (text: string): string[][] => text.split("\n").map((line) => line.split(" | ").sort());

test("interval partition - same min key: one run per file, ordered by max key (Java testSameMinKey)", () => {
  const got = intervalPartition(parse("[100, 200], [100, 400], [100, 300], [100, 500]"), compareIntKeys);
  assert.deepEqual(renderSections(got), expected("[100, 200] | [100, 300] | [100, 400] | [100, 500]"));
});

test("interval partition - same max key (Java testSameMaxKey)", () => {
  const got = intervalPartition(parse("[100, 500], [300, 500], [200, 500], [400, 500]"), compareIntKeys);
  assert.deepEqual(renderSections(got), expected("[100, 500] | [200, 500] | [300, 500] | [400, 500]"));
});

test("interval partition - sections end where no range reaches further (Java testSectionPartitioning)", () => {
  // 0    5    10   15   20   25   30
  // |--------|
  //      |-|
  //          |-----|
  //                 |-----|
  //                 |-----------|
  //                         |-------|
  const got = intervalPartition(parse("[0, 9], [5, 7], [9, 15], [16, 22], [16, 28], [24, 32]"), compareIntKeys);
  assert.deepEqual(renderSections(got), expected("[0, 9] | [5, 7], [9, 15]\n[16, 22], [24, 32] | [16, 28]"));
});

test("interval partition - runs come out in java.util.PriorityQueue's array order", () => {
  // Traced by hand with Java's sift rules (runs keyed by the max key of their last file): A=[0,10]; [1,5] opens B
  // (heap B A); [2,3] opens C (C A B); [4,20] joins C (B A C); [6,8] joins B (B C A); [11,12] joins B, which ends
  // lowest, and B goes back below A (A C B).
  const got = intervalPartition(parse("[0, 10], [1, 5], [2, 3], [4, 20], [6, 8], [11, 12]"), compareIntKeys);
  assert.deepEqual(
    got.map((s) => s.map(render)),
    [["[0, 10]", "[2, 3], [4, 20]", "[1, 5], [6, 8], [11, 12]"]],
  );
  assert.deepEqual(intervalPartition([], compareIntKeys), []);
});

/** The most closed ranges sharing one key: the fewest sorted runs the files fit in. */
function depth(files: readonly DataFileMeta[]): number {
  const events: Array<[number, number]> = [];
  for (const f of files) events.push([keyOf(f.minKey), 1], [keyOf(f.maxKey) + 1, -1]);
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let cur = 0;
  let best = 0;
  for (const [, d] of events) best = Math.max(best, (cur += d));
  return best;
}

test("interval partition - properties over random key ranges (fast-check)", () => {
  const range = fc.tuple(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 30 })).map(([lo, w]) => [lo, lo + w] as const);
  fc.assert(
    fc.property(fc.array(range, { minLength: 1, maxLength: 40 }), (ranges) => {
      const files = ranges.map(([lo, hi], i) => lsmFile({ name: `r${i}`, min: lo, max: hi }));
      const sections = intervalPartition(files, compareIntKeys);
      assert.deepEqual(sections.flat(2).map((f) => f.fileName).sort(), files.map((f) => f.fileName).sort(), "every file once");
      let prevMax = -Infinity;
      for (const section of sections) {
        const all = section.flat();
        const lo = Math.min(...all.map((f) => keyOf(f.minKey)));
        const hi = Math.max(...all.map((f) => keyOf(f.maxKey)));
        assert.ok(lo > prevMax, "sections are in key order and share no key");
        prevMax = hi;
        for (const run of section) validateSortedRun(run, compareIntKeys, 1);
        assert.equal(section.length, depth(all), "the fewest runs");
      }
    }),
    { numRuns: 500 },
  );
});
