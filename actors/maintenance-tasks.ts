/**
 * The leader's scheduled maintenance tasks (run by MaintenanceActor), each a thin schedule over its library function
 * in src/maintenance/. Built per table (`maintenanceTasks`), since snapshot expiration remembers what it last saw.
 */
import type { Attributes, Meter, ObservableGauge } from "@opentelemetry/api";
import { METRICS, type MetricDef, type MetricLabels } from "./metrics.ts";
import { expirePartitions, partitionExpirationEnabled } from "../src/maintenance/expire-partitions.ts";
import { expireSnapshots, type ExpireResult } from "../src/maintenance/expire-snapshots.ts";
import { compactionRules, isSmallFile } from "../src/maintenance/compact.ts";
import { removeOrphans } from "../src/maintenance/remove-orphans.ts";
import { consumerLag } from "../src/table/consumers.ts";
import { ManifestStore, sharedManifestCache } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";

/** One kind of maintenance the leader's MaintenanceActor runs per table on its schedule (actors/maintenance.ts). */
export interface MaintenanceTask {
  /** A short name for logs and metrics (`expire-partitions`, `remove-orphans`). */
  name: string;
  /** Milliseconds between runs for this table, or null when the table's options turn the task off. */
  intervalMs(table: Table): number | null;
  /** Runs it once; resolves with counts to log and to add to `natslake_maintenance_removed_total{task,kind}`. */
  run(table: Table): Promise<Record<string, number>>;
  /** Runs too often to log each run (its metrics say what it did). */
  quiet?: boolean;
  /**
   * Due as soon as a snapshot lands (the committer tells the actor), not only every `intervalMs`: snapshot
   * expiration, which Paimon runs in the commit itself — on a timer, a table committing 14 times a second would
   * hold up to an interval's worth of snapshots over its bound.
   */
  runOnCommit?: boolean;
  /**
   * With runOnCommit: a run after a commit starts at least this long after the previous one started (default 0).
   * A table committing 15 times a second then pays a run's fixed cost (reading the retained snapshot's manifest
   * lists) a few times a second instead of at every commit, and each run removes several snapshots.
   */
  onCommitGapMs?: number;
}

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
 * are protected by age alone: they are seconds old, far below `natslake.orphan-older-than` (1 d) — once the leader
 * has decided what an earlier leadership left in the commit stream, which MaintenanceActor waits for (ORPHAN_TASKS).
 */
export const removeOrphansTask: MaintenanceTask = {
  name: "remove-orphans",
  intervalMs: (t) => Math.max(1000, t.options.duration("natslake.orphan-check-interval")),
  run: async (t) => {
    const r = await removeOrphans(t);
    return { "orphan-files": r.totalFiles, "orphan-bytes": r.totalBytes };
  },
};

/**
 * The leader expires snapshots after commits (runOnCommit) and, besides, this often: a run stopped by
 * `snapshot.expire.limit` or by a consumer's protection goes on without waiting for the next commit.
 */
export const EXPIRE_EVERY_MS = 1000;

/**
 * A run after a commit starts at least this long after the previous one. A run costs ~10 ms of the leader's CPU
 * whatever it removes (measured: 2 ms to find the range, most of the rest reading the retained snapshot's manifest
 * lists); at 15 commits a second, one per commit took ~15% of a core from the commit path. Every 250 ms, a snapshot
 * outlives the retention bound by at most that long.
 */
export const EXPIRE_ON_COMMIT_GAP_MS = 250;

/** Counts what snapshot expiration removed — scheduled or asked for — under the metric names the committer used. */
export function expirationCounters(meter: Meter): (table: string, r: ExpireResult) => void {
  const expired = METRICS.snapshotsExpired.create(meter);
  const filesRemoved = METRICS.filesRemoved.create(meter);
  return (table, r) => {
    if (r.dryRun || r.snapshotsDeleted === 0) return;
    expired.add(r.snapshotsDeleted, { table });
    filesRemoved.add(r.dataFilesDeleted, { table, kind: "data" });
    if (r.changelogFilesDeleted > 0) filesRemoved.add(r.changelogFilesDeleted, { table, kind: "changelog" });
    filesRemoved.add(r.manifestsDeleted, { table, kind: "manifest" });
  };
}

