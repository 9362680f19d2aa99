/**
 * The consumer client (`natslake/consumer`): a table's rows over NATS from a reader node, as an async iterator of
 * snapshots — `{ snapshotId, kind, batches, ack() }` — with no access to the warehouse (protocol:
 * actors/wire/consume.ts).
 *
 *   const consumer = await openConsumer({ nc, table: "shop.orders", consumerId: "billing", from: "full" });
 *   for await (const s of consumer) {
 *     for await (const batch of s.batches) handle(batch);
 *     await s.ack();
 *   }
 *
 * - A snapshot is yielded as soon as its first rows arrive; `batches` is an async iterable of its Arrow record
 *   batches (projection and partition filter applied by the reader), fed by the session's window: credit goes back
 *   to the reader as the caller takes the rows, so a snapshot of any size — a `full` start of a large table — holds
 *   at most `window` chunks (≤ the server's max_payload each) in this process, and a caller that does not pull
 *   stalls its own session only. Read `batches` once, to the end, then `ack()`; taking the next snapshot first
 *   skips the rest of this one (its `ack()` then refuses).
 * - `ack()` resolves once the reader recorded the progress (with a consumer id: Paimon's consumer file, so any
 *   reader resumes after it). At least once per snapshot: one not acknowledged is delivered again after a restart;
 *   de-duplicate by `snapshotId` for exactly once. An ack follows the consumer: one pending on a session whose reader
 *   died (or that the reader no longer has) is sent again on the next session — an ack is idempotent, its snapshot id
 *   says what is acknowledged — so a reader's death costs the caller a wait, never an error. `ack()` rejects only
 *   with a LakeError: the consumer was closed or failed first, a reader refused or kept not answering it.
 * - A reader that goes silent (no chunk and no heartbeat for READER_TIMEOUT_MS), or a chunk lost on the way (a
 *   later chunk, or a heartbeat naming a chunk it never got), and the client opens a new session (on another reader,
 *   if this one died) from where it is: the rows it already received are not handed over again — a snapshot
 *   interrupted halfway goes on from its next row.
 */
import type * as arrow from "apache-arrow";
import { RequestError, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { AckSender, type AckSessions } from "./consumer-acks.ts";
import { ErrorKind, LakeError } from "../src/errors.ts";
import { IpcStreamDecoder } from "../src/codec/ipc-decode.ts";
import { checkName } from "../src/names.ts";
import { DEFAULT_PREFIX, Subjects } from "./nats/subjects.ts";
import { connectionInbox } from "./nats/inbox.ts";
import { CONSUME_HEADER, HEARTBEAT_MS, READER_TIMEOUT_MS, WINDOW_BYTES_PER_CHUNK, type ConsumeControl, type ConsumeOpen, type ConsumeOpenReply } from "../actors/wire/consume.ts";

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
  /** The snapshot's rows, as they arrive; iterate once, to the end. */
  batches: AsyncIterable<arrow.RecordBatch>;
  /** Records that this snapshot (and every one before) was processed; refused before `batches` was read to the end. */
  ack(): Promise<void>;
}

export interface Consumer extends AsyncIterable<ConsumedSnapshot> {
  /** The reader node serving the current session. */
  readonly reader: string;
  /** Sessions opened (more than one after a reader change). */
  readonly sessions: number;
  /** Chunks received and not taken by the caller yet (at most `window` per session: what this process holds). */
  readonly buffered: number;
  /** Their body bytes (below `window` × 128 KiB and one chunk: the protocol's byte window). */
  readonly bufferedBytes: number;
  close(): Promise<void>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
/** Why a closed consumer acknowledges nothing more. */
const CLOSED = new LakeError(ErrorKind.Unexpected, "the consumer was closed");
/** Between two opens that found no reader subscribed. */
const NO_READER_RETRY_MS = 200;

/** One chunk's rows, received and waiting for the caller. */
interface Part {
  snapshotId: number;
  kind: "full" | "delta";
  batches: arrow.RecordBatch[];
  last: boolean;
  /** Its number in its session, credited when the caller takes it (only while that session is the current one). */
  chunk: number;
  /** Its body's size (credit is owed in bytes too). */
  bytes: number;
  session: number;
  /** A snapshot cut short: the new session did not send it again (its batches iterator fails). */
  interrupted?: boolean;
}

/** Where the rows received so far end: the new session's repeats of them are dropped. */
interface Received {
  snapshotId: number;
  kind: "full" | "delta";
  rows: number;
  complete: boolean;
}

class ConsumerImpl implements Consumer {
  reader = "";
  sessions = 0;
  private readonly subjects: Subjects;
  private session = "";
  private sub: Subscription | null = null;
  private expectedChunk = 1;
  /** The last chunk of this session credited to the reader, and the body bytes taken since. */
  private credited = 0;
  private owedBytes = 0;
  private readonly window: number;
  private readonly parts: Part[] = [];
  private received: Received | null = null;
  /** After a new session: rows of this snapshot still to drop (they were received from the session before). */
  private skip: { snapshotId: number; rows: number } | null = null;
  private lastHeard = Date.now();
  private failure: Error | null = null;
  /** Whoever waits for a part (the snapshot iterator, a batches iterator). */
  private readonly waiters = new Set<() => void>();
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  private reopening: Promise<void> | null = null;
  /** Every chunk of this consumer's sessions has one projection's schema: parsed once, not per chunk. */
  private readonly decoder = new IpcStreamDecoder();
  /** The snapshot last yielded, until its last part was taken. */
  private current: SnapshotReader | null = null;
  /** Acks pending on a session, told when it is left (a new session, or the consumer closed or failed). */
  private readonly leaveWatchers = new Set<() => void>();
  private readonly acks: AckSender;

