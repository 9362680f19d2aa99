import { after, test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { TcpProxy } from "../../../chaos/nemesis/tcp-proxy.ts";
import { proxyCut, proxyLatency } from "../../../chaos/nemesis/index.ts";
import { freePort, startNats } from "../../../cluster/local/servers.ts";

/** An echo server on loopback; every accepted socket is tracked so `close` can end them. */
async function echoServer(): Promise<{ port: number; sockets: Set<Socket>; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const srv: Server = createServer((s) => {
    sockets.add(s);
    s.on("error", () => undefined);
    s.on("close", () => sockets.delete(s));
    s.pipe(s);
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", () => resolve()));
  const addr = srv.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return {
    port,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        srv.close(() => resolve());
      }),
  };
}

/** A client socket that records what it received and how it ended. */
interface Client {
  sock: Socket;
  received: () => Buffer;
  connected: Promise<void>;
  ended: Promise<string>;
  /** Resolves when at least `n` bytes arrived, rejects after `ms`. */
  waitBytes(n: number, ms: number): Promise<Buffer>;
}

function client(port: number): Client {
  const sock = createConnection({ host: "127.0.0.1", port });
  const chunks: Buffer[] = [];
  let waiters: Array<() => void> = [];
  sock.on("data", (b: Buffer) => {
    chunks.push(b);
    for (const w of waiters) w();
  });
  const connected = new Promise<void>((resolve) => sock.once("connect", () => resolve()));
  const ended = new Promise<string>((resolve) => {
    sock.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    sock.once("close", () => resolve("close"));
  });
  const received = (): Buffer => Buffer.concat(chunks);
  const waitBytes = (n: number, ms: number): Promise<Buffer> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (received().length >= n) {
          clearTimeout(timer);
          waiters = waiters.filter((w) => w !== check);
          resolve(received());
        }
      };
      const timer = setTimeout(() => {
        waiters = waiters.filter((w) => w !== check);
        reject(new Error(`only ${received().length}/${n} bytes after ${ms} ms`));
      }, ms);
      waiters.push(check);
      check();
    });
  return { sock, received, connected, ended, waitBytes };
}

