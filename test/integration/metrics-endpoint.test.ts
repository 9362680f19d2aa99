/**
 * A node's operator endpoint (`--metrics-port`): `/metrics` in Prometheus text format through the OpenTelemetry
 * SDK carries the node's instruments (commits, rows in, consumer lag by consumer), `/healthz` answers, and `/readyz`
 * turns 503 with the reason while the node's NATS server is frozen, and 200 again after.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { freePort } from "../../cluster/local/servers.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { writeConsumer } from "../../src/table/consumers.ts";

const get = async (url: string): Promise<{ status: number; body: string }> => {
  const r = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: r.status, body: await r.text() };
};

test("metrics endpoint - /metrics (Prometheus) with commits, rows and consumer lag; /healthz; /readyz 503 while NATS is frozen, 200 after", { timeout: 120_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  let frozen = false;
  try {
    await withNodeLogsOnFailure(c, async () => {
      const port = await freePort();
      c.startNode("n1", ["--metrics-port", String(port)]);
      const base = `http://127.0.0.1:${port}`;
      await waitFor("/readyz answers 200", async () => ((await get(`${base}/readyz`).catch(() => ({ status: 0 }))).status === 200 ? true : undefined), 60_000, 200);
      const name = "met.t";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "1", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, name);
      for (let i = 0; i < 50; i++) void producer.write({ id: i });
      await producer.flush();
      await producer.waitVisible(producer.token(), 30_000);
      await producer.close();
      await writeConsumer(await catalog.getTable(parseIdentifier(name)), "billing", 1);
      const metrics = await waitFor("the consumer's lag is exported", async () => {
        const m = await get(`${base}/metrics`);
        return /natslake_consumer_lag_snapshots\{[^}]*consumer="billing"[^}]*\} [1-9]/.test(m.body) ? m.body : undefined;
      }, 30_000, 500);
      assert.match(metrics, /# TYPE natslake_commits_total counter/);
      assert.match(metrics, /natslake_commits_total\{[^}]*table="met\.t"[^}]*\} [1-9]/);
      assert.match(metrics, /natslake_rows_in_total\{[^}]*table="met\.t"[^}]*\} 50\b/);
      assert.match(metrics, /natslake_consumer_lag_seconds\{[^}]*consumer="billing"/);
      // The process itself: how late its event loop ran since the last scrape, and its memory by kind.
      assert.match(metrics, /natslake_event_loop_delay_ms\{[^}]*quantile="0\.99"[^}]*\} \d/);
      const rss = /natslake_process_memory_bytes\{[^}]*kind="rss"[^}]*\} (\d+)/.exec(metrics);
      assert.ok(rss !== null && Number(rss[1]) > 20e6, `the node's RSS is exported: ${rss?.[0] ?? "missing"}`);
      const health = await get(`${base}/healthz`);
      assert.equal(health.status, 200);
      assert.match(health.body, /ok n1/);
      assert.equal((await get(`${base}/nope`)).status, 404);
      // NATS frozen: heartbeats stop landing; past the member timeout the node says it is not ready, and why.
      process.kill(c.nats.pid, "SIGSTOP");
      frozen = true;
      const notReady = await waitFor("/readyz 503", async () => {
        const r = await get(`${base}/readyz`);
        return r.status === 503 ? r : undefined;
      }, 30_000, 250);
      assert.match(notReady.body, /not ready: last membership heartbeat \d+ s ago/);
      process.kill(c.nats.pid, "SIGCONT");
      frozen = false;
      await waitFor("/readyz 200 again", async () => ((await get(`${base}/readyz`)).status === 200 ? true : undefined), 30_000, 250);
    }, 40);
  } finally {
    if (frozen) process.kill(c.nats.pid, "SIGCONT");
    await c.stop();
  }
});
