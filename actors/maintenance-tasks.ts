/**
 * The leader's scheduled maintenance tasks (run by MaintenanceActor), each a thin schedule over its library function
 * in src/maintenance/. Built per table (`maintenanceTasks`), since snapshot expiration remembers what it last saw.
 */
import type { Meter } from "@opentelemetry/api";
import { expirePartitions, partitionExpirationEnabled } from "../src/maintenance/expire-partitions.ts";
import { expireSnapshots, type ExpireResult } from "../src/maintenance/expire-snapshots.ts";
import { removeOrphans } from "../src/maintenance/remove-orphans.ts";
import { consumerLag } from "../src/table/consumers.ts";
import type { Table } from "../src/table/table.ts";
import type { MaintenanceTask } from "./maintenance.ts";

/** Partition expiration every `partition.expiration-check-interval` (default 1 h) once `partition.expiration-time` is set. */
export const expirePartitionsTask: MaintenanceTask = {
  name: "expire-partitions",
  intervalMs: (t) => (partitionExpirationEnabled(t) ? Math.max(1000, t.options.duration("partition.expiration-check-interval")) : null),
  run: async (t) => {
    const r = await expirePartitions(t);
    return { partitions: r.partitions.length, files: r.files, rows: r.rows };
  },
};

/**
 * Orphan-file cleanup every `natslake.orphan-check-interval` (default 1 h). Files of committables still in flight
 * are protected by age alone: they are seconds old, far below `natslake.orphan-older-than` (1 d).
 */
export const removeOrphansTask: MaintenanceTask = {
  name: "remove-orphans",
  intervalMs: (t) => Math.max(1000, t.options.duration("natslake.orphan-check-interval")),
  run: async (t) => {
    const r = await removeOrphans(t);
    return { "orphan-files": r.totalFiles, "orphan-bytes": r.totalBytes };
  },
};

/** The leader expires snapshots at most this often (a run removes up to `snapshot.expire.limit`). */
export const EXPIRE_EVERY_MS = 1000;

/** Counts what snapshot expiration removed — scheduled or asked for — under the metric names the committer used. */
export function expirationCounters(meter: Meter): (table: string, r: ExpireResult) => void {
  const expired = meter.createCounter("natslake_snapshots_expired_total", { description: "snapshots removed by expiration" });
  const filesRemoved = meter.createCounter("natslake_files_removed_total", { description: "data files and manifests removed by maintenance" });
  return (table, r) => {
    if (r.dryRun || r.snapshotsDeleted === 0) return;
    expired.add(r.snapshotsDeleted, { table });
    filesRemoved.add(r.dataFilesDeleted, { table, kind: "data" });
    filesRemoved.add(r.manifestsDeleted, { table, kind: "manifest" });
  };
}

/**
 * Snapshot expiration by the table's retention options, at most once per EXPIRE_EVERY_MS, after commits: it runs
 * when a snapshot landed since its last run, or when that run stopped at `snapshot.expire.limit` with more to go
 * (an idle table is left as its last commit left it, as in Paimon, which expires on commit). It deletes only
 * snapshots older than the one commits build on and files no snapshot from the oldest retained one on references,
 * so it never races the commit path. `write-only = true` turns it off, as in Paimon.
 */
export function expireSnapshotsTask(record: (table: string, r: ExpireResult) => void): MaintenanceTask {
  let seenLatest: number | null = null;
  let moreToGo = false;
  return {
    name: "expire-snapshots",
    quiet: true, // several runs a second under load: the metrics say what it did
    intervalMs: (t: Table) => (t.options.bool("write-only") ? null : EXPIRE_EVERY_MS),
    run: async (t): Promise<Record<string, number>> => {
      const latest = await t.snapshots.latestId();
      if (latest === seenLatest && !moreToGo) return {};
      seenLatest = latest;
      const r = await expireSnapshots(t);
      record(t.name, r);
      // A full run (the limit reached) may leave more: go on next time without waiting for a commit.
      moreToGo = r.snapshotsDeleted > 0 && r.snapshotsDeleted >= t.options.int("snapshot.expire.limit");
      return { snapshots: r.snapshotsDeleted, "data-files": r.dataFilesDeleted, manifests: r.manifestsDeleted };
    },
  };
}

/** How often the leader measures its table's consumers' lag. */
export const CONSUMER_LAG_EVERY_MS = 5000;

/**
 * The lag of every consumer of the table (Paimon consumer files, whoever writes them: `natslake tail`, TableStream,
 * Flink or Java readers with a `consumer-id`): snapshots and seconds behind the latest snapshot, as the gauges
 * `natslake_consumer_lag_snapshots` and `natslake_consumer_lag_seconds` {table, consumer}. A value not measured
 * again within 3 runs (the leadership moved, the consumer was deleted) is no longer reported by this process.
 */
export function consumerLagTask(meter: Meter, now: () => number = Date.now): MaintenanceTask {
  const latest = new Map<string, { snapshots: number; seconds: number; at: number }>();
  const observe = (pick: "snapshots" | "seconds") => (r: { observe(v: number, a: Record<string, string>): void }) => {
    const t = now();
    for (const [k, v] of latest) {
      if (t - v.at > 3 * CONSUMER_LAG_EVERY_MS) latest.delete(k);
      else {
        const [table, consumer] = JSON.parse(k) as [string, string];
        r.observe(v[pick], { table, consumer });
      }
    }
  };
  meter.createObservableGauge("natslake_consumer_lag_snapshots", { description: "snapshots a consumer has not processed yet (latest + 1 − its nextSnapshot)" }).addCallback(observe("snapshots"));
  meter.createObservableGauge("natslake_consumer_lag_seconds", { description: "age of the oldest snapshot a consumer has not processed yet (0 when caught up)", unit: "s" }).addCallback(observe("seconds"));
  return {
    name: "consumer-lag",
    quiet: true,
    intervalMs: () => CONSUMER_LAG_EVERY_MS,
    run: async (t) => {
      const lags = await consumerLag(t, now());
      for (const l of lags) latest.set(JSON.stringify([t.name, l.id]), { snapshots: l.snapshotsBehind, seconds: l.secondsBehind, at: now() });
      return { consumers: lags.length };
    },
  };
}

/** Every task the leader schedules for one table. */
export function maintenanceTasks(meter: Meter): readonly MaintenanceTask[] {
  return [expirePartitionsTask, removeOrphansTask, expireSnapshotsTask(expirationCounters(meter)), consumerLagTask(meter)];
}
