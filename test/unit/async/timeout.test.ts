/** withTimeout: the work's outcome when it comes first; the fallback or the error when the time passes first. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { withTimeout } from "../../../src/timeout.ts";

const after = <T>(ms: number, value: T): Promise<T> => new Promise((r) => setTimeout(() => r(value), ms));

test("withTimeout - the work wins: its value or its rejection, and the timer is cleared", async () => {
  let fired = false;
  assert.equal(await withTimeout(after(5, "done"), 1000, () => ((fired = true), "late")), "done");
  await assert.rejects(withTimeout(Promise.reject(new Error("boom")), 1000, () => "late"), /boom/);
  await after(30, null);
  assert.equal(fired, false, "onTimeout never ran");
});

test("withTimeout - the time wins: onTimeout's value, or what it throws", async () => {
  assert.equal(await withTimeout(after(500, true), 10, () => false), false);
  class Slow extends Error {}
  await assert.rejects(
    withTimeout(after(500, "x"), 10, () => {
      throw new Slow("too slow");
    }),
    (e: unknown) => e instanceof Slow && e.message === "too slow",
  );
});
