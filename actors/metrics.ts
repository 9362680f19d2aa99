/**
 * Every metric a node exports, declared once: its name, kind, unit, labels and meaning. Instruments are created only
 * from these declarations (`METRICS.<metric>.create(meter)`), so the reference page (docs/reference/metrics.md,
 * written by scripts/gen-reference.ts) lists what the code exports, and a test fails on an instrument created anywhere
 * else. The labels are part of the instrument's type: a data point that leaves out a declared label does not compile.
 *
 * Creating an instrument twice on one meter (a writer per bucket, a committer per table) gives the same instrument:
 * OpenTelemetry keys them by name, and the declaration keeps the description and unit of every creation equal.
 */
import type { Counter, Histogram, Meter, ObservableCounter, ObservableGauge } from "@opentelemetry/api";

export type MetricKind = "counter" | "histogram" | "observable-gauge" | "observable-counter";

/** The attributes of a data point: every label in `L`, any of the optional ones in `O`. */
export type MetricLabels<L extends string, O extends string> = { [K in L]: string | number } & { [K in O]?: string | number };

/** What the reference page shows of a metric. */
export interface MetricInfo {
  readonly name: string;
  readonly kind: MetricKind;
  readonly description: string;
  /** UCUM unit as OpenTelemetry takes it (`ms`, `s`, `By`); absent for counts. */
  readonly unit?: string;
  /** Labels every data point carries. */
  readonly labels: readonly string[];
  /** Labels only some data points carry. */
  readonly optionalLabels: readonly string[];
  /** A histogram's bucket boundaries, when they are not the SDK's default. */
  readonly buckets?: readonly number[];
}

interface Extra<O extends string> {
  unit?: string;
  optional?: readonly O[];
  buckets?: readonly number[];
}

export interface MetricDef<I> extends MetricInfo {
  create(meter: Meter): I;
}

function info<O extends string>(name: string, kind: MetricKind, description: string, labels: readonly string[], extra: Extra<O>): MetricInfo {
  return {
    name,
    kind,
    description,
    labels,
    optionalLabels: extra.optional ?? [],
    ...(extra.unit !== undefined ? { unit: extra.unit } : {}),
    ...(extra.buckets !== undefined ? { buckets: extra.buckets } : {}),
  };
}

function options(extra: Extra<string>, description: string): { description: string; unit?: string; advice?: { explicitBucketBoundaries: number[] } } {
  return {
    description,
    ...(extra.unit !== undefined ? { unit: extra.unit } : {}),
    ...(extra.buckets !== undefined ? { advice: { explicitBucketBoundaries: [...extra.buckets] } } : {}),
  };
}

function counter<L extends string = never, O extends string = never>(name: string, description: string, labels: readonly L[], extra: Extra<O> = {}): MetricDef<Counter<MetricLabels<L, O>>> {
  return { ...info(name, "counter", description, labels, extra), create: (meter) => meter.createCounter<MetricLabels<L, O>>(name, options(extra, description)) };
}

function histogram<L extends string = never, O extends string = never>(name: string, description: string, labels: readonly L[], extra: Extra<O> = {}): MetricDef<Histogram<MetricLabels<L, O>>> {
  return { ...info(name, "histogram", description, labels, extra), create: (meter) => meter.createHistogram<MetricLabels<L, O>>(name, options(extra, description)) };
}

function gauge<L extends string = never, O extends string = never>(name: string, description: string, labels: readonly L[], extra: Extra<O> = {}): MetricDef<ObservableGauge<MetricLabels<L, O>>> {
  return { ...info(name, "observable-gauge", description, labels, extra), create: (meter) => meter.createObservableGauge<MetricLabels<L, O>>(name, options(extra, description)) };
}

function observedCounter<L extends string = never, O extends string = never>(name: string, description: string, labels: readonly L[], extra: Extra<O> = {}): MetricDef<ObservableCounter<MetricLabels<L, O>>> {
  return { ...info(name, "observable-counter", description, labels, extra), create: (meter) => meter.createObservableCounter<MetricLabels<L, O>>(name, options(extra, description)) };
}

/**
 * Buckets of the reader's latency histograms (a delivery, and its stages): fine below 100 ms, where a consumer's
 * latency target lies (the default buckets jump from 50 to 75 to 100).
 */
