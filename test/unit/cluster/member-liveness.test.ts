import { test } from "node:test";
import assert from "node:assert/strict";
import { memberLiveness } from "../../../cluster/nats/adapters.ts";

/** A judge whose monotonic and wall clocks the test moves by hand (the wall clock may be skewed against `at`). */
function judge(wallSkewMs = 0) {
  let mono = 1000;
  const real = { now: 1_700_000_000_000 };
  const l = memberLiveness(
    () => mono,
    () => real.now + wallSkewMs,
  );
  return {
    l,
    advance(ms: number) {
      mono += ms;
      real.now += ms;
    },
    get now() {
      return real.now;
    },
  };
}

test("liveness - a member whose heartbeat keeps changing is live whatever its `at` says (its clock 30 s behind)", () => {
  const j = judge();
  let rev = 1;
  // First sight of a skewed heartbeat falls back to the wall clock: it looks 30 s old.
  assert.equal(j.l.isLive("w1", rev, j.now - 30_000, 3000), false);
  for (let i = 0; i < 10; i++) {
    j.advance(500);
    rev++;
    assert.equal(j.l.isLive("w1", rev, j.now - 30_000, 3000), true, `round ${i}`);
  }
});

test("liveness - the judge's own clock 40 s ahead does not make live members look dead", () => {
  const j = judge(40_000);
  let rev = 5;
  assert.equal(j.l.isLive("w2", rev, j.now, 3000), false, "first sight: the skewed wall clock is all there is");
  for (let i = 0; i < 5; i++) {
    j.advance(500);
    rev++;
    assert.equal(j.l.isLive("w2", rev, j.now, 3000), true);
  }
});

test("liveness - a member whose heartbeat stops changing is dead after maxAge on the monotonic clock", () => {
  const j = judge();
  const at = j.now;
  assert.equal(j.l.isLive("w3", 7, at, 3000), true, "first sight, fresh by the wall clock");
  j.advance(2900);
  assert.equal(j.l.isLive("w3", 7, at, 3000), true);
  j.advance(200);
  assert.equal(j.l.isLive("w3", 7, at, 3000), false);
  // Its heartbeat changes again (it was paused and resumed): live at once.
  j.advance(100);
  assert.equal(j.l.isLive("w3", 8, j.now, 3000), true);
});

test("liveness - a member skewed 40 s ahead that dies is dead after maxAge (its future `at` does not keep it alive)", () => {
  const j = judge();
  assert.equal(j.l.isLive("w4", 1, j.now + 40_000, 3000), true);
  j.advance(500);
  assert.equal(j.l.isLive("w4", 2, j.now + 40_000, 3000), true);
  j.advance(3100);
  assert.equal(j.l.isLive("w4", 2, j.now + 40_000 - 3100, 3000), false);
});

test("liveness - a key that is gone is forgotten: seen again, it is judged afresh", () => {
  const j = judge();
  assert.equal(j.l.isLive("w5", 1, j.now, 3000), true);
  j.advance(5000);
  assert.equal(j.l.isLive("w5", 1, j.now - 5000, 3000), false);
  j.l.retain(new Set());
  assert.equal(j.l.isLive("w5", 1, j.now, 3000), true, "no history: the wall clock says fresh");
});
