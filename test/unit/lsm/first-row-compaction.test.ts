/**
 * Compaction of a first-row table keeps every key at most once across the levels ≥ 1 of its bucket, as Java's
 * lookup compaction does (LookupMergeTreeCompactRewriter with FirstRowMergeFunctionWrapper): Java's and pypaimon's
 * batch reads of first-row tables skip level 0 and read the levels above without merging them (raw-convertible
 * splits), so a key in two levels ≥ 1 is read twice there. Found by the pk-first-row chaos run (pypaimon read 8,409
 * keys twice). Universal compactions that stop short of the max level, over commits that repeat keys already
 * compacted up: after each, no key is in two files at levels ≥ 1, natslake reads each key's first version, and
 * pypaimon reads the same rows.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { compactTable } from "../../../src/maintenance/compact.ts";
import { liveBucketLevels } from "../../../src/maintenance/bucket-levels.ts";
import { readAllRows, readDataFile } from "../../../src/scan/read.ts";
import { BatchWriter } from "../../../src/write/batch-writer.ts";
import type { Table } from "../../../src/table/table.ts";
import { tempDir } from "../../helpers/tables.ts";
import { paimonRead } from "../../helpers/python.ts";

const wh = tempDir();
after(() => wh.cleanup());

/** Keys at most once in the levels ≥ 1 of each bucket: the keys held twice, with where. */
async function keysTwiceAboveLevel0(t: Table): Promise<string[]> {
  const out: string[] = [];
  for (const { bucket, levels } of await liveBucketLevels(t)) {
    const seen = new Map<number, number>();
    for (const f of levels.allFiles().filter((x) => x.level > 0)) {
      for (const b of await readDataFile(t, { partitionValues: [], bucket: bucket.bucket }, f, t.schema.fields, null)) {
        const ids = b.getChild("id")!;
        for (let i = 0; i < b.numRows; i++) {
          const id = Number(ids.get(i));
          const at = seen.get(id);
          if (at !== undefined) out.push(`bucket ${bucket.bucket}: key ${id} at levels ${at} and ${f.level}`);
          seen.set(id, f.level);
        }
      }
    }
  }
  return out;
}

test("first-row compaction - a key new in level 0 that a higher level holds is not written again: levels ≥ 1 hold each key once, and pypaimon reads what natslake reads", { timeout: 120_000 }, async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("fr.compact"), {
    columns: parseColumnList("id INT NOT NULL, v STRING"),
    primaryKeys: ["id"],
    options: { bucket: "1", "merge-engine": "first-row", "num-sorted-run.compaction-trigger": "2", "num-levels": "5", "file.compression": "none" },
  });
  const first = new Map<number, string>();
  let compacted = 0;
  let belowMax = 0;
  for (let round = 0; round < 12; round++) {
    // Round 0: a bulk of 2,000 keys (a large run at the max level, which universal compaction then leaves alone);
    // each later round: 20 keys, half of them seen before (they must not change), half new.
    const rows =
      round === 0
        ? Array.from({ length: 2000 }, (_, id) => ({ id, v: `r0.${id}`.padEnd(60, "x") }))
        : Array.from({ length: 20 }, (_, i) => ({ id: i % 2 === 0 ? (round * 131 + i * 17) % 2000 : 2000 + ((round * 7 + i) % 50), v: `r${round}.${i}` }));
    const w = await BatchWriter.open(t);
    await w.upsert(rows);
    for (const r of rows) if (!first.has(r.id)) first.set(r.id, r.v);
    await w.commit();
    if ((await compactTable(t)).snapshotId !== null) compacted++;
    const levels = (await liveBucketLevels(t))[0]!.levels;
    if (new Set(levels.allFiles().filter((f) => f.level > 0).map((f) => f.level)).size > 1) belowMax++;
    assert.deepEqual(await keysTwiceAboveLevel0(t), [], `after round ${round}`);
  }
  assert.ok(compacted >= 6, `compactions landed (${compacted})`);
  assert.ok(belowMax > 0, "some compactions wrote below the max level while it held the bulk");
  await compactTable(t); // level 0 up, so every read shows everything
  const want = [...first.entries()].map(([id, v]) => ({ id, v })).sort((a, b) => a.id - b.id);
  const nat = (await readAllRows(t)).map((r) => ({ id: Number(r["id"]), v: r["v"] })).sort((a, b) => a.id - b.id);
  assert.deepEqual(nat, want, "natslake reads each key's first version");
  const py = (await paimonRead(wh.path, "fr.compact", { columns: ["id", "v"] })).map((r) => ({ id: Number(r["id"]), v: r["v"] })).sort((a, b) => a.id - b.id);
  assert.deepEqual(py, want, "pypaimon reads the levels ≥ 1 without merging: each key once, its first version");
});
