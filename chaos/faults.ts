/**
 * Process faults: the steps scenarios are made of and the nemeses of the seeded soak. Every wait is bounded.
 *
 * - `writerFailpointFault`: a writer node restarted (SIGTERM drain) with one failpoint armed `@N`, so it kills itself
 *   mid-run at that point of a flush; then restarted clean.
 * - `committerFailpointFault`: the standby committer restarted with one commit failpoint armed `@N`; the leader is
 *   drained (SIGTERM releases its lease) so the armed node leads and kills itself at its N-th pass of the point; the
 *   drained node, restarted clean, takes over after the lease TTL.
 * - nemeses (chaos/types.ts `NemesisFactory`, built with chaos/nemesis `makeNemesis`): writer / leader SIGKILL (the
 *   process is restarted 1–3 s later, sometimes with a failpoint armed), leader SIGSTOP past its lease, writer SIGSTOP
 *   until its buckets move, Redis restarted, Redis down for 10 s, a NATS node SIGKILLed and restarted.
 */
import { makeNemesis } from "./nemesis/index.ts";
import type { FaultRecord, Nemesis, NemesisContext, NemesisFactory, ScenarioContext, TopologyHandle } from "./types.ts";

export const WRITER_FAILPOINTS = ["bucket-buffer.append", "bucket-buffer.flush", "io.write.mid", "writer.parquet.encoded", "writer.file.written", "writer.after-committable"] as const;
export const COMMIT_FAILPOINTS = ["commit.after-manifests", "commit.after-manifest-lists", "commit.before-snapshot", "commit.after-snapshot", "committer.after-snapshot"] as const;

/** What each failpoint interrupts (for reports and the README). */
export const FAILPOINT_MEANING: Record<string, string> = {
  "bucket-buffer.append": "in the bucket-buffer worker, decoding fetched rows into the bucket's columns",
  "bucket-buffer.flush": "in the bucket-buffer worker, about to encode a flush's Parquet file",
  "io.write.mid": "in the middle of writing a Parquet file's bytes",
  "writer.parquet.encoded": "Parquet encoded, before the file is written",
  "writer.file.written": "after the data file, before the committable",
  "writer.after-committable": "after the committable is in the commit stream, before the writer records it",
  "expire.after-data-file": "snapshot expiration, after deleting one data file the expired snapshots alone read (before their manifests and snapshot files)",
  "expire.after-snapshot": "snapshot expiration, after deleting one expired snapshot file (data files and manifests already gone)",
  "expire.before-snapshots": "snapshot expiration, after the expired snapshots' files, before their snapshot files",
  "orphans.after-delete": "orphan-file cleanup, after deleting one orphan file",
  "compact.rewrite.after-output": "a compaction mid-rewrite (a writer's, or the leader's maintenance job): an output file written, nothing sent or committed",
  "compact.after-rewrite": "the leader's compaction job with every output written, before its COMPACT commit",
  "writer.compaction-before-send": "a writer's compaction rewritten, before its change is in the commit stream",
  "committer.after-compact-snapshot": "the writers' COMPACT snapshot linked, before the commit stream is purged",
  "commit.after-manifests": "after the manifests, before the manifest lists",
  "commit.after-manifest-lists": "after the manifest lists, before the snapshot",
  "commit.before-snapshot": "right before snapshot-N is linked",
  "commit.after-snapshot": "after snapshot-N is linked, before the LATEST hint",
  "committer.after-snapshot": "after the snapshot, before rejections, the notification and the purges",
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value or `timeoutMs` passes (then null). */
export async function waitUntil<T>(check: () => Promise<T | null | undefined> | T | null | undefined, timeoutMs: number, everyMs = 200): Promise<T | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const v = await check();
      if (v !== null && v !== undefined) return v;
    } catch {
      // a transient failure (NATS node restarting): try again
    }
    if (Date.now() > deadline) return null;
    await sleep(everyMs);
  }
}

