/**
 * ConsumeSessionActor: one consumer's session on a reader node (the protocol: actors/wire/consume.ts). It follows
 * the table with a TableStream, reads each item's Arrow batches (projection and partition filter applied here, at
 * the reader) and sends them as Arrow IPC chunks, one message per step, only while the consumer's credit allows —
 * so a slow or stalled consumer holds at most `window` chunks of this node's memory and never slows another session.
 * Every snapshot ends with an empty chunk marked last. Acks are written as the consumer's Paimon progress.
 */
import * as arrow from "apache-arrow";
import { ensureError, ErrorKind, isLakeError } from "../src/errors.ts";
import { readBatches } from "../src/scan/read.ts";
import type { StreamItem, TableStream } from "../src/scan/table-stream.ts";
import type { Value } from "../src/spec/values.ts";
import type { Table } from "../src/table/table.ts";
import type { Actor, ActorContext, Cancellable } from "./runtime/index.ts";
import type { Clock } from "./ports.ts";
import { CONSUME_HEADER, HEARTBEAT_MS, SESSION_TIMEOUT_MS, type ConsumeControl } from "./wire/consume.ts";
import { payloadLimit } from "./wire/limits.ts";

/** Where a session's messages go (the node sends them on NATS). */
export interface ConsumeOut {
  readonly maxPayload: number;
  send(inbox: string, headers: Record<string, string>, body: Uint8Array): void;
}

export type ConsumeSessionMsg =
  | { type: "pump" }
  | { type: "sent"; ended: boolean }
  | { type: "failed"; error: Error }
  | { type: "control"; control: ConsumeControl; reply?: (ok: boolean, error?: string) => void }
  | { type: "wake" }
  | { type: "tick" };

export interface ConsumeSessionDeps {
  table: Table;
  session: string;
  inbox: string;
  stream: TableStream;
  projection?: string[];
  partition?: Value[];
  window: number;
  out: ConsumeOut;
  clock: Clock;
  /** Called once when the session ends (the node drops its subscriptions). */
  onEnd: (reason: string) => void;
  /** Chunk bytes sent, by table (the reader's share of the node's memory and bandwidth). */
  onSent?: (bytes: number) => void;
}

interface Chunk {
  headers: Record<string, string>;
  body: Uint8Array;
}

const EMPTY = new Uint8Array(0);

export class ConsumeSessionActor implements Actor<ConsumeSessionMsg> {
  /** The last chunk number sent, and the highest the consumer has taken. */
  private sent = 0;
  private credited = 0;
  private busy = false;
  /** Chunks of the batch being sent (a batch too large for one message is cut by rows). */
  private queue: Chunk[] = [];
  private item: StreamItem | null = null;
  private batches: AsyncGenerator<arrow.RecordBatch> | null = null;
  private lastHeard: number;
  private lastSent: number;
  private timer: Cancellable | null = null;
  private ended = false;

  constructor(private readonly d: ConsumeSessionDeps) {
    this.lastHeard = d.clock.monotonic();
    this.lastSent = this.lastHeard;
  }

  preStart(ctx: ActorContext<ConsumeSessionMsg>): void {
    this.timer = ctx.scheduleRepeatedly(HEARTBEAT_MS / 2, { type: "tick" });
    ctx.self.tell({ type: "pump" });
  }

  async postStop(): Promise<void> {
    this.timer?.cancel();
    this.d.stream.close();
    await this.batches?.return(undefined).catch(() => undefined);
    this.end("stopped");
  }

  receive(msg: ConsumeSessionMsg, ctx: ActorContext<ConsumeSessionMsg>): void {
    switch (msg.type) {
      case "pump":
        if (this.busy || this.ended || this.sent >= this.credited + this.d.window) return;
        this.busy = true;
        ctx.pipeToSelf(
          this.step(),
          (ended) => ({ type: "sent", ended }),
          (error) => ({ type: "failed", error }),
        );
        return;
      case "sent":
        this.busy = false;
        if (msg.ended) {
          ctx.stop();
          return;
        }
        ctx.self.tell({ type: "pump" });
        return;
      case "failed": {
        this.busy = false;
        const e = msg.error;
        ctx.log.warn("consume session failed", { table: this.d.table.name, session: this.d.session, error: e.message });
        this.d.out.send(this.d.inbox, { [CONSUME_HEADER.type]: "error" }, new TextEncoder().encode(JSON.stringify({ error: e.message, kind: isLakeError(e) ? e.kind : ErrorKind.Unexpected })));
        ctx.stop();
        return;
      }
      case "control":
        this.lastHeard = this.d.clock.monotonic();
        this.control(msg.control, msg.reply, ctx);
        return;
      case "wake":
        this.d.stream.wake();
        return;
      case "tick": {
        const now = this.d.clock.monotonic();
        if (now - this.lastHeard > SESSION_TIMEOUT_MS) {
          ctx.log.info("consume session closed: its consumer went silent", { table: this.d.table.name, session: this.d.session });
          ctx.stop();
          return;
        }
        // Waiting for a snapshot or for credit: say we are alive, so the consumer does not move to another reader.
        if (now - this.lastSent >= HEARTBEAT_MS) this.emit({ headers: { [CONSUME_HEADER.type]: "heartbeat" }, body: EMPTY });
        return;
      }
    }
  }

