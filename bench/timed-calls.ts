/** Calls timed one at a time, bounded in count and time: what the lookup benchmarks measure latencies with. */

export interface TimedCalls {
  calls: number;
  /** Each call's latency, ms. */
  latencies: number[];
  /** Wall time of all of them, s. */
  seconds: number;
}

/** Runs `call` up to `count` times or for `seconds`, whichever ends first, one call at a time. */
export async function timedCalls(count: number, seconds: number, call: () => Promise<unknown>): Promise<TimedCalls> {
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + seconds * 1000;
  while (latencies.length < count && performance.now() < deadline) {
    const t0 = performance.now();
    await call();
    latencies.push(performance.now() - t0);
  }
  return { calls: latencies.length, latencies, seconds: (performance.now() - start) / 1000 };
}
