/**
 * Primary-key tables written by pypaimon, read by natslake (merge-on-read, deduplicate: src/lsm/merge-read.ts): the
 * same rows as pypaimon and Java Paimon read — inserts, updates of the same keys in later snapshots, `-U`/`+U` pairs
 * and deletes (`rowkind.field`), partitioned, two buckets; projections without the key, a partition, an older
 * snapshot, a limit; per bucket in key order (Java's order); `ignore-delete` keeps deleted keys. What natslake
 * cannot read right is refused by name: merge engines it does not merge. An incremental read gives what the
 * snapshots changed, each row with its kind (`_row_kind`).
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { paimonRead, paimonWrite } from "../helpers/python.ts";
import { javaPaimonRead } from "../helpers/java.ts";
import { readJson, reopen, sortRows, tempDir } from "../helpers/tables.ts";
import { planScan } from "../../src/scan/plan.ts";
import { readAllRows } from "../../src/scan/read.ts";

const wh = tempDir();
after(() => wh.cleanup());

const COLUMNS: Array<[string, string]> = [
  ["dt", "STRING NOT NULL"],
  ["id", "BIGINT NOT NULL"],
  ["name", "STRING"],
  ["amount", "DECIMAL(12, 3)"],
  ["op", "STRING"],
];

type R = Record<string, unknown>;
const row = (dt: string, id: number, name: string | null, op = "+I"): R => ({ dt, id, name, amount: name === null ? null : `${id}.${String(id % 1000).padStart(3, "0")}`, op });
const withoutOp = (rows: R[]): R[] => rows.map(({ op: _op, ...r }) => r);

/** Five snapshots: inserts; updates; deletes and a -U/+U pair; a re-insert of a deleted key; more inserts. */
function history(): R[][] {
  const b1 = [...Array.from({ length: 40 }, (_, i) => row("2026-12-01", i, `a${i}`)), ...Array.from({ length: 20 }, (_, i) => row("2026-12-02", i, `b${i}`))];
  const b2 = [row("2026-12-01", 3, "a3-updated", "+U"), row("2026-12-01", 7, null, "+U"), row("2026-12-02", 5, "b5-updated", "+U")];
  const b3 = [row("2026-12-01", 4, "a4", "-D"), row("2026-12-01", 9, "a9", "-U"), row("2026-12-01", 9, "a9-after", "+U"), row("2026-12-02", 0, "b0", "-D"), row("2026-12-01", 11, "a11", "-U")];
  const b4 = [row("2026-12-01", 4, "a4-back")];
  const b5 = Array.from({ length: 10 }, (_, i) => row("2026-12-02", 100 + i, `b${100 + i}`));
  return [b1, b2, b3, b4, b5];
}

test("pypaimon PK → natslake - deduplicate merge: updates, -U/+U, deletes, re-inserts; the rows pypaimon and Java read, in key order per bucket", { timeout: 240_000 }, async () => {
  const name = "pk.orders";
  const res = await paimonWrite({ warehouse: wh.path, table: name, create: { columns: COLUMNS, partitionKeys: ["dt"], primaryKeys: ["dt", "id"], options: { bucket: "2", "file.format": "parquet", "rowkind.field": "op" } }, batches: history(), overwrite: null });
  assert.deepEqual(res.snapshots, [1, 2, 3, 4, 5]);
  const t = await reopen(wh.path, name);
  const all = await readJson(t);
  // What the merge must give, worked out by hand from history().
  assert.equal(all.length, 60 + 10 - 1 /* 2026-12-02 id 0 deleted */ - 1 /* 2026-12-01 id 11: its -U is the latest */);
  const find = (dt: string, id: number): R | undefined => all.find((r) => r["dt"] === dt && r["id"] === id);
  assert.equal(find("2026-12-01", 3)?.["name"], "a3-updated");
  assert.equal(find("2026-12-01", 7)?.["name"], null);
  assert.equal(find("2026-12-01", 9)?.["name"], "a9-after");
  assert.equal(find("2026-12-01", 4)?.["name"], "a4-back", "deleted, then inserted again");
  assert.equal(find("2026-12-02", 0), undefined, "deleted");
  assert.equal(find("2026-12-01", 11), undefined, "retracted by -U and nothing after");
  assert.equal(new Set(all.map((r) => `${String(r["dt"])}/${String(r["id"])}`)).size, all.length, "one row per key");
  // The oracles.
  assert.deepEqual(sortRows(all), sortRows(await paimonRead(wh.path, name)));
  const [java] = await javaPaimonRead(wh.path, [t], [{ table: name }]);
  assert.ok(java!.rows !== undefined, java!.error);
  assert.deepEqual(sortRows(all), sortRows(java!.rows));
  // Per bucket, key order (as Java's merge read gives them): natslake's bucket-by-bucket rows in Java's order.
  const plan = await planScan(t);
  for (const split of plan.splits) {
    const rows = await readJson(t, { partition: split.partitionValues, buckets: [split.bucket] });
    const ids = rows.map((r) => Number(r["id"]));
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), `bucket ${split.bucket} of ${String(split.partitionValues)} in key order`);
  }
  // Projections (one without the key), a partition, an older snapshot, a limit.
  assert.deepEqual(sortRows(await readJson(t, { projection: ["name"] })), sortRows(all.map((r) => ({ name: r["name"] }))));
  assert.deepEqual(sortRows(await readJson(t, { projection: ["amount", "id"] })), sortRows(await paimonRead(wh.path, name, { columns: ["amount", "id"] })));
  assert.deepEqual(sortRows(await readJson(t, { partition: ["2026-12-02"] })), sortRows(await paimonRead(wh.path, name, { partition: { dt: "2026-12-02" } })));
  assert.deepEqual(sortRows(await readJson(t, { snapshotId: 2 })), sortRows(await paimonRead(wh.path, name, { snapshot: 2 })));
  assert.deepEqual(sortRows(withoutOp(await readJson(t, { snapshotId: 1 }))), sortRows(withoutOp(history()[0]!)));
  const limited = await readJson(t, { limit: 7 });
  assert.equal(limited.length, 7);
  for (const r of limited) assert.deepEqual(r, find(String(r["dt"]), Number(r["id"])), "a limited read gives merged rows, never an older version");
});

