/**
 * ConsumeSessionActor: one consumer's session on a reader node (the protocol: actors/wire/consume.ts). It follows
 * the table with a TableStream and sends each item's rows (projection and partition filter applied here, at the
 * reader) as Arrow IPC chunks, only while the consumer's credit allows — so a slow or stalled consumer holds at most
 * two windows of this node's memory (in flight, and read ahead; a window bounds chunks and bytes) and never slows
 * another session. Every snapshot ends with a chunk marked last. Acks are written as the consumer's Paimon progress.
 *
 * Where the rows come from: a new snapshot's delta from the table's shared DeltaFeed (read and encoded once for every
 * session that projects and filters the same way: actors/consume-feed.ts); a full scan, a snapshot the feed no longer
 * holds (this session is behind) or one too large to share, from this session's own read of the table, streamed
 * batch by batch within its window.
 */
import { ensureError, ErrorKind, isLakeError } from "../src/errors.ts";
import { failpoint } from "../src/failpoints.ts";
import { readMessages, type FileRows } from "../src/scan/read.ts";
import type { StreamItem, TableStream } from "../src/scan/table-stream.ts";
import type { Value } from "../src/format/values.ts";
import type { Table } from "../src/table/table.ts";
import type { ManifestStore } from "../src/table/manifest-store.ts";
import type { Actor, ActorContext, Cancellable } from "./runtime/index.ts";
import type { Clock } from "./ports.ts";
import { ChunkPacker } from "./consume-chunks.ts";
import type { FeedCursor } from "./consume-feed.ts";
import { CONSUME_HEADER, HEARTBEAT_MS, SESSION_TIMEOUT_MS, WINDOW_BYTES_PER_CHUNK, type ConsumeControl } from "./wire/consume.ts";
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
  /** A snapshot notification: `snapshotId` is the snapshot it announced (absent when the message did not say). */
  | { type: "wake"; snapshotId?: number }
  | { type: "tick" };

export interface ConsumeSessionDeps {
  table: Table;
  session: string;
  inbox: string;
  stream: TableStream;
  projection?: string[];
  partition?: Value[];
  /** The node's manifest cache of the table (its feeds plan through it too): a full start plans from it. */
  manifests?: ManifestStore;
  /** This session's place on the shared feed of its (table, projection, partition); none: every item read alone. */
  feed?: FeedCursor;
  window: number;
  out: ConsumeOut;
  clock: Clock;
  /** Called once when the session ends (the node drops its subscriptions). */
  onEnd: (reason: string) => void;
  /** Chunk bytes sent, by table (the reader's share of the node's memory and bandwidth). */
  onSent?: (bytes: number) => void;
  /** Called when a snapshot's delta was sent whole (its last chunk went out): the reader's part of its latency. */
  onDelivered?: (snapshotId: number) => void;
}

interface Chunk {
  headers: Record<string, string>;
  body: Uint8Array;
  /** Set on a delta's last chunk. */
  delivers?: number;
}

/** An item this session reads itself. */
interface OwnRead {
  item: StreamItem;
  files: AsyncGenerator<FileRows>;
  packer: ChunkPacker;
  /** The last complete body, sent once the next is known (the final one carries the last mark). */
  held: Uint8Array | null;
}

const EMPTY = new Uint8Array(0);

export class ConsumeSessionActor implements Actor<ConsumeSessionMsg> {
  /** The last chunk number sent, and the highest the consumer has taken. */
  private sent = 0;
  private credited = 0;
  private busy = false;
  /** Chunks sent and not credited yet (number and body bytes), oldest first, and their bytes. */
  private inFlight: Array<{ chunk: number; bytes: number }> = [];
  private inFlightBytes = 0;
  private readonly windowBytes: number;
  /** Chunks ready to send, in order (a shared entry's bodies, or what this session's own read packed). */
  private queue: Chunk[] = [];
  private own: OwnRead | null = null;
  private lastHeard: number;
  private lastSent: number;
  private timer: Cancellable | null = null;
  private ended = false;

  constructor(private readonly d: ConsumeSessionDeps) {
    this.lastHeard = d.clock.monotonic();
    this.lastSent = this.lastHeard;
    this.windowBytes = d.window * WINDOW_BYTES_PER_CHUNK;
  }

  preStart(ctx: ActorContext<ConsumeSessionMsg>): void {
    this.timer = ctx.scheduleRepeatedly(HEARTBEAT_MS / 2, { type: "tick" });
    ctx.self.tell({ type: "pump" });
  }

  async postStop(): Promise<void> {
    this.timer?.cancel();
    this.d.stream.close();
    this.d.feed?.detach();
    await this.own?.files.return(undefined).catch(() => undefined);
    this.end("stopped");
  }

  receive(msg: ConsumeSessionMsg, ctx: ActorContext<ConsumeSessionMsg>): void {
    switch (msg.type) {
      case "pump":
        if (this.busy || this.ended || !this.creditAllows()) return;
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
        this.d.stream.wake(msg.snapshotId);
        return;
      case "tick": {
        const now = this.d.clock.monotonic();
        if (now - this.lastHeard > SESSION_TIMEOUT_MS) {
          ctx.log.info("consume session closed: its consumer went silent", { table: this.d.table.name, session: this.d.session });
          ctx.stop();
          return;
        }
        // Waiting for a snapshot or for credit: say we are alive, so the consumer does not move to another reader.
        // It says which chunk was sent last, so a consumer that lost it (and so gives no credit) finds out.
        if (now - this.lastSent >= HEARTBEAT_MS) this.emit({ headers: { [CONSUME_HEADER.type]: "heartbeat", [CONSUME_HEADER.sent]: String(this.sent) }, body: EMPTY });
        return;
      }
    }
  }

