/**
 * A column added to a table while the cluster runs — by pypaimon (another engine), then by `natslake table alter` —
 * reaches the nodes and the producers without a restart: rows that carry the new column land with it (client rows
 * through a producer created before the change, raw rows through the router), nothing goes to the dead-letter stream,
 * rows written before read the new column as null, and pypaimon reads the same rows. Before, raw rows with the new
 * column were dead-lettered as "unknown column" and the producer refused them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { paimonRead, runPython } from "../helpers/python.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readRows } from "../../src/scan/read.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const ALTER_PY = fileURLToPath(new URL("../compat/py/paimon_alter.py", import.meta.url));

type Row = { id: number; msg: string | null; note: string | null; score: number | null };

test("schema change - columns added by pypaimon and by table alter reach nodes and producers without a restart", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 2 });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "it.evolve";
      const id = parseIdentifier(name);
      const subjects = new Subjects();
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, msg STRING"), options: { bucket: "2", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, name);
      const js = jetstream(c.nc);
      const expected = new Map<number, Row>();
      for (let i = 0; i < 200; i++) {
        void producer.write({ id: i, msg: `m${i}` });
        expected.set(i, { id: i, msg: `m${i}`, note: null, score: null });
      }
      await producer.flush();
      await producer.waitVisible(producer.token(), 30_000);

      // Another engine adds a column.
      const altered = JSON.parse(await runPython(ALTER_PY, [c.warehouse, name, "note", "STRING"])) as { schemaId: number };
      assert.equal(altered.schemaId, 1);
      // The producer made before the change follows it (the cluster publishes the new schema once a node runs on it).
      await waitFor("the producer on schema 1", () => (producer.schema.id === 1 ? true : undefined), 30_000, 100);
      assert.deepEqual(producer.schema.fields.map((f) => f.name), ["id", "msg", "note"]);
      for (let i = 200; i < 400; i++) {
        void producer.write({ id: i, msg: `m${i}`, note: `n${i}` });
        expected.set(i, { id: i, msg: `m${i}`, note: `n${i}`, score: null });
      }
      await producer.flush();
      // Raw rows with the new column, through the router.
      for (let m = 0; m < 4; m++) {
        const rows = Array.from({ length: 5 }, (_, k) => ({ id: 1000 + m * 5 + k, note: `raw${m * 5 + k}` }));
        await js.publish(subjects.ingestRaw(id), JSON.stringify(rows));
        for (const r of rows) expected.set(r.id, { id: r.id, msg: null, note: r.note, score: null });
      }
      await producer.waitVisible(producer.token(), 30_000);

      // natslake's own alter, through the CLI.
      const alter = spawnSync(process.execPath, [BIN, "table", "alter", name, "--add-column", "score DOUBLE", "--warehouse", c.warehouse], { encoding: "utf8", timeout: 60_000 });
      assert.equal(alter.status, 0, alter.stderr);
      assert.match(alter.stdout, /altered it\.evolve: schema 2 adds score DOUBLE/);
      await waitFor("the producer on schema 2", () => (producer.schema.id === 2 ? true : undefined), 30_000, 100);
      for (let i = 400; i < 500; i++) {
        void producer.write({ id: i, msg: `m${i}`, note: `n${i}`, score: i / 4 });
        expected.set(i, { id: i, msg: `m${i}`, note: `n${i}`, score: i / 4 });
      }
      await producer.flush();
      await js.publish(subjects.ingestRaw(id), JSON.stringify([{ id: 2000, score: 1.5 }]));
      expected.set(2000, { id: 2000, msg: null, note: null, score: 1.5 });
      await producer.waitVisible(producer.token(), 30_000);
      await waitFor("every row committed", async () => ((await (await catalog.getTable(id)).snapshots.latest())!.totalRecordCount >= expected.size ? true : undefined), 30_000, 200);
      await producer.close();

      const table = await catalog.getTable(id);
      assert.equal(table.schema.id, 2);
      const got = new Map<number, Row>();
      for await (const r of readRows(table)) {
        const rowId = Number(r["id"]);
        assert.ok(!got.has(rowId), `row ${rowId} twice`);
        got.set(rowId, { id: rowId, msg: (r["msg"] as string | null) ?? null, note: (r["note"] as string | null) ?? null, score: (r["score"] as number | null) ?? null });
      }
      assert.deepEqual([...got.entries()].sort((a, b) => a[0] - b[0]), [...expected.entries()].sort((a, b) => a[0] - b[0]));

      // Nothing was dead-lettered as an unknown column.
      const dlq = await jetstreamManager(c.nc).then((jsm) => jsm.streams.info(subjects.dlqStream).catch(() => null));
      assert.equal(dlq?.state.messages ?? 0, 0, "no dead letters");

      // The other engine reads the same rows (files of all three schemas, by field id).
      const py = await paimonRead(c.warehouse, name);
      const pyRows = new Map(py.map((r) => [Number(r["id"]), { id: Number(r["id"]), msg: (r["msg"] as string | null) ?? null, note: (r["note"] as string | null) ?? null, score: r["score"] === null || r["score"] === undefined ? null : Number(r["score"]) }]));
      assert.equal(pyRows.size, expected.size);
      for (const [k, v] of expected) assert.deepEqual(pyRows.get(k), v, `pypaimon row ${k}`);
    }, 80);
  } finally {
    await c.stop();
  }
});