/** Stops a node gracefully (SIGTERM drains it; SIGKILL after 30 s) and waits for its exit. */
export async function stopGracefully(t: TopologyHandle, id: string): Promise<void> {
  if (!t.isRunning(id)) return;
  t.signalNode(id, "SIGTERM");
  if ((await t.waitExit(id, 30_000)) === null && t.isRunning(id)) {
    t.signalNode(id, "SIGKILL");
    await t.waitExit(id, 10_000);
  }
}

const armed = (point: string, nth: number): Record<string, string> => ({ FAILPOINTS: `${point}:kill@${nth}` });

async function waitMember(t: TopologyHandle, id: string): Promise<boolean> {
  // A started node is a member once the coordinator counts it: waitBalanced covers writers; committers only need to be up.
  return (await waitUntil(() => (t.isRunning(id) ? true : null), 5000)) === true;
}

/** Where an armed failpoint fires: at its N-th pass, N drawn in [lo, hi] (default: the fault's own range). */
export interface ArmOptions {
  nth?: [lo: number, hi: number];
}

/** A writer killed by an armed failpoint mid-flush, restarted clean 1 s later. */
export async function writerFailpointFault(ctx: ScenarioContext, point: string, o: ArmOptions = {}): Promise<FaultRecord> {
  const t = ctx.topology;
  const owners = [...new Set((await t.bucketOwners()).values())].filter((id) => t.isRunning(id)).sort();
  const victim = ctx.rng.pick(owners.length > 0 ? owners : t.nodeIds("writer"));
  const nth = ctx.rng.int(...(o.nth ?? [3, 8]));
  ctx.log(`arming ${point}:kill@${nth} on ${victim}`);
  await stopGracefully(t, victim);
  t.startNode(victim, { env: armed(point, nth) });
  const exit = await t.waitExit(victim, 60_000);
  const name = `writer SIGKILL at ${point}`;
  if (exit === null || exit.failpoint !== point) {
    const rec = ctx.record({ name, target: `node:${victim}`, injectedAt: exit?.at ?? Date.now(), fired: false, detail: { point, nth, why: exit === null ? "not reached within 60 s" : `exited otherwise (code ${exit.code}, signal ${exit.signal})` } });
    await stopGracefully(t, victim);
    t.startNode(victim);
    return rec;
  }
  const rec = ctx.record({ name, target: `node:${victim}`, injectedAt: exit.at, recoveryFrom: "injected", detail: { point, nth, pid: exit.pid, meaning: FAILPOINT_MEANING[point] } });
  await ctx.sleep(1000);
  t.startNode(victim);
  rec.healedAt = Date.now();
  await t.waitBalanced(30_000);
  return rec;
}

export interface LeaderArmOptions extends ArmOptions {
  /**
   * Runs once the armed node leads (before it reaches the point, unless that came first); what it returns goes into
   * the fault's detail. E.g. a scenario plants what the armed leader's next maintenance run works through.
   */
  whenArmedLeads?: (armed: string) => Promise<Record<string, unknown>>;
  /** Runs right after the armed leader died at its point (the fault's detail gets what it returns). */
  afterKill?: () => Promise<Record<string, unknown>>;
}

