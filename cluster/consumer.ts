/**
 * The consumer client (`natslake/consumer`): a table's rows over NATS from a reader node, as an async iterator of
 * snapshots — `{ snapshotId, kind, batches, ack() }` — with no access to the warehouse (protocol:
 * actors/wire/consume.ts).
 *
 *   const consumer = await openConsumer({ nc, table: "shop.orders", consumerId: "billing", from: "full" });
 *   for await (const s of consumer) { handle(s.batches); await s.ack(); }
 *
 * - A snapshot is yielded whole: its Arrow record batches (projection and partition filter applied by the reader).
 *   Credit goes back to the reader as chunks are taken, but only while no finished snapshot waits for the caller:
 *   a caller that does not pull stalls its own session, holding at most `window` chunks on the reader.
 * - `ack()` resolves once the reader recorded the progress (with a consumer id: Paimon's consumer file, so any
 *   reader resumes after it). At least once per snapshot: one not acknowledged is delivered again after a restart or
 *   a reader change; de-duplicate by `snapshotId` for exactly once.
 * - A reader that goes silent (no chunk and no heartbeat for READER_TIMEOUT_MS) is left for another: the session is
 *   opened again from the last acknowledged snapshot (with a consumer id: from its progress), and the snapshot in
 *   flight is received again, whole.
 */
