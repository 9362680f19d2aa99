/**
 * The reader's fan-out (actors/consume-feed.ts) on a real cluster, consumers over NATS:
 * - eight consumers with four different projections / partition filters at once: each gets exactly the rows each
 *   snapshot added (natslake's incremental read in the same order; pypaimon's batch reads for the unprojected one),
 *   consumers of one projection get identical deliveries, and the reader read each snapshot once per projection
 *   (its metrics), not once per consumer;
 * - a stalled consumer next to a fast one, with a small feed memory: the fast one gets every snapshot meanwhile, the
 *   feed's memory stays within its cap (the oldest shared reads are dropped), and the stalled one, pulled again,
 *   reads its backlog itself and gets every row once per snapshot;
 * - sessions joining mid-stream (from latest, and from an older snapshot, catching up): no snapshot missed or
 *   repeated, and each snapshot's rows identical, in order, to what the consumer there from the start received.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import type * as arrow from "apache-arrow";
import { freePort } from "../../cluster/local/servers.ts";
import { openConsumer, type Consumer } from "../../cluster/consumer.ts";
import { recordBatchToRows } from "../../src/codec/columns/batch-to-rows.ts";
import { CommitKind } from "../../src/format/snapshot.ts";
import { toJsonValue } from "../../src/format/values.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import type { Table } from "../../src/table/table.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { paimonRead } from "../helpers/python.ts";
import { readJson, sortRows } from "../helpers/tables.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";

type JsonRow = Record<string, unknown>;

interface Delivery {
  snapshotId: number;
  kind: "full" | "delta";
  rows: JsonRow[];
}

/** A consumer read in the background: every snapshot, its batches to the end, its rows rendered like readJson. */
interface Follow {
  consumer: Consumer;
  got: Delivery[];
  stop(): Promise<void>;
}

function follow(consumer: Consumer, table: Table, projection?: string[]): Follow {
  const fields = (projection ?? table.schema.fields.map((f) => f.name)).map((n) => table.schema.fields.find((f) => f.name === n)!);
  const got: Delivery[] = [];
  let failure: unknown = null;
  const run = (async () => {
    for await (const s of consumer) {
      const rows: JsonRow[] = [];
      for await (const b of s.batches) rows.push(...render(fields, b));
      got.push({ snapshotId: s.snapshotId, kind: s.kind, rows });
    }
  })().catch((e: unknown) => (failure = e));
  return {
    consumer,
    got,
    stop: async () => {
      await consumer.close();
      await run;
      if (failure !== null) throw failure;
    },
  };
}

function render(fields: Table["schema"]["fields"], batch: arrow.RecordBatch): JsonRow[] {
  return recordBatchToRows(fields, batch).map((r) => Object.fromEntries(fields.map((f) => [f.name, toJsonValue(f.type, r[f.name] ?? null)])));
}

const idsOf = (ds: Delivery[]): number[] => ds.flatMap((d) => d.rows.map((r) => Number(r["id"])));

/** Writes `rounds` rounds of `perRound` rows through the producer, one flush (mostly one snapshot) each. */
async function trickle(c: TestCluster, table: string, rounds: number, perRound: number, row: (id: number) => JsonRow, gapMs = 100, from = 0): Promise<number> {
  const producer = await producerWhenRegistered(c.nc, table);
  let next = from;
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < perRound; k++, next++) void producer.write(row(next));
    await producer.flush();
    await new Promise((res) => setTimeout(res, gapMs));
  }
  await producer.waitVisible(producer.token(), 60_000);
  await producer.close();
  return next;
}

/** The APPEND snapshots of the table in [from, to] (what a consumer there is delivered). */
async function appendsBetween(t: Table, from: number, to: number): Promise<number[]> {
  const out: number[] = [];
  for (let id = from; id <= to; id++) if ((await t.snapshots.snapshot(id)).commitKind === CommitKind.APPEND) out.push(id);
  return out;
}

/** A counter or gauge of the node's /metrics, summed over the series whose labels include `labels`. */
async function metric(port: number, name: string, labels: Record<string, string>): Promise<number> {
  const body = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  let sum = 0;
  for (const line of body.split("\n")) {
    const m = new RegExp(`^${name}\\{([^}]*)\\} (\\S+)`).exec(line);
    if (m === null) continue;
    const have = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[2]);
  }
  return sum;
}

