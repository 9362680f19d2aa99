/**
 * The universal compaction picker (src/lsm/universal-compaction.ts) against the scenarios of Java Paimon's own tests
 * (release-1.4.2: UniversalCompactionTest, ForceUpLevel0CompactionTest, EarlyFullCompactionTest, OffPeakHoursTest),
 * re-stated here, and fast-check properties over random bucket shapes: the output level is never 0, never below a
 * picked run and always below the first run left out; rules 1–3 pick at least 2 runs.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { levelSortedRun, type LevelSortedRun } from "../../../src/lsm/levels.ts";
import { EarlyFullCompaction, ForceUpLevel0Compaction, OffPeakHours, UniversalCompaction, type CompactionClock, type CompactUnit } from "../../../src/lsm/universal-compaction.ts";
import { lsmFile } from "../../helpers/lsm-files.ts";

let counter = 0;
const run = (level: number, size: number): LevelSortedRun => levelSortedRun(level, [lsmFile({ name: `f${counter++}`, level, size })]);
const level0 = (...sizes: number[]): LevelSortedRun[] => sizes.map((s) => run(0, s));
const levels = (...pairs: Array<[number, number]>): LevelSortedRun[] => pairs.map(([l, s]) => run(l, s));
const sizes = (unit: CompactUnit | null): number[] | null => (unit === null ? null : unit.files.map((f) => f.fileSize));
const ofTesting = (maxSizeAmp: number, sizeRatio: number, trigger: number): UniversalCompaction =>
  new UniversalCompaction({ maxSizeAmplificationPercent: maxSizeAmp, sizeRatio, numSortedRunCompactionTrigger: trigger });

/** A clock the test moves. */
function fakeClock(start = 0, hour = 12): CompactionClock & { now: number; hour: number } {
  const c = { now: start, hour, nowMillis: () => c.now, hourOfDay: () => c.hour };
  return c;
}

test("universal - output level: the level of the first run left out minus 1, never 0, the max level when all are taken (Java testOutputLevel)", () => {
  const c = ofTesting(25, 1, 3);
  const runs = levels([0, 1], [0, 1], [1, 1], [3, 1], [4, 1]);
  assert.equal(c.createUnit(runs, 5, 1).outputLevel, 1, "next is level 0: absorb until level 1 is taken");
  assert.equal(c.createUnit(runs, 5, 1).files.length, 3);
  assert.equal(c.createUnit(runs, 5, 2).outputLevel, 1);
  assert.equal(c.createUnit(runs, 5, 3).outputLevel, 2);
  assert.equal(c.createUnit(runs, 5, 4).outputLevel, 3);
  assert.equal(c.createUnit(runs, 5, 5).outputLevel, 5);
});

test("universal - pick by size amplification, size ratio, file count (Java testPick)", () => {
  const c = ofTesting(25, 1, 3);
  assert.deepEqual(sizes(c.pick(3, level0(1, 2, 3, 3))), [1, 2, 3, 3], "size amplification");
  assert.deepEqual(sizes(c.pick(4, levels([0, 1], [1, 1], [2, 1], [3, 50]))), [1, 1, 1], "size ratio");
  assert.deepEqual(sizes(c.pick(4, levels([0, 1], [1, 2], [2, 3], [3, 50]))), [1, 2, 3], "file count, then extended by size ratio");
});

test("universal - never output level 0 (Java testNoOutputLevel0, testExtremeCaseNoOutputLevel0)", () => {
  const c = ofTesting(25, 1, 3);
  assert.deepEqual(sizes(c.pick(3, levels([0, 1], [0, 1], [1, 1], [2, 50]))), [1, 1, 1]);
  assert.deepEqual(sizes(c.pick(3, levels([0, 1], [0, 2], [1, 3], [2, 50]))), [1, 2, 3]);
  const extreme = ofTesting(200, 1, 5).pick(6, level0(1, 1, 1, 1024, 1024 * 1024));
  assert.deepEqual(sizes(extreme), [1, 1, 1, 1024, 1024 * 1024]);
  assert.equal(extreme!.outputLevel, 5);
});

/** Java's appendAndPickForSizeAmp: a new run of size 1 in front, then the size-amp rule alone on level-0 runs. */
function appendAndPickForSizeAmp(c: UniversalCompaction, current: number[]): number[] {
  const next = [1, ...current];
  const unit = c.pickForSizeAmp(3, level0(...next));
  return unit === null ? next : [unit.files.reduce((a, f) => a + f.fileSize, 0)];
}

test("universal - size amplification sequence (Java testSizeAmplification)", () => {
  const c = ofTesting(25, 0, 1);
  const expected = [[2], [3], [4], [1, 4], [6], [1, 6], [8], [1, 8], [1, 1, 8], [11], [1, 11], [1, 1, 11], [14], [1, 14], [1, 1, 14], [1, 1, 1, 14], [18]];
  let s = [1];
  for (const want of expected) {
    s = appendAndPickForSizeAmp(c, s);
    assert.deepEqual(s, want);
  }
});

