/**
 * The leader maintains the tables it commits to: snapshot expiration after commits (cluster tables' retention) and
 * partition expiration on `partition.expiration-check-interval`, while rows keep landing exactly once.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/spec/data-types.ts";
import { readRows } from "../../src/scan/read.ts";
import { paimonRead } from "../helpers/python.ts";

const day = (offset: number): string => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

test("cluster maintenance - the leader expires old partitions and old snapshots while rows land exactly once", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 2, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "it.maint";
      const id = parseIdentifier(name);
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(id, {
        columns: parseColumnList("id BIGINT NOT NULL, dt STRING NOT NULL"),
        partitionKeys: ["dt"],
        options: {
          bucket: "2",
          "bucket-key": "id",
          "partition.expiration-time": "7 d",
          "partition.expiration-check-interval": "1 s",
          "partition.timestamp-formatter": "yyyy-MM-dd",
          "snapshot.num-retained.min": "5",
          "snapshot.num-retained.max": "20",
          "snapshot.time-retained": "1 s",
        },
      });
      const producer = await producerWhenRegistered(c.nc, name);
      // Old partitions first (they expire), then rows of recent days in many small commits (snapshots expire).
      for (const d of [-10, -9]) await Promise.all(Array.from({ length: 50 }, (_, i) => producer.write({ id: 1000 * (d + 20) + i, dt: day(d) })));
      await producer.flush();
      await producer.waitVisible(producer.token(), 30_000);
      const kept: number[] = [];
      for (let round = 0; round < 30; round++) {
        for (const d of [-1, 0]) {
          const rowId = 1_000_000 + round * 10 + (d + 1);
          kept.push(rowId);
          void producer.write({ id: rowId, dt: day(d) });
        }
        await producer.flush();
        await new Promise((r) => setTimeout(r, 120));
      }
      await producer.waitVisible(producer.token(), 30_000);
      await producer.close();
      // The old partitions go (one OVERWRITE snapshot), the recent ones stay whole.
      const rowsNow = async (): Promise<number[]> => {
        const out: number[] = [];
        for await (const r of readRows(await catalog.getTable(id))) out.push(Number(r["id"]));
        return out.sort((a, b) => a - b);
      };
      const after = await waitFor("the old partitions expired", async () => {
        const ids = await rowsNow();
        return ids.every((x) => x >= 1_000_000) ? ids : undefined;
      }, 60_000, 500);
      assert.deepEqual(after, [...kept].sort((a, b) => a - b), "every recent row exactly once");
      const t = await catalog.getTable(id);
      const snapshots = await t.snapshots.listIds();
      const kinds = await Promise.all(snapshots.map(async (s) => (await t.snapshots.snapshot(s)).commitKind));
      // Snapshot expiration keeps the chain within num-retained.max (it runs after commits, at most once a second).
      await waitFor("old snapshots expired", async () => ((await (await catalog.getTable(id)).snapshots.earliestId())! > 1 ? true : undefined), 30_000, 200);
      assert.ok(snapshots.length <= 35, `${snapshots.length} snapshots retained (max 20, plus those committed within the second since the last run): ${kinds.join(",")}`);
      assert.match(c.logs("n1") + c.logs("n2"), /"task":"expire-partitions","partitions":2,.*"msg":"maintenance done"/, "the leader's scheduled task dropped the two old partitions");
      // pypaimon agrees.
      const py = (await paimonRead(c.warehouse, name)).map((r) => Number(r["id"])).sort((a, b) => a - b);
      assert.deepEqual(py, after);
    }, 80);
  } finally {
    await c.stop();
  }
});
