/**
 * Time travel across schema changes (the history: test/helpers/schema-history.ts): a snapshot chosen by id, by tag
 * or by time reads in its own schema — a dropped column with its old values, the old names and types — as Java
 * Paimon and pypaimon read it; the latest snapshot, chosen by nothing, reads in the current schema with the older
 * files mapped to it by field id; a stream that starts at an old snapshot stays in the current schema; a
 * primary-key table's old snapshot merges in its schema too. Before, every read was in the current schema.
 */
import { before, after, test } from "node:test";
import assert from "node:assert/strict";
import { javaPaimonRead, javaRows, type JavaReadRequest } from "../helpers/java.ts";
import { paimonTimeTravel, paimonAlter, paimonWrite, type PaimonTimeTravelRead } from "../helpers/python.ts";
import { readJson, readJsonWithColumns, reopen, sortRows, tempDir } from "../helpers/tables.ts";
import { BATCH_ROWS, BATCHES, buildSchemaHistory, columnsOf, expectedRows, HISTORY_TABLE, LATEST_SCHEMA, SCHEMAS, SNAPSHOTS, tagOf } from "../helpers/schema-history.ts";
import { parseSqlType, typeToJson, typeToSql } from "../../src/format/data-types.ts";
import { tableForRead } from "../../src/scan/plan.ts";
import { TableStream } from "../../src/scan/table-stream.ts";
import { planRead, readColumns, type ReadSpec } from "../../src/scan/read.ts";
import type { Table } from "../../src/table/table.ts";


const wh = tempDir();
after(() => wh.cleanup());
let timeOf = new Map<number, number>();
before(async () => {
  timeOf = await buildSchemaHistory(wh.path);
});

const CURRENT = SCHEMAS[LATEST_SCHEMA]!;
const SNAPSHOT_2 = SCHEMAS[1]!;

/** The three ways to choose snapshot `id`. */
const waysTo = (id: number): Array<{ how: string; spec: ReadSpec }> => [
  { how: "id", spec: { snapshotId: id } },
  { how: "tag", spec: { tag: tagOf(id) } },
  { how: "time", spec: { atTimeMillis: timeOf.get(id)! } },
];

test("time travel - natslake's library reads every snapshot, by id, tag and time, in that snapshot's own schema", async () => {
  const t = await reopen(wh.path, HISTORY_TABLE);
  for (const s of SNAPSHOTS) {
    const schema = SCHEMAS[s.schemaId]!;
    for (const way of waysTo(s.id)) {
      const what = `snapshot ${s.id} by ${way.how}`;
      const { columns, rows } = await readJsonWithColumns(t, way.spec);
      assert.deepEqual(columns.map((f) => [f.name, typeToSql(f.type)]), columnsOf(schema), what);
      assert.deepEqual(sortRows(rows), expectedRows(schema, s.batches), what);
      // The table a caller resolves column names and partitions against is in the same schema.
      assert.equal((await tableForRead(t, way.spec)).schema.id, s.schemaId, what);
    }
  }
  // A time between two commits reads the earlier snapshot.
  assert.deepEqual(sortRows(await readJson(t, { atTimeMillis: timeOf.get(3)! + 1 })), expectedRows(SCHEMAS[2]!, 3));
});

test("time travel - the latest snapshot chosen by nothing reads in the current schema, older files mapped by field id", async () => {
  const t = await reopen(wh.path, HISTORY_TABLE);
  const { columns, rows } = await readJsonWithColumns(t);
  assert.deepEqual(columns.map((f) => [f.name, typeToSql(f.type)]), columnsOf(CURRENT));
  // label holds the values written as name, qty every value widened, the dropped note's values nowhere (the new note
  // is another field), extra null throughout: no file has it.
  assert.deepEqual(sortRows(rows), expectedRows(CURRENT, BATCHES));
  // The same snapshot chosen by id reads in its own schema, 5.
  assert.deepEqual((await readJsonWithColumns(t, { snapshotId: 7 })).columns.map((f) => f.name), SCHEMAS[5]!.map((c) => c.name));
});

