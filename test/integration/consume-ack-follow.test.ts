/**
 * An ack follows its consumer (issue 29): the reader node serving a consumer is SIGKILLed exactly at an ack — when
 * the ack arrives (`consume.ack.received`: not recorded) or once its progress is written and not yet answered
 * (`consume.ack.recorded`) — and the consumer goes on on the other reader: the pending ack is sent again on the new
 * session and resolves (it used to time out on the dead session after 10 s, and `tail` died with a stack trace),
 * every snapshot is handed over once and in order (what the new session sends again is dropped by the client), none
 * is skipped, and the consumer's durable progress is right afterwards. Both the library consumer and `natslake tail
 * --nats … --consumer-id` (no warehouse).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { CommitKind } from "../../src/format/snapshot.ts";
import { readAllRows } from "../../src/scan/read.ts";
import { getConsumer } from "../../src/table/consumers.ts";
import { openConsumer } from "../../cluster/consumer.ts";
import type { Producer } from "../../cluster/producer.ts";
import { LakeError } from "../../src/errors.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

/**
 * A writer-and-committer node `w`, a table with a few snapshots (`initial` of them APPEND), and a reader `r1` armed to
 * SIGKILL itself at the ack `killAt(initial)` it receives, at `point`. The second reader starts later
 * (`startSecondReader`), once the consumer under test has its session on r1 — the only reader until then.
 */
async function clusterWithArmedReader(point: string, killAt: (initial: number) => number, table: string): Promise<{ c: TestCluster; producer: Producer; write: (rounds: number) => Promise<void>; total: () => number; initial: number }> {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  c.startNode("w", ["--roles", "writer,committer"]);
  await new Catalog(c.warehouse).createTable(parseIdentifier(table), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "2", "bucket-key": "id" } });
  const producer = await producerWhenRegistered(c.nc, table);
  let next = 0;
  const write = async (rounds: number): Promise<void> => {
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < 20; k++, next++) void producer.write({ id: next, s: `r${next}` });
      await producer.flush();
      await producer.waitVisible(producer.token(), 60_000);
    }
  };
  await write(3);
  const initial = (await appendSnapshots(c.warehouse, table, 1)).length;
  c.startNode("r1", ["--roles", "reader"], { FAILPOINTS: `${point}:kill@${killAt(initial)}` });
  await started(c, "r1");
  return { c, producer, write, total: () => next, initial };
}

/** Resolves once node `id` says it started (a reader: it answers consume and admin requests). */
const started = (c: TestCluster, id: string): Promise<true> => waitFor(`${id} started`, () => (c.logs(id).includes('"msg":"node started"') ? true : undefined), 60_000, 100);

async function startSecondReader(c: TestCluster): Promise<void> {
  c.startNode("r2", ["--roles", "reader"]);
  await started(c, "r2");
}

/** The APPEND snapshots of the table from `from` to its latest: what a consumer from `snapshot:<from>` must deliver. */
async function appendSnapshots(warehouse: string, table: string, from: number): Promise<number[]> {
  const t = await new Catalog(warehouse).getTable(parseIdentifier(table));
  const out: number[] = [];
  for (let id = from; id <= (await t.snapshots.latestId())!; id++) if ((await t.snapshots.snapshot(id)).commitKind === CommitKind.APPEND) out.push(id);
  return out;
}

/** The ids of the rows snapshot `id` added, in natslake's read order. */
async function deltaIds(warehouse: string, table: string, id: number): Promise<number[]> {
  const t = await new Catalog(warehouse).getTable(parseIdentifier(table));
  return (await readAllRows(t, { incremental: { from: id - 1, to: id } })).map((r) => Number(r["id"]));
}

/** r1 died by its failpoint, as armed (not by anything else). */
async function assertKilledAtAck(c: TestCluster, point: string): Promise<void> {
  await c.waitExit("r1", 60_000);
  assert.equal(c.nodes.get("r1")!.proc.signalCode, "SIGKILL");
  assert.match(c.logs("r1"), new RegExp(`failpoint ${point.replaceAll(".", "\\.")}: SIGKILL`));
}

