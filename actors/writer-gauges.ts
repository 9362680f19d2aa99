/**
 * Gauges of a node's writers, observed from the writer hosts that run (one per table on a writer node):
 * - `natslake_bucket_assignments{table, state}`: buckets this node's writers own, `active` or `revoking` (flushing
 *   their last committable before a hand-off). Summed over nodes: the table's assigned buckets; a table whose sum
 *   stays below its bucket count has a bucket nobody writes.
 * - `natslake_writer_memory_bytes` and `natslake_writer_memory_limit_bytes`: the node's write budget in use (rows
 *   decoded and not yet written, across its bucket writers) and its size (`--writer-memory`).
 * - `natslake_bucket_live_files{table, bucket}` and, for primary-key buckets, `natslake_bucket_sorted_runs{table,
 *   bucket}`: the bucket's shape as its writer last observed it (observeWriterBucket), from the writer's start to its
 *   stop — a bucket moving to another node is reported there from then on.
 * Registered once per meter; a host is observed from its start to its stop.
 */
import type { Meter } from "@opentelemetry/api";
import { METRICS } from "./metrics.ts";
import type { WriteBudget } from "../src/write/write-budget.ts";
import type { BucketShape } from "./compaction-strategy.ts";

export interface ObservedHost {
  readonly table: string;
  /** Buckets owned now, by state. */
  bucketsByState(): { active: number; revoking: number };
  readonly budget: WriteBudget | undefined;
}

const hostsOf = new WeakMap<Meter, Set<ObservedHost>>();

function hosts(meter: Meter): Set<ObservedHost> {
  const known = hostsOf.get(meter);
  if (known !== undefined) return known;
  const live = new Set<ObservedHost>();
  hostsOf.set(meter, live);
  METRICS.bucketAssignments.create(meter).addCallback((r) => {
    for (const h of live) {
      const n = h.bucketsByState();
      r.observe(n.active, { table: h.table, state: "active" });
      r.observe(n.revoking, { table: h.table, state: "revoking" });
    }
  });
  const budgets = (): Set<WriteBudget> => new Set([...live].flatMap((h) => (h.budget === undefined ? [] : [h.budget])));
  METRICS.writerMemory.create(meter).addCallback((r) => {
    const b = budgets();
    if (b.size > 0) r.observe([...b].reduce((n, x) => n + x.usedBytes, 0));
  });
  METRICS.writerMemoryLimit.create(meter).addCallback((r) => {
    const b = budgets();
    if (b.size > 0) r.observe([...b].reduce((n, x) => n + x.capacityBytes, 0));
  });
  return live;
}

/** Observes `host` until the returned function is called. */
export function observeWriterHost(meter: Meter, host: ObservedHost): () => void {
  const set = hosts(meter);
  set.add(host);
  return () => void set.delete(host);
}

/** A bucket writer whose shape is reported. */
export interface ObservedBucket {
  readonly labels: { table: string; bucket: number };
  /** The last shape observed (null before the first observation). */
  shape(): BucketShape | null;
}

const bucketsOf = new WeakMap<Meter, Set<ObservedBucket>>();

/** Reports `bucket`'s live files and sorted runs until the returned function is called. */
export function observeWriterBucket(meter: Meter, bucket: ObservedBucket): () => void {
  let live = bucketsOf.get(meter);
  if (live === undefined) {
    const set = (live = new Set<ObservedBucket>());
    bucketsOf.set(meter, set);
    METRICS.bucketLiveFiles.create(meter).addCallback((r) => {
      for (const b of set) {
        const s = b.shape();
        if (s !== null) r.observe(s.liveFiles, b.labels);
      }
    });
    METRICS.bucketSortedRuns.create(meter).addCallback((r) => {
      for (const b of set) {
        const runs = b.shape()?.sortedRuns;
        if (runs !== undefined && runs !== null) r.observe(runs, b.labels);
      }
    });
  }
  const set = live;
  set.add(bucket);
  return () => void set.delete(bucket);
}