/** Java's pickForSizeRatio helper: runs at levels 0, 1, 2, … of these sizes; the picked ones merged in front. */
function pickForSizeRatio(c: UniversalCompaction, current: number[]): number[] {
  const runs = current.map((s, i) => run(i, s));
  const unit = c.pickForSizeRatio(current.length, runs);
  if (unit === null) return current;
  const rest = [...current];
  for (const f of unit.files) rest.splice(rest.indexOf(f.fileSize), 1);
  return [unit.files.reduce((a, f) => a + f.fileSize, 0), ...rest];
}

test("universal - size ratio sequence (Java testSizeRatio)", () => {
  const c = ofTesting(25, 1, 5);
  const expected = [
    [5], [1, 5], [1, 1, 5], [1, 1, 1, 5], [4, 5], [1, 4, 5], [1, 1, 4, 5], [3, 4, 5], [1, 3, 4, 5], [2, 3, 4, 5], [1, 2, 3, 4, 5], [16],
    [1, 16], [1, 1, 16], [1, 1, 1, 16], [4, 16], [1, 4, 16], [1, 1, 4, 16], [3, 4, 16], [1, 3, 4, 16], [2, 3, 4, 16], [1, 2, 3, 4, 16], [11, 16],
  ];
  let s = [1, 1, 1, 1];
  for (const want of expected) {
    s = pickForSizeRatio(c, [1, ...s]);
    assert.deepEqual(s, want);
  }
});

test("universal - the size-ratio threshold (Java testSizeRatioThreshold)", () => {
  assert.deepEqual(pickForSizeRatio(ofTesting(25, 10, 2), [8, 9, 10]), [8, 9, 10]);
  assert.deepEqual(pickForSizeRatio(ofTesting(25, 20, 2), [8, 9, 10]), [27]);
});

test("universal - fewer runs than the trigger: nothing; exactly the trigger: no file-count pick", () => {
  const c = ofTesting(200, 1, 5);
  assert.equal(c.pick(6, level0(1, 1, 1, 1)), null);
  assert.equal(c.pick(6, levels([0, 1], [1, 10], [2, 100], [3, 1000], [5, 10000])), null, "5 runs, ratio never met, amp below 200%");
  assert.deepEqual(sizes(c.pick(6, levels([0, 1], [0, 1], [1, 10], [2, 100], [3, 1000], [5, 10000]))), [1, 1, 10], "6 runs: 2 by file count, then level 1 by ratio");
});

test("force up level 0 - universal's pick, else every level-0 run up (Java testLookup, ForceUpLevel0CompactionTest)", () => {
  const f = new ForceUpLevel0Compaction(ofTesting(25, 1, 3), null);
  let u = f.pick(3, level0(1, 2, 2, 2));
  assert.deepEqual([sizes(u), u?.outputLevel], [[1, 2, 2, 2], 2], "level 0 to max level");
  u = f.pick(3, levels([0, 1], [1, 2], [2, 2]));
  assert.deepEqual([sizes(u), u?.outputLevel], [[1, 2, 2], 2], "level 0 force pick");
  u = f.pick(3, levels([0, 1], [2, 2]));
  assert.deepEqual([sizes(u), u?.outputLevel], [[1], 1], "level 0 to an empty level: one run");

  const g = new ForceUpLevel0Compaction(ofTesting(200, 1, 5), null);
  assert.equal(g.pick(3, level0(1, 1))?.outputLevel, 2);
  assert.equal(g.pick(3, levels([0, 1], [1, 10]))?.outputLevel, 2);
  assert.equal(g.pick(3, levels([0, 1], [0, 5], [2, 10]))?.outputLevel, 1);
  assert.equal(g.pick(3, levels([2, 10])), null, "no level 0");
  assert.equal(g.pick(3, level0(1, 5, 10, 20))?.outputLevel, 2);
});

test("force up level 0, gentle - forced only every max-interval-th time universal declines (Java testForcePickL0)", () => {
  const maxInterval = 5;
  const f = new ForceUpLevel0Compaction(ofTesting(25, 1, 5), maxInterval);
  const cases: Array<[LevelSortedRun[], number[], number]> = [
    [level0(1, 2, 2, 2), [1, 2, 2, 2], 2],
    [levels([0, 2], [1, 2], [2, 2]), [2, 2, 2], 2],
    [levels([0, 1], [2, 2]), [1], 1],
  ];
  for (const [runs, want, outputLevel] of cases) {
    for (let i = 1; i <= maxInterval; i++) {
      const u = f.pick(3, runs);
      if (i < maxInterval) assert.equal(u, null, `skip ${i}`);
      else assert.deepEqual([sizes(u), u?.outputLevel], [want, outputLevel]);
    }
  }
});

