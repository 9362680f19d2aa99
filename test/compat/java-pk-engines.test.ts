/**
 * Merge engines beyond deduplicate against Java Paimon 1.4.2 (test/compat/java/PaimonPk.java) and pypaimon 2.1.0:
 *
 * - partial-update written by natslake (several commits, so a key's versions sit in several level-0 runs; a
 *   compaction between them; -D and -U with `partial-update.remove-record-on-delete`, including Java's quirks: a
 *   deleted row's values kept where a later version has nulls, a merge of only -U's making a -D) reads the same
 *   through Java at every snapshot; Java continues the table (restoring natslake's buckets, compacting them) and
 *   natslake reads what Java reads;
 * - partial-update written by Java (its write buffer and compactions) reads the same through natslake;
 * - pypaimon reads basic partial-update (no retractions: pypaimon refuses remove-record-on-delete and raises on -U/-D)
 *   natslake wrote, and natslake reads what pypaimon wrote.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { BatchWriter, Catalog, parseColumnList, parseIdentifier, type Table } from "../../src/index.ts";
import { compactTable } from "../../src/maintenance/compact.ts";
import { javaPkRead, javaPkWrite } from "../helpers/java-pk.ts";
import { paimonRead, paimonWrite } from "../helpers/python.ts";
import { readJson, reopen, sortRows, tempDir } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

type R = Record<string, unknown>;
const COLUMNS = "id BIGINT NOT NULL, name STRING, price DECIMAL(12,2), qty INT, note STRING";

/** A partial-update table of COLUMNS with these options besides. */
async function createPartial(name: string, options: Record<string, string>): Promise<Table> {
  return new Catalog(wh.path).createTable(parseIdentifier(name), { columns: parseColumnList(COLUMNS), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "2", "merge-engine": "partial-update", ...options } });
}

async function commit(t: Table, changes: readonly R[]): Promise<number> {
  const w = await BatchWriter.open(t);
  await w.write(changes);
  return (await w.commit()).snapshot!.id;
}

/** Java's reads at these snapshots equal natslake's (each point's rows, sorted). */
async function javaAgrees(t: Table, snapshots: readonly number[]): Promise<void> {
  const java = await javaPkRead(wh.path, t, snapshots.map((snapshotId) => ({ snapshotId })));
  for (const [i, snapshotId] of snapshots.entries()) {
    const res = java[i]!;
    assert.ok(res.rows !== undefined, `Java read at ${snapshotId}: ${res.error ?? ""}`);
    assert.deepEqual(sortRows(res.rows), sortRows(await readJson(t, { snapshotId })), `Java and natslake read the same rows at snapshot ${snapshotId}`);
  }
}

/** Five commits of partial rows over 30 keys: each key's columns arrive in different commits. */
function partialHistory(): R[][] {
  const commits: R[][] = [];
  for (let c = 0; c < 5; c++) {
    const rows: R[] = [];
    for (let id = 0; id < 30; id++) {
      if ((id + c) % 3 === 0) continue;
      const row: R = { id };
      if ((id + c) % 2 === 0) row["name"] = `n${id}-${c}`;
      if ((id * c) % 4 === 1) row["price"] = `${id}.${c}5`;
      if (c % 2 === 1) row["qty"] = id * 10 + c;
      if (c === 4 && id % 5 === 0) row["note"] = null; // an explicit null: never overwrites
      rows.push(row);
    }
    commits.push(rows);
  }
  return commits;
}

