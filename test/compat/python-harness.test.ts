/**
 * The Python oracle harness on its own: pypaimon writes with paimon_write.py, pypaimon reads with paimon_read.py,
 * and what comes back must equal the input as natslake's own `toJsonValue(toCanonical(...))` renders it. This proves
 * the harness round-trips under pypaimon alone and that the Python rendering matches the TypeScript one, before any
 * natslake-written table is compared against it.
 */
import { strict as assert } from "node:assert";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { parseSqlType } from "../../src/format/data-types.ts";
import { toCanonical, toJsonValue } from "../../src/format/values.ts";
import { PAIMON_READ_PY, paimonRead, paimonWrite, pythonBin, runPython } from "../helpers/python.ts";

const COLUMNS: Array<[string, string]> = [
  ["id", "BIGINT NOT NULL"],
  ["p", "STRING NOT NULL"],
  ["flag", "BOOLEAN"],
  ["i8", "TINYINT"],
  ["i16", "SMALLINT"],
  ["i32", "INT"],
  ["i64", "BIGINT"],
  ["f32", "FLOAT"],
  ["f64", "DOUBLE"],
  ["dec", "DECIMAL(20, 4)"],
  ["dec0", "DECIMAL(38, 0) NOT NULL"],
  ["name", "STRING"],
  ["code", "VARCHAR(10)"],
  ["raw", "BYTES"],
  ["day", "DATE"],
  ["tod", "TIME(2)"],
  ["ts3", "TIMESTAMP(3)"],
  ["ts6", "TIMESTAMP(6)"],
  ["ts9", "TIMESTAMP(9)"],
  ["ltz", "TIMESTAMP(3) WITH LOCAL TIME ZONE"],
  ["tags", "ARRAY<STRING>"],
  ["attrs", "MAP<STRING, BIGINT>"],
  ["byid", "MAP<INT, STRING>"],
  ["addr", "ROW<city STRING, `zip code` INT NOT NULL>"],
];

const BATCH1: Array<Record<string, unknown>> = [
  {
    id: 1,
    p: "a",
    flag: true,
    i8: -128,
    i16: 32767,
    i32: -2147483648,
    i64: "9223372036854775807",
    f32: 1.1, // not a float32: must come back as Math.fround(1.1)
    f64: 0.1,
    dec: "-0.05",
    dec0: "-99999999999999999999999999999999999999",
    name: "héllo, 世界 \"quoted\"\n",
    code: "",
    raw: "AAEC/w==",
    day: "2024-02-29",
    tod: "01:02:03.456",
    ts3: "2024-01-02T03:04:05.123",
    ts6: "2024-01-02T03:04:05.123456",
    ts9: "2024-01-02T03:04:05.123456789",
    ltz: "2024-01-02T03:04:05.123+01:00",
    tags: ["x", null, ""],
    attrs: { a: 1, b: null, big: "9007199254740993" },
    byid: [[1, "one"], [-2, null]],
    addr: { city: "Oslo", "zip code": 150 },
  },
  {
    id: 2,
    p: "b",
    f32: "NaN",
    f64: "-Infinity",
    dec: "12.3",
    dec0: "0",
    i64: -9007199254740991,
    day: "1969-12-31",
    ts3: "1969-12-31T23:59:59.999",
    ts6: "1970-01-01T00:00:00",
    tod: "23:59:59",
    tags: [],
    attrs: {},
    addr: null,
  },
];

const BATCH2: Array<Record<string, unknown>> = [
  { id: 3, p: "a", f64: 1e300, f32: "Infinity", dec: "99999999999999.9999", dec0: "1", name: null, ts9: "2262-04-11T23:47:16.854775807" },
  { id: 4, p: "c", dec0: "42", i64: "-9007199254740992", ltz: "1999-12-31T23:59:59.999Z", addr: { city: null, "zip code": 0 } },
  { id: 5, p: "c", dec0: "7", flag: false, raw: "", day: "0001-01-01" },
];

/** What natslake itself would render for an input row: toJsonValue(toCanonical(value)) per column, in column order. */
function expected(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, sql] of COLUMNS) {
    const type = parseSqlType(sql);
    out[name] = toJsonValue(type, toCanonical(type, row[name] ?? null, name));
  }
  return out;
}

const byId = (a: Record<string, unknown>, b: Record<string, unknown>): number => Number(a.id) - Number(b.id);

