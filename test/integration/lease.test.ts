/**
 * The committer lease (cluster/redis/lease.ts) against a real redis-server: mutual exclusion, fencing epochs,
 * renewal, expiry, stale tokens, release, Redis restart and Redis down. Timings use short ttls (hundreds of ms).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { Redis } from "ioredis";
import { connectLeaseRedis, RedisErrorReporter, RedisLease } from "../../cluster/redis/lease.ts";
import { freePort } from "../helpers/servers.ts";
import { LeaseKeeper, type LeaseLostReason } from "../../actors/lease-keeper.ts";
import type { LeaseGrant } from "../../actors/lease-port.ts";
import { startRedis, type ServerHandle } from "../helpers/servers.ts";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Blocks the event loop (a GC pause or SIGSTOP of this process, as far as its timers can tell). */
const freeze = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

let redis: ServerHandle;
const clients: Redis[] = [];
let keyN = 0;
const freshKey = (): string => `natslake:test:lease:${process.pid}:${++keyN}`;

/**
 * Runs `op` beside a plain timer of `boundMs` and returns how long `op` took and how long that timer really took.
 * Comparing the two keeps "answers within the timeout" meaningful when a loaded machine fires every timer late.
 */
async function timed<T>(boundMs: number, op: () => Promise<T>): Promise<{ value: T; tookMs: number; timerMs: number }> {
  const t0 = performance.now();
  const timer = new Promise<number>((r) => setTimeout(() => r(performance.now() - t0), boundMs));
  const value = await op();
  const tookMs = performance.now() - t0;
  return { value, tookMs, timerMs: await timer };
}

async function client(url = redis.url, commandTimeoutMs = 300): Promise<Redis> {
  const c = await connectLeaseRedis(url, { commandTimeoutMs });
  clients.push(c);
  return c;
}

before(async () => {
  redis = await startRedis();
});
after(async () => {
  for (const c of clients) c.disconnect();
  await redis.stop();
});

test("lease - mutual exclusion: one grant among racing instances, none while it is held", async () => {
  const key = freshKey();
  const leases = await Promise.all(
    Array.from({ length: 8 }, async (_, i) => new RedisLease(await client(), key, { ttlMs: 5000, safetyMarginMs: 100, holderId: `p${i}` })),
  );
  const grants = await Promise.all(leases.map((l) => l.tryAcquire()));
  const winners = grants.flatMap((g, i) => (g ? [i] : []));
  assert.equal(winners.length, 1, `exactly one winner, got ${winners.join(",")}`);
  const w = winners[0]!;
  for (const [i, l] of leases.entries()) {
    if (i === w) assert.ok(l.validUntil() > performance.now());
    else assert.equal(l.validUntil(), Number.NEGATIVE_INFINITY);
  }
  // Still held: every other instance keeps failing.
  for (const [i, l] of leases.entries()) if (i !== w) assert.equal(await l.tryAcquire(), null);
  // Even the holder cannot take it a second time.
  assert.equal(await leases[w]!.tryAcquire(), null);
  await leases[w]!.release(grants[w]!);
});

test("lease - fencing epochs strictly increase across acquisitions by different holders", async () => {
  const key = freshKey();
  const a = new RedisLease(await client(), key, { ttlMs: 5000, safetyMarginMs: 100 });
  const b = new RedisLease(await client(), key, { ttlMs: 5000, safetyMarginMs: 100 });
  const epochs: number[] = [];
  for (let i = 0; i < 10; i++) {
    const l = i % 2 === 0 ? a : b;
    const g = await l.tryAcquire();
    assert.ok(g, `acquisition ${i}`);
    assert.equal(g.acquiredAtMono <= performance.now(), true);
    epochs.push(g.fencingEpoch);
    await l.release(g);
    assert.equal(l.validUntil(), Number.NEGATIVE_INFINITY, "released: no deadline");
  }
  for (let i = 1; i < epochs.length; i++) assert.ok(epochs[i]! > epochs[i - 1]!, `epochs ${epochs.join(",")}`);
  assert.equal(epochs[0], 1, "a fresh key starts at epoch 1");
  // A failed attempt does not consume an epoch.
  const g = await a.tryAcquire();
  assert.ok(g);
  assert.equal(await b.tryAcquire(), null);
  assert.equal(await b.tryAcquire(), null);
  await a.release(g);
  const g2 = await b.tryAcquire();
  assert.equal(g2?.fencingEpoch, g.fencingEpoch + 1);
});

