/**
 * A coordinator whose round outlives its leadership cannot replace its successor's bucket assignment.
 *
 * The interleaving (seen once in the leader-pause test, where a bucket was then left without a writer): the leader's
 * coordinator computes a rebalance, the leader freezes past its lease, another node becomes leader and writes its
 * assignment, the old leader resumes and steps down — and the old round, still in flight, writes its assignment last.
 * Here the failpoint `coordinator.before-write:sleep` holds that round open while the test freezes the leader.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Kvm } from "@nats-io/kv";
import { startCluster, waitFor, withNodeLogsOnFailure, producerWhenRegistered } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import type { TableAssignment } from "../../actors/wire/messages.ts";

const ROUND_PAUSE_MS = 9000;

test("stale coordinator - a round that outlives its leadership is fenced; the new leader's assignment stands and every bucket has a writer", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 0 });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      const id = parseIdentifier("it.stale");
      await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "4", "bucket-key": "id" } });
      const kv = await new Kvm(c.nc).open("lake_assign");
      const key = new Subjects().tableKey(id);
      const stored = async (): Promise<TableAssignment | null> => {
        const e = await kv.get(key);
        return e && e.operation === "PUT" ? (e.json<TableAssignment>()) : null;
      };

      // n1 leads alone; its second assignment write (the rebalance when n2 joins) pauses before writing.
      c.startNode("n1", [], { FAILPOINTS: `coordinator.before-write:sleep(${ROUND_PAUSE_MS})@2` });
      await waitFor("n1's first assignment", async () => ((await stored())?.leader === "n1" ? true : undefined), 60_000, 100);
      c.startNode("n2");
      await waitFor("n1's rebalance round, paused before its write", () => (/bucket revoked for hand-off/.test(c.logs("n1")) ? true : undefined), 60_000, 50);
      const pausedAt = Date.now();

      // Freeze n1 past its 2 s lease: n2 becomes leader and writes its own assignment.
      c.signal("n1", "SIGSTOP");
      const successor = await waitFor("n2's assignment", async () => {
        const a = await stored();
        return a?.leader === "n2" ? a : undefined;
      }, 15_000, 100);
      c.signal("n1", "SIGCONT");

      // n1 steps down; its paused round then tries to write, and is refused.
      await waitFor("n1's stale round fenced", () => (/coordinator fenced by a newer leader/.test(c.logs("n1")) ? true : undefined), ROUND_PAUSE_MS + 20_000, 100);
      assert.ok(Date.now() - pausedAt >= ROUND_PAUSE_MS - 500, "the round was held open by the failpoint");
      assert.match(c.logs("n1"), /"msg":"stepped down"/);
      const after = (await stored())!;
      assert.equal(after.leader, "n2", "the new leader's assignment stands");
      assert.ok(after.leaderEpoch >= successor.leaderEpoch && after.leaderEpoch > 1);

      // Every bucket has a writer: rows published now become visible.
      const producer = await producerWhenRegistered(c.nc, "it.stale", 60_000);
      const pending = Array.from({ length: 2000 }, (_, i) => producer.write({ id: i }));
      await producer.flush();
      assert.equal((await Promise.all(pending)).filter((o) => o.status !== "ok").length, 0);
      await producer.waitVisible(producer.token(), 60_000);
      await producer.close();
      assert.equal((await (await catalog.getTable(id)).snapshots.latest())!.totalRecordCount, 2000);
    });
  } finally {
    await c.stop();
  }
});