  private control(c: ConsumeControl, reply: ((ok: boolean, error?: string) => void) | undefined, ctx: ActorContext<ConsumeSessionMsg>): void {
    switch (c.type) {
      case "credit":
        if (c.through > this.credited) this.credited = Math.min(c.through, this.sent);
        ctx.self.tell({ type: "pump" });
        reply?.(true);
        return;
      case "ack":
        // Progress is the consumer file (or nothing without a consumer id): answered once it is written.
        this.d.stream.ack(c.snapshotId).then(
          () => reply?.(true),
          (e: unknown) => {
            ctx.log.warn("recording a consumer's progress failed", { table: this.d.table.name, session: this.d.session, error: ensureError(e).message });
            reply?.(false, ensureError(e).message);
          },
        );
        return;
      case "ping":
        reply?.(true);
        return;
      case "close":
        reply?.(true);
        ctx.stop();
        return;
    }
  }

  /** Sends exactly one message (resolves true when the stream ended: the session is closed). */
  private async step(): Promise<boolean> {
    for (;;) {
      const next = this.queue.shift();
      if (next !== undefined) {
        this.sent++;
        next.headers[CONSUME_HEADER.chunk] = String(this.sent);
        this.emit(next);
        return false;
      }
      if (this.batches !== null && this.item !== null) {
        const r = await this.batches.next();
        if (r.done) {
          this.queue.push(this.chunk(this.item, EMPTY, true));
          this.batches = null;
          this.item = null;
        } else this.queue.push(...this.encode(this.item, r.value));
        continue;
      }
      const item = await this.d.stream.next();
      if (item === null) return true;
      this.item = item;
      this.batches = readBatches(this.d.table, { ...item.read, ...(this.d.projection ? { projection: this.d.projection } : {}), ...(this.d.partition ? { partition: this.d.partition } : {}) });
    }
  }

  private chunk(item: StreamItem, body: Uint8Array, last: boolean): Chunk {
    const headers: Record<string, string> = { [CONSUME_HEADER.type]: "chunk", [CONSUME_HEADER.snapshot]: String(item.snapshotId), [CONSUME_HEADER.kind]: item.kind };
    if (last) headers[CONSUME_HEADER.last] = "1";
    return { headers, body };
  }

  /**
   * A batch as IPC streams that each fit in one message. A batch too large is cut once, into pieces sized from its
   * encoded bytes per row (with a margin); only a piece still too large (rows of uneven size) is cut again — not the
   * whole batch halved and re-encoded log2(size / limit) times.
   */
  private encode(item: StreamItem, batch: arrow.RecordBatch): Chunk[] {
    if (batch.numRows === 0) return [];
    const limit = payloadLimit(this.d.out.maxPayload);
    const bytes = arrow.tableToIPC(new arrow.Table([batch]), "stream");
    if (bytes.length <= limit || batch.numRows === 1) return [this.chunk(item, bytes, false)];
    const rows = Math.max(1, Math.min(Math.ceil(batch.numRows / 2), Math.floor((batch.numRows * limit * 0.8) / bytes.length)));
    const out: Chunk[] = [];
    for (let at = 0; at < batch.numRows; at += rows) out.push(...this.encode(item, batch.slice(at, Math.min(batch.numRows, at + rows))));
    return out;
  }

  private emit(c: Chunk): void {
    this.lastSent = this.d.clock.monotonic();
    this.d.out.send(this.d.inbox, c.headers, c.body);
    this.d.onSent?.(c.body.length);
  }

  private end(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.d.onEnd(reason);
  }
}