test("lease - a kept lease stays held past many ttls; renew lag and round trips are measured", async (t) => {
  const key = freshKey();
  const ttlMs = 400;
  const a = new RedisLease(await client(), key, { ttlMs, safetyMarginMs: 50 });
  const b = new RedisLease(await client(), key, { ttlMs, safetyMarginMs: 50 });
  const g = await a.tryAcquire();
  assert.ok(g);
  const keeper = new LeaseKeeper(a, g).start();
  assert.equal(keeper.intervalMs, 100);
  const lost: LeaseLostReason[] = [];
  keeper.onLost((r) => lost.push(r));
  const until = performance.now() + 5 * ttlMs;
  while (performance.now() < until) {
    assert.equal(await b.tryAcquire(), null, "b must not get a kept lease");
    assert.ok(keeper.isValid(), "keeper's lease stays valid");
    await sleep(60);
  }
  const s = keeper.stats();
  t.diagnostic(`renewals=${s.renewals} failures=${s.failures} lag last/max=${s.renewLagMsLast.toFixed(2)}/${s.renewLagMsMax.toFixed(2)} ms rtt last/max=${s.renewRttMsLast.toFixed(2)}/${s.renewRttMsMax.toFixed(2)} ms`);
  assert.ok(s.renewals >= 15, `renewals ${s.renewals}`);
  assert.equal(s.failures, 0);
  assert.ok(s.renewRttMsMax < 300, `round trip bounded by the command timeout: ${s.renewRttMsMax}`);
  assert.deepEqual(lost, []);
  await keeper.stop({ release: true });
  assert.equal(keeper.isValid(), false, "released");
  const gb = await b.tryAcquire();
  assert.ok(gb, "released on stop");
  assert.ok(gb.fencingEpoch > g.fencingEpoch);
  await b.release(gb);
});

test("lease - a holder that stops renewing loses it after the ttl and another acquires", async () => {
  const key = freshKey();
  const ttlMs = 300;
  const a = new RedisLease(await client(), key, { ttlMs, safetyMarginMs: 50 });
  const b = new RedisLease(await client(), key, { ttlMs, safetyMarginMs: 50 });
  const ga = await a.tryAcquire();
  assert.ok(ga);
  assert.equal(ga.acquiredAtMono + ttlMs - 50, a.validUntil(), "deadline = request start + ttl - margin");
  assert.equal(await b.tryAcquire(), null);
  let gb: LeaseGrant | null = null;
  const t0 = performance.now();
  while (!gb && performance.now() - t0 < 2000) {
    gb = await b.tryAcquire();
    if (!gb) await sleep(10);
  }
  assert.ok(gb, "b acquires after a's ttl");
  const waited = performance.now() - t0;
  assert.ok(waited >= ttlMs - 50, `b waited ${waited} ms, at least about a ttl`);
  assert.ok(a.validUntil() < performance.now(), "a's own deadline had passed before b could acquire");
  assert.ok(a.validUntil() <= gb.acquiredAtMono, "a's deadline ends before b's grant started");
  assert.ok(gb.fencingEpoch > ga.fencingEpoch);
  await b.release(gb);
});

test("lease - compare-and-renew refuses a stale token (A paused past the ttl, B took over)", async () => {
  const key = freshKey();
  const ttlMs = 300;
  const ca = await client();
  const a = new RedisLease(ca, key, { ttlMs, safetyMarginMs: 50 });
  const b = new RedisLease(await client(), key, { ttlMs: 5000, safetyMarginMs: 50 });
  const ga = await a.tryAcquire();
  assert.ok(ga);
  await sleep(ttlMs + 100); // A "paused"
  const gb = await b.tryAcquire();
  assert.ok(gb);
  assert.equal(await a.renew(ga), false, "A's renew must fail: B holds the key");
  assert.ok(a.validUntil() < performance.now(), "A's deadline is in the past");
  assert.equal(await ca.get(key), gb.token, "A's renew left B's key alone");
  const pttl = await ca.pttl(key);
  assert.ok(pttl > 3000, `B's ttl was not shortened to A's: ${pttl}`);
  // A's release does not remove B's lease either.
  await a.release(ga);
  assert.equal(await ca.get(key), gb.token);
  await b.release(gb);
});

