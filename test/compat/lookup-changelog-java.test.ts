/**
 * `changelog-producer = lookup` against Java Paimon 1.4.2, one JVM for every question. Per engine (partial-update,
 * aggregation, deduplicate with row-deduplicate and ignore-fields, first-row) the same commits go into two tables
 * natslake created alike:
 *
 * - natslake writes one, compacting after each commit (ForceUpLevel0: level 0 into the max level, then — once the
 *   max level outweighs a commit — into a middle level with the max level untouched, the before-values looked up
 *   there): APPEND then COMPACT snapshot per commit. Java's streaming read of it from the first snapshot yields what
 *   natslake's TableStream yields, kinds included; from a middle snapshot with a full start (`from-snapshot-full`:
 *   level > 0 only, Java's tryFirstPlan) the same rows, then the same changes; Java's batch read is natslake's.
 * - Java's writer fills the twin (its lookup compaction runs at each prepareCommit: APPEND then COMPACT snapshot per
 *   commit, the same snapshot ids): the changelog natslake produced is the changelog Java produced for the same
 *   commits, and natslake's TableStream and read of Java's twin equal Java's own.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Catalog, parseColumnList, parseIdentifier } from "../../src/index.ts";
import { compactTable } from "../../src/maintenance/compact.ts";
import { readRows } from "../../src/scan/read.ts";
import type { ScanMode } from "../../src/scan/table-stream.ts";
import { streamToLatest } from "../helpers/stream-items.ts";
import { toJsonValue, type Row } from "../../src/format/values.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import type { Table } from "../../src/table/table.ts";
import { javaPk, javaPkWriteRequest, type JavaChange, type JavaPkRequest } from "../helpers/java-pk.ts";
import { javaRowToJson } from "../helpers/java.ts";
import { readJson, reopen, sortRows, tempDir } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

type JsonRow = Record<string, unknown>;
type Change = { snapshotId: number; kind: string; row: JsonRow };

interface Case {
  name: string;
  columns: string;
  options: Record<string, string>;
  commits: JsonRow[][];
}

/** Keys 100 … 139 (`make` builds each row): a first commit large enough that later commits compact into a middle level. */
const filler = (make: (id: number) => JsonRow): JsonRow[] => Array.from({ length: 40 }, (_, i) => make(100 + i));

