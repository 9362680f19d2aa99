/**
 * natslake's LSM compaction planning (src/lsm) against Java Paimon 1.4.2's own classes
 * (test/compat/java/LsmCompactionOracle.java), on random scenarios generated here and run by one JVM:
 *
 * - picks: random buckets of sorted runs (level-0 runs, then distinct higher levels; sizes from 0 to 2^40) under
 *   random options (trigger, size amplification, size ratio, off-peak ratio, universal / force-up-level-0 / gentle
 *   lookup with its interval, called repeatedly) — natslake's pick (output level and how many runs) must equal
 *   UniversalCompaction's / ForceUpLevel0Compaction's;
 * - buckets: whole writer histories — optional initial levels, then new level-0 files one at a time, each followed
 *   by one compaction (Java: Levels + MergeTreeCompactManager + MergeTreeCompactTask with a synthetic rewriter;
 *   natslake: Levels + planCompaction + planCompactTask with the same synthetic rewriter) — every round's raw pick,
 *   whether it compacted, the steps (upgrades; rewrites with their sections, runs and dropDelete), the resulting
 *   sorted runs and the stall predicates must be identical.
 *
 * Not covered by the oracle (unit-tested instead): deletion vectors (Java needs a real DV maintainer),
 * the optimization interval (Java reads the wall clock) and off-peak windows other than "always".
 * The seed is printed on failure; LSM_ORACLE_SEED replays it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { DataFileMeta } from "../../src/format/manifest.ts";
import { levelSortedRun, type LevelSortedRun } from "../../src/lsm/levels.ts";
import { EarlyFullCompaction, ForceUpLevel0Compaction, OffPeakHours, UniversalCompaction, type CompactStrategy } from "../../src/lsm/universal-compaction.ts";
import { runJavaOracle } from "../helpers/java.ts";
import { lsmFile, simulateBucket, type RoundRecord } from "../helpers/lsm-files.ts";

const SEED = process.env.LSM_ORACLE_SEED !== undefined ? Number(process.env.LSM_ORACLE_SEED) : Math.floor(Math.random() * 2 ** 31);
const PICK_SCENARIOS = 600;
const BUCKET_SCENARIOS = 250;

interface StrategySpec {
  trigger: number;
  amp: number;
  ratio: number;
  offPeakRatio: number;
  mode: "universal" | "force-up" | "gentle";
  interval: number;
  totalSizeThreshold: number | null;
  incrementalSizeThreshold: number | null;
}

interface PickScenario extends StrategySpec {
  numLevels: number;
  calls: number;
  runs: Array<[level: number, size: number]>;
}

interface FileJson {
  name: string;
  level: number;
  min: number;
  max: number;
  size: number;
  minSeq: number;
  maxSeq: number;
  deletes: number | null;
}

interface BucketScenario extends StrategySpec {
  numLevels: number;
  stopTrigger: number;
  minFileSize: number;
  targetSize: number;
  forceRewrite: boolean;
  initial: FileJson[];
  newFiles: FileJson[];
}

/** Sizes spread over orders of magnitude, with exact ties and zeros now and then. */
const size = (maxLog2: number): fc.Arbitrary<number> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: maxLog2 }).chain((e) => fc.integer({ min: 2 ** e, max: 2 ** (e + 1) - 1 })) },
    { weight: 1, arbitrary: fc.constantFrom(0, 1, 100, 1000) },
  );
/** Few distinct sizes, so the size-ratio comparison meets its boundary (candidate × (100 + ratio) / 100 = next). */
const tieSize = fc.constantFrom(1, 2, 3, 4, 50, 100, 101, 200);

const strategySpec: fc.Arbitrary<StrategySpec> = fc.record({
  trigger: fc.integer({ min: 1, max: 8 }),
  amp: fc.oneof(fc.constant(200), fc.integer({ min: 0, max: 400 })),
  ratio: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 30 })),
  offPeakRatio: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 40 }) }),
  mode: fc.constantFrom("universal", "universal", "force-up", "gentle"),
  interval: fc.integer({ min: 1, max: 6 }),
  totalSizeThreshold: fc.constant(null),
  incrementalSizeThreshold: fc.constant(null),
});

