/**
 * Every message a real cluster sends validates against the published JSON Schemas (schemas/). A wire tap (its own
 * NATS connection on `lake.>`, `$KV.>` and `_INBOX.>`, test/helpers/wire-tap.ts) decodes each message by its subject
 * and validates it with ajv while two nodes run a table under load: producer batches, raw rows (JSON and msgpack: a
 * row, an array, a batch), rows the router and the writers dead-letter, commits and writer compactions, a stale
 * committable the leader rejects, a bucket handed over to a node that joins, a snapshot subscriber, a consume session
 * with acknowledgements, and maintenance requests (one refused: it names another table). A subject without a contract fails the test, and
 * each main message type must have been seen.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { jetstream } from "@nats-io/jetstream";
import { adminRequest } from "../../cluster/admin-client.ts";
import { openConsumer } from "../../cluster/consumer.ts";
import { requestMaintenance } from "../../cluster/maintenance-client.ts";
import { subscribeSnapshots } from "../../cluster/snapshots-client.ts";
import { encodeMsg } from "../../actors/wire/codec.ts";
import type { Committable, SnapshotNotification } from "../../actors/wire/messages.ts";
import { encodeRowBatch, packValue } from "../../actors/wire/row-batch.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { startWireTap } from "../helpers/wire-tap.ts";

const TABLE = "wire.events";
const ROUNDS = 30;
const PER_ROUND = 400;

test("wire contracts - every message a cluster sends under load validates against its published JSON Schema; no subject without one", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "100ms", env: { NATSLAKE_COMPACTION_INTERVAL: "400ms" } });
  const tap = await startWireTap(c.nats.url);
  let tapStopped = false;
  try {
    await withNodeLogsOnFailure(c, async () => {
      const enc = new TextEncoder();
      // The node answers admin requests once its start-up table scan is done.
      await waitFor("the node serving admin requests", () => adminRequest(c.nc, "lake", { type: "list-tables" }, 2000).then(() => true), 60_000, 200);
      await adminRequest(c.nc, "lake", { type: "create-table", table: TABLE, columns: "id BIGINT NOT NULL, msg STRING", options: { bucket: "2", "bucket-key": "id", "compaction.min.file-num": "3" } });
      const producer = await producerWhenRegistered(c.nc, TABLE);
      const notifications: SnapshotNotification[] = [];
      const sub = await subscribeSnapshots(c.nc, TABLE, (n) => void notifications.push(n));

      // A consume session from the start, acknowledging every snapshot, until it has every good row.
      const consumer = await openConsumer({ nc: c.nc, table: TABLE, from: "full", consumerId: "wire-tap" });
      let consumed = 0;
      let expected = Number.POSITIVE_INFINITY;
      const consuming = (async () => {
        for await (const s of consumer) {
          for await (const b of s.batches) consumed += b.numRows;
          await s.ack();
          if (consumed >= expected) return;
        }
      })();

      const js = jetstream(c.nc);
      const raw = `lake.in.${TABLE}`;
      let good = 0;
      for (let round = 0; round < ROUNDS; round++) {
        for (let k = 0; k < PER_ROUND; k++, good++) void producer.write({ id: good, msg: `row-${good}` });
        await producer.flush();
        if (round === 5) {
          // Raw rows from services that do not route: JSON and msgpack, one row, an array, a batch.
          await js.publish(raw, enc.encode(JSON.stringify({ id: 1_000_000, msg: "raw json row" })));
          await js.publish(raw, enc.encode(JSON.stringify([{ id: 1_000_001, msg: "a" }, { id: 1_000_002, msg: "b" }])));
          await js.publish(raw, packValue({ id: 1_000_003, msg: "raw msgpack row" }));
          await js.publish(raw, packValue({ v: 1, cols: ["id", "msg"], rows: [[1_000_004, "c"], [1_000_005, "d"]] }));
          // Rows that do not fit: one raw (the router's dead letter), one in a routed batch (the writer's).
          await js.publish(raw, enc.encode(JSON.stringify({ id: "not a number", msg: "bad" })));
          await js.publish(`lake.in.${TABLE}.0`, encodeRowBatch({ v: 1, schema: 0, cols: ["id", "msg"], rows: [["nope", "bad"]] }), { msgID: "wire-bad-batch" });
        }
        // A second node joins: the leader hands it a bucket (revoke, the writer's release, the new assignment).
        if (round === 10) c.startNode("n2");
        if (round === 20) {
          // A stale committable (owner epoch 0, from a writer that does not exist) is rejected by the leader.
          const stream = notifications.at(-1)?.stream;
          assert.ok(stream !== undefined, "a notification names the ingest stream");
          const forged: Committable = { type: "committable", v: 1, table: TABLE, stream, bucket: 0, ownerEpoch: 0, writerId: "wire-forger", prevOffset: 0, lastOffset: 1_000_000_000, flushId: 1, rowCount: 0, files: [], firstArrivalMillis: 0 };
          await js.publish(`lake.commit.${TABLE}`, encodeMsg(forged), { msgID: "wire-forged" });
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      good += 6; // the raw rows
      await producer.waitVisible(producer.token(), 60_000);
      await producer.close();
      expected = good;
      await waitFor("the consumer has every row", () => (consumed >= good ? true : undefined), 60_000, 200);
      await consuming;
      assert.equal(consumed, good, "the consume session delivered every good row once");
      await consumer.close();
      sub.stop();

      // Maintenance over NATS: a dry run answered with accepted … done, and a request the leader refuses.
      const result = await requestMaintenance(c.nc, { type: "maintenance", v: 1, task: "expire-snapshots", table: TABLE, options: { dryRun: true }, progress: true }, { prefix: "lake", acceptTimeoutMs: 30_000, silenceTimeoutMs: 30_000 });
      assert.ok(result.node === "n1" || result.node === "n2");
      // (Valid by its schema, but sent to another table's subject.)
      const refused = await c.nc.request(`lake.ctl.maint.${TABLE}`, enc.encode(JSON.stringify({ type: "maintenance", v: 1, task: "compact", table: "wire.other", options: { dryRun: true } })), { timeout: 30_000 });
      assert.match(new TextDecoder().decode(refused.data), /"ok":false.*was sent to wire\.events/);
      assert.ok(Array.isArray(await adminRequest(c.nc, "lake", { type: "list-tables" })));

      await waitFor("a COMPACT snapshot and a bucket released to the joining node", () => (notifications.some((n) => n.kind === "COMPACT") && (tap.counts.get("released") ?? 0) > 0 ? true : undefined), 60_000, 200);
      await tap.stop();
      tapStopped = true;
      const counts = Object.fromEntries([...tap.counts].sort());
      assert.deepEqual(tap.failures, [], `${tap.failureCount} messages did not validate; counts: ${JSON.stringify(counts)}`);
      const main = [
        "row-batch",
        "raw-rows",
        "stream-id-marker",
        "dead-letter",
        "commit-entry/committable",
        "commit-entry/compaction",
        "rejection",
        "snapshot-notification",
        "table-meta",
        "member-heartbeat",
        "table-assignment",
        "released",
        "router-progress",
        "admin-request",
        "admin-reply",
        "maintenance-request",
        "maintenance-reply",
        "consume-open",
        "consume-open-reply",
        "consume-control",
        "consume-control-reply",
        "consume-headers",
        "consume-chunk",
      ];
      for (const name of main) assert.ok((tap.counts.get(name) ?? 0) > 0, `no ${name} seen; counts: ${JSON.stringify(counts)}`);
      assert.ok(tap.chunkRows >= good, `the consume chunks carried every row (${tap.chunkRows} of ${good})`);
      assert.ok((tap.counts.get("dead-letter") ?? 0) >= 2, "the router's and the writer's dead letters");
      process.stdout.write(`wire contracts: validated ${JSON.stringify(counts)}\n`);
    });
  } finally {
    if (!tapStopped) await tap.stop().catch(() => undefined);
    await c.stop();
  }
});
