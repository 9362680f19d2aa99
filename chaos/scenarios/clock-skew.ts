/**
 * Clock skew on one node at a time (libfaketime, chaos/nemesis/clock-skew.ts): the committers c1, c2 and the writer
 * w1 are started with libfaketime preloaded and a control file each (offset 0); then
 *
 * 1. the leader's wall clock jumps 40 s ahead for 10 s, then back;
 * 2. the leader's wall clock falls 40 s behind for 10 s, then back;
 * 3. w1's wall clock falls 30 s behind for 8 s, then back.
 *
 * Only the wall clock moves (`Date.now()`); the monotonic clock — timers, lease deadlines — is untouched, as with a
 * real NTP step or a wrong RTC. Redis and nats-server keep the real clock (libfaketime breaks redis-server 7.0 and
 * does not reach Go's vDSO clock reads). Expected: nothing in the cluster depends on two nodes' wall clocks agreeing
 * — nothing acknowledged lost or doubled, no healthy node treated as dead, recovery within the budget counted from
 * each skew's injection. The verifier times snapshots by their files' mtimes (the kernel's clock), so a skewed
 * leader's `timeMillis` does not distort the recovery figures.
 */
import { ClockSkewUnavailable, clockSkew, createClockSkew, requireLibfaketime, type ClockSkew } from "../nemesis/index.ts";
import { waitUntil } from "../faults.ts";
import type { FaultRecord, Scenario, ScenarioContext } from "../types.ts";

const skews = new Map<string, ClockSkew>();

async function ownersNow(ctx: ScenarioContext): Promise<string> {
  const m = await ctx.topology.bucketOwners();
  return [...m.entries()].sort((a, b) => a[0] - b[0]).map(([b, n]) => `${b}:${n}`).join(" ");
}

/**
 * Skews node `id`'s wall clock by `offsetMs` for `holdMs`, then heals. Expected: no bucket changes hands meanwhile
 * (nobody mistakes a healthy node for a dead one because their wall clocks disagree).
 */
async function skewFor(ctx: ScenarioContext, id: string, offsetMs: number, holdMs: number): Promise<FaultRecord> {
  const s = skews.get(id);
  if (!s) throw new Error(`clock-skew: node ${id} was not started with libfaketime`);
  const t = ctx.topology;
  const leaderBefore = await t.leader().catch(() => null);
  const before = await ownersNow(ctx).catch(() => "?");
  const n = clockSkew(s, offsetMs, { kind: "node", id });
  const rec = ctx.record({ ...(await n.inject()), recoveryFrom: "injected" });
  const changes = new Set<string>();
  while (Date.now() < rec.injectedAt + holdMs) {
    const now = await ownersNow(ctx).catch(() => before);
    if (now !== before) changes.add(now);
    await ctx.sleep(250);
  }
  const leaderDuring = await t.leader().catch(() => null);
  await n.heal(rec);
  rec.detail = { ...rec.detail, leaderBefore, leaderAtEnd: leaderDuring, ownersBefore: before, ownersSeenMeanwhile: [...changes], running: t.isRunning(id) };
  const what = `${id} ${offsetMs > 0 ? "+" : "−"}${Math.abs(offsetMs) / 1000} s`;
  ctx.expect("no bucket moved while a clock was skewed", changes.size === 0, changes.size === 0 ? `${what}: owners stayed ${before}` : `${what}: owners went from ${before} to ${[...changes].join(" / ")}`);
  ctx.expect("the skewed node kept running", t.isRunning(id), `${what}: ${t.isRunning(id) ? "running" : "not running"}`);
  return rec;
}

export const scenarios: Scenario[] = [
  {
    name: "clock-skew",
    description: "libfaketime: the leader's wall clock +40 s, then −40 s (10 s each), then a writer's −30 s (8 s)",
    defaultDurationMs: 55_000,
    async setup() {
      try {
        requireLibfaketime();
      } catch (e) {
        if (e instanceof ClockSkewUnavailable) return { skip: e.message };
        throw e;
      }
      const env: Record<string, Record<string, string>> = {};
      for (const id of ["c1", "c2", "w1"]) {
        const s = await createClockSkew();
        skews.set(id, s);
        env[id] = s.env;
      }
      return {
        topology: { nodeEnv: env },
        cleanup: async () => {
          const all = [...skews.values()];
          skews.clear();
          for (const s of all) await s.close();
        },
      };
    },
    async run(ctx) {
      await ctx.sleep(4000);
      const leader = (await waitUntil(() => ctx.topology.leader(), 10_000)) ?? "c1";
      await skewFor(ctx, leader, 40_000, 10_000);
      await ctx.sleep(3000);
      const leader2 = (await waitUntil(() => ctx.topology.leader(), 10_000)) ?? leader;
      await skewFor(ctx, leader2, -40_000, 10_000);
      await ctx.sleep(3000);
      await skewFor(ctx, "w1", -30_000, 8000);
      await ctx.sleep(2000);
    },
  },
];
