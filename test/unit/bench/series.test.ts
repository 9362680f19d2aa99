/**
 * bench/series.ts: latency percentiles per time window (the benchmarks' quantile rule, windows without latencies
 * left out) and RSS sampled from /proc over a span (peaks from every read, a point per recording interval).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { percentileLines, quantile, sampleRss, secondsSince, windowQuantile } from "../../../bench/series.ts";
import { procStats } from "../../../bench/cluster-harness.ts";

const T0 = 1_764_000_000_000;

test("series - windowQuantile: the quantile of each window's latencies at the window's start; empty windows are gaps", () => {
  // Window 0 s: 1..100 ms; window 1 s: nothing; window 2 s: 500 and 700 ms (given out of order); one at -0.5 s.
  const timed: Array<[number, number]> = [
    ...Array.from({ length: 100 }, (_, i): [number, number] => [T0 + i * 9, 100 - i]),
    [T0 + 2_900, 700],
    [T0 + 2_000, 500],
    [T0 - 500, 42],
  ];
  assert.deepEqual(windowQuantile(timed, T0, 1_000, 0.5), [[-1, 42], [0, 51], [2, 700]]);
  assert.deepEqual(windowQuantile(timed, T0, 1_000, 0.99), [[-1, 42], [0, 100], [2, 700]]);
  assert.deepEqual(windowQuantile(timed, T0, 2_500, 0.5), [[-2.5, 42], [0, 51], [2.5, 700]]);
  assert.deepEqual(windowQuantile([], T0, 1_000, 0.5), []);
  assert.throws(() => windowQuantile(timed, T0, 0, 0.5), /positive number of ms, got 0/);
  assert.deepEqual(
    percentileLines(timed, T0, 1_000, "on: ").map((l) => l.name),
    ["on: p50", "on: p99"],
  );
  assert.deepEqual(percentileLines(timed, T0, 1_000)[1]!.points, windowQuantile(timed, T0, 1_000, 0.99));
  assert.equal(quantile([1, 2, 3, 4], 0.5), 3);
  assert.equal(quantile([], 0.5), null);
  assert.equal(secondsSince(T0, T0 + 1_234), 1.2);
});

test("series - sampleRss: the peak of every read, a point per recording interval, nothing for a process that is gone", async () => {
  const sampler = sampleRss([process.pid, 2 ** 22 + 7], ["self", "gone"], 20, 100);
  // Grow this process's RSS while it samples: the peak must see it.
  const hold: Buffer[] = [];
  const until = Date.now() + 600;
  while (Date.now() < until) {
    hold.push(Buffer.alloc(2 * 1024 * 1024, hold.length + 1));
    await new Promise((r) => setTimeout(r, 40));
  }
  const { peakMb, lines } = sampler.stop();
  const nowMb = procStats(process.pid).rssNowMb;
  assert.ok(hold.length > 0);
  assert.deepEqual(
    lines.map((l) => l.name),
    ["self", "gone"],
  );
  assert.ok(peakMb[0]! > 0 && peakMb[0]! <= Math.max(nowMb, procStats(process.pid).rssMb), `peak ${peakMb[0]} MB within what the process reached`);
  assert.equal(peakMb[1], 0);
  assert.deepEqual(lines[1]!.points, []);
  const points = lines[0]!.points;
  // ~600 ms of sampling with a point every 100 ms (fewer when the machine delays the timer), plus the first and the last read.
  assert.ok(points.length >= 3 && points.length <= 10, `${points.length} points`);
  assert.ok(points[0]![0] <= 0.5, `the first point at once: ${points[0]![0]} s`);
  for (let i = 1; i < points.length; i++) assert.ok(points[i]![0] >= points[i - 1]![0], "time does not go back");
  assert.equal(Math.max(...points.map(([, mb]) => mb)), peakMb[0], "each point is the largest read since the last, so the line reaches the peak");
});
