/** SpacedTasks: one run per key at a time, runs spaced, the latest ask kept and run — never lost, only delayed. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { SpacedTasks } from "../../../actors/spaced-tasks.ts";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test("spaced tasks - a burst of asks runs the first at once and the last after the spacing; the ones between are covered", async () => {
  // A spacing long enough that a loaded machine (the unit suite runs files in parallel) still looks within it.
  const tasks = new SpacedTasks(1000);
  const ran: Array<{ key: string; n: number; at: number }> = [];
  const started = performance.now();
  for (let n = 1; n <= 10; n++) {
    tasks.run("a", async () => void ran.push({ key: "a", n, at: performance.now() - started }), () => undefined);
    tasks.run("b", async () => void ran.push({ key: "b", n, at: performance.now() - started }), () => undefined);
  }
  await sleep(30);
  assert.deepEqual(ran.map((r) => `${r.key}${r.n}`), ["a1", "b1"], "each key's first ask runs at once, keys apart");
  assert.equal(tasks.waiting, 2, "each key keeps its latest ask");
  for (let i = 0; i < 100 && ran.length < 4; i++) await sleep(50);
  await sleep(100); // nothing more comes
  // Keys are apart: a's and b's second runs are due within a millisecond of each other, and which timer fires first
  // is the runtime's business (CI saw b10 before a10). Each key's own order is the contract.
  assert.deepEqual(ran.slice(0, 2).map((r) => `${r.key}${r.n}`), ["a1", "b1"], "the first asks, as before");
  assert.deepEqual(ran.slice(2).map((r) => `${r.key}${r.n}`).sort(), ["a10", "b10"], "then the latest ask of each, once");
  for (const r of ran.filter((x) => x.n === 10)) assert.ok(r.at >= 990, `spaced: ${r.key} ran again after ${r.at.toFixed(0)} ms`);
  assert.equal(tasks.waiting, 0);
});

test("spaced tasks - a run in flight holds the next one back; a failure is reported and does not stop the key", async () => {
  const tasks = new SpacedTasks(0);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const events: string[] = [];
  tasks.run("k", async () => {
    events.push("first:start");
    await gate;
    throw new Error("purge timed out");
  }, (e) => events.push(`error:${e.message}`));
  tasks.run("k", async () => void events.push("second"), () => undefined);
  await sleep(20);
  assert.deepEqual(events, ["first:start"], "one run per key at a time");
  release();
  for (let i = 0; i < 100 && events.length < 3; i++) await sleep(20);
  assert.deepEqual(events, ["first:start", "error:purge timed out", "second"]);
});

test("spaced tasks - stop() drops what waits and refuses new asks", async () => {
  const tasks = new SpacedTasks(100);
  let runs = 0;
  tasks.run("k", async () => void runs++, () => undefined);
  tasks.run("k", async () => void runs++, () => undefined);
  tasks.stop();
  tasks.run("k", async () => void runs++, () => undefined);
  await sleep(200);
  assert.equal(runs, 1, "only the run started before stop()");
});
