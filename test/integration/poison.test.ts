/**
 * Poison messages (issue 29): a message that kills its writer's process each time it is read, messages whose rows
 * make every flush that holds them fail, and a message that stalls the decode for good (on a bucket buffer's worker
 * thread, stopped at the deadline, or on the node's main thread — a partitioned table's decode — where the node's stall
 * watch kills the node), mixed into a load of good rows on a running node (failpoints armed with markers:
 * src/failpoints.ts). Each is dead-lettered whole, with its reason,
 * after a bounded number of attempts — counted in KV across the node's deaths (actors/poison-guard.ts) — and the
 * buckets move on: every good row is in the table exactly once, every bad message is in the dead-letter stream, and
 * no poison row is in the table.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startCluster, producerWhenRegistered, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import type { Identifier } from "../../src/table/table.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readRows } from "../../src/scan/read.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { createProducer, type BatchOutcome } from "../../cluster/producer.ts";
import type { DeadLetter } from "../../actors/wire/messages.ts";
import { poisonLimits } from "../../actors/poison-guard.ts";
import { createBucketFunction } from "../../src/format/bucket.ts";
import { freePort } from "../../cluster/local/servers.ts";
import { scrapeMetrics } from "../helpers/node-metrics.ts";

const KILL = "POISON-KILL";
const ENCODE = "POISON-ENCODE";
/**
 * A message whose decode blocks its thread for 10 minutes: the node stops the thread at its decodeDeadline — or, on
 * the node's main thread (a partitioned table's decode), its stall watch kills the node.
 */
const HANG = "POISON-HANG";
/** The node's decodeDeadline here: short, as the stalling message costs a few of them (a real one is 120 s). */
const DEADLINE_MS = 4000;
const NAME = "poison.mix";
/** The table's natslake.writer.max-attempts: low, as each death of the node costs a restart (seconds). */
const ATTEMPTS = 1;
const LIMITS = poisonLimits(ATTEMPTS);
let c: TestCluster;
/** The node's /metrics port (the same after each restart). */
let metricsPort = 0;
/** Deaths of the node (each restarted at once, as a supervisor would). */
let deaths = 0;
let stopping = false;

function supervise(): void {
  const n = c.nodes.get("n1")!;
  n.proc.once("exit", () => {
    if (stopping) return;
    deaths++;
    // Bounded: far more deaths than the guard allows means it does not work; the test then fails on its counts.
    if (deaths > 20) return;
    c.startNode("n1");
    supervise();
  });
}

before(async () => {
  metricsPort = await freePort();
  c = await startCluster({
    nodes: 1,
    env: { FAILPOINTS: `ingest.message[${KILL}]:kill,ingest.stall[${HANG}]:hang(600000),ingest.flush-row[${ENCODE}]:throw`, NATSLAKE_DECODE_DEADLINE: `${DEADLINE_MS}ms`, NATSLAKE_METRICS_PORT: String(metricsPort) },
  });
  supervise();
});
after(async () => {
  stopping = true;
  await c.stop();
});

/** Every batch was acknowledged by the stream. */
async function allAcknowledged(outcomes: ReadonlyArray<Promise<BatchOutcome>>): Promise<void> {
  const settled = await Promise.all(outcomes);
  assert.ok(settled.every((o) => o.status === "ok"), JSON.stringify(settled.find((o) => o.status !== "ok")));
}

/** The table holds each of `goodIds` exactly once, and no other row (no poison row). */
async function everyGoodRowOnce(catalog: Catalog, id: Identifier, goodIds: readonly number[]): Promise<void> {
  const ids = new Map<number, number>();
  for await (const r of readRows(await catalog.getTable(id), { projection: ["id"] })) ids.set(Number(r["id"]), (ids.get(Number(r["id"])) ?? 0) + 1);
  assert.deepEqual(
    goodIds.filter((i) => ids.get(i) !== 1),
    [],
    "every good row exactly once",
  );
  assert.equal(ids.size, goodIds.length, "no poison row in the table");
}

