import { test } from "node:test";
import assert from "node:assert/strict";
import { errors } from "@nats-io/transport-node";
import type { Consumer } from "@nats-io/jetstream";
import { orderedConsumer } from "../../../cluster/nats/adapters.ts";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A stand-in consumer that records its deletion. */
function fake(name: string, deleted: string[]): Consumer {
  return { delete: () => (deleted.push(name), Promise.resolve(true)) } as unknown as Consumer;
}

test("orderedConsumer - an attempt stuck on a dead peer is hedged: the next one wins, the late one is deleted", async () => {
  const deleted: string[] = [];
  let n = 0;
  const create = async (): Promise<Consumer> => {
    const i = ++n;
    // The first attempt's consumer lands on a dead peer: the API answers only much later (here: it succeeds late).
    if (i === 1) {
      await sleep(1500);
      return fake("late", deleted);
    }
    await sleep(10);
    return fake(`c${i}`, deleted);
  };
  const t0 = Date.now();
  const c = await orderedConsumer(create, 10_000, 200);
  const took = Date.now() - t0;
  assert.ok(took < 1000, `took ${took} ms: the hedge should win well before the first attempt answers`);
  assert.equal(n, 2);
  await sleep(1600);
  assert.deepEqual(deleted, ["late"], "the late winner is deleted");
  assert.notEqual(c, undefined);
});

test("orderedConsumer - quick refusals are retried every 250 ms, one at a time, until the API answers", async () => {
  let n = 0;
  let concurrent = 0;
  let maxConcurrent = 0;
  const create = async (): Promise<Consumer> => {
    n++;
    concurrent++;
    maxConcurrent = Math.max(maxConcurrent, concurrent);
    await sleep(5);
    concurrent--;
    if (n < 4) throw new Error("jetstream is not enabled");
    return fake("ok", []);
  };
  await orderedConsumer(create, 10_000, 600);
  assert.equal(n, 4);
  assert.equal(maxConcurrent, 1);
});

test("orderedConsumer - gives up after the budget with the last error, at most three attempts in flight", async () => {
  let inFlight = 0;
  let max = 0;
  const create = async (): Promise<Consumer> => {
    inFlight++;
    max = Math.max(max, inFlight);
    await sleep(300);
    inFlight--;
    throw new errors.TimeoutError();
  };
  const t0 = Date.now();
  await assert.rejects(orderedConsumer(create, 1000, 50), /timeout/);
  assert.ok(Date.now() - t0 < 2000);
  assert.ok(max <= 3, `max in flight ${max}`);
  await sleep(400);
  assert.equal(inFlight, 0);
});
