/**
 * `changelog-producer = lookup` (src/lsm/lookup-changelog.ts and the compactions that run it): the rule on its own —
 * which changelog a key's before-value and merged result give, first-row's outcome, the versions a lookup table
 * merges, row-deduplicate with ignore-fields — then per engine through the library's compaction (compactTable over
 * BatchWriter commits): the changes a TableStream delivers, hand-computed from Paimon 1.4.2's
 * LookupChangelogMergeFunctionWrapper / FirstRowMergeFunctionWrapper, with keys whose before-value is in the
 * compaction and keys whose before-value is looked up in a level above the output.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { Catalog, parseColumnList, parseIdentifier } from "../../../src/index.ts";
import { newTableSchema } from "../../../src/format/schema.ts";
import { TableOptions } from "../../../src/options.ts";
import { firstRowOutcome, lookupChangelog, lookupCompactionOf, lookupMergeVersions, rowDeduplicateOf } from "../../../src/lsm/lookup-changelog.ts";
import { RowKind } from "../../../src/lsm/row-kind.ts";
import { compactTable } from "../../../src/maintenance/compact.ts";
import { readRows } from "../../../src/scan/read.ts";
import { streamToLatest } from "../../helpers/stream-items.ts";
import { BatchWriter } from "../../../src/write/batch-writer.ts";
import { readJson, reopen, sortRows, tempDir } from "../../helpers/tables.ts";
import type { Table } from "../../../src/table/table.ts";

const wh = tempDir();
after(() => wh.cleanup());

type R = { kind: RowKind; v: string };
const kindOf = (r: R): number => r.kind;
const add = (v: string): R => ({ kind: RowKind.INSERT, v });
const del = (v: string): R => ({ kind: RowKind.DELETE, v });
const shown = (cs: Array<{ kind: RowKind; row: R }>): string[] => cs.map((c) => `${["+I", "-U", "+U", "-D"][c.kind]}${c.row.v}`);

test("lookup changelog - the rule: +I for a new key, -D(before) for a deleted one, -U/+U for a change (none when row-deduplicate finds them equal), nothing for a key that stays absent", () => {
  const same = (a: R, b: R): boolean => a.v === b.v;
  assert.deepEqual(shown(lookupChangelog(null, add("a"), kindOf, null)), ["+Ia"]);
  assert.deepEqual(shown(lookupChangelog(del("x"), add("a"), kindOf, null)), ["+Ia"], "a retraction above is no before-value");
  assert.deepEqual(shown(lookupChangelog(add("a"), del("a"), kindOf, null)), ["-Da"]);
  assert.deepEqual(shown(lookupChangelog(add("a"), null, kindOf, null)), ["-Da"], "nothing surviving is a delete");
  assert.deepEqual(shown(lookupChangelog(null, del("a"), kindOf, null)), []);
  assert.deepEqual(shown(lookupChangelog(add("a"), add("b"), kindOf, null)), ["-Ua", "+Ub"]);
  assert.deepEqual(shown(lookupChangelog(add("a"), add("a"), kindOf, null)), ["-Ua", "+Ua"], "equal values still change without row-deduplicate");
  assert.deepEqual(shown(lookupChangelog(add("a"), add("a"), kindOf, same)), []);
  assert.deepEqual(shown(lookupChangelog(add("a"), add("b"), kindOf, same)), ["-Ua", "+Ub"]);
});

test("lookup changelog - first-row: +I for a key nothing holds (as stored), nothing when a version above is in the compaction, the level-0 version dropped when a level above holds the key", () => {
  let asked = 0;
  const above = (held: boolean) => (): boolean => {
    asked++;
    return held;
  };
  assert.deepEqual(firstRowOutcome(add("a"), false, above(false)), { result: add("a"), changelog: [add("a")] });
  assert.deepEqual(firstRowOutcome(add("a"), true, above(true)), { result: add("a"), changelog: [] });
  assert.equal(asked, 1, "no lookup when the compaction holds a version above level 0");
  assert.deepEqual(firstRowOutcome(add("a"), false, above(true)), { result: null, changelog: [] });
});

test("lookup changelog - a lookup table merges a key's level-0 versions and only the newest above; row-deduplicate compares all but the ignored fields", () => {
  const versions = [
    { level: 5, v: "old" },
    { level: 2, v: "newer" },
    { level: 0, v: "l0a" },
    { level: 0, v: "l0b" },
    { level: 3, v: "mid" },
  ];
  assert.deepEqual(
    lookupMergeVersions(versions, (x) => x.level).map((x) => x.v),
    ["newer", "l0a", "l0b"],
  );
  const schema = (options: Record<string, string>) => newTableSchema({ columns: parseColumnList("id INT NOT NULL, v STRING, ts BIGINT"), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "1", "changelog-producer": "lookup", ...options } });
  const equal = rowDeduplicateOf(schema({}), new TableOptions({ "changelog-producer.row-deduplicate": "true", "changelog-producer.row-deduplicate-ignore-fields": "ts" }))!;
  assert.equal(equal([1, "a", 10n], [1, "a", 20n]), true, "ts is ignored");
  assert.equal(equal([1, "a", 10n], [1, "b", 10n]), false);
  assert.equal(rowDeduplicateOf(schema({}), new TableOptions({})), null, "off by default");
  assert.deepEqual(lookupCompactionOf(schema({ "merge-engine": "first-row" })), { firstRow: true, produceChangelog: true, equal: null });
  assert.equal(lookupCompactionOf(newTableSchema({ columns: parseColumnList("id INT NOT NULL"), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "1" } })), null, "a table without lookup");
  assert.equal(lookupCompactionOf(schema({ "changelog-producer": "none", "force-lookup": "true" }))?.produceChangelog, false, "force-lookup looks up without a changelog");
});

type Change = { snapshot: number; change: string };

/**
 * Writes `commits` into a new lookup table, compacting after each commit whose index is in `compactAfter` (the
 * library's compaction: ForceUpLevel0 picks level 0 up); returns the changes a stream from the first snapshot gets,
 * as `<kind><json of the row>` per COMPACT snapshot in order, and the table.
 */
