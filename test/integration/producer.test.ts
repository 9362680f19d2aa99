/**
 * The producer path against a real nats-server (the one on PATH: Debian's 2.9.10 in CI): table infrastructure,
 * bucket routing identical to Paimon's, message ids and de-duplication, a full stream, bad rows, read-your-writes
 * via snapshot notifications, and raw publishing.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { DiscardPolicy, jetstream, jetstreamManager, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, nanos, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, isLakeError } from "../../src/errors.ts";
import { createBucketFunction } from "../../src/format/bucket.ts";
import type { Table } from "../../src/table/table.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { ensureTableInfra, readTableMeta, serverHasDiscardNewSizeBug } from "../../cluster/nats/table-infra.ts";
import { createProducer, publishRaw, publishWithRetry, type BatchOutcome } from "../../cluster/producer.ts";
import { subscribeSnapshots } from "../../cluster/snapshots-client.ts";
import { natsPorts } from "../../cluster/nats/adapters.ts";
import type { RowBatch, SnapshotNotification, TableAssignment } from "../../actors/wire/messages.ts";
import { decodeRowBatch, encodeRowBatch, parseRawPayload } from "../../actors/wire/row-batch.ts";
import { startNats, type ServerHandle } from "../helpers/servers.ts";
import { createTable, tempDir } from "../helpers/tables.ts";

const COLUMNS = "id BIGINT, ts TIMESTAMP(3), user STRING, event STRING, amount DOUBLE, qty INT";
const EVENTS = ["click", "view", "buy", "cart", "login", "logout", "search", "share", "like", "comment"];
const row = (i: number): Record<string, unknown> => ({
  id: i,
  ts: 1_700_000_000_000 + i,
  user: `user-${String((i * 7919) % 100000).padStart(6, "0")}`,
  event: EVENTS[i % 10],
  amount: (i % 1000) * 0.25,
  qty: i % 100,
});

let server: ServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let warehouse: ReturnType<typeof tempDir>;
let tableNo = 0;

before(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  jsm = await jetstreamManager(nc);
  warehouse = tempDir("natslake-producer-");
});

after(async () => {
  await nc.close();
  await server.stop();
  warehouse.cleanup();
});

/** A fresh table (own name, so own streams) with `buckets` fixed buckets on `id`, registered on NATS. */
async function registeredTable(
  opts: { buckets?: number; maxBytes?: number; duplicateWindowMs?: number; prefix?: string } = {},
): Promise<{ table: Table; subjects: Subjects; name: string }> {
  const name = `db.t${++tableNo}`;
  const buckets = opts.buckets ?? 4;
  const table = await createTable(warehouse.path, name, COLUMNS, {
    options: buckets > 0 ? { bucket: String(buckets), "bucket-key": "id" } : { bucket: "-1" },
  });
  const subjects = new Subjects(opts.prefix ?? "lake");
  await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: opts.maxBytes ?? 64 * 1024 * 1024, duplicateWindowMs: opts.duplicateWindowMs ?? 60_000 });
  return { table, subjects, name };
}

interface StoredBatch {
  subject: string;
  seq: number;
  msgId: string;
  batch: RowBatch;
}

async function storedBatches(stream: string): Promise<StoredBatch[]> {
  const st = (await jsm.streams.info(stream)).state;
  const out: StoredBatch[] = [];
  for (let seq = st.first_seq; seq <= st.last_seq && st.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (m === null) continue;
    out.push({ subject: m.subject, seq: m.seq, msgId: m.header.get("Nats-Msg-Id"), batch: decodeRowBatch(m.data) });
  }
  return out;
}

