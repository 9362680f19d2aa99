/**
 * PoisonGuard's counting (actors/poison-guard.ts) over an AttemptLog kept in memory, as KV keeps it between processes:
 * each guard below is a new writer process reading what the last one left.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { POISON_ATTEMPTS, POISON_FAILURES, PoisonGuard, ProbeGate } from "../../../actors/poison-guard.ts";
import type { AttemptLog } from "../../../actors/ports.ts";
import type { BucketAttempts } from "../../../actors/wire/messages.ts";
import { bucketAttemptsSchema } from "../../../actors/wire/schemas.ts";

/** The log as KV holds it: JSON text per key, checked against the published schema on every write. */
function memoryLog(): AttemptLog & { stored: Map<string, string> } {
  const stored = new Map<string, string>();
  return {
    stored,
    async read(table, bucket) {
      const t = stored.get(`${table}.${bucket}`);
      return t === undefined ? null : (JSON.parse(t) as BucketAttempts);
    },
    async write(table, bucket, a) {
      if (a === null) stored.delete(`${table}.${bucket}`);
      else stored.set(`${table}.${bucket}`, JSON.stringify(bucketAttemptsSchema.parse(a)));
    },
  };
}

const STREAM = "LAKE_IN_db_t#1";
const lastSeq = async (): Promise<number> => 90;

test("poison guard - attempts count per committed offset, and start again when it moves or the stream changes", async () => {
  const log = memoryLog();
  for (let i = 1; i <= POISON_ATTEMPTS; i++) assert.equal(await new PoisonGuard(log, "db.t", 0).begin(STREAM, 10, lastSeq), null, `attempt ${i} reads batches`);
  assert.equal((await log.read("db.t", 0))!.attempts, POISON_ATTEMPTS);
  // A commit moved the offset: counting starts again.
  assert.equal(await new PoisonGuard(log, "db.t", 0).begin(STREAM, 12, lastSeq), null);
  assert.equal((await log.read("db.t", 0))!.attempts, 1);
  // Another stream: afresh too; other buckets are apart.
  await new PoisonGuard(log, "db.t", 0).begin("LAKE_IN_db_t#2", 12, lastSeq);
  assert.deepEqual(await log.read("db.t", 0), { v: 1, stream: "LAKE_IN_db_t#2", from: 12, attempts: 1 });
  assert.equal(await log.read("db.t", 1), null);
});

