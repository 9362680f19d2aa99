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
import { parseColumnList } from "../../src/spec/data-types.ts";
import { planScan } from "../../src/scan/plan.ts";

const ROWS = 150_000;
const BUCKETS = 2;

// Also with NATSLAKE_DECODE_WORKERS=0: the bucket buffers then live on the writers' own thread.
for (const workers of ["1", "0"]) {
test(`write budget (${workers} bucket-buffer workers) - a node over its writers' memory flushes early, and every row lands exactly once`, { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "2s", env: { NATSLAKE_WRITER_MEMORY: "32kb", NATSLAKE_DECODE_WORKERS: workers } });
  try {
    const catalog = new Catalog(c.warehouse);
    await catalog.createTable(parseIdentifier("it.budget"), {
      columns: parseColumnList("id BIGINT NOT NULL, label STRING, n INT"),
      options: { bucket: String(BUCKETS), "bucket-key": "id" },
    });
    const producer = await producerWhenRegistered(c.nc, "it.budget", 60_000);
    const pending: Array<Promise<{ status: string }>> = [];
    for (let i = 0; i < ROWS; i++) pending.push(producer.write({ id: i, label: `row-${i}`, n: i % 1000 }));
    await producer.flush();
    assert.equal((await Promise.all(pending)).filter((o) => o.status !== "ok").length, 0, "every batch acknowledged");
    await producer.waitVisible(producer.token(), 90_000);
    await producer.close();

    const t = await catalog.getTable(parseIdentifier("it.budget"));
    const latest = (await t.snapshots.latest())!;
    assert.equal(latest.totalRecordCount, ROWS, "no row twice, none missing");
    const plan = await planScan(t);
    const files = plan.splits.reduce((n, s) => n + s.files.length, 0);
    // Without a budget each bucket flushes once per 2 s tick, so a snapshot holds about one file per bucket (2 files
    // in 1 snapshot when this ran with 1 GB). ~4 MB of decoded rows through 32 KiB: several flushes per tick.
    assert.ok(files > 1.5 * BUCKETS * Number(latest.id), `expected early flushes: ${files} files in ${latest.id} snapshots of ${BUCKETS} buckets`);

    const seen = await idsOnceInBucketOrder(t);
    assert.equal(seen.size, ROWS);
  } finally {
    await c.stop();
  }
});
}