test("ensureTableInfra creates the streams and KV buckets as configured, idempotently, and registers the table", async () => {
  const { table, subjects, name } = await registeredTable({ maxBytes: 5 * 1024 * 1024, duplicateWindowMs: 90_000 });
  const id = table.identifier;
  const ingest = await jsm.streams.info(subjects.ingestStream(id));
  assert.deepEqual([...ingest.config.subjects].sort(), [`lake.in.${name}`, `lake.in.${name}.*`].sort());
  assert.equal(ingest.config.discard, DiscardPolicy.New);
  assert.equal(ingest.config.max_bytes, 5 * 1024 * 1024);
  assert.equal(ingest.config.duplicate_window, nanos(90_000));
  assert.equal(ingest.config.storage, StorageType.File);
  assert.equal(ingest.config.num_replicas, 1);

  const commit = await jsm.streams.info(subjects.commitStream(id));
  assert.deepEqual(commit.config.subjects, [`lake.commit.${name}`]);
  assert.equal(commit.config.storage, StorageType.File);
  const dlq = await jsm.streams.info(subjects.dlqStream);
  assert.deepEqual(dlq.config.subjects, ["lake.dlq.>"]);
  assert.equal(dlq.config.max_age, nanos(7 * 86_400_000));
  assert.ok(dlq.config.max_bytes > 0);

  const kvm = new Kvm(nc);
  for (const kvName of [subjects.tablesKv, subjects.membersKv, subjects.assignKv, subjects.snapKv, subjects.routerKv]) {
    const status = await (await kvm.open(kvName)).status();
    assert.equal(status.history, 1, kvName);
  }
  assert.equal((await (await kvm.open(subjects.membersKv)).status()).ttl, 10_000);

  const meta = await readTableMeta(nc, subjects, name);
  assert.equal(meta.table, name);
  assert.equal(meta.bucket, 4);
  assert.deepEqual(meta.bucketKey, ["id"]);
  assert.equal(meta.ingestStream, subjects.ingestStream(id));
  assert.equal(meta.duplicateWindowMs, 90_000);
  assert.deepEqual(
    meta.schema.fields.map((f) => f.name),
    ["id", "ts", "user", "event", "amount", "qty"],
  );

  // Idempotent; and an existing stream is updated compatibly (limits change, subjects stay).
  const again = await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: 5 * 1024 * 1024, duplicateWindowMs: 90_000 });
  assert.equal(again.ingest.state.first_seq, ingest.state.first_seq);
  const updated = await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: 6 * 1024 * 1024, duplicateWindowMs: 30_000 });
  assert.equal(updated.ingest.config.max_bytes, 6 * 1024 * 1024);
  assert.equal(updated.ingest.config.duplicate_window, nanos(30_000));
  assert.equal((await readTableMeta(nc, subjects, name)).duplicateWindowMs, 30_000);
  // nats-server before 2.10.5 gets a warning about its discard-new size check.
  assert.equal(updated.warnings.length > 0, serverHasDiscardNewSizeBug(nc.info?.version));
});

test("readTableMeta and createProducer fail clearly for a table that is not registered", async () => {
  await assert.rejects(readTableMeta(nc, new Subjects("lake"), "db.nope"), (e: unknown) => {
    assert.ok(isLakeError(e, ErrorKind.NotFound));
    assert.match(e.message, /table 'db\.nope' is not registered/);
    return true;
  });
  await assert.rejects(readTableMeta(nc, new Subjects("nobody"), "db.nope"), /KV bucket 'nobody_tables' does not exist/);
  await assert.rejects(createProducer({ nc, table: "db.nope" }), /not registered/);
});