async function deadLetters(subject: string): Promise<DeadLetter[]> {
  const jsm = await jetstreamManager(c.nc);
  const info = await jsm.streams.info("LAKE_DLQ");
  const out: DeadLetter[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && seq > 0; seq++) {
    const m = await jsm.streams.getMessage("LAKE_DLQ", { seq }).catch(() => null);
    if (m !== null && m.subject === subject) out.push(m.json<DeadLetter>());
  }
  return out;
}

/** For waitFor: true once the message at `seq` of table `id` is in the dead-letter stream. */
async function deadLettered(id: Identifier, seq: number | undefined): Promise<true | undefined> {
  return (await deadLetters(new Subjects().dlq(id))).some((l) => l.streamSeq === seq) ? true : undefined;
}

/**
 * The producers of a test's table — one in batches for good rows, one of a row per message for poison rows (the writer
 * dead-letters whole messages) — and `writeGood(from, n)`, which writes good rows `row(i)`, remembering their ids and
 * outcomes.
 */
async function tableProducers(name: string, row: (i: number) => Record<string, unknown>) {
  const good = await producerWhenRegistered(c.nc, name);
  const single = await createProducer({ nc: c.nc, table: name, maxBatchRows: 1 });
  const goodIds: number[] = [];
  const outcomes: Array<Promise<BatchOutcome>> = [];
  const writeGood = async (from: number, n: number): Promise<void> => {
    for (let i = from; i < from + n; i++) {
      goodIds.push(i);
      outcomes.push(good.write(row(i)));
    }
    await good.flush();
  };
  return { good, single, goodIds, outcomes, writeGood };
}

test("poison messages - a message that kills the writer and rows that fail every flush are dead-lettered after bounded attempts; every good row lands", { timeout: 180_000 }, async () => {
  const catalog = new Catalog(c.warehouse);
  const id = parseIdentifier(NAME);
  await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, src STRING, note STRING"), options: { bucket: "2", "bucket-key": "id", "natslake.writer.max-attempts": String(ATTEMPTS) } });
  const good = await producerWhenRegistered(c.nc, NAME);
  // Poison rows travel alone (one row per message): the writer dead-letters whole messages.
  const single = await createProducer({ nc: c.nc, table: NAME, maxBatchRows: 1 });
  const outcomes: Array<Promise<BatchOutcome>> = [];
  const goodIds: number[] = [];
  const writeGood = async (from: number, n: number): Promise<void> => {
    for (let i = from; i < from + n; i++) {
      goodIds.push(i);
      outcomes.push(good.write({ id: i, src: "good", note: `row ${i}` }));
      if (i % 100 === 99) await new Promise((r) => setTimeout(r, 20));
    }
    await good.flush();
  };

  await withNodeLogsOnFailure(c, async () => {
    await writeGood(0, 1000);
    const poison = [
      await single.write({ id: 1_000_001, src: "bad", note: KILL }),
      await single.write({ id: 1_000_002, src: "bad", note: ENCODE }),
      await single.write({ id: 1_000_003, src: "bad", note: ENCODE }),
    ];
    assert.ok(poison.every((o) => o.status === "ok"), JSON.stringify(poison));
    // Not a RowBatch at all: dead-lettered at decode, as before.
    const garbage = await jetstream(c.nc).publish(new Subjects().ingestBucket(id, 0), new TextEncoder().encode("not msgpack"));
    await writeGood(1000, 2000);
    await allAcknowledged(outcomes);

    // Every good row becomes visible: the buckets got past their poison messages.
    await good.waitVisible(good.token(), 150_000);
    await everyGoodRowOnce(catalog, id, goodIds);

    // Each bad message is in the dead-letter stream, whole, with its reason.
    const letters = await deadLetters(new Subjects().dlq(id));
    const bySeq = new Map(letters.map((l) => [l.streamSeq, l]));
    const killed = bySeq.get(poison[0]!.seq!);
    assert.ok(killed, `the killing message (seq ${poison[0]!.seq}) is dead-lettered; letters: ${JSON.stringify(letters.map((l) => [l.streamSeq, l.reason]))}`);
    assert.equal(killed.rowIndex, -1);
    assert.match(killed.reason, new RegExp(`^poison message: .* failed \\d+ times; this message alone failed ${LIMITS.failures} times \\(no error was seen: the writer's process died`));
    assert.ok(Buffer.from(String(killed.original), "base64").includes(KILL), "the letter carries the message's bytes");
    for (const p of poison.slice(1)) {
      const l = bySeq.get(p.seq!);
      assert.ok(l, `the message at ${p.seq} whose rows fail every flush is dead-lettered`);
      assert.match(l.reason, new RegExp(`^poison message: .*this message alone failed ${LIMITS.failures} times \\(last error: .*failpoint ingest\\.flush-row`));
      assert.ok(Buffer.from(String(l.original), "base64").includes(ENCODE));
    }
    assert.ok(bySeq.get(garbage.seq)?.reason, "the unreadable payload is dead-lettered too");
    assert.equal(letters.length, 4, `only the bad messages: ${JSON.stringify(letters.map((l) => [l.streamSeq, l.reason]))}`);
  });
  // Bounded: the killing message took at most its attempts and its failures alone (and a couple of deaths more when a
  // commit moved the offset between two of them).
  assert.ok(deaths >= LIMITS.attempts + LIMITS.failures && deaths <= LIMITS.attempts + LIMITS.failures + 2, `the node died ${deaths} times`);
  await single.close();
  await good.close();
});

