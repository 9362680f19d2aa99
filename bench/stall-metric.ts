/**
 * The time writers spent stalled, from a node's /metrics (Prometheus text), for bench/cluster-pk.bench.ts: every
 * metric whose name says a stall (`stall`, or the writer's `natslake_bucket_stopped_ms_total`: the milliseconds a
 * primary-key bucket did not read its stream at `num-sorted-run.stop-trigger`) and carries a unit of time — a counter
 * (`…_seconds_total`, `…_ms_total`) or a histogram's `_sum` (`…_seconds_sum`, `…_ms_sum`) — summed over its label
 * sets, in seconds. A node that exports none gives null, which the benchmark prints as "n/a", never as 0.
 */

export interface StallTime {
  /** Summed over the metrics and their label sets. */
  seconds: number;
  /** The metrics it summed (their sample names). */
  metrics: string[];
}

const SAMPLE = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{[^}]*\})?\s+(\S+)/;
/** Names of metrics of stalled time: any `stall`, and the writer's stopped-bucket counter (actors/metrics.ts). */
const STALLED = /stall|^natslake_bucket_stopped_/i;
/** A time unit at the end of the sample name, before a counter's `_total` or a histogram's `_sum`. */
const TIMED = /_(seconds|ms|milliseconds)_(total|sum)$/;

/** The stalled time a /metrics body reports; null when it has no metric of stall time. */
export function stalledTime(body: string): StallTime | null {
  let seconds = 0;
  const metrics = new Set<string>();
  for (const line of body.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = SAMPLE.exec(line);
    if (m === null || !STALLED.test(m[1]!)) continue;
    const unit = TIMED.exec(m[1]!);
    if (unit === null) continue;
    const v = Number(m[2]);
    if (!Number.isFinite(v)) continue;
    seconds += unit[1] === "seconds" ? v : v / 1000;
    metrics.add(m[1]!);
  }
  return metrics.size === 0 ? null : { seconds, metrics: [...metrics].sort() };
}

/** Several nodes' stalled time added up: null unless one of them reports it. */
export function sumStalled(times: ReadonlyArray<StallTime | null>): StallTime | null {
  const known = times.filter((t): t is StallTime => t !== null);
  if (known.length === 0) return null;
  return { seconds: known.reduce((s, t) => s + t.seconds, 0), metrics: [...new Set(known.flatMap((t) => t.metrics))].sort() };
}
