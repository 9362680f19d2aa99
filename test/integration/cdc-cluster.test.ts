/**
 * Changes into primary-key tables through a running cluster, end to end: Debezium change events (MySQL's and
 * Postgres's `customers`, with and without the schema wrapper) on the bare subject of a `debezium-json` table, and
 * raw rows with `_row_kind` plus the producer client's upsert/delete on a `rows` table, become rows that natslake and
 * pypaimon read alike; a truncate event is a dead letter and changes nothing.
 * Up to the bucket subjects the same path is tested in detail by cdc-router.test.ts and producer-keyed.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { jetstream } from "@nats-io/jetstream";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { readJson, sortRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { readLetters } from "../../cluster/dlq.ts";

const FIXTURES = new URL("../fixtures/debezium/", import.meta.url);
const fixture = (name: string): Uint8Array => readFileSync(new URL(name, FIXTURES));
/** The fixture's payload alone: the event as `schemas.enable=false` publishes it. */
const unwrapped = (name: string): string => JSON.stringify((JSON.parse(new TextDecoder().decode(fixture(name))) as { payload: unknown }).payload);

test("cdc cluster - Debezium events and rows with _row_kind land as upserts, updates and deletes; natslake and pypaimon agree", { timeout: 300_000 }, async () => {
  const c = await startCluster({ nodes: 1 });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier("inventory.customers"), {
        columns: parseColumnList("id INT NOT NULL, first_name STRING NOT NULL, last_name STRING NOT NULL, email STRING NOT NULL"),
        primaryKeys: ["id"],
        options: { bucket: "2", "natslake.ingest.format": "debezium-json" },
      });
      await catalog.createTable(parseIdentifier("cdc.kv"), {
        columns: parseColumnList("dt STRING NOT NULL, id BIGINT NOT NULL, v STRING NOT NULL"),
        partitionKeys: ["dt"],
        primaryKeys: ["dt", "id"],
        options: { bucket: "4" },
      });
      const customers = await producerWhenRegistered(c.nc, "inventory.customers", 60_000);
      await customers.close();
      const kv = await producerWhenRegistered(c.nc, "cdc.kv", 60_000);

      // Debezium Server publishes each event to the table's bare subject, without message ids.
      const js = jetstream(c.nc);
      const subjects = new Subjects();
      for (const event of [
        fixture("mysql-customers-read.json"),
        fixture("mysql-customers-create.json"),
        fixture("mysql-customers-update.json"),
        fixture("mysql-customers-delete.json"),
        fixture("mysql-customers-truncate.json"),
        unwrapped("postgres-customers-create.json"),
        unwrapped("postgres-customers-update.json"),
      ]) {
        await js.publish(subjects.ingestRaw(parseIdentifier("inventory.customers")), event);
      }
      // Rows with kinds: the producer client's and raw ones.
      await kv.upsert(Array.from({ length: 20 }, (_, i) => ({ dt: i % 2 === 0 ? "d0" : "d1", id: i, v: `v${i}` })));
      await kv.delete([{ dt: "d0", id: 0 }, { dt: "d1", id: 1 }]);
      await kv.writeMany([{ dt: "d0", id: 2, _row_kind: "-U" }, { dt: "d0", id: 2, v: "v2 again", _row_kind: "+U" }]);
      await kv.flush();
      await js.publish(subjects.ingestRaw(parseIdentifier("cdc.kv")), JSON.stringify([{ dt: "d1", id: 3, _row_kind: "-D" }, { dt: "d1", id: 99, v: "raw" }]));

      const expectedCustomers = sortRows([
        { id: 1, first_name: "Anne Marie", last_name: "Kretchmar", email: "annek@noanswer.org" },
        { id: 1001, first_name: "Sally", last_name: "Thomas", email: "sally.thomas@acme.com" },
      ]);
      const gone = new Set([0, 1, 3]);
      const expectedKv = sortRows([
        ...Array.from({ length: 20 }, (_, i) => i)
          .filter((i) => !gone.has(i))
          .map((i) => ({ dt: i % 2 === 0 ? "d0" : "d1", id: i, v: i === 2 ? "v2 again" : `v${i}` })),
        { dt: "d1", id: 99, v: "raw" },
      ]);
      const read = async (name: string): Promise<Array<Record<string, unknown>>> => sortRows(await readJson(await catalog.getTable(parseIdentifier(name))));
      await waitFor("the changes visible", async () => (JSON.stringify(await read("inventory.customers")) === JSON.stringify(expectedCustomers) && JSON.stringify(await read("cdc.kv")) === JSON.stringify(expectedKv) ? true : undefined), 120_000, 500);
      await kv.close();

      assert.deepEqual(sortRows((await paimonRead(c.warehouse, "inventory.customers")).map((r) => ({ ...r, id: Number(r["id"]) }))), expectedCustomers);
      assert.deepEqual(sortRows((await paimonRead(c.warehouse, "cdc.kv")).map((r) => ({ ...r, id: Number(r["id"]) }))), expectedKv);
      const letters = (await readLetters(c.nc, subjects, parseIdentifier("inventory.customers"), { limit: 10 })).letters;
      // One letter: the truncate (its stream sequence counts the routed batches too, which share the stream).
      assert.equal(letters.length, 1);
      assert.match(letters[0]!.letter.reason, /^a truncate event \('t'\) is not applied/);
      assert.equal((letters[0]!.letter.original as { payload: { op: string } }).payload.op, "t");
    });
  } finally {
    await c.stop();
  }
});
