/**
 * BucketBuffers: where bucket writers keep their decoded rows until a flush encodes them (bucket-buffer.ts) — in
 * worker threads on a node, or on the calling thread.
 *
 * A writer opens a session per bucket generation; the session is pinned to one worker (the one with the fewest
 * sessions), whose requests are answered one at a time in posting order, so a flush covers exactly the appends
 * posted before it and none after. Requests are posted at once, never queued here. A session opened `ownThread`
 * (a bucket trying its messages one at a time to find a poison one: actors/poison-guard.ts) gets a new worker of its
 * own, ended when the session closes, so that stopping it stops no other bucket's session.
 *
 * A worker that dies (crash, a WebAssembly trap) fails every request in flight and every later request of its
 * sessions with a retryable error: the writer re-reads its bucket from the committed offset in a new session,
 * which a new worker takes. An idle worker does not keep the process alive.
 *
 * A worker that stalls — an append (a decode) or a flush (an encode) it has been running for `deadlineMs` without an
 * answer — is stopped: that request fails with a BucketStallError, the others of the worker as if it had died. A
 * message that makes a decode or an encode spin for ever would otherwise hold its bucket, and every bucket sharing
 * the thread, for good; read again and again, it is dead-lettered like one that crashes the writer. The time counts
 * from when the worker started the request (the previous answer, or the posting into an idle worker that is ready):
 * a request queued behind other buckets' flushes is not late for that.
 */
import { DEFAULT_STALL_DEADLINE_MS } from "./stall-deadline.ts";
import { availableParallelism } from "node:os";
import { Worker, type ResourceLimits } from "node:worker_threads";
import { ErrorKind, LakeError } from "../../src/errors.ts";
import { warmUpParquet } from "../../src/codec/warm-up.ts";
import { BucketBuffer, type AppendResult, type BucketBufferSpec, type BucketFlush } from "./bucket-buffer.ts";
import { packPayloads, type IngestPayloads } from "./decode.ts";

export interface BucketSession {
  /** Decodes and keeps the messages' rows (stream order); rejections come back. */
  append(messages: ReadonlyArray<{ seq: number; data: Uint8Array }>): Promise<AppendResult>;
  /**
   * Encodes everything appended before this call into data files, and lets it go; a primary-key table's rows take
   * the sequence numbers from `firstSeq` on.
   */
  flush(firstSeq?: bigint): Promise<BucketFlush>;
  /** Drops the session's rows (the bucket is closing or re-opening). */
  close(): void;
}

