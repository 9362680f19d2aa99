/**
 * Rows over NATS from reader nodes (actors/wire/consume.ts): consumers that never touch the warehouse receive each
 * snapshot's rows as Arrow batches — what natslake's own read of that snapshot gives; a stalled consumer does not hold
 * back a fast one; a reader node killed under a consumer: it goes on from its last acknowledged snapshot on another
 * reader; a Python consumer (nats-py + pyarrow) speaks the same protocol; bad requests are refused with the reason;
 * a large full start is handed over at the caller's pace within the window, and survives its reader's death halfway.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readAllRows } from "../../src/scan/read.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { getConsumer } from "../../src/table/consumers.ts";
import { openConsumer, type ConsumedSnapshot } from "../../cluster/consumer.ts";
import { WINDOW_BYTES_PER_CHUNK } from "../../actors/wire/consume.ts";
import { REPO_ROOT, paimonWrite, parseJsonLines, runPython } from "../helpers/python.ts";
import { join } from "node:path";

/** A snapshot as received: its batches read to the end (they are streamed), the ids of its rows. */
interface Got {
  snapshotId: number;
  kind: "full" | "delta";
  ids: number[];
}

async function take(s: ConsumedSnapshot): Promise<Got> {
  const ids: number[] = [];
  for await (const b of s.batches) ids.push(...[...b.getChild("id")!.toArray()].map(Number));
  return { snapshotId: s.snapshotId, kind: s.kind, ids };
}
const ids = (g: Got): number[] => g.ids;

/** Writes `rounds` small batches through the producer, one commit each; resolves with the number of rows. */
async function trickle(c: TestCluster, table: string, rounds: number, from: number, gapMs = 80): Promise<number> {
  const producer = await producerWhenRegistered(c.nc, table);
  let next = from;
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < 20; k++, next++) void producer.write({ id: next, s: `r${next}` });
    await producer.flush();
    await new Promise((res) => setTimeout(res, gapMs));
  }
  await producer.waitVisible(producer.token(), 60_000);
  await producer.close();
  return next;
}

async function createTable(c: TestCluster, name: string, options: Record<string, string> = {}): Promise<void> {
  await new Catalog(c.warehouse).createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "2", "bucket-key": "id", ...options } });
}

test("consume - two consumers over NATS, one stalled: the fast one gets every snapshot's rows (natslake's read of it) meanwhile; a killed reader is replaced, no acknowledged snapshot comes again; the stalled one, pulled again, gets every row", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 2, commitInterval: "100ms" });
  const nc = await connect({ servers: c.nats.url });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "con.over";
      await createTable(c, name);
      const first = await trickle(c, name, 3, 0);
      const fast = await openConsumer({ nc, table: name, from: "full", consumerId: "fast", window: 4 });
      const stalled = await openConsumer({ nc, table: name, from: "snapshot:1", consumerId: "stalled", window: 2 });
      const stalledIter = stalled[Symbol.asyncIterator]();
      const firstStalled = await stalledIter.next(); // one snapshot taken, then nothing pulled for a while
      assert.equal(firstStalled.done, false);
      const firstStalledGot = await take(firstStalled.value!);
      const got: Got[] = [];
      const fastRun = (async () => {
        for await (const s of fast) {
          const g = await take(s);
          got.push(g);
          await s.ack();
          if (g.ids.includes(-1)) break;
        }
      })();
      let total = await trickle(c, name, 25, first);
      // The fast consumer has everything while the stalled one has not pulled again.
      await waitFor("the fast consumer got every row", async () => (new Set(got.flatMap(ids)).size >= total ? true : undefined), 60_000, 100);
      // Its items are exactly natslake's reads of those snapshots: a full scan, then each delta.
      const t = await new Catalog(c.warehouse).getTable(parseIdentifier(name));
      assert.equal(got[0]!.kind, "full");
      for (const s of got) {
        const want = (await readAllRows(t, s.kind === "full" ? { snapshotId: s.snapshotId } : { incremental: { from: s.snapshotId - 1, to: s.snapshotId } })).map((r) => Number(r["id"]));
        assert.deepEqual(ids(s).sort((a, b) => a - b), want.sort((a, b) => a - b), `snapshot ${s.snapshotId} (${s.kind})`);
      }
      assert.equal(new Set(got.flatMap(ids)).size, got.flatMap(ids).length, "no row twice");
      // Kill the reader serving the fast consumer: it goes on on the other one, from its progress.
      const victim = fast.reader;
      const ackedBefore = (await getConsumer(t, "fast"))!.nextSnapshot;
      const seenBefore = got.length;
      c.signal(victim, "SIGKILL");
      const more = await trickle(c, name, 10, total);
      await waitFor("the fast consumer got the rows written after its reader died", async () => (new Set(got.flatMap(ids)).size >= more ? true : undefined), 60_000, 100);
      assert.ok(fast.sessions >= 2, "a second session was opened");
      assert.notEqual(fast.reader, victim, "on the other reader");
      for (const s of got.slice(seenBefore)) assert.ok(s.snapshotId >= ackedBefore, `snapshot ${s.snapshotId} was acknowledged before the reader died (next ${ackedBefore}): never again`);
      total = more;
      // The stalled consumer, pulled again, still gets every row (at least once; exactly once by snapshot id).
      const stalledSeen = new Map<number, number[]>([[firstStalledGot.snapshotId, firstStalledGot.ids]]);
      await firstStalled.value!.ack();
      while (new Set([...stalledSeen.values()].flat()).size < total) {
        const n = await stalledIter.next();
        assert.equal(n.done, false);
        stalledSeen.set(n.value!.snapshotId, (await take(n.value!)).ids);
        await n.value!.ack();
      }
      const all = [...stalledSeen.values()].flat();
      assert.equal(new Set(all).size, total, "the stalled consumer, once pulling, gets every row");
      assert.equal(all.length, total, "once per snapshot id");
      await fast.close();
      await stalled.close();
      void fastRun.catch(() => undefined);
    }, 60);
  } finally {
    await nc.close();
    await c.stop();
  }
});