async function startOneNode(extra: string[] = []): Promise<{ c: TestCluster; port: number }> {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  const port = await freePort();
  c.startNode("n1", ["--metrics-port", String(port), ...extra]);
  return { c, port };
}

test("consume fan-out - eight consumers, four projections/filters at once: each gets exactly the rows of each snapshot (natslake and pypaimon reads); each snapshot read once per projection, not per consumer", { timeout: 300_000 }, async () => {
  const { c, port } = await startOneNode();
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "fan.many";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL, s STRING, p STRING"), partitionKeys: ["p"], options: { bucket: "2", "bucket-key": "id" } });
      const t = await catalog.getTable(parseIdentifier(name));
      const specs: Array<{ key: string; projection?: string[]; partition?: Record<string, string> }> = [
        ...Array.from({ length: 3 }, () => ({ key: "id,s", projection: ["id", "s"] })),
        ...Array.from({ length: 2 }, () => ({ key: "id", projection: ["id"] })),
        ...Array.from({ length: 2 }, () => ({ key: "p=a", partition: { p: "a" } })),
        { key: "all" },
      ];
      await producerWhenRegistered(c.nc, name).then((p) => p.close()); // the node serves the table
      const follows = await Promise.all(
        specs.map(async (sp) => follow(await openConsumer({ nc: c.nc, table: name, from: "latest", ...(sp.projection ? { projection: sp.projection } : {}), ...(sp.partition ? { partition: sp.partition } : {}) }), t, sp.projection)),
      );
      const row = (id: number): JsonRow => ({ id, s: `s${id}`, p: id % 2 === 0 ? "a" : "b" });
      const total = await trickle(c, name, 8, 30, row);
      const wanted = (sp: (typeof specs)[number]): number => (sp.partition ? total / 2 : total);
      await waitFor("every consumer has its rows", () => (follows.every((f, i) => idsOf(f.got).length >= wanted(specs[i]!)) ? true : undefined), 60_000, 100);
      for (const f of follows) await f.stop();
      const latest = (await t.snapshots.latestId())!;
      for (const [i, f] of follows.entries()) {
        const sp = specs[i]!;
        const label = `consumer ${i} (${sp.key})`;
        assert.deepEqual(idsOf(f.got).sort((a, b) => a - b), Array.from({ length: total }, (_, k) => k).filter((k) => !sp.partition || k % 2 === 0), `${label}: every row of its filter, once`);
        assert.ok(f.got.every((d) => d.kind === "delta"));
        const ids = f.got.map((d) => d.snapshotId);
        assert.deepEqual(ids, [...new Set(ids)].sort((a, b) => a - b), `${label}: snapshots in order, none twice`);
        assert.deepEqual(ids, await appendsBetween(t, ids[0]!, latest), `${label}: no APPEND snapshot missed`);
        for (const d of f.got) {
          const want = await readJson(t, { incremental: { from: d.snapshotId - 1, to: d.snapshotId }, ...(sp.projection ? { projection: sp.projection } : {}), ...(sp.partition ? { partition: [sp.partition["p"]!] } : {}) });
          assert.deepEqual(d.rows, want, `${label}: snapshot ${d.snapshotId}'s rows, in natslake's read order`);
        }
        // Consumers of one projection received the same thing (the same shared reads).
        const first = follows[specs.findIndex((x) => x.key === sp.key)]!;
        const common = f.got.filter((d) => first.got.some((e) => e.snapshotId === d.snapshotId));
        for (const d of common) assert.deepEqual(d.rows, first.got.find((e) => e.snapshotId === d.snapshotId)!.rows);
      }
      // The unprojected consumer against pypaimon: snapshot s's rows are those pypaimon reads at s and not at s − 1.
      const all = follows[specs.findIndex((x) => x.key === "all")]!;
      const key = (r: JsonRow): string => JSON.stringify(r);
      for (const d of all.got) {
        const [now, before] = await Promise.all([paimonRead(c.warehouse, name, { snapshot: d.snapshotId }), d.snapshotId > 1 ? paimonRead(c.warehouse, name, { snapshot: d.snapshotId - 1 }) : Promise.resolve([])]);
        const had = new Set(before.map(key));
        assert.deepEqual(sortRows(d.rows), sortRows(now.filter((r) => !had.has(key(r)))), `snapshot ${d.snapshotId}: what pypaimon reads there and not before`);
      }
      // Read once per projection: the reads equal the distinct snapshots each projection's consumers got; all their
      // deliveries came from those reads.
      const reads = await metric(port, "natslake_consume_feed_snapshots_total", { table: name, outcome: "read" });
      const shared = await metric(port, "natslake_consume_feed_snapshots_total", { table: name, outcome: "shared" });
      const perKey = new Map<string, Set<number>>();
      for (const [i, f] of follows.entries()) for (const d of f.got) (perKey.get(specs[i]!.key) ?? perKey.set(specs[i]!.key, new Set()).get(specs[i]!.key)!).add(d.snapshotId);
      const distinct = [...perKey.values()].reduce((n, s) => n + s.size, 0);
      const deliveries = follows.reduce((n, f) => n + f.got.length, 0);
      assert.ok(follows.every((f) => f.consumer.sessions === 1), "no consumer changed sessions");
      assert.equal(reads, distinct, `one read per snapshot and projection (${reads}), not one per consumer (${deliveries} deliveries)`);
      assert.equal(shared, deliveries, "every delivery came from a shared read");
      // The feeds decoded the files the writers announced before their snapshots linked, and the loads took them.
      const taken = await metric(port, "natslake_consume_feed_files_total", { table: name, outcome: "taken" });
      const early = await metric(port, "natslake_consume_feed_files_total", { table: name, outcome: "early" });
      assert.ok(taken > 0 && taken <= early, `files decoded ahead and taken by a load: ${taken} of ${early}`);
      // The reader's part of the delivery latency (link → the rows sent) is measured for the deltas it delivered.
      const measured = await metric(port, "natslake_consume_delivery_ms_count", { table: name });
      assert.ok(measured > 0 && measured <= deliveries, `${measured} deliveries measured of ${deliveries}`);
      // Where it went, by stage: each shared read planned and read once; the notifications' arrival was timed.
      for (const stage of ["plan", "read"]) assert.equal(await metric(port, "natslake_consume_stage_ms_count", { table: name, stage }), reads, `${stage}: one per shared read`);
      assert.ok((await metric(port, "natslake_consume_stage_ms_count", { table: name, stage: "notified" })) > 0, "the notifications' arrival is timed");
    }, 60);
  } finally {
    await c.stop();
  }
});