test("lease - keeper: an event-loop pause past the ttl is measured as renew lag and reported as a loss", async () => {
  const key = freshKey();
  const ttlMs = 300;
  const a = new RedisLease(await client(), key, { ttlMs, safetyMarginMs: 50 });
  const b = new RedisLease(await client(), key, { ttlMs: 5000, safetyMarginMs: 50 });
  const ga = await a.tryAcquire();
  assert.ok(ga);
  const keeper = new LeaseKeeper(a, ga, { intervalMs: 60 }).start();
  const lost = new Promise<LeaseLostReason>((resolve) => keeper.onLost(resolve));
  await sleep(200);
  assert.ok(keeper.isValid());
  // Freeze right after a renewal completed, so that no request is in flight and the next renewal's timer is the
  // first thing to run after the pause (otherwise the deadline watchdog may report the loss before any renewal
  // starts late, and there is no lag to measure).
  const n = keeper.stats().renewals;
  while (keeper.stats().renewals === n) await sleep(1);
  freeze(ttlMs + 200); // like a GC pause or SIGSTOP: timers cannot fire, Redis expires the key
  assert.equal(keeper.isValid(), false, "the monotonic deadline has passed, whatever Redis says");
  const reason = await lost;
  assert.ok(reason === "renew-failed" || reason === "deadline-passed", reason);
  const s = keeper.stats();
  assert.ok(s.renewLagMsMax >= ttlMs, `renew lag ${s.renewLagMsMax} should show the ${ttlMs + 200} ms pause`);
  const gb = await b.tryAcquire();
  assert.ok(gb, "the key expired during the pause");
  assert.ok(gb.fencingEpoch > ga.fencingEpoch);
  assert.equal(await a.renew(ga), false);
  await keeper.stop();
  await b.release(gb);
});

test("lease - release deletes only its own token", async () => {
  const key = freshKey();
  const c = await client();
  const a = new RedisLease(c, key, { ttlMs: 5000, safetyMarginMs: 50 });
  const b = new RedisLease(await client(), key, { ttlMs: 5000, safetyMarginMs: 50 });
  const ga = await a.tryAcquire();
  assert.ok(ga);
  // A forged or stale grant releases nothing.
  await b.release({ token: "someone-else", fencingEpoch: ga.fencingEpoch, acquiredAtMono: 0 });
  assert.equal(await c.get(key), ga.token);
  assert.ok(a.validUntil() > performance.now(), "b's release does not touch a's deadline");
  await a.release(ga);
  assert.equal(await c.get(key), null);
  const gb = await b.tryAcquire();
  assert.ok(gb);
  // A second, late release by A (e.g. a retry) must not remove B's lease.
  await a.release(ga);
  assert.equal(await c.get(key), gb.token);
  await b.release(gb);
  assert.equal(await c.get(key), null);
});

test("lease - Redis restart: the epoch counter restarts (the caller takes max with the snapshot chain), the lease can be re-acquired", async () => {
  const r = await startRedis();
  try {
    const key = freshKey();
    const c = await client(r.url);
    const a = new RedisLease(c, key, { ttlMs: 5000, safetyMarginMs: 50 });
    let last: LeaseGrant | null = null;
    for (let i = 0; i < 3; i++) {
      if (last) await a.release(last);
      last = await a.tryAcquire();
      assert.ok(last);
    }
    assert.equal(last!.fencingEpoch, 3);
    await r.stop();
    // While Redis is down: no grant, no renewal.
    assert.equal(await a.tryAcquire(), null);
    assert.equal(await a.renew(last!), false);
    const r2 = await startRedis({ port: r.port });
    try {
      let g: LeaseGrant | null = null;
      const t0 = performance.now();
      while (!g && performance.now() - t0 < 10_000) {
        g = await a.tryAcquire();
        if (!g) await sleep(50);
      }
      assert.ok(g, `re-acquired after the restart (last error: ${a.lastError()?.message})`);
      // Documented hazard: a Redis without persistence hands out epoch 1 again. Fencing must therefore use
      // max(INCR, latest snapshot's natslake.epoch + 1); the snapshot chain, not Redis, carries the epoch forward.
      assert.equal(g.fencingEpoch, 1);
      assert.equal(await a.renew(last!), false, "the pre-restart grant is gone");
      assert.equal(await a.renew(g), true);
      await a.release(g);
    } finally {
      await r2.stop();
    }
  } finally {
    await r.stop();
  }
});

