import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { checkName } from "../../../src/names.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { isLakeError } from "../../../src/errors.ts";
import { readJson, tempDir, writeRows } from "../../helpers/tables.ts";
import { handleAdmin } from "../../../cluster/admin.ts";

const wh = tempDir();
after(() => wh.cleanup());

test("catalog - names with separators, '..', control characters or nothing are rejected; older names are still read but not created", async () => {
  for (const bad of ["", " ", "a/b", "a\\b", "..", "a..b", "x\u0001", "tab\t", ".hidden", "t$snapshots"]) {
    assert.throws(() => checkName("table", bad), (e: unknown) => isLakeError(e, "DataInvalid"), JSON.stringify(bad));
  }
  for (const good of ["events", "Events_2026", "a-b", "ünï"]) checkName("table", good);
  const c = new Catalog(wh.path);
  for (const name of ["names.Events_2026", "names.ünï", "names.t x", "Names.t"])
    await assert.rejects(c.createTable(parseIdentifier(name), { columns: parseColumnList("x INT") }), (e: unknown) => isLakeError(e, "DataInvalid"), name);
  assert.equal(existsSync(join(wh.path, "Names.db")), false, "nothing was made for a refused name");
  assert.throws(() => parseIdentifier("nodot"), /<database>.<table>/);
  assert.throws(() => parseIdentifier("../etc.passwd"), /must have the form/);
  assert.throws(() => parseIdentifier("db/x.t"), /invalid database name .*path separators/);
});

test("catalog - create, describe, list, drop; layout as Paimon's filesystem catalog", async () => {
  const c = new Catalog(wh.path);
  const id = parseIdentifier("shop.orders");
  const t = await c.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, v STRING") });
  assert.ok(existsSync(join(wh.path, "shop.db", "orders", "schema", "schema-0")));
  assert.equal(t.root, join(wh.path, "shop.db", "orders"));
  await assert.rejects(c.createTable(id, { columns: parseColumnList("x INT") }), (e: unknown) => isLakeError(e, "AlreadyExists"));
  const again = await c.createTable(id, { columns: parseColumnList("x INT") }, { ignoreIfExists: true });
  assert.deepEqual(again.schema.fields.map((f) => f.name), ["id", "v"]);
  await c.createTable(parseIdentifier("shop.items"), { columns: parseColumnList("x INT") });
  assert.deepEqual(await c.listDatabases(), ["shop"]);
  assert.deepEqual(await c.listTables("shop"), ["items", "orders"]);
  await c.dropTable(id);
  assert.deepEqual(await c.listTables("shop"), ["items"]);
  await assert.rejects(c.getTable(id), (e: unknown) => isLakeError(e, "NotFound"));
  await assert.rejects(c.dropTable(id), (e: unknown) => isLakeError(e, "NotFound"));
  await c.dropTable(id, true);
});

test("catalog - two concurrent creators of one table: exactly one wins", async () => {
  const c = new Catalog(wh.path);
  const id = parseIdentifier("race.t");
  const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => c.createTable(id, { columns: parseColumnList(`c${i} INT`) })));
  assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
  assert.ok(results.filter((r) => r.status === "rejected").every((r) => isLakeError((r as PromiseRejectedResult).reason, "AlreadyExists")));
});

