/**
 * Compaction of primary-key buckets on a real filesystem (src/lsm/compact-bucket.ts through `compactTable`): random
 * histories of upserts and deletes over a few keys, committed at random points, with universal and full compactions
 * at random points, end in exactly the model's rows read by natslake; after every compaction every level ≥ 1 of every
 * bucket is a sorted run (Levels), no file of the max level holds a retraction, and a compaction that dropped deletes
 * wrote into its bucket's highest level. Then the plan's steps as files: an upgrade is the same file at the new level
 * (DELETE at the old level, ADD at the new), a rewrite's outputs are COMPACT files at the output level; the writer's
 * API (compactBucket) with its own picker; a conflicting compaction at commit time is refused and its outputs removed.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { FileKind, FileSource } from "../../../src/format/manifest.ts";
import { compactTable } from "../../../src/maintenance/compact.ts";
import { commitBucketCompactions } from "../../../src/maintenance/compact-pk.ts";
import { liveBuckets } from "../../../src/maintenance/live-buckets.ts";
import { checkCompactionApplies, compactBucket, planBucketCompaction } from "../../../src/lsm/compact-bucket.ts";
import { createCompactStrategy, readLsmCompactionOptions } from "../../../src/lsm/compaction-options.ts";
import { mergeReadFields } from "../../../src/lsm/merge-read.ts";
import type { Levels } from "../../../src/lsm/levels.ts";
import { readAllRows, readDataFile } from "../../../src/scan/read.ts";
import { ManifestStore } from "../../../src/table/manifest-store.ts";
import { BatchWriter } from "../../../src/write/batch-writer.ts";
import { TableWrite } from "../../../src/write/table-write.ts";
import { FileStoreCommit } from "../../../src/commit/file-store-commit.ts";
import { ErrorKind, isLakeError } from "../../../src/errors.ts";
import type { Table } from "../../../src/table/table.ts";
import { tempDir } from "../../helpers/tables.ts";
import { lsmFile } from "../../helpers/lsm-files.ts";
import { liveBucketLevels } from "../../../src/maintenance/bucket-levels.ts";

const wh = tempDir();
after(() => wh.cleanup());
let tableNo = 0;

const OPTIONS = { bucket: "2", "num-sorted-run.compaction-trigger": "2", "num-levels": "4", "target-file-size": "2 kb", "file.compression": "none" };

async function newTable(options: Record<string, string> = OPTIONS): Promise<Table> {
  return new Catalog(wh.path).createTable(parseIdentifier(`c.t${tableNo++}`), {
    columns: parseColumnList("id INT NOT NULL, v INT, pad STRING"),
    primaryKeys: ["id"],
    options,
  });
}

type Op = { kind: "upsert"; key: number; v: number } | { kind: "delete"; key: number };
type Step = { kind: "commit"; ops: Op[] } | { kind: "compact"; full: boolean };

/** A value of 40–64 characters unlike any other row's (so Parquet's dictionaries do not shrink it away). */
const padOf = (key: number, v: number): string => `${key}:${v}:`.padEnd(40 + (v % 25), (key * 7919 + v * 104729).toString(36));

async function commit(t: Table, ops: readonly Op[]): Promise<void> {
  const w = await BatchWriter.open(t);
  // In order, one call per op: a key changed twice in a commit takes the later change.
  for (const op of ops) {
    if (op.kind === "upsert") await w.upsert([{ id: op.key, v: op.v, pad: padOf(op.key, op.v) }]);
    else await w.delete([{ id: op.key }]);
  }
  await w.commit();
}

/** Every bucket's levels (validated: each level ≥ 1 a sorted run) and their max level. */
const bucketLevels = async (t: Table): Promise<Levels[]> => (await liveBucketLevels(t)).map((b) => b.levels);

