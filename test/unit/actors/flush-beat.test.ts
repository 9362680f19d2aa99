/** The writers' flush beat (actors/writer.ts `nextFlushDelay`): every bucket flushes at the multiples of the interval. */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { nextFlushDelay } from "../../../actors/writer.ts";

test("flush beat - the next flush lands on a multiple of the interval, a quarter to one and a quarter intervals away", () => {
  assert.equal(nextFlushDelay(1_000_000, 250), 250, "on the beat: the next one");
  assert.equal(nextFlushDelay(1_000_010, 250), 240);
  assert.equal(nextFlushDelay(1_000_240, 250), 260, "10 ms before a beat (a timer that fired early): the one after");
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 4e12 }), fc.integer({ min: 10, max: 60_000 }), (now, interval) => {
      const d = nextFlushDelay(now, interval);
      assert.equal((now + d) % interval, 0, "on the beat");
      assert.ok(d >= interval / 4 && d <= interval + interval / 4, `delay ${d} for interval ${interval}`);
    }),
  );
});

test("flush beat - two writers started at different moments flush at the same instants", () => {
  const interval = 100;
  const beats = (start: number): number[] => {
    const out: number[] = [];
    let t = start;
    for (let i = 0; i < 5; i++) out.push((t += nextFlushDelay(t, interval)));
    return out;
  };
  assert.deepEqual(beats(1_000_003), [1_000_100, 1_000_200, 1_000_300, 1_000_400, 1_000_500]);
  assert.deepEqual(beats(1_000_060), beats(1_000_003), "started 57 ms later: the same instants");
  // Started 10 ms before a beat: it skips that one (too close) and joins the others from the next.
  assert.deepEqual(beats(1_000_090), [1_000_200, 1_000_300, 1_000_400, 1_000_500, 1_000_600]);
});
