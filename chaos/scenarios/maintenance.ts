/**
 * Maintenance under load, with the kills landing in the middle of it. The table keeps few snapshots (at most 20, each
 * kept 1 s), so the leader expires snapshots after every commit; writers plan a compaction of their buckets every
 * 500 ms and compact from 4 small files on (`compaction.min.file-num`), so COMPACT snapshots land every few seconds
 * and expiration deletes the files they replaced; the leader looks for orphan files every 3 s (older than 30 s: above
 * any write → commit time here, the recovery budget being 12.25 s, so in-flight files are never touched).
 *
 * The faults, one after the other (overlapping them would blur I5: a leadership handed over for the next fault
 * holds up the recovery from the previous one):
 * - a writer SIGKILLed mid-rewrite (`compact.rewrite.after-output`: an output on disk, nothing sent) and one after
 *   its rewrite, before sending the change (`writer.compaction-before-send`);
 * - the leader (armed on the standby, leadership handed over — as committer-failpoints does) killed right after a
 *   COMPACT snapshot (`committer.after-compact-snapshot`: its successor must count the change a duplicate, not delete
 *   live files), mid-expiration while deleting data files (`expire.after-data-file`) and at one of the later points
 *   (`expire.before-snapshots` / `expire.after-snapshot`, by seed), and mid orphan-file cleanup
 *   (`orphans.after-delete` at the 2nd–4th file: 8 aged orphans are planted as soon as the armed node leads).
 * `maintenance-ci` (the CI subset, which must stay short) injects two of them, each point by seed: a writer
 * compaction kill, then a leader kill after a COMPACT snapshot, mid-expiration or mid orphan cleanup.
 *
 * Expected, besides I1–I7 (I3 reads every file every snapshot on disk reads, so nothing retained points at a missing
 * file) and the verifier's `compaction` invariant (COMPACT snapshots landed, at most 10 live files per bucket at the
 * end): after each expiration kill the next leader's run removes the snapshots the killed one left reading deleted
 * files; after the orphan kill the next leader's cleanup deletes the planted orphans the killed run left; old
 * snapshots really expired.
 */
import { committerFailpointFault, waitUntil, writerFailpointFault } from "../faults.ts";
import { plantOrphans, snapshotsMissingFiles, stillThere } from "../table-state.ts";
import type { Scenario, ScenarioContext, TopologyOverrides } from "../types.ts";
import { TABLE } from "../topology.ts";

const PLANTED_ORPHANS = 8;
/**
 * How long the next leader may take to finish a killed job: lease TTL, takeover, one more run (1 s / 3 s apart) —
 * seconds on a quiet machine; the bound leaves room for a loaded one (a takeover there took up to 30 s).
 */
const FINISH_WITHIN_MS = 60_000;

/** The leader killed at an expiration point; then the next leader's expiration must remove what the kill left. */
async function killMidExpiration(ctx: ScenarioContext, point: string): Promise<void> {
  const t = ctx.topology;
  let atKill: { ids: number[]; broken: Array<{ id: number; missing: string }> } = { ids: [], broken: [] };
  const rec = await committerFailpointFault(ctx, point, {
    nth: EXPIRE_NTH[point] ?? [3, 10],
    afterKill: async () => {
      atKill = await snapshotsMissingFiles(t.warehouse, TABLE);
      const first = atKill.ids[0];
      return { snapshotsOnDiskAtKill: first === undefined ? "none" : `${first}..${atKill.ids[atKill.ids.length - 1]}`, readingDeletedFilesAtKill: atKill.broken.map((b) => b.id) };
    },
  });
  if (rec.fired === false) return;
  const newestBroken = Math.max(0, ...atKill.broken.map((b) => b.id));
  const done = await waitUntil(async () => {
    const now = await snapshotsMissingFiles(t.warehouse, TABLE);
    return now.broken.length === 0 && (now.ids[0] ?? 0) > newestBroken ? now : null;
  }, FINISH_WITHIN_MS, 500);
  const last = done ?? (await snapshotsMissingFiles(t.warehouse, TABLE).catch(() => null));
  ctx.expect(
    `the next expiration finished the one killed at ${point}`,
    done !== null,
    `at the kill ${atKill.broken.length} snapshots on disk read deleted files (${atKill.broken.map((b) => `${b.id}: ${b.missing}`).slice(0, 3).join("; ") || "none"}); ` +
      (done !== null
        ? `within ${FINISH_WITHIN_MS / 1000} s every snapshot on disk (${done.ids[0]}..${done.ids[done.ids.length - 1]}) reads whole`
        : `after ${FINISH_WITHIN_MS / 1000} s: ${last === null ? "unreadable" : `${last.broken.length} broken (${last.broken.map((b) => `${b.id}: ${b.missing}`).slice(0, 3).join("; ")}), snapshots from ${last.ids[0]}`}`),
  );
}

