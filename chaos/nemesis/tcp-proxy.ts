/**
 * A loopback TCP proxy for network faults (tc netem and toxiproxy are not available here; see reliability.md §7).
 * A node is pointed at the proxy instead of the real server:
 *
 *   const proxy = await TcpProxy.start({ targetPort: nats.port });   // listens on 127.0.0.1:<proxy.port>
 *   proxy.cut("reset");      // every connection gets an RST; new connections are reset right after accept
 *   proxy.cut("blackhole");  // connections freeze: no data either way, no FIN/RST; new connections are accepted and
 *                            // then get nothing (the client only notices through its own timeouts)
 *   proxy.stats();           // accepted / active / forwarded / reset / refused / blackholed / frozen / bytes …
 *   proxy.heal();            // new connections are forwarded again; frozen connections resume where they stopped
 *   proxy.latency(50);       // every chunk is delayed 50 ms in each direction (RTT + 100 ms), order kept
 *   await proxy.close();
 *
 * Blackhole semantics: a frozen connection stops reading on both sides, so bytes queue in the kernel's socket buffers
 * (the sender sees a zero TCP window) instead of being dropped. That is what a partition does to TCP: nothing is lost
 * or corrupted, it is retransmitted when the network heals. Bytes are never silently dropped mid-stream, because that
 * would corrupt the protocol rather than partition it. A connection accepted during a blackhole gets its upstream
 * connection at heal time (like a SYN retransmit that finally succeeds).
 *
 * Reset semantics: both the client and the server side of every connection get an RST (`resetAndDestroy`), so
 * both notice at once; new connections are accepted and reset immediately (the client sees ECONNRESET, or its
 * connect fails). The listening socket itself stays open, so the port can never be taken by another process.
 *
 * Everything is in-process and bounded: `close()` destroys every socket and timer, and is idempotent.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";

export type CutMode = "reset" | "blackhole";
export type ProxyState = "open" | CutMode;

export interface TcpProxyOptions {
  /** Where connections are forwarded to. */
  targetPort: number;
  targetHost?: string;
  /** 0 (default): the OS picks a free port. */
  listenPort?: number;
  listenHost?: string;
  /** For jitter; pass a seeded generator to make a run reproducible (default Math.random). */
  random?: () => number;
}

export interface TcpProxyStats {
  /** Client connections accepted (including ones reset or blackholed at once). */
  accepted: number;
  /** Connections currently open (client side). */
  active: number;
  /** Connections that got an upstream connection. */
  forwarded: number;
  /** Existing connections reset by `cut("reset")` or `resetConnections()`. */
  resetByCut: number;
  /** New connections reset at accept time while cut in reset mode. */
  refused: number;
  /** New connections accepted and held without data while cut in blackhole mode. */
  blackholed: number;
  /** Existing connections frozen by `cut("blackhole")`. */
  frozen: number;
  /** Upstream connections that failed (server down or refusing). */
  upstreamErrors: number;
  /** Bytes forwarded client → server and server → client. */
  bytesUp: number;
  bytesDown: number;
  cuts: number;
  heals: number;
}

/** Bytes queued in one direction (latency) before the source is paused. */
const HIGH_WATER = 1 << 20;

/**
 * One direction of a connection: chunks wait their delay (order kept), then are written to `dest`. The source is
 * paused while the pipe is frozen, while too much is queued, or while `dest` needs a drain.
 */
class Direction {
  private queue: Array<{ chunk: Buffer; due: number }> = [];
  private queued = 0;
  private lastDue = 0;
  private timer: NodeJS.Timeout | undefined;
  private needsDrain = false;
  private ended = false;
  private destroyWhenDone = false;
  dest: Socket | undefined;

  constructor(
    private readonly proxy: TcpProxy,
    private readonly pipe: Pipe,
    readonly source: Socket,
    private readonly count: (n: number) => void,
  ) {}

  push(chunk: Buffer): void {
    const due = Math.max(Date.now() + this.proxy.delayFor(), this.lastDue);
    this.lastDue = due;
    this.queue.push({ chunk, due });
    this.queued += chunk.length;
    this.flush();
  }

  /** The source sent FIN: forward it once everything queued is written. */
  end(): void {
    this.ended = true;
    this.flush();
  }

  /** The source is gone: write what is queued, then close `dest` too. */
  finishThenDestroy(): void {
    this.ended = true;
    this.destroyWhenDone = true;
    this.flush();
  }

