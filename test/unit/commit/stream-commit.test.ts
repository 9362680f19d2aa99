import { after, test } from "node:test";
import assert from "node:assert/strict";
import { StreamCommitter, type StreamCommittable } from "../../../src/commit/stream-commit.ts";
import { TableWrite } from "../../../src/write/table-write.ts";
import { natslakeState } from "../../../src/spec/snapshot.ts";
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