/** The leader killed by an armed commit failpoint; the other committer takes over; the victim is restarted clean. */
export async function committerFailpointFault(ctx: ScenarioContext, point: string, o: LeaderArmOptions = {}): Promise<FaultRecord> {
  const t = ctx.topology;
  const leader = await waitUntil(() => t.leader(), 30_000);
  if (leader === null) throw new Error("no leader within 30 s");
  const standby = t.nodeIds("committer").find((id) => id !== leader);
  if (!standby) throw new Error("the topology has a single committer; committer failpoints need two");
  const nth = ctx.rng.int(...(o.nth ?? [3, 10]));
  ctx.log(`arming ${point}:kill@${nth} on ${standby}, then handing leadership over from ${leader}`);
  await stopGracefully(t, standby);
  t.startNode(standby, { env: armed(point, nth) });
  await waitMember(t, standby);
  // Give the armed node time to boot and contend; then drain the leader: it releases its lease on the way out.
  await waitUntil(async () => ((await t.leader()) === leader && t.isRunning(standby) ? true : null), 10_000);
  await ctx.sleep(2500);
  await stopGracefully(t, leader);
  // The armed node leads (or already died at its point, possibly before its heartbeat said it leads): bring the old
  // leader back as the standby that must take over.
  const took = await waitUntil(async () => ((await t.leader()) === standby ? true : !t.isRunning(standby) ? false : null), 20_000, 100);
  t.startNode(leader);
  const name = `leader SIGKILL at ${point}`;
  const planted = took === true && o.whenArmedLeads !== undefined ? await o.whenArmedLeads(standby) : {};
  const exit = await t.waitExit(standby, 60_000);
  if (exit === null || exit.failpoint !== point) {
    const rec = ctx.record({
      name,
      target: `node:${standby}`,
      injectedAt: exit?.at ?? Date.now(),
      fired: false,
      detail: { point, nth, becameLeader: took !== null, ...planted, why: exit === null ? "not reached within 60 s" : `exited otherwise (code ${exit.code}, signal ${exit.signal})` },
    });
    await stopGracefully(t, standby);
    t.startNode(standby);
    return rec;
  }
  const after = o.afterKill !== undefined ? await o.afterKill() : {};
  const rec = ctx.record({ name, target: `node:${standby}`, injectedAt: exit.at, recoveryFrom: "injected", detail: { point, nth, pid: exit.pid, meaning: FAILPOINT_MEANING[point], ...planted, ...after } });
  await ctx.sleep(1000);
  t.startNode(standby);
  rec.healedAt = Date.now();
  await waitUntil(() => t.leader(), 30_000);
  return rec;
}

// ---------------------------------------------------------------------------------------------------------------
// Nemeses (one injection each)

const crash = (n: Nemesis): Nemesis => ({
  name: n.name,
  inject: async () => ({ ...(await n.inject()), recoveryFrom: "injected" }),
  heal: (r) => n.heal(r),
});

/**
 * SIGKILL node `id`, and on heal restart it 1–3 s later with one of `points` armed (`@3`–`@12`) 40 % of the time — a
 * node coming back may crash again at a failpoint, as a flaky host would make it.
 */
function killAndRestart(ctx: NemesisContext, name: string, id: string, points: readonly string[]): Nemesis {
  const t = ctx.topology;
  return crash(
    makeNemesis(name, { kind: "node", id }, {
      inject: async () => {
        const pid = t.nodePid(id);
        t.signalNode(id, "SIGKILL");
        await t.waitExit(id, 10_000);
        return { pid };
      },
      heal: async () => {
        await sleep(ctx.rng.int(1000, 3000));
        const arm = ctx.rng.next() < 0.4 ? { point: ctx.rng.pick(points), nth: ctx.rng.int(3, 12) } : null;
        if (!t.isRunning(id)) t.startNode(id, arm ? { env: armed(arm.point, arm.nth) } : {});
        return arm ? { restartedArmed: `${arm.point}@${arm.nth}` } : {};
      },
    }),
  );
}

/** SIGKILL a running writer; restart it 1–3 s later, with a random writer failpoint armed 40 % of the time. */
export const writerKill: NemesisFactory = (ctx) => {
  const t = ctx.topology;
  const running = t.nodeIds("writer").filter((id) => t.isRunning(id));
  if (running.length < 2) return null;
  return killAndRestart(ctx, "writer SIGKILL", ctx.rng.pick(running), WRITER_FAILPOINTS);
};

/** SIGKILL the leader; restart it 1–3 s later (a standby now), with a commit failpoint armed 40 % of the time. */
export const leaderKill: NemesisFactory = async (ctx) => {
  const t = ctx.topology;
  const id = await t.leader();
  if (id === null || t.nodeIds("committer").filter((x) => t.isRunning(x)).length < 2) return null;
  return killAndRestart(ctx, "leader SIGKILL", id, COMMIT_FAILPOINTS);
};

