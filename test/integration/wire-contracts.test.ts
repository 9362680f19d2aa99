/**
 * Every message a real cluster sends validates against the published JSON Schemas (schemas/). A wire tap (its own
 * NATS connection on `lake.>`, `$KV.>` and `_INBOX.>`, test/helpers/wire-tap.ts) decodes each message by its subject
 * and validates it — body and headers — with ajv while two nodes run a table under load: producer batches, raw rows
 * (JSON and msgpack: a row, an array, a batch), rows the router and the writers dead-letter and their replay (`dlq
 * replay` from fixed rows, recorded in KV), commits and writer compactions, a stale committable the leader rejects, a
 * bucket handed over to a node that joins, a snapshot subscriber, a consume session with acknowledgements, the
 * joined node drained (`node drain`, staying up: its drained heartbeats), maintenance requests (one refused: it
 * names another table) and lookups (one refused). A subject without a contract, or a header its contract does not name, fails the test, and
 * each main message type must have been seen.
 *
 * Tracing is on — in this process (the producing service: `traceparent` headers on its batches) and in the first
 * node (flush and commit spans: `traceparent` in committables and notifications, body and header), exporting to an
 * OTLP receiver on loopback — and off in the node that joins, as in a cluster where it is being turned on: messages
 * with trace context and without are both validated.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { jetstream } from "@nats-io/jetstream";
import { adminRequest } from "../../cluster/admin-client.ts";
import { openConsumer } from "../../cluster/consumer.ts";
import { createLookupClient } from "../../cluster/lookup-client.ts";
import { readLetters, replay } from "../../cluster/dlq.ts";
import { requestMaintenance } from "../../cluster/maintenance-client.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { openKv } from "../../cluster/nats/table-infra.ts";
import { requestDrain } from "../../cluster/node-control-client.ts";
import { subscribeSnapshots } from "../../cluster/snapshots-client.ts";
import { startTracingIfConfigured } from "../../cluster/tracing.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { encodeMsg } from "../../actors/wire/codec.ts";
import type { Committable, MemberHeartbeat, SnapshotNotification, TableAssignment } from "../../actors/wire/messages.ts";
import { encodeRowBatch, packValue } from "../../actors/wire/row-batch.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { startOtlpReceiver } from "../helpers/otlp-receiver.ts";
import { startWireTap } from "../helpers/wire-tap.ts";

const TABLE = "wire.events";
const ROUNDS = 30;
const PER_ROUND = 400;

test("wire contracts - every message a cluster sends under load validates against its published JSON Schema; no subject without one", { timeout: 240_000 }, async () => {
  const receiver = await startOtlpReceiver();
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "200" };
  const tracing = await startTracingIfConfigured(otel, { serviceName: "wire-contracts-producer" });
  assert.ok(tracing !== null, "the OTLP endpoint turns this process's tracing on");
  const c = await startCluster({ nodes: 0, commitInterval: "100ms", env: { NATSLAKE_COMPACTION_INTERVAL: "400ms" } });
  const tap = await startWireTap(c.nats.url);
  let tapStopped = false;
  try {
    c.startNode("n1", [], otel);
    await withNodeLogsOnFailure(c, async () => {
      const enc = new TextEncoder();
      const subjects = new Subjects("lake");
      const table = parseIdentifier(TABLE);
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
      let closing = false;
      const consuming = (async () => {
        for await (const s of consumer) {
          for await (const b of s.batches) consumed += b.numRows;
          // An ack still on its way when the test closes the consumer (it had every row) is refused, as documented:
          // "the consumer was closed" (a CI run failed so). Any other refusal fails the test.
          await s.ack().catch((e: unknown) => {
            if (!closing) throw e;
          });
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
        // A second node joins, not tracing: the leader hands it a bucket (revoke, the writer's release, the new assignment).
        if (round === 10) c.startNode("n2");
        if (round === 15) {
          // The two dead letters replayed with fixed rows (as `natslake dlq replay <file>` does): published again
          // through the producer client and recorded in KV `lake_dlq_replays`.
          const { letters } = await waitFor("the router's and the writer's dead letters in the DLQ", async () => {
            const r = await readLetters(c.nc, subjects, table, { limit: 10 });
            return r.letters.length >= 2 ? r : undefined;
          });
          const items = letters.map((l, i) => ({ seq: l.seq, rows: [{ id: 2_000_000 + i, msg: `replayed ${l.letter.stage} letter` }], source: "file" as const, where: `letter ${l.seq}` }));
          const replayed = await replay(c.nc, subjects, items, { table, tableName: TABLE, again: false, dryRun: false });
          assert.deepEqual([replayed.letters, replayed.rows, replayed.failed, replayed.unknown], [2, 2, [], []], replayed.firstError);
          good += 2;
        }
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
      // Closing ends the loop even when it took the last rows before `expected` was set (it would wait for a snapshot
      // that never comes); what was already delivered is still taken, so a duplicate would show in the count.
      closing = true;
      await consumer.close();
      await consuming;
      assert.equal(consumed, good, "the consume session delivered every good row once");
      sub.stop();

      // The joined node drained without a signal, staying up: accepted (progress) done, then drained heartbeats.
      const assign = await openKv(c.nc, subjects.assignKv);
      await waitFor("a bucket owned by n2", async () => {
        const a = (await assign.get(subjects.tableKey(table)))?.json<TableAssignment>();
        return a !== undefined && Object.values(a.buckets).some((b) => b.node === "n2" && b.state === "active") ? true : undefined;
      }, 60_000, 200);
      const drained = await requestDrain(c.nc, "n2", { prefix: "lake", then: "stay", silenceTimeoutMs: 30_000 });
      assert.equal(drained.stillOwned, 0, "n2 handed every bucket off");
      const members = await openKv(c.nc, subjects.membersKv);
      await waitFor("n2's drained heartbeat", async () => ((await members.get("n2"))?.json<MemberHeartbeat>().drained === true ? true : undefined), 30_000, 200);

      // Maintenance over NATS: a dry run answered with accepted … done, and a request the leader refuses.
      const result = await requestMaintenance(c.nc, { type: "maintenance", v: 1, task: "expire-snapshots", table: TABLE, options: { dryRun: true }, progress: true }, { prefix: "lake", acceptTimeoutMs: 30_000, silenceTimeoutMs: 30_000 });
      assert.ok(result.node === "n1" || result.node === "n2");
      // (Valid by its schema, but sent to another table's subject.)
      const refused = await c.nc.request(`lake.ctl.maint.${TABLE}`, enc.encode(JSON.stringify({ type: "maintenance", v: 1, task: "compact", table: "wire.other", options: { dryRun: true } })), { timeout: 30_000 });
      assert.match(new TextDecoder().decode(refused.data), /"ok":false.*was sent to wire\.events/);
      assert.ok(Array.isArray(await adminRequest(c.nc, "lake", { type: "list-tables" })));
      // Lookups: a refusal (the table has no primary key) and an answer (a primary-key table, empty).
      await adminRequest(c.nc, "lake", { type: "create-table", table: "wire.keys", columns: "id BIGINT NOT NULL, v STRING", primaryKeys: ["id"], options: { bucket: "1" } });
      const lookups = await createLookupClient({ nc: c.nc });
      await assert.rejects(lookups.get(TABLE, [{ id: 1 }]), /has no primary key/);
      assert.deepEqual((await lookups.get("wire.keys", [{ id: 1 }])).rows, [null]);

      await waitFor("a COMPACT snapshot and a bucket released to the joining node", () => (notifications.some((n) => n.kind === "COMPACT") && (tap.counts.get("released") ?? 0) > 0 ? true : undefined), 60_000, 200);
      // n1 traced: its flush and commit spans reached the collector.
      await waitFor("n1's flush and commit spans at the collector", () => (["natslake.flush", "natslake.commit"].every((name) => receiver.spans.some((s) => s.name === name && s.service === "natslake")) ? true : undefined), 30_000, 100);
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
        "node-control-request",
        "node-control-reply",
        "dlq-replay-record",
        "message-headers",
        // Trace context, in bodies and headers.
        "commit-entry/committable+traceparent",
        // The beat a flush tick cut a committable on.
        "commit-entry/committable+beat",
        "snapshot-notification+traceparent",
        "snapshot-notification+traceparent-header",
        "row-batch+traceparent-header",
        "consume-open",
        "consume-open-reply",
        "consume-control",
        "consume-control-reply",
        "consume-headers",
        "consume-chunk",
        "lookup-request",
        "lookup-reply",
      ];
      for (const name of main) assert.ok((tap.counts.get(name) ?? 0) > 0, `no ${name} seen; counts: ${JSON.stringify(counts)}`);
      assert.ok(tap.chunkRows >= good, `the consume chunks carried every row (${tap.chunkRows} of ${good})`);
      assert.ok((tap.counts.get("dead-letter") ?? 0) >= 2, "the router's and the writer's dead letters");
      assert.ok((tap.counts.get("commit-entry/committable") ?? 0) > (tap.counts.get("commit-entry/committable+traceparent") ?? 0), "committables without trace context too (the forged one at least)");
      process.stdout.write(`wire contracts: validated ${JSON.stringify(counts)}\n`);
    });
  } finally {
    if (!tapStopped) await tap.stop().catch(() => undefined);
    await c.stop();
    await tracing.shutdown();
    await receiver.close();
  }
});
