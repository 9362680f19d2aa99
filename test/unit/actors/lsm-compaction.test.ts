/**
 * A primary-key bucket's writer-side compaction on a real table (actors/lsm-compaction.ts through the BucketCompactor,
 * landed by the leader's StreamCompactionCommitter): nothing below the trigger; a job of levels and upgrades from
 * the committed trees; the next job planned on the tree the last one leaves before it lands (both landed in one
 * round, netted); the rows' own sequence numbers; the bucket's sorted runs counted with the jobs and flushes in
 * flight, and the stop trigger; a job the leader rejects, and those planned on it, stop counting at once. Then the
 * worker threads (LsmRewriteWorkers): the same result as on the calling thread, and a worker that dies fails its job
 * (retryable) with the outputs it announced removed.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { BucketCompactor, compactionStrategyFor } from "../../../actors/bucket-compactor.ts";
import { CompactionSlots } from "../../../actors/compaction-slots.ts";
import { inlineLsmRewriter, LsmRewriteWorkers } from "../../../actors/lsm-rewriter.ts";
import { LSM_WRITER_SIZE_RATIO, writerLsmOptions } from "../../../actors/lsm-compaction.ts";
import type { CommitLog } from "../../../actors/ports.ts";
import type { CommitEntry, CompactionEntry } from "../../../actors/wire/messages.ts";
import { StreamCompactionCommitter } from "../../../src/commit/compaction-commit.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { ErrorKind, isLakeError } from "../../../src/errors.ts";
import { planBucketCompaction, type BucketFiles } from "../../../src/lsm/compact-bucket.ts";
import { liveBuckets } from "../../../src/maintenance/live-buckets.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { ManifestStore } from "../../../src/table/manifest-store.ts";
import { BatchWriter } from "../../../src/write/batch-writer.ts";
import type { Table } from "../../../src/table/table.ts";
import { readJson, tempDir } from "../../helpers/tables.ts";
import { threadNices } from "../../helpers/threads.ts";

const wh = tempDir();
after(() => wh.cleanup());
let tableNo = 0;

async function newTable(options: Record<string, string> = {}): Promise<Table> {
  return new Catalog(wh.path).createTable(parseIdentifier(`l.t${tableNo++}`), {
    columns: parseColumnList("id INT NOT NULL, v INT, pad STRING"),
    primaryKeys: ["id"],
    options: { bucket: "1", "num-sorted-run.compaction-trigger": "3", "num-sorted-run.stop-trigger": "5", "target-file-size": "2 kb", ...options },
  });
}

/** One commit of upserts of `ids` (value `v`), and deletes of `deleted`. */
async function commit(t: Table, ids: number[], v: number, deleted: number[] = []): Promise<void> {
  const w = await BatchWriter.open(t);
  await w.upsert(ids.map((id) => ({ id, v, pad: "p".repeat(id % 50) })));
  if (deleted.length > 0) await w.delete(deleted.map((id) => ({ id })));
  await w.commit();
}

function capture(): { log: CommitLog; sent: CompactionEntry[] } {
  const sent: CompactionEntry[] = [];
  const log: CommitLog = {
    maxPayload: 1024 * 1024,
    append: (c: CommitEntry) => (sent.push(c as CompactionEntry), Promise.resolve()),
    open: () => Promise.reject(new Error("not used")),
    purge: () => Promise.resolve(),
  };
  return { log, sent };
}

/** The leader's path: decides and lands `entry` as a COMPACT snapshot. */
async function land(t: Table, entry: CompactionEntry, seq: number): Promise<string> {
  const committer = new StreamCompactionCommitter<CompactionEntry>(t, { commitUser: "leader", epoch: 1, commitStream: "C@1", stillLeader: () => true, ownerEpochOf: () => 1 });
  const r = await committer.commit([{ seq, compaction: entry }]);
  return r.verdicts[0]!.kind;
}

