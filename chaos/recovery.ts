/**
 * The verifier's recovery check (invariant I5), whatever the workload: for each fault, the time from its injection
 * (crashes, pauses, node loss) or healing (Redis down) until every bucket committed something the producer client
 * got acknowledged after that moment; when faults overlap, measured from the latest fault event before recovery
 * completed, and compared with the budget (lease TTL + commit interval + 10 s).
 */
import type { SnapshotNotification } from "../actors/wire/messages.ts";
import type { SnapInfo } from "./snapshot-chain.ts";
import type { FaultRecord, InvariantResult, RowOutcome } from "./types.ts";

/** One publish as the load saw it: rows of the producer client (`src` "client") or raw ones. */
export interface Publish {
  status: RowOutcome;
  src: string;
  /** The bucket subject (−1: the bare subject). */
  bucket: number;
  seq?: number;
  /** When it was handed to the client (epoch ms). */
  at: number;
}

const acked = (s: RowOutcome): boolean => s === "ok" || s === "duplicate";

/** When recovery is measured from: the injection for crashes, pauses and node loss, the healing otherwise. */
export function refTime(f: FaultRecord): number {
  return f.recoveryFrom === "healed" && f.healedAt !== undefined ? f.healedAt : f.injectedAt;
}

/**
 * Judges every fired fault of `faults` (setting its `recoveryMs` and `effectiveRecoveryMs`) against the publishes
 * and the snapshots: those on disk (`snaps`, `firstOnDisk` the earliest id) and, for snapshots the leader expired,
 * their notifications (offsets and link time).
 */
export function judgeRecovery(faults: FaultRecord[], publishes: Iterable<Publish>, snaps: readonly SnapInfo[], notifications: readonly SnapshotNotification[], firstOnDisk: number, budgetMs: number): InvariantResult {
  const all = [...publishes];
  const problems: string[] = [];
  // Events of the other faults (a crash's own restart does not restart its clock).
  const eventsOf = (f: FaultRecord): number[] => [f.injectedAt, ...(f.healedAt === undefined ? [] : [f.healedAt])];
  const buckets = [...new Set(all.filter((r) => r.bucket >= 0).map((r) => r.bucket))];
  const onDisk = new Set(snaps.map((x) => x.id));
  const recoverySnaps = [
    ...notifications
      .filter((n) => !onDisk.has(n.snapshotId) && n.snapshotId < firstOnDisk)
      .map((n) => ({ id: n.snapshotId, timeMillis: n.linkedAtMillis, epoch: n.epoch, offsets: new Map(Object.entries(n.offsets).map(([b, o]) => [Number(b), o])) })),
    ...snaps,
  ].sort((a, b) => a.id - b.id);
  for (const f of faults) {
    if (f.fired === false) continue;
    const ref = refTime(f);
    let end = 0;
    let measured = 0;
    for (const b of buckets) {
      let first: Publish | undefined;
      for (const r of all) {
        if (r.bucket !== b || r.src !== "client" || !acked(r.status) || r.seq === undefined || r.at < ref) continue;
        if (!first || r.at < first.at || (r.at === first.at && r.seq < first.seq!)) first = r;
      }
      if (!first) continue;
      const s = recoverySnaps.find((x) => (x.offsets.get(b) ?? 0) >= first.seq!);
      if (!s) continue;
      measured++;
      end = Math.max(end, s.timeMillis);
    }
    if (measured === 0 || measured < buckets.length) {
      problems.push(`${f.name} on ${f.target}: ${measured === 0 ? "no bucket" : `only ${measured} of ${buckets.length} buckets`} committed a row published after it`);
      continue;
    }
    f.recoveryMs = Math.max(0, Math.round(end - ref));
    const others = faults.filter((g) => g !== f && g.fired !== false).flatMap(eventsOf);
    const latestEvent = Math.max(ref, ...others.filter((t) => t >= ref && t <= end));
    f.effectiveRecoveryMs = Math.max(0, Math.round(end - latestEvent));
    if (f.effectiveRecoveryMs > budgetMs) problems.push(`${f.name} on ${f.target}: recovered after ${f.effectiveRecoveryMs} ms (budget ${budgetMs} ms)`);
  }
  const fired = faults.filter((f) => f.fired !== false);
  return {
    ok: problems.length === 0,
    detail:
      problems.length === 0
        ? fired.length === 0
          ? "no fault"
          : `every fault recovered within ${budgetMs} ms (max ${Math.max(...fired.map((f) => f.effectiveRecoveryMs ?? 0))} ms)`
        : problems.join("; "),
  };
}