test("partial-update written by natslake (commits, compactions, remove-record-on-delete) reads the same through Java at every snapshot; Java continues it, natslake reads what Java reads", { timeout: 600_000 }, async () => {
  const t = await createPartial("pe.partial", { "partial-update.remove-record-on-delete": "true", "num-sorted-run.compaction-trigger": "3" });
  const snapshots: number[] = [];
  for (const [i, rows] of partialHistory().entries()) {
    snapshots.push(await commit(t, rows));
    if (i === 2) {
      const s = await compactTable(t);
      if (s.snapshotId !== null) snapshots.push(s.snapshotId);
    }
  }
  // Retractions: a -D (the row removed), a -D then a partial insert in one commit (Java keeps the deleted row's
  // values where the insert has nulls), a -U alone (passed over), two -U's alone (Java merges them into a -D).
  snapshots.push(
    await commit(t, [
      { _row_kind: "-D", id: 1 },
      { _row_kind: "-D", id: 2, name: "deleted-name", price: "9.99" },
      { _row_kind: "+I", id: 2, qty: 7 },
      { _row_kind: "-U", id: 4, name: "before" },
      { _row_kind: "-U", id: 5 },
      { _row_kind: "-U", id: 5 },
      { id: 40, name: "new" },
    ]),
  );
  snapshots.push(await commit(t, [{ id: 1, name: "back" }, { id: 7, note: "late note" }]));
  const reopened = await reopen(wh.path, "pe.partial");
  const latest = await readJson(reopened);
  const byId = new Map(latest.map((r) => [Number(r["id"]), r]));
  assert.equal(byId.get(1)?.["name"], "back", "deleted, then written again: only the new values");
  assert.equal(byId.get(1)?.["qty"], null);
  assert.deepEqual([byId.get(2)?.["name"], byId.get(2)?.["price"], byId.get(2)?.["qty"]], ["deleted-name", "9.99", 7], "the -D's values kept where the insert has nulls (as Java merges it)");
  assert.equal(byId.has(5), false, "two -U's alone merge into a -D");
  assert.equal(byId.get(7)?.["note"], "late note");
  assert.equal(byId.get(40)?.["name"], "new");
  await javaAgrees(reopened, snapshots);

  // A full compaction (the top level drops retractions), then Java's writer continues natslake's buckets.
  const full = await compactTable(reopened, { full: true });
  assert.ok(full.snapshotId !== null);
  await javaAgrees(await reopen(wh.path, "pe.partial"), [full.snapshotId]);
  const java = await javaPkWrite(wh.path, reopened, [[{ id: 3, note: "java" }, { id: 41, qty: 1 }], [{ id: 3, qty: 333 }, { _row_kind: "-D", id: 40 }]], { compact: true });
  assert.equal(java.error, undefined, java.error);
  const afterJava = await reopen(wh.path, "pe.partial");
  const [javaRead] = await javaPkRead(wh.path, afterJava, [{}]);
  assert.ok(javaRead!.rows !== undefined, javaRead!.error);
  const ours = await readJson(afterJava);
  assert.deepEqual(sortRows(ours), sortRows(javaRead!.rows));
  const three = ours.find((r) => Number(r["id"]) === 3)!;
  assert.deepEqual([three["note"], three["qty"]], ["java", 333]);
  assert.equal(ours.some((r) => Number(r["id"]) === 40), false);
  // natslake writes on after Java's sequence numbers.
  const s = await commit(afterJava, [{ id: 3, name: "natslake again" }]);
  await javaAgrees(await reopen(wh.path, "pe.partial"), [s]);
});

test("partial-update written by Java (its write buffer, its compactions) reads the same through natslake", { timeout: 600_000 }, async () => {
  const t = await createPartial("pe.java_partial", { "partial-update.remove-record-on-delete": "true" });
  const history = partialHistory();
  history.push([{ _row_kind: "-D", id: 8 }, { _row_kind: "-D", id: 9, name: "gone" }, { _row_kind: "+I", id: 9, qty: 99 }, { id: 8 + 100, name: "x" }]);
  const java = await javaPkWrite(wh.path, t, history);
  assert.equal(java.error, undefined, java.error);
  const reopened = await reopen(wh.path, "pe.java_partial");
  const ids = java.commits.flatMap((c) => c.snapshots.map((s) => s.id));
  assert.ok(ids.length >= history.length);
  await javaAgrees(reopened, ids);
  const rows = await readJson(reopened);
  assert.equal(rows.some((r) => Number(r["id"]) === 8), false);
  assert.deepEqual(rows.find((r) => Number(r["id"]) === 9)?.["name"], "gone");
  const full = await javaPkWrite(wh.path, reopened, [], { compact: true });
  assert.equal(full.error, undefined, full.error);
  const compacted = await reopen(wh.path, "pe.java_partial");
  const [javaRead] = await javaPkRead(wh.path, compacted, [{}]);
  assert.deepEqual(sortRows(await readJson(compacted)), sortRows(javaRead!.rows ?? []), javaRead!.error);
});

