/**
 * The dead-letter stream is `discard: old` with `max_bytes`: when full, the server drops the oldest letters. Those
 * drops are counted (`dlqDropped`, the node's `natslake_dlq_dropped_total`) from the stream's first sequence.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Meter, ObservableCallback, ObservableResult } from "@opentelemetry/api";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { dlqDropped, dlqDroppedOf, ensureTableInfra, registerDlqDroppedMetric } from "../../cluster/nats/table-infra.ts";
import { startNats, type ServerHandle } from "../helpers/servers.ts";
import { createTable, tempDir } from "../helpers/tables.ts";

let server: ServerHandle;
let nc: NatsConnection;
const wh = tempDir();

before(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
});
after(async () => {
  await nc.close();
  await server.stop();
  wh.cleanup();
});

test("dlqDroppedOf - first_seq - 1 letters left the head; an empty, never-used stream dropped none", () => {
  assert.equal(dlqDroppedOf({ first_seq: 0, last_seq: 0, messages: 0 }), 0);
  assert.equal(dlqDroppedOf({ first_seq: 1, last_seq: 0, messages: 0 }), 0);
  assert.equal(dlqDroppedOf({ first_seq: 1, last_seq: 10, messages: 10 }), 0);
  assert.equal(dlqDroppedOf({ first_seq: 8, last_seq: 10, messages: 3 }), 7);
  assert.equal(dlqDroppedOf({ first_seq: 11, last_seq: 10, messages: 0 }), 10, "all aged out");
});

test("DLQ full: the oldest letters are dropped, and exactly those are counted (also as natslake_dlq_dropped_total)", async () => {
  const subjects = new Subjects("dlqt");
  const jsm = await jetstreamManager(nc);
  assert.equal(await dlqDropped(jsm, subjects), null, "no DLQ stream yet");
  const table = await createTable(wh.path, "d.t", "id BIGINT");
  const dlqMaxBytes = 16 * 1024;
  await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: 1024 * 1024, duplicateWindowMs: 60_000, dlqMaxBytes });
  assert.equal(await dlqDropped(jsm, subjects), 0);
  const js = jetstream(nc);
  const letter = new TextEncoder().encode(JSON.stringify({ reason: "column id: expected a 64-bit integer", payload: "x".repeat(400) }));
  const sent = 200; // ~90 KB of letters into a 16 KiB stream
  for (let i = 0; i < sent; i++) await js.publish(subjects.dlq(table.identifier), letter);
  const st = (await jsm.streams.info(subjects.dlqStream)).state;
  assert.ok(st.messages > 0 && st.messages < sent, `the stream kept ${st.messages} of ${sent}`);
  assert.ok(st.bytes <= dlqMaxBytes);
  const dropped = await dlqDropped(jsm, subjects);
  assert.equal(dropped, sent - st.messages, "every letter sent is either held or counted as dropped");
  // The metric reads the same.
  let callback: ObservableCallback | undefined;
  const meter = { createObservableCounter: () => ({ addCallback: (cb: ObservableCallback) => void (callback = cb) }) } as unknown as Meter;
  registerDlqDroppedMetric(meter, nc, subjects);
  const seen: Array<[number, unknown]> = [];
  await callback!({ observe: (v: number, attrs?: unknown) => void seen.push([v, attrs]) } as ObservableResult);
  assert.deepEqual(seen, [[sent - st.messages, { stream: subjects.dlqStream }]]);
});