test("catalog - a primary-key table is created with fixed buckets; dynamic and postpone buckets, and what natslake does not write, are refused by name and nothing is made", async () => {
  const c = new Catalog(wh.path);
  const t = await c.createTable(parseIdentifier("pk.orders"), { columns: parseColumnList("id BIGINT NOT NULL, v STRING"), primaryKeys: ["id"], options: { bucket: "2" } });
  assert.deepEqual(t.schema.primaryKeys, ["id"]);
  const refused: Array<[string, Record<string, string>, string[], RegExp]> = [
    ["pk.dynamic", {}, [], /fixed bucket count; set the option bucket = N .*dynamic buckets \(bucket = -1/],
    ["pk.postpone", { bucket: "-2" }, [], /postpone buckets \(bucket = -2\)/],
    ["pk.firstrow", { bucket: "2", "merge-engine": "first-row", "changelog-producer": "input" }, [], /pk.firstrow: Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine/],
    ["pk.partialconflict", { bucket: "2", "merge-engine": "partial-update", "ignore-delete": "true", "partial-update.remove-record-on-delete": "true" }, [], /ignore-delete and partial-update.remove-record-on-delete have conflicting behavior/],
    ["pk.partialgroups", { bucket: "2", "merge-engine": "partial-update", "fields.id.sequence-group": "v", "fields.dt.sequence-group": "v" }, [], /Field v is defined repeatedly by multiple groups/],
    ["pk.sketch", { bucket: "2", "merge-engine": "aggregation", "fields.v.aggregate-function": "theta_sketch" }, [], /aggregate function 'theta_sketch' .* is not run by natslake yet/],
    ["pk.fullchangelog", { bucket: "2", "changelog-producer": "full-compaction" }, [], /changelog-producer = full-compaction is not written by natslake: its changelog comes only from full compactions.*use changelog-producer = lookup/],
    ["pk.dedupfields", { bucket: "2", "changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true", "changelog-producer.row-deduplicate-ignore-fields": "nope" }, [], /row-deduplicate-ignore-fields names 'nope', which is not a field of the table/],
    ["pk.part", { bucket: "2" }, ["dt"], /must contain every partition field \(dt\)/],
  ];
  for (const [name, options, partitionKeys, why] of refused) {
    await assert.rejects(
      c.createTable(parseIdentifier(name), { columns: parseColumnList("dt STRING NOT NULL, id BIGINT NOT NULL, v STRING"), partitionKeys, primaryKeys: ["id"], options }),
      (e: unknown) => isLakeError(e) && why.test((e as Error).message),
      name,
    );
    assert.equal(await c.tableExists(parseIdentifier(name)), false, `${name} not made`);
  }
  // The cluster's admin create-table says the same (it creates through the catalog).
  const ensured: string[] = [];
  const reply = await handleAdmin(new TextEncoder().encode(JSON.stringify({ type: "create-table", table: "pk.other", columns: "id BIGINT NOT NULL", primaryKeys: ["id"], options: { bucket: "-2" } })), {
    catalog: c,
    ensure: async (x) => void ensured.push(x.name),
    resetOffsets: () => Promise.reject(new Error("not used")),
    dropTable: () => Promise.reject(new Error("not used")),
  });
  assert.equal(reply.ok, false);
  assert.match((reply as { error: string }).error, /postpone buckets/);
  assert.deepEqual(ensured, [], "no stream is made for it");
});

test("catalog - a changelog producer on a table without a primary key is refused at create, as Java refuses it; nothing is made", async () => {
  const c = new Catalog(wh.path);
  const id = parseIdentifier("log.events");
  await assert.rejects(
    c.createTable(id, { columns: parseColumnList("id BIGINT, v STRING"), options: { "changelog-producer": "input" } }),
    (e: unknown) => isLakeError(e, "DataInvalid") && /Can not set changelog-producer on table without primary keys/.test((e as Error).message),
  );
  assert.equal(await c.tableExists(id), false);
  await c.createTable(id, { columns: parseColumnList("id BIGINT, v STRING"), options: { "changelog-producer": "none" } });
});

test("catalog - a table named before the rules for new names (uppercase, a space) is still read, written and altered", async () => {
  const c = new Catalog(wh.path);
  await c.createTable(parseIdentifier("legacy.events"), { columns: parseColumnList("id BIGINT NOT NULL, v STRING") });
  // As an older natslake (or a Paimon engine) left it on disk.
  mkdirSync(join(wh.path, "Legacy.db"));
  renameSync(join(wh.path, "legacy.db", "events"), join(wh.path, "Legacy.db", "My Events"));
  const id = parseIdentifier("Legacy.My Events");
  assert.deepEqual(await c.listTables("Legacy"), ["My Events"]);
  await writeRows(await c.getTable(id), [{ id: 1, v: "a" }]);
  const altered = await c.addColumns(id, parseColumnList("note STRING"));
  await writeRows(altered, [{ id: 2, v: "b", note: "n" }]);
  assert.deepEqual((await readJson(await c.getTable(id))).map((r) => r["id"]).sort(), [1, 2]);
  // --if-not-exists on it names nothing new: it is left as it is.
  assert.equal((await c.createTable(id, { columns: parseColumnList("x INT") }, { ignoreIfExists: true })).schema.id, 1);
  await assert.rejects(c.createTable(parseIdentifier("Legacy.other"), { columns: parseColumnList("x INT") }), /invalid database name 'Legacy': uppercase 'L'/);
  await c.dropTable(id);
  assert.deepEqual(await c.listTables("Legacy"), []);
});

test("catalog - a table whose <db>_<table> is another's is refused: the cluster would give both the same streams", async () => {
  const c = new Catalog(wh.path);
  await c.createTable(parseIdentifier("twin_a.b"), { columns: parseColumnList("x INT") });
  await assert.rejects(
    c.createTable(parseIdentifier("twin.a_b"), { columns: parseColumnList("x INT") }),
    (e: unknown) => isLakeError(e, "AlreadyExists") && /table 'twin_a\.b' exists, and both would be named 'twin_a_b' in the cluster's NATS streams/.test((e as Error).message),
  );
  await c.createTable(parseIdentifier("twin.a-b"), { columns: parseColumnList("x INT") });
});