/** SIGSTOP the leader until another node leads (past its lease), 1 s more, then SIGCONT: it must step down. */
export const leaderPause: NemesisFactory = async (ctx) => {
  const t = ctx.topology;
  const id = await t.leader();
  if (id === null || t.nodeIds("committer").filter((x) => t.isRunning(x)).length < 2) return null;
  return crash(
    makeNemesis(
      "leader SIGSTOP",
      { kind: "node", id },
      {
        inject: async () => {
          t.signalNode(id, "SIGSTOP");
          const next = await waitUntil(async () => {
            const l = await t.leader();
            return l !== null && l !== id ? l : null;
          }, 20_000);
          await sleep(1000);
          return { newLeader: next };
        },
        heal: async () => {
          if (t.isRunning(id)) t.signalNode(id, "SIGCONT");
          await Promise.resolve();
        },
      },
      40_000,
    ),
  );
};

/** SIGSTOP a writer until its buckets moved to others (its late committables must be rejected), then SIGCONT. */
export const writerPause: NemesisFactory = async (ctx) => {
  const t = ctx.topology;
  const owners = await t.bucketOwners();
  const running = [...new Set(owners.values())].filter((id) => t.isRunning(id)).sort();
  if (running.length < 2) return null;
  const id = ctx.rng.pick(running);
  return crash(
    makeNemesis(
      "writer SIGSTOP",
      { kind: "node", id },
      {
        inject: async () => {
          t.signalNode(id, "SIGSTOP");
          const moved = await waitUntil(async () => ([...(await t.bucketOwners()).values()].every((n) => n !== id) ? true : null), 20_000);
          return { bucketsMoved: moved === true };
        },
        heal: async () => {
          if (t.isRunning(id)) t.signalNode(id, "SIGCONT");
          await Promise.resolve();
        },
      },
      40_000,
    ),
  );
};

/** redis-server stopped and started again on the same port at once (its lease keys and fencing counter are gone). */
export const redisRestart: NemesisFactory = (ctx) =>
  healed(
    makeNemesis("redis restart", { kind: "redis" }, {
      inject: async () => {
        const pid = ctx.topology.redisPid();
        await ctx.topology.stopRedis(false);
        return { pid };
      },
      heal: async () => {
        await ctx.topology.startRedis();
        return { pid: ctx.topology.redisPid() };
      },
    }),
  );

/** redis-server down for 10 s (stopped, then started on the same port): leaders self-fence, nothing commits meanwhile. */
export const redisOutage = (downMs = 10_000): NemesisFactory => (ctx) =>
  healed(
    makeNemesis("redis down 10 s", { kind: "redis" }, {
      inject: async () => {
        const pid = ctx.topology.redisPid();
        await ctx.topology.stopRedis(false);
        return { pid, downMs };
      },
      heal: async (r) => {
        await sleep(Math.max(0, r.injectedAt + downMs - Date.now()));
        await ctx.topology.startRedis();
        return { pid: ctx.topology.redisPid() };
      },
    }),
  );

const healed = (n: Nemesis): Nemesis => ({
  name: n.name,
  inject: async () => ({ ...(await n.inject()), recoveryFrom: "healed" }),
  heal: (r) => n.heal(r),
});

/**
 * SIGKILL one nats-server — not the subscriber's; the one hosting most of natslake's consumers (readers of the
 * ingest and commit streams, R1 ephemerals that die with it), else the ingest stream's leader — and restart it with
 * its store after `downMs` (default 3–6 s). R3 streams keep working on two nodes; natslake must recover while the
 * node is still down (give `downMs` above the recovery budget to check that).
 */
