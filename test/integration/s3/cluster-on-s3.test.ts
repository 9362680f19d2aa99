/**
 * The cluster on an S3 warehouse (SeaweedFS, real): 3 node processes (`natslake node --warehouse s3://…`, credentials
 * from the environment) on one nats-server and one redis-server. Client rows and raw rows land exactly once, in
 * per-bucket order, across a node killed with SIGKILL in the middle; pypaimon reads the same table from S3. A store
 * that ignores If-None-Match is not at hand, so the refusal is shown on a node pointed at a missing bucket (the
 * same start-up check), and the probe itself is covered in file-io-contract.test.ts.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../../helpers/cluster.ts";
import { idsOnceInBucketOrder } from "../../helpers/tables.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { paimonRead } from "../../helpers/python.ts";
import { Subjects } from "../../../cluster/nats/subjects.ts";
import { startS3Store, type S3TestStore } from "../../helpers/s3.ts";

let store: S3TestStore;
before(async () => {
  store = await startS3Store();
});
after(async () => {
  await store?.stop();
});

const CLIENT_ROWS = 40_000;
const RAW_ROWS = 5_000;
const RAW_BASE = 10_000_000;

test("cluster on S3 - client and raw rows land exactly once, in per-bucket order, across a SIGKILLed node; pypaimon agrees", { timeout: 300_000 }, async () => {
  const prefix = `cluster-${randomBytes(4).toString("hex")}`;
  const uri = store.uri(prefix);
  const c: TestCluster = await startCluster({ nodes: 3, warehouse: uri, commitInterval: "250ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(uri);
      const table = await catalog.createTable(parseIdentifier("it.events"), { columns: parseColumnList("id BIGINT NOT NULL, src STRING, n INT"), options: { bucket: "4", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, "it.events", 60_000);
      const publish = async (from: number, to: number): Promise<void> => {
        const pending: Array<Promise<{ status: string }>> = [];
        for (let i = from; i < to; i++) pending.push(producer.write({ id: i, src: "client", n: i % 1000 }));
        await producer.flush();
        const outcomes = await Promise.all(pending);
        assert.equal(outcomes.filter((o) => o.status !== "ok").length, 0, "every client batch acknowledged");
      };
      await publish(0, CLIENT_ROWS / 2);
      // Some of the first half committed, then a node dies without a word; its buckets move on.
      await waitFor("a first commit", async () => ((await (await catalog.getTable(parseIdentifier("it.events"))).snapshots.latest())?.totalRecordCount ?? 0) > 0 || undefined, 60_000, 250);
      c.signal("n2", "SIGKILL");
      await publish(CLIENT_ROWS / 2, CLIENT_ROWS);
      const js = jetstream(c.nc);
      const raw = new Subjects().ingestRaw(table.identifier);
      const acks: Array<Promise<unknown>> = [];
      for (let i = 0; i < RAW_ROWS; i += 50) acks.push(js.publish(raw, JSON.stringify(Array.from({ length: 50 }, (_, k) => ({ id: RAW_BASE + i + k, src: "raw", n: k }))), { msgID: `raw-s3-${i}` }));
      await Promise.all(acks);
      await producer.waitVisible(producer.token(), 120_000);
      await waitFor("all rows committed", async () => {
        const s = await (await catalog.getTable(parseIdentifier("it.events"))).snapshots.latest();
        return s && s.totalRecordCount >= CLIENT_ROWS + RAW_ROWS ? s : undefined;
      }, 180_000, 500);
      await producer.close();

      const t = await catalog.getTable(parseIdentifier("it.events"));
      assert.equal((await t.snapshots.latest())!.totalRecordCount, CLIENT_ROWS + RAW_ROWS, "no row twice");
      const seen = await idsOnceInBucketOrder(t, RAW_BASE);
      assert.equal(seen.size, CLIENT_ROWS + RAW_ROWS);
      const theirs = await paimonRead(`s3://${store.bucket}/${prefix}`, "it.events", { columns: ["id"], timeoutMs: 180_000 });
      assert.equal(theirs.length, CLIENT_ROWS + RAW_ROWS);
      assert.equal(new Set(theirs.map((r) => Number(r["id"]))).size, CLIENT_ROWS + RAW_ROWS);
    });
  } finally {
    await c.stop();
  }
});

test("cluster on S3 - a node whose warehouse bucket does not exist refuses to start, naming the bucket", { timeout: 120_000 }, async () => {
  const c: TestCluster = await startCluster({ nodes: 0, warehouse: `s3://no-such-bucket-${randomBytes(3).toString("hex")}/wh?endpoint=${encodeURIComponent(store.server.endpoint)}` });
  try {
    c.startNode("n1");
    const code = await c.waitExit("n1", 60_000);
    assert.notEqual(code, 0);
    assert.match(c.logs("n1"), /no such bucket/);
  } finally {
    await c.stop();
  }
});
