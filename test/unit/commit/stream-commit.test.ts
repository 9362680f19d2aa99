import { after, test } from "node:test";
import assert from "node:assert/strict";
import { StreamCommitter, type StreamCommittable } from "../../../src/commit/stream-commit.ts";
import { TableWrite } from "../../../src/write/table-write.ts";
import { natslakeState } from "../../../src/format/snapshot.ts";
import { isLakeError } from "../../../src/errors.ts";
import type { Table } from "../../../src/table/table.ts";
import { createTable, readJson, tempDir } from "../../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

async function committable(t: Table, bucket: number, ownerEpoch: number, prevOffset: number, lastOffset: number, ids: number[]): Promise<StreamCommittable> {
  const w = new TableWrite(t, { bucket });
  w.writeRows(ids.map((id) => ({ id, b: bucket })));
  const msgs = await w.prepareCommit();
  return { bucket, ownerEpoch, prevOffset, lastOffset, files: msgs.flatMap((m) => m.newFiles.map((meta) => ({ partition: m.partition, totalBuckets: m.totalBuckets, meta }))) };
}

const leader = (t: Table, epoch: number, owner: Record<number, number> = {}, alive = () => true) =>
  new StreamCommitter<StreamCommittable>(t, { commitUser: "natslake-test", epoch, stillLeader: alive, ownerEpochOf: (b) => owner[b] });

test("stream-commit - accepted offsets and owner epochs are carried forward in every snapshot", async () => {
  const t = await createTable(wh.path, "sc.carry", "id BIGINT, b INT");
  const c1 = leader(t, 3, { 0: 1, 1: 1 });
  const r1 = await c1.commitRound([await committable(t, 0, 1, 0, 10, [1, 2]), await committable(t, 1, 1, 0, 12, [3])]);
  assert.equal(r1.snapshot?.id, 1);
  const r2 = await c1.commitRound([await committable(t, 0, 1, 10, 20, [4])]);
  const st = natslakeState(r2.snapshot!)!;
  assert.equal(st.epoch, 3);
  assert.deepEqual(st.buckets.get(0), { offset: 20n, ownerEpoch: 1 });
  assert.deepEqual(st.buckets.get(1), { offset: 12n, ownerEpoch: 1 }, "bucket 1 carried forward untouched");
  assert.deepEqual((await readJson(t)).map((r) => r["id"]).sort(), [1, 2, 3, 4]);
});

test("stream-commit - a stale committable is rejected and its rows never land; a duplicate is dropped", async () => {
  const t = await createTable(wh.path, "sc.stale", "id BIGINT, b INT");
  const c = leader(t, 1, { 0: 2 });
  const ok = await committable(t, 0, 2, 0, 5, [1]);
  await c.commitRound([ok]);
  const r = await c.commitRound([await committable(t, 0, 1, 5, 9, [99]), await committable(t, 0, 2, 7, 9, [98]), ok]);
  assert.deepEqual(r.verdicts.map((v) => v.kind + (v.kind === "rejected" ? ":" + v.reason : "")), ["rejected:stale-owner-epoch", "rejected:broken-offset-chain", "duplicate"]);
  assert.equal(r.snapshot, null, "nothing accepted, nothing committed");
  assert.deepEqual((await readJson(t)).map((x) => x["id"]), [1]);
});

test("stream-commit - a leader whose base carries a higher epoch is fenced and commits nothing", async () => {
  const t = await createTable(wh.path, "sc.fence", "id BIGINT, b INT");
  await leader(t, 5, { 0: 1 }).commitRound([await committable(t, 0, 1, 0, 3, [1])]);
  const old = leader(t, 4, { 0: 1 });
  await assert.rejects(old.commitRound([await committable(t, 0, 1, 3, 6, [2])]), (e: unknown) => isLakeError(e, "Fenced"));
  assert.deepEqual(await t.snapshots.listIds(), [1]);
});

test("stream-commit - a leader that lost its lease does not commit", async () => {
  const t = await createTable(wh.path, "sc.lease", "id BIGINT, b INT");
  await assert.rejects(leader(t, 1, { 0: 1 }, () => false).commitRound([await committable(t, 0, 1, 0, 3, [1])]), (e: unknown) => isLakeError(e, "Fenced"));
  assert.deepEqual(await t.snapshots.listIds(), []);
});

test("stream-commit - the stream of the offsets is recorded; a reset moves the table onto a new stream and is refused when nothing is wrong", async () => {
  const { resetStreamOffsets } = await import("../../../src/commit/stream-commit.ts");
  const t = await createTable(wh.path, "sc.stream", "id BIGINT, b INT");
  const c = leader(t, 2, { 0: 1 });
  await c.commitRound([{ ...(await committable(t, 0, 1, 0, 10, [1])), stream: "S#old" }]);
  assert.equal(natslakeState((await t.snapshots.latest())!)!.stream, "S#old");
  // The stream is re-created: a committable from it is rejected, and nothing lands.
  const fresh = { ...(await committable(t, 0, 1, 0, 3, [2])), stream: "S#new" };
  const r = await c.commitRound([fresh]);
  assert.deepEqual(r.verdicts.map((v) => v.kind + (v.kind === "rejected" ? ":" + v.reason : "")), ["rejected:stream-mismatch"]);
  assert.equal(r.snapshot, null);
  // A reset that finds the offsets on the live stream already is refused by its check.
  const refuse = (st: { stream?: string } | null): void => {
    if (st?.stream === "S#new") throw new Error("already on the live stream");
  };
  const s = await resetStreamOffsets(t, { stream: "S#new", offsetOf: () => 0, buckets: [0], commitUser: "reset" }, refuse);
  const st = natslakeState(s)!;
  assert.equal(st.stream, "S#new");
  assert.equal(st.offsetEpoch, 1);
  assert.equal(st.epoch, 2, "the leader's epoch is kept: the running leader is not fenced");
  assert.deepEqual(st.buckets.get(0), { offset: 0n, ownerEpoch: 1 });
  await assert.rejects(resetStreamOffsets(t, { stream: "S#new", offsetOf: () => 0, buckets: [0], commitUser: "reset" }, refuse), /already on the live stream/);
  // The leader builds on the reset: the new stream's committable now lands, and the offset epoch is carried forward.
  const r2 = await c.commitRound([fresh]);
  assert.equal(r2.verdicts[0]!.kind, "accepted");
  assert.equal(natslakeState(r2.snapshot!)!.offsetEpoch, 1);
  assert.deepEqual((await readJson(t)).map((x) => x["id"]).sort(), [1, 2]);
});
