/**
 * The reader role's consume service: answers `<p>.ctl.consume.open` (queue group: one reader takes each session),
 * checks the request (table, columns, partition, scan mode, an expired start — all refused in the reply, before a
 * session exists), spawns a ConsumeSessionActor per session, routes the consumer's control messages to it, and fans
 * the table's snapshot notifications out to its sessions (one core-NATS subscription per table, however many
 * sessions) so they read a new snapshot at once.
 */
import { randomUUID } from "node:crypto";
import type { Meter } from "@opentelemetry/api";
import { headers as natsHeaders, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { ensureError, ErrorKind, isLakeError } from "../src/errors.ts";
import { parsePartitionSpec } from "../src/spec/partition.ts";
import { parseScanMode, TableStream } from "../src/scan/table-stream.ts";
import type { Catalog } from "../src/table/catalog.ts";
import type { Table } from "../src/table/table.ts";
import { parseIdentifier } from "../src/table/catalog.ts";
import { ConsumeSessionActor, type ConsumeOut, type ConsumeSessionMsg } from "../actors/consume-session.ts";
import { systemClock } from "../actors/ports.ts";
import type { ActorRef, ActorSystem, Logger } from "../actors/runtime/index.ts";
import type { z } from "zod";
import { consumeOpenSchema, parseConsumeControl, type ConsumeOpenReply } from "../actors/wire/consume.ts";
import type { Subjects } from "./nats/subjects.ts";

export interface ConsumeServiceDeps {
  nc: NatsConnection;
  subjects: Subjects;
  catalog: Catalog;
  system: ActorSystem;
  nodeId: string;
  log: Logger;
  meter: Meter;
}

interface TableFan {
  sub: Subscription;
  sessions: Set<ActorRef<ConsumeSessionMsg>>;
}

export class ConsumeService {
  private openSub: Subscription | null = null;
  private readonly fans = new Map<string, TableFan>();
  private readonly tables = new Map<string, Table>();
  private readonly sessions = new Map<string, { ref: ActorRef<ConsumeSessionMsg>; table: string }>();
  private readonly enc = new TextEncoder();
  private readonly bytesSent;

  constructor(private readonly d: ConsumeServiceDeps) {
    this.bytesSent = d.meter.createCounter("natslake_consume_bytes_total", { description: "Arrow IPC bytes reader nodes sent to consumers", unit: "By" });
    d.meter.createObservableGauge("natslake_consume_sessions", { description: "consume sessions this reader serves" }).addCallback((r) => r.observe(this.sessions.size));
  }

  start(): void {
    const sub = this.d.nc.subscribe(this.d.subjects.consumeOpen, { queue: `${this.d.subjects.prefix}-consume` });
    this.openSub = sub;
    void (async () => {
      for await (const m of sub) {
        const reply = await this.open(m.data).catch((e: unknown): ConsumeOpenReply => ({ ok: false, error: ensureError(e).message, kind: isLakeError(e) ? e.kind : ErrorKind.Unexpected }));
        m.respond(this.enc.encode(JSON.stringify(reply)));
      }
    })();
  }

  async stop(): Promise<void> {
    this.openSub?.unsubscribe();
    await Promise.all([...this.sessions.values()].map((s) => this.d.system.stop(s.ref).catch(() => undefined)));
    for (const f of this.fans.values()) f.sub.unsubscribe();
    this.fans.clear();
  }

  private async open(data: Uint8Array): Promise<ConsumeOpenReply> {
    let req: z.output<typeof consumeOpenSchema>;
    try {
      const parsed = consumeOpenSchema.safeParse(JSON.parse(new TextDecoder().decode(data)));
      if (!parsed.success) return { ok: false, error: `bad consume-open request: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(request)"}: ${i.message}`).join("; ")}`, kind: ErrorKind.DataInvalid };
      req = parsed.data;
    } catch (e) {
      return { ok: false, error: `a consume-open request is JSON: ${ensureError(e).message}`, kind: ErrorKind.DataInvalid };
    }
    const table = await this.tableFor(req.table);
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
    const ref = this.d.system.spawn(`consume-${session}`, () =>
      new ConsumeSessionActor({
        table,
        session,
        inbox: req.inbox,
        stream,
        ...(req.projection ? { projection: req.projection } : {}),
        ...(partition ? { partition } : {}),
        window: req.window,
        out,
        clock: systemClock,
        onSent: (n) => this.bytesSent.add(n, { table: table.name }),
        onEnd: () => {
          control.unsubscribe();
          this.sessions.delete(session);
          fan.sessions.delete(ref);
          if (fan.sessions.size === 0) {
            fan.sub.unsubscribe();
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
   * One table handle per table for all its sessions while its schema stays the same: its snapshot and manifest caches
   * are then shared, instead of every session filling its own (the consumer benchmark saw reader RSS grow with them).
   */
  private async tableFor(name: string): Promise<Table> {
    const fresh = await this.d.catalog.getTable(parseIdentifier(name));
    const cached = this.tables.get(fresh.name);
    if (cached !== undefined && cached.schema.id === fresh.schema.id) return cached;
    this.tables.set(fresh.name, fresh);
    return fresh;
  }

  /** The table's snapshot notifications, fanned out to its sessions as wake-ups. */
  private fanFor(name: string, id: { database: string; table: string }): TableFan {
    let fan = this.fans.get(name);
    if (fan === undefined) {
      const sub = this.d.nc.subscribe(this.d.subjects.snapshots(id));
      const f: TableFan = { sub, sessions: new Set() };
      void (async () => {
        for await (const _ of sub) for (const s of f.sessions) if (!s.stopped) s.tell({ type: "wake" });
      })();
      this.fans.set(name, f);
      fan = f;
    }
    return fan;
  }
}