test("consume fan-out - a stalled consumer next to a fast one: the fast one gets every snapshot meanwhile, the feed stays within its memory cap; the stalled one, pulled again, reads its backlog itself and gets every row", { timeout: 300_000 }, async () => {
  const cap = 256 * 1024;
  const { c, port } = await startOneNode(["--consume-feed-memory", "256kb"]);
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "fan.stall";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "2", "bucket-key": "id" } });
      const t = await catalog.getTable(parseIdentifier(name));
      // Rows that do not compress (random text): each snapshot's shared read is ~60 KB, 24 of them far above the cap.
      const row = (id: number): JsonRow => ({ id, s: randomBytes(300).toString("base64") });
      await producerWhenRegistered(c.nc, name).then((p) => p.close());
      const fast = follow(await openConsumer({ nc: c.nc, table: name, from: "latest", window: 4 }), t);
      const stalled = await openConsumer({ nc: c.nc, table: name, from: "latest", window: 2 });
      const stalledIter = stalled[Symbol.asyncIterator]();
      const firstRound = trickle(c, name, 1, 150, row);
      const first = await stalledIter.next();
      assert.equal(first.done, false);
      const fields = t.schema.fields;
      const stalledGot: Delivery[] = [{ snapshotId: first.value!.snapshotId, kind: first.value!.kind, rows: [] }];
      for await (const b of first.value!.batches) stalledGot[0]!.rows.push(...render(fields, b));
      await firstRound;
      // The stall: nothing pulled from `stalled` while 24 more rounds land. The feed's bytes are sampled meanwhile.
      let maxBytes = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          maxBytes = Math.max(maxBytes, await metric(port, "natslake_consume_feed_bytes", {}).catch(() => 0));
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      const total = await trickle(c, name, 24, 150, row, 100, 150);
      await waitFor("the fast consumer has every row while the other is stalled", () => (idsOf(fast.got).length >= total ? true : undefined), 60_000, 100);
      sampling = false;
      await sampler;
      await fast.stop();
      for (const d of fast.got) assert.deepEqual(d.rows, await readJson(t, { incremental: { from: d.snapshotId - 1, to: d.snapshotId } }), `fast: snapshot ${d.snapshotId}`);
      assert.deepEqual(idsOf(fast.got).sort((a, b) => a - b), Array.from({ length: total }, (_, k) => k));
      assert.equal(fast.consumer.sessions, 1);
      assert.ok(stalled.buffered <= 2, `the stalled consumer holds at most its window (${stalled.buffered} chunks)`);
      // The cap held: the newest entry is always kept, so cap + one snapshot's read (~60 KB; 2 rounds in one commit at most).
      assert.ok(maxBytes > 0, "the feed was sampled while it held rows");
      assert.ok(maxBytes <= cap + 160 * 1024, `the feed held at most ${maxBytes} bytes (cap ${cap})`);
      assert.ok((await metric(port, "natslake_consume_feed_snapshots_total", { table: name, outcome: "evicted" })) > 0, "the oldest shared reads were dropped");
      // Pulled again: every snapshot after its first, once, each equal to natslake's read of it.
      const latest = (await t.snapshots.latestId())!;
      while (idsOf(stalledGot).length < total) {
        const n = await stalledIter.next();
        assert.equal(n.done, false);
        const d: Delivery = { snapshotId: n.value!.snapshotId, kind: n.value!.kind, rows: [] };
        for await (const b of n.value!.batches) d.rows.push(...render(fields, b));
        stalledGot.push(d);
      }
      await stalled.close();
      assert.deepEqual(stalledGot.map((d) => d.snapshotId), await appendsBetween(t, stalledGot[0]!.snapshotId, latest), "every APPEND snapshot once, in order");
      for (const d of stalledGot) assert.deepEqual(d.rows, await readJson(t, { incremental: { from: d.snapshotId - 1, to: d.snapshotId } }), `stalled: snapshot ${d.snapshotId}`);
      assert.ok((await metric(port, "natslake_consume_feed_snapshots_total", { table: name, outcome: "own" })) > 0, "the stalled session read (part of) its backlog itself");
    }, 60);
  } finally {
    await c.stop();
  }
});

