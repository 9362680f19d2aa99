/**
 * Time series the cluster benchmarks sample, shaped for the results file (bench/figures.ts `Series`): latency
 * percentiles per time window, and process RSS sampled over a phase. Times are seconds since the phase's start,
 * rounded to 0.1 s, so the file stays small and the same run always draws the same chart.
 */
import { procStats } from "./cluster-harness.ts";
import type { SeriesLine } from "./figures.ts";

/** Seconds (0.1 s) since `t0` for a time `at`, both epoch ms. */
export const secondsSince = (t0: number, at: number): number => Math.round((at - t0) / 100) / 10;

/** The p-quantile of sorted values, by the rule the benchmarks print theirs: the value at floor(n·p). */
export function quantile(sorted: readonly number[], p: number): number | null {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/**
 * Per window of `windowMs` from `t0`, the `p`-quantile of the latencies whose time falls in it: `timed` holds
 * [epoch ms, latency ms]. One point per window that has latencies, at the window's start (seconds since `t0`);
 * windows without any are left out (no zero is made up for them).
 */
export function windowQuantile(timed: ReadonlyArray<readonly [number, number]>, t0: number, windowMs: number, p: number): Array<[number, number]> {
  if (!(windowMs > 0)) throw new Error(`windowQuantile: the window must be a positive number of ms, got ${windowMs}`);
  const windows = new Map<number, number[]>();
  for (const [at, latency] of timed) {
    const w = Math.floor((at - t0) / windowMs);
    const list = windows.get(w);
    if (list === undefined) windows.set(w, [latency]);
    else list.push(latency);
  }
  return [...windows]
    .sort((a, b) => a[0] - b[0])
    .map(([w, list]) => [Math.round((w * windowMs) / 100) / 10, quantile(list.sort((a, b) => a - b), p)!]);
}

/** p50 and p99 lines per window (see windowQuantile), named `<prefix>p50` and `<prefix>p99`. */
export function percentileLines(timed: ReadonlyArray<readonly [number, number]>, t0: number, windowMs: number, prefix = ""): SeriesLine[] {
  return [
    { name: `${prefix}p50`, points: windowQuantile(timed, t0, windowMs, 0.5) },
    { name: `${prefix}p99`, points: windowQuantile(timed, t0, windowMs, 0.99) },
  ];
}

/** What sampleRss found: each process's peak (MB) and its line of samples. */
export interface RssFigures {
  peakMb: number[];
  lines: SeriesLine[];
}

/**
 * Samples the RSS (VmRSS, MB) of processes every `everyMs` from now until stop(): the peak of each from every sample
 * (VmHWM would carry an earlier phase's peak), and a line per process named `names[i]` with one point every
 * `recordEveryMs` (the largest of the samples since the last point, so the line shows the peaks the figure reports).
 */
export function sampleRss(pids: readonly number[], names: readonly string[], everyMs: number, recordEveryMs: number = everyMs): { stop(): RssFigures } {
  const t0 = Date.now();
  const peak = pids.map(() => 0);
  const lines: SeriesLine[] = names.map((name) => ({ name, points: [] }));
  const pending = pids.map(() => 0);
  // A point every `every`-th sample (counted, not timed: a timer's jitter would skip one now and then).
  const every = Math.max(1, Math.round(recordEveryMs / everyMs));
  let samples = 0;
  const read = (force: boolean): void => {
    const now = Date.now();
    pids.forEach((pid, i) => {
      try {
        const mb = procStats(pid).rssNowMb;
        peak[i] = Math.max(peak[i]!, mb);
        pending[i] = Math.max(pending[i]!, mb);
      } catch {
        /* exited: the benchmark's assertAlive reports it */
      }
    });
    if (!force && ++samples % every !== 0) return;
    pending.forEach((mb, i) => {
      if (mb > 0) lines[i]!.points.push([secondsSince(t0, now), mb]);
      pending[i] = 0;
    });
  };
  read(true);
  const timer = setInterval(() => read(false), everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      read(true);
      return { peakMb: peak, lines };
    },
  };
}
