/**
 * The LSM compaction options (src/lsm/compaction-options.ts): Paimon 1.4.2's names, defaults and derived values
 * (stop-trigger, num-levels, gentle interval, the upgrade threshold of 128 MB targets), lookup detection, refusals of
 * bad values by name, and the strategy each configuration builds.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isLakeError } from "../../../src/errors.ts";
import { levelSortedRun } from "../../../src/lsm/levels.ts";
import { createCompactStrategy, readLsmCompactionOptions } from "../../../src/lsm/compaction-options.ts";
import { ForceUpLevel0Compaction, UniversalCompaction } from "../../../src/lsm/universal-compaction.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { newTableSchema } from "../../../src/format/schema.ts";
import { validateWritableKeyedSchema } from "../../../src/lsm/table-rules.ts";
import { TableOptions, validateCreateOptions } from "../../../src/options.ts";
import { lsmFile } from "../../helpers/lsm-files.ts";

const read = (raw: Record<string, string>) => readLsmCompactionOptions(new TableOptions(raw));
const MB = 1024 * 1024;

test("lsm options - Paimon's defaults: trigger 5, stop 8, 6 levels, amp 200, ratio 1, 128 MB target, upgrade from ⌊target / 10⌋ × 7", () => {
  const o = read({});
  assert.deepEqual(
    [o.numSortedRunCompactionTrigger, o.numSortedRunStopTrigger, o.numLevels, o.maxSizeAmplificationPercent, o.sizeRatio, o.targetFileSize, o.compactionFileSize],
    [5, 8, 6, 200, 1, 128 * MB, 93952404],
  );
  assert.deepEqual(o.offPeak, { startHour: -1, endHour: -1, ratio: 0 });
  assert.deepEqual(o.earlyFull, {});
  assert.deepEqual([o.forceUpLevel0, o.needLookup, o.lookupCompact, o.lookupCompactMaxInterval, o.deletionVectors, o.forceRewriteAllFiles, o.writeOnly], [false, false, "radical", 10, false, false, false]);
});

test("lsm options - derived values follow the trigger; stop-trigger is at least the trigger; the gentle interval at least the trigger", () => {
  const o = read({ "num-sorted-run.compaction-trigger": "3" });
  assert.deepEqual([o.numSortedRunStopTrigger, o.numLevels, o.lookupCompactMaxInterval], [6, 4, 6]);
  const low = read({ "num-sorted-run.compaction-trigger": "7", "num-sorted-run.stop-trigger": "4", "lookup-compact.max-interval": "2", "num-levels": "3" });
  assert.deepEqual([low.numSortedRunStopTrigger, low.numLevels, low.lookupCompactMaxInterval], [7, 3, 7]);
  const huge = read({ "num-sorted-run.compaction-trigger": "2147483647" });
  assert.deepEqual([huge.numSortedRunStopTrigger, huge.numLevels, huge.lookupCompactMaxInterval], [2147483647, 2147483647, 2147483647], "saturating like Java's MathUtils");
  assert.equal(read({ "num-sorted-run.stop-trigger": "2147483647" }).numSortedRunStopTrigger, 2147483647, "the documented fully-async setting");
});

test("lsm options - the upgrade threshold: 1.4.2's integer formula, or target × compaction.small-file-ratio when that is set", () => {
  assert.equal(read({ "target-file-size": "64 mb" }).compactionFileSize, Math.floor((64 * MB) / 10) * 7);
  assert.equal(read({ "target-file-size": "100 b" }).compactionFileSize, 70);
  assert.equal(read({ "target-file-size": "101 b" }).compactionFileSize, 70, "⌊101 / 10⌋ × 7");
  assert.equal(read({ "target-file-size": "101 b", "compaction.small-file-ratio": "0.7" }).compactionFileSize, 70, "⌊70.7⌋");
  assert.equal(read({ "target-file-size": "1000 b", "compaction.small-file-ratio": "0.5" }).compactionFileSize, 500);
});

test("lsm options - lookup compaction for changelog-producer=lookup, first-row, deletion vectors, force-lookup", () => {
  assert.equal(read({ "changelog-producer": "lookup" }).needLookup, true);
  assert.equal(read({ "merge-engine": "first-row" }).needLookup, true);
  assert.equal(read({ "deletion-vectors.enabled": "true" }).needLookup, true);
  assert.equal(read({ "deletion-vectors.enabled": "true" }).deletionVectors, true);
  assert.equal(read({ "force-lookup": "TRUE" }).needLookup, true);
  assert.equal(read({ "changelog-producer": "input", "merge-engine": "partial-update" }).needLookup, false);
  assert.equal(read({ "lookup-compact": "GENTLE" }).lookupCompact, "gentle", "enum values are case-insensitive, as Java's");
});

test("lsm options - early full compaction and off-peak options are read", () => {
  const o = read({
    "compaction.optimization-interval": "1 h",
    "compaction.total-size-threshold": "10 mb",
    "compaction.incremental-size-threshold": "1 gb",
    "compaction.offpeak.start.hour": "22",
    "compaction.offpeak.end.hour": "6",
    "compaction.offpeak-ratio": "20",
  });
  assert.deepEqual(o.earlyFull, { intervalMillis: 3_600_000, totalSizeThreshold: 10 * MB, incrementalSizeThreshold: 1024 * MB });
  assert.deepEqual(o.offPeak, { startHour: 22, endHour: 6, ratio: 20 });
});

test("lsm options - bad values are refused naming the option; options that change compaction but are not implemented are Unsupported", () => {
  const refused = (raw: Record<string, string>, option: string, why: RegExp): void => {
    assert.throws(() => read(raw), (e: unknown) => isLakeError(e, "DataInvalid") && e.context["option"] === option && why.test(e.message), `${JSON.stringify(raw)}`);
  };
  refused({ "num-sorted-run.compaction-trigger": "0" }, "num-sorted-run.compaction-trigger", /at least 1/);
  refused({ "num-sorted-run.compaction-trigger": "five" }, "num-sorted-run.compaction-trigger", /integer/);
  refused({ "num-sorted-run.stop-trigger": "0" }, "num-sorted-run.stop-trigger", /at least 1/);
  refused({ "num-levels": "1" }, "num-levels", /at least 2/);
  refused({ "num-levels": "2147483648" }, "num-levels", /Java int/);
  refused({ "compaction.max-size-amplification-percent": "-1" }, "compaction.max-size-amplification-percent", /at least 0/);
  refused({ "compaction.size-ratio": "-1" }, "compaction.size-ratio", /at least 0/);
  refused({ "compaction.offpeak.start.hour": "24" }, "compaction.offpeak.start.hour", /0–23/);
  refused({ "compaction.offpeak.end.hour": "-2" }, "compaction.offpeak.end.hour", /at least -1/);
  refused({ "lookup-compact": "lazy" }, "lookup-compact", /radical or gentle/);
  refused({ "lookup-compact.max-interval": "0" }, "lookup-compact.max-interval", /at least 1/);
  refused({ "target-file-size": "0 b" }, "target-file-size", /positive/);
  refused({ "target-file-size": "big" }, "target-file-size", /memory size/);
  refused({ "compaction.small-file-ratio": "1.5" }, "compaction.small-file-ratio", /at most 1/);
  refused({ "compaction.optimization-interval": "soon" }, "compaction.optimization-interval", /duration/);
  refused({ "force-lookup": "yes" }, "force-lookup", /true or false/);
  assert.throws(() => read({ "record-level.expire-time": "1 d" }), (e: unknown) => isLakeError(e, "Unsupported") && /record-level.expire-time/.test(e.message));
  assert.throws(() => read({ "chain-table.enabled": "true" }), (e: unknown) => isLakeError(e, "Unsupported"));
  assert.doesNotThrow(() => read({ "chain-table.enabled": "false" }));
});

test("lsm options - every option read here is known to the option registry (a table can be created with it)", () => {
  assert.doesNotThrow(() =>
    validateCreateOptions({
      "num-sorted-run.compaction-trigger": "4", "num-sorted-run.stop-trigger": "10", "num-levels": "5", "compaction.max-size-amplification-percent": "150",
      "compaction.size-ratio": "2", "compaction.force-up-level-0": "true", "compaction.offpeak.start.hour": "1", "compaction.offpeak.end.hour": "5",
      "compaction.offpeak-ratio": "10", "compaction.optimization-interval": "2 h", "compaction.total-size-threshold": "1 gb",
      "compaction.incremental-size-threshold": "2 gb", "compaction.force-rewrite-all-files": "false", "force-lookup": "false", "lookup-compact": "gentle",
      "lookup-compact.max-interval": "12", "compaction.small-file-ratio": "0.6", "target-file-size": "64 mb", "write-only": "false",
    }),
  );
});

test("lsm options - the strategy: universal; ForceUpLevel0 for lookup (gentle with its interval) or force-up-level-0", () => {
  assert.ok(createCompactStrategy(read({})) instanceof UniversalCompaction);
  const forced = createCompactStrategy(read({ "compaction.force-up-level-0": "true" }));
  assert.ok(forced instanceof ForceUpLevel0Compaction && forced.maxCompactInterval === null);
  const radical = createCompactStrategy(read({ "changelog-producer": "lookup" }));
  assert.ok(radical instanceof ForceUpLevel0Compaction && radical.maxCompactInterval === null);
  const gentle = createCompactStrategy(read({ "merge-engine": "first-row", "lookup-compact": "gentle" }));
  assert.ok(gentle instanceof ForceUpLevel0Compaction && gentle.maxCompactInterval === 10);

  // With early full compaction by total size, a two-run bucket below the threshold compacts fully.
  const small = createCompactStrategy(read({ "compaction.total-size-threshold": "1 kb" }));
  const runs = [levelSortedRun(0, [lsmFile({ name: "a", size: 10 })]), levelSortedRun(5, [lsmFile({ name: "b", level: 5, size: 10 })])];
  assert.equal(small.pick(6, runs)?.outputLevel, 5);
  assert.equal(createCompactStrategy(read({})).pick(6, runs), null);
});

test("lsm options - a primary-key table with a bad compaction option is refused when it is created", () => {
  const schema = (options: Record<string, string>) => newTableSchema({ columns: parseColumnList("id BIGINT NOT NULL, v STRING"), primaryKeys: ["id"], options: { bucket: "2", ...options } });
  assert.doesNotThrow(() => validateWritableKeyedSchema("db.t", schema({ "num-levels": "3", "num-sorted-run.compaction-trigger": "2" })));
  assert.throws(() => validateWritableKeyedSchema("db.t", schema({ "num-levels": "1" })), (e: unknown) => isLakeError(e, "DataInvalid") && e.context["option"] === "num-levels");
  assert.throws(() => validateWritableKeyedSchema("db.t", schema({ "compaction.offpeak.start.hour": "30" })), /0–23/);
});
