/**
 * The leader's round waits for the rest of a beat (actors/beat-gather.ts): the buckets that flushed on the previous
 * beat, at most a fifth of the commit interval, so a beat's committables land as one snapshot.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { BeatGather, gatherWindowMs } from "../../../actors/beat-gather.ts";
import { flushBeat } from "../../../actors/writer.ts";
import { ActorSystem, noopLogger } from "../../../actors/runtime/index.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";
import { committable, startCommitter, until } from "../../helpers/committer-harness.ts";

const append = (bucket: number, beatMillis?: number) => ({ bucket, compaction: false, beatMillis });

test("beat gather - waits for the buckets that flushed on the previous beat, and only for them", () => {
  const g = new BeatGather(250);
  assert.deepEqual(g.awaited([append(0, 1000)]), [], "a new leadership knows no beats: nothing to wait for");
  g.decided([append(0, 1000), append(1, 1000), append(2, 750)]);
  assert.deepEqual(g.awaited([append(0, 1250)]), [1], "bucket 1 flushed on 1000; bucket 2 (last on 750) was idle then");
  assert.deepEqual(g.awaited([append(0, 1250), append(1, 1250)]), [], "the beat is whole");
  assert.deepEqual(g.awaited([append(0, 1250), append(1, 1000)]), [1], "an older beat's committable is not this beat's");
  assert.deepEqual(g.awaited([append(0, 1500)]), [], "two beats on: nobody flushed on 1250, nothing to wait for");
  assert.deepEqual(g.awaited([append(0), append(1)]), [], "early flushes (no beat) never wait");
  assert.deepEqual(g.awaited([{ bucket: 0, compaction: true }]), [], "compactions alone: no beat");
  g.decided([append(1)]);
  assert.deepEqual(g.awaited([append(0, 1250)]), [1], "an early flush does not change a bucket's last beat");
  g.decided([append(0, 1250), { bucket: 1, compaction: true }]);
  assert.deepEqual(g.awaited([append(1, 1500)]), [0], "only appends record beats");
});

test("beat gather - only compactions pending, and the window", () => {
  assert.equal(BeatGather.onlyCompactions([{ bucket: 0, compaction: true }, { bucket: 3, compaction: true }]), true);
  assert.equal(BeatGather.onlyCompactions([{ bucket: 0, compaction: true }, append(1, 250)]), false);
  assert.equal(BeatGather.onlyCompactions([]), false);
  assert.equal(gatherWindowMs(250), 50);
  assert.equal(gatherWindowMs(100), 20);
  assert.equal(gatherWindowMs(10), 5, "at least 5 ms");
});

test("beat gather - a tick's beat is the nearest multiple of the interval", () => {
  assert.equal(flushBeat(1_000_003, 250), 1_000_000, "a timer 3 ms late");
  assert.equal(flushBeat(999_999, 250), 1_000_000, "a timer 1 ms early");
  assert.equal(flushBeat(1_000_000, 250), 1_000_000);
});

test("committer - a beat's committables that arrive apart land as one snapshot; a missing bucket delays it at most the window", async () => {
  const dir = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(dir.path, "t.events", "id BIGINT NOT NULL", { options: { bucket: "2", "bucket-key": "id" } });
    // A 1 s interval: a 200 ms window, so the 40 ms gaps below stay inside it on a loaded machine.
    const intervalMs = 1000;
    const { published, queue } = startCommitter(system, table, { commitIntervalMs: intervalMs });
    const beat = 1_000_000 * intervalMs;
    let seq = 0;
    const push = (bucket: number, prev: number, last: number, beatMillis?: number): void => {
      queue.push({ seq: ++seq, committable: committable(prev, last, { bucket, ...(beatMillis !== undefined ? { beatMillis } : {}) }) });
    };
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const snapshotsAfter = async (id: number) => ((await table.snapshots.latestId()) ?? 0) - id;

    // Beat 1: both buckets at once (the leader learns who flushes on the beat).
    push(0, 0, 10, beat);
    push(1, 0, 10, beat);
    await until("beat 1 committed", () => published.some((n) => n.offsets["1"] === 10));
    const afterBeat1 = (await table.snapshots.latestId())!;

    // Beat 2: bucket 1's committable 40 ms after bucket 0's — one snapshot holds both.
    push(0, 10, 20, beat + intervalMs);
    await sleep(40);
    push(1, 10, 20, beat + intervalMs);
    await until("beat 2 committed", () => published.some((n) => n.offsets["1"] === 20));
    assert.equal(await snapshotsAfter(afterBeat1), 1, "one snapshot for the beat");
    const beat2 = published.find((n) => n.offsets["1"] === 20)!;
    assert.deepEqual(beat2.offsets, { "0": 20, "1": 20 });

    // Beat 3: bucket 1 has nothing. Bucket 0's committable lands after at most the window (and some slack).
    const afterBeat2 = (await table.snapshots.latestId())!;
    const t3 = Date.now();
    push(0, 20, 30, beat + 2 * intervalMs);
    await until("beat 3 committed", () => published.some((n) => n.offsets["0"] === 30));
    const waited = Date.now() - t3;
    assert.ok(waited >= gatherWindowMs(intervalMs) - 25, `it waited the window for bucket 1 (${waited} ms)`);
    assert.ok(waited < 5000, `but not much longer (${waited} ms)`);
    assert.equal(await snapshotsAfter(afterBeat2), 1);

    // Beat 4: bucket 1 was idle on beat 3, so bucket 0 alone is not held back.
    const t4 = Date.now();
    push(0, 30, 40, beat + 3 * intervalMs);
    await until("beat 4 committed", () => published.some((n) => n.offsets["0"] === 40));
    assert.ok(Date.now() - t4 < gatherWindowMs(intervalMs) + 1000, "committed without waiting for bucket 1");

    // Early flushes (a full buffer: no beat) are never held back: 150 ms apart, two snapshots.
    const afterBeat4 = (await table.snapshots.latestId())!;
    push(0, 40, 50);
    await until("the first early flush committed", () => published.some((n) => n.offsets["0"] === 50));
    await sleep(150);
    push(1, 20, 30);
    await until("the second early flush committed", () => published.some((n) => n.offsets["1"] === 30));
    assert.equal(await snapshotsAfter(afterBeat4), 2);
  } finally {
    await system.shutdown();
    dir.cleanup();
  }
});