test("the producer routes rows to Paimon's bucket, keeps per-bucket order and uses unique message ids", async () => {
  const { table, subjects, name } = await registeredTable({ buckets: 4 });
  const producer = await createProducer({ nc, table: name, producerId: "prodA", maxBatchRows: 100, lingerMs: 2 });
  const N = 2_000;
  const pending: Array<Promise<BatchOutcome>> = [];
  for (let i = 0; i < N; i++) pending.push(producer.write(row(i)));
  const flushed = await producer.flush();
  const outcomes = [...new Set(await Promise.all(pending))];
  assert.ok(flushed.length > 0);
  assert.ok(outcomes.every((o) => o.status === "ok"), JSON.stringify(outcomes.filter((o) => o.status !== "ok")));
  assert.equal(
    outcomes.reduce((s, o) => s + o.rows, 0),
    N,
  );

  const bucketFn = createBucketFunction([table.typeOf("id")], 4);
  const expectedPerBucket = [0, 0, 0, 0];
  for (let i = 0; i < N; i++) expectedPerBucket[bucketFn([BigInt(i)])]!++;

  const stored = await storedBatches(subjects.ingestStream(table.identifier));
  assert.equal(stored.length, outcomes.length);
  const rowsPerBucket = [0, 0, 0, 0];
  const lastIdPerBucket = [-1, -1, -1, -1];
  const ids = new Set<string>();
  for (const m of stored) {
    const bucket = Number(m.subject.split(".").at(-1));
    assert.equal(m.subject, `lake.in.${name}.${bucket}`);
    assert.match(m.msgId, new RegExp(`^prodA-${bucket}-\\d+$`));
    ids.add(m.msgId);
    assert.deepEqual(m.batch.cols, ["id", "ts", "user", "event", "amount", "qty"]);
    for (const values of m.batch.rows) {
      const id = Number(values[0]);
      assert.equal(bucketFn([BigInt(id)]), bucket, `row ${id} is in bucket ${bucket}`);
      assert.ok(id > lastIdPerBucket[bucket]!, "rows of a bucket keep write order");
      lastIdPerBucket[bucket] = id;
      rowsPerBucket[bucket]!++;
      assert.deepEqual(values, [id, 1_700_000_000_000 + id, row(id)["user"], row(id)["event"], (id % 1000) * 0.25, id % 100]);
    }
  }
  assert.equal(ids.size, stored.length, "message ids are unique across the stream");
  assert.deepEqual(rowsPerBucket, expectedPerBucket);
  const info = await jsm.streams.info(subjects.ingestStream(table.identifier), { subjects_filter: ">" });
  assert.equal(info.state.subjects?.[`lake.in.${name}`], undefined, "nothing on the bare subject");

  // The token holds the highest acknowledged sequence per bucket.
  const token = producer.token();
  for (let b = 0; b < 4; b++) {
    assert.equal(token.offsets[String(b)], Math.max(...stored.filter((m) => m.subject.endsWith(`.${b}`)).map((m) => m.seq)));
  }
  await producer.close();
  assert.throws(() => producer.write(row(1)), /closed/);
});

test("a bucket -1 table sends all rows to bucket 0; writeMany resolves with its batches' outcomes", async () => {
  const { table, subjects, name } = await registeredTable({ buckets: -1 });
  const producer = await createProducer({ nc, table: name, maxBatchRows: 10 });
  const outcomes = await producer.writeMany(Array.from({ length: 25 }, (_, i) => row(i)));
  assert.deepEqual(
    outcomes.map((o) => [o.status, o.bucket, o.rows]),
    [
      ["ok", 0, 10],
      ["ok", 0, 10],
      ["ok", 0, 5],
    ],
  );
  const info = await jsm.streams.info(subjects.ingestStream(table.identifier), { subjects_filter: ">" });
  assert.deepEqual(info.state.subjects, { [`lake.in.${name}.0`]: 3 });
  await producer.close();
});

test("republishing a batch with the same message id is acknowledged as a duplicate and stored once", async () => {
  const { table, subjects, name } = await registeredTable();
  const js = jetstream(nc);
  const subject = subjects.ingestBucket(table.identifier, 1);
  const payload = encodeRowBatch({ v: 1, schema: 0, cols: ["id"], rows: [[1]] });
  const first = await js.publish(subject, payload, { msgID: "dup-1-0" });
  const second = await js.publish(subject, payload, { msgID: "dup-1-0" });
  assert.equal(first.duplicate, false);
  assert.equal(second.duplicate, true);
  assert.equal(second.seq, first.seq);
  const policy = { timeoutMs: 2_000, retries: 1, duplicateWindowMs: 60_000 };
  const third = await publishWithRetry(js, subject, payload, "dup-1-0", policy);
  assert.equal(third.status, "duplicate");
  assert.equal(third.seq, first.seq);
  assert.equal((await jsm.streams.info(subjects.ingestStream(table.identifier))).state.messages, 1);
  void name;
});

