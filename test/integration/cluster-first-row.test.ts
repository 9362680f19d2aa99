/**
 * A first-row table through the cluster: Java's batch reads skip level 0 of first-row tables (and natslake's reads
 * do too, to show what Java shows), so a row is visible once a compaction has moved it up. The writers compact level
 * 0 up at every compaction (ForceUpLevel0, as Java's lookup compaction does): each round of rows published becomes
 * visible within a bound, the first version of every key wins, and Java reads the same. The delay from a round's
 * flush to its rows being read is printed (figures for the report).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { readJson, sortRows } from "../helpers/tables.ts";
import { javaPaimonRead } from "../helpers/java.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";

const ROUNDS = 5;
const KEYS_PER_ROUND = 100;
/** The bound on publish → visible: the commit interval, a compaction of level 0 and its COMPACT commit, with room for a shared CI machine. */
const VISIBLE_WITHIN_MS = 20_000;

test("cluster first-row - each round of rows becomes visible once level 0 is compacted up, within a bound; the first version of every key wins; Java reads the same", { timeout: 300_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "200 ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier("fr.events"), { columns: parseColumnList("id BIGINT NOT NULL, v STRING"), primaryKeys: ["id"], options: { bucket: "2", "merge-engine": "first-row" } });
      const producer = await producerWhenRegistered(c.nc, "fr.events");
      const delays: number[] = [];
      try {
        for (let round = 0; round < ROUNDS; round++) {
          // New keys, and every key of the rounds before written again (which must not change it).
          const rows = Array.from({ length: KEYS_PER_ROUND }, (_, i) => ({ id: round * KEYS_PER_ROUND + i, v: `r${round}` }));
          const again = Array.from({ length: round * KEYS_PER_ROUND }, (_, id) => ({ id, v: `again ${round}` }));
          await producer.upsert([...again, ...rows]);
          await producer.flush();
          const flushed = performance.now();
          const want = (round + 1) * KEYS_PER_ROUND;
          await waitFor(`round ${round}'s rows visible`, async () => {
            const t = await catalog.getTable(parseIdentifier("fr.events"));
            return (await readJson(t)).length === want ? true : undefined;
          }, VISIBLE_WITHIN_MS, 50);
          delays.push(Math.round(performance.now() - flushed));
        }
      } finally {
        await producer.close();
      }
      console.log(`first-row through the cluster: flush → visible (ms) per round: ${delays.join(", ")}`);
      const t = await catalog.getTable(parseIdentifier("fr.events"));
      const rows = await readJson(t);
      const expected = Array.from({ length: ROUNDS * KEYS_PER_ROUND }, (_, id) => ({ id, v: `r${Math.floor(id / KEYS_PER_ROUND)}` }));
      assert.deepEqual(sortRows(rows), sortRows(expected), "each key's first version");
      const [java] = await javaPaimonRead(c.warehouse, [t], [{ table: "fr.events" }]);
      assert.deepEqual(sortRows(java!.rows ?? []), sortRows(rows), java!.error);
    });
  } finally {
    await c.stop();
  }
});