test("LSM compaction - jobs from the committed trees: none below the trigger, then levels and the rows' own sequence numbers; the next planned on the last one's outputs before it lands; the leader lands both in a round", async () => {
  const t = await newTable();
  const { log, sent } = capture();
  let now = 0;
  const strategy = compactionStrategyFor(t, { bucket: 0, now: () => now, rewriter: inlineLsmRewriter(null) });
  const compactor = new BucketCompactor({ table: t, bucket: 0, ownerEpoch: 1, writerId: "w", commitLog: log, slots: new CompactionSlots(1), strategy, now: () => now });
  // Commits of the same keys: runs of about one size, which universal compaction merges once there are 3.
  const ids = Array.from({ length: 30 }, (_, i) => i);
  await commit(t, ids, 1, [100]);
  await commit(t, ids, 2);
  assert.equal((await compactor.runOnce("any")).entry, null, "2 sorted runs: under the trigger of 3");
  await commit(t, ids, 3);
  assert.equal((await compactor.runOnce("small")).entry, null, "primary-key buckets have one lane");
  const first = await compactor.runOnce("any");
  assert.ok(first.entry !== null, "3 sorted runs: a job");
  assert.equal(first.entry.planSnapshotId, 3);
  const change = first.entry.changes[0]!;
  assert.deepEqual(change.before.map((f) => f.level), [0, 0, 0], "its inputs: the three level-0 files, at their level");
  assert.ok(change.after.length >= 1 && change.after.every((f) => f.level === 3), "every run taken: into the top level (num-levels = trigger + 1: levels 0-3)");
  assert.ok(change.before.some((f) => (f.deleteRowCount ?? 0) > 0) && change.after.every((f) => f.deleteRowCount === 0), "into the highest level: the delete is dropped");
  const range = (fs: typeof change.before): [bigint, bigint] => [fs.reduce((m, f) => (f.minSequenceNumber < m ? f.minSequenceNumber : m), 1n << 62n), fs.reduce((m, f) => (f.maxSequenceNumber > m ? f.maxSequenceNumber : m), -1n)];
  const [inMin, inMax] = range(change.before);
  const [outMin, outMax] = range(change.after);
  assert.ok(outMin >= inMin && outMax === inMax, `the outputs keep their rows' sequence numbers (${outMin}..${outMax} within ${inMin}..${inMax}; the newest version of each key survives)`);
  assert.ok(first.rows > 0 && first.bytesRead > 0 && first.bytesWritten > 0);
  assert.equal((await strategy.observe()).sortedRuns, 1, "a job sent counts as done for the sorted runs: one run left");

  // Before it lands, the next job is planned on the tree it leaves (as Java's writer applies a finished compaction
  // to its levels before committing): its inputs are the first one's outputs and the runs committed since.
  for (const v of [4, 5, 6]) await commit(t, ids, v, v === 5 ? [7] : []);
  const second = await compactor.runOnce("any");
  assert.ok(second.entry !== null, "a job planned on the first one's outputs");
  const firstOutputs = new Set(change.after.map((f) => f.fileName));
  const secondInputs = second.entry.changes[0]!.before;
  assert.ok(change.after.every((f) => secondInputs.some((g) => g.fileName === f.fileName && g.level === f.level)), "it takes the first job's outputs, at their level");
  assert.equal(secondInputs.filter((f) => f.level === 0).length, 3, "and the three runs committed since");
  assert.equal((await compactor.runOnce("any")).entry, null, "nothing left to pick on that tree");
  // Both decided in one round: accepted, netted, the first one's output (written, never in a snapshot) deleted.
  const committer = new StreamCompactionCommitter<CompactionEntry>(t, { commitUser: "leader", epoch: 1, commitStream: "C@1", stillLeader: () => true, ownerEpochOf: () => 1 });
  const round = await committer.commit([{ seq: 1, compaction: first.entry }, { seq: 2, compaction: second.entry }]);
  assert.deepEqual(round.verdicts.map((v) => v.kind), ["accepted", "accepted"]);
  const bucketDir = join(t.root, "bucket-0");
  assert.ok([...firstOutputs].every((n) => !existsSync(join(bucketDir, n))), "the intermediate file is deleted");
  const liveNow = (await liveBuckets(t, (await t.snapshots.latest())!, {}, new ManifestStore(t)))[0]!.files;
  assert.deepEqual(liveNow.map((f) => f.fileName).sort(), second.entry.changes[0]!.after.map((f) => f.fileName).sort(), "the bucket is the second job's outputs");
  assert.ok(readdirSync(bucketDir).length > 0);

  // A job the leader never lands (it was lost): planned again once LSM_IN_FLIGHT_MS passed.
  for (const v of [7, 8, 9]) await commit(t, ids, v, v === 9 ? [11] : []);
  const lost = await compactor.runOnce("any");
  assert.ok(lost.entry !== null);
  assert.equal((await compactor.runOnce("any")).entry, null);
  now += 15_001;
  const again = await compactor.runOnce("any");
  assert.ok(again.entry !== null, "planned again after the in-flight time");
  assert.deepEqual(again.entry.changes[0]!.before.map((f) => f.fileName).sort(), lost.entry.changes[0]!.before.map((f) => f.fileName).sort());
  assert.equal(await land(t, again.entry, 3), "accepted");
  assert.equal(await land(t, lost.entry, 4), "rejected", "the lost one, read late: its inputs are gone");
  assert.equal(sent.length, 4);
  assert.equal((await compactor.runOnce("any")).entry, null, "the landed job's tree needs nothing");

  const expected = ids.filter((id) => id !== 11).map((id) => [id, 9]);
  const read = (await readJson(t)).map((r) => [r["id"], r["v"]]).sort((a, b) => Number(a[0]) - Number(b[0]));
  assert.deepEqual(read, expected, "the table reads as the model");
});