test("partial-update and pypaimon: pypaimon reads what natslake wrote (additions only), natslake reads what pypaimon wrote", { timeout: 300_000 }, async () => {
  const t = await createPartial("pe.py_reads", {});
  for (const rows of partialHistory()) await commit(t, rows);
  await compactTable(t);
  const ours = await readJson(await reopen(wh.path, "pe.py_reads"));
  assert.equal(ours.length, 30);
  assert.deepEqual(sortRows(await paimonRead(wh.path, "pe.py_reads")), sortRows(ours));

  const columns: Array<[string, string]> = [
    ["id", "BIGINT NOT NULL"],
    ["name", "STRING"],
    ["price", "DECIMAL(12, 2)"],
    ["qty", "INT"],
    ["note", "STRING"],
  ];
  const full = (r: R): R => ({ name: null, price: null, qty: null, note: null, ...r });
  const res = await paimonWrite({ warehouse: wh.path, table: "pe.py_writes", create: { columns, primaryKeys: ["id"], options: { bucket: "2", "file.format": "parquet", "merge-engine": "partial-update" } }, batches: partialHistory().map((b) => b.map(full)), overwrite: null });
  assert.equal(res.snapshots.length, 5);
  const pyTable = await reopen(wh.path, "pe.py_writes");
  const theirs = await readJson(pyTable);
  assert.deepEqual(sortRows(theirs), sortRows(await paimonRead(wh.path, "pe.py_writes")));
  assert.deepEqual(sortRows(theirs), sortRows(ours), "the same history written by either reads the same");
  const [java] = await javaPkRead(wh.path, pyTable, [{}]);
  assert.deepEqual(sortRows(java!.rows ?? []), sortRows(theirs), java!.error);
});

const AGG_COLUMNS = "id BIGINT NOT NULL, total BIGINT, amount DECIMAL(12,2), hi INT, lo DOUBLE, tags STRING, uniq STRING, first_seen INT, last_seen INT, ok BOOLEAN, any_ok BOOLEAN, factor INT";
const AGG_OPTIONS: Record<string, string> = {
  "merge-engine": "aggregation",
  "fields.total.aggregate-function": "sum",
  "fields.amount.aggregate-function": "sum",
  "fields.hi.aggregate-function": "max",
  "fields.hi.ignore-retract": "true",
  "fields.lo.aggregate-function": "min",
  "fields.lo.ignore-retract": "true",
  "fields.tags.aggregate-function": "listagg",
  "fields.tags.ignore-retract": "true",
  "fields.uniq.aggregate-function": "listagg",
  "fields.uniq.distinct": "true",
  "fields.uniq.list-agg-delimiter": "|",
  "fields.uniq.ignore-retract": "true",
  "fields.first_seen.aggregate-function": "first_non_null_value",
  "fields.first_seen.ignore-retract": "true",
  "fields.last_seen.aggregate-function": "last_value",
  "fields.ok.aggregate-function": "bool_and",
  "fields.ok.ignore-retract": "true",
  "fields.any_ok.aggregate-function": "bool_or",
  "fields.any_ok.ignore-retract": "true",
  "fields.factor.aggregate-function": "product",
};

