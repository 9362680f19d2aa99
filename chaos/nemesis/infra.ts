/**
 * The infrastructure nemeses of the seeded soak (chaos/scenarios/soak.ts picks up `infraNemeses`): only those that
 * can be injected into a running topology as the soak starts it — the production topology, nothing preloaded, the
 * warehouse on the ordinary disk:
 *
 * - `nats-slow-fsync`: strace attached to a random live nats-server, every fsync 100 ms, for 6 s (recovery counted
 *   from the heal: while the disk is slow, JetStream's throughput is the disk's);
 * - `leader-slow-fsync`: strace attached to the leading committer, every fsync 300 ms, for 6 s (recovery counted from
 *   the injection: commits must keep landing);
 * - `writer-partition`: a writer restarted (drained) behind a fresh loopback TCP proxy, blackholed for 8 s (past the
 *   member timeout: its buckets move), healed, then restarted clean (drained again) and the proxy closed.
 *
 * Not in the soak, because they need the topology set up before its first start (see their scenarios): the warehouse
 * on a tmpfs (disk-full), the LD_PRELOAD slow-fsync shim and libfaketime (clock-skew) in a node's environment.
 */
import type { FaultRecord, Nemesis, NemesisContext, NemesisFactory, TopologyHandle } from "../types.ts";
import { slowFsyncAttached } from "./nemeses.ts";
import { sleep, withTimeout } from "./run.ts";
import { TcpProxy } from "./tcp-proxy.ts";

const recoveryFrom = (n: Nemesis, from: "injected" | "healed"): Nemesis => ({
  name: n.name,
  inject: async () => ({ ...(await n.inject()), recoveryFrom: from }),
  heal: (r) => n.heal(r),
});

/** Heals no earlier than `holdMs` after the injection. */
const held = (n: Nemesis, holdMs: number): Nemesis => ({
  name: n.name,
  inject: () => n.inject(),
  heal: async (r) => {
    await sleep(Math.max(0, r.injectedAt + holdMs - Date.now()));
    await n.heal(r);
  },
});

export const natsSlowFsync: NemesisFactory = (ctx) => {
  const t = ctx.topology;
  const live = t.natsUrls.map((_, i) => i).filter((i) => t.natsPid(i) !== undefined);
  if (live.length === 0) return null;
  const index = ctx.rng.pick(live);
  const pid = (): number => {
    const p = t.natsPid(index);
    if (p === undefined) throw new Error(`nats-server n${index + 1} is not running`);
    return p;
  };
  return recoveryFrom(held(slowFsyncAttached(pid, 100, { kind: "nats", index }), 6000), "healed");
};

export const leaderSlowFsync: NemesisFactory = async (ctx) => {
  const t = ctx.topology;
  const id = await t.leader();
  const pid = id === null ? undefined : t.nodePid(id);
  if (id === null || pid === undefined) return null;
  return recoveryFrom(held(slowFsyncAttached(pid, 300, { kind: "node", id }), 6000), "injected");
};

async function stopGracefully(t: TopologyHandle, id: string): Promise<void> {
  if (!t.isRunning(id)) return;
  t.signalNode(id, "SIGTERM");
  if ((await t.waitExit(id, 30_000)) === null && t.isRunning(id)) {
    t.signalNode(id, "SIGKILL");
    await t.waitExit(id, 10_000);
  }
}

async function ownsBucket(t: TopologyHandle, id: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ([...(await t.bucketOwners().catch(() => new Map<number, string>())).values()].includes(id)) return true;
    await sleep(200);
  }
  return false;
}

/** A writer behind its own TCP proxy, blackholed for `cutMs`; see the module comment. */
export const writerPartition =
  (cutMs = 8000): NemesisFactory =>
  async (ctx: NemesisContext) => {
    const t = ctx.topology;
    const owners = [...new Set((await t.bucketOwners()).values())].filter((id) => t.isRunning(id)).sort();
    if (owners.length < 2) return null;
    const id = ctx.rng.pick(owners);
    const server = ctx.rng.pick(t.natsUrls.map((_, i) => i).filter((i) => t.natsPid(i) !== undefined));
    const port = Number(new URL(t.natsUrls[server]!.replace(/^nats:/, "http:")).port);
    let proxy: TcpProxy | null = null;
    const name = "partition-blackhole";
    return {
      name,
      async inject(): Promise<FaultRecord> {
        return withTimeout(
          (async () => {
            proxy = await TcpProxy.start({ targetPort: port });
            ctx.log(`${name}: restarting ${id} behind ${proxy.url} (→ n${server + 1})`);
            await stopGracefully(t, id);
            t.startNode(id, { nats: proxy.url });
            const owns = await ownsBucket(t, id, 20_000);
            const connections = proxy.cut("blackhole");
            return { name, target: `node:${id}`, injectedAt: Date.now(), recoveryFrom: "injected" as const, detail: { mode: "blackhole", cutMs, nats: `n${server + 1}`, connections, ownedBucketsAtCut: owns } };
          })(),
          90_000,
          `${name} inject on node:${id}`,
        );
      },
      async heal(r: FaultRecord): Promise<void> {
        await withTimeout(
          (async () => {
            // A timer may fire a millisecond early by the wall clock: wait until the cut has really lasted cutMs.
            const until = r.injectedAt + cutMs;
            while (Date.now() < until) await sleep(until - Date.now());
            const p = proxy;
            p?.heal();
            r.healedAt = Date.now();
            const back = await ownsBucket(t, id, 20_000);
            r.detail = { ...r.detail, ownsBucketsAgainAfterHeal: back, statsAtHeal: p?.stats() };
            // Back to the ordinary topology: restarted clean (drained), the proxy closed.
            await stopGracefully(t, id);
            if (!t.isRunning(id)) t.startNode(id);
            proxy = null;
            await p?.close();
          })(),
          cutMs + 90_000,
          `${name} heal on node:${id}`,
        );
      },
    };
  };

/** Picked up by the soak (chaos/scenarios/soak.ts) next to the built-in nemeses of chaos/faults.ts. */
export const infraNemeses: Array<{ name: string; weight: number; make: NemesisFactory }> = [
  { name: "nats-slow-fsync", weight: 1, make: natsSlowFsync },
  { name: "leader-slow-fsync", weight: 1, make: leaderSlowFsync },
  { name: "writer-partition", weight: 1, make: writerPartition() },
];
