/**
 * From a pick to a compaction's work (src/lsm/compact-task.ts): the scenarios of Java Paimon's
 * MergeTreeCompactManagerTest (release-1.4.2; a strategy that takes every run to the top level, files of size
 * max − min + 1, upgrade threshold 2, a rewriter that writes one file over its inputs' key range), the rules for
 * deletes at the max level, forced rewrites, full compaction, dropDelete and the stall predicates; and a fast-check
 * simulation of whole buckets under the real pickers: levels ≥ 1 never overlap, nothing is lost, the max level
 * never keeps retract rows, and the sorted runs never exceed the trigger after a compaction.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { compactNotCompleted, dropDeletes, mayContainDeletes, pickFullCompaction, planCompaction, planCompactTask, planFullCompaction, shouldWaitForLatestCompaction, shouldWaitForPreparingCheckpoint, type CompactStep, type PlannedCompaction } from "../../../src/lsm/compact-task.ts";
import { createCompactStrategy, type LsmCompactionOptions } from "../../../src/lsm/compaction-options.ts";
import { Levels, validateSortedRun } from "../../../src/lsm/levels.ts";
import { unitOfRuns, type CompactStrategy } from "../../../src/lsm/universal-compaction.ts";
import { applyPlan, compareIntKeys, describeFile, keyOf, lsmFile, simulateBucket } from "../../helpers/lsm-files.ts";

type LevelMinMax = [level: number, min: number, max: number];

/** A step by file names: `{ upgrade: name }` or `{ rewrite: sections → runs → names }`. */
const stepNames = (step: CompactStep): { upgrade: string } | { rewrite: string[][][] } =>
  step.kind === "upgrade" ? { upgrade: step.file.fileName } : { rewrite: step.sections.map((s) => s.map((run) => run.map((f) => f.fileName))) };

/** Every run to the top level (Java's testStrategy). */
const allToTop: CompactStrategy = { pick: (numLevels, runs) => unitOfRuns(numLevels - 1, runs) };

/**
 * Java's innerTest: files at (level, min, max) with max sequence = their index, 3 levels, upgrade threshold 2, one
 * compaction, the resulting levels as (level, min, max) in sorted-run order.
 */
function compactOnce(inputs: LevelMinMax[], strategy: CompactStrategy = allToTop, opts: { forceKeepDelete?: boolean; expectDropDelete?: boolean } = {}): LevelMinMax[] {
  const files = inputs.map(([level, min, max], i) => lsmFile({ name: `f${i}`, level, min, max, maxSeq: i }));
  const levels = new Levels(files, 3, compareIntKeys);
  const planned = planCompaction(levels, strategy, { deletionVectors: false, forceKeepDelete: opts.forceKeepDelete ?? false });
  if (planned !== null) {
    if (opts.expectDropDelete !== undefined) assert.equal(planned.dropDelete, opts.expectDropDelete);
    execute(levels, planned, 2);
  }
  return levels.allFiles().map((f) => [f.level, keyOf(f.minKey), keyOf(f.maxKey)]);
}

let outCounter = 0;
/** Runs a plan with the one-file-per-rewrite rewriter of Java's test (no target size) and applies it to the levels. */
function execute(levels: Levels, planned: PlannedCompaction, compactionFileSize: number): void {
  const plan = planCompactTask(planned, { compareKeys: compareIntKeys, compactionFileSize, maxLevel: levels.maxLevel, forceRewriteAllFiles: false });
  applyPlan(levels, plan, Infinity, () => `out${outCounter++}`);
}