/** natslake's read of the table as [key, v, pad], sorted by key (each bucket reads in key order; buckets one after another). */
async function readState(t: Table): Promise<Array<[number, number, string]>> {
  return (await readAllRows(t)).map((r): [number, number, string] => [r["id"] as number, r["v"] as number, r["pad"] as string]).sort(([a], [b]) => a - b);
}
const expectedState = (model: ReadonlyMap<number, number>): Array<[number, number, string]> =>
  [...model.entries()].sort(([a], [b]) => a - b).map(([k, v]) => [k, v, padOf(k, v)]);

const KEYS = 120;
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("upsert" as const), key: fc.integer({ min: 0, max: KEYS - 1 }), v: fc.integer({ min: 0, max: 1000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), key: fc.integer({ min: 0, max: KEYS - 1 }) }) },
);
// A round: a few small commits (a few keys each), sometimes a bulk one (most keys), then a compaction — universal
// mostly, sometimes full. A large run below small ones is what makes universal compaction stop short of the max
// level (size ratio), so the levels between 0 and the max fill too.
const small = fc.record({ kind: fc.constant("commit" as const), ops: fc.array(opArb, { minLength: 1, maxLength: 5 }) });
const bulk = fc.record({ kind: fc.constant("commit" as const), ops: fc.array(opArb, { minLength: 40, maxLength: 150 }) });
const roundArb: fc.Arbitrary<Step[]> = fc
  .tuple(fc.array(small, { minLength: 0, maxLength: 3 }), fc.option(bulk, { freq: 4 }), fc.array(small, { minLength: 0, maxLength: 3 }), fc.constantFrom(false, false, false, true))
  .map(([before, big, afterwards, full]) => [...before, ...(big === null ? [] : [big]), ...afterwards, { kind: "compact", full }]);
const stepArb = fc.array(roundArb, { minLength: 2, maxLength: 8, size: "medium" }).map((rounds) => rounds.flat());

test("compaction of primary-key buckets - random histories with universal and full compactions: the model's rows, valid levels, deletes dropped only into the highest level", async () => {
  // What the histories exercised, over all runs (asserted at the end: a generator that never reached these proves little).
  const seen = { compactions: 0, upgrades: 0, rewrites: 0, dropDelete: 0, keptDeletes: 0, middleLevels: 0 };
  await fc.assert(
    fc.asyncProperty(stepArb, async (steps) => {
      const t = await newTable();
      const model = new Map<number, number>();
      for (const step of steps) {
        if (step.kind === "commit") {
          await commit(t, step.ops);
          for (const op of step.ops) {
            if (op.kind === "upsert") model.set(op.key, op.v);
            else model.delete(op.key);
          }
          continue;
        }
        const s = await compactTable(t, { full: step.full });
        const levels = await bucketLevels(t); // throws when a level ≥ 1 overlaps
        for (const l of levels) {
          for (const f of l.allFiles()) if (f.level > 0 && f.level < l.maxLevel) seen.middleLevels++;
          if (l.nonEmptyHighestLevel() >= 1) for (const f of l.runOfLevel(l.maxLevel)) assert.equal(f.deleteRowCount, 0, `${f.fileName} at the max level holds retractions`);
        }
        if (step.full) for (const l of levels) assert.ok(l.allFiles().every((f) => f.level === l.maxLevel), "a full compaction leaves every file at the max level");
        if (s.snapshotId === null) continue;
        seen.compactions++;
        const snapshot = (await t.snapshots.latest())!;
        assert.equal(snapshot.commitKind, "COMPACT");
        const live = await liveBuckets(t, snapshot, {}, new ManifestStore(t));
        for (const b of s.primaryKey!.buckets) {
          seen.upgrades += b.upgradedFiles;
          seen.rewrites += b.rewrittenFiles;
          const files = live.find((x) => x.bucket === b.bucket)?.files ?? [];
          if (b.dropDelete) {
            seen.dropDelete++;
            for (const f of files) assert.ok(f.level <= b.outputLevel, `deletes dropped into level ${b.outputLevel} while ${f.fileName} sits at level ${f.level}`);
          } else if (files.some((f) => f.level === b.outputLevel && f.fileSource === FileSource.COMPACT && f.deleteRowCount! > 0)) seen.keptDeletes++;
        }
        assert.deepEqual(await readState(t), expectedState(model), "the rows after the compaction");
      }
      assert.deepEqual(await readState(t), expectedState(model));
    }),
    // A failure shrinks for at most that long (each run writes and compacts real files).
    { numRuns: Number(process.env["PK_COMPACT_RUNS"] ?? 25), interruptAfterTimeLimit: 150_000 },
  );
  for (const [what, n] of Object.entries(seen)) assert.ok(n > 0, `the histories exercised ${what} (${JSON.stringify(seen)})`);
});