/** The node's log lines (JSON) of `table`'s writers saying `msg`, with their place in the log. */
function writerLog(table: string, msg: string): Array<{ at: number; bucket: number; error?: string }> {
  const out: Array<{ at: number; bucket: number; error?: string }> = [];
  c.logs("n1")
    .split("\n")
    .forEach((line, at) => {
      let e: { msg?: string; table?: string; bucket?: number; error?: string };
      try {
        e = JSON.parse(line) as typeof e;
      } catch {
        return; // a failpoint's announcement, or the line a killed process left half written
      }
      if (e.msg === msg && e.table === table && e.bucket !== undefined) out.push({ at, bucket: e.bucket, ...(e.error !== undefined ? { error: e.error } : {}) });
    });
  return out;
}

test("poison messages - a message that stalls the decode is dead-lettered, its thread stopped at the deadline; the other bucket, isolating beside it, loses no good message", { timeout: 150_000 }, async () => {
  const name = "poison.stall";
  const catalog = new Catalog(c.warehouse);
  const id = parseIdentifier(name);
  const table = await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, src STRING, note STRING"), options: { bucket: "2", "bucket-key": "id", "natslake.writer.max-attempts": String(ATTEMPTS) } });
  const bucketOfId = createBucketFunction([table.schema.fields.find((f) => f.name === "id")!.type], 2);
  /** The first id from `from` on that goes to `bucket`. */
  const idIn = (bucket: number, from: number): number => {
    let i = from;
    while (bucketOfId([BigInt(i)]) !== bucket) i++;
    return i;
  };
  const { good, single, goodIds, outcomes, writeGood } = await tableProducers(name, (i) => ({ id: i, src: "good", note: `row ${i}` }));
  const writeOne = async (row: { id: number; src: string; note: string }): Promise<BatchOutcome> => {
    const o = await single.write(row);
    assert.equal(o.status, "ok", JSON.stringify(o));
    return o;
  };
  const writeGoodTo = async (bucket: number, from: number, n: number): Promise<void> => {
    for (let k = 0, i = from; k < n; k++, i++) {
      i = idIn(bucket, i);
      goodIds.push(i);
      await writeOne({ id: i, src: "good", note: `row ${i}` });
    }
  };
  /** Where the node's log announced each stall (the failpoint firing: the decode hangs from then on). */
  const hangsAnnounced = (): number[] =>
    c
      .logs("n1")
      .split("\n")
      .flatMap((line, at) => (line.startsWith("failpoint ingest.stall: hang") ? [at] : []));
  // Bucket 0 gets the stalling message. Bucket 1 is isolating meanwhile, for a poison message of its own (rows that
  // fail every flush): what failed before an isolating session had a thread of its own was the good message it was
  // trying alone on the thread the stall stopped — dead-lettered with the stalling one.
  const [STALLING, OTHER] = [0, 1];

  await withNodeLogsOnFailure(c, async () => {
    await writeGood(0, 300);
    await good.waitVisible(good.token(), 60_000);
    await writeGoodTo(OTHER, 2_000_000, 3);
    // Behind the poison message at once, the stream's last message: bucket 1, isolating up to it, tries messages alone
    // until one past it comes.
    const lastId = idIn(STALLING, 2_200_000);
    goodIds.push(lastId);
    const [encode, last] = await Promise.all([writeOne({ id: idIn(OTHER, 2_100_000), src: "bad", note: ENCODE }), writeOne({ id: lastId, src: "good", note: `row ${lastId}` })]);
    assert.ok(encode.seq! < last.seq!, "published in that order");
    await waitFor("the other bucket's poison message dead-lettered", () => deadLettered(id, encode.seq), 90_000, 250);
    const hang = await writeOne({ id: idIn(STALLING, 2_300_000), src: "bad", note: HANG });
    await waitFor("the stall", () => (hangsAnnounced().length > 0 ? true : undefined), 30_000, 50);
    // Tried alone while the shared thread is stalled: the first of them ends the other bucket's isolation.
    await writeGoodTo(OTHER, 2_400_000, 5);
    await waitFor("the stalling message's dead letter", () => deadLettered(id, hang.seq), 90_000, 250);
    await writeGood(1000, 300);
    await allAcknowledged(outcomes);
    await good.waitVisible(good.token(), 60_000);

    await everyGoodRowOnce(catalog, id, goodIds);

    const letters = await deadLetters(new Subjects().dlq(id));
    assert.deepEqual(letters.map((l) => l.streamSeq).sort((a, b) => a - b), [hang.seq!, encode.seq!].sort((a, b) => a - b), `only the poison messages are dead-lettered: ${JSON.stringify(letters.map((l) => [l.streamSeq, l.reason]))}`);
    const stalled = letters.find((l) => l.streamSeq === hang.seq)!;
    assert.equal(stalled.rowIndex, -1);
    assert.match(stalled.reason, new RegExp(`^poison message: .*this message alone failed ${LIMITS.failures} times \\(last error: \\(message ${hang.seq}\\) the writer stalled decoding past ${DEADLINE_MS} ms`));
    assert.ok(Buffer.from(String(stalled.original), "base64").includes(HANG), "the letter carries the message's bytes");
    assert.match(letters.find((l) => l.streamSeq === encode.seq)!.reason, /failpoint ingest\.flush-row/);

    // The stalling bucket's batch stalled the shared thread once, then it read one message at a time at once (no
    // attempts waited for: each would cost a deadline) and the message stalled its own thread.
    const stalls = writerLog(name, "decoding failed; reopening the bucket from the committed offset").filter((e) => e.bucket === STALLING && /stalled decoding past/.test(e.error ?? ""));
    assert.equal(stalls.length, 1 + LIMITS.failures, `the shared thread stalled, then the bucket's own: ${JSON.stringify(stalls)}`);
    const firstHang = hangsAnnounced()[0]!;
    const otherStart = writerLog(name, "reading after the committed offset failed repeatedly: reading one message at a time to find the poison one").filter((e) => e.bucket === OTHER && e.at < firstHang);
    assert.ok(otherStart.length > 0, "the other bucket was isolating when the shared thread stalled");
    const otherEnd = writerLog(name, "the isolated messages are written: reading batches again").filter((e) => e.bucket === OTHER && e.at > otherStart[otherStart.length - 1]!.at);
    assert.ok(otherEnd.length > 0 && otherEnd[0]!.at > firstHang, `and still was then: ${JSON.stringify(otherEnd)}`);

    // Each stall is counted once, on the bucket whose decode stalled (not on the one that shared its thread).
    const counted = new Map<string, number>();
    for (const m of (await scrapeMetrics(metricsPort)).matchAll(/^natslake_bucket_stalls_total\{([^}]*)\} (\S+)$/gm)) {
      if (m[1]!.includes(`table="${name}"`)) counted.set([/bucket="(\d+)"/.exec(m[1]!)?.[1], /stage="(\w+)"/.exec(m[1]!)?.[1]].join(" "), Number(m[2]));
    }
    assert.deepEqual([...counted], [[`${STALLING} decode`, stalls.length]], "natslake_bucket_stalls_total");
  });
  await single.close();
  await good.close();
});

