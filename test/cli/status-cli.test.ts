/**
 * `natslake status` against a live cluster: members and roles, each table's leader and epoch, bucket assignments with
 * owner epochs and pending messages, the latest snapshot, live files and consumer lag; a killed node disappears from
 * the member list within the member timeout; a cluster that cannot be reached is an error, exit 1.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { writeConsumer } from "../../src/table/consumers.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const status = (args: string[]) => spawnSync(process.execPath, [BIN, "status", ...args], { encoding: "utf8", timeout: 60_000 });

test("status - members, leader, buckets, snapshots, files and consumer lag; a killed node disappears within the member timeout", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 2, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "st.t";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "2", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, name);
      for (let i = 0; i < 40; i++) void producer.write({ id: i });
      await producer.flush();
      await producer.waitVisible(producer.token(), 30_000);
      await producer.close();
      await writeConsumer(await catalog.getTable(parseIdentifier(name)), "audit", 1);
      const r = status(["--nats", c.nats.url, "--warehouse", c.warehouse, "--json"]);
      assert.equal(r.status, 0, r.stderr);
      const s = JSON.parse(r.stdout) as { members: Array<{ node: string; live: boolean; roles: string[] }>; tables: Array<{ table: string; leader: string; leaderEpoch: number; buckets: Array<{ bucket: number; node: string; ownerEpoch: number; pendingMessages: number }>; latestSnapshot: number; liveFiles: number; consumers: Array<{ id: string; snapshotsBehind: number }> }> };
      assert.deepEqual(s.members.filter((m) => m.live).map((m) => m.node).sort(), ["n1", "n2"]);
      assert.deepEqual(s.members[0]!.roles, ["writer", "committer", "reader"]);
      const t = s.tables.find((x) => x.table === name)!;
      assert.ok(["n1", "n2"].includes(t.leader) && t.leaderEpoch >= 1, `leader ${t.leader} at epoch ${t.leaderEpoch}`);
      assert.deepEqual(t.buckets.map((b) => b.bucket), [0, 1]);
      for (const b of t.buckets) assert.ok(["n1", "n2"].includes(b.node) && b.ownerEpoch >= 1 && b.pendingMessages >= 0);
      assert.ok(t.latestSnapshot >= 1 && t.liveFiles >= 1);
      assert.equal(t.consumers[0]!.id, "audit");
      assert.ok(t.consumers[0]!.snapshotsBehind >= 1);
      const text = status(["--nats", c.nats.url]);
      assert.equal(text.status, 0, text.stderr);
      assert.match(text.stdout, new RegExp(`${name.replace(".", "\\.")}: leader n[12] \\(epoch \\d+\\)`));
      c.signal("n2", "SIGKILL");
      await waitFor("n2 gone from status", async () => {
        const again = status(["--nats", c.nats.url]);
        return /\(gone: n2, last heartbeat/.test(again.stdout) && !/^\s*n2\s/m.test(again.stdout) ? true : undefined;
      }, 15_000, 500);
      // A prefix no node runs with (or a NATS without natslake): said so, not as JetStream's error with a stack.
      const none = status(["--nats", c.nats.url, "--prefix", "nolake"]);
      assert.equal(none.status, 1, none.stderr);
      assert.match(none.stderr, /^error: no natslake cluster with prefix 'nolake' at nats:\/\/127\.0\.0\.1:\d+: its KV bucket 'nolake_members' does not exist .*check --nats and --prefix\)\n$/);
    }, 40);
  } finally {
    await c.stop();
  }
  const down = status(["--nats", "nats://127.0.0.1:1"]);
  assert.equal(down.status, 1);
  assert.match(down.stderr, /cannot reach NATS at nats:\/\/127\.0\.0\.1:1/);
});