const pickScenario: fc.Arbitrary<PickScenario> = fc
  .record({
    spec: strategySpec,
    maxLevel: fc.integer({ min: 1, max: 7 }),
    ties: fc.boolean(),
  })
  .chain(({ spec, maxLevel, ties }) =>
    fc.record({
      spec: fc.constant(ties ? { ...spec, ratio: spec.ratio % 2 } : spec),
      maxLevel: fc.constant(maxLevel),
      l0: fc.array(ties ? tieSize : size(30), { maxLength: 12 }),
      upper: fc.array(fc.option(ties ? fc.oneof(tieSize, size(12)) : size(40), { freq: 2 }), { minLength: 7, maxLength: 7 }),
    }),
  )
  .map(({ spec, maxLevel, l0, upper }) => {
    const runs: Array<[number, number]> = l0.map((s) => [0, s]);
    for (let level = 1; level <= maxLevel; level++) {
      const s = upper[level - 1];
      if (s !== null && s !== undefined) runs.push([level, s]);
    }
    return { ...spec, numLevels: maxLevel + 1, calls: spec.mode === "gentle" ? spec.interval * 2 + 1 : 1, runs };
  });

const bucketScenario: fc.Arbitrary<BucketScenario> = fc
  .record({
    spec: strategySpec,
    levelsAbove: fc.integer({ min: -3, max: 2 }),
    stopExtra: fc.integer({ min: 0, max: 4 }),
    keySpace: fc.constantFrom(60, 600, 6000),
    total: fc.option(fc.integer({ min: 100, max: 5000 }), { freq: 4 }),
    incremental: fc.option(fc.integer({ min: 100, max: 5000 }), { freq: 4 }),
    forceRewrite: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    initialLevels: fc.array(fc.tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 6 })), { maxLength: 3 }),
    files: fc.array(fc.record({ at: fc.double({ min: 0, max: 1, noNaN: true }), width: fc.double({ min: 0, max: 0.6, noNaN: true }), size: size(9), deletes: fc.constantFrom<number | null>(0, 0, 0, 3, null) }), { minLength: 5, maxLength: 60 }),
  })
  .map(({ spec, levelsAbove, stopExtra, keySpace, total, incremental, forceRewrite, initialLevels, files }) => {
    const numLevels = Math.max(2, spec.trigger + 1 + levelsAbove);
    // Initial levels ≥ 1: each level's files cut the key space into disjoint ranges.
    const initial: FileJson[] = [];
    let seq = 0;
    const used = new Set<number>();
    for (const [levelSeed, count] of initialLevels) {
      const level = 1 + (levelSeed % (numLevels - 1));
      if (used.has(level)) continue;
      used.add(level);
      const step = Math.floor(keySpace / count);
      for (let i = 0; i < count; i++) {
        initial.push({ name: `i${initial.length}`, level, min: i * step, max: i * step + Math.max(0, step - 2), size: 50 + ((i * 97 + level * 31) % 400), minSeq: seq, maxSeq: seq + 9, deletes: i % 3 === 0 ? 2 : 0 });
        seq += 10;
      }
    }
    const newFiles = files.map((f, i): FileJson => {
      const min = Math.floor(f.at * keySpace);
      return { name: `n${i}`, level: 0, min, max: min + Math.floor(f.width * keySpace), size: f.size, minSeq: seq + i, maxSeq: seq + i, deletes: f.deletes };
    });
    return {
      ...spec,
      totalSizeThreshold: total,
      incrementalSizeThreshold: incremental,
      numLevels,
      stopTrigger: spec.trigger + stopExtra,
      minFileSize: 100,
      targetSize: 250,
      forceRewrite,
      initial,
      newFiles,
    };
  });

/** natslake's picker for a scenario, configured as the oracle configures Java's. */
function strategyOf(s: StrategySpec): CompactStrategy {
  const early = EarlyFullCompaction.create({
    ...(s.totalSizeThreshold !== null ? { totalSizeThreshold: s.totalSizeThreshold } : {}),
    ...(s.incrementalSizeThreshold !== null ? { incrementalSizeThreshold: s.incrementalSizeThreshold } : {}),
  });
  const universal = new UniversalCompaction({
    maxSizeAmplificationPercent: s.amp,
    sizeRatio: s.ratio,
    numSortedRunCompactionTrigger: s.trigger,
    earlyFullCompaction: early,
    // Hours 0–24 make every hour off-peak, as in the oracle.
    offPeakHours: s.offPeakRatio > 0 ? OffPeakHours.create(0, 24, s.offPeakRatio) : null,
  });
  if (s.mode === "universal") return universal;
  return new ForceUpLevel0Compaction(universal, s.mode === "gentle" ? s.interval : null);
}