  constructor(private readonly o: ConsumerOptions) {
    this.subjects = new Subjects(o.prefix ?? DEFAULT_PREFIX);
    // A name no table of the cluster can have is said here, not by a reader node.
    this.subjects.table(o.table);
    if (o.consumerId !== undefined) checkName("consumer id", o.consumerId);
    this.window = o.window ?? 8;
    const sessions: AckSessions = {
      currentSession: () => this.currentSession(),
      whenLeft: (n, then) => this.whenLeft(n, then),
      lost: (n, why) => this.lost(n, why),
      stopped: () => this.stopped(),
    };
    this.acks = new AckSender(o.nc, sessions);
  }

  get buffered(): number {
    return this.parts.length;
  }

  get bufferedBytes(): number {
    return this.parts.reduce((n, p) => n + p.bytes, 0);
  }

  async open(): Promise<void> {
    await this.openSession();
    this.timer = setInterval(() => this.tick(), HEARTBEAT_MS);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ConsumedSnapshot> {
    for (;;) {
      // The caller moved on without reading the previous snapshot to its end: the rest of it is skipped.
      if (this.current !== null && !this.current.done) await this.current.discard();
      const head = await this.peek();
      if (head === null) return;
      const s = new SnapshotReader(this, head.snapshotId, head.kind);
      this.current = s;
      yield { snapshotId: s.snapshotId, kind: s.kind, batches: s, ack: () => s.ack() };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.control({ type: "close" });
    this.sub?.unsubscribe();
    this.notify();
    this.sessionLeft();
  }

  /** The next part, waiting for one; null once closed. */
  async peek(): Promise<Part | null> {
    for (;;) {
      if (this.failure) throw this.failure;
      const p = this.parts[0];
      if (p !== undefined) return p;
      if (this.closed) return null;
      await new Promise<void>((r) => this.waiters.add(r));
    }
  }

  /** The caller takes the first part: the reader may send one more chunk. */
  take(): Part {
    const p = this.parts.shift()!;
    if (p.session === this.sessions && !p.interrupted) this.credit(p.chunk, p.bytes);
    return p;
  }

  /**
   * Chunks up to `through` were taken (`bytes` more of bodies): credit goes back once half a window is owed, in chunks
   * or in bytes, not per chunk (a credit is a message both sides handle; per chunk, a catch-up spent a tenth of its
   * consumer's CPU on them). The reader never waits on what is owed here: it stops only with a whole window
   * unanswered (protocol step 3), and half of one is credited before.
   */
  private credit(through: number, bytes: number): void {
    this.owedBytes += bytes;
    if (through - this.credited < Math.ceil(this.window / 2) && this.owedBytes < (this.window * WINDOW_BYTES_PER_CHUNK) / 2) return;
    this.credited = through;
    this.owedBytes = 0;
    this.control({ type: "credit", through });
  }

  ack(snapshotId: number): Promise<void> {
    return this.acks.ack(snapshotId);
  }

  // AckSessions: what the acks need of the sessions (cluster/consumer-acks.ts).

  private async currentSession(): Promise<{ n: number; subject: string; reader: string }> {
    if (this.reopening) await this.reopening;
    return { n: this.sessions, subject: this.subjects.consumeSession(this.session), reader: this.reader };
  }

  private whenLeft(n: number, then: () => void): () => void {
    if (n !== this.sessions || this.stopped() !== null) {
      then();
      return () => undefined;
    }
    this.leaveWatchers.add(then);
    return () => this.leaveWatchers.delete(then);
  }

  private lost(n: number, why: string): void {
    if (n === this.sessions && !this.closed) void this.reopen(why);
  }

  private stopped(): Error | null {
    return this.failure ?? (this.closed ? CLOSED : null);
  }

  /** The current session was left (a new one is current, or the consumer closed or failed): its pending acks move on. */
  private sessionLeft(): void {
    const ws = [...this.leaveWatchers];
    this.leaveWatchers.clear();
    for (const w of ws) w();
  }

  private notify(): void {
    const ws = [...this.waiters];
    this.waiters.clear();
    for (const w of ws) w();
  }

  /**
   * Where a new session starts: after the rows received so far (the snapshot after the last complete one, or the one
   * cut short), else by the mode. With a consumer id the reader starts at the consumer file's progress instead, which
   * is never later than that; what it sends again is dropped here.
   */
  private resumeFrom(): string {
    const r = this.received;
    if (r === null) return this.o.from ?? "latest";
    if (r.complete) return `snapshot:${r.snapshotId + 1}`;
    return r.kind === "full" ? `snapshot-full:${r.snapshotId}` : `snapshot:${r.snapshotId}`;
  }

  private async openSession(): Promise<void> {
    const inbox = connectionInbox(this.o.nc);
    // A throw from a subscription callback ends nats.js's read loop for the whole connection: a message this
    // consumer cannot handle (a chunk that does not decode) fails the consumer instead, with the reason.
    const sub = this.o.nc.subscribe(inbox, {
      callback: (err, m) => {
        // The subscription itself failed (e.g. a permission refused by the server): said as what it is.
        if (err) return this.fail(new LakeError(ErrorKind.Io, `the consume session of ${this.o.table} failed: ${err.message}`, { cause: err }));
        try {
          this.onMessage(sub, m);
        } catch (e) {
          this.fail(new LakeError(ErrorKind.DataInvalid, `a message of the consume session could not be read: ${e instanceof Error ? e.message : String(e)}`, { cause: e }));
        }
      },
    });
    const req: ConsumeOpen = {
      type: "consume-open",
      v: 1,
      table: this.o.table,
      inbox,
      from: this.resumeFrom(),
      window: this.window,
      ...(this.o.consumerId !== undefined ? { consumerId: this.o.consumerId } : {}),
      ...(this.o.projection ? { projection: this.o.projection } : {}),
      ...(this.o.partition ? { partition: this.o.partition } : {}),
    };
    let reply: ConsumeOpenReply;
    // "No responders" comes back at once while no reader is subscribed — a cluster still starting, a reader being
    // replaced: asked again until the open timeout, as a request that nobody answered would have waited.
    const giveUp = Date.now() + (this.o.openTimeoutMs ?? 10_000);
    for (;;) {
      try {
        const m = await this.o.nc.request(this.subjects.consumeOpenTable(this.subjects.table(this.o.table)), enc.encode(JSON.stringify(req)), { timeout: Math.max(1, giveUp - Date.now()) });
        reply = JSON.parse(dec.decode(m.data)) as ConsumeOpenReply;
        break;
      } catch (e) {
        if (e instanceof RequestError && e.isNoResponders() && Date.now() + NO_READER_RETRY_MS < giveUp) {
          await new Promise((r) => setTimeout(r, NO_READER_RETRY_MS));
          continue;
        }
        sub.unsubscribe();
        throw new LakeError(ErrorKind.Unexpected, `no reader took the consume session for ${this.o.table} (is a node with the reader role running?): ${(e as Error).message}`, { cause: e });
      }
    }
    if (!reply.ok) {
      sub.unsubscribe();
      throw new LakeError(reply.kind as ErrorKind, reply.error);
    }
    this.sub?.unsubscribe();
    this.sub = sub;
    this.session = reply.session;
    this.reader = reply.reader;
    this.sessions++;
    this.expectedChunk = 1;
    this.credited = 0;
    this.owedBytes = 0;
    this.skip = this.received !== null && !this.received.complete ? { snapshotId: this.received.snapshotId, rows: this.received.rows } : null;
    this.lastHeard = Date.now();
    this.sessionLeft();
  }

  private onMessage(sub: Subscription, m: Msg): void {
    if (sub !== this.sub || this.closed) return; // a message of a session already left
    this.lastHeard = Date.now();
    const type = m.headers?.get(CONSUME_HEADER.type);
    if (type === "heartbeat") {
      // The reader sent a chunk this session never got: it waits for credit for it, and nothing else would come.
      const sent = Number(m.headers!.get(CONSUME_HEADER.sent) ?? 0);
      if (sent >= this.expectedChunk) void this.reopen(`chunk ${this.expectedChunk} lost (the reader sent ${sent})`);
      return;
    }
    if (type === "error") {
      const e = JSON.parse(dec.decode(m.data)) as { error: string; kind: string };
      this.fail(new LakeError(e.kind as ErrorKind, e.error));
      return;
    }
    if (type !== "chunk") return;
    const n = Number(m.headers!.get(CONSUME_HEADER.chunk));
    if (n !== this.expectedChunk) {
      // A gap (core NATS dropped a message): this session cannot go on; another starts after what was received.
      void this.reopen(`chunk ${n} arrived, ${this.expectedChunk} expected`);
      return;
    }
    this.expectedChunk++;
    const snapshotId = Number(m.headers!.get(CONSUME_HEADER.snapshot));
    const kind = m.headers!.get(CONSUME_HEADER.kind) === "full" ? "full" : "delta";
    const last = m.headers!.get(CONSUME_HEADER.last) === "1";
    const r = this.received;
    const credit = (): void => this.credit(n, m.data.length);
    // Sent again by a new session: what was received before is not handed over twice.
    if (r !== null && (snapshotId < r.snapshotId || (snapshotId === r.snapshotId && r.complete))) return credit();
    let batches = this.decoder.decode(m.data);
    if (this.skip !== null && this.skip.snapshotId === snapshotId) batches = this.dropRows(batches);
    if (r !== null && !r.complete && snapshotId > r.snapshotId) {
      // The snapshot cut short was not sent again (another consumer with this id acknowledged it meanwhile).
      this.parts.push({ snapshotId: r.snapshotId, kind: r.kind, batches: [], last: true, chunk: 0, bytes: 0, session: this.sessions, interrupted: true });
    }
    const rows = batches.reduce((t, b) => t + b.numRows, 0);
    this.received = { snapshotId, kind, rows: (r !== null && r.snapshotId === snapshotId && !r.complete ? r.rows : 0) + rows, complete: last };
    if (last) this.skip = null;
    this.parts.push({ snapshotId, kind, batches, last, chunk: n, bytes: m.data.length, session: this.sessions });
    this.notify();
  }

  /** Drops the rows of a snapshot received from the session before (its next rows come after them, in order). */
  private dropRows(batches: arrow.RecordBatch[]): arrow.RecordBatch[] {
    const out: arrow.RecordBatch[] = [];
    for (const b of batches) {
      const drop = Math.min(this.skip!.rows, b.numRows);
      this.skip!.rows -= drop;
      if (drop < b.numRows) out.push(drop === 0 ? b : b.slice(drop));
    }
    return out;
  }

  private control(c: ConsumeControl): void {
    if (this.session === "" || this.closed) return;
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

  /** Leaves the current session for a new one (another reader, if this one is gone), after what was received. */
  private reopen(_why: string): Promise<void> {
    if (this.reopening) return this.reopening;
    this.sub?.unsubscribe();
    this.sub = null;
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
    this.sessionLeft();
  }
}

/** One yielded snapshot: its batches, taken part by part as the caller reads them. */
class SnapshotReader implements AsyncIterable<arrow.RecordBatch> {
  done = false;
  private started = false;

  constructor(
    private readonly c: ConsumerImpl,
    readonly snapshotId: number,
    readonly kind: "full" | "delta",
  ) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<arrow.RecordBatch> {
    if (this.started) throw new LakeError(ErrorKind.DataInvalid, `snapshot ${this.snapshotId}'s batches are read once`);
    this.started = true;
    while (!this.done) {
      const part = await this.c.peek();
      // Closed halfway: the snapshot stays unacknowledged, and comes again after a restart.
      if (part === null) return;
      if (part.snapshotId !== this.snapshotId) throw new LakeError(ErrorKind.Unexpected, `snapshot ${this.snapshotId} was cut short: the reader moved on to snapshot ${part.snapshotId}`);
      this.c.take();
      if (part.interrupted === true) throw new LakeError(ErrorKind.Unexpected, `snapshot ${this.snapshotId} was cut short by a reader change and not sent again (another consumer with this id acknowledged it?)`);
      for (const b of part.batches) yield b;
      // Done only once the last part's batches were all taken: a caller that stopped before cannot ack.
      if (part.last) this.done = true;
    }
  }

  /** Takes what is left of this snapshot without handing it over (the caller moved on; its ack() refuses). */
  async discard(): Promise<void> {
    for (;;) {
      const part = await this.c.peek();
      if (part === null || part.snapshotId !== this.snapshotId) return;
      this.c.take();
      if (part.last || part.interrupted === true) return;
    }
  }

  ack(): Promise<void> {
    if (!this.done) return Promise.reject(new LakeError(ErrorKind.DataInvalid, `snapshot ${this.snapshotId}: read its batches to the end before ack() (at least once: a snapshot is acknowledged only after all of its rows were taken)`));
    return this.c.ack(this.snapshotId);
  }
}

/** Opens a consume session on a reader node (errors — unknown table or column, an expired start — are thrown here). */
export async function openConsumer(o: ConsumerOptions): Promise<Consumer> {
  const c = new ConsumerImpl(o);
  await c.open();
  return c;
}