for (const point of ["consume.ack.received", "consume.ack.recorded"]) {
  test(`consume ack follow - the library consumer's reader SIGKILLed at its 3rd ack (${point}): the ack resolves on the other reader, every snapshot once and in order, the progress right`, { timeout: 240_000 }, async (t) => {
    const table = "ackf.lib";
    const { c, producer, write, total } = await clusterWithArmedReader(point, () => 3, table);
    const nc = await connect({ servers: c.nats.url });
    try {
      await withNodeLogsOnFailure(c, async () => {
        const consumer = await openConsumer({ nc, table, from: "snapshot:1", consumerId: "lib", window: 4, openTimeoutMs: 60_000 });
        assert.equal(consumer.reader, "r1", "the only reader so far");
        await startSecondReader(c);
        const got: Array<{ snapshotId: number; ids: number[] }> = [];
        const ackMs: number[] = [];
        let acked = 0;
        let writing = true;
        const writer = (async () => {
          while (writing) await write(1);
        })();
        for await (const s of consumer) {
          const ids: number[] = [];
          for await (const b of s.batches) ids.push(...[...b.getChild("id")!.toArray()].map(Number));
          got.push({ snapshotId: s.snapshotId, ids });
          assert.ok(got.length < 60, `the reader was never killed at an ack (${consumer.sessions} session(s))`);
          const started = Date.now();
          await s.ack(); // the 3rd kills r1 as it arrives: it must resolve all the same, on r2
          ackMs.push(Date.now() - started);
          acked = s.snapshotId;
          if (consumer.sessions >= 2 && got.length >= 6 && writing) {
            writing = false;
            await writer;
          }
          if (!writing && new Set(got.flatMap((g) => g.ids)).size >= total()) break;
        }
        await producer.close();
        await assertKilledAtAck(c, point);
        assert.equal(consumer.reader, "r2", "the consumer went on on the other reader");
        assert.equal(consumer.sessions, 2, "one new session: the ack did not make it open more");
        // The 3rd ack waited for the new session (the reader's silence, then the open), not for a 10 s timeout twice.
        assert.ok(ackMs[2]! > 1000 && ackMs[2]! < 15_000, `the ack pending at the kill took ${ackMs[2]} ms`);
        t.diagnostic(`the ack pending at the kill resolved after ${ackMs[2]} ms (the others: at most ${Math.max(...ackMs.filter((_, i) => i !== 2))} ms)`);
        // Every snapshot once, in order, none skipped; each with exactly the rows natslake's read of it gives.
        const delivered = got.map((g) => g.snapshotId);
        assert.deepEqual(delivered, await appendSnapshots(c.warehouse, table, 1), "every APPEND snapshot once, in order");
        for (const g of got) assert.deepEqual(g.ids, await deltaIds(c.warehouse, table, g.snapshotId), `snapshot ${g.snapshotId}'s rows`);
        assert.equal(new Set(got.flatMap((g) => g.ids)).size, total(), "every row");
        assert.equal(got.flatMap((g) => g.ids).length, total(), "no row twice");
        // The durable progress: after the last ack, whatever r1 did or did not record before it died.
        const tbl = await new Catalog(c.warehouse).getTable(parseIdentifier(table));
        assert.equal((await getConsumer(tbl, "lib"))?.nextSnapshot, acked + 1);
        await consumer.close();
        // An ack that cannot be delivered any more — its consumer was closed — is refused with a LakeError saying so.
        const other = await openConsumer({ nc, table, from: "snapshot:1" });
        const first = await other[Symbol.asyncIterator]().next();
        for await (const b of first.value!.batches) assert.ok(b.numRows >= 0);
        await other.close();
        await assert.rejects(first.value!.ack(), (e: unknown) => e instanceof LakeError && /snapshot \d+ was not acknowledged .*the consumer was closed/.test(e.message));
      }, 80);
    } finally {
      await nc.close();
      await c.stop();
    }
  });
}

