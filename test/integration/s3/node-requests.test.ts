/**
 * What a node on an S3 warehouse (SeaweedFS, real) asks of the store, from its own `/metrics`
 * (`natslake_s3_requests_total{type, area}`):
 * - the counters grow with the work (the start-up probe, data files on the writer, metadata on the leader);
 * - while commits land, nothing lists `snapshot/`, `manifest/`, schema or data directories — the commit path, the
 *   writers' compaction planning and the leader's expiration find snapshots through hints and existence checks
 *   (after the new leader's first maintenance round: its orphan cleanup lists the whole table, once an hour);
 * - idle, a node LISTs only for its periodic table scan — one listing of the warehouse and one of the database every
 *   2 s (`Node.scanTables`; a running table costs a HEAD) — and the leader adds its consumer-lag task's listing of
 *   `consumer/` every 5 s.
 * Bounds are counts per window from the timers' periods, so a slow machine (timers firing late) only lowers them.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Kvm } from "@nats-io/kv";
import { freePort } from "../../../cluster/local/servers.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import type { Producer } from "../../../cluster/producer.ts";
import { areasWith, requestsSince, scrapeMetrics, scrapeS3Requests } from "../../helpers/node-metrics.ts";
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

async function publish(producer: Producer, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) void producer.write({ id: i, s: `r${i}` });
  await producer.flush();
}

test("node on S3 - natslake_s3_requests_total{type, area}: no listing of snapshot/, manifest/ or data while commits land; idle, LISTs only for the table scan and the leader's consumer lag", { timeout: 240_000 }, async (t) => {
  const uri = store.uri(`metrics-${randomBytes(4).toString("hex")}`);
  const c: TestCluster = await startCluster({ nodes: 0, warehouse: uri, commitInterval: "250ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const [leaderPort, writerPort] = [await freePort(), await freePort()];
      c.startNode("n1", ["--metrics-port", String(leaderPort)]);
      await waitFor("n1 ready", () => ready(leaderPort), 90_000, 250);
      c.startNode("n2", ["--roles", "writer", "--metrics-port", String(writerPort)]);
      await waitFor("n2 ready", () => ready(writerPort), 90_000, 250);
      const scrape = async (): Promise<{ n1: Awaited<ReturnType<typeof scrapeS3Requests>>; n2: Awaited<ReturnType<typeof scrapeS3Requests>>; at: number }> => ({
        n1: await scrapeS3Requests(leaderPort),
        n2: await scrapeS3Requests(writerPort),
        at: Date.now(),
      });
      const start = await scrape();
      // The start-up probe (two conditional puts of one object, its read-back and delete) ran on both.
      for (const s of [start.n1, start.n2]) assert.ok(s.byArea.probe.PUT >= 2 && s.byArea.probe.DELETE >= 1, JSON.stringify(s.byArea.probe));

      await new Catalog(uri).createTable(parseIdentifier("m.events"), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "2", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, "m.events", 60_000);
      // Both writers own a bucket before the rows go out, so both write data files.
      await waitFor("a bucket on each writer", async () => {
        const e = await (await new Kvm(c.nc).open("lake_assign")).get("m.events");
        const a = e?.operation === "PUT" ? (e.json() as { buckets: Record<string, { node: string; state: string }> }) : null;
        const owners = new Set(Object.values(a?.buckets ?? {}).filter((b) => b.state === "active").map((b) => b.node));
        return owners.size === 2 ? true : undefined;
      }, 60_000, 250);
      await publish(producer, 0, 2000);
      await producer.waitVisible(producer.token(), 120_000);
      // A new leader runs each maintenance task once at once, orphan cleanup (which lists the whole table) first and
      // table statistics last: once those are exported, that round is over.
      await waitFor("the leader's first maintenance round", async () => (/natslake_table_snapshots\{[^}]*table="m\.events"/.test(await scrapeMetrics(leaderPort)) ? true : undefined), 60_000, 250);
      const first = await scrape();
      const worked = { n1: requestsSince(start.n1, first.n1), n2: requestsSince(start.n2, first.n2) };
      t.diagnostic(`creating the table and committing 2000 rows: n1 (leader) ${JSON.stringify(worked.n1.total)}; n2 (writer) ${JSON.stringify(worked.n2.total)}`);
      assert.ok(worked.n1.byArea.snapshot.PUT >= 1 && worked.n1.byArea.manifest.PUT >= 3, `the leader committed: ${JSON.stringify(worked.n1.byArea)}`);
      assert.ok(worked.n2.byArea.data.PUT >= 1, `the writer wrote a data file: ${JSON.stringify(worked.n2.byArea)}`);

      // Busy: rows keep arriving for ~4 s, so several commits land (and the leader expires after them). A lease the
      // leader lost and took again on a saturated machine is a new leadership, whose maintenance round lists the
      // whole table (orphan cleanup): such a window says nothing about the commit path and is measured again.
      const leaderships = async (): Promise<number> => Number(/^natslake_leader_changes_total\{[^}]*\} (\d+)/m.exec(await scrapeMetrics(leaderPort))?.[1] ?? 0);
      let base = first;
      let next = 1000;
      for (let attempt = 1; ; attempt++) {
        const leadersBefore = await leaderships();
        const latestBefore = (await (await new Catalog(uri).getTable(parseIdentifier("m.events"))).snapshots.latestId())!;
        for (let k = 0; k < 8; k++, next += 1000) {
          await publish(producer, next, next + 500);
          await new Promise((r) => setTimeout(r, 500));
        }
        await producer.waitVisible(producer.token(), 120_000);
        const busyEnd = await scrape();
        const commits = (await (await new Catalog(uri).getTable(parseIdentifier("m.events"))).snapshots.latestId())! - latestBefore;
        const busy = { n1: requestsSince(base.n1, busyEnd.n1), n2: requestsSince(base.n2, busyEnd.n2) };
        const moved = (await leaderships()) - leadersBefore;
        t.diagnostic(`busy (${commits} commits${moved > 0 ? `, leadership taken again ${moved} time(s)` : ""}): n1 LISTs by area ${JSON.stringify(areasWith(busy.n1, "LIST"))}, n2 ${JSON.stringify(areasWith(busy.n2, "LIST"))}; n1 ${JSON.stringify(busy.n1.total)}, n2 ${JSON.stringify(busy.n2.total)}`);
        if (moved > 0 && attempt < 3) {
          await new Promise((r) => setTimeout(r, 5000)); // the new leadership's maintenance round
          base = await scrape();
          continue;
        }
        assert.equal(moved, 0, "the leadership stayed put in one of three windows");
        assert.ok(commits >= 2, `several commits landed: ${commits}`);
        for (const [node, r] of Object.entries(busy)) {
          for (const area of ["snapshot", "manifest", "data", "schema", "tag", "committables"] as const) {
            assert.equal(r.byArea[area].LIST, 0, `${node} listed ${area} while commits landed: ${JSON.stringify(areasWith(r, "LIST"))}`);
          }
        }
        break;
      }
      await producer.close();

      // Idle: no rows arrive, so no flush and no commit; what is left is periodic (measured again, as above, when the
      // leader took its lease again meanwhile).
      await new Promise((r) => setTimeout(r, 3000));
      let a = await scrape();
      let b = a;
      for (let attempt = 1; ; attempt++) {
        const leadersBefore = await leaderships();
        await new Promise((r) => setTimeout(r, 12_000));
        b = await scrape();
        const moved = (await leaderships()) - leadersBefore;
        if (moved === 0) break;
        assert.ok(attempt < 3, "the leadership stayed put in one of three idle windows");
        t.diagnostic(`idle window ${attempt}: leadership taken again ${moved} time(s); measuring again`);
        await new Promise((r) => setTimeout(r, 5000));
        a = await scrape();
      }
      const secs = (b.at - a.at) / 1000;
      const idle = { n1: requestsSince(a.n1, b.n1), n2: requestsSince(a.n2, b.n2) };
      t.diagnostic(`idle ${secs.toFixed(1)} s: n1 (leader) ${JSON.stringify(idle.n1.total)} = ${(idle.n1.total.LIST / secs).toFixed(2)} LIST/s ${JSON.stringify(areasWith(idle.n1, "LIST"))}; n2 (writer) ${JSON.stringify(idle.n2.total)} = ${(idle.n2.total.LIST / secs).toFixed(2)} LIST/s`);
      const every = (ms: number): number => Math.floor((secs * 1000) / ms) + 1; // firings of a timer in the window, at most
      assert.ok(idle.n2.total.LIST >= 2, `the writer's table scan ran: ${JSON.stringify(idle.n2.total)}`);
      assert.ok(idle.n2.byArea.catalog.LIST === idle.n2.total.LIST, `the writer lists only the warehouse and its database: ${JSON.stringify(areasWith(idle.n2, "LIST"))}`);
      assert.ok(idle.n2.total.LIST <= 2 * every(2000), `2 LISTs per scan: ${idle.n2.total.LIST} in ${secs.toFixed(1)} s`);
      assert.ok(idle.n1.byArea.catalog.LIST <= 2 * every(2000), `the leader's scan: ${JSON.stringify(areasWith(idle.n1, "LIST"))}`);
      assert.ok(idle.n1.byArea.consumer.LIST <= every(5000), `consumer lag: one listing of consumer/ every 5 s: ${JSON.stringify(areasWith(idle.n1, "LIST"))}`);
      assert.equal(idle.n1.total.LIST, idle.n1.byArea.catalog.LIST + idle.n1.byArea.consumer.LIST, `nothing else lists: ${JSON.stringify(areasWith(idle.n1, "LIST"))}`);
      assert.equal(idle.n2.total.PUT + idle.n2.total.DELETE, 0, `an idle writer writes nothing: ${JSON.stringify(idle.n2.total)}`);
    });
  } finally {
    await c.stop();
  }
});
