/**
 * A partitioned table through the cluster (the writers' row path: each row is routed to its partition on the
 * writer's thread): client rows over three days land exactly once in their partitions; raw rows with a value of the
 * wrong type are dead letters with the reason and the raw message's sequence, while the rest of their message lands;
 * pypaimon reads the same rows
 * per partition.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { producerWhenRegistered, startCluster, waitFor } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readRows } from "../../src/scan/read.ts";
import { paimonRead } from "../helpers/python.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import type { DeadLetter } from "../../actors/wire/messages.ts";

const DAYS = ["2026-11-27", "2026-11-28", "2026-11-29"];
const CLIENT_ROWS = 30_000;
const RAW_BASE = 1_000_000;

test("cluster - a partitioned table: rows land exactly once in their partitions, bad raw rows are dead letters, pypaimon agrees", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 1 });
  try {
    const catalog = new Catalog(c.warehouse);
    await catalog.createTable(parseIdentifier("it.parts"), {
      columns: parseColumnList("id BIGINT NOT NULL, day STRING NOT NULL, n INT"),
      partitionKeys: ["day"],
      options: { bucket: "2", "bucket-key": "id" },
    });
    const producer = await producerWhenRegistered(c.nc, "it.parts", 60_000);
    const pending: Array<Promise<{ status: string }>> = [];
    for (let i = 0; i < CLIENT_ROWS; i++) pending.push(producer.write({ id: i, day: DAYS[i % 3]!, n: i % 100 }));
    await producer.flush();
    assert.equal((await Promise.all(pending)).filter((o) => o.status !== "ok").length, 0, "every client batch acknowledged");

    // Raw JSON: in each message of 4 rows, the third has a string for the INT column n.
    const js = jetstream(c.nc);
    const subjects = new Subjects();
    const id = parseIdentifier("it.parts");
    const rawSeqs: number[] = [];
    for (let m = 0; m < 5; m++) {
      const rows = Array.from({ length: 4 }, (_, k) => ({ id: RAW_BASE + m * 4 + k, day: DAYS[k % 3], n: k === 2 ? "many" : k }));
      rawSeqs.push((await js.publish(subjects.ingestRaw(id), JSON.stringify(rows), { msgID: `parts-raw-${m}` })).seq);
    }
    const expected = CLIENT_ROWS + 5 * 3;
    await waitFor("every good row committed", async () => {
      const s = await (await catalog.getTable(id)).snapshots.latest();
      return s && s.totalRecordCount >= expected ? s : undefined;
    }, 60_000, 200);
    await producer.close();

    const t = await catalog.getTable(id);
    assert.equal((await t.snapshots.latest())!.totalRecordCount, expected, "no row twice");
    const seen = new Map<number, string>();
    for await (const row of readRows(t)) {
      const rid = Number(row["id"]);
      assert.ok(!seen.has(rid), `id ${rid} appears twice`);
      seen.set(rid, String(row["day"]));
    }
    assert.equal(seen.size, expected);
    for (let i = 0; i < CLIENT_ROWS; i++) assert.equal(seen.get(i), DAYS[i % 3], `client row ${i} in its day`);
    for (let m = 0; m < 5; m++) for (const k of [0, 1, 3]) assert.ok(seen.has(RAW_BASE + m * 4 + k), `raw row ${RAW_BASE + m * 4 + k} missing`);

    // The five bad rows are in the dead-letter stream, each with its reason and original values.
    const jsm = await jetstreamManager(c.nc);
    const letters = await waitFor("five dead letters", async () => {
      const info = await jsm.streams.info(subjects.dlqStream);
      return info.state.messages >= 5 ? info.state.messages : undefined;
    }, 30_000, 200);
    assert.equal(letters, 5);
    const consumer = await js.consumers.get(subjects.dlqStream);
    const reasons: string[] = [];
    const traced: number[] = [];
    for (let i = 0; i < 5; i++) {
      const m = await consumer.next({ expires: 5000 });
      assert.ok(m !== null, "dead letter readable");
      const letter = JSON.parse(new TextDecoder().decode(m.data)) as DeadLetter;
      // Checked by the router, so the letter names what the publisher sent: the raw message's sequence (as its
      // publish acknowledgement gave it) and the row's index in that message.
      assert.equal(letter.stage, "router");
      assert.equal(letter.rowIndex, 2);
      traced.push(letter.streamSeq);
      assert.deepEqual(letter.original, { id: RAW_BASE + rawSeqs.indexOf(letter.streamSeq) * 4 + 2, day: DAYS[2], n: "many" });
      reasons.push(letter.reason);
    }
    assert.deepEqual(traced.sort((a, b) => a - b), rawSeqs);
    for (const r of reasons) assert.match(r, /column n/);

    // Per partition, pypaimon reads the same ids.
    for (const day of DAYS) {
      const theirs = await paimonRead(c.warehouse, "it.parts", { columns: ["id"], partition: { day }, timeoutMs: 120_000 });
      const ours = [...seen].filter(([, d]) => d === day).map(([rid]) => rid).sort((a, b) => a - b);
      assert.deepEqual(theirs.map((r) => Number(r["id"])).sort((a, b) => a - b), ours, `partition day=${day}`);
    }
  } finally {
    await c.stop();
  }
});
