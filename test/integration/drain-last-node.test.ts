/**
 * The last node of a cluster (or every node of a cluster that stops at once) drains too: no other node takes its
 * buckets, yet its writers flush, their last committables are committed before it exits, and it exits 0 within the
 * drain timeout. Before, the coordinator revoked a draining node's buckets only when another node accepted them, so
 * the drain waited out its timeout ("drain timed out with buckets still owned") and stopped with the acknowledged
 * rows still uncommitted.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readRows } from "../../src/scan/read.ts";

test("drain - the last node flushes and commits what was acknowledged before it exits, within the drain timeout", { timeout: 120_000 }, async () => {
  // A long commit interval: the rows are still buffered in the writers when the node is told to stop.
  const c = await startCluster({ nodes: 1, commitInterval: "20s" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "it.lastnode";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "2", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, name);
      // Its writers own both buckets before the rows arrive (a SIGTERM before any assignment drains nothing).
      await waitFor("both buckets opened", () => ((c.logs("n1").match(/"msg":"bucket opened"/g) ?? []).length >= 2 ? true : undefined), 30_000, 100);
      const outcomes = await Promise.all(Array.from({ length: 1000 }, (_, i) => producer.write({ id: i })));
      assert.equal(outcomes.filter((o) => o.status !== "ok").length, 0);
      await producer.close();
      // The writers read what is in their buckets within milliseconds; what a writer had not read yet when revoked
      // would stay in the stream (not lost) for the next start, which this test does not make.
      await new Promise((r) => setTimeout(r, 1500));
      const termAt = Date.now();
      c.signal("n1", "SIGTERM");
      const code = await c.waitExit("n1", 40_000);
      assert.equal(code, 0);
      assert.ok(Date.now() - termAt < 15_000, `drained in ${Date.now() - termAt} ms`);
      assert.doesNotMatch(c.logs("n1"), /drain timed out/);
      assert.match(c.logs("n1"), /bucket revoked: its owner drains and no node takes buckets/);
      const ids: number[] = [];
      for await (const r of readRows(await catalog.getTable(parseIdentifier(name)))) ids.push(Number(r["id"]));
      assert.deepEqual(ids.sort((a, b) => a - b), Array.from({ length: 1000 }, (_, i) => i), "every acknowledged row committed at exit");
    });
  } finally {
    await c.stop();
  }
});