test("batches with the same producer counter on different buckets both land", async () => {
  const { table, subjects, name } = await registeredTable({ buckets: 4 });
  const bucketFn = createBucketFunction([table.typeOf("id")], 4);
  const a = 0;
  let b = 1;
  while (bucketFn([BigInt(b)]) === bucketFn([BigInt(a)])) b++;
  const producer = await createProducer({ nc, table: name, producerId: "same" });
  const [oa, ob] = await Promise.all([producer.write(row(a)), producer.write(row(b))]);
  assert.equal(oa.status, "ok");
  assert.equal(ob.status, "ok");
  assert.equal(oa.msgId, `same-${bucketFn([BigInt(a)])}-0`);
  assert.equal(ob.msgId, `same-${bucketFn([BigInt(b)])}-0`);
  assert.notEqual(oa.seq, ob.seq);
  assert.equal((await jsm.streams.info(subjects.ingestStream(table.identifier))).state.messages, 2);
  await producer.close();
});

test("a full stream (discard new) fails the overflowing batch instead of losing rows", async () => {
  const { table, subjects, name } = await registeredTable({ buckets: 1 });
  const stream = subjects.ingestStream(table.identifier);
  const producer = await createProducer({ nc, table: name, producerId: "full", maxBatchRows: 50 });
  const batchOf = (k: number): Array<Record<string, unknown>> => Array.from({ length: 50 }, (_, i) => row(k * 50 + i));
  const [first] = await producer.writeMany(batchOf(0));
  assert.equal(first!.status, "ok");
  // Room for exactly 3 such messages and half of a fourth: the fourth must be refused, never the first deleted.
  // (nats-server < 2.10.5 misjudges sizes within a few dozen bytes of the limit; half a message is far from that.)
  const size = (await jsm.streams.info(stream)).state.bytes;
  await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: 3 * size + Math.floor(size / 2), duplicateWindowMs: 60_000 });
  const outcomes: BatchOutcome[] = [first!];
  for (let k = 1; k < 6; k++) outcomes.push(...(await producer.writeMany(batchOf(k))));
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ["ok", "ok", "ok", "failed", "failed", "failed"],
  );
  assert.match(outcomes[3]!.error!, /maximum bytes exceeded/);
  assert.equal(outcomes[3]!.attempts, 1, "a definite refusal is not retried");
  const st = (await jsm.streams.info(stream)).state;
  assert.equal(st.messages, 3);
  assert.equal(st.first_seq, 1, "no acknowledged message was deleted");
  const stored = await storedBatches(stream);
  assert.deepEqual(
    stored.map((m) => m.batch.rows[0]![0]),
    [0, 50, 100],
  );
  await producer.close();
});