async function lookupHistory(name: string, columns: string, options: Record<string, string>, commits: Array<Array<Record<string, unknown>>>, compactAfter: ReadonlySet<number>): Promise<{ changes: Change[]; table: Table }> {
  let t = await new Catalog(wh.path).createTable(parseIdentifier(name), { columns: parseColumnList(columns), primaryKeys: ["id"], options: { bucket: "1", "changelog-producer": "lookup", ...options } });
  for (const [i, rows] of commits.entries()) {
    const w = await BatchWriter.open(t);
    await w.write(rows);
    await w.commit();
    t = await reopen(wh.path, name);
    if (compactAfter.has(i)) {
      await compactTable(t);
      t = await reopen(wh.path, name);
    }
  }
  const changes: Change[] = [];
  for await (const item of streamToLatest(t, { mode: "from-snapshot", snapshotId: 1 })) {
    for await (const r of readRows(t, item.read)) {
      const { _row_kind: kind, ...row } = r;
      changes.push({ snapshot: item.snapshotId, change: `${String(kind)}${JSON.stringify(row, (_k, v: unknown) => (typeof v === "bigint" ? Number(v) : v))}` });
    }
  }
  return { changes, table: t };
}

const bySnapshot = (cs: Change[]): string[][] => {
  const out = new Map<number, string[]>();
  // Filler keys (id ≥ 100) only make the first files large enough that later level-0 files go to a middle level.
  for (const c of cs) if (!/"id":\d{3}/.test(c.change)) out.set(c.snapshot, [...(out.get(c.snapshot) ?? []), c.change]);
  return [...out.values()];
};

/** Rows of keys 100 … 129 (`make` builds each), that leave the max level larger than the next level-0 files. */
const filler = (make: (id: number) => Record<string, unknown>): Array<Record<string, unknown>> => Array.from({ length: 30 }, (_, i) => make(100 + i));

test("lookup changelog - partial-update: a compaction's changes per key, its before-value from the compaction or looked up above the output level", async () => {
  const { changes, table } = await lookupHistory(
    "lc.partial",
    "id INT NOT NULL, a INT, b STRING",
    { "merge-engine": "partial-update" },
    [
      [
        { id: 1, a: 1, b: "x" },
        { id: 2, a: 2 },
      ],
      [
        { id: 1, b: "y" },
        { id: 3, a: 3 },
      ],
      [
        { id: 2, b: "z" },
        { id: 1, a: 1 },
      ],
      [{ id: 4, a: 4 }],
      [{ id: 4, b: "w" }],
    ],
    new Set([0, 1, 2, 4]),
  );
  assert.deepEqual(bySnapshot(changes), [
    // Level 0 alone into the max level: every key new.
    ['+I{"id":1,"a":1,"b":"x"}', '+I{"id":2,"a":2,"b":null}'],
    // Level 0 with the max level in the compaction: the before-values are there.
    ['-U{"id":1,"a":1,"b":"x"}', '+U{"id":1,"a":1,"b":"y"}', '+I{"id":3,"a":3,"b":null}'],
    // Level 0 into level 4, the max level untouched: the before-values are looked up there; id 1 keeps its values
    // (no row-deduplicate: -U/+U all the same).
    ['-U{"id":1,"a":1,"b":"y"}', '+U{"id":1,"a":1,"b":"y"}', '-U{"id":2,"a":2,"b":null}', '+U{"id":2,"a":2,"b":"z"}'],
    // Two level-0 files (one commit was not compacted) merged with nothing above: one +I of the merged row.
    ['+I{"id":4,"a":4,"b":"w"}'],
  ]);
  assert.deepEqual(sortRows(await readJson(table)), [
    { id: 1, a: 1, b: "y" },
    { id: 2, a: 2, b: "z" },
    { id: 3, a: 3, b: null },
    { id: 4, a: 4, b: "w" },
  ]);
});

