/**
 * The reader role's consume service: answers `<p>.ctl.consume.open` (queue group: one reader takes each session),
 * checks the request (table, columns, partition, scan mode, an expired start — all refused in the reply, before a
 * session exists), spawns a ConsumeSessionActor per session, routes the consumer's control messages to it, and fans
 * the table's snapshot notifications out to its sessions (one core-NATS subscription per table, however many
 * sessions) so they read a new snapshot at once — and the table's feeds start reading it for them on the notification. Sessions that project and filter a table the same way share one
 * DeltaFeed (actors/consume-feed.ts): each new snapshot is read and encoded once for all of them.
 */
import { randomUUID } from "node:crypto";
import type { Meter } from "@opentelemetry/api";
import { METRICS } from "../actors/metrics.ts";
import { headers as natsHeaders, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { ensureError, ErrorKind, isLakeError } from "../src/errors.ts";
import { parsePartitionSpec } from "../src/format/partition.ts";
import { parseScanMode, TableStream } from "../src/scan/table-stream.ts";
import type { Catalog } from "../src/table/catalog.ts";
import type { Table } from "../src/table/table.ts";
import { parseIdentifier } from "../src/table/catalog.ts";
import { ConsumeSessionActor, type ConsumeOut, type ConsumeSessionMsg } from "../actors/consume-session.ts";
import { DeltaFeed } from "../actors/consume-feed.ts";
import { payloadLimit } from "../actors/wire/limits.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Value } from "../src/format/values.ts";
import { systemClock } from "../actors/ports.ts";
import type { ActorRef, ActorSystem, Logger } from "../actors/runtime/index.ts";
import type { z } from "zod";
import { consumeOpenSchema, parseConsumeControl, type ConsumeOpenReply } from "../actors/wire/consume.ts";
import type { Subjects } from "./nats/subjects.ts";
import { isClientInbox } from "./nats/inbox.ts";
import { parseSnapshotNotification } from "./snapshots-client.ts";
import type { CommitEntry, SnapshotNotification } from "../actors/wire/messages.ts";
import { decodeCommitEntry } from "../actors/wire/codec.ts";

export interface ConsumeServiceDeps {
  nc: NatsConnection;
  subjects: Subjects;
  catalog: Catalog;
  system: ActorSystem;
  nodeId: string;
  log: Logger;
  meter: Meter;
  feedLimits?: FeedLimits;
}

interface TableFan {
  sub: Subscription;
  /** The table's commit subject, read along (core NATS): the files writers announce, decoded ahead by the feeds. */
  commits: Subscription;
  sessions: Set<ActorRef<ConsumeSessionMsg>>;
  /** Link times of the table's latest notified snapshots, by id (for the delivery latency). */
  linkedAt: Map<number, number>;
}

/** Link times kept per table: snapshots notified long before their delivery are left out of the latency. */
const LINK_TIMES_KEPT = 256;

/** Limits of the shared feeds (tests make them small). */
export interface FeedLimits {
  /** Encoded bytes one feed holds at most (default 32 MiB). */
  maxBytes?: number;
  /** A snapshot with more Parquet bytes than this is not shared (default 4 MiB). */
  maxEntryFileBytes?: number;
}

export class ConsumeService {
  private readonly openSubs: Subscription[] = [];
  private readonly fans = new Map<string, TableFan>();
  private readonly tables = new Map<string, { table: Table; store: ManifestStore }>();
  /** Shared feeds by (table, schema, projection, partition); dropped with their last session. */
  private readonly feeds = new Map<string, DeltaFeed>();
  private readonly sessions = new Map<string, { ref: ActorRef<ConsumeSessionMsg>; table: string }>();
  private readonly enc = new TextEncoder();
  private readonly bytesSent;

  private readonly feedSnapshots;
  private readonly deliveryLatency;
  private readonly feedFiles;
  private readonly stageLatency;

  constructor(private readonly d: ConsumeServiceDeps) {
    this.bytesSent = METRICS.consumeBytes.create(d.meter);
    this.feedSnapshots = METRICS.consumeFeedSnapshots.create(d.meter);
    this.feedFiles = METRICS.consumeFeedFiles.create(d.meter);
    this.deliveryLatency = METRICS.consumeDelivery.create(d.meter);
    this.stageLatency = METRICS.consumeStage.create(d.meter);
    METRICS.consumeSessions.create(d.meter).addCallback((r) => r.observe(this.sessions.size));
    METRICS.consumeFeedBytes.create(d.meter).addCallback((r) => {
      let bytes = 0;
      for (const f of this.feeds.values()) bytes += f.bytes;
      r.observe(bytes);
    });
  }

  start(): void {
    // Per table (a consumer's permissions may name its tables) and, for consumers of earlier versions, for any table.
    for (const subject of [this.d.subjects.consumeOpenAnyTable, this.d.subjects.consumeOpen]) {
      const sub = this.d.nc.subscribe(subject, { queue: `${this.d.subjects.prefix}-consume` });
      this.openSubs.push(sub);
      void (async () => {
        for await (const m of sub) {
          // An answer goes to an inbox only (cluster/nats/inbox.ts): any other reply subject is dropped unanswered.
          if (!isClientInbox(m.reply)) {
            this.d.log.warn("consume-open request dropped: its reply subject is not an inbox", { subject: m.subject, reply: m.reply ?? null });
            continue;
          }
          const reply = await this.open(m.data, m.subject).catch((e: unknown): ConsumeOpenReply => ({ ok: false, error: ensureError(e).message, kind: isLakeError(e) ? e.kind : ErrorKind.Unexpected }));
          m.respond(this.enc.encode(JSON.stringify(reply)));
        }
      })();
    }
  }

  async stop(): Promise<void> {
    for (const sub of this.openSubs) sub.unsubscribe();
    await Promise.all([...this.sessions.values()].map((s) => this.d.system.stop(s.ref).catch(() => undefined)));
    for (const f of this.fans.values()) {
      f.sub.unsubscribe();
      f.commits.unsubscribe();
    }
    this.fans.clear();
  }

  private async open(data: Uint8Array, subject: string): Promise<ConsumeOpenReply> {
    let req: z.output<typeof consumeOpenSchema>;
    try {
      const parsed = consumeOpenSchema.safeParse(JSON.parse(new TextDecoder().decode(data)));
      if (!parsed.success) return { ok: false, error: `bad consume-open request: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(request)"}: ${i.message}`).join("; ")}`, kind: ErrorKind.DataInvalid };
      req = parsed.data;
    } catch (e) {
      return { ok: false, error: `a consume-open request is JSON: ${ensureError(e).message}`, kind: ErrorKind.DataInvalid };
    }
    const refusal = this.openRefusal(req, subject);
    if (refusal !== null) return { ok: false, error: refusal, kind: ErrorKind.DataInvalid };
    const { table, store } = await this.tableFor(req.table);
    for (const c of req.projection ?? []) table.typeOf(c);
    const partition = req.partition ? parsePartitionSpec(Object.entries(req.partition).map(([k, v]) => `${k}=${v}`).join(","), table.partitionKeys, table.partitionTypes) : undefined;
    const stream = new TableStream(table, { mode: parseScanMode(req.from), ...(req.consumerId !== undefined ? { consumerId: req.consumerId } : {}), pollMs: 2000 });
    // An expired or missing start is refused now, naming the earliest snapshot — not an empty session.
    await stream.prepare();
    const session = randomUUID().replaceAll("-", "");
    const control = this.d.nc.subscribe(this.d.subjects.consumeSession(session));
    const out: ConsumeOut = {
      maxPayload: this.d.nc.info?.max_payload ?? 1024 * 1024,
      send: (inbox, hs, body) => {
        const h = natsHeaders();
        for (const [k, v] of Object.entries(hs)) h.set(k, v);
        this.d.nc.publish(inbox, body, { headers: h });
      },
    };
    const fan = this.fanFor(table.name, table.identifier);
    const feedKey = `${table.name}@${table.schema.id}|${JSON.stringify(req.projection ?? null)}|${JSON.stringify(req.partition ? Object.entries(req.partition).sort() : null)}`;
    const feed = this.feedFor(feedKey, table, store, out.maxPayload, req.projection, partition);
    const cursor = feed.attach();
    // Where it starts: what the feed holds from there on is kept for it until it gets there.
    if (stream.nextSnapshotId !== null) cursor.need(stream.nextSnapshotId);
    const ref = this.d.system.spawn(`consume-${session}`, () =>
      new ConsumeSessionActor({
        table,
        session,
        inbox: req.inbox,
        stream,
        manifests: store,
        ...(req.projection ? { projection: req.projection } : {}),
        ...(partition ? { partition } : {}),
        feed: cursor,
        window: req.window,
        out,
        clock: systemClock,
        onSent: (n) => this.bytesSent.add(n, { table: table.name }),
        onDelivered: (snapshotId) => {
          const linked = fan.linkedAt.get(snapshotId);
          if (linked !== undefined) this.deliveryLatency.record(Math.max(0, Date.now() - linked), { table: table.name });
        },
        onEnd: () => {
          control.unsubscribe();
          cursor.detach();
          if (feed.sessions === 0 && this.feeds.get(feedKey) === feed) this.feeds.delete(feedKey);
          this.sessions.delete(session);
          fan.sessions.delete(ref);
          if (fan.sessions.size === 0) {
            fan.sub.unsubscribe();
            fan.commits.unsubscribe();
            this.fans.delete(table.name);
          }
        },
      }),
    );
    this.sessions.set(session, { ref, table: table.name });
    fan.sessions.add(ref);
    void (async () => {
      for await (const m of control) {
        try {
          const c = parseConsumeControl(m.data);
          ref.tell({ type: "control", control: c, ...(m.reply ? { reply: (ok: boolean, error?: string) => m.respond(this.enc.encode(JSON.stringify(ok ? { ok } : { ok, error }))) } : {}) });
        } catch (e) {
          if (m.reply) m.respond(this.enc.encode(JSON.stringify({ ok: false, error: ensureError(e).message })));
        }
      }
    })();
    this.d.log.info("consume session opened", { table: table.name, session, from: req.from, consumerId: req.consumerId, startedBy: stream.startedBy, window: req.window });
    return { ok: true, session, reader: this.d.nodeId };
  }

  /**
   * Why a consume-open is refused before anything is read: a request on a table's subject must name that table (the
   * subject is what NATS permissions allow a consumer), and rows go to an inbox only.
   */
  private openRefusal(req: z.output<typeof consumeOpenSchema>, subject: string): string | null {
    if (subject !== this.d.subjects.consumeOpen) {
      const onSubject = subject.slice(this.d.subjects.consumeOpen.length + 1);
      let named: string;
      try {
        named = this.d.subjects.tableKey(this.d.subjects.table(req.table));
      } catch (e) {
        return ensureError(e).message;
      }
      if (named !== onSubject) return `a consume-open on ${subject} is for table ${onSubject}, not ${req.table}`;
    }
    if (!isClientInbox(req.inbox)) return `a consume session's rows go to an inbox (_INBOX…), not to '${req.inbox}'`;
    return null;
  }

  /**
   * One table handle per table for all its sessions while its schema stays the same: its snapshot and manifest caches
   * are then shared, instead of every session filling its own (the consumer benchmark saw reader RSS grow with them).
   */
  private async tableFor(name: string): Promise<{ table: Table; store: ManifestStore }> {
    const fresh = await this.d.catalog.getTable(parseIdentifier(name));
    const cached = this.tables.get(fresh.name);
    if (cached !== undefined && cached.table.schema.id === fresh.schema.id) return cached;
    const t = { table: fresh, store: new ManifestStore(fresh) };
    this.tables.set(fresh.name, t);
    return t;
  }

  /** The shared feed of sessions that read `table` with this projection and partition (made for the first one). */
  private feedFor(key: string, table: Table, store: ManifestStore, maxPayload: number, projection: string[] | undefined, partition: Value[] | undefined): DeltaFeed {
    let feed = this.feeds.get(key);
    if (feed === undefined) {
      const limits = this.d.feedLimits ?? {};
      feed = new DeltaFeed({
        table,
        store,
        payloadLimit: payloadLimit(maxPayload),
        ...(projection ? { projection } : {}),
        ...(partition ? { partition } : {}),
        ...(limits.maxBytes !== undefined ? { maxBytes: limits.maxBytes } : {}),
        ...(limits.maxEntryFileBytes !== undefined ? { maxEntryFileBytes: limits.maxEntryFileBytes } : {}),
        onEvent: (outcome) => this.feedSnapshots.add(1, { table: table.name, outcome }),
        onFile: (outcome) => this.feedFiles.add(1, { table: table.name, outcome }),
        onStage: (stage, ms) => this.stageLatency.record(ms, { table: table.name, stage }),
        now: () => systemClock.monotonic(),
        onLoadError: (snapshotId, e) => this.d.log.warn("reading a snapshot to share between consume sessions failed; they read it themselves", { table: table.name, snapshotId, error: e.message }),
      });
      this.feeds.set(key, feed);
    }
    return feed;
  }

  /** The table's snapshot notifications, fanned out to its sessions as wake-ups. */
  private fanFor(name: string, id: { database: string; table: string }): TableFan {
    let fan = this.fans.get(name);
    if (fan === undefined) {
      const sub = this.d.nc.subscribe(this.d.subjects.snapshots(id));
      const commits = this.d.nc.subscribe(this.d.subjects.commit(id));
      const f: TableFan = { sub, commits, sessions: new Set(), linkedAt: new Map() };
      // The committables writers send the leader name the files of the next snapshots: the feeds decode them while
      // the leader commits (DeltaFeed.announce). Compactions and committables sent by reference add nothing here.
      void (async () => {
        for await (const m of commits) {
          const feeds = [...this.feeds.values()].filter((feed) => feed.tableName === name);
          if (feeds.length === 0) continue; // nothing to decode for: the committable is not even unpacked
          let entry: CommitEntry;
          try {
            entry = decodeCommitEntry(m.data);
          } catch {
            continue; // the leader reports a bad entry; here it only means nothing to decode ahead
          }
          if (entry.type !== "committable" || entry.files.length === 0) continue;
          const files = entry.files.map((x) => ({ partition: x.partition, bucket: entry.bucket, meta: x.meta }));
          for (const feed of feeds) feed.announce(files);
        }
      })();
      void (async () => {
        for await (const m of sub) {
          let n: SnapshotNotification | undefined;
          try {
            n = parseSnapshotNotification(m.json());
          } catch {
            n = undefined; // not a notification: the wake-up (without an id: the sessions look) is harmless, there is no link time to keep
          }
          const wake: ConsumeSessionMsg = n === undefined ? { type: "wake" } : { type: "wake", snapshotId: n.snapshotId };
          for (const s of f.sessions) if (!s.stopped) s.tell(wake);
          if (n === undefined) continue;
          // The feeds of this table read it now for their sessions at the head (not when a session gets to it).
          if (n.kind === "APPEND") for (const feed of this.feeds.values()) if (feed.tableName === name) feed.prefetch(n.snapshotId);
          f.linkedAt.set(n.snapshotId, n.linkedAtMillis);
          // Wall clocks of two processes: exact on one machine, as good as their clock sync across machines.
          this.stageLatency.record(Math.max(0, Date.now() - n.linkedAtMillis), { table: name, stage: "notified" });
          if (f.linkedAt.size > LINK_TIMES_KEPT) f.linkedAt.delete(f.linkedAt.keys().next().value!);
        }
      })();
      this.fans.set(name, f);
      fan = f;
    }
    return fan;
  }
}