/**
 * Snapshot expiration by the table's retention options, after commits as Paimon does it (at most every
 * EXPIRE_ON_COMMIT_GAP_MS; commits that land while it runs or waits make one more run), and every EXPIRE_EVERY_MS
 * when a snapshot landed since its last run or that run stopped at `snapshot.expire.limit` with more to go (an idle
 * table is left as its last commit left it, as in Paimon, which expires on commit). The runs share one manifest
 * cache: a run's retained snapshot is a later run's expired one. It deletes only
 * snapshots older than the one commits build on and files no snapshot from the oldest retained one on references,
 * so it never races the commit path. `write-only = true` turns it off, as in Paimon.
 */
export function expireSnapshotsTask(record: (table: string, r: ExpireResult) => void): MaintenanceTask {
  let seenLatest: number | null = null;
  let moreToGo = false;
  let store: ManifestStore | null = null;
  return {
    name: "expire-snapshots",
    quiet: true, // several runs a second under load: the metrics say what it did
    runOnCommit: true,
    onCommitGapMs: EXPIRE_ON_COMMIT_GAP_MS,
    intervalMs: (t: Table) => (t.options.bool("write-only") ? null : EXPIRE_EVERY_MS),
    run: async (t): Promise<Record<string, number>> => {
      const latest = await t.snapshots.latestId();
      if (latest === seenLatest && !moreToGo) return {};
      seenLatest = latest;
      if (store === null || store.table !== t) store = new ManifestStore(t, sharedManifestCache(t));
      const r = await expireSnapshots(t, { store });
      record(t.name, r);
      // A full run (the limit reached) may leave more: go on next time without waiting for a commit.
      moreToGo = r.snapshotsDeleted > 0 && r.snapshotsDeleted >= t.options.int("snapshot.expire.limit");
      return { snapshots: r.snapshotsDeleted, "data-files": r.dataFilesDeleted, ...(r.changelogFilesDeleted > 0 ? { "changelog-files": r.changelogFilesDeleted } : {}), manifests: r.manifestsDeleted };
    },
  };
}

/** How often the leader measures its table's consumers' lag, and its size. */
export const CONSUMER_LAG_EVERY_MS = 5000;
export const TABLE_STATS_EVERY_MS = 10_000;

type TableLabels = MetricLabels<"table", never>;
type BucketLabels = MetricLabels<"table" | "bucket", never>;
type ConsumerLabels = MetricLabels<"table" | "consumer", never>;

/**
 * Gauge values a task measures now and then, by attributes: reported until not measured again within `staleMs`
 * (the leadership moved to another node, the consumer was deleted), so an ex-leader stops exporting old values.
 */
class Measured<A extends Attributes> {
  private readonly values = new Map<string, { attrs: A; value: number; at: number }>();
  constructor(
    private readonly staleMs: number,
    private readonly now: () => number,
  ) {}
  set(attrs: A, value: number): void {
    this.values.set(JSON.stringify(attrs), { attrs, value, at: this.now() });
  }
  /** Reports the values as `gauge` (registered here, once per meter: see `once`). */
  observeAs(meter: Meter, gauge: MetricDef<ObservableGauge<A>>): void {
    gauge.create(meter).addCallback((r) => {
      const t = this.now();
      for (const [k, v] of this.values) {
        if (t - v.at > this.staleMs) this.values.delete(k);
        else r.observe(v.value, v.attrs);
      }
    });
  }
}

/** Gauges are registered once per meter (a node), however many tables and leaderships come and go. */
const registered = new WeakMap<Meter, Map<string, unknown>>();
function once<T>(meter: Meter, key: string, make: () => T): T {
  let m = registered.get(meter);
  if (m === undefined) registered.set(meter, (m = new Map()));
  if (!m.has(key)) m.set(key, make());
  return m.get(key) as T;
}

/**
 * The lag of every consumer of the table (Paimon consumer files, whoever writes them: `natslake tail`, TableStream,
 * reader nodes' consume sessions, Flink or Java readers with a `consumer-id`): snapshots and seconds behind the latest
 * snapshot, as `natslake_consumer_lag_snapshots` and `natslake_consumer_lag_seconds` {table, consumer}.
 */
