/**
 * The leader's decision on writers' compactions (pure): duplicate by the commit-stream watermark, stale owner,
 * inputs gone (also taken by an earlier change of the same round), outputs missing, an LSM conflict (primary-key
 * tables), else accepted.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { decideCompactions, netChanges, parseWatermark, writtenOutputs, type CompactionClaim } from "../../../src/commit/compaction-commit.ts";
import { EMPTY_STATS, FileKind, fileIdentifier, type DataFileMeta } from "../../../src/format/manifest.ts";
import type { NatslakeState } from "../../../src/format/snapshot.ts";
import { compareIntKeys, lsmFile } from "../../helpers/lsm-files.ts";

const PART = new Uint8Array(0);
function file(name: string): DataFileMeta {
  return {
    fileName: name, fileSize: 1, rowCount: 1, minKey: EMPTY_STATS.minValues, maxKey: EMPTY_STATS.maxValues, keyStats: EMPTY_STATS, valueStats: EMPTY_STATS,
    minSequenceNumber: 0n, maxSequenceNumber: 0n, schemaId: 0, level: 0, extraFiles: [], creationTimeMillis: 0, deleteRowCount: 0,
    embeddedIndex: null, fileSource: 0, valueStatsCols: null, externalPath: null, firstRowId: null, writeCols: null,
  };
}
const change = (bucket: number, ownerEpoch: number, before: string[], after: string[]): CompactionClaim => ({
  bucket,
  ownerEpoch,
  changes: [{ partition: PART, totalBuckets: 2, before: before.map(file), after: after.map(file) }],
});
const live = (bucket: number, ...names: string[]): string[] => names.map((n) => fileIdentifier({ kind: FileKind.ADD, partition: PART, bucket, totalBuckets: 2, file: file(n) }));
const state = (w?: string): NatslakeState => ({ epoch: 3, buckets: new Map([[0, { offset: 10n, ownerEpoch: 2 }], [1, { offset: 5n, ownerEpoch: 2 }]]), ...(w ? { compactionsDecided: w } : {}) });
const none = new Map<number, string>();

test("compactions - accepted when its inputs are live, its owner current and its outputs present; the watermark moves to the last seq decided", () => {
  const out = decideCompactions([{ seq: 7, compaction: change(0, 2, ["a", "b"], ["ab"]) }], { state: state(), live: new Set(live(0, "a", "b")) }, { commitStream: "C@1", ownerEpochOf: () => 2, missingOutputs: none });
  assert.deepEqual(out.verdicts.map((v) => v.kind), ["accepted"]);
  assert.equal(out.accepted.length, 1);
  assert.equal(out.watermark, 7);
});

test("compactions - at or below the watermark of the same commit stream: a duplicate, even with its inputs gone (never rejected: its outputs may be live or held by older snapshots)", () => {
  const base = { state: state("C@1/9"), live: new Set(live(0, "ab")) };
  const out = decideCompactions([{ seq: 9, compaction: change(0, 2, ["a", "b"], ["ab"]) }, { seq: 12, compaction: change(0, 2, ["ab", "c"], ["abc"]) }], base, { commitStream: "C@1", ownerEpochOf: () => 2, missingOutputs: none });
  assert.deepEqual(out.verdicts.map((v) => v.kind), ["duplicate", "rejected"]);
  // A watermark of another (older, re-created) commit stream says nothing about this one's sequences.
  const other = decideCompactions([{ seq: 3, compaction: change(0, 2, ["ab"], ["x"]) }], { state: state("C@0/9"), live: new Set(live(0, "ab")) }, { commitStream: "C@1", ownerEpochOf: () => 2, missingOutputs: none });
  assert.deepEqual(other.verdicts.map((v) => v.kind), ["accepted"]);
});

test("compactions - rejected: stale owner epoch, an input not live, an input taken by an earlier change of the round, an output missing", () => {
  const base = { state: state(), live: new Set([...live(0, "a", "b", "c"), ...live(1, "p", "q")]) };
  const out = decideCompactions(
    [
      { seq: 1, compaction: change(1, 1, ["p", "q"], ["pq"]) }, // owner epoch 1, bucket 1 is at 2
      { seq: 2, compaction: change(0, 2, ["a", "gone"], ["x"]) },
      { seq: 3, compaction: change(0, 2, ["a", "b"], ["ab"]) },
      { seq: 4, compaction: change(0, 2, ["b", "c"], ["bc"]) }, // b was taken by seq 3
      { seq: 5, compaction: change(1, 2, ["p", "q"], ["pq2"]) },
    ],
    base,
    { commitStream: "C@1", ownerEpochOf: () => undefined, missingOutputs: new Map([[5, "pq2"]]) },
  );
  assert.deepEqual(
    out.verdicts.map((v) => (v.kind === "rejected" ? `${v.seq}:${v.reason}` : `${v.seq}:${v.kind}`)),
    ["1:stale-owner-epoch", "2:inputs-gone", "3:accepted", "4:inputs-gone", "5:outputs-missing"],
  );
  assert.equal(out.watermark, 5, "rejected ones count as decided too");
});

test("compactions - watermark parsing", () => {
  assert.deepEqual(parseWatermark("LAKE_COMMITS_x@2026-12-01T00:00:00Z/42"), { stream: "LAKE_COMMITS_x@2026-12-01T00:00:00Z", seq: 42 });
  assert.equal(parseWatermark(undefined), undefined);
  assert.equal(parseWatermark("no-seq"), undefined);
  assert.equal(parseWatermark("/5"), undefined);
});

test("compactions - what a rejected change leaves to delete: the files it wrote, never one it only moved to another level (a primary-key upgrade)", () => {
  const c: CompactionClaim = {
    bucket: 0,
    ownerEpoch: 2,
    changes: [{ partition: PART, totalBuckets: 2, before: [file("up"), file("a"), file("b")], after: [{ ...file("up"), level: 3 }, { ...file("ab"), level: 3 }] }],
  };
  assert.deepEqual(writtenOutputs(c).map((e) => e.file.fileName), ["ab"]);
  assert.deepEqual(writtenOutputs(change(0, 2, ["a", "b"], ["ab", "cd"])).map((e) => e.file.fileName), ["ab", "cd"]);
});

test("compactions - primary-key tables: Java's LSM conflict check against the base and the changes accepted before; a level change is an input gone", () => {
  const entry = (f: DataFileMeta) => ({ kind: FileKind.ADD, partition: PART, bucket: 0, totalBuckets: 2, file: f });
  const a = lsmFile({ name: "a", level: 3, min: 0, max: 10 });
  const b = lsmFile({ name: "b", level: 0, min: 20, max: 30, maxSeq: 5 });
  const c = lsmFile({ name: "c", level: 0, min: 5, max: 25, maxSeq: 6 });
  const entries = [a, b, c].map(entry);
  const base = { state: state(), live: new Set(entries.map(fileIdentifier)), entries };
  const lsm = { compareKeys: compareIntKeys, numLevels: 4 };
  const claim = (before: DataFileMeta[], after: DataFileMeta[]): CompactionClaim => ({ bucket: 0, ownerEpoch: 2, changes: [{ partition: PART, totalBuckets: 2, before, after }] });
  const out = decideCompactions(
    [
      // b up to level 2: fits (level 2 is empty).
      { seq: 1, compaction: claim([b], [{ ...b, level: 2 }]) },
      // c into level 2 beside b, whose range it overlaps after seq 1: a conflict.
      { seq: 2, compaction: claim([c], [{ ...c, level: 2 }]) },
      // c into level 3 overlaps a: a conflict with the base.
      { seq: 3, compaction: claim([c], [{ ...c, level: 3 }]) },
      // b again, from level 0: it is at level 2 now (taken by seq 1), so its input is gone.
      { seq: 4, compaction: claim([b], [{ ...b, level: 1 }]) },
      // c rewritten with a into level 3 as one file: fits.
      { seq: 5, compaction: claim([c, a], [lsmFile({ name: "ca", level: 3, min: 0, max: 25 })]) },
    ],
    base,
    { commitStream: "C@1", ownerEpochOf: () => 2, missingOutputs: none, lsm },
  );
  assert.deepEqual(
    out.verdicts.map((v) => (v.kind === "rejected" ? `${v.seq}:${v.reason}` : `${v.seq}:${v.kind}`)),
    ["1:accepted", "2:lsm-conflict", "3:lsm-conflict", "4:inputs-gone", "5:accepted"],
  );
  const v2 = out.verdicts[1]!;
  assert.ok(v2.kind === "rejected" && /level 2 is not a sorted run/.test(v2.detail), JSON.stringify(v2.kind === "rejected" ? v2.detail : v2.kind));
  // Without the check (an append table) the overlapping change would be accepted.
  const plain = decideCompactions([{ seq: 2, compaction: claim([c], [{ ...c, level: 3 }]) }], base, { commitStream: "C@1", ownerEpochOf: () => 2, missingOutputs: none });
  assert.deepEqual(plain.verdicts.map((v) => v.kind), ["accepted"]);
});

test("compactions - primary-key tables: a change may take as inputs the outputs of one accepted before it in the round (a writer's next compaction planned on its last); the commit nets them, and the file written in between is an intermediate to delete", () => {
  const entry = (f: DataFileMeta) => ({ kind: FileKind.ADD, partition: PART, bucket: 0, totalBuckets: 2, file: f });
  const a = lsmFile({ name: "a", level: 0, min: 0, max: 10, maxSeq: 1 });
  const b = lsmFile({ name: "b", level: 0, min: 5, max: 20, maxSeq: 2 });
  const big = lsmFile({ name: "big", level: 0, min: 30, max: 40, maxSeq: 3 });
  const c = lsmFile({ name: "c", level: 0, min: 0, max: 15, maxSeq: 4 });
  const entries = [a, b, big, c].map(entry);
  const base = { state: state(), live: new Set(entries.map(fileIdentifier)), entries };
  const lsm = { compareKeys: compareIntKeys, numLevels: 4 };
  const claim = (before: DataFileMeta[], after: DataFileMeta[]): CompactionClaim => ({ bucket: 0, ownerEpoch: 2, changes: [{ partition: PART, totalBuckets: 2, before, after }] });
  const ab = lsmFile({ name: "ab", level: 2, min: 0, max: 20 });
  const bigUp = { ...big, level: 2 };
  const abc = lsmFile({ name: "abc", level: 3, min: 0, max: 20 });
  const bigTop = { ...big, level: 3 };
  const first = claim([a, b, big], [ab, bigUp]);
  const second = claim([c, ab, bigUp], [abc, bigTop]);
  const out = decideCompactions([{ seq: 1, compaction: first }, { seq: 2, compaction: second }, { seq: 3, compaction: claim([ab], [{ ...ab, level: 1 }]) }], base, { commitStream: "C@1", ownerEpochOf: () => 2, missingOutputs: none, lsm });
  assert.deepEqual(out.verdicts.map((v) => (v.kind === "rejected" ? `${v.seq}:${v.reason}` : `${v.seq}:${v.kind}`)), ["1:accepted", "2:accepted", "3:inputs-gone"]);
  const net = netChanges(out.accepted);
  assert.equal(net.messages.length, 1);
  assert.deepEqual(net.messages[0]!.deletedFiles.map((f) => `${f.fileName}@${f.level}`).sort(), ["a@0", "b@0", "big@0", "c@0"], "the base's files leave at their levels");
  assert.deepEqual(net.messages[0]!.newFiles.map((f) => `${f.fileName}@${f.level}`).sort(), ["abc@3", "big@3"], "only the last state is added");
  assert.deepEqual(net.intermediates.map((e) => e.file.fileName), ["ab"], "ab was written and compacted again in the round: no snapshot references it; big only moved");
  // Without the first (rejected, or not in this round), the second's inputs are not in the tree.
  const alone = decideCompactions([{ seq: 2, compaction: second }], base, { commitStream: "C@1", ownerEpochOf: () => 2, missingOutputs: none, lsm });
  assert.deepEqual(alone.verdicts.map((v) => (v.kind === "rejected" ? v.reason : v.kind)), ["inputs-gone"]);
  // Append changes are unchanged by netting.
  const plain = netChanges([change(0, 2, ["x", "y"], ["xy"]), change(1, 2, ["p"], ["q"])]);
  assert.deepEqual(plain.messages.map((m) => [m.bucket, m.deletedFiles.map((f) => f.fileName), m.newFiles.map((f) => f.fileName)]), [[0, ["x", "y"], ["xy"]], [1, ["p"], ["q"]]]);
  assert.deepEqual(plain.intermediates, []);
});