test("lookup changelog - aggregation (sum): each compaction's -U/+U carry the totals before and after, never a value counted twice", async () => {
  const { changes, table } = await lookupHistory(
    "lc.agg",
    "id INT NOT NULL, n BIGINT",
    { "merge-engine": "aggregation", "fields.n.aggregate-function": "sum" },
    [[{ id: 1, n: 5 }], [{ id: 1, n: 2 }], [{ id: 1, n: 3 }, { id: 2, n: 1 }], [{ id: 1, n: 10 }]],
    new Set([0, 1, 2, 3]),
  );
  assert.deepEqual(bySnapshot(changes), [['+I{"id":1,"n":5}'], ['-U{"id":1,"n":5}', '+U{"id":1,"n":7}'], ['-U{"id":1,"n":7}', '+U{"id":1,"n":10}', '+I{"id":2,"n":1}'], ['-U{"id":1,"n":10}', '+U{"id":1,"n":20}']]);
  // The levels now hold 20 at a middle level and older totals below it: reads take the newest above level 0 only.
  assert.deepEqual(sortRows(await readJson(table)), [
    { id: 1, n: 20 },
    { id: 2, n: 1 },
  ]);
});

test("lookup changelog - deduplicate: a delete gives -D of the value before, a key deleted and never seen gives nothing; row-deduplicate leaves out an update whose values (ts ignored) did not change", async () => {
  const commits = [
    [{ id: 1, v: "a", ts: 1 }, { id: 2, v: "b", ts: 1 }, ...filler((id) => ({ id, v: "f", ts: 0 }))],
    [{ id: 1, v: "a", ts: 2 }, { _row_kind: "-D", id: 2 }, { _row_kind: "-D", id: 9 }],
    [{ id: 1, v: "c", ts: 3 }],
  ];
  const plain = await lookupHistory("lc.dedup", "id INT NOT NULL, v STRING, ts BIGINT", {}, commits, new Set([0, 1, 2]));
  assert.deepEqual(bySnapshot(plain.changes), [
    ['+I{"id":1,"v":"a","ts":1}', '+I{"id":2,"v":"b","ts":1}'],
    ['-U{"id":1,"v":"a","ts":1}', '+U{"id":1,"v":"a","ts":2}', '-D{"id":2,"v":"b","ts":1}'],
    ['-U{"id":1,"v":"a","ts":2}', '+U{"id":1,"v":"c","ts":3}'],
  ]);
  const deduplicated = await lookupHistory("lc.dedup_rows", "id INT NOT NULL, v STRING, ts BIGINT", { "changelog-producer.row-deduplicate": "true", "changelog-producer.row-deduplicate-ignore-fields": "ts" }, commits, new Set([0, 1, 2]));
  assert.deepEqual(bySnapshot(deduplicated.changes), [['+I{"id":1,"v":"a","ts":1}', '+I{"id":2,"v":"b","ts":1}'], ['-D{"id":2,"v":"b","ts":1}'], ['-U{"id":1,"v":"a","ts":2}', '+U{"id":1,"v":"c","ts":3}']]);
});

test("lookup changelog - first-row: +I once per new key, whichever compaction moves it up; a later version of a key held above gives nothing and is dropped", async () => {
  const { changes, table } = await lookupHistory(
    "lc.first",
    "id INT NOT NULL, v STRING",
    { "merge-engine": "first-row" },
    [
      [{ id: 1, v: "first" }, ...filler((id) => ({ id, v: "f" }))],
      [
        { id: 1, v: "second" },
        { id: 2, v: "b" },
      ],
      [
        { id: 2, v: "b2" },
        { id: 3, v: "c" },
      ],
    ],
    new Set([0, 1, 2]),
  );
  assert.deepEqual(bySnapshot(changes), [['+I{"id":1,"v":"first"}'], ['+I{"id":2,"v":"b"}'], ['+I{"id":3,"v":"c"}']]);
  assert.deepEqual(
    sortRows(await readJson(table)).filter((r) => (r["id"] as number) < 100),
    [
      { id: 1, v: "first" },
      { id: 2, v: "b" },
      { id: 3, v: "c" },
    ],
  );
});