test("early full compaction - interval, total size, incremental size; the last full compaction is remembered (Java EarlyFullCompactionTest)", () => {
  assert.equal(EarlyFullCompaction.create({}), null);
  assert.notEqual(EarlyFullCompaction.create({ intervalMillis: 3_600_000 }), null);
  const runs = (...s: number[]): LevelSortedRun[] => level0(...s);

  assert.equal(new EarlyFullCompaction({ intervalMillis: 1000, totalSizeThreshold: 1000 }).tryFullCompact(5, runs(100)), null, "a single run");

  const clock = fakeClock(10_000);
  const byInterval = new EarlyFullCompaction({ intervalMillis: 1000 }, clock);
  const u = byInterval.tryFullCompact(5, runs(100, 200));
  assert.deepEqual([u?.outputLevel, u?.files.length], [4, 2], "the first time");
  clock.now += 500;
  assert.equal(byInterval.tryFullCompact(5, runs(100, 200)), null);
  clock.now += 501;
  assert.equal(byInterval.tryFullCompact(5, runs(100, 200))?.outputLevel, 4, "1001 ms > 1000 ms");

  const byTotal = new EarlyFullCompaction({ totalSizeThreshold: 1000 });
  assert.equal(byTotal.tryFullCompact(5, runs(100, 200))?.outputLevel, 4);
  assert.equal(byTotal.tryFullCompact(5, runs(500, 500)), null, "equal is not below");
  assert.equal(byTotal.tryFullCompact(5, runs(500, 1000)), null);

  const byIncremental = new EarlyFullCompaction({ incrementalSizeThreshold: 500 });
  assert.equal(byIncremental.tryFullCompact(5, runs(400, 200))?.outputLevel, 4);
  assert.equal(byIncremental.tryFullCompact(5, runs(100, 200)), null);
  assert.equal(byIncremental.tryFullCompact(5, [...runs(100, 300), run(4, 500)]), null, "the max level does not count");
  assert.equal(byIncremental.tryFullCompact(5, [...runs(100, 300, 300), run(4, 500)])?.files.length, 4);

  const c2 = fakeClock(10_000);
  const both = new EarlyFullCompaction({ intervalMillis: 1000, totalSizeThreshold: 500 }, c2);
  assert.notEqual(both.tryFullCompact(5, runs(300, 300)), null, "interval first, whatever the size");
  c2.now += 100;
  assert.notEqual(both.tryFullCompact(5, runs(300, 100)), null, "by total size, which also records the time");
  c2.now += 901;
  assert.equal(both.tryFullCompact(5, runs(300, 300)), null, "11001 - 10100 < 1000");

  const c3 = fakeClock(10_000);
  const inc = new EarlyFullCompaction({ intervalMillis: 1000, incrementalSizeThreshold: 500 }, c3);
  assert.notEqual(inc.tryFullCompact(5, runs(300, 100)), null);
  c3.now += 100;
  assert.notEqual(inc.tryFullCompact(5, runs(300, 300)), null);
  c3.now += 901;
  assert.equal(inc.tryFullCompact(5, runs(300, 100)), null);
});

test("universal with early full compaction - interval, and size-amp picks count as full compactions (Java testOptimizedCompactionInterval, testTotalSizeThreshold)", () => {
  const clock = fakeClock(0);
  const c = new UniversalCompaction({ maxSizeAmplificationPercent: 100, sizeRatio: 1, numSortedRunCompactionTrigger: 3, earlyFullCompaction: new EarlyFullCompaction({ intervalMillis: 1000 }, clock), clock });
  const shape = (): LevelSortedRun[] => levels([0, 1], [1, 3], [2, 5]);
  assert.deepEqual(sizes(c.pick(3, shape())), [1, 3, 5], "the first time");
  clock.now = 1001;
  assert.deepEqual(sizes(c.pick(3, shape())), [1, 3, 5]);
  assert.equal(c.pick(3, shape()), null, "no rule fires");
  clock.now = 1500;
  assert.deepEqual(sizes(c.pick(3, levels([0, 3], [1, 3], [2, 5]))), [3, 3, 5], "size amplification");
  clock.now = 2001;
  assert.equal(c.pick(3, shape()), null, "the size-amp pick at 1500 was a full compaction");

  const t = new UniversalCompaction({ maxSizeAmplificationPercent: 100, sizeRatio: 1, numSortedRunCompactionTrigger: 3, earlyFullCompaction: new EarlyFullCompaction({ totalSizeThreshold: 10 }) });
  assert.deepEqual(sizes(t.pick(3, shape())), [1, 3, 5]);
  assert.equal(t.pick(3, levels([0, 2], [1, 6], [2, 10])), null);
  assert.equal(t.pick(3, [run(3, 5)]), null, "one sorted run");
});