test("consume - a Python consumer (nats-py + pyarrow) reads the same rows over the same protocol and records its progress", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "con.py";
      await createTable(c, name);
      const rows = await trickle(c, name, 4, 0);
      const t = await new Catalog(c.warehouse).getTable(parseIdentifier(name));
      const latest = (await t.snapshots.latestId())!;
      const out = await runPython(join(REPO_ROOT, "examples/python/consume.py"), ["--nats", c.nats.url, "--table", name, "--snapshots", "1", "--from", "full", "--consumer-id", "py", "--window", "2", "--jsonl"]);
      const got = parseJsonLines(out);
      assert.deepEqual(got.map((r) => Number(r["id"])).sort((a, b) => a - b), Array.from({ length: rows }, (_, i) => i), "the full scan: every row once");
      assert.ok(got.every((r) => r["_snapshot"] === latest && typeof r["s"] === "string"));
      assert.equal((await getConsumer(t, "py"))?.nextSnapshot, latest + 1, "its ack was recorded as Paimon consumer progress");
      const refused = await runPython(join(REPO_ROOT, "examples/python/consume.py"), ["--nats", c.nats.url, "--table", name, "--snapshots", "1", "--columns", "id,nope"]).then(
        () => "",
        (e: Error) => e.message,
      );
      assert.match(refused, /refused: .*nope/);
    }, 60);
  } finally {
    await c.stop();
  }
});

test("consume - bad requests are refused with the reason: an unknown table or column, an expired start (naming the earliest), a bad mode; a primary-key table's full start comes with row kinds", { timeout: 120_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "100ms" });
  const nc = await connect({ servers: c.nats.url });
  try {
    const name = "con.bad";
    await createTable(c, name, { "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "snapshot.time-retained": "1 ms" });
    await trickle(c, name, 4, 0, 200);
    await expireSnapshots(await new Catalog(c.warehouse).getTable(parseIdentifier(name)));
    const earliest = (await (await new Catalog(c.warehouse).getTable(parseIdentifier(name))).snapshots.earliestId())!;
    assert.ok(earliest > 1);
    await assert.rejects(openConsumer({ nc, table: "con.missing" }), /con\.missing/);
    await assert.rejects(openConsumer({ nc, table: name, projection: ["id", "nope"] }), /nope/);
    await assert.rejects(openConsumer({ nc, table: name, from: "snapshot:1" }), new RegExp(`snapshot 1 of ${name} was expired: the earliest snapshot retained is ${earliest}`));
    await assert.rejects(openConsumer({ nc, table: name, from: "whenever" }), /unknown scan mode 'whenever'/);
    await assert.rejects(openConsumer({ nc, table: name, window: 0 }), /window/);
    // A primary-key table Paimon wrote: its full start is the merged table, each row with its kind (+I).
    await paimonWrite({ warehouse: c.warehouse, table: "con.pk", create: { columns: [["id", "BIGINT NOT NULL"], ["s", "STRING"]], primaryKeys: ["id"], options: { bucket: "1", "file.format": "parquet" } }, batches: [[{ id: 1, s: "a" }, { id: 2, s: "b" }], [{ id: 1, s: "a2" }]], overwrite: null });
    const pk = await waitFor("con.pk served", async () => openConsumer({ nc, table: "con.pk", from: "full" }).catch(() => undefined), 60_000, 500);
    try {
      for await (const snap of pk) {
        const rows: string[] = [];
        for await (const b of snap.batches) for (let i = 0; i < b.numRows; i++) rows.push(`${String(b.getChild("id")!.get(i))} ${String(b.getChild("s")!.get(i))} ${String(b.getChild("_row_kind")!.get(i))}`);
        assert.deepEqual(rows.sort(), ["1 a2 +I", "2 b +I"]);
        break;
      }
    } finally {
      await pk.close();
    }
  } finally {
    await nc.close();
    await c.stop();
  }
});

