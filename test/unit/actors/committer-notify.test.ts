/**
 * The committer announces every snapshot, also those an earlier leader linked but never announced (it died or was
 * drained between link and notification — found by the chaos suite's `committer.after-snapshot` and
 * `commit.after-snapshot` failpoints): a new leader's first round publishes the missing notifications even on an
 * idle table, and every later notification comes after those of all earlier ids.
 *
 * Real table files in a temporary warehouse; the NATS/Redis ports are in-process fakes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { ActorSystem, noopLogger } from "../../../actors/runtime/index.ts";
import type { Committable } from "../../../actors/wire/messages.ts";
import { StreamCommitter } from "../../../src/commit/stream-commit.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";
import { committable, startCommitter, until } from "../../helpers/committer-harness.ts";

test("committer - a new leader announces the snapshots an earlier leader linked but never announced, then its own, in order", async () => {
  const dir = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(dir.path, "t.events", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
    // An earlier leader (epoch 1) linked snapshots 1..3 and announced only snapshot 1.
    const earlier = new StreamCommitter<Committable>(table, { commitUser: "natslake-t.events", epoch: 1, stillLeader: () => true, ownerEpochOf: () => 1 });
    for (let i = 0; i < 3; i++) assert.ok((await earlier.commitRound([committable(i * 10, i * 10 + 10)])).snapshot);

    const { published, queue } = startCommitter(system, table);
    // Idle: the first round announces 1 again (recorded as announced: its notification may have been lost between
    // the record and the publish), then 2 and 3 (an idle table's last snapshot must be announced: read-your-writes).
    await until("snapshots 1 to 3 announced", () => published.length >= 3);
    assert.deepEqual(
      published.map((n) => n.snapshotId),
      [1, 2, 3],
    );
    assert.equal(published[2]!.epoch, 1, "rebuilt from the snapshot: the epoch that committed it");
    assert.deepEqual(published[2]!.offsets, { "0": 30 });
    // Then its own commit: snapshot 4, after them.
    queue.push({ seq: 1, committable: committable(30, 40) });
    await until("snapshot 4 announced", () => published.length >= 4);
    assert.deepEqual(
      published.map((n) => n.snapshotId),
      [1, 2, 3, 4],
    );
    assert.equal(published[3]!.epoch, 5, "above Redis's counter (1), the chain's epoch (1) and the stored assignment's (4)");
    assert.deepEqual(published[3]!.offsets, { "0": 40 });
  } finally {
    await system.shutdown();
    dir.cleanup();
  }
});

test("committer - tells the node once per leadership that its commit-stream backlog is decided, only after committing it", async () => {
  const dir = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(dir.path, "t.events", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
    const earlier = new StreamCommitter<Committable>(table, { commitUser: "natslake-t.events", epoch: 1, stillLeader: () => true, ownerEpochOf: () => 1 });
    assert.ok((await earlier.commitRound([committable(0, 10)])).snapshot);
    // Committables an earlier leadership left undecided: their files are what orphan cleanup must not delete.
    const decided: Array<{ epoch: number }> = [];
    const { queue } = startCommitter(system, table, {
      backlog: [
        { seq: 1, committable: committable(10, 20) },
        { seq: 2, committable: committable(20, 30) },
      ],
      onBacklogDecided: (epoch) => decided.push({ epoch }),
    });
    await until("the backlog decided", () => decided.length > 0);
    const latest = await table.snapshots.latest();
    assert.equal(latest?.properties?.["natslake.offset.0"], "30", "the backlog was committed before the node was told");
    queue.push({ seq: 3, committable: committable(30, 40) });
    let committed = false;
    while (!committed) {
      committed = (await table.snapshots.latest())?.properties?.["natslake.offset.0"] === "40";
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(decided.length, 1, "once per leadership, not again after later rounds");
    assert.equal(decided[0]!.epoch, 5);
  } finally {
    await system.shutdown();
    dir.cleanup();
  }
});

test("committer - a round that hangs (here: its notification) is reported once with its stage, and again when it ends", async () => {
  const dir = tempDir();
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, fields: fields ?? {} });
  const system = new ActorSystem({ log: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } });
  try {
    const table = await createTable(dir.path, "t.events", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
    let release = (): void => {};
    const publishGate = new Promise<void>((r) => (release = r));
    const { queue, published } = startCommitter(system, table, { lastNotified: 0, publishGate, stallReportMs: 300 });
    queue.push({ seq: 1, committable: committable(0, 10) });
    await until("the slow round reported", () => lines.some((l) => l.msg.startsWith("commit round running for long")));
    const warn = lines.find((l) => l.msg.startsWith("commit round running for long"))!;
    assert.equal(warn.level, "warn");
    assert.equal(warn.fields["stage"], "append", "it names where the round is: deciding the appends (their notification)");
    assert.equal(warn.fields["table"], "t.events");
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(lines.filter((l) => l.msg.startsWith("commit round running for long")).length, 1, "once per round");
    release();
    await until("the round ended", () => lines.some((l) => l.msg === "slow commit round ended"));
    assert.equal(published.at(-1)?.snapshotId, 1);
  } finally {
    await system.shutdown();
    dir.cleanup();
  }
});