const CASES: Case[] = [
  {
    name: "lcj.partial",
    columns: "id INT NOT NULL, a INT, b STRING",
    options: { "merge-engine": "partial-update" },
    commits: [
      [{ id: 1, a: 1, b: "x" }, { id: 2, a: 2 }, { id: 5, b: "five" }, ...filler((id) => ({ id, a: id }))],
      [
        { id: 1, b: "y" },
        { id: 3, a: 3 },
      ],
      [
        { id: 2, b: "z" },
        { id: 1, a: 10 },
      ],
      [{ id: 4, a: 4 }],
      [
        { id: 4, b: "w" },
        { id: 5, a: 50 },
      ],
    ],
  },
  {
    name: "lcj.agg",
    columns: "id INT NOT NULL, n BIGINT, m INT",
    options: { "merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "fields.m.aggregate-function": "max" },
    commits: [
      [{ id: 1, n: 5, m: 1 }, { id: 2, n: 1, m: 7 }, ...filler((id) => ({ id, n: 1, m: 1 }))],
      [{ id: 1, n: 2, m: 9 }],
      [
        { id: 1, n: 3, m: 2 },
        { id: 3, n: 4, m: 4 },
      ],
      [{ id: 2, n: 10, m: 1 }],
      [{ id: 1, n: 1, m: 1 }],
    ],
  },
  {
    name: "lcj.dedup",
    columns: "id INT NOT NULL, v STRING, ts BIGINT",
    options: { "changelog-producer.row-deduplicate": "true", "changelog-producer.row-deduplicate-ignore-fields": "ts" },
    commits: [
      [{ id: 1, v: "a", ts: 1 }, { id: 2, v: "b", ts: 1 }, { id: 3, v: "c", ts: 1 }, ...filler((id) => ({ id, v: "f", ts: 0 }))],
      [{ id: 1, v: "a", ts: 2 }, { _row_kind: "-D", id: 2 }, { _row_kind: "-D", id: 9 }],
      [{ id: 1, v: "a2", ts: 3 }],
      [{ id: 3, v: "c2", ts: 4 }, { id: 2, v: "b-again", ts: 4 }],
      [{ _row_kind: "-D", id: 1 }],
    ],
  },
  {
    name: "lcj.first",
    columns: "id INT NOT NULL, v STRING",
    options: { "merge-engine": "first-row" },
    commits: [
      [{ id: 1, v: "first" }, ...filler((id) => ({ id, v: "f" }))],
      [
        { id: 1, v: "second" },
        { id: 2, v: "b" },
      ],
      [
        { id: 2, v: "b2" },
        { id: 3, v: "c" },
      ],
      [{ id: 4, v: "d" }],
      [
        { id: 4, v: "d2" },
        { id: 5, v: "e" },
      ],
    ],
  },
];

const catalog = (): Catalog => new Catalog(wh.path);

async function create(name: string, columns: string, options: Record<string, string>): Promise<Table> {
  return catalog().createTable(parseIdentifier(name), { columns: parseColumnList(columns), primaryKeys: ["id"], options: { bucket: "2", "changelog-producer": "lookup", ...options } });
}

async function writeHistory(c: Case): Promise<Table> {
  let t = await create(c.name, c.columns, c.options);
  for (const rows of c.commits) {
    const w = await BatchWriter.open(t);
    await w.write(rows);
    await w.commit();
    t = await reopen(wh.path, c.name);
    await compactTable(t);
    t = await reopen(wh.path, c.name);
  }
  return t;
}

const json = (t: Table, r: Row): JsonRow => Object.fromEntries(t.schema.fields.map((f) => [f.name, toJsonValue(f.type, r[f.name] ?? null)]));

/** natslake's stream from `mode` up to the latest snapshot: every row with its kind and snapshot. */
async function natslakeStream(t: Table, mode: ScanMode): Promise<Change[]> {
  const out: Change[] = [];
  for await (const item of streamToLatest(t, mode)) {
    for await (const r of readRows(t, item.read)) out.push({ snapshotId: item.snapshotId, kind: String(r["_row_kind"]), row: json(t, r) });
  }
  return out;
}

const line = (c: Change | JavaChange): string => `${String(c.snapshotId).padStart(3)} ${String(c.row["id"]).padStart(3)} ${c.kind} ${JSON.stringify(c.row)}`;
/** Changes per snapshot and key, in read order within a key (buckets are read in any order). */
const ordered = (cs: ReadonlyArray<Change | JavaChange>): string[] => cs.map(line).sort((a, b) => (a.slice(0, 8) < b.slice(0, 8) ? -1 : a.slice(0, 8) > b.slice(0, 8) ? 1 : 0));

/** Three questions per table: a stream from the first snapshot, a full start at `middle`, a batch read. */
const questions = (t: Table, middle: number): JavaPkRequest[] => [
  { op: "stream", table: t.name, options: { "scan.mode": "from-snapshot", "scan.snapshot-id": "1" } },
  { op: "stream", table: t.name, options: { "scan.mode": "from-snapshot-full", "scan.snapshot-id": String(middle) } },
  { op: "read", table: t.name },
];

interface Answers {
  fromStart: JavaChange[];
  full: JavaChange[];
  rows: JsonRow[];
}

interface Outcome {
  table: Table;
  middle: number;
  java: Answers;
  twin: Table;
  /** Java's answers about the twin it wrote. */
  javaTwin: Answers;
  twinCommits: Array<{ snapshots: Array<{ id: number; commitKind: string }> }>;
}
const outcomes = new Map<string, Outcome>();

before(async () => {
  const written = await Promise.all(CASES.map(writeHistory));
  const twins = await Promise.all(CASES.map((c) => create(`${c.name}_twin`, c.columns, c.options)));
  const middles = await Promise.all(written.map(async (t) => Math.ceil((await t.snapshots.latestId())! / 2)));
  // Per case: three questions about natslake's table, Java writing the twin, three about the twin.
  const requests = CASES.flatMap((c, i) => [...questions(written[i]!, middles[i]!), javaPkWriteRequest({ table: twins[i]!, batches: c.commits }), ...questions(twins[i]!, middles[i]!)]);
  const results = await javaPk(wh.path, requests, { timeoutMs: 240_000 });
  const answers = (t: Table, at: number): Answers => {
    const render = javaRowToJson(t);
    const stream = (r: JsonRow): JavaChange[] => {
      assert.equal(r["error"], undefined, String(r["error"]));
      return (r["changes"] as JavaChange[]).map((c) => ({ ...c, row: render(c.row) }));
    };
    assert.equal(results[at + 2]!["error"], undefined, String(results[at + 2]!["error"]));
    return { fromStart: stream(results[at]!), full: stream(results[at + 1]!), rows: (results[at + 2]!["rows"] as JsonRow[]).map(render) };
  };
  for (const [i, c] of CASES.entries()) {
    const at = 7 * i;
    const write = results[at + 3]!;
    assert.equal(write["error"], undefined, String(write["error"]));
    outcomes.set(c.name, {
      table: written[i]!,
      middle: middles[i]!,
      java: answers(written[i]!, at),
      twin: await reopen(wh.path, twins[i]!.name),
      javaTwin: answers(twins[i]!, at + 4),
      twinCommits: write["commits"] as Outcome["twinCommits"],
    });
  }
});

/** The first snapshot of a full start, as rows (Java labels a merged row +U when its last version was one). */
const startRows = (cs: ReadonlyArray<Change | JavaChange>, at: number): string[] =>
  cs
    .filter((x) => x.snapshotId === at)
    .map((x) => JSON.stringify(x.row))
    .sort();

for (const c of CASES) {
  test(`lookup changelog vs Java (${c.options["merge-engine"] ?? "deduplicate"}) - natslake's compactions make the changelog Java's make for the same commits; each reads the other's changelog and tables as its own`, { timeout: 300_000 }, async () => {
    const o = outcomes.get(c.name)!;
    const ours = await natslakeStream(o.table, { mode: "from-snapshot", snapshotId: 1 });
    assert.ok(ours.some((x) => x.kind === "+I"), "the compactions made changelog");
    // Java's writer made an APPEND and a COMPACT snapshot per commit, as natslake's commit and compaction did.
    assert.deepEqual(
      o.twinCommits.map((x) => x.snapshots.map((s) => s.commitKind)),
      c.commits.map(() => ["APPEND", "COMPACT"]),
    );
    assert.deepEqual(ordered(ours), ordered(o.javaTwin.fromStart), "natslake's changelog is the one Java's lookup compaction made for the same commits");
    assert.deepEqual(ordered(ours), ordered(o.java.fromStart), "Java's streaming read of natslake's table");
    const full = await natslakeStream(o.table, { mode: "from-snapshot-full", snapshotId: o.middle });
    assert.deepEqual(startRows(full, o.middle), startRows(o.java.full, o.middle), "the full start: the rows above level 0 at the middle snapshot");
    assert.deepEqual(ordered(full.filter((x) => x.snapshotId > o.middle)), ordered(o.java.full.filter((x) => x.snapshotId > o.middle)));
    assert.deepEqual(sortRows(await readJson(o.table)), sortRows(o.java.rows), "Java's batch read of natslake's table");
    // natslake reads the twin Java wrote: its changelog through TableStream, its rows.
    const twin = await natslakeStream(o.twin, { mode: "from-snapshot", snapshotId: 1 });
    assert.deepEqual(ordered(twin), ordered(o.javaTwin.fromStart));
    const twinFull = await natslakeStream(o.twin, { mode: "from-snapshot-full", snapshotId: o.middle });
    assert.deepEqual(startRows(twinFull, o.middle), startRows(o.javaTwin.full, o.middle));
    assert.deepEqual(sortRows(await readJson(o.twin)), sortRows(o.javaTwin.rows));
  });
}
