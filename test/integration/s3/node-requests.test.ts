/**
 * What a node on an S3 warehouse (SeaweedFS, real) asks of the store, from its own `/metrics`:
 * `natslake_s3_requests_total{type}` grows with the work it does, and an idle node LISTs only for its periodic table
 * scan — one listing of the warehouse and one of the database every 2 s (`Node.scanTables`), a running table costing
 * one HEAD, no LIST — while the leader adds its periodic tasks' listings (consumer lag every 5 s, table statistics
 * every 10 s). Bounds are counts per window from the timers' periods, so a slow machine (timers firing late) only
 * lowers them.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { freePort } from "../../../cluster/local/servers.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { parseColumnList } from "../../../src/spec/data-types.ts";
import { countsSince } from "../../../src/io/s3-requests.ts";
import { scrapeS3Requests } from "../../helpers/node-metrics.ts";
import { startS3Store, type S3TestStore } from "../../helpers/s3.ts";

let store: S3TestStore;
before(async () => {
  store = await startS3Store();
});
after(async () => {
  await store?.stop();
});

const ready = async (port: number): Promise<boolean | undefined> => {
  const r = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(5000) }).catch(() => null);
  return r?.status === 200 ? true : undefined;
};

test("node on S3 - natslake_s3_requests_total{type} counts the node's requests; idle, LISTs come only from the table scan (2 per 2 s) and the leader's periodic tasks", { timeout: 240_000 }, async (t) => {
  const uri = store.uri(`metrics-${randomBytes(4).toString("hex")}`);
  const c: TestCluster = await startCluster({ nodes: 0, warehouse: uri, commitInterval: "250ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const [leaderPort, writerPort] = [await freePort(), await freePort()];
      c.startNode("n1", ["--metrics-port", String(leaderPort)]);
      await waitFor("n1 ready", () => ready(leaderPort), 90_000, 250);
      c.startNode("n2", ["--roles", "writer", "--metrics-port", String(writerPort)]);
      await waitFor("n2 ready", () => ready(writerPort), 90_000, 250);
      const start = { n1: await scrapeS3Requests(leaderPort), n2: await scrapeS3Requests(writerPort) };
      // The start-up probe (two conditional puts of one object, its read-back and delete) ran on both.
      for (const s of Object.values(start)) assert.ok(s.PUT >= 2 && s.DELETE >= 1, JSON.stringify(start));

      await new Catalog(uri).createTable(parseIdentifier("m.events"), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "2", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, "m.events", 60_000);
      // Both writers own a bucket before the rows go out, so both write data files.
      await waitFor("a bucket on each writer", async () => {
        const { Kvm } = await import("@nats-io/kv");
        const e = await (await new Kvm(c.nc).open("lake_assign")).get("m.events");
        const a = e?.operation === "PUT" ? (e.json() as { buckets: Record<string, { node: string; state: string }> }) : null;
        const owners = new Set(Object.values(a?.buckets ?? {}).filter((b) => b.state === "active").map((b) => b.node));
        return owners.size === 2 ? true : undefined;
      }, 60_000, 250);
      for (let i = 0; i < 2000; i++) void producer.write({ id: i, s: `r${i}` });
      await producer.flush();
      await producer.waitVisible(producer.token(), 120_000);
      await producer.close();
      const worked = { n1: countsSince(start.n1, await scrapeS3Requests(leaderPort)), n2: countsSince(start.n2, await scrapeS3Requests(writerPort)) };
      t.diagnostic(`requests while creating the table and committing 2000 rows: n1 (leader) ${JSON.stringify(worked.n1)}; n2 (writer) ${JSON.stringify(worked.n2)}`);
      // The leader wrote manifests, manifest lists and snapshots; the writer its data files.
      assert.ok(worked.n1.PUT >= 4, JSON.stringify(worked.n1));
      assert.ok(worked.n2.PUT >= 1, JSON.stringify(worked.n2));

      // Idle: no rows arrive, so no flush and no commit; what is left is periodic.
      await new Promise((r) => setTimeout(r, 3000));
      const a = { n1: await scrapeS3Requests(leaderPort), n2: await scrapeS3Requests(writerPort), at: Date.now() };
      await new Promise((r) => setTimeout(r, 12_000));
      const b = { n1: await scrapeS3Requests(leaderPort), n2: await scrapeS3Requests(writerPort), at: Date.now() };
      const secs = (b.at - a.at) / 1000;
      const idle = { n1: countsSince(a.n1, b.n1), n2: countsSince(a.n2, b.n2) };
      t.diagnostic(`idle ${secs.toFixed(1)} s: n1 (leader) ${JSON.stringify(idle.n1)} = ${(idle.n1.LIST / secs).toFixed(2)} LIST/s; n2 (writer) ${JSON.stringify(idle.n2)} = ${(idle.n2.LIST / secs).toFixed(2)} LIST/s`);
      const every = (ms: number): number => Math.floor((secs * 1000) / ms) + 1; // firings of a timer in the window, at most
      assert.ok(idle.n2.LIST >= 2, `the writer's table scan ran: ${JSON.stringify(idle.n2)}`);
      assert.ok(idle.n2.LIST <= 2 * every(2000), `the writer LISTs only for its scan (2 per scan): ${idle.n2.LIST} in ${secs.toFixed(1)} s`);
      assert.ok(idle.n1.LIST <= 2 * every(2000) + every(5000) + every(10_000), `the leader: its scan, consumer lag (1 LIST / 5 s), table statistics (1 LIST / 10 s): ${idle.n1.LIST} in ${secs.toFixed(1)} s`);
      assert.equal(idle.n2.PUT + idle.n2.DELETE, 0, `an idle writer writes nothing: ${JSON.stringify(idle.n2)}`);
    });
  } finally {
    await c.stop();
  }
});
