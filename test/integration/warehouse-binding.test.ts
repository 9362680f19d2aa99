/**
 * One cluster, one warehouse (cluster/nats/warehouse-binding.ts): the first node binds its prefix on the NATS to its
 * warehouse; a node, or `natslake up --nats`, given another warehouse on the same prefix is refused with both named,
 * while another prefix, or the same warehouse spelled another way, is not.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { startNats } from "../helpers/servers.ts";
import { killSeen, startUp } from "../helpers/up-process.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { ensureClusterKv } from "../../cluster/nats/table-infra.ts";
import { bindWarehouse, readWarehouseBinding, warehouseIdentity } from "../../cluster/nats/warehouse-binding.ts";
import { isLakeError } from "../../src/errors.ts";

test("warehouse binding - a warehouse is named by where it is, not by how it is spelled or reached", () => {
  assert.equal(warehouseIdentity("/data/wh/"), "file:///data/wh");
  assert.equal(warehouseIdentity("file:///data/wh"), "file:///data/wh");
  assert.equal(warehouseIdentity("/data/x/../wh"), "file:///data/wh");
  assert.equal(warehouseIdentity("s3://lake/wh?endpoint=http://127.0.0.1:8333&region=eu-west-1"), "s3://lake/wh");
  assert.equal(warehouseIdentity("s3a://lake/wh/"), "s3://lake/wh");
  assert.notEqual(warehouseIdentity("s3://lake/wh"), warehouseIdentity("s3://lake/wh2"));
});

test("warehouse binding - the first node binds; one race winner among many; another warehouse refused naming both; another prefix free", { timeout: 60_000 }, async () => {
  const nats = await startNats();
  const nc = await connect({ servers: nats.url });
  try {
    const lake = new Subjects("lake");
    await ensureClusterKv(nc, lake, 1);
    assert.equal(await readWarehouseBinding(nc, lake), null, "nothing bound before a node starts");
    // Eight nodes of eight warehouses start at once: exactly one binds, the others are refused by its binding.
    const tries = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => bindWarehouse(nc, lake, { warehouse: `/wh/${i}`, nodeId: `n${i}` })));
    const won = tries.flatMap((t, i) => (t.status === "fulfilled" ? [i] : []));
    assert.equal(won.length, 1, JSON.stringify(tries.map((t) => t.status)));
    const first = tries[won[0]!]!;
    assert.equal(first.status === "fulfilled" && first.value.created, true, "the winner wrote the binding");
    const winner = won[0]!;
    const bound = await readWarehouseBinding(nc, lake);
    assert.deepEqual({ warehouse: bound?.warehouse, boundBy: bound?.boundBy }, { warehouse: `file:///wh/${winner}`, boundBy: `n${winner}` });
    for (const t of tries) {
      if (t.status === "fulfilled") continue;
      assert.ok(isLakeError(t.reason, "DataInvalid"), String(t.reason));
      assert.match(t.reason.message, new RegExp(`prefix 'lake' on this NATS serves the warehouse file:///wh/${winner} \\(bound by node n${winner} at .*\\), and this node was given file:///wh/\\d`));
      assert.match(t.reason.message, /give it a prefix of its own \(--prefix\).*nats kv del lake_tables _natslake\.cluster\.warehouse/);
    }
    // The same warehouse, spelled another way, joins; the binding stays the first node's.
    const again = await bindWarehouse(nc, lake, { warehouse: `file:///wh/${winner}/`, nodeId: "late" });
    assert.deepEqual({ boundBy: again.binding.boundBy, created: again.created }, { boundBy: `n${winner}`, created: false });
    // The winner restarting finds its own binding: not bound again (its log says "bound" only the first time).
    const restarted = await bindWarehouse(nc, lake, { warehouse: `/wh/${winner}`, nodeId: `n${winner}` });
    assert.deepEqual({ boundBy: restarted.binding.boundBy, created: restarted.created }, { boundBy: `n${winner}`, created: false });
    // Another prefix is another cluster.
    const other = new Subjects("other");
    await ensureClusterKv(nc, other, 1);
    assert.equal((await bindWarehouse(nc, other, { warehouse: "/wh/elsewhere", nodeId: "o1" })).binding.warehouse, "file:///wh/elsewhere");
  } finally {
    await nc.close();
    await nats.stop();
  }
});

test("warehouse binding - a node given another warehouse than its cluster's exits at start, naming both; `up --nats` refuses before starting a node", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 1 });
  const elsewhere = mkdtempSync(join(tmpdir(), "natslake-elsewhere-"));
  try {
    await withNodeLogsOnFailure(c, async () => {
      await waitFor("n1 started", () => (/"msg":"node started"/.test(c.logs("n1")) ? true : undefined), 60_000);
      assert.match(c.logs("n1"), /"msg":"cluster bound to its warehouse"/);
      // The same warehouse spelled as a URI joins.
      c.startNode("n2", ["--warehouse", `file://${c.warehouse}`]);
      await waitFor("n2 started", () => (/"msg":"node started"/.test(c.logs("n2")) ? true : undefined), 60_000);
      // Another warehouse: refused before it joins — never a member, so never given a bucket.
      c.startNode("n3", ["--warehouse", elsewhere]);
      const code = await c.waitExit("n3", 60_000);
      assert.notEqual(code, 0);
      assert.notEqual(code, null, "n3 exited by itself");
      assert.match(c.logs("n3"), new RegExp(`serves the warehouse file://${c.warehouse} \\(bound by node n1 .*this node was given file://${elsewhere}`));
      assert.doesNotMatch(c.logs("n3"), /"msg":"node started"/);

      const up = startUp(["--nats", c.nats.url, "--redis", c.redis.url, "--warehouse", elsewhere, "--nodes", "1", "--duration", "30"]);
      const exit = await up.exited;
      assert.notEqual(exit.code, 0, up.out() + up.err());
      assert.match(up.err(), new RegExp(`already runs a natslake cluster \\(prefix 'lake'\\) on the warehouse file://${c.warehouse}, not file://${elsewhere}`));
      assert.match(up.err(), new RegExp(`natslake up --nats ${c.nats.url.replace(/[.]/g, "\\.")} --warehouse ${c.warehouse}\` joins it`));
      assert.doesNotMatch(up.out(), /node-1 \(pid/, "no node was started");
    });
  } finally {
    killSeen();
    await c.stop();
    rmSync(elsewhere, { recursive: true, force: true });
  }
});