test("LSM compaction - the writers' size ratio: LSM_WRITER_SIZE_RATIO unless the table sets compaction.size-ratio (then the table's, Paimon's default 1 included)", async () => {
  assert.equal(writerLsmOptions(await newTable()).sizeRatio, LSM_WRITER_SIZE_RATIO);
  assert.equal(writerLsmOptions(await newTable({ "compaction.size-ratio": "1" })).sizeRatio, 1);
  assert.equal(writerLsmOptions(await newTable({ "compaction.size-ratio": "30" })).sizeRatio, 30);
  // A table with runs the default ratio (1) would not merge yet: a newest run much smaller than the next.
  const t = await newTable();
  await commit(t, Array.from({ length: 60 }, (_, i) => i), 1);
  await commit(t, Array.from({ length: 40 }, (_, i) => i), 2);
  await commit(t, Array.from({ length: 25 }, (_, i) => i), 3);
  const { log } = capture();
  const compactor = (table: Table): BucketCompactor =>
    new BucketCompactor({ table, bucket: 0, ownerEpoch: 1, writerId: "w", commitLog: log, slots: new CompactionSlots(1), strategy: compactionStrategyFor(table, { bucket: 0, now: () => 0, rewriter: inlineLsmRewriter(null) }), now: () => 0 });
  assert.ok((await compactor(t).runOnce()).entry !== null, "the writers' ratio takes the three runs");
  const files = (await liveBuckets(t, (await t.snapshots.latest())!, {}, new ManifestStore(t)))[0]!.files;
  assert.equal(planBucketCompaction(t, files), null, "Paimon's default ratio (1) would wait for a fourth run");
});

