/**
 * The actors' ports implemented over NATS: JetStream for ingest and committables, core NATS for notifications and
 * rejections, KV for membership, assignments and the last notification.
 *
 * Readers are ordered consumers (ephemeral, AckPolicy.None, created fresh per open at `afterSeq + 1` with a
 * single `filter_subject`, which nats-server 2.9 supports): progress lives in snapshots, never in acks.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { headers as natsHeaders, type MsgHdrs } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager, type Consumer, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { Identifier } from "../../src/table/table.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { ensureError } from "../../src/errors.ts";
import type { BucketReader, Bus, ClusterState, CommitLog, CommitReader, IngestLog, IngestMessage, RawLog, RouterProgress } from "../../actors/ports.ts";
import type { Committable, DeadLetter, MemberHeartbeat, Rejection, SnapshotNotification, TableAssignment } from "../../actors/wire/messages.ts";
import { decodeCommittable, encodeMsg } from "../../actors/wire/codec.ts";
import { decodeRowBatch, encodeRowBatch } from "../../actors/wire/row-batch.ts";
import { H_RAW_SEQ } from "../../actors/wire/messages.ts";
import type { Subjects } from "./subjects.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

export interface NatsPorts {
  ingest: IngestLog;
  raw: RawLog;
  commits: CommitLog;
  bus: Bus;
  cluster: ClusterState;
  js: JetStreamClient;
  jsm: JetStreamManager;
  kv: { members: KV; assign: KV; snap: KV };
}

/** Publishes with retries on timeouts, always with the same message id (de-duplicated by the stream). */
async function publishIdempotent(js: JetStreamClient, subject: string, data: Uint8Array, msgID: string, headers?: MsgHdrs, attempts = 5): Promise<void> {
  let last: Error | undefined;
  for (let i = 0; i < attempts; i++) {
    try {
      await js.publish(subject, data, { msgID, timeout: 5000, ...(headers ? { headers } : {}) });
      return;
    } catch (e) {
      last = ensureError(e);
      await new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** i)));
    }
  }
  throw last ?? new Error(`publish to ${subject} failed`);
}

/**
 * A buffered reader over an ordered consumer's `consume()`: messages flow continuously (no per-fetch wait), up to a
 * high-water mark, and `fetch(max, waitMs)` hands out what has arrived, waiting at most `waitMs` for the first one.
 * Consumption pauses while the buffer is full: the actor's pace is the backpressure.
 */