// Histories through one long-lived TableWrite (as a cluster writer keeps one across its flushes): writes buffered,
// committed at random points, compactions in between — and restart points, where the writer is dropped (its buffered
// rows lost; sometimes after it wrote their files, which no commit takes) and a new one opened on the table.
type WriterStep = { kind: "write"; ops: Op[] } | { kind: "commit" } | { kind: "compact"; full: boolean } | { kind: "restart"; afterFlush: boolean };
const writerStepArb: fc.Arbitrary<WriterStep> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("write" as const), ops: fc.array(opArb, { minLength: 1, maxLength: 5 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("write" as const), ops: fc.array(opArb, { minLength: 40, maxLength: 150 }) }) },
  { weight: 4, arbitrary: fc.constant({ kind: "commit" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("compact" as const), full: fc.constantFrom(false, false, true) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const), afterFlush: fc.boolean() }) },
);
const writerHistoryArb = fc
  .array(writerStepArb, { minLength: 10, maxLength: 40 })
  .filter((steps) => steps.some((s) => s.kind === "restart") && steps.some((s) => s.kind === "compact") && steps.filter((s) => s.kind === "commit").length >= 2);

/** Into the writer's buffer, in order (a key changed twice takes the later change). */
function buffer(w: TableWrite, ops: readonly Op[]): void {
  for (const op of ops) {
    if (op.kind === "upsert") w.upsert([{ id: op.key, v: op.v, pad: padOf(op.key, op.v) }]);
    else w.delete([{ id: op.key }]);
  }
}

/** Per bucket, the highest sequence number among its live files (-1 for none). */
async function liveMaxSequence(t: Table): Promise<Map<number, bigint>> {
  return new Map((await liveBucketLevels(t)).map(({ bucket, levels }) => [bucket.bucket, levels.allFiles().reduce((m, f) => (f.maxSequenceNumber > m ? f.maxSequenceNumber : m), -1n)]));
}

test("compaction of primary-key buckets - random histories through a long-lived TableWrite with restart points: sequence numbers continue above the committed files; the model's rows", async () => {
  const seen = { restarts: 0, restartsAfterFlush: 0, rowsLostAtRestart: 0, commitsAfterRestart: 0, compactions: 0 };
  await fc.assert(
    fc.asyncProperty(writerHistoryArb, async (steps) => {
      const t = await newTable();
      const model = new Map<number, number>();
      const commitUser = "long-lived";
      let commitIdentifier = 0n;
      let w = new TableWrite(t, { encoderPool: null });
      let pending: Op[] = [];
      let restarted = false;
      for (const step of steps) {
        if (step.kind === "write") {
          buffer(w, step.ops);
          pending.push(...step.ops);
        } else if (step.kind === "commit") {
          const before = await liveMaxSequence(t);
          const messages = await w.prepareCommit();
          // A restarted writer's numbers continue above every committed file of the bucket (merged-away rows aside).
          for (const m of messages) for (const f of m.newFiles) assert.ok(f.minSequenceNumber > (before.get(m.bucket) ?? -1n), `bucket ${m.bucket}: a new file from sequence number ${f.minSequenceNumber}, not above the live files' ${before.get(m.bucket)}`);
          await new FileStoreCommit(t).commit({ commitUser, commitIdentifier: ++commitIdentifier, messages });
          for (const op of pending) {
            if (op.kind === "upsert") model.set(op.key, op.v);
            else model.delete(op.key);
          }
          if (restarted && pending.length > 0) seen.commitsAfterRestart++;
          pending = [];
        } else if (step.kind === "compact") {
          if ((await compactTable(t, { full: step.full })).snapshotId !== null) seen.compactions++;
          await bucketLevels(t); // throws when a level ≥ 1 overlaps
        } else {
          // The writer goes away with what it buffered; with `afterFlush` it had written their files already.
          if (step.afterFlush && w.bufferedRows > 0) {
            await w.prepareCommit();
            seen.restartsAfterFlush++;
          }
          seen.rowsLostAtRestart += pending.length;
          seen.restarts++;
          pending = [];
          w = new TableWrite(t, { encoderPool: null });
          restarted = true;
        }
      }
      assert.deepEqual(await readState(t), expectedState(model));
    }),
    { numRuns: Number(process.env["PK_COMPACT_RUNS"] ?? 30), interruptAfterTimeLimit: 120_000 },
  );
  for (const [what, n] of Object.entries(seen)) assert.ok(n > 0, `the histories exercised ${what} (${JSON.stringify(seen)})`);
});

