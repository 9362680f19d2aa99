/**
 * BucketCompactor's lanes: a small job runs beside the bucket's own job of any size — without the node's compaction
 * slot, on the files flushed after that job's inputs — so a bucket whose large merge waits for the slot (every bucket's
 * largest merge comes due at about the same time) does not gather a file per flush meanwhile. A job the leader
 * rejects frees its inputs for the next plan at once.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { BucketCompactor, compactionStrategyFor, SMALL_LANE_BYTES, smallTask } from "../../../actors/bucket-compactor.ts";
import { CompactionSlots } from "../../../actors/compaction-slots.ts";
import type { CommitLog } from "../../../actors/ports.ts";
import type { CommitEntry, CompactionEntry } from "../../../actors/wire/messages.ts";
import type { CompactionTask } from "../../../src/maintenance/compact.ts";
import { EMPTY_STATS, type DataFileMeta } from "../../../src/format/manifest.ts";
import { createTable, tempDir, writeRows } from "../../helpers/tables.ts";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test("bucket compactor - a small-lane job runs while the any-lane job waits for the node's slot, on the files after its inputs; the two never share an input", async () => {
  const wh = tempDir();
  try {
    const table = await createTable(wh.path, "c.lanes", "id BIGINT NOT NULL, s STRING", { options: { bucket: "1", "bucket-key": "id" } });
    let id = 0;
    const flush = async (): Promise<void> => void (await writeRows(table, Array.from({ length: 50 }, () => ({ id: id++, s: "x".repeat(30) }))));
    for (let i = 0; i < 6; i++) await flush();
    const sent: CompactionEntry[] = [];
    const commitLog: CommitLog = {
      maxPayload: 1024 * 1024,
      append: (c: CommitEntry) => (sent.push(c as CompactionEntry), Promise.resolve()),
      open: () => Promise.reject(new Error("not used")),
      purge: () => Promise.resolve(),
    };
    const slots = new CompactionSlots(1);
    const heldByAnotherBucket = await slots.acquire();
    const now = (): number => performance.now();
    const compactor = new BucketCompactor({ table, bucket: 0, ownerEpoch: 1, writerId: "w", commitLog, slots, strategy: compactionStrategyFor(table, { bucket: 0, now }), now });
    // The any-lane job plans the 6 files and waits for the slot another bucket holds.
    const anyJob = compactor.runOnce("any");
    await sleep(100);
    assert.equal(sent.length, 0, "the any-lane job waits for the slot");
    for (let i = 0; i < 5; i++) await flush();
    const small = await compactor.runOnce("small");
    assert.ok(small.entry !== null, "the small lane ran without the slot");
    assert.equal(sent.length, 1);
    heldByAnotherBucket();
    const big = await anyJob;
    assert.ok(big.entry !== null, "the any-lane job ran once the slot was free");
    const inputs = (e: CompactionEntry): DataFileMeta[] => e.changes.flatMap((c) => c.before);
    const smallInputs = inputs(small.entry);
    const bigInputs = inputs(big.entry);
    assert.equal(bigInputs.length, 6, "the any-lane job took the six files it planned");
    assert.equal(smallInputs.length, 5, "the small lane took the five files flushed after them");
    const maxBig = bigInputs.reduce((m, f) => (f.maxSequenceNumber > m ? f.maxSequenceNumber : m), -1n);
    assert.ok(smallInputs.every((f) => f.minSequenceNumber > maxBig), "the small job's inputs all come after the any-lane job's: each stays a contiguous run");
    assert.equal(new Set([...smallInputs, ...bigInputs].map((f) => f.fileName)).size, 11, "no input in both");
    // Neither job's inputs are planned again while they are in flight.
    assert.equal((await compactor.runOnce("any")).entry, null);
    assert.equal((await compactor.runOnce("small")).entry, null);
    // The leader rejects the small job: its inputs (still live) are planned again at once, not after IN_FLIGHT_MS.
    assert.equal(compactor.compactionRejected("another-job"), false);
    assert.equal(compactor.compactionRejected(small.entry.compactionId), true);
    const again = await compactor.runOnce("small");
    assert.ok(again.entry !== null, "planned again after the rejection");
    assert.deepEqual(inputs(again.entry).map((f) => f.fileName).sort(), smallInputs.map((f) => f.fileName).sort());
    assert.equal(compactor.compactionRejected(small.entry.compactionId), false, "told once");
  } finally {
    wh.cleanup();
  }
});

let nextSeq = 0n;
function file(name: string, size: number): DataFileMeta {
  const min = nextSeq;
  nextSeq += 10n;
  return {
    fileName: name, fileSize: size, rowCount: 10, minKey: EMPTY_STATS.minValues, maxKey: EMPTY_STATS.maxValues, keyStats: EMPTY_STATS, valueStats: EMPTY_STATS,
    minSequenceNumber: min, maxSequenceNumber: min + 9n, schemaId: 0, level: 0, extraFiles: [], creationTimeMillis: 0, deleteRowCount: 0,
    embeddedIndex: null, fileSource: 0, valueStatsCols: null, externalPath: null, firstRowId: null, writeCols: null,
  };
}
const task = (files: DataFileMeta[]): CompactionTask => ({ partition: new Uint8Array(0), partitionValues: [], bucket: 0, totalBuckets: 1, files });

test("bucket compactor - a small-lane task: the first planned task within the limit, else its newest files within it (at least two), else none", () => {
  const MB = 1024 * 1024;
  const fits = task([file("a", MB), file("b", MB)]);
  assert.deepEqual(smallTask([fits]).map((t) => t.files.map((f) => f.fileName)), [["a", "b"]]);
  const joinedOld = task([file("old", 3 * MB), file("c", MB), file("d", MB), file("e", MB)]);
  assert.deepEqual(smallTask([joinedOld]).map((t) => t.files.map((f) => f.fileName)), [["c", "d", "e"]], "the newest files within 4 MiB: still a contiguous run");
  assert.deepEqual(smallTask([task([file("x", SMALL_LANE_BYTES), file("y", MB)])]), [], "one file within the limit is no compaction");
  assert.deepEqual(smallTask([task([file("big1", 5 * MB), file("big2", 5 * MB)]), fits]).map((t) => t.files.map((f) => f.fileName)), [["a", "b"]], "a later task that fits");
});