test("LSM compaction - the bucket's sorted runs: the snapshot's and the flushes in flight; the stop trigger; dropped flushes stop counting", async () => {
  const t = await newTable();
  const strategy = compactionStrategyFor(t, { bucket: 0, now: () => 0, rewriter: inlineLsmRewriter(null) });
  assert.deepEqual(await strategy.observe(), { liveFiles: 0, sortedRuns: 0, stop: false });
  await commit(t, [1, 2, 3], 1);
  await commit(t, [2, 3, 4], 2);
  assert.deepEqual(await strategy.observe(), { liveFiles: 2, sortedRuns: 2, stop: false });
  // Flushes sent, not in the snapshot (its offset for the bucket is 0): their level-0 files count.
  const part = Buffer.from((await liveBuckets(t, (await t.snapshots.latest())!, {}, new ManifestStore(t)))[0]!.partition).toString("hex");
  strategy.flushSent(10, new Map([[part, 1]]));
  strategy.flushSent(20, new Map([[part, 1]]));
  assert.deepEqual(await strategy.observe(), { liveFiles: 2, sortedRuns: 4, stop: false });
  strategy.flushSent(30, new Map([[part, 1]]));
  assert.deepEqual(await strategy.observe(), { liveFiles: 2, sortedRuns: 5, stop: true }, "at the stop trigger (5)");
  strategy.flushesDropped();
  assert.deepEqual(await strategy.observe(), { liveFiles: 2, sortedRuns: 2, stop: false });
  // A new partition's flushes count on their own tree; the fullest tree decides.
  strategy.flushSent(40, new Map([["other", 3]]));
  assert.deepEqual(await strategy.observe(), { liveFiles: 2, sortedRuns: 3, stop: false });
});

test("LSM compaction - worker threads: the same compaction as on the calling thread, at their lower priority; a worker that dies fails its job, retryable, and its announced outputs are removed", async () => {
  const t = await newTable({ "num-sorted-run.compaction-trigger": "2" });
  const ids = Array.from({ length: 40 }, (_, i) => i);
  await commit(t, ids, 1, [50]);
  await commit(t, ids, 2, [5]);
  const latest = (await t.snapshots.latest())!;
  const live = (await liveBuckets(t, latest, {}, new ManifestStore(t)))[0]!;
  const bucket: BucketFiles = { partition: live.partition, partitionPath: "", bucket: 0, totalBuckets: 1, files: live.files };
  const plan = planBucketCompaction(t, live.files)!;
  assert.ok(plan !== null && plan.steps.some((s) => s.kind === "rewrite"));
  const workers = new LsmRewriteWorkers({ warehouse: wh.path, size: 1, nice: 7 });
  try {
    const inWorker = await workers.rewrite(t, bucket, plan);
    if (process.platform === "linux") assert.ok(threadNices("self").includes(7), "the worker thread runs at its lower priority");
    const inline = await inlineLsmRewriter(null).rewrite(t, bucket, plan);
    const strip = (c: typeof inline): unknown => ({ ...c, writtenPaths: c.writtenPaths.length, newFiles: c.newFiles.map((f) => ({ ...f, fileName: "", creationTimeMillis: 0 })) });
    assert.deepEqual(strip(inWorker), strip(inline), "the worker's compaction is the calling thread's (file names and times aside)");
    assert.ok(inWorker.writtenPaths.every((p) => existsSync(p)));
  } finally {
    await workers.close();
  }

  // A worker that exits mid-rewrite (after its first output file was written).
  const dir = join(t.root, "bucket-0");
  const before = new Set(readdirSync(dir));
  process.env["FAILPOINTS"] = "compact.rewrite.after-output:exit";
  const dying = new LsmRewriteWorkers({ warehouse: wh.path, size: 1, nice: 0 });
  try {
    await assert.rejects(dying.rewrite(t, bucket, plan), (e) => isLakeError(e, ErrorKind.Unexpected) && e.retryable && /worker exited/.test(e.message));
  } finally {
    delete process.env["FAILPOINTS"];
    await dying.close();
  }
  const left = readdirSync(dir).filter((n) => !before.has(n));
  assert.deepEqual(left, [], "the outputs it announced were removed");
});

