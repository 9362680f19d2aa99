/**
 * A writer hears at once when the leader rejects its compaction (a `compaction-rejection` on the writer's
 * `<p>.ctl.reject.<db>.<table>.<writer>` subject, actors/wire/messages.ts): the node's first writer compaction is held
 * before it is sent (failpoint `writer.compaction-before-send:sleep(HOLD_MS)@1`) while the table's leader compacts
 * the bucket fully (the maintenance request `natslake compact --full --nats` sends), taking that job's inputs. Sent
 * after, the job is rejected (`inputs-gone`); the writer logs the rejection and sends its next job, planned on the
 * committed levels, within a second or so — not after LSM_IN_FLIGHT_MS — and the leader lands it: no other job of
 * the writer is rejected. The table then equals the model of every change and is a valid LSM tree.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { liveBucketLevels } from "../../src/maintenance/bucket-levels.ts";
import { readJson, reopen, sortRows } from "../helpers/tables.ts";
import { requestMaintenance } from "../../cluster/maintenance-client.ts";
import { LSM_IN_FLIGHT_MS } from "../../actors/lsm-compaction.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import type { CompactSummary } from "../../src/maintenance/compact-summary.ts";

const NAME = "rj.keys";
const HOLD_MS = 10_000;
type R = Record<string, unknown>;

/** The node's log lines (JSON) whose message starts with `msg`. */
function logLines(c: TestCluster, node: string, msg: string): R[] {
  return c
    .logs(node)
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as R)
    .filter((r) => String(r["msg"]).startsWith(msg));
}

test("cluster PK compaction rejected - the writer is told at once, and its next job, planned on the committed levels, lands", { timeout: 240_000 }, async (tc) => {
  const c = await startCluster({ nodes: 0, commitInterval: "200ms" });
  try {
    c.startNode("n1", [], { FAILPOINTS: `writer.compaction-before-send:sleep(${HOLD_MS})@1` });
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      // A stop trigger the held job does not reach: the bucket goes on flushing level-0 runs meanwhile.
      await catalog.createTable(parseIdentifier(NAME), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), primaryKeys: ["id"], options: { bucket: "1", "num-sorted-run.compaction-trigger": "3", "num-sorted-run.stop-trigger": "200" } });
      const p = await producerWhenRegistered(c.nc, NAME);
      const model = new Map<number, R>();
      let x = 5;
      const rnd = (m: number): number => ((x = (x * 1103515245 + 12345) % 2 ** 31), x % m);
      // Upserts keep coming (30 rows every 100 ms, 40 s at most) while the test watches.
      let writing = true;
      let n = 0;
      const writer = (async () => {
        const until = Date.now() + 40_000;
        while (writing && Date.now() < until) {
          const rows = Array.from({ length: 30 }, () => ({ id: rnd(300), s: `v${n++}` }));
          void p.upsert(rows);
          for (const r of rows) model.set(r.id, r);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();

      // The writer plans its first job once the bucket has 3 runs, rewrites it, and holds it before sending.
      let t = await catalog.getTable(parseIdentifier(NAME));
      await waitFor("3 sorted runs in the bucket", async () => ((await liveBucketLevels(t))[0]?.levels.numberOfSortedRuns() ?? 0) >= 3 || undefined, 60_000, 100);
      await new Promise((r) => setTimeout(r, 2000));
      const out = await requestMaintenance(c.nc, { type: "maintenance", v: 1, task: "compact", table: NAME, options: { full: true } }, { prefix: "lake", acceptTimeoutMs: 10_000, silenceTimeoutMs: 60_000 });
      const leaderCompaction = (out.result as CompactSummary).snapshotId;
      assert.ok(leaderCompaction !== null, "the leader compacted the bucket");
      assert.equal(logLines(c, "n1", "compaction rejected by the leader").length, 0, "the writer's job is still held");

      // Sent after the hold: rejected, and the writer is told.
      const rejected = await waitFor("the writer told of its rejected compaction", async () => logLines(c, "n1", "compaction rejected by the leader")[0], HOLD_MS + 20_000, 100);
      assert.equal(rejected["reason"], "inputs-gone", JSON.stringify(rejected));
      const leaderSaw = logLines(c, "n1", "compaction rejected; its outputs were deleted");
      assert.deepEqual(leaderSaw.map((r) => r["compactionId"]), [rejected["compactionId"]], "the leader rejected that job");
      const next = await waitFor("the writer's next job sent", async () => logLines(c, "n1", "compaction sent, planned again after a rejection")[0], 30_000, 100);
      const afterMs = Number(next["time"]) - Number(rejected["time"]);
      tc.diagnostic(`rejected ${String(rejected["compactionId"])} (${String(rejected["detail"])}); the next job sent ${afterMs} ms after, planned on snapshot ${String(next["planSnapshotId"])}`);
      assert.ok(afterMs < LSM_IN_FLIGHT_MS / 3, `the next job was sent ${afterMs} ms after the rejection (the in-flight fallback is ${LSM_IN_FLIGHT_MS} ms)`);
      assert.ok(Number(next["planSnapshotId"]) >= leaderCompaction, `planned on a snapshot with the leader's compaction (${next["planSnapshotId"]} >= ${leaderCompaction})`);

      writing = false;
      await writer;
      await p.flush();
      await p.waitVisible(p.token(), 60_000);
      await p.close();
      // The writer's later jobs (the next one included) land: the leader rejected only the held one.
      await waitFor("the writer's compactions caught up", async () => ((await liveBucketLevels(await reopen(c.warehouse, NAME)))[0]?.levels.numberOfSortedRuns() ?? 99) < 3 || undefined, 60_000, 250);
      assert.deepEqual(logLines(c, "n1", "compaction rejected; its outputs were deleted").map((r) => r["compactionId"]), [rejected["compactionId"]], "no other job of the writer was rejected");
      t = await reopen(c.warehouse, NAME);
      await liveBucketLevels(t); // throws when a level >= 1 overlaps
      const norm = (rows: R[]): R[] => sortRows(rows.map((r) => ({ ...r, id: Number(r["id"]) })));
      assert.deepEqual(norm(await readJson(t)), sortRows([...model.values()]), "the table is the model");
    });
  } finally {
    await c.stop();
  }
});