/** Five commits over 20 keys: every function gets values, nulls and (from the third commit on) retractions. */
function aggregationHistory(retractions: boolean): R[][] {
  const commits: R[][] = [];
  for (let c = 0; c < 5; c++) {
    const rows: R[] = [];
    for (let id = 0; id < 20; id++) {
      if ((id + c) % 4 === 0) continue;
      const v = id * 7 + c;
      rows.push({
        id,
        total: v,
        amount: `${v}.${c}5`,
        hi: v % 11,
        lo: v % 3 === 0 ? null : v / 4,
        tags: `t${c}`,
        uniq: `u${v % 3}|u${c % 2}`,
        first_seen: c === 0 && id % 2 === 0 ? null : c,
        last_seen: c,
        ok: v % 5 !== 0,
        any_ok: v % 7 === 0,
        factor: (c % 2) + 1,
      });
      if (retractions && c >= 2 && id % 3 === 0) rows.push({ _row_kind: id % 2 === 0 ? "-D" : "-U", id, total: 1, amount: "0.50", factor: 1, last_seen: c });
    }
    commits.push(rows);
  }
  return commits;
}

test("aggregation written by natslake (commits, compactions, retractions) reads the same through Java at every snapshot; Java continues it; a table Java writes reads the same through natslake", { timeout: 600_000 }, async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("pe.agg"), { columns: parseColumnList(AGG_COLUMNS), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "2", "num-sorted-run.compaction-trigger": "3", ...AGG_OPTIONS } });
  const snapshots: number[] = [];
  for (const [i, rows] of aggregationHistory(true).entries()) {
    snapshots.push(await commit(t, rows));
    if (i === 2 || i === 4) {
      const s = await compactTable(t, i === 4 ? { full: true } : {});
      if (s.snapshotId !== null) snapshots.push(s.snapshotId);
    }
  }
  const reopened = await reopen(wh.path, "pe.agg");
  const one = (await readJson(reopened)).find((r) => Number(r["id"]) === 1)!;
  // id 1 is in commits 0, 1, 2, 4 (not 3: (1 + 3) % 4 = 0): 7+8+9+11 = 35; tags in commit order.
  assert.deepEqual([one["total"], one["tags"], one["first_seen"], one["last_seen"]], [35, "t0,t1,t2,t4", 0, 4]);
  await javaAgrees(reopened, snapshots);
  const java = await javaPkWrite(wh.path, reopened, [[{ id: 1, total: 3, tags: "java" }], [{ _row_kind: "-D", id: 3, total: 100, factor: 1 }]], { compact: true });
  assert.equal(java.error, undefined, java.error);
  const afterJava = await reopen(wh.path, "pe.agg");
  const [javaRead] = await javaPkRead(wh.path, afterJava, [{}]);
  const ours = await readJson(afterJava);
  assert.deepEqual(sortRows(ours), sortRows(javaRead!.rows ?? []), javaRead!.error);
  assert.equal(ours.find((r) => Number(r["id"]) === 1)!["total"], 38);

  // Java writes the same history (its buffer folds with the real aggregators, its compactions fold across levels).
  const j = await new Catalog(wh.path).createTable(parseIdentifier("pe.java_agg"), { columns: parseColumnList(AGG_COLUMNS), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "2", ...AGG_OPTIONS } });
  const written = await javaPkWrite(wh.path, j, aggregationHistory(true));
  assert.equal(written.error, undefined, written.error);
  const jt = await reopen(wh.path, "pe.java_agg");
  await javaAgrees(jt, written.commits.flatMap((c) => c.snapshots.map((s) => s.id)));
  const [natslakeWritten] = await javaPkRead(wh.path, reopened, [{ snapshotId: snapshots[snapshots.length - 1]! }]);
  assert.deepEqual(sortRows(await readJson(jt)), sortRows(natslakeWritten!.rows ?? []), "the same history written by Java and by natslake reads the same");
});

