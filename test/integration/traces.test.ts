/**
 * Traces of one published batch, exported by OTLP/HTTP (JSON) to a loopback HTTP server in this test acting as the
 * collector: the producer's publish span (this process, tracing on through the same OTEL_* variables), the writer's
 * flush span linking to it, the leader's commit span linking to the flush, and the notify span, a child of the
 * commit span, whose context the snapshot notification carries in its body and its `traceparent` header.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Msg } from "@nats-io/transport-node";
import { startOtlpReceiver } from "../helpers/otlp-receiver.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { startTracingIfConfigured } from "../../cluster/tracing.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { readRows } from "../../src/scan/read.ts";

test("traces - one batch: publish → flush (linked) → commit (linked) → notify (child), exported by OTLP/JSON; the notification carries the context", { timeout: 180_000 }, async () => {
  const receiver = await startOtlpReceiver();
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "200" };
  // This process is the producing service: the same standard variables turn its tracing on.
  const tracing = await startTracingIfConfigured(otel, { serviceName: "trace-test-producer" });
  assert.ok(tracing !== null, "the OTLP endpoint turns tracing on");
  try {
    await withNodeLogsOnFailure(c, async () => {
      c.startNode("n1", [], otel);
      const name = "tr.events";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL, msg STRING"), options: { bucket: "1", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, name);
      // Every notification as it travels (headers included), to compare with what waitVisible hands back.
      const seen: Msg[] = [];
      const sub = c.nc.subscribe(new Subjects("lake").snapshots(parseIdentifier(name)), { callback: (_e, m) => void seen.push(m) });
      const outcomes = Array.from({ length: 20 }, (_, i) => producer.write({ id: i, msg: `m${i}` }));
      await producer.flush();
      const outcome = await outcomes[0]!;
      assert.equal(outcome.status, "ok");
      for (const o of outcomes) assert.equal((await o).msgId, outcome.msgId, "the 20 rows travel in one batch");
      const n = await producer.waitVisible(producer.token(), 60_000);
      assert.ok(n !== null);
      await producer.close();
      assert.match(n.traceparent ?? "", /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, "the notification carries a sampled W3C traceparent");
      const onWire = await waitFor("the notification on the subject", () => seen.find((m) => (m.json<{ snapshotId: number }>()).snapshotId === n.snapshotId), 10_000);
      assert.equal(onWire.headers?.get("traceparent"), n.traceparent, "and the same in its traceparent header");
      sub.unsubscribe();
      await tracing.shutdown(); // the publish span leaves this process now

      const publish = await waitFor("the batch's publish span", () => receiver.spans.find((s) => s.name === "natslake.publish" && s.attributes["messaging.message.id"] === outcome.msgId), 30_000, 100);
      assert.equal(publish.service, "trace-test-producer");
      assert.equal(publish.kind, 4, "PRODUCER");
      assert.equal(publish.attributes["natslake.table"], name);
      assert.equal(publish.attributes["messaging.batch.message_count"], 20);
      assert.equal(publish.attributes["natslake.outcome"], "ok");
      const flush = await waitFor("the flush span linking to it", () => receiver.spans.find((s) => s.name === "natslake.flush" && s.links.some((l) => l.traceId === publish.traceId && l.spanId === publish.spanId)), 30_000, 100);
      assert.equal(flush.service, "natslake");
      assert.equal(flush.attributes["natslake.table"], name);
      assert.equal(flush.attributes["natslake.bucket"], 0);
      assert.equal(flush.attributes["natslake.rows"], 20);
      assert.equal(flush.parentSpanId, "", "a flush covers many batches: a root span with links, not a child of one");
      const commit = await waitFor("the commit span linking to the flush", () => receiver.spans.find((s) => s.name === "natslake.commit" && s.links.some((l) => l.traceId === flush.traceId && l.spanId === flush.spanId)), 30_000, 100);
      assert.equal(commit.attributes["natslake.snapshot_id"], n.snapshotId, "the commit that landed the snapshot the notification announced");
      assert.equal(commit.attributes["natslake.rows"], 20);
      const notify = await waitFor("the notify span under the commit", () => receiver.spans.find((s) => s.name === "natslake.notify" && s.parentSpanId === commit.spanId), 30_000, 100);
      assert.equal(notify.traceId, commit.traceId, "notify continues the commit's trace");
      assert.equal(notify.kind, 4, "PRODUCER");
      assert.equal(n.traceparent, `00-${notify.traceId}-${notify.spanId}-01`, "a subscriber continues exactly that span");
      assert.deepEqual([...receiver.contentTypes], ["application/json"], "OTLP/HTTP with JSON encoding");
      // The rows themselves landed once.
      const rows: unknown[] = [];
      for await (const r of readRows(await catalog.getTable(parseIdentifier(name)))) rows.push(r);
      assert.equal(rows.length, 20);
    });
  } finally {
    await tracing.shutdown();
    await c.stop();
    await receiver.close();
  }
});
