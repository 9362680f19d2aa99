/**
 * Poison messages (issue 29): a message that kills its writer's process each time it is read, and messages whose rows
 * make every flush that holds them fail, mixed into a load of good rows on a running node (failpoints armed with
 * markers: src/failpoints.ts). Each is dead-lettered whole, with its reason, after a bounded number of attempts —
 * counted in KV across the node's deaths (actors/poison-guard.ts) — and the buckets move on: every good row is in the
 * table exactly once, every bad message is in the dead-letter stream, and no poison row is in the table.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startCluster, producerWhenRegistered, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readRows } from "../../src/scan/read.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { createProducer, type BatchOutcome } from "../../cluster/producer.ts";
import type { DeadLetter } from "../../actors/wire/messages.ts";
import { poisonLimits } from "../../actors/poison-guard.ts";

const KILL = "POISON-KILL";
const ENCODE = "POISON-ENCODE";
const NAME = "poison.mix";
/** The table's natslake.writer.max-attempts: low, as each death of the node costs a restart (seconds). */
const ATTEMPTS = 1;
const LIMITS = poisonLimits(ATTEMPTS);
let c: TestCluster;
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
  c = await startCluster({ nodes: 1, env: { FAILPOINTS: `ingest.message[${KILL}]:kill,ingest.flush-row[${ENCODE}]:throw` } });
  supervise();
});
after(async () => {
  stopping = true;
  await c.stop();
});

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
    const settled = await Promise.all(outcomes);
    assert.ok(settled.every((o) => o.status === "ok"), JSON.stringify(settled.find((o) => o.status !== "ok")));

    // Every good row becomes visible: the buckets got past their poison messages.
    await good.waitVisible(good.token(), 150_000);
    const ids = new Map<number, number>();
    for await (const r of readRows(await catalog.getTable(id), { projection: ["id"] })) ids.set(Number(r["id"]), (ids.get(Number(r["id"])) ?? 0) + 1);
    const missing = goodIds.filter((i) => ids.get(i) !== 1);
    assert.deepEqual(missing, [], "every good row exactly once");
    assert.equal(ids.size, goodIds.length, "no poison row in the table");

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
