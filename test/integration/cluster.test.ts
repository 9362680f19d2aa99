/**
 * The cluster end to end, with real processes: 3 nodes on one nats-server and one redis-server. Rows published
 * with the producer client and raw rows published to the bare subject land exactly once, in per-bucket order, and
 * pypaimon reads the same table.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { jetstream } from "@nats-io/jetstream";
import { producerWhenRegistered, startCluster, waitFor, type TestCluster } from "../helpers/cluster.ts";
import { idsOnceInBucketOrder } from "../helpers/tables.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { paimonRead } from "../helpers/python.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";

/** The default nats-server (the current one scripts/run-tests.mjs picks); a second one too when it is another binary. */
const SERVERS: Array<[string, string | undefined]> = [["default nats-server", undefined]];
const currentBin = process.env["NATSLAKE_NATS_SERVER_CURRENT"];
if (currentBin && currentBin !== (process.env["NATSLAKE_NATS_SERVER"] || "nats-server")) SERVERS.push(["current nats-server", currentBin]);

const CLIENT_ROWS = 200_000;
const RAW_ROWS = 20_000;
const RAW_BASE = 10_000_000;

for (const [label, natsBin] of SERVERS) {
test(`cluster (${label}) - 200k client rows and 20k raw rows land exactly once, in per-bucket order; pypaimon agrees`, { timeout: 240_000 }, async () => {
  const c: TestCluster = await startCluster({ nodes: 3, ...(natsBin ? { natsBin } : {}) });
  try {
  const catalog = new Catalog(c.warehouse);
  const table = await catalog.createTable(parseIdentifier("it.events"), {
    columns: parseColumnList("id BIGINT NOT NULL, src STRING, n INT"),
    options: { bucket: "4", "bucket-key": "id" },
  });
  const producer = await producerWhenRegistered(c.nc, "it.events", 60_000);
  const pending: Array<Promise<{ status: string }>> = [];
  for (let i = 0; i < CLIENT_ROWS; i++) pending.push(producer.write({ id: i, src: "client", n: i % 1000 }));
  await producer.flush();
  const outcomes = await Promise.all(pending);
  assert.equal(outcomes.filter((o) => o.status !== "ok").length, 0, "every client batch acknowledged");

  // Raw rows: JSON arrays of 50 rows to the bare subject, acknowledged by JetStream.
  const js = jetstream(c.nc);
  const raw = new Subjects().ingestRaw(table.identifier);
  const acks: Array<Promise<unknown>> = [];
  for (let i = 0; i < RAW_ROWS; i += 50) {
    const rows = Array.from({ length: 50 }, (_, k) => ({ id: RAW_BASE + i + k, src: "raw", n: k }));
    acks.push(js.publish(raw, JSON.stringify(rows), { msgID: `raw-test-${i}` }));
  }
  await Promise.all(acks);

  await producer.waitVisible(producer.token(), 60_000);
  await waitFor("all rows committed", async () => {
    const s = await (await catalog.getTable(parseIdentifier("it.events"))).snapshots.latest();
    return s && s.totalRecordCount >= CLIENT_ROWS + RAW_ROWS ? s : undefined;
  }, 120_000, 250);
  await producer.close();

  const t = await catalog.getTable(parseIdentifier("it.events"));
  const latest = (await t.snapshots.latest())!;
  assert.equal(latest.totalRecordCount, CLIENT_ROWS + RAW_ROWS, "no row twice");

  // Exactly once, and per bucket the client's ids (published in increasing order) come back increasing.
  const seen = await idsOnceInBucketOrder(t, RAW_BASE);
  assert.equal(seen.size, CLIENT_ROWS + RAW_ROWS);
  for (let i = 0; i < CLIENT_ROWS; i++) assert.ok(seen.has(i), `client row ${i} missing`);
  for (let i = 0; i < RAW_ROWS; i++) assert.ok(seen.has(RAW_BASE + i), `raw row ${RAW_BASE + i} missing`);

  const theirs = await paimonRead(c.warehouse, "it.events", { columns: ["id"], timeoutMs: 180_000 });
  assert.equal(theirs.length, CLIENT_ROWS + RAW_ROWS);
  assert.equal(new Set(theirs.map((r) => Number(r["id"]))).size, CLIENT_ROWS + RAW_ROWS);
  } finally {
    await c.stop();
  }
});
}