test("poison guard - past the attempts, messages are tried alone; the one a generation ended on is dead-lettered after its failures", async () => {
  const log = memoryLog();
  for (let i = 0; i < POISON_ATTEMPTS; i++) await new PoisonGuard(log, "db.t", 0).begin(STREAM, 10, lastSeq);
  let g = new PoisonGuard(log, "db.t", 0);
  assert.equal(await g.begin(STREAM, 10, lastSeq), 90, "isolating up to the stream's last sequence");
  assert.equal(await g.probe(11), null);
  await g.passed();
  assert.equal(await g.probe(12), null);
  // The process dies on 12 (nothing more is written), POISON_FAILURES times; 11 was passed each time.
  for (let i = 0; i < POISON_FAILURES; i++) {
    g = new PoisonGuard(log, "db.t", 0);
    assert.equal(await g.begin(STREAM, 10, lastSeq), 90, "still isolating");
    assert.equal(await g.probe(11), null, "a message passed before is not blamed");
    await g.passed();
    const verdict = await g.probe(12);
    if (i < POISON_FAILURES - 1) assert.equal(verdict, null, "tried again");
    else assert.match(verdict ?? "", /^poison message: reading the bucket after offset 10 failed \d+ times; this message alone failed 2 times \(no error was seen: the writer's process died/);
  }
  assert.deepEqual((await log.read("db.t", 0))!.failures, { "12": POISON_FAILURES });
  // Flushes that cover the range end the isolation, and its record.
  assert.equal(await g.covered(89), false);
  assert.equal(await g.covered(90), true);
  assert.equal(await log.read("db.t", 0), null);
});

test("poison guard - after a stall of its own batch a generation isolates at once, at the same offset or a new one; a stalled message tried alone is dead-lettered saying so", async () => {
  const log = memoryLog();
  assert.equal(await new PoisonGuard(log, "db.t", 0).begin(STREAM, 10, lastSeq), null, "the first read: batches");
  // Its batch stalled; what was read before it committed meanwhile, so the offset moved: isolating anyway.
  let g = new PoisonGuard(log, "db.t", 0);
  assert.equal(await g.begin(STREAM, 14, lastSeq, { isolateNow: true }), 90);
  assert.deepEqual(await log.read("db.t", 0), { v: 1, stream: STREAM, from: 14, attempts: 1, until: 90, failures: {} });
  assert.equal(await g.probe(15), null);
  await g.failed("the writer stalled decoding past 4000 ms (the node's decodeDeadline); its worker thread was stopped");
  g = new PoisonGuard(log, "db.t", 0);
  assert.equal(await g.begin(STREAM, 14, lastSeq, { isolateNow: true }), 90, "still isolating, not started again");
  assert.equal((await log.read("db.t", 0))!.failures?.["15"], 1);
  await g.probe(15);
  await g.failed("the writer stalled decoding past 4000 ms (the node's decodeDeadline); its worker thread was stopped");
  g = new PoisonGuard(log, "db.t", 0);
  await g.begin(STREAM, 14, lastSeq);
  assert.match((await g.probe(15)) ?? "", /^poison message: reading the bucket after offset 14 failed 3 times; this message alone failed 2 times \(last error: \(message 15\) the writer stalled decoding past 4000 ms/);
  // At the same offset as the last attempt, too.
  const other = memoryLog();
  await new PoisonGuard(other, "db.t", 1).begin(STREAM, 20, lastSeq);
  assert.equal(await new PoisonGuard(other, "db.t", 1).begin(STREAM, 20, lastSeq, { isolateNow: true }), 90);
  assert.equal((await other.read("db.t", 1))!.attempts, 2);
});

test("poison guard - a failure's error goes into the reason; counts below the committed offset are dropped", async () => {
  const log = memoryLog();
  for (let i = 0; i < POISON_ATTEMPTS; i++) await new PoisonGuard(log, "db.t", 3).begin(STREAM, 10, lastSeq);
  let g = new PoisonGuard(log, "db.t", 3);
  await g.begin(STREAM, 10, lastSeq);
  await g.probe(11);
  await g.failed("encoder: value out of range");
  g = new PoisonGuard(log, "db.t", 3);
  // 11 was committed meanwhile (the offset moved to 11): its failure no longer counts, and 20 is tried.
  assert.equal(await g.begin(STREAM, 11, lastSeq), 90);
  assert.deepEqual((await log.read("db.t", 3))!.failures, {});
  await g.probe(20);
  await g.failed("encoder: value out of range");
  for (let i = 1; i < POISON_FAILURES; i++) {
    g = new PoisonGuard(log, "db.t", 3);
    await g.begin(STREAM, 11, lastSeq);
    assert.equal(await g.probe(20), null);
    await g.failed("encoder: value out of range");
  }
  g = new PoisonGuard(log, "db.t", 3);
  await g.begin(STREAM, 11, lastSeq);
  assert.match((await g.probe(20)) ?? "", /this message alone failed 2 times \(last error: \(message 20\) encoder: value out of range\)$/);
});

test("poison guard - the probe gate lets one probe in at a time, in order", async () => {
  const gate = new ProbeGate();
  const order: string[] = [];
  const first = await gate.acquire();
  const second = gate.acquire().then((release) => {
    order.push("second");
    return release;
  });
  const third = gate.acquire().then((release) => {
    order.push("third");
    release();
  });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, [], "held");
  first();
  first(); // released twice: no effect
  (await second)();
  await third;
  assert.deepEqual(order, ["second", "third"]);
  (await gate.acquire())();
});