test("LSM compaction - a job the leader rejects stops counting at once, with the jobs planned on it: the sorted runs are the committed trees', the next job is planned on them and lands; a rejection that comes while the job is still being sent counts too", async () => {
  const t = await newTable({ "num-sorted-run.stop-trigger": "7" });
  const { log } = capture();
  const now = 0;
  const strategy = compactionStrategyFor(t, { bucket: 0, now: () => now, rewriter: inlineLsmRewriter(null) });
  const compactor = new BucketCompactor({ table: t, bucket: 0, ownerEpoch: 1, writerId: "w", commitLog: log, slots: new CompactionSlots(1), strategy, now: () => now });
  const ids = Array.from({ length: 30 }, (_, i) => i);
  const liveNames = async (): Promise<string[]> => (await liveBuckets(t, (await t.snapshots.latest())!, {}, new ManifestStore(t)))[0]!.files.map((f) => f.fileName).sort();
  for (const v of [1, 2, 3]) await commit(t, ids, v);
  const first = await compactor.runOnce();
  assert.ok(first.entry !== null);
  for (const v of [4, 5, 6]) await commit(t, ids, v);
  const second = await compactor.runOnce();
  assert.ok(second.entry !== null, "a job planned on the first one's outputs");
  const firstOutputs = first.entry.changes[0]!.after.map((f) => f.fileName);
  assert.ok(firstOutputs.every((n) => second.entry!.changes[0]!.before.some((f) => f.fileName === n)));
  assert.deepEqual(await strategy.observe(), { liveFiles: 6, sortedRuns: 1, stop: false }, "both jobs counted as done: one run");

  assert.equal(compactor.compactionRejected("not-a-job-of-this-bucket"), false);
  // The leader refuses the first (its inputs are all still live: e.g. an LSM conflict): it deletes its outputs, so
  // the second, which took them, cannot land either.
  assert.equal(compactor.compactionRejected(first.entry.compactionId), true);
  assert.deepEqual(await strategy.observe(), { liveFiles: 6, sortedRuns: 6, stop: false }, "the committed trees: six level-0 runs, nothing sent counted");
  assert.equal(compactor.compactionRejected(second.entry.compactionId), false, "dropped with the first");
  const third = await compactor.runOnce();
  assert.ok(third.entry !== null, "planned again at once, not after the in-flight time");
  assert.deepEqual(third.entry.changes[0]!.before.map((f) => f.fileName).sort(), await liveNames(), "on the committed files: the six level-0 runs");
  assert.ok(third.entry.changes[0]!.before.every((f) => f.level === 0));
  assert.equal(await land(t, third.entry, 1), "accepted");
  assert.equal(await land(t, second.entry, 2), "rejected", "the job planned on the rejected one's outputs");

  // A job that is rejected before its append returned (the leader read it first): not counted once it settles.
  for (const v of [7, 8, 9]) await commit(t, ids, v);
  // (the same strategy: `compactor` and `raced` share the bucket's view)
  const racing: CommitLog = { ...log, append: (e: CommitEntry) => (raced.compactionRejected((e as CompactionEntry).compactionId), Promise.resolve()) };
  const raced: BucketCompactor = new BucketCompactor({ table: t, bucket: 0, ownerEpoch: 1, writerId: "w", commitLog: racing, slots: new CompactionSlots(1), strategy, now: () => now });
  const rejectedEarly = await raced.runOnce();
  assert.ok(rejectedEarly.entry !== null);
  assert.equal((await strategy.observe()).sortedRuns, 4, "the rejected job is not counted: the top level and three level-0 runs");
  const again = await compactor.runOnce();
  assert.ok(again.entry !== null, "its inputs are planned again");
  assert.deepEqual(again.entry.changes[0]!.before.map((f) => f.fileName).sort(), rejectedEarly.entry.changes[0]!.before.map((f) => f.fileName).sort());
});
