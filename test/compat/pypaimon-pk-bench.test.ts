/**
 * bench/py/pypaimon_pk_bench.py writes the rows of bench/shape.ts `benchUpsertRow` — the rows natslake's and Java's
 * sides of the primary-key write benchmark write — so the three writers are compared on the same data: natslake
 * reads the table pypaimon wrote (4 buckets, one commit) and finds exactly the rows of the same upserts written by
 * natslake's BatchWriter, every column, one row per key (the last upsert of each). The script's JSON line reports
 * what it wrote.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { BENCH_COLUMNS, benchUpsertRow } from "../../bench/shape.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { PYPAIMON_PK_BENCH_PY, runPython } from "../helpers/python.ts";
import { readJson, sortRows, tempDir } from "../helpers/tables.ts";

test("pypaimon PK bench script - writes benchUpsertRow's rows: natslake reads the same rows as its own upserts of them", { timeout: 180_000 }, async (tc) => {
  const wh = tempDir();
  tc.after(() => wh.cleanup());
  const rows = 3000;
  const out = JSON.parse((await runPython(PYPAIMON_PK_BENCH_PY, [join(wh.path, "py"), String(rows), "4", "100"])).trim()) as Record<string, unknown>;
  assert.equal(out["rows"], rows);
  assert.equal(out["keys"], rows * 0.9, "every tenth row updates an earlier key");
  assert.equal(out["warmup_rows"], 100);
  assert.equal(out["record_count"], rows * 0.9, "the commit holds one row per key");
  assert.ok(typeof out["write_s"] === "number" && out["write_s"] > 0);

  const py = await new Catalog(join(wh.path, "py")).getTable(parseIdentifier("bench.measured"));
  assert.deepEqual(py.schema.primaryKeys, ["id"]);
  assert.equal(py.options.raw["bucket"], "4");
  const ours = await new Catalog(join(wh.path, "ns")).createTable(parseIdentifier("bench.measured"), { columns: parseColumnList(BENCH_COLUMNS), primaryKeys: ["id"], options: { bucket: "4" } });
  const w = await BatchWriter.open(ours);
  await w.upsert(Array.from({ length: rows }, (_, i) => benchUpsertRow(i)));
  await w.commit();
  const expected = sortRows(await readJson(ours));
  assert.equal(expected.length, rows * 0.9);
  assert.deepEqual(sortRows(await readJson(py)), expected);
});