test("compact task - Java MergeTreeCompactManagerTest: normal, upgrade, small files, cross-level, complex", () => {
  assert.deepEqual(compactOnce([[0, 1, 3], [1, 1, 5], [1, 6, 7]], allToTop, { expectDropDelete: true }), [[2, 1, 5], [2, 6, 7]], "testNormal");
  assert.deepEqual(compactOnce([[0, 1, 3], [0, 1, 5], [0, 6, 8]]), [[2, 1, 5], [2, 6, 8]], "testUpgrade");
  assert.deepEqual(compactOnce([[0, 1, 1], [0, 2, 2]]), [[2, 1, 2]], "testSmallFiles");
  assert.deepEqual(compactOnce([[0, 1, 5], [0, 6, 6], [1, 7, 8], [1, 9, 10]]), [[2, 1, 5], [2, 6, 6], [2, 7, 8], [2, 9, 10]], "testSmallFilesNoCompact");
  assert.deepEqual(compactOnce([[0, 1, 5], [0, 6, 6], [1, 7, 7], [1, 9, 10]]), [[2, 1, 5], [2, 6, 7], [2, 9, 10]], "testSmallFilesCrossLevel");
  assert.deepEqual(compactOnce([[0, 1, 5], [0, 6, 6], [1, 1, 4], [1, 6, 8], [1, 10, 11], [2, 1, 3], [2, 4, 6]]), [[2, 1, 8], [2, 10, 11]], "testComplex");
  assert.deepEqual(compactOnce([[0, 1, 5], [0, 6, 6], [1, 1, 4], [1, 6, 8], [1, 10, 10], [2, 1, 3], [2, 4, 6]]), [[2, 1, 10]], "testSmallInComplex");
  assert.deepEqual(compactOnce([[3, 1, 3]]), [[3, 1, 3]], "testNoCompaction: one file already at the output level");
});

test("compact task - Java MergeTreeCompactManagerTest: output to level 0 and to the penultimate level keep deletes", () => {
  const firstTwo = (outputLevel: number): CompactStrategy => ({ pick: (_n, runs) => unitOfRuns(outputLevel, runs.slice(0, 2)) });
  assert.deepEqual(compactOnce([[0, 1, 3], [0, 1, 5], [0, 1, 8]], firstTwo(0), { expectDropDelete: false }), [[0, 1, 8], [0, 1, 3]], "testOutputToZeroLevel");
  assert.deepEqual(compactOnce([[0, 1, 3], [0, 1, 5], [2, 1, 7]], firstTwo(1), { expectDropDelete: false }), [[1, 1, 5], [2, 1, 7]], "testCompactToPenultimateLayer");
  assert.deepEqual(compactOnce([[0, 1, 3], [1, 1, 5], [1, 6, 7]], allToTop, { forceKeepDelete: true, expectDropDelete: false }), [[2, 1, 5], [2, 6, 7]], "keep delete (chain tables)");
});

test("compact task - dropDelete: never into level 0; into level ≥ 1 when nothing older lies above, or with deletion vectors", () => {
  const levels = new Levels([lsmFile({ name: "a" }), lsmFile({ name: "b", level: 3, min: 0, max: 9 })], 4, compareIntKeys);
  assert.equal(dropDeletes(0, levels, { deletionVectors: true }), false);
  assert.equal(dropDeletes(1, levels, { deletionVectors: false }), false, "level 3 holds older versions");
  assert.equal(dropDeletes(1, levels, { deletionVectors: true }), true, "deletion vectors mask older versions");
  assert.equal(dropDeletes(3, levels, { deletionVectors: false }), true);
  assert.equal(dropDeletes(3, levels, { deletionVectors: false, forceKeepDelete: true }), false);
});

test("compact task - a large file upgraded into the max level is rewritten instead when it may hold deletes (deleteRowCount > 0 or unknown)", () => {
  const files = [
    lsmFile({ name: "clean", min: 0, max: 9, deleteRowCount: 0 }),
    lsmFile({ name: "deletes", min: 10, max: 19, deleteRowCount: 3 }),
    lsmFile({ name: "unknown", min: 20, max: 29, deleteRowCount: null }),
  ];
  const steps = (outputLevel: number, force = false): unknown[] =>
    planCompactTask({ unit: { outputLevel, files, fileRewrite: false }, dropDelete: true }, { compareKeys: compareIntKeys, compactionFileSize: 5, maxLevel: 3, forceRewriteAllFiles: force }).steps.map(stepNames);
  assert.deepEqual(steps(3), [{ upgrade: "clean" }, { rewrite: [[["deletes"]]] }, { rewrite: [[["unknown"]]] }]);
  assert.deepEqual(steps(2), [{ upgrade: "clean" }, { upgrade: "deletes" }, { upgrade: "unknown" }], "below the max level deletes may stay");
  assert.deepEqual(steps(2, true), [{ rewrite: [[["clean"]]] }, { rewrite: [[["deletes"]]] }, { rewrite: [[["unknown"]]] }], "compaction.force-rewrite-all-files");
  assert.deepEqual([mayContainDeletes(files[0]!), mayContainDeletes(files[1]!), mayContainDeletes(files[2]!)], [false, true, true]);
});