const CONSUME_LATENCY_BUCKETS_MS = [1, 2, 5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 2000, 5000, 10_000, 30_000];

export const METRICS = {
  // The table's leader: commits.
  commits: counter("natslake_commits_total", "snapshots committed", ["table"]),
  commitDuration: histogram("natslake_commit_duration_ms", "commit round duration", ["table"], { unit: "ms" }),
  committablesRejected: counter("natslake_committables_rejected_total", "stale committables rejected (the series starts at 0 without a reason)", ["table"], { optional: ["reason"] }),
  leaderChanges: counter("natslake_leader_changes_total", "leadership gained", ["table"]),
  commitFailures: counter("natslake_commit_failures_total", "commit rounds that failed (an IO error, an unknown outcome; retried next interval) — the operators' P0 alert", ["table"]),
  commitBlocked: gauge(
    "natslake_commit_blocked",
    "1 while the table's leader refuses to commit because a file of the snapshot it must build on is damaged or missing, by reason (damaged-snapshot, missing-manifest, damaged-manifest-list, …); 0 for that reason once a round commits again (reason `none`: 0 from the start, never blocked) — `natslake doctor` names the file and what to do",
    ["table", "reason"],
  ),
  compactions: counter("natslake_compactions_total", "writers' compactions decided by the leader, by result (accepted, duplicate, rejected) and reason", ["table", "result"], { optional: ["reason"] }),
  publishToVisible: histogram("natslake_publish_to_visible_ms", "first row arrival at a writer → snapshot link", ["table"], { unit: "ms" }),
  streamMismatches: counter(
    "natslake_stream_mismatch_total",
    "refusals to read, commit or purge because the table's offsets belong to another ingest stream (see natslake table reset-offsets), by component (router, writer, committer)",
    ["table", "component"],
  ),
  deadLetters: counter("natslake_dlq_total", "rows (or unreadable messages) sent to the dead-letter subject, by stage (router, writer; the writer's carry the bucket)", ["table", "stage"], { optional: ["bucket"] }),
  poisonMessages: counter("natslake_poison_messages_total", "whole messages a bucket writer dead-lettered because reading them failed, or killed the writer, a bounded number of times (actors/poison-guard.ts)", ["table", "bucket"]),
  bucketStalls: counter(
    "natslake_bucket_stalls_total",
    "a bucket writer's decodes (stage decode) and encodes (stage encode) that ran past the node's decodeDeadline: the worker thread running them was stopped (failing the other buckets' work on that thread too) and the bucket read again; a message that stalls it every time is dead-lettered (natslake_poison_messages_total)",
    ["table", "bucket", "stage"],
  ),
  bucketPending: gauge("natslake_bucket_pending_messages", "messages in a bucket's ingest subject, not committed yet (reported by the table's leader)", ["table", "bucket"]),
  leaseRenewLag: gauge("natslake_lease_renew_lag_ms", "max lease renew lag of active leaders", [], { unit: "ms" }),

  // Writers.
  rowsIn: counter("natslake_rows_in_total", "rows buffered by writers", ["table", "bucket"]),
  filesWritten: counter("natslake_files_written_total", "data files written", ["table", "bucket"]),
  bytesWritten: counter("natslake_bytes_written_total", "bytes of data files written by flushes (compaction not counted)", ["table", "bucket"], { unit: "By" }),
  preemptedFlushes: counter("natslake_writer_preempted_flushes_total", "flushes started early because the node's write budget was full", ["table", "bucket"]),
  compactionJobs: counter("natslake_compaction_jobs_total", "writers' compaction jobs, by result (sent, idle, failed)", ["table", "bucket", "result"]),
  compactionFiles: counter("natslake_compaction_files_total", "files in compactions writers sent, by role (input, output)", ["table", "bucket", "role"]),
  compactionRows: counter(
    "natslake_compaction_rows_total",
    "rows in compactions writers sent, by how they were written (copied: their row groups copied byte for byte; reencoded: decoded and encoded again)",
    ["table", "bucket", "how"],
  ),
  compactionBytes: counter(
    "natslake_compaction_bytes_total",
    "bytes of the files writers' compactions rewrote (read) and of the files they wrote (written), in compactions they sent; a primary-key file only moved to another level counts in neither",
    ["table", "bucket", "role"],
    { unit: "By" },
  ),
  compactionSeconds: histogram(
    "natslake_compaction_seconds",
    "writers' compaction jobs that sent a change: seconds waiting for the node's compaction slot and rewriting, by stage (slot-wait, rewrite)",
    ["table", "stage"],
    { unit: "s", buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] },
  ),
  bucketStoppedMs: counter(
    "natslake_bucket_stopped_ms_total",
    "milliseconds a primary-key bucket's writer did not read its stream because the bucket's sorted runs reached num-sorted-run.stop-trigger (back-pressure: the messages wait in the stream until a compaction lands); 0 for append tables' buckets, which never stop",
    ["table", "bucket"],
    { unit: "ms" },
  ),
  bucketSortedRuns: gauge(
    "natslake_bucket_sorted_runs",
    "sorted runs of a primary-key bucket as its writer counts them for num-sorted-run.*: level-0 files and non-empty levels of the latest snapshot plus level-0 files of flushes not committed yet (the fullest partition's)",
    ["table", "bucket"],
  ),
  bucketLiveFiles: gauge("natslake_bucket_live_files", "data files of a bucket in the latest snapshot its writer read (primary-key buckets: every commit interval; append buckets: at each compaction plan)", ["table", "bucket"]),
  bucketAssignments: gauge("natslake_bucket_assignments", "buckets this node's writers own, by table and state (active, revoking)", ["table", "state"]),
  writerMemory: gauge("natslake_writer_memory_bytes", "the node's write budget in use: rows its bucket writers hold decoded and not yet written", [], { unit: "By" }),
  writerMemoryLimit: gauge("natslake_writer_memory_limit_bytes", "the node's write budget (--writer-memory)", [], { unit: "By" }),

  // Maintenance, on the table's leader.
  snapshotsExpired: counter("natslake_snapshots_expired_total", "snapshots removed by expiration", ["table"]),
  filesRemoved: counter("natslake_files_removed_total", "data files, changelog files and manifests removed by snapshot expiration, by kind (data, changelog, manifest)", ["table", "kind"]),
  maintenanceRemoved: counter("natslake_maintenance_removed_total", "what scheduled maintenance removed (partitions, files), by task and kind", ["table", "task", "kind"]),
  maintenanceFailures: counter("natslake_maintenance_failures_total", "scheduled maintenance runs that failed", ["table", "task"]),
  maintenanceRequests: counter("natslake_maintenance_requests_total", "maintenance jobs asked for over NATS (the CLI with --nats), by task and outcome (ok, failed)", ["table", "task", "outcome"]),
  consumerLagSnapshots: gauge("natslake_consumer_lag_snapshots", "snapshots a consumer has not processed yet (latest + 1 − its nextSnapshot)", ["table", "consumer"]),
  consumerLagSeconds: gauge("natslake_consumer_lag_seconds", "age of the oldest snapshot a consumer has not processed yet (0 when caught up)", ["table", "consumer"], { unit: "s" }),
  tableLiveFiles: gauge("natslake_table_live_files", "data files the latest snapshot references", ["table"]),
  tableLiveBytes: gauge("natslake_table_live_bytes", "bytes of the data files the latest snapshot references", ["table"], { unit: "By" }),
  tableSnapshots: gauge("natslake_table_snapshots", "snapshots retained", ["table"]),
  compactionBacklog: gauge("natslake_compaction_backlog_files", "small live files of a bucket waiting for compaction (below target-file-size × compaction.small-file-ratio)", ["table", "bucket"]),

  // Reader nodes: consume sessions.
  consumeBytes: counter("natslake_consume_bytes_total", "Arrow IPC bytes reader nodes sent to consumers", ["table"], { unit: "By" }),
  consumeFeedSnapshots: counter(
    "natslake_consume_feed_snapshots_total",
    "snapshots through the shared consume feeds, by outcome: read (read and encoded once to share), shared (a session sent a shared read), own (a session read it itself: behind the others, too large, or the shared read failed), evicted (dropped because the feed was full)",
    ["table", "outcome"],
  ),
  consumeFeedFiles: counter(
    "natslake_consume_feed_files_total",
    "data files the shared consume feeds decoded ahead, by outcome: early (announced by a writer's committable and decoded before its snapshot linked), taken (a snapshot's load used such a decode instead of reading the file)",
    ["table", "outcome"],
  ),
  consumeDelivery: histogram(
    "natslake_consume_delivery_ms",
    "snapshot link → a consume session sent the snapshot's rows whole (the reader's part of a consumer's latency), per session and snapshot",
    ["table"],
    { unit: "ms", buckets: CONSUME_LATENCY_BUCKETS_MS },
  ),
  consumeStage: histogram(
    "natslake_consume_stage_ms",
    "the reader's part of a delivery by stage: notified (snapshot link → its notification reached this reader), and a shared read's snapshot (reading the announced snapshot file), plan (its delta's manifests) and read (decoding its files and packing the chunks)",
    ["table", "stage"],
    { unit: "ms", buckets: CONSUME_LATENCY_BUCKETS_MS },
  ),
  consumeSessions: gauge("natslake_consume_sessions", "consume sessions this reader serves", []),
  consumeFeedBytes: gauge("natslake_consume_feed_bytes", "encoded rows the reader's shared feeds hold", [], { unit: "By" }),

  // Reader nodes: lookups by key (cluster/lookup-service.ts).
  lookupRequests: observedCounter(
    "natslake_lookup_requests_total",
    "lookup requests this reader answered, by outcome: ok, or the refusal's code (bad-request, unknown-table, not-primary-key, bad-key, unknown-column, snapshot-expired, snapshot-not-found, not-visible, unsupported, failed)",
    ["table", "outcome"],
  ),
  lookupKeys: observedCounter("natslake_lookup_keys_total", "keys looked up in answered lookup requests", ["table"]),
  lookupDuration: histogram("natslake_lookup_duration_ms", "a lookup request answered: received → reply ready (any wait for the snapshot it asked for included)", ["table"], {
    unit: "ms",
    buckets: [0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 25, 50, 100, 250, 500, 1000, 5000],
  }),
  lookupCacheFiles: observedCounter("natslake_lookup_cache_files_total", "data files lookups needed, by result: hit (the reader's cache held them decoded), miss (decoded for the lookup)", ["table", "result"]),
  lookupCacheBytes: gauge("natslake_lookup_cache_bytes", "decoded data files the reader keeps for a table's lookups (at most its lookup.cache-max-memory-size)", ["table"], { unit: "By" }),
  lookupDiskCacheBytes: gauge("natslake_lookup_disk_cache_bytes", "files a reader on an object-store warehouse keeps on its disk for lookups (at most its lookupCacheMaxDiskSize)", [], { unit: "By" }),
  lookupDiskCacheReads: observedCounter(
    "natslake_lookup_disk_cache_reads_total",
    "reads of immutable table files (data, manifests) through a reader's lookup disk cache, by result: hit (read from its disk), miss (fetched from the object store and kept)",
    ["result"],
  ),
  lookupSnapshot: gauge("natslake_lookup_snapshot", "the newest snapshot of a table this reader answers lookups from", ["table"]),

  // The node.
  eventLoopDelay: gauge(
    "natslake_event_loop_delay_ms",
    "how late the node's event loop ran (Node's event-loop delay monitor, 10 ms resolution) since the previous collection, by quantile (0.5, 0.99, and 1 for the largest): added to every latency the node serves",
    ["quantile"],
    { unit: "ms" },
  ),
  processMemory: gauge("natslake_process_memory_bytes", "the node process's memory by kind: rss (resident), heap_used and heap_total (V8's heap of the main thread), external and array_buffers (memory outside that heap held by its objects)", ["kind"], { unit: "By" }),
  actorsStuck: gauge("natslake_actors_stuck", "actors handling one message for the node's stallReport (15 s by default) or more: they handle nothing else meanwhile, see the node's log", []),
  dlqDropped: observedCounter("natslake_dlq_dropped_total", "dead letters the full (or 7-day old) DLQ stream discarded, oldest first (every node reports the cluster's value: aggregate with max)", ["stream"]),
  s3Requests: observedCounter(
    "natslake_s3_requests_total",
    "requests sent to the warehouse's object store by this node, by type (PUT, GET, HEAD, LIST, DELETE, OTHER), table area and S3 bucket",
    ["type", "area", "bucket"],
  ),
} as const;

/** Every declared metric, in declaration order. */
export function allMetrics(): MetricInfo[] {
  return Object.values(METRICS);
}
