/**
 * The warehouse disk fills up during load. The warehouse lives on a small tmpfs of its own (chaos/nemesis/disk-full.ts
 * `mountSmallDisk`, 256 MiB; root and mount(2) are needed — without them the run is reported as skipped, with the
 * reason). 5 s into the load a filler file takes every free byte for 8 s, then it is deleted.
 *
 * While the disk is full writers cannot write Parquet files and the leader cannot write manifests or snapshots (both
 * get ENOSPC). Expected: those writes fail cleanly and are retried — no process dies, no half-written snapshot,
 * manifest or data file is ever referenced (I3 reads every referenced file back) —, nothing is committed while the
 * disk is full, and after space is freed everything acknowledged lands exactly once, within the recovery budget
 * counted from the moment space was freed. The fault's detail counts the ENOSPC errors the nodes logged.
 *
 * Note: with --keep the run directory is kept but the warehouse is gone (the tmpfs is unmounted after the verifier).
 */
import { join } from "node:path";
import { diskFull, DiskMountUnavailable, mountSmallDisk, type SmallDisk } from "../nemesis/index.ts";
import type { FaultRecord, Scenario } from "../types.ts";

const SIZE = 256 << 20;
const FULL_MS = 8000;

let disk: SmallDisk | null = null;

const enospcIn = (log: string): number => (log.match(/ENOSPC/g) ?? []).length;

export const scenarios: Scenario[] = [
  {
    name: "disk-full",
    description: "the warehouse's tmpfs filled to the last byte for 8 s during load, then freed",
    defaultDurationMs: 30_000,
    async setup(run) {
      try {
        disk = await mountSmallDisk({ dir: join(run.dir, "disk"), sizeBytes: SIZE });
      } catch (e) {
        if (e instanceof DiskMountUnavailable) return { skip: e.message };
        throw e;
      }
      run.log(`warehouse on a ${disk.kind} of ${SIZE >> 20} MiB at ${disk.dir}`);
      const d = disk;
      return {
        topology: { warehouse: join(d.dir, "warehouse") },
        cleanup: async () => {
          disk = null;
          await d.unmount();
        },
      };
    },
    async run(ctx) {
      const d = disk;
      if (d === null) throw new Error("disk-full: the small disk is not mounted (setup did not run)");
      const t = ctx.topology;
      await ctx.sleep(5000);
      const before = new Map(t.nodeIds().map((id) => [id, enospcIn(t.nodeLog(id))]));
      const freeBefore = await d.freeBytes();
      const n = diskFull(d, "warehouse");
      const rec: FaultRecord = ctx.record({ ...(await n.inject()), recoveryFrom: "healed" });
      await ctx.sleep(Math.max(0, rec.injectedAt + FULL_MS - Date.now()));
      await n.heal(rec);
      await ctx.sleep(3000);
      const enospc: Record<string, number> = {};
      for (const id of t.nodeIds()) {
        const k = enospcIn(t.nodeLog(id)) - (before.get(id) ?? 0);
        if (k > 0) enospc[id] = k;
      }
      rec.detail = { ...rec.detail, freeBytesBeforeFill: freeBefore, enospcLogged: enospc, allNodesRunning: t.nodeIds().every((id) => t.isRunning(id)) };
    },
  },
];