test("a bad row throws synchronously naming the column, and nothing of it is published", async () => {
  const { table, subjects, name } = await registeredTable();
  const producer = await createProducer({ nc, table: name });
  assert.throws(() => producer.write({ ...row(1), qty: "lots" }), (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /column qty/.test(e.message));
  assert.throws(() => producer.write({ ...row(1), colour: "red" }), /unknown column 'colour'/);
  assert.throws(() => producer.write({ ...row(1), id: 2n ** 63n }), /column id/);
  assert.throws(() => producer.writeMany([row(1), { ...row(2), ts: "yesterday" }, row(3)]), /row 1: column ts/);
  assert.throws(() => producer.write({ ...row(1), user: "x".repeat(2 * 1024 * 1024) }), /row is too large for one NATS message/);
  assert.deepEqual(await producer.flush(), []);
  assert.equal((await jsm.streams.info(subjects.ingestStream(table.identifier))).state.messages, 0);
  // The producer stays usable.
  assert.equal((await producer.write(row(4))).status, "ok");
  assert.equal((await jsm.streams.info(subjects.ingestStream(table.identifier))).state.messages, 1);
  await producer.close();
});

function notification(name: string, snapshotId: number, offsets: Record<string, number>): SnapshotNotification {
  return {
    type: "snapshot",
    table: name,
    snapshotId,
    kind: "APPEND",
    timeMillis: Date.now(),
    linkedAtMillis: Date.now(),
    totalRecordCount: 0,
    deltaRecordCount: 0,
    epoch: 1,
    offsets,
  };
}

/** What the committer does after a snapshot lands: the KV's last value, then the core subject. */
async function announce(subjects: Subjects, table: Table, n: SnapshotNotification, opts: { kv?: boolean } = {}): Promise<void> {
  if (opts.kv ?? true) await (await new Kvm(nc).open(subjects.snapKv)).put(subjects.tableKey(table.identifier), JSON.stringify(n));
  nc.publish(subjects.snapshots(table.identifier), JSON.stringify(n));
  await nc.flush();
}

test("waitVisible resolves once a snapshot notification covers every bucket of the token", async () => {
  const { table, subjects, name } = await registeredTable({ buckets: 4 });
  const producer = await createProducer({ nc, table: name });
  await producer.writeMany(Array.from({ length: 40 }, (_, i) => row(i)));
  const token = producer.token();
  assert.equal(Object.keys(token.offsets).length, 4);
  const maxSeq = Math.max(...Object.values(token.offsets));

  let settled = false;
  const waiting = producer.waitVisible(token, 5_000).finally(() => (settled = true));
  await new Promise((r) => setTimeout(r, 50));
  // Covers three buckets only: not yet.
  const partial = { ...Object.fromEntries(Object.entries(token.offsets).map(([b, s]) => [b, s])), "3": 0 };
  await announce(subjects, table, notification(name, 1, partial));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(settled, false, "not visible yet");
  await announce(subjects, table, notification(name, 2, { "0": maxSeq, "1": maxSeq, "2": maxSeq, "3": maxSeq }));
  assert.equal((await waiting)?.snapshotId, 2);

  // Later callers are served from the KV's last value at once.
  const t0 = Date.now();
  assert.equal((await producer.waitVisible(token, 5_000))?.snapshotId, 2);
  assert.ok(Date.now() - t0 < 1_000);
  // A token nothing covers times out with a clear error.
  await assert.rejects(producer.waitVisible({ table: name, offsets: { "0": maxSeq + 100 } }, 200), /not visible in a snapshot within 200 ms/);
  // An empty token is visible at once.
  assert.equal(await producer.waitVisible({ table: name, offsets: {} }, 10), null);
  await producer.close();
});

test("subscribeSnapshots delivers the last notification first, then live ones, increasing and never twice", async () => {
  const { table, subjects, name } = await registeredTable();
  const seen: number[] = [];
  const none = await subscribeSnapshots(nc, name, (n) => seen.push(-n.snapshotId));
  assert.equal(none.lastSnapshotId, 0);
  none.stop();
  await announce(subjects, table, notification(name, 5, { "0": 1 }));

  const sub = await subscribeSnapshots(nc, name, (n) => seen.push(n.snapshotId));
  assert.deepEqual(seen, [5]);
  await announce(subjects, table, notification(name, 5, { "0": 1 }), { kv: false }); // repeated
  await announce(subjects, table, notification(name, 4, { "0": 1 }), { kv: false }); // older (a deposed leader)
  await announce(subjects, table, notification(name, 6, { "0": 2 }));
  await announce(subjects, table, notification(name, 7, { "0": 3 }));
  nc.publish(subjects.snapshots(table.identifier), "not json");
  await nc.flush();
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(seen, [5, 6, 7]);
  assert.equal(sub.lastSnapshotId, 7);
  sub.stop();
  await announce(subjects, table, notification(name, 8, { "0": 4 }));
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(seen, [5, 6, 7]);
});

test("the KV's last notification only moves forward: a deposed leader's late announcement does not set it back", async () => {
  const { subjects, name } = await registeredTable();
  const ports = await natsPorts(nc, subjects);
  await ports.bus.publishSnapshot(notification(name, 7, { "0": 3 }));
  // A leader frozen between linking snapshot 5 and announcing it announces it after its successor announced 7.
  await ports.bus.publishSnapshot(notification(name, 5, { "0": 1 }));
  assert.equal(await ports.bus.lastSnapshotNotified(name), 7);
  const seen: number[] = [];
  const sub = await subscribeSnapshots(nc, name, (n) => seen.push(n.snapshotId));
  assert.deepEqual(seen, [7], "a late subscriber starts from the newest snapshot announced");
  sub.stop();
  await ports.bus.publishSnapshot(notification(name, 8, { "0": 4 }));
  assert.equal(await ports.bus.lastSnapshotNotified(name), 8);
});

test("a notification is in the KV before it is on the subject: a subscriber that missed it on the subject finds it in the KV", async () => {
  const { subjects, name } = await registeredTable();
  const ports = await natsPorts(nc, subjects);
  // subscribeSnapshots subscribes, then reads the KV. Whatever a subscription can no longer receive on the subject must
  // already be in the KV: so when the subject's message arrives anywhere, the KV holds that snapshot (or a later one).
  const kvAtArrival: Array<Promise<number>> = [];
  const raw = nc.subscribe(subjects.snapshots(parseIdentifier(name)), { callback: () => void kvAtArrival.push(ports.bus.lastSnapshotNotified(name)) });
  await nc.flush();
  for (let id = 1; id <= 20; id++) await ports.bus.publishSnapshot(notification(name, id, { "0": id }));
  await nc.flush();
  await new Promise((r) => setTimeout(r, 50));
  raw.unsubscribe();
  const seenInKv = await Promise.all(kvAtArrival);
  assert.equal(seenInKv.length, 20, "every notification arrived on the subject");
  seenInKv.forEach((kvId, i) => assert.ok(kvId >= i + 1, `notification ${i + 1} arrived while the KV held ${kvId}`));
});

test("a table's assignment is written only by the newest leader: an older leader's late write is refused, Fenced", async () => {
  const { subjects, name } = await registeredTable();
  const ports = await natsPorts(nc, subjects);
  const assignment = (leaderEpoch: number, node: string): TableAssignment => ({ v: 1, table: name, leaderEpoch, leader: `l${leaderEpoch}`, buckets: { "0": { node, epoch: leaderEpoch, state: "active" } } });
  await ports.cluster.writeAssignment(assignment(1, "a"));
  await ports.cluster.writeAssignment(assignment(2, "b"));
  // The leader of epoch 1 resumes after its lease passed and finishes its round.
  await assert.rejects(ports.cluster.writeAssignment(assignment(1, "a")), (e: unknown) => isLakeError(e, ErrorKind.Fenced) && /leader epoch 2/.test((e as Error).message));
  assert.deepEqual(await ports.cluster.readAssignment(name), assignment(2, "b"));
  // The same leader writes again, and a newer one takes over.
  await ports.cluster.writeAssignment(assignment(2, "c"));
  await ports.cluster.writeAssignment(assignment(3, "d"));
  assert.deepEqual(await ports.cluster.readAssignment(name), assignment(3, "d"));
  // Concurrent writers of one epoch: each write is based on what it read, and the last one stands whole.
  await Promise.all(["e", "f", "g"].map((n) => ports.cluster.writeAssignment(assignment(3, n))));
  assert.match((await ports.cluster.readAssignment(name))!.buckets["0"]!.node, /^[efg]$/);
});

test("publishWithRetry retries a lost acknowledgement with the same id, and reports unknown when none comes", async () => {
  // A responder on a plain subject stands in for JetStream and drops its first answers, as a lost ack would.
  const requests: string[] = [];
  const sub = nc.subscribe("fake.js.ack", {
    callback: (_err: Error | null, msg: Msg) => {
      requests.push(msg.headers?.get("Nats-Msg-Id") ?? "");
      if (requests.length === 3) msg.respond(JSON.stringify({ stream: "FAKE", seq: 42, duplicate: true }));
    },
  });
  const js = jetstream(nc);
  const policy = { timeoutMs: 150, retries: 3, duplicateWindowMs: 60_000 };
  const r = await publishWithRetry(js, "fake.js.ack", new Uint8Array([1]), "retry-0-7", policy);
  assert.deepEqual(requests, ["retry-0-7", "retry-0-7", "retry-0-7"]);
  assert.equal(r.status, "duplicate");
  assert.equal(r.seq, 42);
  assert.equal(r.attempts, 3);
  sub.unsubscribe();

  const silent = nc.subscribe("fake.js.silent", { callback: () => {} });
  const u = await publishWithRetry(js, "fake.js.silent", new Uint8Array([1]), "retry-0-8", { timeoutMs: 100, retries: 1, duplicateWindowMs: 60_000 });
  assert.equal(u.status, "unknown");
  assert.equal(u.attempts, 2);
  // No retry is sent once it could arrive after the duplicate window.
  const w = await publishWithRetry(js, "fake.js.silent", new Uint8Array([1]), "retry-0-9", { timeoutMs: 100, retries: 5, duplicateWindowMs: 250 });
  assert.equal(w.status, "unknown");
  assert.equal(w.attempts, 1);
  silent.unsubscribe();
  // No stream at all: nobody answers, a definite failure.
  const n = await publishWithRetry(js, "no.stream.here", new Uint8Array([1]), "retry-0-10", { timeoutMs: 200, retries: 1, duplicateWindowMs: 60_000 });
  assert.equal(n.status, "failed");
});

test("publishRaw sends unvalidated rows to the bare subject in msgpack or JSON", async () => {
  const { table, subjects, name } = await registeredTable();
  const rows = Array.from({ length: 7 }, (_, i) => ({ ...row(i), id: 2n ** 62n + BigInt(i) }));
  const outcomes = await publishRaw(nc, name, rows, { batchRows: 3 });
  assert.deepEqual(
    outcomes.map((o) => [o.status, o.rows, o.bucket]),
    [
      ["ok", 3, -1],
      ["ok", 3, -1],
      ["ok", 1, -1],
    ],
  );
  const json = await publishRaw(nc, name, [{ id: 2n ** 63n - 1n, bad: "kept for the router" }], { encoding: "json" });
  assert.equal(json[0]!.status, "ok");
  const stream = subjects.ingestStream(table.identifier);
  const info = await jsm.streams.info(stream, { subjects_filter: ">" });
  assert.deepEqual(info.state.subjects, { [`lake.in.${name}`]: 4 });
  const first = await jsm.streams.getMessage(stream, { seq: 1 });
  const parsed = parseRawPayload(first!.data);
  assert.ok("rows" in parsed);
  assert.equal(parsed.rows.length, 3);
  assert.equal(parsed.rows[0]!["id"], 2n ** 62n);
  const last = await jsm.streams.getMessage(stream, { seq: 4 });
  assert.equal(new TextDecoder().decode(last!.data)[0], "[");
  assert.deepEqual(parseRawPayload(last!.data), { rows: [{ id: 2n ** 63n - 1n, bad: "kept for the router" }] });
  assert.match(last!.header.get("Nats-Msg-Id"), /^raw-/);
});