/** `p`'s value, or "pending" if it has not settled within `ms`. */
async function settle<T>(p: Promise<T>, ms: number): Promise<T | "pending"> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<"pending">((r) => (timer = setTimeout(() => r("pending"), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

const cleanups: Array<() => Promise<void> | void> = [];
after(async () => {
  const t0 = performance.now();
  for (const c of cleanups.reverse()) await c();
  console.log(`# cleanup ${(performance.now() - t0).toFixed(0)} ms`);
});

test("tcp-proxy - forwards both ways; latency delays each direction; bulk data survives latency, jitter and backpressure", async () => {
  const echo = await echoServer();
  cleanups.push(echo.close);
  const proxy = await TcpProxy.start({ targetPort: echo.port });
  cleanups.push(() => proxy.close());
  const c = client(proxy.port);
  cleanups.push(() => void c.sock.destroy());
  await c.connected;

  let t0 = performance.now();
  c.sock.write("ping");
  assert.equal((await c.waitBytes(4, 2000)).toString(), "ping");
  const direct = performance.now() - t0;

  proxy.latency(100);
  t0 = performance.now();
  c.sock.write("pong");
  await c.waitBytes(8, 3000);
  const delayed = performance.now() - t0;
  assert.ok(delayed >= 195, `round trip with 100 ms each way took ${delayed.toFixed(1)} ms`);
  assert.ok(delayed < 1000, `round trip with 100 ms each way took ${delayed.toFixed(1)} ms`);
  proxy.latency(0);

  // 8 MiB (> the 1 MiB queue limit) through 5 ms + 10 ms jitter each way: everything arrives, in order.
  proxy.latency(5, 10);
  const payload = randomBytes(8 << 20);
  const before = c.received().length;
  t0 = performance.now();
  c.sock.write(payload);
  const got = await c.waitBytes(before + payload.length, 30_000);
  const bulkMs = performance.now() - t0;
  const sha = (b: Buffer): string => createHash("sha256").update(b).digest("hex");
  assert.equal(sha(got.subarray(before)), sha(payload));
  proxy.latency(0);

  const s = proxy.stats();
  assert.equal(s.accepted, 1);
  assert.equal(s.active, 1);
  assert.equal(s.forwarded, 1);
  assert.equal(s.bytesUp, 8 + payload.length);
  assert.equal(s.bytesDown, 8 + payload.length);
  console.log(
    `# proxy: round trip direct ${direct.toFixed(1)} ms, with 100 ms latency ${delayed.toFixed(1)} ms; 8 MiB echo with 5+10 ms jitter ${bulkMs.toFixed(0)} ms`,
  );
});

test("tcp-proxy - cut(reset) resets open and new connections; heal forwards again", async () => {
  const echo = await echoServer();
  cleanups.push(echo.close);
  const proxy = await TcpProxy.start({ targetPort: echo.port });
  cleanups.push(() => proxy.close());
  const c = client(proxy.port);
  await c.connected;
  c.sock.write("a");
  await c.waitBytes(1, 2000);

  const t0 = performance.now();
  assert.equal(proxy.cut("reset"), 1);
  assert.equal(await settle(c.ended, 2000), "ECONNRESET");
  const noticed = performance.now() - t0;
  // The server side was reset too.
  for (let i = 0; i < 50 && echo.sockets.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(echo.sockets.size, 0, "the upstream connection is gone");

  // A new connection is reset at once and never reaches the server.
  const d = client(proxy.port);
  const outcome = await settle(d.ended, 2000);
  assert.ok(outcome === "ECONNRESET" || outcome === "close", `new connection during a reset cut: ${outcome}`);
  assert.equal(d.received().length, 0);
  assert.equal(proxy.stats().refused, 1);
  assert.equal(proxy.stats().forwarded, 1);

  proxy.heal();
  const e = client(proxy.port);
  cleanups.push(() => void e.sock.destroy());
  e.sock.write("back");
  assert.equal((await e.waitBytes(4, 2000)).toString(), "back");
  const s = proxy.stats();
  assert.deepEqual([s.cuts, s.heals, s.resetByCut, s.refused, s.active], [1, 1, 1, 1, 1]);
  console.log(`# proxy: reset noticed by the client after ${noticed.toFixed(1)} ms`);
});

test("tcp-proxy - cut(blackhole) freezes connections without FIN/RST; heal resumes them with nothing lost", async () => {
  const echo = await echoServer();
  cleanups.push(echo.close);
  const proxy = await TcpProxy.start({ targetPort: echo.port });
  cleanups.push(() => proxy.close());
  const c = client(proxy.port);
  cleanups.push(() => void c.sock.destroy());
  await c.connected;
  c.sock.write("1");
  await c.waitBytes(1, 2000);

  assert.equal(proxy.cut("blackhole"), 1);
  c.sock.write("2");
  // Nothing comes back and the connection does not end.
  assert.equal(await settle(c.ended, 500), "pending");
  assert.equal(c.received().toString(), "1");

  // A new connection is accepted (connect succeeds) but gets no data and reaches no server.
  const d = client(proxy.port);
  cleanups.push(() => void d.sock.destroy());
  await d.connected;
  d.sock.write("x");
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(d.received().length, 0);
  assert.equal(echo.sockets.size, 1, "only the first connection reached the server");
  assert.equal(proxy.stats().blackholed, 1);
  assert.equal(proxy.stats().frozen, 1);
  assert.equal(proxy.cut("blackhole"), 0, "cutting again is a no-op");

  proxy.heal();
  // The frozen connection resumes: what was sent during the cut arrives now, in order.
  assert.equal((await c.waitBytes(2, 2000)).toString(), "12");
  // The connection accepted during the cut gets its upstream now.
  assert.equal((await d.waitBytes(1, 2000)).toString(), "x");
  assert.equal(echo.sockets.size, 2);
});

test("tcp-proxy - a down upstream closes the client; close() ends everything and stops listening", async () => {
  const deadPort = await freePort();
  const proxy = await TcpProxy.start({ targetPort: deadPort });
  const c = client(proxy.port);
  const outcome = await settle(c.ended, 2000);
  assert.notEqual(outcome, "pending");
  assert.equal(proxy.stats().upstreamErrors, 1);
  assert.equal(proxy.stats().active, 0);

  const echo = await echoServer();
  cleanups.push(echo.close);
  const p2 = await TcpProxy.start({ targetPort: echo.port });
  const open = client(p2.port);
  const frozen = client(p2.port);
  await Promise.all([open.connected, frozen.connected]);
  open.sock.write("z");
  await open.waitBytes(1, 2000);
  p2.cut("blackhole");
  await Promise.all([proxy.close(), p2.close(), p2.close()]);
  assert.notEqual(await settle(open.ended, 2000), "pending");
  assert.notEqual(await settle(frozen.ended, 2000), "pending");
  const late = client(p2.port);
  assert.equal(await settle(late.ended, 2000), "ECONNREFUSED");
  assert.throws(() => p2.cut(), /closed/);
});

/** Records a NATS connection's status events with their times. */
function watchStatus(nc: NatsConnection): { seen: Array<{ type: string; at: number }>; waitFor(type: string, since: number, ms: number): Promise<number> } {
  const seen: Array<{ type: string; at: number }> = [];
  void (async () => {
    for await (const s of nc.status()) seen.push({ type: s.type, at: performance.now() });
  })();
  return {
    seen,
    async waitFor(type, since, ms) {
      const deadline = performance.now() + ms;
      while (performance.now() < deadline) {
        const hit = seen.find((s) => s.type === type && s.at >= since);
        if (hit) return hit.at - since;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`no '${type}' status within ${ms} ms (seen: ${seen.map((s) => s.type).join(", ")})`);
    },
  };
}

async function roundTrip(nc: NatsConnection, subject: string, ms = 3000): Promise<void> {
  const sub = nc.subscribe(subject, { max: 1 });
  const got = (async () => {
    for await (const m of sub) return m.string();
    return null;
  })();
  nc.publish(subject, "hello");
  const r = await settle(got, ms);
  sub.unsubscribe();
  assert.equal(r, "hello", `round trip on ${subject}`);
}

test("tcp-proxy - a nats.js client through the proxy is disconnected by a cut (reset and blackhole) and reconnects after heal", async () => {
  const nats = await startNats();
  cleanups.push(() => nats.stop());
  const proxy = await TcpProxy.start({ targetPort: nats.port });
  cleanups.push(() => proxy.close());
  const reset = proxyCut(proxy, { kind: "node", id: "n1" }, { mode: "reset" });
  const blackhole = proxyCut(proxy, { kind: "node", id: "n1" }, { mode: "blackhole" });
  const nc = await connect({
    servers: proxy.url,
    reconnectTimeWait: 100,
    reconnectJitter: 0,
    maxReconnectAttempts: -1,
    pingInterval: 300,
    maxPingOut: 2,
    timeout: 1000,
  });
  cleanups.push(() => nc.close());
  const status = watchStatus(nc);
  await roundTrip(nc, "t.before");

  // Reset: the client notices at once.
  let t0 = performance.now();
  const r1 = await reset.inject();
  assert.equal(r1.name, "partition-reset");
  assert.equal(r1.target, "node:n1");
  assert.equal(r1.detail?.["connections"], 1);
  const resetNoticed = await status.waitFor("disconnect", t0, 3000);
  await new Promise((r) => setTimeout(r, 500)); // reconnect attempts are reset meanwhile
  assert.ok(proxy.stats().refused >= 1, "reconnect attempts were refused during the cut");
  t0 = performance.now();
  await reset.heal(r1);
  assert.ok(r1.healedAt !== undefined && r1.healedAt >= r1.injectedAt);
  const resetRecovered = await status.waitFor("reconnect", t0, 5000);
  await roundTrip(nc, "t.after-reset");

  // Blackhole: no RST; the client notices only through its ping timeout (300 ms × 2).
  t0 = performance.now();
  const r2 = await blackhole.inject();
  const blackholeNoticed = await status.waitFor("disconnect", t0, 5000);
  assert.ok(blackholeNoticed >= 250, `a blackhole cannot be noticed before a ping is missed (${blackholeNoticed.toFixed(0)} ms)`);
  await new Promise((r) => setTimeout(r, 1500)); // reconnect attempts hang and time out meanwhile
  assert.ok(proxy.stats().blackholed >= 1, "reconnect attempts were blackholed during the cut");
  t0 = performance.now();
  await blackhole.heal(r2);
  const blackholeRecovered = await status.waitFor("reconnect", t0, 5000);
  await roundTrip(nc, "t.after-blackhole");
  console.log(
    `# nats through proxy: reset noticed ${resetNoticed.toFixed(0)} ms, reconnected ${resetRecovered.toFixed(0)} ms after heal; ` +
      `blackhole noticed ${blackholeNoticed.toFixed(0)} ms, reconnected ${blackholeRecovered.toFixed(0)} ms after heal`,
  );

  // Latency through the nemesis: RTT grows by ~2 × 50 ms, heal restores it.
  const lat = proxyLatency(proxy, 50, "node:n1");
  // The smallest of a few round trips: one sample on a busy machine can be tens of ms by itself.
  const minRtt = async (n: number): Promise<number> => {
    let m = Infinity;
    for (let i = 0; i < n; i++) m = Math.min(m, await nc.rtt());
    return m;
  };
  const base = await minRtt(5);
  const r3 = await lat.inject();
  const slow = await minRtt(3);
  await lat.heal(r3);
  const healed = await minRtt(3);
  assert.ok(slow >= base + 95, `rtt ${base} → ${slow} ms with 50 ms each way`);
  assert.ok(healed < slow - 50, `rtt after heal ${healed} ms`);
  console.log(`# nats rtt: ${base} ms, with 50 ms latency ${slow} ms, healed ${healed} ms`);
});
