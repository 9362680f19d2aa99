/**
 * A writer node SIGKILLed in the middle of a primary-key compaction: first in its compaction worker, after an output
 * file was written (`compact.rewrite.after-output:kill@2`), then after the rewrite, before the change is sent
 * (`writer.compaction-before-send:kill`). Upserts and deletes keep arriving in the stream meanwhile; the node comes
 * back each time and its writers plan afresh from the committed trees. The table stays readable and complete: every
 * snapshot's levels >= 1 are sorted runs, and natslake, pypaimon and Java Paimon read the model of every change.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { producerWhenRegistered, startCluster, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { readJson, sortRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { javaPkRead } from "../helpers/java-pk.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { CommitKind } from "../../src/format/snapshot.ts";
import { readLsmCompactionOptions } from "../../src/lsm/compaction-options.ts";
import { framedKeyComparator } from "../../src/lsm/compact-bucket.ts";
import { Levels } from "../../src/lsm/levels.ts";
import { liveBuckets } from "../../src/maintenance/live-buckets.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import type { Producer } from "../../cluster/producer.ts";
import type { TestCluster } from "../helpers/cluster.ts";

type R = Record<string, unknown>;
const NAME = "kill.keys";

/**
 * Rounds of 30 upserts and 3 deletes over 120 keys (acknowledged by the stream, not waited for) until the node exits
 * or `rounds` rounds were written; applied to the model. Returns whether the node exited.
 */
async function writeUntilExit(c: TestCluster, p: Producer, model: Map<number, R>, state: { round: number }, rounds: number): Promise<boolean> {
  let x = 5 + state.round;
  const rnd = (m: number): number => ((x = (x * 1103515245 + 12345) % 2 ** 31), x % m);
  const proc = c.nodes.get("n1")!.proc;
  for (let i = 0; i < rounds; i++, state.round++) {
    if (proc.exitCode !== null || proc.signalCode !== null) return true;
    const upserts = Array.from({ length: 30 }, (_, k) => ({ id: rnd(120), name: `r${state.round}-${k}-${"y".repeat(rnd(30))}` }));
    void p.upsert(upserts);
    for (const u of upserts) model.set(u.id, u);
    const deletes = Array.from({ length: 3 }, () => ({ id: rnd(120) }));
    void p.delete(deletes);
    for (const d of deletes) model.delete(d.id);
    await p.flush();
    await new Promise((r) => setTimeout(r, 150));
  }
  return proc.exitCode !== null || proc.signalCode !== null;
}

test("cluster PK compaction kill - a writer SIGKILLed mid-compaction (in its worker after an output, and before sending) leaves the table readable and complete", { timeout: 400_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "200ms" });
  try {
    c.startNode("n1", [], { FAILPOINTS: "compact.rewrite.after-output:kill@2" });
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(NAME), {
        columns: parseColumnList("id BIGINT NOT NULL, name STRING"),
        primaryKeys: ["id"],
        options: { bucket: "2", "num-sorted-run.compaction-trigger": "2", "target-file-size": "1 kb", "snapshot.num-retained.min": "10000", "snapshot.num-retained.max": "10000" },
      });
      const p = await producerWhenRegistered(c.nc, NAME);
      const model = new Map<number, R>();
      const state = { round: 0 };
      for (const next of ["writer.compaction-before-send:kill", ""]) {
        assert.ok(await writeUntilExit(c, p, model, state, 200), `the node was killed at its failpoint (round ${state.round})`);
        assert.equal(c.nodes.get("n1")!.proc.signalCode, "SIGKILL");
        c.startNode("n1", [], next === "" ? {} : { FAILPOINTS: next });
      }
      assert.equal(await writeUntilExit(c, p, model, state, 20), false);
      await p.waitVisible(p.token(), 120_000);
      await p.close();

      const t = await catalog.getTable(parseIdentifier(NAME));
      const numLevels = readLsmCompactionOptions(t.options).numLevels;
      const store = new ManifestStore(t);
      let compacted = 0;
      for (let id = (await t.snapshots.earliestId())!; id <= (await t.snapshots.latestId())!; id++) {
        const s = await t.snapshots.snapshot(id);
        if (s.commitKind === CommitKind.COMPACT) compacted++;
        for (const b of await liveBuckets(t, s, {}, store)) new Levels(b.files, numLevels, framedKeyComparator(t));
      }
      assert.ok(compacted > 0, "the writers' compactions landed between the kills");
      const expected = sortRows([...model.values()]);
      const norm = (rows: R[]): R[] => sortRows(rows.map((r) => ({ ...r, id: Number(r["id"]) })));
      assert.deepEqual(norm(await readJson(t)), expected, "natslake");
      assert.deepEqual(norm(await paimonRead(c.warehouse, NAME)), expected, "pypaimon");
      const [java] = await javaPkRead(c.warehouse, t, [{}]);
      assert.ok(java?.rows !== undefined, `Java read it (${java?.error})`);
      assert.deepEqual(norm(java.rows), expected, "Java Paimon");
    });
  } finally {
    await c.stop();
  }
});