function bufferedReader<T>(consumer: Consumer, convert: (m: JsMsg) => T, highWater = 256): { fetch(max: number, waitMs: number): Promise<T[]>; close(): Promise<void> } {
  const queue: T[] = [];
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  let resume: (() => void) | null = null;
  let closed = false;
  let iter: ConsumerMessages | null = null;
  const started = consumer.consume({ max_messages: Math.min(highWater, 128) }).then(async (msgs) => {
    iter = msgs;
    if (closed) {
      await msgs.close();
      return;
    }
    for await (const m of msgs) {
      queue.push(convert(m));
      wake?.();
      if (queue.length >= highWater) await new Promise<void>((r) => (resume = r));
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
      const r = resume as (() => void) | null;
      resume = null;
      r?.();
      await (iter as ConsumerMessages | null)?.close().catch(() => undefined);
      await consumer.delete().catch(() => false);
    },
  };
}

export async function natsPorts(nc: NatsConnection, subjects: Subjects): Promise<NatsPorts> {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const kvm = new Kvm(nc);
  const members = await kvm.open(subjects.membersKv);
  const assign = await kvm.open(subjects.assignKv);
  const snap = await kvm.open(subjects.snapKv);
  const routerKv = await kvm.open(subjects.routerKv);
  const id = (table: string): Identifier => parseIdentifier(table);

  const ingest: IngestLog = {
    async openBucket(table, bucket, afterSeq): Promise<BucketReader> {
      const t = id(table);
      const consumer = await js.consumers.get(subjects.ingestStream(t), {
        filter_subjects: subjects.ingestBucket(t, bucket),
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: afterSeq + 1,
      });
      return bufferedReader<IngestMessage>(consumer, (m) => {
        let batch: IngestMessage["batch"];
        try {
          batch = decodeRowBatch(m.data);
        } catch (e) {
          batch = { error: ensureError(e).message, raw: m.data };
        }
        return { seq: m.seq, batch, publishedAt: Math.floor(m.info.timestampNanos / 1_000_000) };
      });
    },
    async purgeBucket(table, bucket, throughSeq): Promise<void> {
      const t = id(table);
      await jsm.streams.purge(subjects.ingestStream(t), { filter: subjects.ingestBucket(t, bucket), seq: throughSeq + 1 });
    },
  };

  const commits: CommitLog = {
    async append(c: Committable, msgId: string): Promise<void> {
      await publishIdempotent(js, subjects.commit(id(c.table)), encodeMsg(c), msgId);
    },
    async open(table): Promise<CommitReader> {
      const t = id(table);
      const consumer = await js.consumers.get(subjects.commitStream(t), { deliver_policy: DeliverPolicy.All, filter_subjects: subjects.commit(t) });
      return bufferedReader(consumer, (m) => ({ seq: m.seq, committable: decodeCommittable(m.data) }), 4096);
    },
    async purge(table, throughSeq): Promise<void> {
      await jsm.streams.purge(subjects.commitStream(id(table)), { seq: throughSeq + 1 });
    },
  };

  const bus: Bus = {
    publishRejection(writerId: string, r: Rejection): void {
      nc.publish(subjects.reject(id(r.table), writerId), encodeMsg(r));
    },
    async publishSnapshot(n: SnapshotNotification): Promise<void> {
      const data = enc.encode(JSON.stringify(n));
      nc.publish(subjects.snapshots(id(n.table)), data);
      await snap.put(subjects.tableKey(id(n.table)), data);
    },
    async publishDeadLetters(table: string, letters: DeadLetter[]): Promise<void> {
      const subject = subjects.dlq(id(table));
      for (const l of letters) {
        const h = natsHeaders();
        h.set("Natslake-Reason", l.reason.slice(0, 200));
        await js.publish(subject, enc.encode(JSON.stringify(l)), { headers: h, msgID: `dlq-${l.stage}-${l.table}-${l.streamSeq}-${l.rowIndex}` });
      }
    },
  };

  const releasedKey = (table: string, bucket: number): string => `released.${subjects.tableKey(id(table))}.${bucket}`;
  const cluster: ClusterState = {
    async heartbeat(hb: MemberHeartbeat): Promise<void> {
      await members.put(hb.nodeId, enc.encode(JSON.stringify(hb)));
    },
    async liveMembers(maxAgeMs: number): Promise<MemberHeartbeat[]> {
      const out: MemberHeartbeat[] = [];
      const now = Date.now();
      const keys: string[] = [];
      for await (const k of await members.keys()) keys.push(k);
      for (const k of keys) {
        const e = await members.get(k);
        if (!e || e.operation !== "PUT") continue;
        const hb = JSON.parse(dec.decode(e.value)) as MemberHeartbeat;
        if (now - hb.at <= maxAgeMs) out.push(hb);
      }
      return out;
    },
    async readAssignment(table: string): Promise<TableAssignment | null> {
      const e = await assign.get(subjects.tableKey(id(table)));
      return e && e.operation === "PUT" ? (JSON.parse(dec.decode(e.value)) as TableAssignment) : null;
    },
    async writeAssignment(a: TableAssignment): Promise<void> {
      await assign.put(subjects.tableKey(id(a.table)), enc.encode(JSON.stringify(a)));
    },
    async watchAssignment(table: string, onChange: (a: TableAssignment | null) => void): Promise<{ stop(): void }> {
      const w = await assign.watch({ key: subjects.tableKey(id(table)) });
      void (async () => {
        for await (const e of w) onChange(e.operation === "PUT" ? (JSON.parse(dec.decode(e.value)) as TableAssignment) : null);
      })().catch(() => undefined);
      return { stop: () => w.stop() };
    },
    async reportReleased(table: string, bucket: number, epoch: number, node: string, lastOffset: number): Promise<void> {
      await assign.put(releasedKey(table, bucket), enc.encode(JSON.stringify({ bucket, epoch, node, lastOffset })));
    },
    async releasedBuckets(table: string): Promise<Array<{ bucket: number; epoch: number; node: string; lastOffset: number }>> {
      const out: Array<{ bucket: number; epoch: number; node: string; lastOffset: number }> = [];
      const keys: string[] = [];
      for await (const k of await assign.keys(`released.${subjects.tableKey(id(table))}.*`)) keys.push(k);
      for (const k of keys) {
        const e = await assign.get(k);
        if (e && e.operation === "PUT") out.push(JSON.parse(dec.decode(e.value)) as { bucket: number; epoch: number; node: string; lastOffset: number });
      }
      return out;
    },
  };

  const raw: RawLog = {
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
      const consumer = await js.consumers.get(subjects.ingestStream(t), {
        filter_subjects: subjects.ingestRaw(t),
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: afterSeq + 1,
      });
      return bufferedReader(consumer, (m) => ({ seq: m.seq, data: m.data }), 1024);
    },
    async publishRouted(table, bucket, batch, msgId, rawSeq): Promise<void> {
      const h = natsHeaders();
      h.set(H_RAW_SEQ, String(rawSeq));
      await publishIdempotent(js, subjects.ingestBucket(id(table), bucket), encodeRowBatch(batch), msgId, h);
    },
    async purgeRaw(table, throughSeq): Promise<void> {
      const t = id(table);
      await jsm.streams.purge(subjects.ingestStream(t), { filter: subjects.ingestRaw(t), seq: throughSeq + 1 });
    },
  };

  return { ingest, raw, commits, bus, cluster, js, jsm, kv: { members, assign, snap } };
}
