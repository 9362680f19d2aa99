/**
 * Back-pressure of a primary-key bucket (actors/writer.ts, actors/lsm-compaction.ts): with a tiny stop trigger and the
 * node's first compaction held for 12 s (failpoint `writer.compaction-before-send:sleep(10000)@1`), the bucket whose
 * compaction is held stops reading from its stream once its sorted runs reach the stop trigger —
 * `natslake_bucket_stopped_ms_total` grows, its messages wait in the stream, its committed offset stands still —
 * while the table's other bucket goes on committing; once the held compaction lands the bucket reads again, and every
 * row lands exactly once (natslake and pypaimon).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { scrapeMetrics } from "../helpers/node-metrics.ts";
import { readJson } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { freePort } from "../../cluster/local/servers.ts";
import { bucketPending } from "../../cluster/nats/pending-metric.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { natslakeState } from "../../src/format/snapshot.ts";
import type { Table } from "../../src/table/table.ts";

const NAME = "bp.keys";
const HOLD_MS = 12_000;

/** A metric's value per bucket of NAME, from a node's /metrics. */
function perBucket(body: string, metric: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const m of body.matchAll(new RegExp(`^${metric}\\{([^}]*)\\} ([0-9.e+]+)`, "gm"))) {
    if (!m[1]!.includes(`table="${NAME}"`)) continue;
    const b = /bucket="(\d+)"/.exec(m[1]!);
    if (b) out.set(Number(b[1]), Number(m[2]));
  }
  return out;
}

async function committedOffsets(t: Table): Promise<Map<number, number>> {
  const st = natslakeState((await t.snapshots.latest())!);
  return new Map([...(st?.buckets ?? new Map())].map(([b, p]) => [b, Number(p.offset)]));
}

test("cluster PK back-pressure - a bucket whose compaction is held stops reading at the stop trigger (metric, messages kept), the other bucket goes on, every row lands once after", { timeout: 300_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "250ms" });
  try {
    const metricsPort = await freePort();
    c.startNode("n1", ["--metrics-port", String(metricsPort)], { FAILPOINTS: `writer.compaction-before-send:sleep(${HOLD_MS})@1` });
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(NAME), {
        columns: parseColumnList("id BIGINT NOT NULL, s STRING"),
        primaryKeys: ["id"],
        options: { bucket: "2", "num-sorted-run.compaction-trigger": "2", "num-sorted-run.stop-trigger": "4" },
      });
      const p = await producerWhenRegistered(c.nc, NAME);
      const t = await catalog.getTable(parseIdentifier(NAME));
      const jsm = await jetstreamManager(c.nc);
      const subjects = new Subjects();

      // Rows keep coming (100 every 100 ms, 25 s at most) while the test watches the node.
      let next = 0;
      let writing = true;
      const writer = (async () => {
        const until = Date.now() + 25_000;
        while (writing && Date.now() < until) {
          void p.upsert(Array.from({ length: 100 }, () => ({ id: next, s: `row-${next++}` })));
          await new Promise((r) => setTimeout(r, 100));
        }
      })();

      // A bucket stops within the hold; then, over 3 s, the held one is the bucket that stood still.
      await waitFor("a bucket stopped reading", async () => {
        const stopped = perBucket(await scrapeMetrics(metricsPort), "natslake_bucket_stopped_ms_total");
        return [...stopped.values()].some((ms) => ms > 0) ? true : undefined;
      }, 30_000, 200);
      await new Promise((r) => setTimeout(r, 2000));
      const offsetsBefore = await committedOffsets(t);
      const stoppedBefore = perBucket(await scrapeMetrics(metricsPort), "natslake_bucket_stopped_ms_total");
      await new Promise((r) => setTimeout(r, 3000));
      const body = await scrapeMetrics(metricsPort);
      const offsetsLater = await committedOffsets(t);
      const pending = await bucketPending(jsm, subjects, t);
      const stoppedLater = perBucket(body, "natslake_bucket_stopped_ms_total");
      const grew = (b: number): number => (stoppedLater.get(b) ?? 0) - (stoppedBefore.get(b) ?? 0);
      const held = grew(0) >= grew(1) ? 0 : 1;
      const other = 1 - held;
      assert.ok(grew(held) >= 2500, `the stopped bucket's counter grows while it stands (${stoppedBefore.get(held)} → ${stoppedLater.get(held)} ms)`);
      assert.ok((perBucket(body, "natslake_bucket_sorted_runs").get(held) ?? 0) >= 4, `its sorted runs are at the stop trigger: ${body.match(/natslake_bucket_sorted_runs\{[^\n]*/g)?.join("; ")}`);
      assert.equal(offsetsLater.get(held), offsetsBefore.get(held), "the stopped bucket commits nothing meanwhile");
      // (The producer sends a bucket its rows of a batch as one message: about 10 messages a second.)
      assert.ok((pending.get(held) ?? 0) >= 30, `its messages wait in the stream: ${JSON.stringify([...pending])}`);
      assert.ok((offsetsLater.get(other) ?? 0) > (offsetsBefore.get(other) ?? 0), `the other bucket goes on committing (${offsetsBefore.get(other)} → ${offsetsLater.get(other)})`);

      // The held compaction lands: the bucket reads again and catches up.
      writing = false;
      await writer;
      const sent = next;
      await p.flush();
      await p.waitVisible(p.token(), 90_000);
      await p.close();
      const after = await waitFor("the held bucket no longer stopped", async () => {
        const b = await scrapeMetrics(metricsPort);
        const runs = perBucket(b, "natslake_bucket_sorted_runs").get(held) ?? 99;
        return runs < 4 ? perBucket(b, "natslake_bucket_stopped_ms_total").get(held) : undefined;
      }, 60_000, 250);
      assert.ok(after! >= HOLD_MS / 2, `it stood for about the hold (${after} ms)`);
      assert.match(c.logs("n1"), /bucket reading again after compaction/);

      const ids = (rows: Array<Record<string, unknown>>): number[] => rows.map((r) => Number(r["id"])).sort((a, b) => a - b);
      const all = Array.from({ length: sent }, (_, i) => i);
      assert.deepEqual(ids(await readJson(t)), all, "every row once (natslake)");
      assert.deepEqual(ids(await paimonRead(c.warehouse, NAME, { columns: ["id"] })), all, "every row once (pypaimon)");
    });
  } finally {
    await c.stop();
  }
});