test("consume - a large full start is delivered within the window (the caller's pace), ack only after its last batch; its reader SIGKILLed halfway: the snapshot goes on from its next row on the other reader, every row once, in order", { timeout: 300_000 }, async () => {
  const c = await startCluster({ nodes: 2, commitInterval: "100ms" });
  const nc = await connect({ servers: c.nats.url });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "con.large";
      await createTable(c, name);
      // ~40k rows of incompressible text: some 8 MB of Arrow, dozens of chunks.
      const producer = await producerWhenRegistered(c.nc, name);
      const rows = 40_000;
      for (let i = 0; i < rows; i++) void producer.write({ id: i, s: randomBytes(150).toString("base64") });
      await producer.flush();
      await producer.waitVisible(producer.token(), 120_000);
      await producer.close();
      const t = await new Catalog(c.warehouse).getTable(parseIdentifier(name));
      const snapshotId = (await t.snapshots.latestId())!;
      const want = (await readAllRows(t, { snapshotId, projection: ["id"] })).map((r) => Number(r["id"]));
      const window = 2;
      const consumer = await openConsumer({ nc, table: name, from: `snapshot-full:${snapshotId}`, consumerId: "large", window });
      const it = consumer[Symbol.asyncIterator]();
      const first = await it.next();
      assert.equal(first.done, false);
      const s = first.value!;
      assert.equal(s.snapshotId, snapshotId);
      assert.equal(s.kind, "full");
      const batches = s.batches[Symbol.asyncIterator]();
      const got: number[] = [];
      const takeBatch = async (): Promise<boolean> => {
        const b = await batches.next();
        if (b.done === true) return false;
        got.push(...[...b.value.getChild("id")!.toArray()].map(Number));
        return true;
      };
      assert.ok(await takeBatch());
      // The caller pauses: the client holds what the window allows, no more, while most of the snapshot is unsent.
      await new Promise((r) => setTimeout(r, 1500));
      assert.ok(consumer.buffered <= window, `${consumer.buffered} chunks held, window ${window}`);
      // And in bytes: less than the window's bytes before the last chunk the reader sent (protocol step 3).
      const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
      assert.ok(consumer.bufferedBytes < window * WINDOW_BYTES_PER_CHUNK + maxPayload, `${consumer.bufferedBytes} bytes held, window ${window} (${window * WINDOW_BYTES_PER_CHUNK} bytes)`);
      assert.ok(got.length < rows / 4, "most of the snapshot is still on the reader's side");
      await assert.rejects(s.ack(), /read its batches to the end before ack/);
      for (let k = 0; k < 5; k++) assert.ok(await takeBatch());
      // The reader serving it dies halfway: the client moves to the other one, which sends the snapshot again from
      // its start; what was received already is dropped, the caller goes on with the next row.
      const victim = consumer.reader;
      c.signal(victim, "SIGKILL");
      while (await takeBatch());
      assert.ok(consumer.sessions >= 2, "a second session was opened");
      assert.notEqual(consumer.reader, victim);
      assert.equal(got.length, rows, "every row once");
      assert.deepEqual(got, want, "in natslake's read order");
      await s.ack();
      assert.equal((await getConsumer(t, "large"))?.nextSnapshot, snapshotId + 1, "acknowledged after its last batch");
      await consumer.close();
    }, 60);
  } finally {
    await nc.close();
    await c.stop();
  }
});
