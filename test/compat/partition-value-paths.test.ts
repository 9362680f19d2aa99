/**
 * Partition values are written into paths, escaped as Java's PartitionPathUtils does (src/format/partition.ts): a
 * value holding `/`, `..`, `%`, `=`, `%2e%2e`, control characters or non-ASCII text is one `key=value` directory
 * under the table, never a path outside it, and released Java Paimon (1.4.2) reads every row back with its value
 * unchanged — so the directory natslake wrote is the one Java computes. natslake and pypaimon read them back too.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { javaPaimonRead, javaRows } from "../helpers/java.ts";
import { paimonRead } from "../helpers/python.ts";
import { createTable, readJson, sortRows, tempDir, writeRows } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

const VALUES = ["a/b", "..", ".", "../../x", "%", "100%", "a=b", "%2e%2e", "%2F", "é/ü", "日本", "x:y", "#?*", "a\tb", "\\", " lead", "__DEFAULT_PARTITION__x"];

/** Every file under `dir`, as paths relative to it. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

test("partition values with '/', '..', '%', '=' and others: one escaped directory each under the table; Java Paimon reads every value back", { timeout: 240_000 }, async () => {
  const t = await createTable(wh.path, "esc.parts", "id BIGINT NOT NULL, p STRING, q STRING", { partitionKeys: ["p", "q"] });
  const rows = VALUES.map((v, i) => ({ id: i, p: v, q: VALUES[VALUES.length - 1 - i]! }));
  await writeRows(t, rows);

  const all = files(wh.path);
  assert.ok(all.length > VALUES.length, "data files were written");
  for (const f of all) assert.ok(f.startsWith(join("esc.db", "parts") + "/"), `${f} is under the table`);
  const dataDirs = new Set(all.filter((f) => f.endsWith(".parquet")).map((f) => relative(t.root, join(wh.path, f)).split("/").slice(0, 2).join("/")));
  assert.equal(dataDirs.size, VALUES.length, `one p=…/q=… directory per row: ${[...dataDirs].join(" | ")}`);
  for (const d of dataDirs) assert.match(d, /^p=[^/]+\/q=[^/]+$/);
  for (const d of ["p=a%2Fb/q=__DEFAULT_PARTITION__x", "p=%25/q=%23%3F%2A", "p=../q= lead", "p=./q=%5C", "p=%252e%252e/q=é%2Fü"]) assert.ok(dataDirs.has(d), `${d} in ${[...dataDirs].join(" | ")}`);

  const expected = sortRows(rows);
  assert.deepEqual(sortRows(await readJson(t)), expected);
  const [java] = await javaPaimonRead(wh.path, [t], [{ table: "esc.parts" }]);
  assert.deepEqual(sortRows(javaRows(java)), expected, "Java Paimon finds every file where natslake put it and reads the values unchanged");
  assert.deepEqual(sortRows(await paimonRead(wh.path, "esc.parts")), expected, "and so does pypaimon");
});