test("compact task - small files and overlapping sections are rewritten together up to the next large file; a large file already at the output level stays", () => {
  const files = [
    lsmFile({ name: "s1", level: 0, min: 0, max: 0, maxSeq: 9 }),
    lsmFile({ name: "o1", level: 0, min: 1, max: 5, maxSeq: 8 }),
    lsmFile({ name: "o2", level: 1, min: 3, max: 8 }),
    lsmFile({ name: "big", level: 2, min: 10, max: 30 }),
    lsmFile({ name: "s2", level: 1, min: 31, max: 31 }),
    lsmFile({ name: "big2", level: 1, min: 40, max: 60 }),
    lsmFile({ name: "s3", level: 1, min: 70, max: 70 }),
  ];
  const plan = planCompactTask({ unit: { outputLevel: 2, files, fileRewrite: false }, dropDelete: false }, { compareKeys: compareIntKeys, compactionFileSize: 5, maxLevel: 4, forceRewriteAllFiles: false });
  assert.deepEqual(plan.steps.map(stepNames), [
    { rewrite: [[["s1"]], [["o1"], ["o2"]]] },
    // "big" is at level 2 already: no step.
    { upgrade: "s2" },
    { upgrade: "big2" },
    { upgrade: "s3" },
  ]);
});

test("compact task - full compaction: every run to the max level; the max level alone only for files to rewrite, one by one", () => {
  const top = [lsmFile({ name: "t1", level: 2, min: 0, max: 9 }), lsmFile({ name: "t2", level: 2, min: 10, max: 19 })];
  const onlyTop = new Levels(top, 3, compareIntKeys);
  assert.equal(planFullCompaction(onlyTop, { deletionVectors: false, forceRewriteAllFiles: false }), null);
  const dv = planFullCompaction(onlyTop, { deletionVectors: true, forceRewriteAllFiles: false, hasDeletionVector: (f) => f.fileName === "t2" });
  assert.deepEqual([dv?.unit.fileRewrite, dv?.unit.files.map((f) => f.fileName), dv?.dropDelete], [true, ["t2"], true]);
  const forced = planFullCompaction(onlyTop, { deletionVectors: false, forceRewriteAllFiles: true })!;
  assert.deepEqual(planCompactTask(forced, { compareKeys: compareIntKeys, compactionFileSize: 1, maxLevel: 2, forceRewriteAllFiles: true }).steps.map(stepNames), [{ rewrite: [[["t1"]]] }, { rewrite: [[["t2"]]] }]);

  const mixed = new Levels([...top, lsmFile({ name: "new", min: 5, max: 5 })], 3, compareIntKeys);
  const full = planFullCompaction(mixed, { deletionVectors: false, forceRewriteAllFiles: false })!;
  assert.deepEqual([full.unit.outputLevel, full.unit.fileRewrite, full.unit.files.map((f) => f.fileName)], [2, false, ["new", "t1", "t2"]]);
  assert.equal(pickFullCompaction(3, [], false), null);
});

test("compact task - the stall predicates: a flush waits above stop-trigger runs, a commit above stop-trigger + 1; lookup tables keep compacting while level 0 has files", () => {
  assert.deepEqual([8, 9, 10].map((n) => shouldWaitForLatestCompaction(n, 8)), [false, true, true]);
  assert.deepEqual([8, 9, 10].map((n) => shouldWaitForPreparingCheckpoint(n, 8)), [false, false, true]);
  assert.equal(shouldWaitForPreparingCheckpoint(2147483647, 2147483647), false, "no overflow at Integer.MAX_VALUE");
  const l0 = new Levels([lsmFile({ name: "a" })], 3, compareIntKeys);
  const none = new Levels([lsmFile({ name: "a", level: 2 })], 3, compareIntKeys);
  assert.deepEqual([compactNotCompleted(l0, false, true), compactNotCompleted(l0, false, false), compactNotCompleted(none, false, true), compactNotCompleted(none, true, false)], [true, false, false, true]);
});

function baseOptions(o: Partial<LsmCompactionOptions>): LsmCompactionOptions {
  return {
    numSortedRunCompactionTrigger: 5, numSortedRunStopTrigger: 8, numLevels: 6, maxSizeAmplificationPercent: 200, sizeRatio: 1,
    offPeak: { startHour: -1, endHour: -1, ratio: 0 }, earlyFull: {}, forceUpLevel0: false, needLookup: false, lookupCompact: "radical",
    lookupCompactMaxInterval: 10, targetFileSize: 128, compactionFileSize: 89, deletionVectors: false, forceRewriteAllFiles: false, writeOnly: false,
    ...o,
  };
}

