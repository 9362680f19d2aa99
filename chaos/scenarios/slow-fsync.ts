/**
 * Slow fsync, twice:
 *
 * 1. The committers' fsync (LD_PRELOAD shim, chaos/nemesis/slow-fsync/): both committer-capable nodes start with the
 *    shim and a control file; for 10 s every fsync/fdatasync of theirs takes 300 ms (manifests, the manifest
 *    directory, the snapshot's temp file — a commit needs several). Expected: commits get slower but keep landing,
 *    the lease is not lost (renewals do not wait for the disk), recovery is counted from the injection.
 * 2. One nats-server's fsync (strace attached to the Go process, `delay_enter` on fsync & co.): the ingest stream's
 *    leader, 100 ms per fsync for 8 s. With `sync_interval: always` every JetStream write syncs, so publishes slow
 *    down a lot and some time out (outcome "unknown", never a loss). Recovery is counted from the heal: while the
 *    NATS disk is slow, the cluster's throughput is the disk's.
 *
 * Expected throughout: nothing acknowledged lost or doubled, order kept, no process dies.
 * Needs gcc (the shim is built on first use) and strace with ptrace rights; otherwise the run is skipped and says why.
 */
import { createSlowFsyncControl, slowFsync, slowFsyncAttached, type SlowFsyncControl } from "../nemesis/index.ts";
import { waitUntil } from "../faults.ts";
import { run } from "../nemesis/run.ts";
import type { FaultRecord, Scenario } from "../types.ts";

const COMMITTER_MS = 300;
const COMMITTER_HOLD_MS = 10_000;
const NATS_MS = 100;
const NATS_HOLD_MS = 8000;

let control: SlowFsyncControl | null = null;

export const scenarios: Scenario[] = [
  {
    name: "slow-fsync",
    description: "the committers' fsync 300 ms for 10 s (LD_PRELOAD), then the ingest stream leader's fsync 100 ms for 8 s (strace)",
    defaultDurationMs: 40_000,
    async setup(r) {
      try {
        await run("strace", ["-V"], 10_000);
      } catch (e) {
        return { skip: `strace is not available (apt-get install strace): ${(e as Error).message}` };
      }
      try {
        control = await createSlowFsyncControl();
      } catch (e) {
        return { skip: (e as Error).message };
      }
      const c = control;
      r.log(`slow-fsync shim control file ${c.file}`);
      const env: Record<string, Record<string, string>> = {};
      // Every committer-capable node (c1, c2 with the default topology) gets the shim; only the delay changes.
      for (const id of ["c1", "c2"]) env[id] = c.env;
      return {
        topology: { nodeEnv: env },
        cleanup: async () => {
          control = null;
          await c.close();
        },
      };
    },
    async run(ctx) {
      const c = control;
      if (c === null) throw new Error("slow-fsync: no shim control (setup did not run)");
      const t = ctx.topology;
      await ctx.sleep(4000);
      const leader = await waitUntil(() => t.leader(), 10_000);

      const n1 = slowFsync(c, COMMITTER_MS, "committers");
      const rec1: FaultRecord = ctx.record({ ...(await n1.inject()), recoveryFrom: "injected" });
      rec1.detail = { ...rec1.detail, leader };
      await ctx.sleep(Math.max(0, rec1.injectedAt + COMMITTER_HOLD_MS - Date.now()));
      await n1.heal(rec1);
      rec1.detail = { ...rec1.detail, leaderAfter: await t.leader().catch(() => null) };
      await ctx.sleep(3000);

      let index = await t.ingestStreamLeader().catch(() => -1);
      if (index < 0 || t.natsPid(index) === undefined) index = t.natsUrls.findIndex((_, i) => t.natsPid(i) !== undefined);
      const n2 = slowFsyncAttached(() => {
        const pid = t.natsPid(index);
        if (pid === undefined) throw new Error(`nats-server n${index + 1} is not running`);
        return pid;
      }, NATS_MS, { kind: "nats", index });
      const rec2: FaultRecord = ctx.record({ ...(await n2.inject()), recoveryFrom: "healed" });
      await ctx.sleep(Math.max(0, rec2.injectedAt + NATS_HOLD_MS - Date.now()));
      await n2.heal(rec2);
    },
  },
];