test("compaction of primary-key buckets - an upgrade is the same file at the new level; rewrites are COMPACT files at the output level; levels as Java plans them", async () => {
  // One bucket, trigger 2: the second flush triggers a merge; large files (no compression, long strings) upgrade.
  const t = await newTable({ bucket: "1", "num-sorted-run.compaction-trigger": "2", "num-levels": "3", "target-file-size": "4 kb", "file.compression": "none" });
  const big = (from: number): Op[] => Array.from({ length: 40 }, (_, i) => ({ kind: "upsert" as const, key: from + i, v: 999 }));
  await commit(t, big(0)); // [0, 39], large
  await commit(t, big(100)); // [100, 139], large, overlapping nothing
  const before = (await bucketLevels(t))[0]!.allFiles();
  assert.ok(before.every((f) => f.fileSize >= readLsmCompactionOptions(t.options).compactionFileSize), "both files are large enough to upgrade");
  const s = await compactTable(t);
  assert.deepEqual([s.primaryKey!.upgradedFiles, s.primaryKey!.rewrittenFiles, s.primaryKey!.buckets[0]!.outputLevel], [2, 0, 2]);
  const snap = (await t.snapshots.latest())!;
  const delta = await new ManifestStore(t).readDeltaEntries(snap);
  assert.deepEqual(
    delta.map((e) => [e.kind, e.file.fileName, e.file.level]).sort(),
    before.flatMap((f) => [[FileKind.DELETE, f.fileName, 0], [FileKind.ADD, f.fileName, 2]]).sort(),
    "each upgraded file: DELETE at level 0, ADD at level 2, same name",
  );
  for (const e of delta.filter((x) => x.kind === FileKind.ADD)) {
    const was = before.find((f) => f.fileName === e.file.fileName)!;
    assert.deepEqual({ ...e.file, level: 0 }, was, "the upgraded meta is the old one but for its level (file source unchanged)");
  }
  // A small flush overlapping the first file: a rewrite of both into level 2, the other file untouched.
  await commit(t, [{ kind: "upsert", key: 5, v: 1 }, { kind: "delete", key: 6 }]);
  await commit(t, [{ kind: "upsert", key: 7, v: 2 }]);
  const r = await compactTable(t);
  assert.equal(r.snapshotId, snap.id + 3);
  const after = (await bucketLevels(t))[0]!;
  const rewritten = after.allFiles().filter((f) => f.fileSource === FileSource.COMPACT);
  assert.ok(rewritten.length >= 1 && rewritten.every((f) => f.level === r.primaryKey!.buckets[0]!.outputLevel));
  assert.deepEqual(after.level0Files(), []);
  const rows = new Map((await readAllRows(t)).map((x) => [x["id"] as number, x["v"] as number]));
  assert.deepEqual([rows.get(5), rows.has(6), rows.get(7), rows.get(120), rows.size], [1, false, 2, 999, 79]);
});

