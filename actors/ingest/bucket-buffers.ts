/**
 * BucketBuffers: where bucket writers keep their decoded rows until a flush encodes them (bucket-buffer.ts) — in
 * worker threads on a node, or on the calling thread.
 *
 * A writer opens a session per bucket generation; the session is pinned to one worker (the one with the fewest
 * sessions), whose requests are answered one at a time in posting order, so a flush covers exactly the appends
 * posted before it and none after. Requests are posted at once, never queued here.
 *
 * A worker that dies (crash, a WebAssembly trap) fails every request in flight and every later request of its
 * sessions with a retryable error: the writer re-reads its bucket from the committed offset in a new session,
 * which a new worker takes. An idle worker does not keep the process alive.
 */
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
  open(spec: BucketBufferSpec): BucketSession;
  /** Warms the encoders that will run flushes (see src/codec/warm-up.ts); best effort. */
  warmUp(): Promise<void>;
  close(): Promise<void>;
}

/** Sessions on the calling thread (tests; `NATSLAKE_DECODE_WORKERS=0`). */
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

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

interface PoolWorker {
  worker: Worker;
  sessions: number;
  pending: Map<number, Pending>;
  /** Why the worker is gone (every request of its sessions fails with it); null while it runs. */
  gone: Error | null;
}

const WORKER_URL = new URL("./bucket-worker.mjs", import.meta.url);

export class WorkerBucketBuffers implements BucketBuffers {
  private readonly workers: PoolWorker[] = [];
  private nextId = 1;
  private nextSession = 1;
  private closed = false;
  readonly threads: number;

  private readonly resourceLimits: ResourceLimits | undefined;

  /** `resourceLimits` bounds each worker's heap (a worker over it dies, and its sessions fail). */
  constructor(opts: { threads?: number; resourceLimits?: ResourceLimits } = {}) {
    this.threads = Math.max(1, Math.min(opts.threads ?? 1, availableParallelism()));
    this.resourceLimits = opts.resourceLimits;
  }

  open(spec: BucketBufferSpec): BucketSession {
    const w = this.pick();
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
        if (w.gone === null) this.request(w, { op: "close", session }, []).catch(() => undefined);
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
    const stopping = this.workers.splice(0).map((w) => {
      this.fail(w, new LakeError(ErrorKind.Unexpected, "bucket buffers are closed"));
      return w.worker.terminate();
    });
    await Promise.all(stopping);
  }

  /** The live worker with the fewest sessions; a new one while fewer than `threads` run. */
  private pick(): PoolWorker {
    if (this.closed) throw new LakeError(ErrorKind.Unexpected, "bucket buffers are closed");
    const live = this.workers.filter((w) => w.gone === null);
    if (live.length < this.threads) return this.spawn();
    return live.reduce((a, b) => (b.sessions < a.sessions ? b : a));
  }

  private spawn(): PoolWorker {
    const w: PoolWorker = { worker: new Worker(WORKER_URL, { execArgv: [], ...(this.resourceLimits ? { resourceLimits: this.resourceLimits } : {}) }), sessions: 0, pending: new Map(), gone: null };
    w.worker.unref();
    w.worker.on("message", (m: { id: number; ok: boolean; result?: unknown; message?: string }) => {
      const p = w.pending.get(m.id);
      if (p === undefined) return;
      w.pending.delete(m.id);
      if (w.pending.size === 0) w.worker.unref();
      if (m.ok) p.resolve(m.result);
      else p.reject(new LakeError(ErrorKind.Unexpected, `bucket buffer: ${m.message}`, { retryable: true }));
    });
    w.worker.on("error", (e) => this.fail(w, new LakeError(ErrorKind.Unexpected, `a bucket buffer worker failed: ${e.message}`, { retryable: true, cause: e })));
    w.worker.on("exit", (code) => this.fail(w, new LakeError(ErrorKind.Unexpected, `a bucket buffer worker exited (code ${code})`, { retryable: true })));
    this.workers.push(w);
    return w;
  }

  private fail(w: PoolWorker, e: Error): void {
    if (w.gone === null) w.gone = e;
    for (const p of w.pending.values()) p.reject(w.gone);
    w.pending.clear();
    const i = this.workers.indexOf(w);
    if (i >= 0) this.workers.splice(i, 1);
  }

  private request(w: PoolWorker, msg: Record<string, unknown>, transfer: ArrayBuffer[]): Promise<unknown> {
    if (w.gone !== null) return Promise.reject(w.gone);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      w.pending.set(id, { resolve, reject });
      if (w.pending.size === 1) w.worker.ref();
      w.worker.postMessage({ id, ...msg }, transfer);
    });
  }
}

/** The buffers for a node: `threads` workers (`NATSLAKE_DECODE_WORKERS`, default 1), or the calling thread with 0. */
export function createBucketBuffers(threads: number): BucketBuffers {
  return threads === 0 ? new InlineBucketBuffers() : new WorkerBucketBuffers({ threads });
}