export function consumerLagTask(meter: Meter, now: () => number = Date.now): MaintenanceTask {
  const { snapshots, seconds } = once(meter, "consumer-lag", () => {
    const g = { snapshots: new Measured<ConsumerLabels>(3 * CONSUMER_LAG_EVERY_MS, now), seconds: new Measured<ConsumerLabels>(3 * CONSUMER_LAG_EVERY_MS, now) };
    g.snapshots.observeAs(meter, METRICS.consumerLagSnapshots);
    g.seconds.observeAs(meter, METRICS.consumerLagSeconds);
    return g;
  });
  return {
    name: "consumer-lag",
    quiet: true,
    intervalMs: () => CONSUMER_LAG_EVERY_MS,
    run: async (t) => {
      const lags = await consumerLag(t, now());
      for (const l of lags) {
        snapshots.set({ table: t.name, consumer: l.id }, l.snapshotsBehind);
        seconds.set({ table: t.name, consumer: l.id }, l.secondsBehind);
      }
      return { consumers: lags.length };
    },
  };
}

/**
 * The table's size as its latest snapshot says: `natslake_table_live_files` (the operators' P1 alert at 5,000),
 * `natslake_table_live_bytes` and `natslake_table_snapshots` (files in `snapshot/`), by table; and the compaction
 * backlog, `natslake_compaction_backlog_files` {table, bucket}: live files compaction would take as inputs (below
 * `target-file-size` × `compaction.small-file-ratio`). A few per bucket is the steady state of small commits (a run
 * is compacted once it reaches `compaction.min.file-num`); a number that keeps growing means compaction is behind.
 */
export function tableStatsTask(meter: Meter, now: () => number = Date.now): MaintenanceTask {
  const { files, bytes, snapshots, backlog } = once(meter, "table-stats", () => {
    const stale = 3 * TABLE_STATS_EVERY_MS;
    const g = { files: new Measured<TableLabels>(stale, now), bytes: new Measured<TableLabels>(stale, now), snapshots: new Measured<TableLabels>(stale, now), backlog: new Measured<BucketLabels>(stale, now) };
    g.files.observeAs(meter, METRICS.tableLiveFiles);
    g.bytes.observeAs(meter, METRICS.tableLiveBytes);
    g.snapshots.observeAs(meter, METRICS.tableSnapshots);
    g.backlog.observeAs(meter, METRICS.compactionBacklog);
    return g;
  });
  // Manifests never change once written: one store per table keeps them cached between runs.
  const stores = new Map<string, ManifestStore>();
  return {
    name: "table-stats",
    quiet: true,
    intervalMs: () => TABLE_STATS_EVERY_MS,
    run: async (t) => {
      const latest = await t.snapshots.latest();
      let store = stores.get(t.name);
      if (store === undefined || store.table !== t) stores.set(t.name, (store = new ManifestStore(t, sharedManifestCache(t))));
      const live = latest === null ? [] : await store.readLiveEntries(latest);
      const attrs = { table: t.name };
      files.set(attrs, live.length);
      bytes.set(attrs, live.reduce((n, e) => n + e.file.fileSize, 0));
      // Ids run without a gap from the earliest to the latest (expiration removes the oldest first, rollback the
      // newest): counted from the two, not by listing snapshot/ every 10 s.
      const earliest = latest === null ? null : await t.snapshots.earliestId();
      snapshots.set(attrs, latest === null || earliest === null ? 0 : latest.id - earliest + 1);
      // Every bucket of a fixed-bucket table is reported (0 included), so a bucket that drains shows as 0.
      const rules = compactionRules(t);
      const small = new Map<number, number>();
      for (let b = 0; b < t.bucket; b++) small.set(b, 0);
      for (const e of live) if (isSmallFile(e.file, rules)) small.set(e.bucket, (small.get(e.bucket) ?? 0) + 1);
      for (const [bucket, n] of small) backlog.set({ table: t.name, bucket: String(bucket) }, n);
      return { files: live.length };
    },
  };
}

/** Every task the leader schedules for one table. */
export function maintenanceTasks(meter: Meter): readonly MaintenanceTask[] {
  return [expirePartitionsTask, removeOrphansTask, expireSnapshotsTask(expirationCounters(meter)), consumerLagTask(meter), tableStatsTask(meter)];
}