  private control(c: ConsumeControl, reply: ((ok: boolean, error?: string) => void) | undefined, ctx: ActorContext<ConsumeSessionMsg>): void {
    switch (c.type) {
      case "credit":
        if (c.through > this.credited) this.credited = Math.min(c.through, this.sent);
        while (this.inFlight.length > 0 && this.inFlight[0]!.chunk <= this.credited) this.inFlightBytes -= this.inFlight.shift()!.bytes;
        ctx.self.tell({ type: "pump" });
        reply?.(true);
        return;
      case "ack":
        // A reader dying with an ack in flight: before it is recorded, or recorded and not answered (the client sends
        // it again on its next session either way — test/integration/consume-ack-follow.test.ts).
        failpoint("consume.ack.received");
        // Progress is the consumer file (or nothing without a consumer id): answered once it is written.
        this.d.stream.ack(c.snapshotId).then(
          () => {
            failpoint("consume.ack.recorded");
            reply?.(true);
          },
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

  /**
   * Sends what the consumer's credit allows, reading more as needed; resolves false when it must wait for credit
   * (with up to `window` chunks ready), true when the stream ended (the session is closed). Control messages (credit,
   * ack) are handled meanwhile: the work runs outside the mailbox, and each send looks at the credit afresh.
   *
   * Chunks are read and encoded ahead while the consumer's credit is used up, a window of them at most (in chunks and
   * bytes, as in flight): otherwise the reader would idle until a credit came back and the consumer until the next
   * chunk was read (a catch-up stopped and went, at half its speed). A stalled session therefore holds up to a window
   * in flight and a window ready.
   */
  private async step(): Promise<boolean> {
    for (;;) {
      if (this.ended) return true;
      const creditAllows = this.creditAllows();
      if (creditAllows && this.queue.length > 0) {
        const next = this.queue.shift()!;
        this.sent++;
        next.headers[CONSUME_HEADER.chunk] = String(this.sent);
        this.inFlight.push({ chunk: this.sent, bytes: next.body.byteLength });
        this.inFlightBytes += next.body.byteLength;
        this.emit(next);
        if (next.delivers !== undefined) this.d.onDelivered?.(next.delivers);
        continue;
      }
      if (!creditAllows && (this.queue.length >= this.d.window || this.queuedBytes() >= this.windowBytes)) return false;
      if (this.own !== null) {
        await this.readOwn(this.own);
        continue;
      }
      // The next item only once everything ready was sent: waiting for a new snapshot must never hold back chunks
      // that a credit arriving meanwhile would let go.
      if (this.queue.length > 0) return false;
      const item = await this.d.stream.next();
      if (item === null) return true;
      if (item.kind === "delta" && this.d.feed !== undefined) {
        const entry = await this.d.feed.get(item.snapshot);
        if (entry !== null) {
          // Shared: the bodies are the feed's, taken by reference; only the headers are this session's.
          entry.bodies.forEach((body, i) => this.queue.push(this.chunk(item, body, i === entry.bodies.length - 1)));
          if (entry.bodies.length === 0) this.queue.push(this.chunk(item, EMPTY, true));
          this.d.feed.need(item.snapshotId + 1);
          continue;
        }
      }
      // Read by this session alone: a full scan, a snapshot behind the feed or too large to share.
      if (item.kind === "full") this.d.feed?.need(item.snapshotId + 1); // the deltas after it: the feed keeps them for us
      const packer = new ChunkPacker(payloadLimit(this.d.out.maxPayload));
      this.own = {
        item,
        // Every file decodes in the worker pool, this thread sends meanwhile (a full scan of small files decoded here
        // would leave the workers idle and this thread doing all the work); the decoders' IPC messages go out as they
        // are whenever the files' columns are the target's (src/codec/ipc-stream.ts).
        files: readMessages(this.d.table, { ...item.read, ...(this.d.projection ? { projection: this.d.projection } : {}), ...(this.d.partition ? { partition: this.d.partition } : {}), messageBytes: packer.messageBytes }, this.d.manifests),
        packer,
        held: null,
      };
    }
  }

  /** Whether the consumer's credit lets the next chunk go (protocol step 3: the window in chunks and in bytes). */
  private creditAllows(): boolean {
    return this.sent < this.credited + this.d.window && this.inFlightBytes < this.windowBytes;
  }

  private queuedBytes(): number {
    let n = 0;
    for (const c of this.queue) n += c.body.byteLength;
    return n;
  }

  /**
   * The next file of an item this session reads itself, packed into chunks. The chunk completed last is held back
   * until the next one is known (or the item ends), so that the snapshot's final chunk carries the last mark.
   */
  private async readOwn(own: OwnRead): Promise<void> {
    const r = await own.files.next();
    if (r.done !== true) {
      const file = r.value;
      const bodies = own.packer.addFile(file);
      for (const body of bodies) this.hold(own, body);
      return;
    }
    for (const body of own.packer.flush()) this.hold(own, body);
    this.queue.push(this.chunk(own.item, own.held ?? EMPTY, true));
    this.own = null;
    if (own.item.kind === "delta") this.d.feed?.need(own.item.snapshotId + 1);
  }

  private hold(own: OwnRead, body: Uint8Array): void {
    if (own.held !== null) this.queue.push(this.chunk(own.item, own.held, false));
    own.held = body;
  }

  private chunk(item: StreamItem, body: Uint8Array, last: boolean): Chunk {
    const headers: Record<string, string> = { [CONSUME_HEADER.type]: "chunk", [CONSUME_HEADER.snapshot]: String(item.snapshotId), [CONSUME_HEADER.kind]: item.kind };
    if (!last) return { headers, body };
    headers[CONSUME_HEADER.last] = "1";
    return item.kind === "delta" ? { headers, body, delivers: item.snapshotId } : { headers, body };
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