  /** Writes every chunk that is due (none while frozen), then schedules the next one. */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const dest = this.dest;
    if (this.pipe.frozen || !dest || dest.destroyed) {
      this.updateFlow();
      return;
    }
    const now = Date.now();
    while (this.queue.length > 0 && this.queue[0]!.due <= now) {
      const { chunk } = this.queue.shift()!;
      this.queued -= chunk.length;
      this.count(chunk.length);
      if (!dest.write(chunk)) this.needsDrain = true;
    }
    const next = this.queue[0];
    if (next) this.timer = setTimeout(() => this.flush(), Math.max(0, next.due - now));
    else if (this.ended && !dest.writableEnded) {
      if (this.destroyWhenDone) dest.end(() => dest.destroy());
      else dest.end();
    }
    this.updateFlow();
  }

  onDrain(): void {
    this.needsDrain = false;
    this.updateFlow();
  }

  updateFlow(): void {
    if (this.source.destroyed) return;
    const hold = this.pipe.frozen || this.needsDrain || this.queued > HIGH_WATER;
    if (hold && !this.source.isPaused()) this.source.pause();
    else if (!hold && this.source.isPaused()) this.source.resume();
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
    this.queued = 0;
  }
}

/** One proxied connection: the accepted client socket and (once connected) its upstream socket. */
class Pipe {
  upstream: Socket | undefined;
  frozen = false;
  readonly up: Direction;
  down: Direction | undefined;
  private closed = false;

  constructor(
    private readonly proxy: TcpProxy,
    readonly client: Socket,
  ) {
    this.up = new Direction(proxy, this, client, (n) => (proxy.counters.bytesUp += n));
    client.on("data", (b: Buffer) => this.up.push(b));
    client.on("end", () => this.up.end());
    client.on("drain", () => this.down?.onDrain());
    client.on("error", () => this.teardown());
    client.on("close", () => this.sideClosed(client));
  }

  connectUpstream(): void {
    if (this.upstream || this.closed) return;
    const up = createConnection({ host: this.proxy.targetHost, port: this.proxy.targetPort, allowHalfOpen: true });
    up.setNoDelay(true);
    this.upstream = up;
    this.up.dest = up;
    const down = new Direction(this.proxy, this, up, (n) => (this.proxy.counters.bytesDown += n));
    down.dest = this.client;
    this.down = down;
    let connected = false;
    up.once("connect", () => {
      connected = true;
      this.proxy.counters.forwarded++;
    });
    up.on("data", (b: Buffer) => down.push(b));
    up.on("end", () => down.end());
    up.on("drain", () => this.up.onDrain());
    up.on("error", () => {
      if (!connected) this.proxy.counters.upstreamErrors++;
      this.teardown();
    });
    up.on("close", () => this.sideClosed(up));
    down.updateFlow();
    this.up.flush();
  }

  freeze(): void {
    this.frozen = true;
    this.up.updateFlow();
    this.down?.updateFlow();
  }

  thaw(): void {
    this.frozen = false;
    this.connectUpstream();
    this.up.flush();
    this.down?.flush();
  }

  /** RST to both sides. */
  reset(): void {
    if (this.closed) return;
    this.closed = true;
    this.up.dispose();
    this.down?.dispose();
    for (const s of [this.client, this.upstream]) if (s && !s.destroyed) s.resetAndDestroy();
    this.proxy.forget(this);
  }

  /** One side closed cleanly: flush what is queued towards the other side, then close that too. */
  private sideClosed(sock: Socket): void {
    const other = sock === this.client ? this.upstream : this.client;
    const towardsOther = sock === this.client ? this.up : this.down;
    if (!other || other.destroyed || !towardsOther) this.teardown();
    else towardsOther.finishThenDestroy();
  }

  teardown(): void {
    if (this.closed) return;
    this.closed = true;
    this.up.dispose();
    this.down?.dispose();
    if (!this.client.destroyed) this.client.destroy();
    if (this.upstream && !this.upstream.destroyed) this.upstream.destroy();
    this.proxy.forget(this);
  }
}

