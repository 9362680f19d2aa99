/**
 * natslake writes → pypaimon reads identical rows: every type pypaimon supports, nulls, partitions, several
 * buckets, several snapshots (time travel), and an overwrite.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { paimonRead } from "../helpers/python.ts";
import { createTable, expectedJson, readJson, sortRows, tempDir, writeRows } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

const ALL_TYPES =
  "id BIGINT NOT NULL, b BOOLEAN, t TINYINT, s SMALLINT, i INT, f FLOAT, d DOUBLE, dec_small DECIMAL(10, 2), " +
  "dec_big DECIMAL(38, 10), str STRING, vc VARCHAR(20), ch CHAR(3), bin BYTES, d8 DATE, ts3 TIMESTAMP(3), ts6 TIMESTAMP(6), " +
  "ltz TIMESTAMP_LTZ(6), tags ARRAY<STRING>, attrs MAP<STRING, INT>, pt ROW<x DOUBLE, y STRING>, req STRING NOT NULL";

function allTypesRow(i: number): Record<string, unknown> {
  const nul = i % 5 === 4; // every fifth row is all nulls (where nullable)
  return {
    id: i,
    b: nul ? null : i % 2 === 0,
    t: nul ? null : (i % 256) - 128,
    s: nul ? null : i * 7 - 30000,
    i: nul ? null : i * 100_003 - 2_000_000_000,
    f: nul ? null : i / 4,
    d: nul ? null : i * 1.5e100,
    dec_small: nul ? null : `${i}.${String(i % 100).padStart(2, "0")}`,
    dec_big: nul ? null : `-${"9".repeat(27)}.${String(i).padStart(10, "0")}`,
    str: nul ? null : `row ${i} — ünïcödé 🚀`,
    vc: nul ? null : `v${i}`,
    ch: nul ? null : "abc",
    bin: nul ? null : Buffer.from([i % 256, 0, 255, 7]).toString("base64"),
    d8: nul ? null : `2026-0${1 + (i % 9)}-1${i % 10}`,
    ts3: nul ? null : `2026-11-29T10:00:0${i % 10}.123`,
    ts6: nul ? null : `1969-12-31T23:59:59.${String(100000 + i).padStart(6, "0")}`,
    ltz: nul ? null : `2026-11-29T10:00:00.${String(i).padStart(6, "0")}Z`,
    tags: nul ? null : i % 3 === 0 ? [] : [`a${i}`, null, "b"],
    attrs: nul ? null : { k1: i, k2: null },
    pt: nul ? null : { x: i + 0.5, y: i % 2 ? null : "y" },
    req: `r${i}`,
  };
}

test("natslake → pypaimon - every type, nulls, unpartitioned, unaware bucket", async () => {
  const t = await createTable(wh.path, "compat.all_types", ALL_TYPES);
  const rows = Array.from({ length: 25 }, (_, i) => allTypesRow(i));
  await writeRows(t, rows);
  const expected = rows.map((r) => expectedJson(t, r));
  const ours = await readJson(t);
  assert.deepEqual(ours, expected, "natslake reads its own rows back in write order");
  const theirs = await paimonRead(wh.path, "compat.all_types");
  assert.equal(theirs.length, rows.length);
  assert.deepEqual(sortRows(theirs), sortRows(expected));
});

test("natslake → pypaimon - partitions, 3 buckets, 3 snapshots, time travel and an overwrite", async () => {
  const t = await createTable(wh.path, "compat.events", "id BIGINT NOT NULL, dt STRING NOT NULL, region INT, msg STRING", {
    partitionKeys: ["dt", "region"],
    options: { bucket: "3", "bucket-key": "id" },
  });
  const batch = (from: number, n: number, dt: string) =>
    Array.from({ length: n }, (_, k) => ({ id: from + k, dt, region: (from + k) % 2, msg: `m${from + k}` }));
  const b1 = batch(0, 300, "2026-11-28");
  const b2 = batch(300, 200, "2026-11-29");
  const b3 = batch(500, 100, "2026-11-28");
  const s1 = await writeRows(t, b1);
  const s2 = await writeRows(t, b2);
  const s3 = await writeRows(t, b3);
  assert.deepEqual([s1, s2, s3], [1, 2, 3]);

  const all = [...b1, ...b2, ...b3].map((r) => expectedJson(t, r));
  assert.deepEqual(sortRows(await paimonRead(wh.path, "compat.events")), sortRows(all));
  assert.deepEqual(sortRows(await paimonRead(wh.path, "compat.events", { snapshot: 1 })), sortRows(b1.map((r) => expectedJson(t, r))));
  assert.deepEqual(sortRows(await readJson(t, { snapshotId: 2 })), sortRows([...b1, ...b2].map((r) => expectedJson(t, r))));

  // Overwrite exactly one partition (dt=2026-11-28, region=0).
  const repl = [{ id: 9000, dt: "2026-11-28", region: 0, msg: "replacement" }];
  const s4 = await writeRows(t, repl, { partition: ["2026-11-28", 0] });
  assert.equal(s4, 4);
  const after4 = [...b1, ...b2, ...b3].filter((r) => !(r.dt === "2026-11-28" && r.region === 0)).concat(repl).map((r) => expectedJson(t, r));
  assert.deepEqual(sortRows(await paimonRead(wh.path, "compat.events")), sortRows(after4));
  assert.deepEqual(sortRows(await readJson(t)), sortRows(after4));
  // The snapshot before the overwrite still reads whole.
  assert.equal((await paimonRead(wh.path, "compat.events", { snapshot: 3 })).length, 600);
});

test("natslake → pypaimon - overwrite of the whole table", async () => {
  const t = await createTable(wh.path, "compat.ow_all", "id INT, dt STRING", { partitionKeys: ["dt"] });
  await writeRows(t, [{ id: 1, dt: "a" }, { id: 2, dt: "b" }]);
  await writeRows(t, [{ id: 3, dt: "c" }], { partition: null });
  assert.deepEqual(await paimonRead(wh.path, "compat.ow_all"), [{ id: 3, dt: "c" }]);
});
