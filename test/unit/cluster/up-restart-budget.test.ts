/** `up`'s restart bound (cluster/local/up-node.ts): at most N restarts of a node in any window, sliding. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { RestartBudget } from "../../../cluster/local/up-node.ts";

test("up restart budget - 3 a minute: the 4th within the minute is refused (and not counted); allowed again once the first is a minute old", () => {
  const b = new RestartBudget(3, 60_000);
  assert.deepEqual([b.take(0), b.take(10_000), b.take(20_000)], [true, true, true]);
  assert.equal(b.take(59_999), false, "a 4th within a minute of the first");
  assert.equal(b.take(60_000), true, "the first is a minute old: it no longer counts");
  assert.equal(b.take(65_000), false, "10 s, 20 s and 60 s are within the minute");
  assert.equal(b.take(200_000), true, "a quiet while later, as new");
});