test("lease - Redis down or hung: renew reports false within the command timeout, never hangs", async (t) => {
  const r = await startRedis();
  try {
    const key = freshKey();
    const commandTimeoutMs = 250;
    const leaseClient = await client(r.url, commandTimeoutMs);
    // A plain client without commandTimeout or any tuning: the lease bounds its own calls.
    const plain = new Redis(r.url);
    plain.on("error", () => undefined); // reconnect noise after the server is stopped
    clients.push(plain);
    await plain.ping();
    const a = new RedisLease(leaseClient, key, { ttlMs: 5000, safetyMarginMs: 50, commandTimeoutMs });
    const p = new RedisLease(plain, `${key}:plain`, { ttlMs: 5000, safetyMarginMs: 50, commandTimeoutMs });
    const ga = await a.tryAcquire();
    const gp = await p.tryAcquire();
    assert.ok(ga && gp);

    // Hung: the process is stopped, the TCP connection stays open, nothing answers.
    process.kill(r.pid, "SIGSTOP");
    try {
      for (const [name, lease, grant] of [["lease client", a, ga], ["plain client", p, gp]] as const) {
        const { value, tookMs, timerMs } = await timed(commandTimeoutMs, () => lease.renew(grant));
        assert.equal(value, false, `${name}: renew while Redis hangs`);
        t.diagnostic(`${name}: renew against a stopped redis returned false after ${tookMs.toFixed(0)} ms (a ${commandTimeoutMs} ms timer took ${timerMs.toFixed(0)} ms)`);
        assert.ok(tookMs >= commandTimeoutMs - 20, `${name}: answered by the timeout, not by Redis: ${tookMs} ms`);
        assert.ok(tookMs < Math.max(timerMs, commandTimeoutMs) + 100, `${name}: took ${tookMs} ms (timer ${timerMs} ms)`);
        assert.equal(lease.validUntil(), Number.NEGATIVE_INFINITY, `${name}: unknown renew voids the deadline`);
        assert.match(lease.lastError()?.message ?? "", /timed out|no reply/);
      }
      const acq = await timed(commandTimeoutMs, () => a.tryAcquire());
      assert.equal(acq.value, null);
      assert.ok(acq.tookMs < Math.max(acq.timerMs, commandTimeoutMs) + 100, `acquire took ${acq.tookMs} ms`);
    } finally {
      process.kill(r.pid, "SIGCONT");
    }

    // Down: the process is gone.
    await r.stop();
    const gone = await timed(commandTimeoutMs, () => a.renew(ga));
    assert.equal(gone.value, false);
    t.diagnostic(`renew against a stopped-and-gone redis returned false after ${gone.tookMs.toFixed(0)} ms`);
    assert.ok(gone.tookMs < Math.max(gone.timerMs, commandTimeoutMs) + 100, `took ${gone.tookMs} ms`);
  } finally {
    await r.stop();
  }
});

test("lease - Redis failures name Redis: 'redis at <url>: <reason>' when connecting, in lastError() and to the reporter", async () => {
  const port = await freePort();
  await assert.rejects(connectLeaseRedis(`redis://127.0.0.1:${port}`, { commandTimeoutMs: 200 }), (e: Error) => e.message === `redis at redis://127.0.0.1:${port}: cannot connect: connect ECONNREFUSED 127.0.0.1:${port}`);
  const r = await startRedis();
  const reports: string[] = [];
  const reconnectErrors: string[] = [];
  const c = await connectLeaseRedis(r.url, { commandTimeoutMs: 200, onError: (e) => reconnectErrors.push(e.message) });
  clients.push(c);
  const lease = new RedisLease(c, freshKey(), { ttlMs: 2000, safetyMarginMs: 50, commandTimeoutMs: 200, reporter: new RedisErrorReporter((e, ok) => reports.push(`${ok}:${e.message}`)) });
  const g = await lease.tryAcquire();
  assert.ok(g);
  await r.stop();
  assert.equal(await lease.renew(g), false);
  assert.equal(await lease.tryAcquire(), null);
  const where = `redis at ${r.url.replace(/\/$/, "")}: `;
  assert.ok(lease.lastError()?.message.startsWith(where), lease.lastError()?.message);
  assert.ok(reports.length >= 1 && reports.every((m) => m.startsWith(`false:${where}lease `)), reports.join("\n"));
  await waitUntil(() => reconnectErrors.length > 0, 5000);
  assert.ok(reconnectErrors.every((m) => m.startsWith(where)), reconnectErrors.join("\n"));
});

async function waitUntil(cond: () => boolean, ms: number): Promise<void> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > ms) throw new Error(`not within ${ms} ms`);
    await sleep(50);
  }
}