export const natsNodeKill = (downMs?: number): NemesisFactory => async (ctx) => {
  const t = ctx.topology;
  const candidates = t.natsUrls.map((_, i) => i).filter((i) => i !== t.subscriberNats && t.natsPid(i) !== undefined);
  if (candidates.length === 0) return null;
  const streamLeader = await t.ingestStreamLeader().catch(() => -1);
  const hosts = await t.consumerHosts().catch(() => [] as number[]);
  const busiest = [...candidates].sort((a, b) => (hosts[b] ?? 0) - (hosts[a] ?? 0))[0]!;
  const index = (hosts[busiest] ?? 0) > 0 ? busiest : candidates.includes(streamLeader) ? streamLeader : ctx.rng.pick(candidates);
  const down = downMs ?? ctx.rng.int(3000, 6000);
  return crash(
    makeNemesis(
      "nats node SIGKILL",
      { kind: "nats", index },
      {
        inject: async () => {
          const pid = t.natsPid(index);
          await t.killNats(index);
          return { pid, node: `n${index + 1}`, wasStreamLeader: index === streamLeader, consumersHosted: hosts[index] ?? 0, downMs: down };
        },
        heal: async (r) => {
          await sleep(Math.max(0, r.injectedAt + down - Date.now()));
          await t.restartNats(index);
        },
      },
      down + 90_000,
    ),
  );
};

/** The built-in nemeses of the soak, with their relative weights. */
export const soakNemeses: Array<{ name: string; weight: number; make: NemesisFactory }> = [
  { name: "writer-kill", weight: 3, make: writerKill },
  { name: "leader-kill", weight: 2, make: leaderKill },
  { name: "leader-pause", weight: 1, make: leaderPause },
  { name: "writer-pause", weight: 1, make: writerPause },
  { name: "redis-restart", weight: 1, make: redisRestart },
  { name: "redis-outage", weight: 1, make: redisOutage() },
  { name: "nats-kill", weight: 1, make: natsNodeKill() },
];

/** Picks a nemesis by weight. */
export function pickWeighted<T extends { weight: number }>(ctx: Pick<NemesisContext, "rng">, items: readonly T[]): T {
  const total = items.reduce((n, x) => n + x.weight, 0);
  let r = ctx.rng.next() * total;
  for (const x of items) {
    r -= x.weight;
    if (r < 0) return x;
  }
  return items[items.length - 1]!;
}

/** Makes one nemesis, injects it, records the fault and heals it; null when the nemesis cannot run now. */
export async function applyNemesis(ctx: ScenarioContext, make: NemesisFactory): Promise<FaultRecord | null> {
  const n = await make({ topology: ctx.topology, rng: ctx.rng, log: ctx.log });
  if (n === null) return null;
  const rec = ctx.record(await n.inject());
  await n.heal(rec);
  ctx.topology.event(`healed: ${rec.name} on ${rec.target}`);
  return rec;
}

/**
 * Watches for node processes that died on their own — at a failpoint armed by a nemesis' restart, or unexpectedly
 * (a product crash: the report's `processes` invariant names it) — records the failpoint deaths as faults and
 * restarts every such node clean after 1 s. Runs until `stop()`; polls every 250 ms.
 */
export function superviseNodes(ctx: ScenarioContext): { stop(): Promise<void> } {
  const t = ctx.topology;
  // Exits before the supervision started (start-up, scenario steps) are not its business.
  const seen = new Set<number>(t.exits.map((e) => e.pid));
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const e of t.exits) {
        if (seen.has(e.pid) || e.requested) continue;
        seen.add(e.pid);
        const role = t.nodeIds("writer").includes(e.id) ? "writer" : t.nodeIds("committer").includes(e.id) ? "committer" : "reader";
        if (e.failpoint !== undefined) {
          ctx.record({ name: `${role} SIGKILL at ${e.failpoint}`, target: `node:${e.id}`, injectedAt: e.at, recoveryFrom: "injected", detail: { point: e.failpoint, pid: e.pid, meaning: FAILPOINT_MEANING[e.failpoint] } });
        } else ctx.log(`node ${e.id} (pid ${e.pid}) exited by itself (code ${e.code}, signal ${e.signal}); restarting it`);
        await sleep(1000);
        if (!stopped && !t.isRunning(e.id)) t.startNode(e.id);
      }
      await sleep(250);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