test("time travel - projections and partitions of an old snapshot name its schema's columns; another column is a clear error", async () => {
  const t = await reopen(wh.path, HISTORY_TABLE);
  const projection = ["note", "name", "qty"];
  assert.deepEqual(sortRows(await readJson(t, { snapshotId: 2, projection })), expectedRows(SNAPSHOT_2, 2, { projection }));
  assert.deepEqual(sortRows(await readJson(t, { tag: tagOf(4), projection: ["label", "qty"] })), expectedRows(SCHEMAS[3]!, 4, { projection: ["label", "qty"] }));
  assert.deepEqual(sortRows(await readJson(t, { snapshotId: 3, partition: ["a"] })), expectedRows(SCHEMAS[2]!, 3).filter((r) => r["dt"] === "a"));
  const notInSnapshot2 = /no column 'label' in tt\.evolve as of snapshot 2 \(read in its schema 1, columns: id, name, qty, note, dt, score\)/;
  await assert.rejects(readJson(t, { snapshotId: 2, projection: ["label"] }), notInSnapshot2);
  await assert.rejects(readJson(t, { tag: tagOf(2), projection: ["label"] }), notInSnapshot2);
  await assert.rejects(readJson(t, { atTimeMillis: timeOf.get(2)!, projection: ["label"] }), notInSnapshot2);
  await assert.rejects(readJson(t, { projection: ["name"] }), /no column 'name' in tt\.evolve \(schema 6, columns: id, label, qty, dt, score, note, extra\)/);
  // An old snapshot read in the current schema (as a stream reads it) is asked for explicitly.
  const plan = await planRead(t, { snapshotId: 2, inCurrentSchema: true });
  assert.equal(plan.schema.id, LATEST_SCHEMA);
  assert.deepEqual(readColumns(t, plan).map((f) => f.name), CURRENT.map((c) => c.name));
});

test("time travel - a stream from an old snapshot stays in the current schema (it goes on into newer snapshots)", async () => {
  const t = await reopen(wh.path, HISTORY_TABLE);
  const stream = new TableStream(t, { mode: { mode: "from-snapshot-full", snapshotId: 2 } });
  const full = (await stream.next())!;
  const delta = (await stream.next())!;
  stream.close();
  assert.deepEqual([full.kind, full.snapshotId, delta.kind, delta.snapshotId], ["full", 2, "delta", 3]);
  const fullRead = await readJsonWithColumns(t, full.read);
  assert.deepEqual(fullRead.columns.map((f) => f.name), CURRENT.map((c) => c.name));
  assert.deepEqual(sortRows(fullRead.rows), expectedRows(CURRENT, 2));
  assert.deepEqual(sortRows(await readJson(t, delta.read)), expectedRows(CURRENT, 3, { from: 2 }));
});

/** A read both oracles make, and what it must give. */
interface OracleRead {
  travel: { snapshot?: number; tag?: string; atMillis?: number };
  schemaId: number;
  batches: number;
  projection?: string[];
}

/** Every snapshot by id, tag and time; the latest; an old snapshot's projection. */
function oracleReads(): OracleRead[] {
  const reads: OracleRead[] = [];
  for (const { id, schemaId, batches } of SNAPSHOTS) {
    reads.push({ travel: { snapshot: id }, schemaId, batches });
    reads.push({ travel: { tag: tagOf(id) }, schemaId, batches });
    reads.push({ travel: { atMillis: timeOf.get(id)! }, schemaId, batches });
  }
  reads.push({ travel: {}, schemaId: LATEST_SCHEMA, batches: BATCHES });
  reads.push({ travel: { snapshot: 2 }, schemaId: 1, batches: 2, projection: ["note", "name", "qty"] });
  return reads;
}

test("time travel - Java Paimon reads every snapshot, by id, tag and time, as natslake does", { timeout: 240_000 }, async () => {
  const t = await reopen(wh.path, HISTORY_TABLE);
  const reads = oracleReads();
  // Java's values are decoded with natslake's types of the schema read (its columns are compared below).
  const tables: Table[] = [];
  for (const r of reads) tables.push(t.inSchema(await t.schemas.schema(r.schemaId)));
  const requests: JavaReadRequest[] = reads.map((r) => ({ table: HISTORY_TABLE, ...r.travel, ...(r.projection ? { columns: r.projection } : {}) }));
  // Java refuses a column the snapshot's schema does not have, too.
  requests.push({ table: HISTORY_TABLE, snapshot: 2, columns: ["label"] });
  tables.push(t);
  const results = await javaPaimonRead(wh.path, tables, requests);
  for (const [k, r] of reads.entries()) {
    const what = `Java ${JSON.stringify(requests[k])}`;
    const res = results[k]!;
    assert.equal(javaRows(res).length, r.batches * BATCH_ROWS, what);
    assert.deepEqual(res.fields?.map((f) => [f.name, f.type]), columnsOf(SCHEMAS[r.schemaId]!, r.projection), what);
    assert.deepEqual(sortRows(javaRows(res)), expectedRows(SCHEMAS[r.schemaId]!, r.batches, r.projection ? { projection: r.projection } : {}), what);
  }
  assert.match(results[reads.length]!.error ?? "", /no column label/);
});