const toMeta = (f: FileJson): DataFileMeta => lsmFile({ name: f.name, level: f.level, min: f.min, max: f.max, size: f.size, minSeq: f.minSeq, maxSeq: f.maxSeq, deleteRowCount: f.deletes });

function natslakePicks(s: PickScenario): Array<{ outputLevel: number; runs: number } | null> {
  const strategy = strategyOf(s);
  const runs: LevelSortedRun[] = s.runs.map(([level, sz], i) => levelSortedRun(level, [lsmFile({ name: `r${i}`, level, size: sz })]));
  return Array.from({ length: s.calls }, () => {
    const unit = strategy.pick(s.numLevels, runs);
    return unit === null ? null : { outputLevel: unit.outputLevel, runs: unit.files.length };
  });
}

function natslakeBucket(s: BucketScenario): RoundRecord[] {
  return simulateBucket(s.initial.map(toMeta), s.newFiles.map(toMeta), strategyOf(s), {
    numLevels: s.numLevels,
    stopTrigger: s.stopTrigger,
    compactionFileSize: s.minFileSize,
    targetSize: s.targetSize,
    deletionVectors: false,
    forceRewriteAllFiles: s.forceRewrite,
  });
}

test(`LSM compaction planning equals Java Paimon 1.4.2's (${PICK_SCENARIOS} picks, ${BUCKET_SCENARIOS} bucket histories; seed ${SEED})`, { timeout: 300_000 }, async () => {
  const picks = fc.sample(pickScenario, { seed: SEED, numRuns: PICK_SCENARIOS });
  const buckets = fc.sample(bucketScenario, { seed: SEED + 1, numRuns: BUCKET_SCENARIOS });
  const { stdout } = await runJavaOracle("LsmCompactionOracle", [], JSON.stringify({ picks, buckets }));
  const lines = stdout.split("\n").filter((l) => l.trim() !== "");
  assert.equal(lines.length, picks.length + buckets.length, "one line per scenario");

  let picked = 0;
  let forcedSingle = 0;
  picks.forEach((s, i) => {
    const java = (JSON.parse(lines[i]!) as { picks: unknown[] }).picks;
    const ours = natslakePicks(s);
    assert.deepEqual(ours, java, `pick scenario ${i} (seed ${SEED}): ${JSON.stringify(s)}`);
    for (const p of ours) {
      if (p === null) continue;
      picked++;
      if (p.runs < 2) forcedSingle++;
    }
  });

  let rounds = 0;
  let compactions = 0;
  let upgrades = 0;
  let rewrites = 0;
  buckets.forEach((s, i) => {
    const java = (JSON.parse(lines[picks.length + i]!) as { rounds: RoundRecord[] }).rounds;
    const ours = natslakeBucket(s);
    assert.equal(ours.length, java.length);
    ours.forEach((round, r) => {
      assert.deepEqual(round, java[r], `bucket scenario ${i}, round ${r} (seed ${SEED}): ${JSON.stringify(s)}`);
      rounds++;
      if (round.compacted) compactions++;
      for (const st of round.steps) {
        if ("upgrade" in st) upgrades++;
        else rewrites++;
      }
    });
  });
  // The scenarios must exercise what they claim to (a generator that stopped compacting would pass vacuously).
  assert.ok(picked > PICK_SCENARIOS / 4, `picks made: ${picked}`);
  assert.ok(forcedSingle > 0, "some forced single-run level-0 picks");
  assert.ok(compactions > rounds / 10 && upgrades > 50 && rewrites > 50, `rounds ${rounds}, compactions ${compactions}, upgrades ${upgrades}, rewrites ${rewrites}`);
  console.log(`seed ${SEED}: ${picks.length} pick scenarios (${picked} picks), ${rounds} rounds in ${buckets.length} buckets: ${compactions} compactions, ${upgrades} upgrades, ${rewrites} rewrites — identical to Java`);
});