test("off-peak hours - the window (inclusive start, exclusive end, across midnight) and its extra size ratio (Java OffPeakHoursTest)", () => {
  assert.equal(OffPeakHours.create(-1, -1, 10), null);
  assert.equal(OffPeakHours.create(5, 5, 10), null);
  assert.equal(OffPeakHours.create(2, -1, 10), null);
  assert.equal(OffPeakHours.create(-1, 2, 10), null);
  const day = OffPeakHours.create(2, 8, 10)!;
  assert.deepEqual([1, 2, 5, 7, 8, 9].map((h) => day.currentRatio(h)), [0, 10, 10, 10, 0, 0]);
  const night = OffPeakHours.create(22, 6, 10)!;
  assert.deepEqual([21, 22, 23, 0, 5, 6, 10].map((h) => night.currentRatio(h)), [0, 10, 10, 10, 10, 0, 0]);

  // Sizes 8, 9, 10 at ratio 10 merge nothing (8 × 1.10 < 9); with 10 more points off-peak they all merge.
  const clock = fakeClock(0, 3);
  const c = new UniversalCompaction({ maxSizeAmplificationPercent: 1000, sizeRatio: 10, numSortedRunCompactionTrigger: 2, offPeakHours: OffPeakHours.create(2, 8, 10), clock });
  assert.deepEqual(sizes(c.pickForSizeRatio(2, levels([0, 8], [1, 9], [2, 10]))), [8, 9, 10]);
  clock.hour = 9;
  assert.equal(c.pickForSizeRatio(2, levels([0, 8], [1, 9], [2, 10])), null);
});

/** Random bucket shapes: some level-0 runs, then distinct increasing levels ≥ 1 up to the max level. */
const bucketShape = fc
  .record({
    maxLevel: fc.integer({ min: 1, max: 7 }),
    l0: fc.array(fc.integer({ min: 1, max: 1 << 20 }), { maxLength: 12 }),
    upper: fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 1 << 26 })), { minLength: 7, maxLength: 7 }),
    trigger: fc.integer({ min: 1, max: 8 }),
    amp: fc.integer({ min: 0, max: 400 }),
    ratio: fc.integer({ min: 0, max: 50 }),
  })
  .map((s) => {
    const runs = s.l0.map((size) => run(0, size));
    for (let level = 1; level <= s.maxLevel; level++) {
      const [present, size] = s.upper[level - 1]!;
      if (present) runs.push(run(level, size));
    }
    return { ...s, runs };
  });

function checkUnit(unit: CompactUnit, runs: readonly LevelSortedRun[], maxLevel: number): void {
  assert.notEqual(unit.outputLevel, 0, "never level 0");
  assert.ok(unit.outputLevel <= maxLevel);
  const n = unit.files.length;
  assert.deepEqual(unit.files, runs.slice(0, n).flatMap((r) => r.files), "the newest runs, in order");
  for (const r of runs.slice(0, n)) assert.ok(r.level <= unit.outputLevel, "never down a level");
  if (n < runs.length) assert.ok(runs[n]!.level > unit.outputLevel, "below every run left out");
  else assert.equal(unit.outputLevel, maxLevel, "everything goes to the max level");
}

test("universal - properties over random buckets (fast-check): output level, order, at least 2 runs unless forced", () => {
  fc.assert(
    fc.property(bucketShape, (s) => {
      const universal = ofTesting(s.amp, s.ratio, s.trigger);
      const unit = universal.pick(s.maxLevel + 1, s.runs);
      if (unit !== null) {
        checkUnit(unit, s.runs, s.maxLevel);
        assert.ok(unit.files.length >= 2, "rules 1–3 take at least 2 runs");
      }
      if (s.runs.length > s.trigger) assert.notEqual(unit, null, "more runs than the trigger always compact");
      const forced = new ForceUpLevel0Compaction(ofTesting(s.amp, s.ratio, s.trigger), null).pick(s.maxLevel + 1, s.runs);
      if (unit !== null) assert.deepEqual(sizes(forced), sizes(unit));
      else if (s.runs.length > 0 && s.runs[0]!.level === 0) {
        assert.notEqual(forced, null, "level 0 always goes up");
        checkUnit(forced!, s.runs, s.maxLevel);
        const l0 = s.runs.filter((r) => r.level === 0).length;
        assert.ok(forced!.files.length >= l0, "every level-0 run");
        // A single run only when the one level-0 file goes to an empty level or is the bucket's only run.
        if (forced!.files.length < 2) assert.ok(s.runs.length === 1 || s.runs[1]!.level >= 2);
      } else assert.equal(forced, null);
    }),
    { numRuns: 3000 },
  );
});