test("poison messages - a message that stalls a partitioned table's decode on the node's main thread: the stall watch kills the node, and after the attempts the message is dead-lettered; every good row lands once", { timeout: 120_000 }, async () => {
  const name = "poison.stall_main";
  const catalog = new Catalog(c.warehouse);
  const id = parseIdentifier(name);
  await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, dt STRING NOT NULL, note STRING"), partitionKeys: ["dt"], options: { bucket: "1", "bucket-key": "id", "natslake.writer.max-attempts": String(ATTEMPTS) } });
  const { good, single, goodIds, outcomes, writeGood } = await tableProducers(name, (i) => ({ id: i, dt: `2026-12-0${1 + (i % 3)}`, note: `row ${i}` }));
  const deathsBefore = deaths;
  const killLines = (): string[] => c.logs("n1").split("\n").filter((l) => l.includes("main thread is blocked past its decodeDeadline"));
  const killsBefore = killLines().length;

  await withNodeLogsOnFailure(c, async () => {
    await writeGood(0, 200);
    const hang = await single.write({ id: 3_000_000, dt: "2026-12-01", note: HANG });
    assert.equal(hang.status, "ok", JSON.stringify(hang));
    await writeGood(1000, 200);
    await allAcknowledged(outcomes);
    await waitFor("the stalling message's dead letter", () => deadLettered(id, hang.seq), 90_000, 250);
    await writeGood(2000, 100);
    await allAcknowledged(outcomes);
    await good.waitVisible(good.token(), 60_000);

    await everyGoodRowOnce(catalog, id, goodIds);
    const letters = await deadLetters(new Subjects().dlq(id));
    assert.deepEqual(letters.map((l) => l.streamSeq), [hang.seq], `only the stalling message is dead-lettered: ${JSON.stringify(letters.map((l) => [l.streamSeq, l.reason]))}`);
    assert.match(letters[0]!.reason, new RegExp(`^poison message: .*this message alone failed ${LIMITS.failures} times \\(no error was seen: the writer's process died`));
    assert.ok(Buffer.from(String(letters[0]!.original), "base64").includes(HANG), "the letter carries the message's bytes");
  });
  // Each death was the stall watch's kill, said in the log: its attempts, then its failures alone (and a couple more
  // when a commit moved the offset between two of them).
  const died = deaths - deathsBefore;
  assert.ok(died >= LIMITS.attempts + LIMITS.failures && died <= LIMITS.attempts + LIMITS.failures + 2, `the node died ${died} times`);
  assert.equal(killLines().length - killsBefore, died, "each death logged by the stall watch");
  await single.close();
  await good.close();
});