test("time travel - pypaimon reads every snapshot, by id, tag and time, as natslake does", { timeout: 240_000 }, async () => {
  const reads = oracleReads();
  const requests: PaimonTimeTravelRead[] = reads.map((r) => ({ ...r.travel, ...(r.projection ? { columns: r.projection } : {}) }));
  const results = await paimonTimeTravel(wh.path, HISTORY_TABLE, requests);
  assert.equal(results.length, reads.length);
  for (const [k, r] of reads.entries()) {
    const what = `pypaimon ${JSON.stringify(requests[k])}`;
    const res = results[k]!;
    assert.equal(res.error, undefined, `${what}: ${res.error}`);
    assert.deepEqual(res.fields, columnsOf(SCHEMAS[r.schemaId]!, r.projection).map(([name, sql]) => ({ name, type: typeToJson(parseSqlType(sql)) })), what);
    assert.deepEqual(sortRows(res.rows ?? []), expectedRows(SCHEMAS[r.schemaId]!, r.batches, r.projection ? { projection: r.projection } : {}), what);
  }
});

test("time travel - a primary-key table's old snapshot merges in its own schema, as Java Paimon and pypaimon read it", { timeout: 240_000 }, async () => {
  const name = "tt.pk";
  const columns: Array<[string, string]> = [["id", "BIGINT NOT NULL"], ["v", "STRING"], ["n", "INT"]];
  const first = Array.from({ length: 30 }, (_, i) => ({ id: i, v: `v${i}`, n: i }));
  await paimonWrite({ warehouse: wh.path, table: name, create: { columns, primaryKeys: ["id"], options: { bucket: "2", "file.format": "parquet" } }, batches: [first], overwrite: null });
  // v renamed to w, n dropped, then updates of some keys and new ones in the new schema.
  for (const change of [["--rename", "v", "w"], ["--drop", "n"]]) await paimonAlter(wh.path, name, change);
  const second = Array.from({ length: 20 }, (_, k) => ({ id: 20 + k, w: `w${20 + k}` }));
  await paimonWrite({ warehouse: wh.path, table: name, create: null, batches: [second], overwrite: null });
  const t = await reopen(wh.path, name);
  assert.equal(t.schema.id, 2);
  const old = await readJsonWithColumns(t, { snapshotId: 1 });
  assert.deepEqual(old.columns.map((f) => f.name), ["id", "v", "n"]);
  assert.deepEqual(sortRows(old.rows), sortRows(first.map((r) => ({ id: r.id, v: r.v, n: r.n }))));
  const latest = await readJsonWithColumns(t);
  assert.deepEqual(latest.columns.map((f) => f.name), ["id", "w"]);
  const merged = new Map(first.map((r) => [r.id, { id: r.id, w: r.v }]));
  for (const r of second) merged.set(r.id, { id: r.id, w: r.w });
  assert.deepEqual(sortRows(latest.rows), sortRows([...merged.values()]));
  const [javaOld, javaLatest] = await javaPaimonRead(wh.path, [t.inSchema(await t.schemas.schema(0)), t], [{ table: name, snapshot: 1 }, { table: name }]);
  assert.deepEqual(javaOld!.fields?.map((f) => f.name), ["id", "v", "n"]);
  assert.deepEqual(sortRows(javaRows(javaOld)), sortRows(old.rows));
  assert.deepEqual(sortRows(javaRows(javaLatest)), sortRows(latest.rows));
  const [pyOld] = await paimonTimeTravel(wh.path, name, [{ snapshot: 1 }]);
  assert.deepEqual(pyOld!.fields?.map((f) => f.name), ["id", "v", "n"]);
  assert.deepEqual(sortRows(pyOld!.rows ?? []), sortRows(old.rows));
});
