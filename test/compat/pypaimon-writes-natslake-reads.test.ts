/**
 * pypaimon writes → natslake reads identical rows (fixed-bucket and unaware-bucket append tables, partitioned),
 * and the rows natslake puts in bucket k are the rows pypaimon puts in bucket k.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { paimonRead, paimonWrite } from "../helpers/python.ts";
import { createTable, readJson, reopen, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import { planScan } from "../../src/scan/plan.ts";
import { readRows } from "../../src/scan/read.ts";
import { toCanonical, toJsonValue } from "../../src/format/values.ts";

const wh = tempDir();
after(() => wh.cleanup());

const COLUMNS: Array<[string, string]> = [
  ["id", "BIGINT NOT NULL"],
  ["name", "STRING"],
  ["amount", "DECIMAL(12, 3)"],
  ["day", "DATE"],
  ["at", "TIMESTAMP(6)"],
  ["score", "DOUBLE"],
  ["dt", "STRING NOT NULL"],
];

const rowsFor = (from: number, n: number, dt: string): Array<Record<string, unknown>> =>
  Array.from({ length: n }, (_, k) => {
    const i = from + k;
    return {
      id: i,
      name: i % 7 === 0 ? null : `name-${i}`,
      amount: i % 11 === 0 ? null : `${i}.${String(i % 1000).padStart(3, "0")}`,
      day: `2026-01-${String(1 + (i % 28)).padStart(2, "0")}`,
      at: `2026-11-29T08:00:00.${String(i).padStart(6, "0")}`,
      score: i / 8,
      dt,
    };
  });

for (const [label, options] of [
  ["fixed buckets", { bucket: "4", "bucket-key": "id", "file.format": "parquet" }],
  ["unaware bucket", { bucket: "-1", "file.format": "parquet" }],
] as const) {
  test(`pypaimon → natslake - ${label}, partitioned, two snapshots`, async () => {
    const name = `compat.py_${label.replace(" ", "_")}`;
    const b1 = rowsFor(0, 150, "2026-11-28");
    const b2 = [...rowsFor(150, 50, "2026-11-28"), ...rowsFor(200, 80, "2026-11-29")];
    const res = await paimonWrite({ warehouse: wh.path, table: name, create: { columns: COLUMNS, partitionKeys: ["dt"], options: { ...options } }, batches: [b1, b2], overwrite: null });
    assert.deepEqual(res.snapshots, [1, 2]);
    const t = await reopen(wh.path, name);
    assert.deepEqual(sortRows(await readJson(t)), sortRows([...b1, ...b2]));
    assert.deepEqual(sortRows(await readJson(t, { snapshotId: 1 })), sortRows(b1));
    assert.deepEqual(sortRows(await readJson(t, { partition: ["2026-11-29"] })), sortRows(rowsFor(200, 80, "2026-11-29")));
    // The same rows as pypaimon itself reads.
    assert.deepEqual(sortRows(await readJson(t)), sortRows(await paimonRead(wh.path, name)));
  });
}

test("pypaimon → natslake - an overwrite by pypaimon is honoured", async () => {
  const name = "compat.py_overwrite";
  await paimonWrite({ warehouse: wh.path, table: name, create: { columns: COLUMNS, partitionKeys: ["dt"], options: { bucket: "2", "bucket-key": "id" } }, batches: [rowsFor(0, 40, "a"), rowsFor(40, 40, "b")], overwrite: null });
  await paimonWrite({ warehouse: wh.path, table: name, create: null, batches: [rowsFor(100, 5, "a")], overwrite: { dt: "a" } });
  const t = await reopen(wh.path, name);
  assert.deepEqual(sortRows(await readJson(t)), sortRows([...rowsFor(40, 40, "b"), ...rowsFor(100, 5, "a")]));
});

async function bucketsOf(warehouse: string, name: string): Promise<Map<string, number>> {
  const t = await reopen(warehouse, name);
  const plan = await planScan(t);
  const out = new Map<string, number>();
  for (const split of plan.splits) {
    for await (const row of readRows(t, { buckets: [split.bucket], partition: split.partitionValues })) {
      out.set(JSON.stringify(Object.values(row).map((v) => (typeof v === "bigint" ? v.toString() : v))), split.bucket);
    }
  }
  return out;
}

for (const [label, columns, keys, make] of [
  ["BIGINT key", "id BIGINT NOT NULL, v STRING", "id", (i: number) => ({ id: i * 7919 - 5000, v: `v${i}` })],
  ["STRING key longer and shorter than 7 bytes", "k STRING NOT NULL, v INT", "k", (i: number) => ({ k: i % 2 ? `k${i}` : `a-much-longer-key-${i}`, v: i })],
  ["composite INT + STRING + DATE key", "a INT NOT NULL, b STRING NOT NULL, c DATE NOT NULL, v INT", "a,b,c", (i: number) => ({ a: i - 50, b: `b${i % 13}`, c: `2026-03-${String(1 + (i % 28)).padStart(2, "0")}`, v: i })],
] as const) {
  test(`bucket agreement - ${label}: natslake puts each row in the bucket pypaimon puts it in`, async () => {
    const rows = Array.from({ length: 200 }, (_, i) => make(i) as Record<string, unknown>);
    const ours = `compat.bk_ours_${label.split(" ")[0]!.toLowerCase()}`;
    const theirs = `compat.bk_theirs_${label.split(" ")[0]!.toLowerCase()}`;
    const t = await createTable(wh.path, ours, columns, { options: { bucket: "5", "bucket-key": keys } });
    await writeRows(t, rows);
    const colsSpec: Array<[string, string]> = t.schema.fields.map((f) => [f.name, columns.split(", ").find((c) => c.startsWith(f.name + " "))!.slice(f.name.length + 1)]);
    await paimonWrite({ warehouse: wh.path, table: theirs, create: { columns: colsSpec, options: { bucket: "5", "bucket-key": keys } }, batches: [rows.map((r) => Object.fromEntries(t.schema.fields.map((f) => [f.name, toJsonValue(f.type, toCanonical(f.type, r[f.name], f.name))])))], overwrite: null });
    const a = await bucketsOf(wh.path, ours);
    const b = await bucketsOf(wh.path, theirs);
    assert.equal(a.size, rows.length);
    assert.equal(b.size, rows.length);
    assert.deepEqual([...a.entries()].sort(), [...b.entries()].sort());
    assert.ok(new Set(a.values()).size > 1, "rows spread over several buckets");
  });
}