test("aggregation with remove-record-on-delete: natslake's table reads the same through Java; pypaimon reads an aggregation table without retractions", { timeout: 600_000 }, async () => {
  const cols = "id BIGINT NOT NULL, total BIGINT, hi INT, note STRING";
  const options = { bucket: "1", "merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true", "fields.total.aggregate-function": "sum", "fields.hi.aggregate-function": "max" };
  const t = await new Catalog(wh.path).createTable(parseIdentifier("pe.agg_remove"), { columns: parseColumnList(cols), primaryKeys: ["id"], partitionKeys: [], options });
  const snapshots = [
    await commit(t, [{ id: 1, total: 5, hi: 1, note: "a" }, { id: 2, total: 7, hi: 9 }, { id: 3, total: 1 }]),
    await commit(t, [{ _row_kind: "-D", id: 1 }, { id: 2, total: 1, hi: 3 }]),
    // A -D and a later row of the key in one commit: the flush folds them into one +I of 40 + 2 (the row aggregates
    // onto the -D's values), which a read then adds to the older 1 — as Java merges the same files.
    await commit(t, [{ _row_kind: "-D", id: 3, total: 40, hi: 4 }, { id: 3, total: 2 }, { id: 1, total: 100 }]),
  ];
  const s = await compactTable(t);
  if (s.snapshotId !== null) snapshots.push(s.snapshotId);
  const rows = await readJson(await reopen(wh.path, "pe.agg_remove"));
  assert.deepEqual(sortRows(rows), sortRows([{ id: 1, total: 100, hi: null, note: null }, { id: 2, total: 8, hi: 9, note: null }, { id: 3, total: 43, hi: 4, note: null }]));
  await javaAgrees(await reopen(wh.path, "pe.agg_remove"), snapshots);

  // pypaimon reads aggregation (not ignore-retract nor remove-record-on-delete, and no retraction rows).
  const py = await new Catalog(wh.path).createTable(parseIdentifier("pe.agg_py"), { columns: parseColumnList(cols), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "2", "merge-engine": "aggregation", "fields.total.aggregate-function": "sum", "fields.hi.aggregate-function": "max" } });
  for (let c = 0; c < 4; c++) await commit(py, Array.from({ length: 12 }, (_, id) => ({ id, total: id + c, hi: (id * c) % 5, note: c % 2 === 0 ? null : `n${c}` })));
  const ours = await readJson(await reopen(wh.path, "pe.agg_py"));
  assert.deepEqual(sortRows(await paimonRead(wh.path, "pe.agg_py")), sortRows(ours));
  assert.equal(ours.find((r) => Number(r["id"]) === 5)!["total"], 5 * 4 + 6);
});

test("first-row: natslake's table (level 0 compacted up) reads the same through Java and pypaimon; Java's reads skip level 0 as natslake's do; a table Java writes reads the same through natslake", { timeout: 600_000 }, async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("pe.first"), { columns: parseColumnList(COLUMNS), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "2", "merge-engine": "first-row", "ignore-delete": "true" } });
  const snapshots: number[] = [];
  for (const [c, rows] of partialHistory().entries()) {
    const extra: R[] = c === 3 ? [{ _row_kind: "-D", id: 1 }] : c === 4 ? [100, 101, 102].map((id) => ({ id, name: "new" })) : [];
    snapshots.push(await commit(t, [...rows.map((r) => ({ ...r, note: `c${c}` })), ...extra]));
    if (c % 2 === 1) {
      const s = await compactTable(t);
      if (s.snapshotId !== null) snapshots.push(s.snapshotId);
    }
  }
  const reopened = await reopen(wh.path, "pe.first");
  const latest = await readJson(reopened);
  assert.equal(latest.length, 30, "the keys new in the last commit (level 0) are not read yet");
  assert.ok(latest.every((r) => r["note"] === "c0" || r["note"] === "c1"), "each key's first version (every key is in c0 or c1)");
  await javaAgrees(reopened, snapshots);
  const full = await compactTable(reopened, { full: true });
  const compacted = await reopen(wh.path, "pe.first");
  await javaAgrees(compacted, [full.snapshotId!]);
  const all = await readJson(compacted);
  assert.equal(all.length, 33);
  assert.deepEqual(sortRows(await paimonRead(wh.path, "pe.first")), sortRows(all), "pypaimon (which reads level 0 too) agrees once nothing is left there");

  const j = await new Catalog(wh.path).createTable(parseIdentifier("pe.java_first"), { columns: parseColumnList(COLUMNS), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "2", "merge-engine": "first-row" } });
  const written = await javaPkWrite(wh.path, j, partialHistory().map((rows, c) => rows.map((r) => ({ ...r, note: `c${c}` }))));
  assert.equal(written.error, undefined, written.error);
  await javaAgrees(await reopen(wh.path, "pe.java_first"), written.commits.flatMap((c) => c.snapshots.map((s) => s.id)));
});