export interface BucketBuffers {
  /**
   * A session for one bucket generation. `ownThread`: on a worker of its own, ended with the session (no effect on
   * the calling thread).
   */
  open(spec: BucketBufferSpec, opts?: { ownThread?: boolean }): BucketSession;
  /** Warms the encoders that will run flushes (see src/codec/warm-up.ts); best effort. */
  warmUp(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Sessions on the calling thread (tests; `NATSLAKE_DECODE_WORKERS=0`). Nothing here can stop a decode or an encode that
 * does not return: it holds the calling thread, so no deadline applies (a node runs its writers' sessions in workers).
 */
export class InlineBucketBuffers implements BucketBuffers {
  open(spec: BucketBufferSpec): BucketSession {
    let buffer: BucketBuffer | null = new BucketBuffer(spec);
    const live = (): BucketBuffer => {
      if (buffer === null) throw new LakeError(ErrorKind.Unexpected, "bucket session is closed");
      return buffer;
    };
    return {
      append: async (messages) => live().append(packPayloads(messages, { copy: false })),
      flush: async (firstSeq) => live().flush(firstSeq),
      close: () => void (buffer = null),
    };
  }

  async warmUp(): Promise<void> {
    await warmUpParquet(null);
  }

  async close(): Promise<void> {}
}

/** What a stalled request was doing: an append decodes, a flush encodes. */
export type StallStage = "decode" | "encode";

/**
 * A request its worker did not answer within the deadline: the worker was stopped (retryable: the bucket reads again,
 * and a message that stalls it every time is dead-lettered — actors/poison-guard.ts).
 */
export class BucketStallError extends LakeError {
  constructor(
    readonly stage: StallStage,
    readonly deadlineMs: number,
  ) {
    super(ErrorKind.Unexpected, `the writer stalled ${stage === "decode" ? "decoding" : "encoding"} past ${deadlineMs} ms (the node's decodeDeadline); its worker thread was stopped`, { retryable: true, context: { stage, deadlineMs } });
  }
}


/** The requests a deadline applies to: the ones whose work depends on the messages (open, close, warm-up do not). */
const STAGE_OF: Readonly<Record<string, StallStage>> = { append: "decode", flush: "encode" };

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  /** What the request does, when a deadline applies to it. */
  stage: StallStage | null;
}

interface PoolWorker {
  worker: Worker;
  sessions: number;
  /** Requests posted and not answered, in posting order: the first is the one the worker runs. */
  pending: Map<number, Pending>;
  /** Why the worker is gone (every request of its sessions fails with it); null while it runs. */
  gone: Error | null;
  /** The worker loaded its code (it said so): a request's time runs from then at the earliest. */
  ready: boolean;
  /** The deadline of the request the worker runs, if one applies. */
  watched: { id: number; timer: NodeJS.Timeout } | null;
  /** A session's own worker (not in the pool). */
  own: boolean;
}

const WORKER_URL = new URL("./bucket-worker.mjs", import.meta.url);

export class WorkerBucketBuffers implements BucketBuffers {
  private readonly workers: PoolWorker[] = [];
  /** Workers of `ownThread` sessions, each ended with its session. */
  private readonly ownWorkers = new Set<PoolWorker>();
  private nextId = 1;
  private nextSession = 1;
  private closed = false;
  readonly threads: number;

  private readonly resourceLimits: ResourceLimits | undefined;
  /** An append or a flush a worker runs longer than this stops the worker (see BucketStallError). */
  readonly deadlineMs: number;

  /**
   * `resourceLimits` bounds each worker's heap (a worker over it dies, and its sessions fail); `deadlineMs` (default
   * DEFAULT_STALL_DEADLINE_MS) each append and flush.
   */
  constructor(opts: { threads?: number; resourceLimits?: ResourceLimits; deadlineMs?: number } = {}) {
    this.threads = Math.max(1, Math.min(opts.threads ?? 1, availableParallelism()));
    this.resourceLimits = opts.resourceLimits;
    this.deadlineMs = opts.deadlineMs ?? DEFAULT_STALL_DEADLINE_MS;
    if (!(this.deadlineMs > 0)) throw new LakeError(ErrorKind.DataInvalid, `a bucket buffer deadline must be above 0 ms (got ${this.deadlineMs})`);
  }

  open(spec: BucketBufferSpec, opts: { ownThread?: boolean } = {}): BucketSession {
    const w = opts.ownThread === true ? this.spawnOwn() : this.pick();
    const session = `s${this.nextSession++}`;
    w.sessions++;
    // Not awaited: requests are answered in posting order, so a failed open fails the session's first append.
    this.request(w, { op: "open", session, spec }, []).catch(() => undefined);
    let open = true;
    return {
      append: (messages) => {
        const payloads: IngestPayloads = packPayloads(messages);
        return this.request(w, { op: "append", session, payloads }, [payloads.data.buffer as ArrayBuffer]) as Promise<AppendResult>;
      },
      flush: (firstSeq) => this.request(w, { op: "flush", session, firstSeq: firstSeq ?? 0n }, []) as Promise<BucketFlush>,
      close: () => {
        if (!open) return;
        open = false;
        w.sessions--;
        if (w.own) void this.stop(w, new LakeError(ErrorKind.Unexpected, "bucket session is closed"));
        else if (w.gone === null) this.request(w, { op: "close", session }, []).catch(() => undefined);
      },
    };
  }

  /** Starts every worker and warms its encoder, so the first flushes of a node are not the slow ones. */
  async warmUp(): Promise<void> {
    while (this.workers.filter((w) => w.gone === null).length < this.threads) this.spawn();
    await Promise.all(this.workers.filter((w) => w.gone === null).map((w) => this.request(w, { op: "warm-up" }, [])));
  }

  async close(): Promise<void> {
    this.closed = true;
    const stopping = [...this.workers, ...this.ownWorkers].map((w) => this.stop(w, new LakeError(ErrorKind.Unexpected, "bucket buffers are closed")));
    await Promise.all(stopping);
  }

  /** The live worker with the fewest sessions; a new one while fewer than `threads` run. */
  private pick(): PoolWorker {
    if (this.closed) throw new LakeError(ErrorKind.Unexpected, "bucket buffers are closed");
    const live = this.workers.filter((w) => w.gone === null);
    if (live.length < this.threads) return this.spawn();
    return live.reduce((a, b) => (b.sessions < a.sessions ? b : a));
  }

  /** A worker for one session only, outside the pool. */
  private spawnOwn(): PoolWorker {
    if (this.closed) throw new LakeError(ErrorKind.Unexpected, "bucket buffers are closed");
    return this.spawn(true);
  }

  private spawn(own = false): PoolWorker {
    const worker = new Worker(WORKER_URL, { execArgv: [], ...(this.resourceLimits ? { resourceLimits: this.resourceLimits } : {}) });
    const w: PoolWorker = { worker, sessions: 0, pending: new Map(), gone: null, ready: false, watched: null, own };
    w.worker.unref();
    w.worker.on("message", (m: { ready: true } | { id: number; ok: boolean; result?: unknown; message?: string }) => {
      if ("ready" in m) {
        // Loading a worker's code takes seconds on a loaded machine: not a stall of its first request.
        w.ready = true;
        this.watchHead(w);
        return;
      }
      const p = w.pending.get(m.id);
      if (p === undefined) return;
      w.pending.delete(m.id);
      if (w.pending.size === 0) w.worker.unref();
      this.watchHead(w);
      if (m.ok) p.resolve(m.result);
      else p.reject(new LakeError(ErrorKind.Unexpected, `bucket buffer: ${m.message}`, { retryable: true }));
    });
    w.worker.on("error", (e) => this.fail(w, new LakeError(ErrorKind.Unexpected, `a bucket buffer worker failed: ${e.message}`, { retryable: true, cause: e })));
    w.worker.on("exit", (code) => this.fail(w, new LakeError(ErrorKind.Unexpected, `a bucket buffer worker exited (code ${code})`, { retryable: true })));
    if (own) this.ownWorkers.add(w);
    else this.workers.push(w);
    return w;
  }

  private fail(w: PoolWorker, e: Error): void {
    if (w.gone === null) w.gone = e;
    if (w.watched !== null) clearTimeout(w.watched.timer);
    w.watched = null;
    for (const p of w.pending.values()) p.reject(w.gone);
    w.pending.clear();
    const i = this.workers.indexOf(w);
    if (i >= 0) this.workers.splice(i, 1);
    this.ownWorkers.delete(w);
  }

  /** Fails what `w` has in flight with `e`, and ends its thread. */
  private stop(w: PoolWorker, e: Error): Promise<number> {
    this.fail(w, e);
    return w.worker.terminate();
  }

  /** Puts the deadline on the request `w` runs now (its first pending one), if it is not on it already. */
  private watchHead(w: PoolWorker): void {
    const head = w.pending.entries().next();
    const id = head.done === true ? null : head.value[0];
    if (w.watched !== null && w.watched.id === id) return;
    if (w.watched !== null) clearTimeout(w.watched.timer);
    w.watched = null;
    if (id === null || !w.ready || w.gone !== null) return;
    const stage = head.done === true ? null : head.value[1].stage;
    if (stage === null) return;
    const timer = setTimeout(() => this.stalled(w, id, stage), this.deadlineMs);
    // A worker with requests in flight keeps the process alive already (ref'd); the timer need not.
    timer.unref();
    w.watched = { id, timer };
  }

  /**
   * The request `id` ran past the deadline: it fails as a stall, every other request of the worker as by its death
   * (their sessions read again; they are not the ones that stalled), and the thread is ended.
   */
  private stalled(w: PoolWorker, id: number, stage: StallStage): void {
    const p = w.pending.get(id);
    if (p === undefined || w.gone !== null) return;
    w.pending.delete(id);
    p.reject(new BucketStallError(stage, this.deadlineMs));
    void this.stop(w, new LakeError(ErrorKind.Unexpected, `a bucket buffer worker was stopped: another session's ${stage} on its thread stalled past ${this.deadlineMs} ms`, { retryable: true }));
  }

  private request(w: PoolWorker, msg: Record<string, unknown> & { op: string }, transfer: ArrayBuffer[]): Promise<unknown> {
    if (w.gone !== null) return Promise.reject(w.gone);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      w.pending.set(id, { resolve, reject, stage: STAGE_OF[msg.op] ?? null });
      if (w.pending.size === 1) w.worker.ref();
      w.worker.postMessage({ id, ...msg }, transfer);
      this.watchHead(w);
    });
  }
}

/**
 * The buffers for a node: `threads` workers (`NATSLAKE_DECODE_WORKERS`, default 1) whose appends and flushes may each
 * run `deadlineMs` (default DEFAULT_STALL_DEADLINE_MS), or the calling thread with 0 — where no deadline can apply.
 */
export function createBucketBuffers(threads: number, opts: { deadlineMs?: number } = {}): BucketBuffers {
  return threads === 0 ? new InlineBucketBuffers() : new WorkerBucketBuffers({ threads, ...opts });
}
