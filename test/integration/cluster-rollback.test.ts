/**
 * Rollback of a table a running cluster serves (`natslake rollback --nats`): the table's leader restores the target's
 * content as one new snapshot while rows keep arriving. Checked against what the producer had acknowledged: the
 * table holds the target's rows plus every row committed after the restore; every acknowledged row after the target
 * landed exactly once — in a snapshot before the restore (rolled back, gone for good: not ingested again) or after it
 * (kept); pypaimon reads the same. Paimon's destructive rollback beside the running cluster is refused, naming the way.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { producerWhenRegistered, startCluster, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { paimonRead } from "../helpers/python.ts";
import { createTable, reopen } from "../helpers/tables.ts";
import { runNatslake as nl } from "../helpers/warehouse-cli.ts";
import { readAllRows } from "../../src/scan/read.ts";
import type { Table } from "../../src/table/table.ts";
import type { Producer } from "../../cluster/producer.ts";

const NAME = "rbc.events";
let c: TestCluster;

const idsOf = async (t: Table, spec: Parameters<typeof readAllRows>[1] = {}): Promise<number[]> => (await readAllRows(t, spec)).map((r) => Number(r["id"])).sort((a, b) => a - b);
const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);
const sorted = (xs: number[]): number[] => [...xs].sort((a, b) => a - b);

/** Writes rows `from`, `from+1`, … in small batches until `stop()`; the ids whose publish was acknowledged. */
function background(producer: Producer, from: number): { stop: () => Promise<number[]> } {
  const acked: number[] = [];
  let stopped = false;
  const loop = (async () => {
    let id = from;
    // Bounded: at most 20,000 rows, whatever happens to stop().
    while (!stopped && id < from + 20_000) {
      const batch = range(id, 20);
      id += 20;
      const outcomes = await Promise.all(batch.map((i) => producer.write({ id: i, msg: `c${i}` }).then((o) => [i, o.status] as const)));
      for (const [i, s] of outcomes) if (s === "ok" || s === "duplicate") acked.push(i);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return acked;
    },
  };
}

before(async () => {
  c = await startCluster({ nodes: 2 });
  // Retention beyond the test, so the rolled-back snapshots still read (the check reads their rows).
  await createTable(c.warehouse, NAME, "id BIGINT NOT NULL, msg STRING", { options: { bucket: "2", "bucket-key": "id", "snapshot.num-retained.min": "1000", "snapshot.time-retained": "1 h" } });
});
after(async () => {
  await c.stop();
});

test("rollback --nats - the leader restores a snapshot's content under load: rows after it are dropped for good, rows after the restore land exactly once, pypaimon agrees", { timeout: 240_000 }, async () => {
  await withNodeLogsOnFailure(c, async () => {
    const producer = await producerWhenRegistered(c.nc, NAME);
    const A = range(0, 400);
    for (const id of A) void producer.write({ id, msg: `a${id}` });
    await producer.flush();
    await producer.waitVisible(producer.token(), 60_000);
    const target = (await (await reopen(c.warehouse, NAME)).snapshots.latestId())!;
    const B = range(1000, 400);
    for (const id of B) void producer.write({ id, msg: `b${id}` });
    await producer.flush();
    await producer.waitVisible(producer.token(), 60_000);
    assert.deepEqual(await idsOf(await reopen(c.warehouse, NAME)), [...A, ...B]);

    const load = background(producer, 100_000);
    await new Promise((r) => setTimeout(r, 1000));
    // Paimon's rollback beside the running cluster is refused, and says what to do instead.
    const refused = await nl(["rollback", NAME, "--to-snapshot", String(target), "--warehouse", c.warehouse]);
    assert.equal(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /committed by a natslake cluster .* roll back through the cluster \(--nats URL/);
    // A dry run through the leader changes nothing.
    const before = (await (await reopen(c.warehouse, NAME)).snapshots.latest())!;
    const dry = await nl(["rollback", NAME, "--to-snapshot", String(target), "--dry-run", "--nats", c.nats.url]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, new RegExp(`would restore the content of snapshot ${target} on top of snapshot \\d+ as one new snapshot: [1-9]\\d* files removed`));
    assert.match(dry.stderr, /restore of rbc\.events ran on n\d, the table's leader/);
    const r = await nl(["rollback", NAME, "--to-snapshot", String(target), "--json", "--nats", c.nats.url]);
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout) as { target: number; fromLatest: number; snapshot: number; filesRemoved: number };
    assert.equal(res.target, target);
    assert.ok(res.fromLatest > before.id - 1 && res.snapshot === res.fromLatest + 1, JSON.stringify(res));
    await new Promise((r) => setTimeout(r, 2000));
    const C = await load.stop();
    await producer.flush();
    await producer.waitVisible(producer.token(), 60_000);
    await producer.close();

    const t = await reopen(c.warehouse, NAME);
    const restore = await t.snapshots.snapshot(res.snapshot);
    assert.equal(restore.commitKind, "OVERWRITE");
    assert.ok(restore.commitUser.length > 0);
    const latest = (await t.snapshots.latestId())!;
    const kept = await idsOf(t, { incremental: { from: res.snapshot, to: latest } });
    const dropped = await idsOf(t, { incremental: { from: target, to: res.snapshot - 1 } });
    const final = await idsOf(t);
    assert.equal(new Set(final).size, final.length, "no row twice");
    assert.deepEqual(final, sorted([...A, ...kept]), "the target's rows and what was committed after the restore");
    assert.ok(!final.some((id) => id >= 1000 && id < 1400), "the rolled-back rows are gone");
    // Every acknowledged row after the target landed exactly once: before the restore (dropped) or after it (kept) —
    // nothing was ingested again after the restore, nothing acknowledged was lost.
    assert.deepEqual(sorted([...dropped, ...kept]), sorted([...B, ...C]));
    assert.ok(kept.length > 0 && dropped.some((id) => id >= 100_000), `rows arrived on both sides of the restore (kept ${kept.length}, dropped ${dropped.length})`);
    assert.deepEqual((await paimonRead(c.warehouse, NAME)).map((x) => Number(x["id"])).sort((a, b) => a - b), final, "pypaimon reads the same rows");
  });
});
