/**
 * `changelog-producer = lookup` through the cluster: an aggregation table (sum) whose rows come from a producer, the
 * writers' compactions making the changelog (the rewrite workers, the leader's COMPACT snapshots with their changelog
 * manifests), a consumer over NATS receiving it. Applied in order, the changes the consumer receives rebuild the
 * table: every -U retracts the value the consumer holds for the key, and the result is the table's state — the sum of
 * every increment, none counted twice.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { readJson } from "../helpers/tables.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { openConsumer } from "../../cluster/consumer.ts";

const ROUNDS = 4;
const KEYS = 50;

test("cluster lookup changelog - an aggregation table's changes reach a consumer: applied in order they rebuild the table, each -U the value held", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "200 ms" });
  const nc = await connect({ servers: c.nats.url });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "lc.totals";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), {
        columns: parseColumnList("id BIGINT NOT NULL, n BIGINT"),
        primaryKeys: ["id"],
        options: { bucket: "2", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "changelog-producer": "lookup" },
      });
      const producer = await producerWhenRegistered(c.nc, name);
      const consumer = await openConsumer({ nc, table: name, from: "snapshot:1", consumerId: "totals", window: 4 });
      const held = new Map<number, bigint>();
      const problems: string[] = [];
      const kinds = new Map<string, number>();
      const consuming = (async () => {
        for await (const s of consumer) {
          for await (const b of s.batches) {
            const ids = b.getChild("id")!.toArray() as BigInt64Array;
            const ns = b.getChild("n")!.toArray() as BigInt64Array;
            const kindColumn = b.getChild("_row_kind")!;
            for (let i = 0; i < b.numRows; i++) {
              const id = Number(ids[i]);
              const kind = String(kindColumn.get(i));
              kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
              if (kind === "-U" || kind === "-D") {
                if (held.get(id) !== ns[i]) problems.push(`snapshot ${s.snapshotId}: ${kind} of ${id} retracts ${ns[i]}, the consumer holds ${held.get(id)}`);
                held.delete(id);
              } else {
                if (held.has(id)) problems.push(`snapshot ${s.snapshotId}: ${kind} of ${id} while ${held.get(id)} is held`);
                held.set(id, ns[i]!);
              }
            }
          }
          await s.ack();
        }
      })();
      try {
        for (let round = 0; round < ROUNDS; round++) {
          // Each round its own commit (else the write buffer folds the rounds into one sum before any compaction).
          await producer.upsert(Array.from({ length: KEYS }, (_, id) => ({ id, n: round + 1 })));
          await producer.flush();
          await producer.waitVisible(producer.token(), 60_000);
        }
        // Every key's total: 1 + 2 + … + ROUNDS.
        const total = BigInt((ROUNDS * (ROUNDS + 1)) / 2);
        await waitFor("the consumer holds every key's total", () => (held.size === KEYS && [...held.values()].every((n) => n === total) ? true : undefined), 60_000, 50);
        assert.deepEqual(problems, []);
        assert.equal(kinds.get("+I"), KEYS, "one +I per key");
        assert.ok((kinds.get("-U") ?? 0) >= KEYS && kinds.get("-U") === kinds.get("+U"), `then -U/+U pairs: ${JSON.stringify([...kinds])}`);
        console.log(`lookup changelog through the cluster: ${JSON.stringify(Object.fromEntries(kinds))}`);
        const t = await catalog.getTable(parseIdentifier(name));
        assert.deepEqual(
          (await readJson(t)).sort((a, b) => (a["id"] as number) - (b["id"] as number)),
          Array.from({ length: KEYS }, (_, id) => ({ id, n: Number(total) })),
        );
      } finally {
        await producer.close();
        await consumer.close();
        await consuming.catch(() => undefined);
      }
    });
  } finally {
    await nc.close();
    await c.stop();
  }
});
