/**
 * Issue 9: one row of 0.5–1 MB used to stall its bucket. The row was acknowledged, then the writer's committable —
 * exact statistics: a 1 MB string's min and max are the whole string — exceeded NATS's max_payload, and the flush
 * failed every 15 s; raw rows of 0.5 MB routed together made a routed message over the limit, which the router
 * retried forever. Now statistics are truncated (Paimon's `truncate(16)` default), committables too large for a
 * message travel by reference, routed messages are cut by bytes, and a row too large for any message is refused by
 * the producer before anything is sent.
 *
 * Against real servers: one node, the default max_payload (1 MiB); pypaimon reads what landed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { jetstream } from "@nats-io/jetstream";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readRows } from "../../src/scan/read.ts";
import { planScan } from "../../src/scan/plan.ts";
import { paimonRead } from "../helpers/python.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { COMMITTABLES_DIR } from "../../actors/committable-store.ts";

/** A string of `bytes` ASCII characters starting with `head` (so it sorts where the test wants it). */
const big = (head: string, bytes: number): string => head + "x".repeat(bytes - head.length);
/** Every row lands within this long of its publish: far below one 15 s flush-retry period. */
const LAND_WITHIN_MS = 12_000;

/** The default nats-server (the current one scripts/run-tests.mjs picks); a second one too when it is another binary. */
const SERVERS: Array<[string, string | undefined]> = [["default nats-server", undefined]];
const currentBin = process.env["NATSLAKE_NATS_SERVER_CURRENT"];
if (currentBin && currentBin !== (process.env["NATSLAKE_NATS_SERVER"] || "nats-server")) SERVERS.push(["current nats-server", currentBin]);

