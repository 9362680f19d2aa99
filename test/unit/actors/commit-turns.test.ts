import { test } from "node:test";
import assert from "node:assert/strict";
import { CommitTurns } from "../../../actors/commit-turns.ts";

test("commit turns - a job's commit waits for the round in progress, no round starts while it holds the turn, and it is handed back", async () => {
  let now = 0;
  const expired: number[] = [];
  const turns = new CommitTurns({ now: () => now, maxHoldMs: 1000, onHoldExpired: (ms) => expired.push(ms) });
  assert.equal(turns.tryStartRound(), true, "no job: rounds run");
  let granted: (() => void) | null = null;
  const taking = turns.take().then((giveBack) => (granted = giveBack));
  await Promise.resolve();
  assert.equal(granted, null, "the round in progress goes on first");
  assert.equal(turns.held, false);
  turns.endRound();
  await taking;
  assert.ok(granted !== null, "the job has the turn once the round ended");
  assert.equal(turns.held, true);
  assert.equal(turns.tryStartRound(), false, "no round while the job holds the turn");
  (granted as () => void)();
  (granted as () => void)(); // giving back twice is harmless
  assert.equal(turns.held, false);
  assert.equal(turns.tryStartRound(), true, "rounds again");
  turns.endRound();

  // A job waiting for the turn keeps new rounds from starting (it would otherwise wait forever behind them).
  assert.equal(turns.tryStartRound(), true);
  const second = turns.take();
  assert.equal(turns.tryStartRound(), false, "a job is waiting: the next round is skipped");
  turns.endRound();
  const giveBack = await second;
  // A hold that runs past maxHoldMs is taken back: rounds go on, and the late give-back changes nothing.
  now += 1500;
  assert.equal(turns.tryStartRound(), true, "the hold ran out");
  assert.deepEqual(expired, [1500]);
  const third = turns.take();
  giveBack(); // the expired holder gives back while a round runs: the waiting job still waits for the round
  let thirdGranted = false;
  void third.then(() => (thirdGranted = true));
  await Promise.resolve();
  assert.equal(thirdGranted, false);
  turns.endRound();
  (await third)();
  assert.equal(turns.held, false);
});

test("commit turns - a turn never granted (a round that does not end) resolves after maxHoldMs holding nothing", async () => {
  const turns = new CommitTurns({ now: () => 0, maxHoldMs: 30 });
  assert.equal(turns.tryStartRound(), true);
  const started = Date.now();
  const keepAlive = setTimeout(() => undefined, 5000); // the turn's own timer is unref'd (it never holds a process up)
  const giveBack = await turns.take();
  clearTimeout(keepAlive);
  assert.ok(Date.now() - started >= 25, "it waited for the round first");
  assert.equal(turns.held, false, "nothing held: the job races on");
  giveBack();
  turns.endRound();
  assert.equal(turns.tryStartRound(), true);
});
