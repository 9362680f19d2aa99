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
import { metrics } from "@opentelemetry/api";
import { ActorSystem, noopLogger } from "../../../actors/runtime/index.ts";
import { CommitterActor } from "../../../actors/committer.ts";
import { systemClock, type Bus, type CommitLog, type CommitReader, type IngestLog, type Lease, type LeaseGrant } from "../../../actors/ports.ts";
import type { Committable, SnapshotNotification } from "../../../actors/wire/messages.ts";
import { StreamCommitter } from "../../../src/commit/stream-commit.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";
import type { Table } from "../../../src/table/table.ts";

const committable = (prevOffset: number, lastOffset: number): Committable => ({
  type: "committable",
  v: 1,
  table: "t.events",
  bucket: 0,
  ownerEpoch: 1,
  writerId: "w1",
  prevOffset,
  lastOffset,
  rowCount: 0,
  files: [],
  flushId: lastOffset,
  firstArrivalMillis: 0,
});

/**
 * A CommitterActor on `table` with in-process ports: an earlier announcement of snapshot 1, a commit stream fed
 * through `queue`, a lease it gets at once.
 */
function startCommitter(
  system: ActorSystem,
  table: Table,
  o: { backlog?: Array<{ seq: number; committable: Committable }>; onBacklogDecided?: (epoch: number) => void } = {},
): { published: SnapshotNotification[]; queue: Array<{ seq: number; committable: Committable }> } {
  const published: SnapshotNotification[] = [];
  const bus: Bus = {
    publishRejection: () => {},
    publishSnapshot: async (n) => {
      await Promise.resolve();
      published.push(n);
    },
    lastSnapshotNotified: () => Promise.resolve(1),
    publishDeadLetters: () => Promise.resolve(),
  };
  // The commit stream: what an earlier leadership left in it, then what the test adds.
  const queue: Array<{ seq: number; committable: Committable }> = [...(o.backlog ?? [])];
  const reader: CommitReader = {
    streamId: "COMMITS@1",
    fetch: async (max, waitMs) => {
      if (queue.length === 0) await new Promise((r) => setTimeout(r, Math.min(waitMs, 20)));
      return queue.splice(0, max);
    },
    close: () => Promise.resolve(),
  };
  const commitLog: CommitLog = { maxPayload: 1024 * 1024, append: () => Promise.resolve(), open: () => Promise.resolve(reader), purge: () => Promise.resolve() };
  const ingestLog: IngestLog = { liveStream: () => Promise.resolve({ identity: "S#1", firstSeq: 1, lastSeq: 1 }), streamIdentity: () => Promise.resolve("S#1"), openBucket: () => Promise.reject(new Error("unused")), purgeBucket: () => Promise.resolve() };
  const grant: LeaseGrant = { token: "x", fencingEpoch: 1, acquiredAtMono: performance.now() };
  let acquired = false;
  const lease: Lease = {
    tryAcquire: () => Promise.resolve(acquired ? null : ((acquired = true), grant)),
    renew: () => Promise.resolve(true),
    release: () => Promise.resolve(),
    validUntil: () => performance.now() + 60_000,
    ttlMs: 60_000,
  };
  system.spawn(
    "committer",
    () =>
      new CommitterActor({
        table,
        nodeId: "n2",
        lease,
        keeper: () => ({ isValid: () => true, stop: () => {}, stats: () => ({ renewLagMsMax: 0, renewLagMsLast: 0, renewals: 0, failures: 0 }) }),
        commitLog,
        ingestLog,
        bus,
        // A leader of epoch 4 wrote the stored assignment but committed nothing (the chain's newest epoch is 1).
        assignments: { ownerEpochOf: () => 1, storedLeaderEpoch: () => Promise.resolve(4) },
        clock: systemClock,
        meter: metrics.getMeter("test"),
        commitIntervalMs: 40,
        acquireIntervalMs: 10,
        ...(o.onBacklogDecided !== undefined ? { onBacklogDecided: o.onBacklogDecided } : {}),
      }),
  );
  return { published, queue };
}

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("committer - a new leader announces the snapshots an earlier leader linked but never announced, then its own, in order", async () => {
  const dir = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(dir.path, "t.events", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
    // An earlier leader (epoch 1) linked snapshots 1..3 and announced only snapshot 1.
    const earlier = new StreamCommitter<Committable>(table, { commitUser: "natslake-t.events", epoch: 1, stillLeader: () => true, ownerEpochOf: () => 1 });
    for (let i = 0; i < 3; i++) assert.ok((await earlier.commitRound([committable(i * 10, i * 10 + 10)])).snapshot);

    const { published, queue } = startCommitter(system, table);
    // Idle: the first round announces 2 and 3 (an idle table's last snapshot must be announced: read-your-writes).
    await until("snapshots 2 and 3 announced", () => published.length >= 2);
    assert.deepEqual(
      published.map((n) => n.snapshotId),
      [2, 3],
    );
    assert.equal(published[1]!.epoch, 1, "rebuilt from the snapshot: the epoch that committed it");
    assert.deepEqual(published[1]!.offsets, { "0": 30 });
    // Then its own commit: snapshot 4, after them.
    queue.push({ seq: 1, committable: committable(30, 40) });
    await until("snapshot 4 announced", () => published.length >= 3);
    assert.deepEqual(
      published.map((n) => n.snapshotId),
      [2, 3, 4],
    );
    assert.equal(published[2]!.epoch, 5, "above Redis's counter (1), the chain's epoch (1) and the stored assignment's (4)");
    assert.deepEqual(published[2]!.offsets, { "0": 40 });
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