for (const [label, natsBin] of SERVERS) {
test(`cluster (${label}) - rows of 0.5–1 MB land without stalling their bucket; a row too large for a message is refused before any ack; pypaimon reads them`, { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 1, ...(natsBin ? { natsBin } : {}) });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      const id = parseIdentifier("it.large");
      // One bucket: the large rows, the small ones and the routed raw rows all go through one writer and its flushes.
      await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), partitionKeys: [], options: { bucket: "1", "bucket-key": "id" } });
      // Exact statistics (`full`): a committable of these rows is larger than max_payload and must travel by reference.
      const idFull = parseIdentifier("it.large_full");
      await catalog.createTable(idFull, { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), partitionKeys: [], options: { bucket: "1", "bucket-key": "id", "metadata.stats-mode": "full" } });
      const producer = await producerWhenRegistered(c.nc, "it.large", 60_000);
      const producerFull = await producerWhenRegistered(c.nc, "it.large_full", 60_000);
      const maxPayload = c.nc.info!.max_payload;
      assert.equal(maxPayload, 1024 * 1024, "the server's default max_payload");

      // A row that cannot fit in one message is refused synchronously: nothing of it is sent or acknowledged.
      assert.throws(() => producer.write({ id: 999, s: big("q", maxPayload + 10) }), /row is too large for one NATS message/);
      assert.throws(() => producer.write({ id: 998, s: big("q", maxPayload - 100) }), /row is too large for one NATS message/, "a row that only fits without the batch's framing is refused too");

      const started = Date.now();
      // Through the producer: one row of ~0.9 MB (the largest value: it is the max) among small rows.
      const outcomes: Array<Promise<{ status: string }>> = [];
      for (let i = 0; i < 50; i++) outcomes.push(producer.write({ id: i, s: `small-${i}` }));
      outcomes.push(producer.write({ id: 100, s: big("~", 900 * 1024) }));
      for (let i = 50; i < 100; i++) outcomes.push(producer.write({ id: i, s: `small-${i}` }));
      // Raw rows of ~0.5 MB each, in messages of their own (each fits; routed together they would not).
      const js = jetstream(c.nc);
      const subjects = new Subjects();
      // Published at once, so the router takes them in one group (before, they made one routed message of 1.5 MB).
      await Promise.all([0, 1, 2].map((k) => js.publish(subjects.ingestRaw(id), JSON.stringify({ id: 200 + k, s: big(String.fromCharCode(0x61 + k), 500 * 1024) }), { msgID: `large-raw-${k}` })));
      // The raw path: the server itself refuses a message over max_payload — never stored, never acknowledged.
      await assert.rejects(js.publish(subjects.ingestRaw(id), JSON.stringify({ id: 300, s: big("r", maxPayload) })), /payload|exceed/i);
      // Exact statistics: both large values are the min and the max ("az" sorts between them).
      const fullOutcomes = [producerFull.write({ id: 1, s: big("a", 600 * 1024) }), producerFull.write({ id: 2, s: big("b", 600 * 1024) }), producerFull.write({ id: 3, s: "az" })];
      await producer.flush();
      await producerFull.flush();
      assert.deepEqual((await Promise.all(outcomes)).map((o) => o.status).filter((s) => s !== "ok"), [], "every batch acknowledged");
      assert.deepEqual((await Promise.all(fullOutcomes)).map((o) => o.status), ["ok", "ok", "ok"]);

      const expected = 100 + 1 + 3;
      await waitFor("every row of it.large committed", async () => {
        const s = await (await catalog.getTable(id)).snapshots.latest();
        return s && s.totalRecordCount >= expected ? s : undefined;
      }, LAND_WITHIN_MS, 100);
      await waitFor("every row of it.large_full committed", async () => {
        const s = await (await catalog.getTable(idFull)).snapshots.latest();
        return s && s.totalRecordCount >= 3 ? s : undefined;
      }, Math.max(1000, LAND_WITHIN_MS - (Date.now() - started)), 100);
      const tookMs = Date.now() - started;
      assert.ok(tookMs < LAND_WITHIN_MS, `landed in ${tookMs} ms`);
      await producer.close();
      await producerFull.close();

      const t = await catalog.getTable(id);
      assert.equal((await t.snapshots.latest())!.totalRecordCount, expected, "no row twice, the refused ones absent");
      const ours = new Map<number, string>();
      for await (const row of readRows(t)) ours.set(Number(row["id"]), String(row["s"]));
      assert.equal(ours.size, expected);
      assert.equal(ours.get(100), big("~", 900 * 1024));
      for (let k = 0; k < 3; k++) assert.equal(ours.get(200 + k), big(String.fromCharCode(0x61 + k), 500 * 1024));
      for (const refused of [998, 999, 300]) assert.ok(!ours.has(refused), `refused row ${refused} absent`);
      assert.equal((await (await catalog.getTable(idFull)).snapshots.latest())!.totalRecordCount, 3);

      // No flush failed on the way (each failure would have cost a retry period).
      assert.doesNotMatch(c.logs("n1"), /flush failed|routing failed/);
      assert.match(c.logs("n1"), /committable sent by reference/, "it.large_full's committable exceeded max_payload");
      // Bodies of committables sent by reference are removed once decided and purged.
      const full = await catalog.getTable(idFull);
      await waitFor("committable bodies removed", async () => ((await full.io.list(`${full.root}/${COMMITTABLES_DIR}`)).length === 0 ? true : undefined), 10_000, 200);

      // pypaimon reads the same rows (its manifests' statistics included).
      const theirs = await paimonRead(c.warehouse, "it.large", { columns: ["id", "s"], timeoutMs: 120_000 });
      assert.deepEqual(
        new Map(theirs.map((r) => [Number(r["id"]), String(r["s"])])),
        ours,
      );
      // Filtered: pypaimon skips files by their (truncated) statistics, so a bound below a value would lose its row.
      const only = async (filter: NonNullable<Parameters<typeof paimonRead>[2]>["filter"]): Promise<number[]> =>
        (await paimonRead(c.warehouse, "it.large", { columns: ["id"], filter: filter!, timeoutMs: 120_000 })).map((r) => Number(r["id"])).sort((a, b) => a - b);
      assert.deepEqual(await only([["equal", "s", big("~", 900 * 1024)]]), [100]);
      assert.deepEqual(await only([["greater_or_equal", "s", big("~", 900 * 1024)]]), [100]);
      assert.deepEqual(await only([["equal", "s", big("c", 500 * 1024)]]), [202]);
      assert.deepEqual(await only([["greater_than", "s", big("b", 500 * 1024)], ["less_than", "s", "d"]]), [202]);
      // The statistics in the manifest are short: truncated to 16 characters, the max's last one incremented.
      const files = (await planScan(t)).splits.flatMap((sp) => sp.files);
      for (const f of files) assert.ok(f.valueStats.maxValues.length < 200 && f.valueStats.minValues.length < 200, `${f.fileName}: statistics of ${f.valueStats.maxValues.length} bytes`);
      const theirsFull = await paimonRead(c.warehouse, "it.large_full", { columns: ["id"], timeoutMs: 120_000 });
      assert.deepEqual(theirsFull.map((r) => Number(r["id"])).sort(), [1, 2, 3]);
    });
  } finally {
    await c.stop();
  }
});
}
