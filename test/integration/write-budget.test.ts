/**
 * The node's write budget with real processes: a node whose writers may hold only 32 KiB of decoded rows flushes
 * long before its commit interval (the largest buffer is preempted, readers wait for memory), and every row still
 * lands exactly once, in per-bucket order.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { producerWhenRegistered, startCluster } from "../helpers/cluster.ts";
import { idsOnceInBucketOrder } from "../helpers/tables.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { planSnapshotDelta } from "../../src/scan/read.ts";
import { freePort } from "../helpers/servers.ts";
import { scrapeMetrics } from "../helpers/node-metrics.ts";

const ROWS = 150_000;
const BUCKETS = 2;

// Also with NATSLAKE_DECODE_WORKERS=0: the bucket buffers then live on the writers' own thread.
for (const workers of ["1", "0"]) {
test(`write budget (${workers} bucket-buffer workers) - a node over its writers' memory flushes early, and every row lands exactly once`, { timeout: 180_000 }, async () => {
  const metricsPort = await freePort();
  const c = await startCluster({ nodes: 1, commitInterval: "2s", env: { NATSLAKE_WRITER_MEMORY: "32kb", NATSLAKE_DECODE_WORKERS: workers, NATSLAKE_METRICS_PORT: String(metricsPort) } });
  try {
    const catalog = new Catalog(c.warehouse);
    await catalog.createTable(parseIdentifier("it.budget"), {
      columns: parseColumnList("id BIGINT NOT NULL, label STRING, n INT"),
      options: { bucket: String(BUCKETS), "bucket-key": "id" },
    });
    const producer = await producerWhenRegistered(c.nc, "it.budget", 60_000);
    const started = Date.now();
    const pending: Array<Promise<{ status: string }>> = [];
    for (let i = 0; i < ROWS; i++) pending.push(producer.write({ id: i, label: `row-${i}`, n: i % 1000 }));
    await producer.flush();
    assert.equal((await Promise.all(pending)).filter((o) => o.status !== "ok").length, 0, "every batch acknowledged");
    await producer.waitVisible(producer.token(), 90_000);
    const elapsedMs = Date.now() - started;
    await producer.close();

    const t = await catalog.getTable(parseIdentifier("it.budget"));
    const latest = (await t.snapshots.latest())!;
    assert.equal(latest.totalRecordCount, ROWS, "no row twice, none missing");
    // Every file a writer flushed, from the APPEND snapshots' deltas (compaction may have merged the live ones since).
    let flushed = 0;
    for (const id of await t.snapshots.listIds()) {
      const delta = await planSnapshotDelta(t, await t.snapshots.snapshot(id));
      flushed += delta.splits.reduce((n, s) => n + s.files.length, 0);
    }
    // Without a budget a bucket flushes only on the 2 s beat (the multiples of 2 s on the clock): at most
    // floor(elapsed / 2 s) + 1 times in this run. Through 32 KiB the buffers are preempted long before that. How many
    // times depends on the machine's speed (a quiet machine lands the 150,000 rows in under a second, a few flushes),
    // so: more files than the beat allows, and the node's own count of preempted flushes.
    const tickFlushes = BUCKETS * (Math.floor(elapsedMs / 2000) + 1);
    assert.ok(flushed > tickFlushes, `expected early flushes: ${flushed} files flushed in ${elapsedMs} ms by ${BUCKETS} buckets (the beat alone: at most ${tickFlushes})`);
    const preempted = [...(await scrapeMetrics(metricsPort)).matchAll(/^natslake_writer_preempted_flushes_total\{[^}]*table="it\.budget"[^}]*\} (\d+)/gm)]
      .reduce((n, m) => n + Number(m[1]), 0);
    assert.ok(preempted >= 1, `the node counted ${preempted} preempted flushes (natslake_writer_preempted_flushes_total)`);

    const seen = await idsOnceInBucketOrder(t);
    assert.equal(seen.size, ROWS);
  } finally {
    await c.stop();
  }
});
}