import * as arrow from "apache-arrow";
import { createInbox, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { LakeError } from "../src/errors.ts";
import { DEFAULT_PREFIX, Subjects } from "./nats/subjects.ts";
import { CONSUME_HEADER, HEARTBEAT_MS, READER_TIMEOUT_MS, type ConsumeControl, type ConsumeOpen, type ConsumeOpenReply } from "../actors/wire/consume.ts";

export interface ConsumerOptions {
  nc: NatsConnection;
  /** `db.table`. */
  table: string;
  /** Scan mode (`latest`, `full`, `snapshot:N`, `snapshot-full:N`, `time:T`; default `latest`). */
  from?: string;
  consumerId?: string;
  projection?: string[];
  partition?: Record<string, string>;
  /** Chunks in flight at most (default 8). */
  window?: number;
  prefix?: string;
  /** How long to wait for a reader to take the session (default 10 s). */
  openTimeoutMs?: number;
}

export interface ConsumedSnapshot {
  snapshotId: number;
  /** `full`: the table as of the snapshot (a -full start); `delta`: the rows the snapshot added. */
  kind: "full" | "delta";
  batches: arrow.RecordBatch[];
  /** Records that this snapshot (and every one before) was processed. */
  ack(): Promise<void>;
}

export interface Consumer extends AsyncIterable<ConsumedSnapshot> {
  /** The reader node serving the current session. */
  readonly reader: string;
  /** Sessions opened (more than one after a reader change). */
  readonly sessions: number;
  close(): Promise<void>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

class ConsumerImpl implements Consumer {
  reader = "";
  sessions = 0;
  private readonly subjects: Subjects;
  private session = "";
  private sub: Subscription | null = null;
  private expectedChunk = 1;
  private current: { snapshotId: number; kind: "full" | "delta"; batches: arrow.RecordBatch[] } | null = null;
  private readonly ready: ConsumedSnapshot[] = [];
  /** Chunks taken but not credited yet (held back while a finished snapshot waits for the caller). */
  private uncredited = 0;
  private lastHeard = Date.now();
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  /**
   * The first snapshot received and not acknowledged yet: a new session starts there (later ones follow from it).
   * One record, however long a consumer goes without acknowledging.
   */
  private firstUnacked: { snapshotId: number; kind: "full" | "delta" } | null = null;
  private lastAcked = 0;
  private reopening: Promise<void> | null = null;

  constructor(private readonly o: ConsumerOptions) {
    this.subjects = new Subjects(o.prefix ?? DEFAULT_PREFIX);
  }

  async open(): Promise<void> {
    await this.openSession();
    this.timer = setInterval(() => this.tick(), HEARTBEAT_MS);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ConsumedSnapshot> {
    for (;;) {
      if (this.failure) throw this.failure;
      const next = this.ready.shift();
      if (next !== undefined) {
        // The caller takes a snapshot: what was held back is credited, so the reader goes on.
        this.grant();
        yield next;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.control({ type: "close" });
    this.sub?.unsubscribe();
    this.notify();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /**
   * Where a new session starts: at the first snapshot received and not acknowledged (its full scan again, for a
   * -full start), else after the last acknowledged one, else by the mode. With a consumer id the reader prefers the
   * consumer file's progress, which is the same point once an ack was recorded.
   */
  private resumeFrom(): string {
    const first = this.firstUnacked;
    // Snapshots between the last ack and `first` were received before that ack and not acknowledged: start after the ack.
    if (first !== null && (this.lastAcked === 0 || first.snapshotId <= this.lastAcked + 1)) return first.kind === "full" ? `snapshot-full:${first.snapshotId}` : `snapshot:${first.snapshotId}`;
    if (this.lastAcked > 0) return `snapshot:${this.lastAcked + 1}`;
    return this.o.from ?? "latest";
  }

  private async openSession(): Promise<void> {
    const inbox = createInbox();
    const sub = this.o.nc.subscribe(inbox, { callback: (err, m) => (err ? this.fail(err) : this.onMessage(sub, m)) });
    const req: ConsumeOpen = {
      type: "consume-open",
      v: 1,
      table: this.o.table,
      inbox,
      from: this.resumeFrom(),
      window: this.o.window ?? 8,
      ...(this.o.consumerId !== undefined ? { consumerId: this.o.consumerId } : {}),
      ...(this.o.projection ? { projection: this.o.projection } : {}),
      ...(this.o.partition ? { partition: this.o.partition } : {}),
    };
    let reply: ConsumeOpenReply;
    try {
      const m = await this.o.nc.request(this.subjects.consumeOpen, enc.encode(JSON.stringify(req)), { timeout: this.o.openTimeoutMs ?? 10_000 });
      reply = JSON.parse(dec.decode(m.data)) as ConsumeOpenReply;
    } catch (e) {
      sub.unsubscribe();
      throw new LakeError("Unexpected", `no reader took the consume session for ${this.o.table} (is a node with the reader role running?): ${(e as Error).message}`, { cause: e });
    }
    if (!reply.ok) {
      sub.unsubscribe();
      throw new LakeError(reply.kind as never, reply.error);
    }
    this.sub?.unsubscribe();
    this.sub = sub;
    this.session = reply.session;
    this.reader = reply.reader;
    this.sessions++;
    this.expectedChunk = 1;
    this.current = null;
    this.uncredited = 0;
    this.lastHeard = Date.now();
  }

  private onMessage(sub: Subscription, m: Msg): void {
    if (sub !== this.sub || this.closed) return; // a message of a session already left
    this.lastHeard = Date.now();
    const type = m.headers?.get(CONSUME_HEADER.type);
    if (type === "heartbeat") return;
    if (type === "error") {
      const e = JSON.parse(dec.decode(m.data)) as { error: string; kind: string };
      this.fail(new LakeError(e.kind as never, e.error));
      return;
    }
    if (type !== "chunk") return;
    const n = Number(m.headers!.get(CONSUME_HEADER.chunk));
    if (n !== this.expectedChunk) {
      // A gap (core NATS dropped a message): this session's snapshot cannot be completed; start another.
      void this.reopen(`chunk ${n} arrived, ${this.expectedChunk} expected`);
      return;
    }
    this.expectedChunk++;
    const snapshotId = Number(m.headers!.get(CONSUME_HEADER.snapshot));
    const kind = m.headers!.get(CONSUME_HEADER.kind) === "full" ? "full" : "delta";
    if (this.current === null || this.current.snapshotId !== snapshotId) this.current = { snapshotId, kind, batches: [] };
    if (m.data.length > 0) this.current.batches.push(...arrow.tableFromIPC(m.data).batches);
    this.uncredited = n;
    if (m.headers!.get(CONSUME_HEADER.last) === "1") {
      const done = this.current;
      this.current = null;
      if (this.firstUnacked === null && done.snapshotId > this.lastAcked) this.firstUnacked = { snapshotId: done.snapshotId, kind: done.kind };
      this.ready.push({ snapshotId: done.snapshotId, kind: done.kind, batches: done.batches, ack: () => this.ack(done.snapshotId) });
      this.notify();
    }
    if (this.ready.length === 0) this.grant();
  }

  private grant(): void {
    if (this.uncredited > 0) this.control({ type: "credit", through: this.uncredited });
  }

  private async ack(snapshotId: number): Promise<void> {
    const m = await this.o.nc.request(this.subjects.consumeSession(this.session), enc.encode(JSON.stringify({ type: "ack", snapshotId } satisfies ConsumeControl)), { timeout: 10_000 });
    const r = JSON.parse(dec.decode(m.data)) as { ok: boolean; error?: string };
    if (!r.ok) throw new LakeError("Unexpected", `the reader could not record the progress: ${r.error}`);
    this.lastAcked = Math.max(this.lastAcked, snapshotId);
    // Anything received after it and not acknowledged is covered by resuming right after it.
    if (this.firstUnacked !== null && this.firstUnacked.snapshotId <= this.lastAcked) this.firstUnacked = null;
  }

  private control(c: ConsumeControl): void {
    if (this.session === "") return;
    this.o.nc.publish(this.subjects.consumeSession(this.session), enc.encode(JSON.stringify(c)));
  }

  private tick(): void {
    if (this.closed) return;
    if (Date.now() - this.lastHeard > READER_TIMEOUT_MS) {
      void this.reopen(`reader ${this.reader} silent for ${READER_TIMEOUT_MS} ms`);
      return;
    }
    this.control({ type: "ping" });
  }

  /** Leaves the current session for a new one (another reader, if this one is gone), from the last ack. */
  private reopen(_why: string): Promise<void> {
    if (this.reopening) return this.reopening;
    this.sub?.unsubscribe();
    this.sub = null;
    // Snapshots received but not taken by the caller come again from the new session.
    this.ready.length = 0;
    this.reopening = (async () => {
      for (let attempt = 0; !this.closed; attempt++) {
        try {
          await this.openSession();
          return;
        } catch (e) {
          if (attempt >= 10) {
            this.fail(e as Error);
            return;
          }
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    })().finally(() => (this.reopening = null));
    return this.reopening;
  }

  private fail(e: Error): void {
    this.failure ??= e;
    this.notify();
  }
}

/** Opens a consume session on a reader node (errors — unknown table or column, an expired start — are thrown here). */
export async function openConsumer(o: ConsumerOptions): Promise<Consumer> {
  const c = new ConsumerImpl(o);
  await c.open();
  return c;
}