test("consume ack follow - `natslake tail --nats --consumer-id` (no warehouse): its reader SIGKILLed at an ack, the tail goes on on the other reader, prints every snapshot once in order, exits 0 without an error", { timeout: 240_000 }, async () => {
  const table = "ackf.tail";
  const point = "consume.ack.received";
  // Its first acks are those of the snapshots there at its start; the next one kills r1.
  const { c, producer, write, total } = await clusterWithArmedReader(point, (initial) => initial + 1, table);
  const env = { ...process.env };
  delete env["NATSLAKE_WAREHOUSE"];
  const tails: ChildProcess[] = [];
  try {
    await withNodeLogsOnFailure(c, async () => {
      const child = spawn(process.execPath, [BIN, "tail", table, "--nats", c.nats.url, "--from", "snapshot:1", "--consumer-id", "tailer", "--with-snapshot-id"], { stdio: ["ignore", "pipe", "pipe"], env });
      tails.push(child);
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once("exit", (code, signal) => r({ code, signal })));
      let out = "";
      let err = "";
      child.stdout.on("data", (b: Buffer) => (out += b.toString()));
      child.stderr.on("data", (b: Buffer) => (err += b.toString()));
      const printed = (): Array<{ id: number; snapshot: number }> =>
        out
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l) as { id: number; _snapshot: number })
          .map((r) => ({ id: r.id, snapshot: r._snapshot }));
      // The tail took its session on r1 (the only reader) and printed the snapshots there.
      await waitFor("the tail's first snapshots", () => (printed().length >= total() ? true : undefined), 60_000, 100).catch((e: Error) => assert.fail(`${e.message}\n--- the tail's stderr ---\n${err}`));
      await startSecondReader(c);
      // More snapshots: the tail's next ack kills r1; it must go on on r2 with what lands meanwhile and after.
      await write(4);
      await c.waitExit("r1", 60_000);
      await write(4);
      await producer.close();
      const snapshots = await appendSnapshots(c.warehouse, table, 1);
      const last = snapshots.at(-1)!;
      const t = await new Catalog(c.warehouse).getTable(parseIdentifier(table));
      await waitFor("the tail printed and acknowledged every snapshot", async () => ((await getConsumer(t, "tailer"))?.nextSnapshot === last + 1 ? true : undefined), 60_000, 200);
      assert.equal(child.exitCode, null, `the tail still runs:\n${err}`);
      child.kill("SIGINT");
      const r = await exited;
      assert.deepEqual(r, { code: 0, signal: null }, err);
      assert.doesNotMatch(err, /error|Timeout|\n\s+at /, "no error and no stack trace");
      await assertKilledAtAck(c, point);
      // Every snapshot once, in order (rows in natslake's read order within each), every row once.
      const rows = printed();
      const order = rows.map((p) => p.snapshot).filter((s, i, a) => i === 0 || a[i - 1] !== s);
      assert.deepEqual(order, snapshots, "every APPEND snapshot once, in order");
      for (const s of snapshots) assert.deepEqual(rows.filter((p) => p.snapshot === s).map((p) => p.id), await deltaIds(c.warehouse, table, s), `snapshot ${s}'s rows`);
      assert.equal(rows.length, total(), "no row twice");
      // Durable progress: a new tail with the same id has nothing to print.
      const again = spawn(process.execPath, [BIN, "tail", table, "--nats", c.nats.url, "--consumer-id", "tailer", "--for", "3s"], { stdio: ["ignore", "pipe", "pipe"], env });
      tails.push(again);
      let againOut = "";
      let againErr = "";
      again.stdout.on("data", (b: Buffer) => (againOut += b.toString()));
      again.stderr.on("data", (b: Buffer) => (againErr += b.toString()));
      const againCode = await new Promise<number | null>((res) => again.once("exit", res));
      assert.equal(againCode, 0, againErr);
      assert.equal(againOut, "", "everything was acknowledged: a restart prints nothing again");
    }, 80);
  } finally {
    for (const t of tails) if (t.exitCode === null && t.signalCode === null) t.kill("SIGKILL");
    await c.stop();
  }
});
