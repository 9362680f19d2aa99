/**
 * `natslake compact --nats` on a primary-key table a running cluster serves: the table's leader compacts it (its
 * MaintenanceActor runs the same library path as the warehouse), in one COMPACT snapshot that carries the cluster's
 * stream offsets forward; the cluster's writers go on flushing into the compacted buckets, and the table equals the
 * model of every change — read by natslake, pypaimon and Java Paimon 1.4.2.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Kvm } from "@nats-io/kv";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { readJson, reopen, sortRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { javaPaimonRead, javaRows } from "../helpers/java.ts";
import { runNatslake } from "../helpers/warehouse-cli.ts";
import { liveBucketLevels } from "../../src/maintenance/bucket-levels.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { natslakeState } from "../../src/format/snapshot.ts";
import type { CompactSummary } from "../../src/maintenance/compact-summary.ts";
import type { TableAssignment } from "../../actors/wire/messages.ts";
import type { Producer } from "../../cluster/producer.ts";

type R = Record<string, unknown>;
const NAME = "pkc.accounts";

/** Rounds of upserts and deletes over ids 0..149 (deterministic), each visible before the next; applied to the model. */
async function rounds(p: Producer, model: Map<number, R>, from: number, count: number): Promise<void> {
  let x = 7 + from;
  const rnd = (m: number): number => ((x = (x * 1103515245 + 12345) % 2 ** 31), x % m);
  for (let round = from; round < from + count; round++) {
    const upserts = Array.from({ length: 40 }, (_, i) => ({ id: rnd(150), name: `r${round}-${i}`, n: round * 100 + i }));
    void p.upsert(upserts);
    for (const u of upserts) model.set(u.id, u);
    const deletes = Array.from({ length: 4 }, () => ({ id: rnd(150) }));
    void p.delete(deletes);
    for (const d of deletes) model.delete(d.id);
    await p.flush();
    await p.waitVisible(p.token(), 30_000);
  }
}

test("cluster PK compaction - compact --nats runs on the table's leader, keeps the offsets; the writers go on; natslake, pypaimon and Java read the model", { timeout: 300_000 }, async () => {
  const c = await startCluster({ nodes: 2, commitInterval: "200 ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      // A trigger the writers' own compaction does not reach in this test (test/integration/cluster-pk-writer-compact.test.ts
      // has theirs): the leader's compaction finds the writers' level-0 runs.
      await catalog.createTable(parseIdentifier(NAME), { columns: parseColumnList("id BIGINT NOT NULL, name STRING, n INT NOT NULL"), primaryKeys: ["id"], options: { bucket: "2", "snapshot.num-retained.min": "100", "num-sorted-run.compaction-trigger": "40" } });
      const p = await producerWhenRegistered(c.nc, NAME);
      const model = new Map<number, R>();
      await rounds(p, model, 0, 6);
      const leader = await waitFor(`${NAME}'s leader`, async () => {
        const e = await (await new Kvm(c.nc).open("lake_assign")).get(NAME);
        return e === null ? undefined : (e.json() as TableAssignment).leader;
      });
      const env = { NATSLAKE_FROM_SOURCE: "1" };
      const r = await runNatslake(["compact", NAME, "--full", "--json", "--nats", c.nats.url], env);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, new RegExp(`compact of ${NAME} ran on ${leader}`));
      const s = JSON.parse(r.stdout) as CompactSummary;
      assert.ok(s.primaryKey?.full === true && s.snapshotId !== null && s.tasks === 2, JSON.stringify(s));
      let t = await reopen(c.warehouse, NAME);
      const snap = await t.snapshots.snapshot(s.snapshotId);
      assert.equal(snap.commitKind, "COMPACT");
      assert.ok(natslakeState(snap) !== null, "the cluster's offsets are carried forward");
      await liveBucketLevels(t); // throws when a level >= 1 of a bucket overlaps

      // The writers flush on top of the compacted buckets; a universal pick through the leader later.
      await rounds(p, model, 6, 6);
      const again = await runNatslake(["compact", NAME, "--json", "--nats", c.nats.url], env);
      assert.equal(again.code, 0, again.stderr);
      await rounds(p, model, 12, 2);
      await p.close();
      t = await reopen(c.warehouse, NAME);
      await liveBucketLevels(t); // throws when a level >= 1 of a bucket overlaps
      const norm = (rows: R[]): R[] => sortRows(rows.map((x) => ({ ...x, id: Number(x["id"]) })));
      const expected = sortRows([...model.values()]);
      assert.deepEqual(norm(await readJson(t)), expected, "natslake");
      assert.deepEqual(norm(await paimonRead(c.warehouse, NAME)), expected, "pypaimon");
      const [java] = await javaPaimonRead(c.warehouse, [t], [{ table: NAME }]);
      assert.deepEqual(norm(javaRows(java)), expected, "Java Paimon");
    });
  } finally {
    await c.stop();
  }
});