test("consume fan-out - sessions joining mid-stream (from latest, and catching up from an older snapshot): no snapshot missed or repeated, rows identical to the consumer there from the start", { timeout: 300_000 }, async () => {
  const { c } = await startOneNode();
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "fan.join";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "2", "bucket-key": "id" } });
      const t = await catalog.getTable(parseIdentifier(name));
      await producerWhenRegistered(c.nc, name).then((p) => p.close());
      const a = follow(await openConsumer({ nc: c.nc, table: name, from: "latest" }), t);
      const writing = trickle(c, name, 20, 25, (id) => ({ id, s: `s${id}` }), 150);
      await waitFor("the first consumer got five snapshots", () => (a.got.length >= 5 ? true : undefined), 60_000, 50);
      const catchUpFrom = a.got[1]!.snapshotId;
      const latestAtJoin = (await t.snapshots.latestId())!;
      const b = follow(await openConsumer({ nc: c.nc, table: name, from: "latest" }), t);
      const cu = follow(await openConsumer({ nc: c.nc, table: name, from: `snapshot:${catchUpFrom}` }), t);
      const total = await writing;
      const latest = (await t.snapshots.latestId())!;
      const lastAppend = (await appendsBetween(t, 1, latest)).pop()!;
      await waitFor("all three reached the last snapshot", () => ([a, b, cu].every((f) => f.got.some((d) => d.snapshotId === lastAppend)) ? true : undefined), 60_000, 100);
      for (const f of [a, b, cu]) await f.stop();
      assert.deepEqual(idsOf(a.got).sort((x, y) => x - y), Array.from({ length: total }, (_, k) => k), "the first consumer: every row once");
      assert.ok(b.got[0]!.snapshotId > latestAtJoin, `from latest: starts after the latest snapshot at its open (${latestAtJoin})`);
      for (const [label, f] of [["from latest", b], ["catching up", cu]] as const) {
        const ids = f.got.map((d) => d.snapshotId);
        assert.deepEqual(ids, await appendsBetween(t, ids[0]!, lastAppend), `${label}: every APPEND snapshot from its start, once, in order`);
        for (const d of f.got) {
          const same = a.got.find((x) => x.snapshotId === d.snapshotId);
          assert.ok(same !== undefined, `${label}: snapshot ${d.snapshotId} was delivered to the first consumer too`);
          assert.deepEqual(d.rows, same.rows, `${label}: snapshot ${d.snapshotId}'s rows, in the same order`);
        }
      }
      assert.equal(cu.got[0]!.snapshotId, catchUpFrom, "catching up: starts at the snapshot asked for");
    }, 60);
  } finally {
    await c.stop();
  }
});
