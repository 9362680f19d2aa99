/**
 * A writer whose committable landed but whose flush then failed (failpoint after the append) resumes from the
 * committed offset: its next committable overlaps the one that landed, the committer rejects it (broken prevOffset
 * chain), tells the writer, and the writer recovers from the committed offset. No row is lost or doubled.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startCluster, waitFor, type TestCluster } from "../helpers/cluster.ts";
import { startLoad, verifyExactlyOnce } from "../helpers/load.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { createProducer } from "../../cluster/producer.ts";

let c: TestCluster;
before(async () => {
  // A slow commit interval leaves the landed committable uncommitted while the writer reopens: its next committable
  // then overlaps the landed one, which is the broken chain this test is about.
  c = await startCluster({ nodes: 1, commitInterval: "1s", env: { FAILPOINTS: "writer.after-committable:throw@3" } });
});
after(async () => {
  await c.stop();
});

test("recovery - a broken offset chain is rejected and the writer resumes from the committed offset", { timeout: 120_000 }, async () => {
  const catalog = new Catalog(c.warehouse);
  await catalog.createTable(parseIdentifier("r.chain"), { columns: parseColumnList("id BIGINT NOT NULL, src STRING, n INT"), options: { bucket: "2", "bucket-key": "id" } });
  await waitFor("table registered", async () => {
    try {
      return await createProducer({ nc: c.nc, table: "r.chain" });
    } catch {
      return undefined;
    }
  }, 30_000, 200);
  const load = startLoad({ nc: c.nc, table: "r.chain", ratePerSec: 5_000, durationMs: 4000 });
  await load.done;
  await load.waitVisible(60_000).catch((e: unknown) => {
    // The node's last log lines say where it stopped.
    console.error(c.logs("n1").split("\n").filter((l) => !l.includes("heartbeat")).slice(-80).join("\n"));
    throw e;
  });
  const logs = c.logs("n1");
  assert.match(logs, /failpoint writer\.after-committable|flush failed/, "the failpoint fired");
  const rejected = logs.split("\n").filter((l) => l.includes('"reason":"broken-offset-chain"') && l.includes("committable rejected; resuming from the committed offset"));
  assert.ok(rejected.length >= 1, "the overlapping committable was rejected and the writer told");
  const resumedFrom = JSON.parse(rejected[0]!) as { committedOffset: number };
  assert.match(logs, new RegExp(`"from":${resumedFrom.committedOffset},"msg":"bucket opened"`), "the writer reopened at the committed offset");
  const r = await verifyExactlyOnce(await catalog.getTable(parseIdentifier("r.chain")), load.outcomes);
  assert.deepEqual(r.lost, []);
  assert.deepEqual(r.duplicated, []);
  assert.ok(r.acked >= 10_000);
});