export class TcpProxy {
  readonly targetHost: string;
  readonly targetPort: number;
  readonly host: string;
  /** @internal mutable counters; read them through `stats()`. */
  readonly counters: Omit<TcpProxyStats, "active">;
  private readonly pipes = new Set<Pipe>();
  private stateValue: ProxyState = "open";
  private delayMs = 0;
  private jitterMs = 0;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    opts: TcpProxyOptions,
    private readonly random: () => number,
  ) {
    this.targetHost = opts.targetHost ?? "127.0.0.1";
    this.targetPort = opts.targetPort;
    this.host = opts.listenHost ?? "127.0.0.1";
    this.counters = {
      accepted: 0,
      forwarded: 0,
      resetByCut: 0,
      refused: 0,
      blackholed: 0,
      frozen: 0,
      upstreamErrors: 0,
      bytesUp: 0,
      bytesDown: 0,
      cuts: 0,
      heals: 0,
    };
    server.on("connection", (s) => this.accept(s));
  }

  /** Listens on `listenHost:listenPort` (127.0.0.1, an OS-picked port by default). */
  static async start(opts: TcpProxyOptions): Promise<TcpProxy> {
    const server = createServer({ allowHalfOpen: true, pauseOnConnect: true });
    const host = opts.listenHost ?? "127.0.0.1";
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.listenPort ?? 0, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const addr = server.address();
    const port = typeof addr === "object" && addr ? addr.port : 0;
    return new TcpProxy(server, port, opts, opts.random ?? Math.random);
  }

  /** `nats://127.0.0.1:<port>`: the URL to give a NATS client instead of the server's. */
  get url(): string {
    return `nats://${this.host}:${this.port}`;
  }

  get state(): ProxyState {
    return this.stateValue;
  }

  stats(): TcpProxyStats {
    return { ...this.counters, active: this.pipes.size };
  }

  /**
   * Cuts the link. `reset`: every open connection is reset (both sides) and new ones are reset at accept.
   * `blackhole`: every open connection freezes and new ones are accepted and held without data.
   * Returns how many open connections were affected. Cutting again in the same mode is a no-op; switching from
   * blackhole to reset resets the frozen connections.
   */
  cut(mode: CutMode = "reset"): number {
    this.assertOpen();
    if (this.stateValue === mode) return 0;
    this.stateValue = mode;
    this.counters.cuts++;
    const pipes = [...this.pipes];
    for (const p of pipes) {
      if (mode === "reset") {
        p.reset();
        this.counters.resetByCut++;
      } else if (!p.frozen) {
        p.freeze();
        this.counters.frozen++;
      }
    }
    return pipes.length;
  }

  /** Ends a cut: new connections are forwarded, frozen ones resume. A no-op when not cut. */
  heal(): void {
    if (this.stateValue === "open") return;
    this.stateValue = "open";
    this.counters.heals++;
    for (const p of [...this.pipes]) if (p.frozen) p.thaw();
  }

  /** Resets every open connection once, without cutting (a connection blip). Returns how many. */
  resetConnections(): number {
    const pipes = [...this.pipes];
    for (const p of pipes) p.reset();
    this.counters.resetByCut += pipes.length;
    return pipes.length;
  }

  /** Delays every chunk by `ms` (+ uniform 0..`jitterMs`) in each direction; order is kept. 0 removes it. */
  latency(ms: number, jitterMs = 0): void {
    if (!(ms >= 0) || !(jitterMs >= 0)) throw new RangeError(`latency must be >= 0 (got ${ms}, jitter ${jitterMs})`);
    this.delayMs = ms;
    this.jitterMs = jitterMs;
  }

  get latencyMs(): number {
    return this.delayMs;
  }

  /** @internal */
  delayFor(): number {
    return this.delayMs + (this.jitterMs > 0 ? this.random() * this.jitterMs : 0);
  }

  /** @internal */
  forget(p: Pipe): void {
    this.pipes.delete(p);
  }

  /** Stops listening and destroys every connection and timer. Idempotent. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      for (const p of [...this.pipes]) p.teardown();
      this.pipes.clear();
    });
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error("the proxy is closed");
  }

  private accept(s: Socket): void {
    this.counters.accepted++;
    if (this.closing) {
      s.destroy();
      return;
    }
    s.setNoDelay(true);
    if (this.stateValue === "reset") {
      this.counters.refused++;
      s.on("error", () => undefined);
      s.resetAndDestroy();
      return;
    }
    const p = new Pipe(this, s);
    this.pipes.add(p);
    if (this.stateValue === "blackhole") {
      this.counters.blackholed++;
      p.freeze();
      return;
    }
    p.connectUpstream();
    s.resume();
  }
}
