/**
 * The actors' ports implemented over NATS: JetStream for ingest and committables, core NATS for notifications and
 * rejections, KV for membership, assignments and the last notification.
 *
 * Readers are ordered consumers (ephemeral, AckPolicy.None, created fresh per open at `afterSeq + 1` with a
 * single `filter_subject`, which nats-server 2.9 supports): progress lives in snapshots, never in acks.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { errors, headers as natsHeaders, type MsgHdrs } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { DeliverPolicy, JetStreamApiError, jetstream, jetstreamManager, type Consumer, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { Kvm, type KV, type KvEntry } from "@nats-io/kv";
import type { Identifier } from "../../src/table/table.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { ensureError, ErrorKind, LakeError } from "../../src/errors.ts";
import type { AttemptLog, BucketReader, Bus, ClusterState, CommitLog, CommitReader, IngestLog, IngestMessage, LiveStream, RawLog, RouterProgress } from "../../actors/ports.ts";
import { formatStreamIdentity } from "../../src/commit/stream-identity.ts";
import type { BucketAttempts, CommitEntry, DeadLetter, MemberHeartbeat, Released, SnapshotNotification, StreamIdMarker, TableAssignment, WriterRejection } from "../../actors/wire/messages.ts";
import { decodeCommitEntry, encodeMsg } from "../../actors/wire/codec.ts";
import { fitDeadLetter, payloadLimit } from "../../actors/wire/limits.ts";
import { encodeRowBatch } from "../../actors/wire/row-batch.ts";
import { H_RAW_SEQ } from "../../actors/wire/messages.ts";
import type { Subjects } from "./subjects.ts";
import { bucketAttemptsSchema } from "../../actors/wire/schemas.ts";
import { H_TRACEPARENT } from "../../actors/wire/trace-context.ts";
import { tracingActive } from "../tracing.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

export interface NatsPorts {
  ingest: IngestLog;
  raw: RawLog;
  commits: CommitLog;
  bus: Bus;
  cluster: ClusterState;
  attempts: AttemptLog;
  js: JetStreamClient;
  jsm: JetStreamManager;
  kv: { members: KV; assign: KV; snap: KV };
}

/**
 * Publishes with retries, always with the same message id (de-duplicated by the stream), for up to `budgetMs`: long
 * enough to ride out a JetStream leader election after the loss of a NATS node (several seconds of "jetstream is not
 * enabled"), far inside the stream's duplicate window. Giving up sooner made writers drop their whole buffer and
 * re-read it (chaos: nats-node-kill).
 */