test("pypaimon PK → natslake - ignore-delete keeps what deletes would remove, as pypaimon and Java read it", { timeout: 240_000 }, async () => {
  const name = "pk.keep";
  await paimonWrite({ warehouse: wh.path, table: name, create: { columns: COLUMNS, primaryKeys: ["id"], options: { bucket: "1", "file.format": "parquet", "rowkind.field": "op", "ignore-delete": "true" } }, batches: [[row("x", 1, "one"), row("x", 2, "two")], [row("x", 1, "one", "-D"), row("x", 2, "two-updated", "+U")]], overwrite: null });
  const t = await reopen(wh.path, name);
  const rows = await readJson(t);
  assert.deepEqual(rows.map((r) => [r["id"], r["name"]]), [[1, "one"], [2, "two-updated"]]);
  assert.deepEqual(sortRows(rows), sortRows(await paimonRead(wh.path, name)));
  const [java] = await javaPaimonRead(wh.path, [t], [{ table: name }]);
  assert.deepEqual(rows, java!.rows, java!.error);
});

test("pypaimon PK → natslake - a sequence.field orders a key's versions by its value before the write order, as pypaimon and Java read it", { timeout: 240_000 }, async () => {
  const name = "pk.seq";
  // amount decides: the second write of id 1 has the smaller amount and loses; id 2's later write has the larger.
  const batches = [[row("d", 1, "one-first"), row("d", 2, "two-first")], [{ ...row("d", 1, "one-second"), amount: "0.500" }, { ...row("d", 2, "two-second"), amount: "99.000" }]];
  await paimonWrite({ warehouse: wh.path, table: name, create: { columns: COLUMNS, primaryKeys: ["id"], options: { bucket: "1", "file.format": "parquet", "sequence.field": "amount" } }, batches: batches.map(withoutOp), overwrite: null });
  const t = await reopen(wh.path, name);
  const rows = sortRows(await readJson(t));
  assert.deepEqual(rows.map((r) => r["name"]), ["one-first", "two-second"]);
  assert.deepEqual(rows, sortRows(await paimonRead(wh.path, name)));
  const [java] = await javaPaimonRead(wh.path, [t], [{ table: name }]);
  assert.ok(java!.rows !== undefined, java!.error);
  assert.deepEqual(rows, sortRows(java!.rows));
});

test("pypaimon PK → natslake - refused by name: a merge engine natslake does not merge (a table with deletion vectors is read: java-dv-read.test.ts); an incremental read gives the snapshots' changes with their kinds", { timeout: 240_000 }, async () => {
  const cases: Array<[string, Record<string, string>, RegExp]> = [["pk.sketch", { "merge-engine": "aggregation", "fields.name.aggregate-function": "hll_sketch" }, /'hll_sketch'/]];
  for (const [name, options, why] of cases) {
    await paimonWrite({ warehouse: wh.path, table: name, create: { columns: COLUMNS, primaryKeys: ["id"], options: { bucket: "1", "file.format": "parquet", ...options } }, batches: [], overwrite: null });
    const t = await reopen(wh.path, name);
    await assert.rejects(readJson(t), (e: Error) => why.test(e.message) && /not (merged|run) by natslake yet|natslake does not read/.test(e.message), name);
  }
  // Snapshot 2 of pk.orders wrote three +U rows (history()): its change, each row with its kind.
  const t = await reopen(wh.path, "pk.orders");
  const changes = await readAllRows(t, { incremental: { from: 1, to: 2 } });
  assert.deepEqual(changes.map((r) => `${String(r["dt"])}/${String(r["id"])} ${String(r["name"])} ${String(r["_row_kind"])}`).sort(), ["2026-12-01/3 a3-updated +U", "2026-12-01/7 null +U", "2026-12-02/5 b5-updated +U"]);
});