test("compact task - simulated buckets under the real pickers (fast-check): every result applies (levels ≥ 1 never overlap), output never level 0, runs ≤ trigger after each compaction", () => {
  const scenario = fc.record({
    trigger: fc.integer({ min: 1, max: 7 }),
    extraLevels: fc.integer({ min: 0, max: 3 }),
    amp: fc.integer({ min: 0, max: 300 }),
    ratio: fc.integer({ min: 0, max: 20 }),
    mode: fc.constantFrom("universal", "force-up", "gentle"),
    interval: fc.integer({ min: 1, max: 6 }),
    dv: fc.boolean(),
    forceRewrite: fc.boolean(),
    files: fc.array(fc.record({ lo: fc.integer({ min: 0, max: 500 }), w: fc.integer({ min: 0, max: 120 }), size: fc.integer({ min: 1, max: 400 }), deletes: fc.constantFrom<number | null>(0, 0, 2, null) }), { minLength: 1, maxLength: 60 }),
  });
  fc.assert(
    fc.property(scenario, (s) => {
      const o = baseOptions({
        numSortedRunCompactionTrigger: s.trigger,
        numLevels: s.trigger + 1 + s.extraLevels,
        maxSizeAmplificationPercent: s.amp,
        sizeRatio: s.ratio,
        forceUpLevel0: s.mode === "force-up",
        needLookup: s.mode === "gentle",
        lookupCompact: s.mode === "gentle" ? "gentle" : "radical",
        lookupCompactMaxInterval: Math.max(s.trigger, s.interval),
        deletionVectors: s.dv,
        forceRewriteAllFiles: s.forceRewrite,
      });
      const newFiles = s.files.map((f, i) => lsmFile({ name: `n${i}`, min: f.lo, max: f.lo + f.w, size: f.size, minSeq: i, maxSeq: i, deleteRowCount: f.deletes }));
      // simulateBucket applies every result through Levels.update, which refuses overlapping levels.
      const rounds = simulateBucket([], newFiles, createCompactStrategy(o), {
        numLevels: o.numLevels, stopTrigger: o.numSortedRunStopTrigger, compactionFileSize: 100, targetSize: 250, deletionVectors: s.dv, forceRewriteAllFiles: s.forceRewrite,
      });
      assert.equal(rounds.length, newFiles.length);
      for (const r of rounds) {
        if (r.pick !== null) assert.notEqual(r.pick.outputLevel, 0, "never level 0");
        assert.ok(r.runs.length <= s.trigger, `at most ${s.trigger} sorted runs after compacting (${r.runs.length})`);
        assert.equal(r.waitForLatest, false);
      }
    }),
    { numRuns: 300 },
  );
});

test("compact task - the simulation's final levels: every level ≥ 1 a valid run, sizes preserved, the max level free of deletes", () => {
  // The same simulation, checked on the Levels object itself (the property above sees only names).
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 60 }), fc.integer({ min: 1, max: 300 }), fc.boolean()), { minLength: 1, maxLength: 50 }), (specs) => {
      const o = baseOptions({ numSortedRunCompactionTrigger: 3, numLevels: 4 });
      const strategy = createCompactStrategy(o);
      const levels = new Levels([], o.numLevels, compareIntKeys);
      let total = 0;
      specs.forEach(([lo, w, size, deletes], i) => {
        total += size;
        levels.addLevel0File(lsmFile({ name: `n${i}`, min: lo, max: lo + w, size, minSeq: i, maxSeq: i, deleteRowCount: deletes ? 1 : 0 }));
        const planned = planCompaction(levels, strategy, { deletionVectors: false });
        if (planned !== null) execute(levels, planned, 100);
      });
      assert.equal(levels.totalFileSize(), total, "every byte somewhere, once");
      for (let level = 1; level <= levels.maxLevel; level++) validateSortedRun(levels.runOfLevel(level), compareIntKeys, level);
      for (const f of levels.runOfLevel(levels.maxLevel)) assert.equal(f.deleteRowCount, 0, `${describeFile(f).join(" ")} at the max level holds deletes`);
    }),
    { numRuns: 300 },
  );
});