async function publishIdempotent(js: JetStreamClient, subject: string, data: Uint8Array, msgID: string, headers?: MsgHdrs, budgetMs = 15_000): Promise<void> {
  const deadline = Date.now() + budgetMs;
  let last: Error | undefined;
  for (let i = 0; ; i++) {
    try {
      await js.publish(subject, data, { msgID, timeout: 5000, ...(headers ? { headers } : {}) });
      return;
    } catch (e) {
      last = ensureError(e);
      const wait = Math.min(1000, 100 * 2 ** i);
      if (Date.now() + wait >= deadline) break;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
  throw last ?? new Error(`publish to ${subject} failed`);
}

/**
 * Creates an ordered consumer, trying again for up to `budgetMs`: JetStream places an R1 consumer on any of the
 * stream's peers, an offline one included, and a consumer placed on a dead server never answers — after the loss of
 * one of three NATS nodes about a third of the attempts time out — and while JetStream elects leaders the API answers
 * "not enabled" for seconds (chaos: nats-node-kill). Supervised re-opens back off exponentially; retrying here keeps
 * a re-open within seconds of JetStream being usable again.
 *
 * Attempts are hedged: one that has not answered within `hedgeMs` may be waiting on a dead peer (or a stream leader
 * being re-elected), so another starts alongside it (at most three in flight) instead of waiting out the API timeout
 * one attempt after the other — sequential 2 s timeouts made a re-open take 8–9 s after a NATS node loss, past the
 * recovery budget (chaos: nats-node-kill, I5). The first consumer created wins; a late one is deleted.
 */
export async function orderedConsumer(create: () => Promise<Consumer>, budgetMs = 10_000, hedgeMs = 600): Promise<Consumer> {
  const deadline = Date.now() + budgetMs;
  return new Promise<Consumer>((resolve, reject) => {
    let done = false;
    let inFlight = 0;
    let hedge: NodeJS.Timeout | undefined;
    const finish = (): void => {
      done = true;
      clearTimeout(hedge);
    };
    const attempt = (): void => {
      if (done || inFlight >= 3) return;
      inFlight++;
      create().then(
        (c) => {
          inFlight--;
          if (done) {
            void c.delete().catch(() => false);
            return;
          }
          finish();
          resolve(c);
        },
        (e: unknown) => {
          inFlight--;
          if (done) return;
          if (Date.now() >= deadline) {
            if (inFlight === 0) {
              finish();
              reject(ensureError(e));
            }
            return;
          }
          // A timeout already waited; a quick refusal waits a little before the next attempt.
          if (e instanceof errors.TimeoutError) attempt();
          else setTimeout(attempt, 250);
        },
      );
      clearTimeout(hedge);
      hedge = setTimeout(() => {
        if (Date.now() < deadline) attempt();
      }, hedgeMs);
    };
    attempt();
  });
}

/** A reader whose consumer sent neither a message nor an idle heartbeat (every 1 s) for this long counts it as dead. */
const STALL_MS = 3500;

/**
 * A buffered reader over an ordered consumer's `consume()`: messages flow continuously (no per-fetch wait), up to a
 * high-water mark, and `fetch(max, waitMs)` hands out what has arrived, waiting at most `waitMs` for the first one.
 * Consumption pauses while the buffer is full: the actor's pace is the backpressure.
 *
 * An ordered consumer is an R1 ephemeral that lives on one NATS server: when that server dies the consumer is gone
 * with it, and nats.js does not re-create it while the server stays down (its recovery asks the dead consumer for its
 * info, again and again, and its heartbeat monitor is off after the client reconnected elsewhere) — a bucket stalled
 * for as long as the node was down (chaos: nats-node-kill). So pulls are short with 1 s idle heartbeats, and a
 * watchdog fails the reader after STALL_MS without a message or a heartbeat: its owner opens a new consumer, on a
 * live server, from the committed offset (the writer's and the committer's re-open, the router's restart).
 */
function bufferedReader<T>(consumer: Consumer, convert: (m: JsMsg) => T, highWater = 64): { fetch(max: number, waitMs: number): Promise<T[]>; close(): Promise<void> } {
  const queue: T[] = [];
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  let resume: (() => void) | null = null;
  let closed = false;
  let iter: ConsumerMessages | null = null;
  let lastAlive = Date.now();
  let lastTick = Date.now();
  const watchdog = setInterval(() => {
    const now = Date.now();
    // A late tick means this process was not running (event loop blocked, SIGSTOP): heartbeats may be waiting unread.
    if (now - lastTick > 1500) lastAlive = now;
    lastTick = now;
    // While the buffer is full the reader is not looking at messages: not a stall.
    if (closed || failure !== null || resume !== null || now - lastAlive <= STALL_MS) return;
    failure = new Error(`the consumer sent no message and no heartbeat for ${Date.now() - lastAlive} ms: its NATS server may be gone`);
    wake?.();
  }, 500);
  const started = consumer.consume({ max_messages: Math.min(highWater, 128), expires: 2_000, idle_heartbeat: 1_000 }).then(async (msgs) => {
    iter = msgs;
    if (closed) {
      await msgs.close();
      return;
    }
    void (async () => {
      for await (const st of msgs.status()) if (st.type === "heartbeat" || st.type === "ordered_consumer_recreated") lastAlive = Date.now();
    })().catch(() => undefined);
    for await (const m of msgs) {
      lastAlive = Date.now();
      queue.push(convert(m));
      wake?.();
      if (queue.length >= highWater) {
        await new Promise<void>((r) => (resume = r));
        lastAlive = Date.now();
      }
      if (closed) break;
    }
  });
  started.catch((e: unknown) => {
    failure = ensureError(e);
    wake?.();
  });
  return {
    async fetch(max, waitMs) {
      if (failure) throw failure;
      if (queue.length === 0) {
        await new Promise<void>((r) => {
          const t = setTimeout(r, waitMs);
          wake = () => {
            clearTimeout(t);
            r();
          };
        });
        wake = null;
      }
      if (failure) throw failure;
      const out = queue.splice(0, max);
      if (queue.length < highWater / 2 && resume) {
        const r = resume as () => void;
        resume = null;
        r();
      }
      return out;
    },
    async close() {
      closed = true;
      clearInterval(watchdog);
      const r = resume as (() => void) | null;
      resume = null;
      r?.();
      await (iter as ConsumerMessages | null)?.close().catch(() => undefined);
      await consumer.delete().catch(() => false);
    },
  };
}

/**
 * Judges member liveness without comparing two nodes' wall clocks. A heartbeat's `at` is its writer's `Date.now()`:
 * with the writer's or the judge's clock skewed (NTP step, wrong RTC) `now - at` says nothing — a healthy writer 30 s
 * behind looked dead to the coordinator and lost its buckets (chaos: clock-skew). So a member is live while its
 * heartbeat entry keeps changing (a new KV revision), timed on this process's monotonic clock; only an entry seen for
 * the first time (no history yet, e.g. a new leader's first round) falls back to the wall-clock age of its `at`.
 */
export function memberLiveness(monotonic: () => number = () => performance.now(), wall: () => number = () => Date.now()): {
  isLive(key: string, revision: number, hbAt: number, maxAgeMs: number): boolean;
  /** Drops the history of keys that are gone (deleted or expired). */
  retain(keys: ReadonlySet<string>): void;
} {
  const seen = new Map<string, { revision: number; changedAt: number }>();
  return {
    isLive(key, revision, hbAt, maxAgeMs) {
      const now = monotonic();
      const prev = seen.get(key);
      let changedAt: number;
      if (prev === undefined) changedAt = wall() - hbAt <= maxAgeMs ? now : Number.NEGATIVE_INFINITY;
      else changedAt = prev.revision === revision ? prev.changedAt : now;
      seen.set(key, { revision, changedAt });
      return now - changedAt <= maxAgeMs;
    },
    retain(keys) {
      for (const k of [...seen.keys()]) if (!keys.has(k)) seen.delete(k);
    },
  };
}

/**
 * Writes `key` by compare-and-set: `decide` sees the entry as it is (null when never written or deleted) and returns
 * the bytes to write, null to leave it as it is, or throws to refuse. A writer that lost a race to another one reads
 * again and decides again, so no write is based on a value it did not see.
 */
async function compareAndSet(kv: KV, key: string, decide: (current: KvEntry | null) => Uint8Array | null): Promise<void> {
  let lastError: unknown = null;
  for (let attempt = 0; attempt < 5; attempt++) {
    const e = await kv.get(key);
    const present = e !== null && e.operation === "PUT" ? e : null;
    const data = decide(present);
    if (data === null) return;
    try {
      // update() is compare-and-set on the revision; create() when the key was never written (or was deleted).
      if (present === null) await kv.create(key, data);
      else await kv.update(key, data, present.revision);
      return;
    } catch (err) {
      lastError = err;
    }
  }
  throw ensureError(lastError);
}

/** The snapshot id a table's KV entry announces; 0 when there is none (never written, or removed by a drop). */
function notifiedSnapshotId(e: KvEntry | null): number {
  if (e === null || e.operation !== "PUT") return 0;
  const n = JSON.parse(dec.decode(e.value)) as Partial<SnapshotNotification>;
  return typeof n.snapshotId === "number" ? n.snapshotId : 0;
}

/**
 * The KV copy of a table's last notification (what a late subscriber starts from) only moves forward. A leader
 * frozen (SIGSTOP, a long GC) between linking a snapshot and announcing it announces it once it runs again — after
 * its successor announced newer ones; a plain put would set the KV back, and a subscriber arriving after the load
 * ended would wait for a snapshot that had been announced already. So the write is skipped when the KV holds this
 * snapshot or a later one.
 */
function keepLatestNotification(kv: KV, key: string, snapshotId: number, data: Uint8Array): Promise<void> {
  return compareAndSet(kv, key, (current) => (notifiedSnapshotId(current) >= snapshotId ? null : data));
}

/**
 * A table's bucket assignment is written only by the coordinator of the newest leader epoch. A coordinator whose
 * leader lost its lease while frozen may finish a round after its successor wrote: a plain put then replaced the
 * successor's assignment with an older one, writer hosts followed it (stopping the new owner's writer), and the
 * successor, which writes only when its own view changes, never put it back — a bucket without a writer, for good
 * (seen once in the leader-pause test: rows "not visible" for 60 s). The write is refused, Fenced, when the KV
 * holds an assignment of a newer leader epoch.
 */
function writeAssignmentFenced(kv: KV, key: string, a: TableAssignment): Promise<void> {
  const data = enc.encode(JSON.stringify(a));
  return compareAndSet(kv, key, (current) => {
    const stored = current === null ? null : (JSON.parse(dec.decode(current.value)) as Partial<TableAssignment>);
    const storedEpoch = typeof stored?.leaderEpoch === "number" ? stored.leaderEpoch : 0;
    if (storedEpoch > a.leaderEpoch)
      throw new LakeError(ErrorKind.Fenced, `assignment of ${a.table} was written by leader epoch ${storedEpoch}; this coordinator's epoch ${a.leaderEpoch} is stale`);
    return data;
  });
}

/**
 * The live ingest stream of `t`: its identity and sequence range. The identity is the stream's name and its marker —
 * a message on `<table>.stream-id` written once into each new stream with "expected last subject sequence 0", so of
 * several nodes racing to write it exactly one succeeds and all read the same. A re-created stream, or one in a new
 * store, gets a new marker. (JetStream's own `created` time would serve too, but some server versions rewrite it on a
 * config update or an idempotent create — nats-io/nats-server#8449, #8470 — which would stop a healthy table.)
 * `create: false` reads only: a stream without a marker then has the identity `<name>#none`.
 */
async function readLiveStream(js: JetStreamClient, jsm: JetStreamManager, subjects: Subjects, t: Identifier, create: boolean): Promise<LiveStream> {
  const name = subjects.ingestStream(t);
  const subject = subjects.ingestStreamId(t);
  for (let attempt = 0; ; attempt++) {
    const [info, identity] = await Promise.all([jsm.streams.info(name), readStreamIdentity(jsm, subjects, t)]);
    if (identity !== null) return { identity, firstSeq: info.state.first_seq, lastSeq: info.state.last_seq };
    if (!create) return { identity: formatStreamIdentity(name, "none"), firstSeq: info.state.first_seq, lastSeq: info.state.last_seq };
    const marker: StreamIdMarker = { type: "stream-id", v: 1, id: `${new Date().toISOString()}.${randomBytes(4).toString("hex")}` };
    try {
      await js.publish(subject, enc.encode(JSON.stringify(marker)), { expect: { lastSubjectSequence: 0 }, timeout: 5000 });
    } catch (e) {
      // Another node wrote its marker first (wrong last sequence): read that one.
      if (attempt < 3 && e instanceof JetStreamApiError && e.code === 10071) continue;
      throw e;
    }
  }
}

/** The identity the stream's marker gives it, or null when it has no marker yet (one request). */
async function readStreamIdentity(jsm: JetStreamManager, subjects: Subjects, t: Identifier): Promise<string | null> {
  const name = subjects.ingestStream(t);
  const subject = subjects.ingestStreamId(t);
  const stored = await jsm.streams.getMessage(name, { last_by_subj: subject });
  if (stored === null) return null;
  const m = stored.json<Partial<StreamIdMarker>>();
  if (m?.type !== "stream-id" || typeof m.id !== "string") throw new LakeError(ErrorKind.DataInvalid, `${name}: the message on ${subject} is not a stream-id marker`);
  return formatStreamIdentity(name, m.id);
}

/**
 * The live ingest stream of `table`, for clients outside a node: read only — the marker is the nodes' to write (a
 * producer's permissions deny it), so a stream whose nodes have not written it yet has the identity `<name>#none`.
 */
export async function liveIngestStream(nc: NatsConnection, subjects: Subjects, table: Identifier): Promise<LiveStream> {
  return readLiveStream(jetstream(nc), await jetstreamManager(nc), subjects, table, false);
}

/** A stored BucketAttempts; null when it is not one (the writer then starts counting afresh). */
function parseBucketAttempts(text: string): BucketAttempts | null {
  try {
    const r = bucketAttemptsSchema.safeParse(JSON.parse(text));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

export async function natsPorts(nc: NatsConnection, subjects: Subjects): Promise<NatsPorts> {
  // A 2 s API timeout: consumer creation and the ordered consumers' own recovery (consumer info, re-create) retry
  // sooner while JetStream elects leaders after a node loss. Publishes set their own timeout.
  const js = jetstream(nc, { timeout: 2000 });
  const jsm = await jetstreamManager(nc);
  const kvm = new Kvm(nc);
  const members = await kvm.open(subjects.membersKv);
  const assign = await kvm.open(subjects.assignKv);
  const snap = await kvm.open(subjects.snapKv);
  const routerKv = await kvm.open(subjects.routerKv);
  const attemptsKv = await kvm.open(subjects.attemptsKv);
  const id = (table: string): Identifier => parseIdentifier(table);
  const liveStream = (table: string, create = true): Promise<LiveStream> => readLiveStream(js, jsm, subjects, id(table), create);
  /** Refuses (throws) unless the live ingest stream is `stream`: offsets of one stream must never purge another's messages. */
  const streamIdentity = async (table: string): Promise<string> => (await readStreamIdentity(jsm, subjects, id(table))) ?? formatStreamIdentity(subjects.ingestStream(id(table)), "none");
  const guardStream = async (table: string, stream: string | undefined): Promise<void> => {
    if (stream === undefined) return;
    const live = await streamIdentity(table);
    if (live !== stream) throw new LakeError(ErrorKind.Conflict, `${table}: not purging: the offsets belong to stream ${stream}, the live stream is ${live}`);
  };

  const ingest: IngestLog = {
    liveStream: (table) => liveStream(table),
    streamIdentity,
    async openBucket(table, bucket, afterSeq): Promise<BucketReader> {
      const t = id(table);
      const consumer = await orderedConsumer(() =>
        js.consumers.get(subjects.ingestStream(t), {
          filter_subjects: subjects.ingestBucket(t, bucket),
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: afterSeq + 1,
        }),
      );
      // The payload is copied out of the socket's read chunk: a view would keep the whole (64 KiB) chunk alive for
      // as long as the message waits in the reader's buffer or the writer's stash — measured, ~3× its own size.
      // Trace headers are read only while this process traces: otherwise the headers are never even parsed.
      if (!tracingActive()) return bufferedReader<IngestMessage>(consumer, (m) => ({ seq: m.seq, data: m.data.slice(), publishedAt: Math.floor(m.info.timestampNanos / 1_000_000) }));
      return bufferedReader<IngestMessage>(consumer, (m) => {
        const im: IngestMessage = { seq: m.seq, data: m.data.slice(), publishedAt: Math.floor(m.info.timestampNanos / 1_000_000) };
        const tp = m.headers?.get(H_TRACEPARENT);
        if (tp) im.traceparent = tp;
        return im;
      });
    },
    async purgeBucket(table, bucket, throughSeq, stream): Promise<void> {
      const t = id(table);
      await guardStream(table, stream);
      await jsm.streams.purge(subjects.ingestStream(t), { filter: subjects.ingestBucket(t, bucket), seq: throughSeq + 1 });
    },
  };

  // The server's limit as the connection learnt it (INFO); 1 MiB, NATS's default, before the first INFO.
  const maxPayload = (): number => nc.info?.max_payload ?? 1024 * 1024;
  const commits: CommitLog = {
    get maxPayload() {
      return maxPayload();
    },
    async append(c: CommitEntry, msgId: string): Promise<void> {
      await publishIdempotent(js, subjects.commit(id(c.table)), encodeMsg(c), msgId);
    },
    async open(table): Promise<CommitReader> {
      const t = id(table);
      const info = await jsm.streams.info(subjects.commitStream(t));
      const consumer = await orderedConsumer(() => js.consumers.get(subjects.commitStream(t), { deliver_policy: DeliverPolicy.All, filter_subjects: subjects.commit(t) }));
      const reader = bufferedReader(consumer, (m) => ({ seq: m.seq, committable: decodeCommitEntry(m.data) }), 4096);
      return { streamId: `${subjects.commitStream(t)}@${info.created}`, fetch: (max, waitMs) => reader.fetch(max, waitMs), close: () => reader.close() };
    },
    async purge(table, throughSeq): Promise<void> {
      await jsm.streams.purge(subjects.commitStream(id(table)), { seq: throughSeq + 1 });
    },
  };

  const bus: Bus = {
    publishRejection(writerId: string, r: WriterRejection): void {
      nc.publish(subjects.reject(id(r.table), writerId), encodeMsg(r));
    },
    async publishSnapshot(n: SnapshotNotification): Promise<void> {
      const data = enc.encode(JSON.stringify(n));
      // The KV first, then the subject: a subscriber (snapshots-client.ts) subscribes, then reads the KV. Published
      // the other way round, one that subscribed between the publish and the KV write missed the notification on the
      // subject and read the KV's previous value — and when nothing was committed after it, a `waitVisible` for rows
      // of that snapshot waited out its timeout (a CI run saw it).
      try {
        await keepLatestNotification(snap, subjects.tableKey(id(n.table)), n.snapshotId, data);
      } finally {
        if (n.traceparent !== undefined) {
          const h = natsHeaders();
          h.set(H_TRACEPARENT, n.traceparent);
          nc.publish(subjects.snapshots(id(n.table)), data, { headers: h });
        } else nc.publish(subjects.snapshots(id(n.table)), data);
      }
      // At the server before the leader goes on: a drained leader closes its connection right after its last commit,
      // and a notification still in the client's buffer would be lost with it.
      await nc.flush();
    },
    async lastSnapshotNotified(table: string): Promise<number> {
      return notifiedSnapshotId(await snap.get(subjects.tableKey(id(table))));
    },
    async publishDeadLetters(table: string, letters: DeadLetter[]): Promise<number> {
      const t = id(table);
      const subject = subjects.dlq(t);
      // A letter's id names the ingest stream too: sequences start again at 1 in a re-created stream (a table dropped
      // and created again, a stream reset), and a new letter must not be taken for an old one within the DLQ's
      // duplicate window and dropped.
      const stream = (await readStreamIdentity(jsm, subjects, t)) ?? subjects.ingestStream(t);
      let stored = 0;
      for (const l of letters) {
        const h = natsHeaders();
        h.set("Natslake-Reason", l.reason.slice(0, 200));
        const ack = await js.publish(subject, fitDeadLetter(l, payloadLimit(maxPayload())), { headers: h, msgID: `dlq-${l.stage}-${l.table}-${l.streamSeq}-${l.rowIndex}@${stream}` });
        if (!ack.duplicate) stored++;
      }
      return stored;
    },
  };

  const releasedKey = (table: string, bucket: number): string => `released.${subjects.tableKey(id(table))}.${bucket}`;
  const liveness = memberLiveness();
  const cluster: ClusterState = {
    async heartbeat(hb: MemberHeartbeat): Promise<void> {
      await members.put(hb.nodeId, enc.encode(JSON.stringify(hb)));
    },
    async liveMembers(maxAgeMs: number): Promise<MemberHeartbeat[]> {
      const out: MemberHeartbeat[] = [];
      const keys: string[] = [];
      for await (const k of await members.keys()) keys.push(k);
      const present = new Set<string>();
      for (const k of keys) {
        const e = await members.get(k);
        if (!e || e.operation !== "PUT") continue;
        present.add(k);
        const hb = JSON.parse(dec.decode(e.value)) as MemberHeartbeat;
        if (liveness.isLive(k, e.revision, hb.at, maxAgeMs)) out.push(hb);
      }
      liveness.retain(present);
      return out;
    },
    async readAssignment(table: string): Promise<TableAssignment | null> {
      const e = await assign.get(subjects.tableKey(id(table)));
      return e && e.operation === "PUT" ? (JSON.parse(dec.decode(e.value)) as TableAssignment) : null;
    },
    async writeAssignment(a: TableAssignment): Promise<void> {
      await writeAssignmentFenced(assign, subjects.tableKey(id(a.table)), a);
    },
    async watchAssignment(table: string, onChange: (a: TableAssignment | null) => void): Promise<{ stop(): void }> {
      const w = await assign.watch({ key: subjects.tableKey(id(table)) });
      void (async () => {
        for await (const e of w) onChange(e.operation === "PUT" ? (JSON.parse(dec.decode(e.value)) as TableAssignment) : null);
      })().catch(() => undefined);
      return { stop: () => w.stop() };
    },
    async reportReleased(table: string, bucket: number, epoch: number, node: string, lastOffset: number): Promise<void> {
      await assign.put(releasedKey(table, bucket), enc.encode(JSON.stringify({ bucket, epoch, node, lastOffset } satisfies Released)));
    },
    async releasedBuckets(table: string): Promise<Released[]> {
      const out: Released[] = [];
      const keys: string[] = [];
      for await (const k of await assign.keys(`released.${subjects.tableKey(id(table))}.*`)) keys.push(k);
      for (const k of keys) {
        const e = await assign.get(k);
        if (e && e.operation === "PUT") out.push(JSON.parse(dec.decode(e.value)) as Released);
      }
      return out;
    },
  };

  const raw: RawLog = {
    get maxPayload() {
      return maxPayload();
    },
    async readProgress(table): Promise<{ progress: RouterProgress; revision: number }> {
      const e = await routerKv.get(subjects.tableKey(id(table)));
      if (!e || e.operation !== "PUT") return { progress: { through: 0, intent: null }, revision: e?.revision ?? 0 };
      return { progress: JSON.parse(dec.decode(e.value)) as RouterProgress, revision: e.revision };
    },
    async writeProgress(table, p, revision): Promise<number> {
      const key = subjects.tableKey(id(table));
      const data = enc.encode(JSON.stringify(p));
      // update() is compare-and-set on the revision; create() when nothing was ever written.
      return revision === 0 ? await routerKv.create(key, data) : await routerKv.update(key, data, revision);
    },
    async open(table, afterSeq) {
      const t = id(table);
      const consumer = await orderedConsumer(() =>
        js.consumers.get(subjects.ingestStream(t), {
          filter_subjects: subjects.ingestRaw(t),
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: afterSeq + 1,
        }),
      );
      return bufferedReader(consumer, (m) => ({ seq: m.seq, data: m.data }), 1024);
    },
    async publishRouted(table, bucket, batch, msgId, rawSeq): Promise<void> {
      const h = natsHeaders();
      h.set(H_RAW_SEQ, String(rawSeq));
      await publishIdempotent(js, subjects.ingestBucket(id(table), bucket), encodeRowBatch(batch), msgId, h);
    },
    liveStream: (table) => liveStream(table),
    streamIdentity,
    async purgeRaw(table, throughSeq, stream): Promise<void> {
      const t = id(table);
      await guardStream(table, stream);
      await jsm.streams.purge(subjects.ingestStream(t), { filter: subjects.ingestRaw(t), seq: throughSeq + 1 });
    },
  };

  const attemptKey = (table: string, bucket: number): string => `${subjects.tableKey(id(table))}.${bucket}`;
  const attempts: AttemptLog = {
    async read(table, bucket): Promise<BucketAttempts | null> {
      const e = await attemptsKv.get(attemptKey(table, bucket));
      if (!e || e.operation !== "PUT") return null;
      return parseBucketAttempts(dec.decode(e.value));
    },
    async write(table, bucket, a): Promise<void> {
      if (a === null) await attemptsKv.delete(attemptKey(table, bucket));
      else await attemptsKv.put(attemptKey(table, bucket), enc.encode(JSON.stringify(a)));
    },
  };

  return { ingest, raw, commits, bus, cluster, attempts, js, jsm, kv: { members, assign, snap } };
}