/** The leader killed mid orphan-file cleanup (orphans planted once the armed node leads); the next run finishes it. */
async function killMidOrphanCleanup(ctx: ScenarioContext): Promise<void> {
  const t = ctx.topology;
  let planted: string[] = [];
  let leftAtKill: string[] = [];
  const rec = await committerFailpointFault(ctx, "orphans.after-delete", {
    nth: [2, 4],
    whenArmedLeads: async () => {
      planted = await plantOrphans(t.warehouse, TABLE, PLANTED_ORPHANS, 3_600_000);
      ctx.log(`planted ${planted.length} orphan files aged 1 h for the armed leader's cleanup`);
      return { orphansPlanted: planted.length };
    },
    afterKill: async () => {
      leftAtKill = stillThere(planted);
      return { plantedLeftAtKill: leftAtKill.length };
    },
  });
  if (rec.fired === false) return;
  if (planted.length === 0) {
    ctx.log("no orphans were planted (the armed node died before it was seen leading); the cleanup killed worked on the run's own orphans");
    return;
  }
  const gone = await waitUntil(() => (stillThere(planted).length === 0 ? true : null), FINISH_WITHIN_MS, 500);
  ctx.expect(
    "the next orphan cleanup finished the killed one",
    gone === true,
    `${planted.length} aged orphans planted, ${planted.length - leftAtKill.length} deleted before the kill, ${leftAtKill.length} left; ` +
      (gone === true ? `all gone within ${FINISH_WITHIN_MS / 1000} s` : `${stillThere(planted).length} still there after ${FINISH_WITHIN_MS / 1000} s`),
  );
}

/** Where each expiration point is passed often enough for a kill at the N-th pass to land mid-run. */
const EXPIRE_NTH: Record<string, [number, number]> = {
  "expire.after-data-file": [3, 10], // once per data file deleted
  "expire.before-snapshots": [1, 3], // once per run (a run a second at most)
  "expire.after-snapshot": [3, 10], // once per snapshot file deleted
};

const topology: TopologyOverrides = {
  env: { NATSLAKE_COMPACTION_INTERVAL: "500ms" },
  tableOptions: {
    "snapshot.num-retained.min": "5",
    "snapshot.num-retained.max": "20",
    "snapshot.time-retained": "1 s",
    "natslake.orphan-older-than": "30 s",
    "natslake.orphan-check-interval": "3 s",
    "compaction.min.file-num": "4",
  },
};

/**
 * Old snapshots expired and the chain is back within the retention bound (20, plus what lands within the second
 * between runs). Not at once: through a leadership change no expiration runs, and a new leader's first job may be a
 * long orphan scan (under 5–10 commits a second, 50 snapshots piled up across the last handover in one run).
 */
async function oldSnapshotsExpired(ctx: ScenarioContext): Promise<void> {
  const within = (ids: number[]): boolean => (ids[0] ?? 1) > 1 && ids.length <= 40;
  const start = Date.now();
  const ok = await waitUntil(async () => {
    const { ids } = await snapshotsMissingFiles(ctx.topology.warehouse, TABLE);
    return within(ids) ? ids : null;
  }, FINISH_WITHIN_MS, 500);
  const ids = ok ?? (await snapshotsMissingFiles(ctx.topology.warehouse, TABLE)).ids;
  ctx.expect("old snapshots expired", ok !== null, `${ids.length} snapshots on disk, ${ids[0]}..${ids[ids.length - 1]}${ok !== null ? ` (within the bound after ${((Date.now() - start) / 1000).toFixed(1)} s)` : ` after ${FINISH_WITHIN_MS / 1000} s`}`);
}

export const scenarios: Scenario[] = [
  {
    name: "maintenance",
    description: "writers compact and the leader expires snapshots and removes orphans under load; writers killed mid-compaction (twice), the leader after a COMPACT snapshot, mid-expiration (twice) and mid orphan cleanup",
    defaultDurationMs: 60_000,
    topology,
    expectCompaction: { maxLiveFilesPerBucket: 10 },
    async run(ctx) {
      await ctx.sleep(3000);
      await committerFailpointFault(ctx, "committer.after-compact-snapshot", { nth: [2, 5] });
      await writerFailpointFault(ctx, "compact.rewrite.after-output", { nth: [1, 3] });
      await killMidExpiration(ctx, "expire.after-data-file");
      await writerFailpointFault(ctx, "writer.compaction-before-send", { nth: [1, 3] });
      await killMidExpiration(ctx, ctx.rng.pick(["expire.before-snapshots", "expire.after-snapshot"]));
      await killMidOrphanCleanup(ctx);
      await oldSnapshotsExpired(ctx);
    },
  },
  {
    name: "maintenance-ci",
    description: "the maintenance scenario's CI form: a writer killed mid-compaction, then the leader after a COMPACT snapshot, mid-expiration or mid orphan cleanup (points by seed)",
    ci: true,
    suite: false,
    defaultDurationMs: 30_000,
    topology,
    expectCompaction: { maxLiveFilesPerBucket: 10 },
    async run(ctx) {
      await ctx.sleep(3000);
      await writerFailpointFault(ctx, ctx.rng.pick(["compact.rewrite.after-output", "writer.compaction-before-send"]), { nth: [1, 3] });
      const point = ctx.rng.pick(["committer.after-compact-snapshot", ...Object.keys(EXPIRE_NTH), "orphans.after-delete"]);
      if (point === "committer.after-compact-snapshot") await committerFailpointFault(ctx, point, { nth: [2, 5] });
      else if (point === "orphans.after-delete") await killMidOrphanCleanup(ctx);
      else await killMidExpiration(ctx, point);
      await oldSnapshotsExpired(ctx);
    },
  },
];