void describe("python harness (pypaimon writes, pypaimon reads)", () => {
  let dir = "";
  before(async () => {
    pythonBin(); // fail (not skip) right away when the venv is missing
    dir = await mkdtemp(join(tmpdir(), "natslake-pyharness-"));
  });
  after(async () => {
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  void it("round-trips every supported type through a bucketed, partitioned table in two snapshots", async () => {
    const wh = join(dir, "wh");
    const res = await paimonWrite({
      warehouse: wh,
      table: "db.all_types",
      create: { columns: COLUMNS, partitionKeys: ["p"], options: { bucket: "3", "bucket-key": "id", "file.format": "parquet" } },
      batches: [BATCH1, BATCH2],
      overwrite: null,
    });
    assert.deepEqual(res, { table: "db.all_types", created: true, rows: 5, snapshots: [1, 2], latestSnapshot: 2 });

    const rows = await paimonRead(wh, "db.all_types");
    assert.deepStrictEqual(rows.sort(byId), [...BATCH1, ...BATCH2].map(expected));

    // Spot checks of the rendering rules, independent of toJsonValue.
    const [r1, r2, r3, r4] = rows;
    assert.equal(r1!.i64, "9223372036854775807");
    assert.equal(r1!.f32, Math.fround(1.1));
    assert.equal(r1!.dec, "-0.0500");
    assert.equal(r1!.dec0, "-99999999999999999999999999999999999999");
    assert.equal(r1!.raw, "AAEC/w==");
    assert.equal(r1!.tod, "01:02:03.45");
    assert.equal(r1!.ts9, "2024-01-02T03:04:05.123456789");
    assert.equal(r1!.ltz, "2024-01-02T02:04:05.123Z");
    assert.deepStrictEqual(r1!.attrs, { a: 1, b: null, big: "9007199254740993" });
    assert.deepStrictEqual(r1!.byid, [[1, "one"], [-2, null]]);
    assert.deepStrictEqual(r1!.addr, { city: "Oslo", "zip code": 150 });
    assert.equal(r2!.f32, "NaN");
    assert.equal(r2!.f64, "-Infinity");
    assert.equal(r2!.dec, "12.3000");
    assert.equal(r2!.ts6, "1970-01-01T00:00:00.000000");
    assert.equal(r2!.ts3, "1969-12-31T23:59:59.999");
    assert.equal(r2!.tod, "23:59:59.00");
    assert.equal(r2!.i64, -9007199254740991);
    assert.equal(r3!.f32, "Infinity");
    assert.equal(r4!.i64, "-9007199254740992");
  });

  void it("--with-bucket gives each row its split's bucket in [0, 3) and its partition", async () => {
    const rows = await paimonRead(join(dir, "wh"), "db.all_types", { withBucket: true, columns: ["id", "p"] });
    assert.equal(rows.length, 5);
    const bucketOf = new Map<unknown, unknown>();
    for (const r of rows) {
      assert.deepStrictEqual(Object.keys(r), ["id", "p", "_bucket", "_partition"]);
      assert.ok(Number.isInteger(r._bucket) && (r._bucket as number) >= 0 && (r._bucket as number) < 3, `bucket ${String(r._bucket)}`);
      assert.equal(r._partition, `p=${String(r.p)}`);
      bucketOf.set(r.id, r._bucket);
    }
    // Rows come split by split: all rows of one (partition, bucket) are contiguous.
    const seen = new Set<string>();
    let last = "";
    for (const r of rows) {
      const key = `${String(r._partition)}/${String(r._bucket)}`;
      if (key !== last) {
        assert.ok(!seen.has(key), `split ${key} appears twice`);
        seen.add(key);
        last = key;
      }
    }
    assert.equal(bucketOf.size, 5);
  });

  void it("reads an older snapshot, a projection and one partition", async () => {
    const wh = join(dir, "wh");
    const [snap1, projected, partC] = await Promise.all([
      paimonRead(wh, "db.all_types", { snapshot: 1 }),
      paimonRead(wh, "db.all_types", { columns: ["dec", "id"] }),
      paimonRead(wh, "db.all_types", { partition: { p: "c" }, columns: ["id"] }),
    ]);
    assert.deepStrictEqual(snap1.sort(byId), BATCH1.map(expected));

    assert.deepStrictEqual(
      projected.sort(byId),
      [...BATCH1, ...BATCH2].map((r) => ({ dec: expected(r).dec, id: r.id })),
    );
    assert.deepStrictEqual(Object.keys(projected[0]!), ["dec", "id"]);

    assert.deepStrictEqual(partC.map((r) => r.id).sort(), [4, 5]);

    await assert.rejects(paimonRead(wh, "db.all_types", { snapshot: 9 }), /snapshot 9 .* does not exist/);
  });

  void it("overwrites a partition of an unaware-bucket table", async () => {
    const wh = join(dir, "wh");
    const create = { columns: [["id", "INT"], ["dt", "STRING"], ["v", "DOUBLE"]] as Array<[string, string]>, partitionKeys: ["dt"], options: { bucket: "-1" } };
    const first = await paimonWrite({
      warehouse: wh,
      table: "db2.events",
      create,
      batches: [[{ id: 1, dt: "d1", v: 1.5 }, { id: 2, dt: "d2", v: 2.5 }]],
      overwrite: null,
    });
    assert.deepStrictEqual(first.snapshots, [1]);
    const second = await paimonWrite({ warehouse: wh, table: "db2.events", create: null, batches: [[{ id: 3, dt: "d1", v: -0.25 }]], overwrite: { dt: "d1" } });
    assert.deepStrictEqual(second.snapshots, [2]);
    const rows = await paimonRead(wh, "db2.events", { withBucket: true });
    assert.deepStrictEqual(rows.sort(byId), [
      { id: 2, dt: "d2", v: 2.5, _bucket: 0, _partition: "dt=d2" },
      { id: 3, dt: "d1", v: -0.25, _bucket: 0, _partition: "dt=d1" },
    ]);
    assert.deepStrictEqual(await paimonRead(wh, "db2.events", { snapshot: 1, columns: ["id"] }).then((r) => r.sort(byId)), [{ id: 1 }, { id: 2 }]);
  });

  void it("fails loudly: bad input, unknown table, missing interpreter", async () => {
    const wh = join(dir, "wh");
    await assert.rejects(
      paimonWrite({ warehouse: wh, table: "db.all_types", create: null, batches: [[{ id: 9, p: "a", dec0: null }]], overwrite: null }),
      /dec0 is NOT NULL/,
    );
    await assert.rejects(runPython(PAIMON_READ_PY, [wh, "db.nope"]), /exited with 1/);
    const saved = process.env.NATSLAKE_PYTHON;
    process.env.NATSLAKE_PYTHON = join(dir, "no-such-python");
    try {
      assert.throws(() => pythonBin(), /run \.ci\/run or create \.venv with pypaimon/);
    } finally {
      if (saved === undefined) delete process.env.NATSLAKE_PYTHON;
      else process.env.NATSLAKE_PYTHON = saved;
    }
  });
});