test("aggregation with collect and merge_map (retractions too): natslake's table and Java's read the same elements and entries (Java orders a distinct collect and a merged map by hash)", { timeout: 600_000 }, async () => {
  const cols = "id BIGINT NOT NULL, items ARRAY<STRING>, tags ARRAY<INT>, attrs MAP<STRING, INT>";
  const options = { bucket: "2", "merge-engine": "aggregation", "fields.items.aggregate-function": "collect", "fields.tags.aggregate-function": "collect", "fields.tags.distinct": "true", "fields.attrs.aggregate-function": "merge_map", "num-sorted-run.compaction-trigger": "3" };
  const history = (): R[][] =>
    Array.from({ length: 5 }, (_, c) => [
      ...Array.from({ length: 10 }, (_, id) => ({ id, items: [`i${c}`, `i${id % 3}`], tags: [c % 3, id % 4, c % 3], attrs: { [`k${c % 3}`]: c, [`id${id % 2}`]: id } })),
      ...(c >= 2 ? [{ _row_kind: "-U", id: c, items: [`i${c - 1}`], tags: [], attrs: { k0: 0 } }] : []),
    ]);
  // Set-like values compared as sets: the distinct collect's elements sorted.
  const norm = (rows: R[]): R[] => sortRows(rows.map((r) => ({ ...r, tags: r["tags"] === null ? null : [...(r["tags"] as number[])].sort((a, b) => a - b) })));
  const t = await new Catalog(wh.path).createTable(parseIdentifier("pe.collect"), { columns: parseColumnList(cols), primaryKeys: ["id"], partitionKeys: [], options });
  const snapshots: number[] = [];
  for (const [c, rows] of history().entries()) {
    snapshots.push(await commit(t, rows));
    if (c === 2) {
      const s = await compactTable(t);
      if (s.snapshotId !== null) snapshots.push(s.snapshotId);
    }
  }
  const reopened = await reopen(wh.path, "pe.collect");
  const java = await javaPkRead(wh.path, reopened, snapshots.map((snapshotId) => ({ snapshotId })));
  for (const [i, snapshotId] of snapshots.entries()) {
    assert.ok(java[i]!.rows !== undefined, java[i]!.error);
    assert.deepEqual(norm(java[i]!.rows), norm(await readJson(reopened, { snapshotId })), `snapshot ${snapshotId}`);
  }
  const three = (await readJson(reopened)).find((r) => Number(r["id"]) === 3)!;
  // id 3: i0..i4, each with i0, in commit order. The -U of commit 3 ("i2") met only that commit's row in the write
  // buffer, which has no "i2" to take back — Java's buffer folds the same, so the older "i2" stays.
  assert.deepEqual(three["items"], ["i0", "i0", "i1", "i0", "i2", "i0", "i3", "i0", "i4", "i0"]);
  const j = await new Catalog(wh.path).createTable(parseIdentifier("pe.java_collect"), { columns: parseColumnList(cols), primaryKeys: ["id"], partitionKeys: [], options });
  const written = await javaPkWrite(wh.path, j, history());
  assert.equal(written.error, undefined, written.error);
  const [javaRead] = await javaPkRead(wh.path, await reopen(wh.path, "pe.java_collect"), [{}]);
  assert.deepEqual(norm(await readJson(await reopen(wh.path, "pe.java_collect"))), norm(javaRead!.rows ?? []), javaRead!.error);
  assert.deepEqual(norm(javaRead!.rows ?? []), norm(await readJson(reopened)), "the same history written by Java and by natslake");
});