test("compaction of primary-key buckets - the writer's API: compactBucket with its own picker, committed by commitBucketCompactions; a stale compaction is refused and its outputs removed", async () => {
  const t = await newTable({ bucket: "1", "num-sorted-run.compaction-trigger": "2", "num-levels": "3" });
  for (let i = 0; i < 3; i++) await commit(t, [{ kind: "upsert", key: i, v: i }, { kind: "upsert", key: 10, v: i }]);
  const options = readLsmCompactionOptions(t.options);
  const strategy = createCompactStrategy(options);
  const store = new ManifestStore(t);
  const [bucket] = await liveBuckets(t, (await t.snapshots.latest())!, {}, store);
  const readFields = mergeReadFields(t, t.schema.fields);
  const where = { partitionPath: "", ...bucket! };
  const readFile = (f: Parameters<typeof readDataFile>[2]): ReturnType<typeof readDataFile> => readDataFile(t, { partitionValues: [], bucket: 0 }, f, readFields, null);
  const written: string[] = [];
  const first = await compactBucket(t, where, { readFile, pool: null, strategy, options, onPath: (p) => written.push(p) });
  assert.ok(first !== null);
  assert.deepEqual(first.writtenPaths, written);
  // A second compaction planned from the same files (as a second compactor would): both take the same inputs.
  const second = await compactBucket(t, where, { readFile, pool: null, full: true, options });
  assert.ok(second !== null);
  assert.ok(planBucketCompaction(t, bucket!.files, { full: true, options }) !== null);
  const id = await commitBucketCompactions(t, [first]);
  assert.equal(id, 4);
  await assert.rejects(commitBucketCompactions(t, [second]), (e) => isLakeError(e, ErrorKind.Conflict) && /no longer live/.test((e as Error).message));
  for (const p of second.writtenPaths) assert.equal(await t.io.isFile(p), false, "the refused compaction's outputs are removed");
  for (const p of first.writtenPaths) assert.equal(await t.io.isFile(p), true);
  assert.deepEqual(new Map((await readAllRows(t)).map((x) => [x["id"] as number, x["v"] as number])), new Map([[0, 0], [1, 1], [2, 2], [10, 2]]));
});

test("compaction of primary-key buckets - Java's LSM conflict check at commit time: a level >= 1 that would overlap is a Conflict; inputs gone are left to the commit's own check", async () => {
  const t = await newTable({ bucket: "1" });
  const numLevels = readLsmCompactionOptions(t.options).numLevels;
  const live = [lsmFile({ name: "a", level: 2, min: 0, max: 10 }), lsmFile({ name: "b", level: 0, min: 3, max: 4 })];
  // b moved up to level 2 overlaps a there.
  assert.throws(
    () => checkCompactionApplies(t, live, { bucket: 0, deletedFiles: [live[1]!], newFiles: [{ ...live[1]!, level: 2 }] }, numLevels),
    (e) => isLakeError(e, ErrorKind.Conflict) && /LSM conflict: level 2 is not a sorted run/.test((e as Error).message),
  );
  // Into level 1 it fits; a file added twice does not.
  checkCompactionApplies(t, live, { bucket: 0, deletedFiles: [live[1]!], newFiles: [{ ...live[1]!, level: 1 }] }, numLevels);
  assert.throws(() => checkCompactionApplies(t, live, { bucket: 0, deletedFiles: [], newFiles: [live[0]!] }, numLevels), (e) => isLakeError(e, ErrorKind.Conflict));
  // An input that is no longer live: not this check's to say.
  checkCompactionApplies(t, live, { bucket: 0, deletedFiles: [lsmFile({ name: "gone", level: 0 })], newFiles: [{ ...live[1]!, level: 2 }] }, numLevels);
});
