/**
 * What the node's own process does, as metrics: how late its event loop ran timers (every actor, request and
 * notification of a node shares that one thread, so its delay is added to every latency the node serves — a lookup's
 * tail, a commit round) and where its memory is (resident, V8 heap, buffers outside the heap).
 *
 * The delay is sampled by Node's event-loop delay monitor and reported per collection: the percentiles of what was
 * sampled since the previous collection (a Prometheus scrape), then the monitor starts afresh.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { Meter } from "@opentelemetry/api";
import { METRICS } from "../actors/metrics.ts";

/** The monitor's sampling period: delays shorter than this are not seen. */
const RESOLUTION_MS = 10;

export interface RuntimeMetrics {
  stop(): void;
}

export function registerRuntimeMetrics(meter: Meter): RuntimeMetrics {
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  METRICS.eventLoopDelay.create(meter).addCallback((r) => {
    // No sample yet (a collection right after the previous one): nothing to say.
    if (delay.count === 0) return;
    const ms = (ns: number): number => Math.round((ns / 1e6) * 1000) / 1000;
    r.observe(ms(delay.percentile(50)), { quantile: "0.5" });
    r.observe(ms(delay.percentile(99)), { quantile: "0.99" });
    r.observe(ms(delay.max), { quantile: "1" });
    delay.reset();
  });
  METRICS.processMemory.create(meter).addCallback((r) => {
    const m = process.memoryUsage();
    r.observe(m.rss, { kind: "rss" });
    r.observe(m.heapUsed, { kind: "heap_used" });
    r.observe(m.heapTotal, { kind: "heap_total" });
    r.observe(m.external, { kind: "external" });
    r.observe(m.arrayBuffers, { kind: "array_buffers" });
  });
  return { stop: () => delay.disable() };
}