test("partial-update sequence groups (aggregates in groups, retractions, remove-record-on-sequence-group): natslake's table reads the same through Java at every snapshot and projected; Java's table reads the same through natslake", { timeout: 600_000 }, async () => {
  const cols = "id BIGINT NOT NULL, a STRING, b INT, g1 BIGINT, c STRING, total INT, g2 INT, free STRING";
  const options = {
    bucket: "2",
    "merge-engine": "partial-update",
    "fields.g1.sequence-group": "a,b",
    "fields.g2.sequence-group": "c,total",
    "fields.total.aggregate-function": "sum",
    "partial-update.remove-record-on-sequence-group": "g1",
    "num-sorted-run.compaction-trigger": "3",
  };
  // Group 1's sequence goes up and down (an older version must not win); group 2's sometimes null (passed over).
  const history = (): R[][] =>
    Array.from({ length: 6 }, (_, c) =>
      Array.from({ length: 12 }, (_, id) => {
        const rows: R[] = [{ id, a: `a${c}`, b: c * 10 + id, g1: (c * 7 + id) % 5, c: `c${c}`, total: id + c, g2: (c + id) % 4 === 0 ? null : c, free: c % 2 === 0 ? `f${c}` : null }];
        if (c >= 3 && id % 4 === 1) rows.push({ _row_kind: "-U", id, c: "retracted", total: 1, g2: c });
        if (c === 4 && id % 6 === 0) rows.push({ _row_kind: "-D", id, g1: 9 });
        return rows;
      }).flat(),
    );
  const t = await new Catalog(wh.path).createTable(parseIdentifier("pe.groups"), { columns: parseColumnList(cols), primaryKeys: ["id"], partitionKeys: [], options });
  const snapshots: number[] = [];
  let afterDelete = 0;
  for (const [c, rows] of history().entries()) {
    snapshots.push(await commit(t, rows));
    if (c === 4) afterDelete = snapshots[snapshots.length - 1]!;
    if (c === 2 || c === 4) {
      const s = await compactTable(t);
      if (s.snapshotId !== null) snapshots.push(s.snapshotId);
    }
  }
  const reopened = await reopen(wh.path, "pe.groups");
  await javaAgrees(reopened, snapshots);
  const [projected] = await javaPkRead(wh.path, reopened, [{ columns: ["total", "a"] }]);
  assert.deepEqual(sortRows(projected!.rows ?? []), sortRows(await readJson(reopened, { projection: ["total", "a"] })), projected!.error);
  const ids = (await readJson(reopened, { snapshotId: afterDelete })).map((r) => Number(r["id"]));
  assert.deepEqual([ids.includes(0), ids.includes(6), ids.length], [false, false, 10], "a -D of g1's group (sequence 9, newer than any) removed rows 0 and 6; the next commit writes them again");

  const j = await new Catalog(wh.path).createTable(parseIdentifier("pe.java_groups"), { columns: parseColumnList(cols), primaryKeys: ["id"], partitionKeys: [], options });
  const written = await javaPkWrite(wh.path, j, history());
  assert.equal(written.error, undefined, written.error);
  await javaAgrees(await reopen(wh.path, "pe.java_groups"), written.commits.flatMap((c) => c.snapshots.map((s) => s.id)));
});
