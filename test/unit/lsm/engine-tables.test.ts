/**
 * Tables of the merge engines written and compacted by natslake's library (BatchWriter commits, compactTable at
 * random points: none, the universal picker with a trigger of 2, or full) read as a model applying Paimon's rules to
 * the history (fast-check, random histories):
 *
 * - partial-update: non-null fields overwrite, nulls never do; with `partial-update.remove-record-on-delete` a -D
 *   removes the row and a -U is passed over; with `ignore-delete` every retraction is. Java's partial-update is not
 *   associative everywhere: a -D's values (or a -U's, when it comes first in a merge) stay in the row where a later
 *   version has nulls, unless a compaction dropped the -D first; and a merge that meets only -U's of a key makes a
 *   -D of them. The histories keep to where it is — a retraction carries the row as it is (a true before-image), a
 *   -U comes with its +U, and the first write after a delete sets every column — which is what a change stream
 *   gives;
 * - aggregation: sum (retractions subtract), max, listagg and first_non_null_value (retractions ignored:
 *   ignore-retract), last_value (a retraction nulls it), retractions only of keys that have a row.
 *
 * The rest is checked against Java itself (test/compat/java-pk-engines.test.ts) and by hand (merge-functions.test.ts).
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { BatchWriter, Catalog, lookupKeys, parseColumnList, parseIdentifier, type Table } from "../../../src/index.ts";
import { compactTable } from "../../../src/maintenance/compact.ts";
import { expectedJson, readJson, sortRows, tempDir } from "../../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

type R = Record<string, unknown>;
const VALUES = ["a", "b", "c"] as const;

/** One step of a history: a partial write (+I/+U), a before-image (-U), a delete (-D) of a key. */
const stepArb = fc.record({
  key: fc.integer({ min: 0, max: 7 }),
  op: fc.constantFrom("+I", "+I", "+U", "-U", "-D"),
  a: fc.option(fc.string({ maxLength: 3 }), { nil: null }),
  b: fc.option(fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }), { nil: null }),
  c: fc.option(fc.double({ noNaN: true }), { nil: null }),
});

type Step = { key: number; op: string; a: string | null; b: bigint | null; c: number | null };

/** Turns raw steps into a history the model is exact for, and applies it to `rows`; the changes to write. */
function applyCommit(steps: readonly Step[], rows: Map<number, R>, deleted: Set<number>, mode: "plain" | "remove" | "ignore"): R[] {
  const out: R[] = [];
  const write = (s: Step, kind: string): void => {
    const current = rows.get(s.key);
    // The first write after a delete sets every column (see the header).
    const partial: R = { id: s.key, a: s.a, b: s.b, c: s.c };
    if (deleted.has(s.key)) {
      partial["a"] ??= "full";
      partial["b"] ??= 1n;
      partial["c"] ??= 1.5;
      deleted.delete(s.key);
    }
    const next: R = { id: s.key, ...Object.fromEntries(VALUES.map((v) => [v, current?.[v] ?? null])) };
    for (const v of VALUES) if (partial[v] !== null) next[v] = partial[v];
    rows.set(s.key, next);
    out.push({ _row_kind: kind, ...partial });
  };
  for (const s of steps) {
    const current = rows.get(s.key);
    if (s.op === "+I" || s.op === "+U" || mode === "plain" || current === undefined) {
      write(s, s.op === "+U" ? "+U" : "+I");
    } else if (s.op === "-U") {
      // A before-image and its update, together (Java merges a key's lone -U's into a -D: never one without the other).
      out.push({ _row_kind: "-U", ...current });
      write(s, "+U");
    } else {
      out.push({ _row_kind: "-D", ...current });
      if (mode === "remove") {
        rows.delete(s.key);
        deleted.add(s.key);
      }
    }
  }
  return out;
}

type Compaction = "none" | "auto" | "full";
const compactionArb = fc.constantFrom<Compaction>("none", "none", "auto", "full");

let tables = 0;
/**
 * The model test of one engine: random commits (each the changes the model's `commit` makes of its steps while
 * applying them to its state) with a random compaction after each (none, the universal picker, full), each history
 * into a fresh table; then natslake's read equals the model's rows.
 */
async function assertModel<S, M>(engine: string, columns: string, options: Record<string, string>, steps: fc.Arbitrary<S>, model: () => { state: M; commit: (state: M, steps: readonly S[]) => R[]; rows: (state: M) => R[] }): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(fc.array(steps, { minLength: 1, maxLength: 12 }), compactionArb), { minLength: 2, maxLength: 7 }), async (commits) => {
      const t: Table = await new Catalog(wh.path).createTable(parseIdentifier(`engines.t${tables++}`), {
        columns: parseColumnList(columns),
        primaryKeys: ["id"],
        partitionKeys: [],
        options: { bucket: "2", "merge-engine": engine, "num-sorted-run.compaction-trigger": "2", ...options },
      });
      const m = model();
      for (const [batch, compaction] of commits) {
        const changes = m.commit(m.state, batch);
        if (changes.length > 0) {
          const w = await BatchWriter.open(t);
          await w.write(changes);
          await w.commit();
        }
        if (compaction !== "none") await compactTable(t, compaction === "full" ? { full: true } : {});
      }
      assert.deepEqual(sortRows(await readJson(t)), sortRows(m.rows(m.state).map((r) => expectedJson(t, r))));
    }),
    { numRuns: 12 },
  );
}

for (const mode of ["plain", "remove", "ignore"] as const) {
  test(`partial-update table (${mode === "plain" ? "additions only" : mode === "remove" ? "remove-record-on-delete" : "ignore-delete"}) - random commits and compactions read as the model`, { timeout: 300_000 }, async () => {
    const options: Record<string, string> = mode === "remove" ? { "partial-update.remove-record-on-delete": "true" } : mode === "ignore" ? { "ignore-delete": "true" } : {};
    await assertModel("partial-update", "id INT NOT NULL, a STRING, b BIGINT, c DOUBLE", options, stepArb, () => ({
      state: { rows: new Map<number, R>(), deleted: new Set<number>() },
      commit: (st, steps) => applyCommit(steps, st.rows, st.deleted, mode),
      rows: (st) => [...st.rows.values()],
    }));
  });
}

/** A step of an aggregation history: an addition or a retraction (of a key that has a row) with its values. */
const aggStepArb = fc.record({
  key: fc.integer({ min: 0, max: 7 }),
  kind: fc.constantFrom("+I", "+U", "-U", "-D"),
  s: fc.option(fc.bigInt({ min: -1000n, max: 1000n }), { nil: null }),
  m: fc.option(fc.integer({ min: -50, max: 50 }), { nil: null }),
  l: fc.option(fc.constantFrom("", "x", "y", "zz"), { nil: null }),
  f: fc.option(fc.integer({ min: 0, max: 9 }), { nil: null }),
  lv: fc.option(fc.integer({ min: 0, max: 9 }), { nil: null }),
});
type AggStep = typeof aggStepArb extends fc.Arbitrary<infer S> ? S : never;

test("aggregation table - random commits (additions and retractions) and compactions read as the model: sum, max, listagg, first_non_null_value, last_value", { timeout: 300_000 }, async () => {
  const options = {
    "fields.s.aggregate-function": "sum",
    "fields.m.aggregate-function": "max",
    "fields.m.ignore-retract": "true",
    "fields.l.aggregate-function": "listagg",
    "fields.l.ignore-retract": "true",
    "fields.f.aggregate-function": "first_non_null_value",
    "fields.f.ignore-retract": "true",
    "fields.lv.aggregate-function": "last_value",
  };
  await assertModel("aggregation", "id INT NOT NULL, s BIGINT, m INT, l STRING, f INT, lv INT", options, aggStepArb, () => ({
    state: new Map<number, R>(),
    commit: (rows, steps: readonly AggStep[]) => {
      const out: R[] = [];
      for (const st of steps) {
        const cur = rows.get(st.key);
        // A retraction only of a key that has a row: a lone one could be dropped by a compaction to the top level
        // (Java's too), which the model would not know.
        const retract = (st.kind === "-U" || st.kind === "-D") && cur !== undefined;
        const kind = retract ? st.kind : st.kind === "+U" ? "+U" : "+I";
        const next: R = cur === undefined ? { id: st.key, s: null, m: null, l: null, f: null, lv: null } : { ...cur };
        if (retract) {
          if (st.s !== null) next["s"] = next["s"] === null ? -st.s : (next["s"] as bigint) - st.s;
          next["lv"] = null;
        } else {
          if (st.s !== null) next["s"] = next["s"] === null ? st.s : (next["s"] as bigint) + st.s;
          if (st.m !== null) next["m"] = next["m"] === null ? st.m : Math.max(next["m"] as number, st.m);
          if (st.l !== null && st.l !== "") next["l"] = next["l"] === null || next["l"] === "" ? st.l : `${next["l"] as string},${st.l}`;
          else if (st.l === "" && next["l"] === null) next["l"] = "";
          if (next["f"] === null) next["f"] = st.f;
          next["lv"] = st.lv;
        }
        rows.set(st.key, next);
        out.push({ _row_kind: kind, id: st.key, s: st.s, m: st.m, l: st.l, f: st.f, lv: st.lv });
      }
      return out;
    },
    rows: (rows) => [...rows.values()],
  }));
});

test("partial-update table - a retraction the table refuses fails the write with the reason and writes nothing", async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("pu.refuses"), { columns: parseColumnList("id INT NOT NULL, a STRING"), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "1", "merge-engine": "partial-update" } });
  const w = await BatchWriter.open(t);
  await assert.rejects(w.write([{ id: 1, a: "x" }, { _row_kind: "-D", id: 1 }]), /-D refused: By default, Partial update can not accept delete records/);
  await assert.rejects(w.delete([{ id: 1 }]), /-D refused/);
  assert.deepEqual(await readJson(t), []);
});

test("first-row table - reads skip level 0 as Java's do: a commit shows once a compaction moved it up; the first version of a key wins across commits and compactions", async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("engines.first_row"), { columns: parseColumnList("id INT NOT NULL, v STRING"), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "2", "merge-engine": "first-row" } });
  const commit = async (rows: R[]): Promise<void> => {
    const w = await BatchWriter.open(t);
    await w.write(rows);
    await w.commit();
  };
  await commit([{ id: 1, v: "one" }, { id: 2, v: "two" }, { id: 1, v: "one again" }]);
  assert.deepEqual(await readJson(t), [], "level 0 only: nothing to read yet");
  const first = await compactTable(t);
  assert.ok(first.snapshotId !== null, "level 0 is compacted up (ForceUpLevel0) even below the trigger");
  assert.deepEqual(sortRows(await readJson(t)), sortRows([{ id: 1, v: "one" }, { id: 2, v: "two" }]));
  await commit([{ id: 2, v: "two later" }, { id: 3, v: "three" }]);
  assert.equal((await readJson(t)).length, 2, "the new commit is in level 0");
  await compactTable(t);
  assert.deepEqual(sortRows(await readJson(t)), sortRows([{ id: 1, v: "one" }, { id: 2, v: "two" }, { id: 3, v: "three" }]));
  const w = await BatchWriter.open(t);
  await assert.rejects(w.delete([{ id: 1 }]), /-D refused: By default, First row merge engine can not accept/);
});

test("first-row table - a batch read of buckets read raw (each file as it is, read ahead across buckets): every key once, bucket by bucket, and a limit takes that order's first rows", async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("engines.first_row_raw"), { columns: parseColumnList("id INT NOT NULL, v STRING"), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "4", "merge-engine": "first-row" } });
  for (let c = 0; c < 3; c++) {
    const w = await BatchWriter.open(t);
    await w.write(Array.from({ length: 40 }, (_, k) => ({ id: c * 20 + k, v: `c${c}-${c * 20 + k}` })));
    await w.commit();
    await compactTable(t);
  }
  const full = await readJson(t);
  // Keys 0..79, each its first commit's value.
  assert.deepEqual(sortRows(full), sortRows(Array.from({ length: 80 }, (_, id) => ({ id, v: `c${Math.max(0, Math.ceil((id - 39) / 20))}-${id}` }))));
  for (const limit of [1, 7, 21, 79]) assert.deepEqual(await readJson(t, { limit }), full.slice(0, limit), `limit ${limit}`);
});

test("lookups by key (KeyLookup) answer what a read gives, for every engine: partial-update with sequence groups, aggregation, first-row (level 0 not read)", async () => {
  const cases: Array<[string, string, Record<string, string>, R[][]]> = [
    ["engines.lk_groups", "id INT NOT NULL, a STRING, g INT, b STRING", { "merge-engine": "partial-update", "fields.g.sequence-group": "a" }, [[{ id: 1, a: "x", g: 5, b: "b1" }, { id: 2, b: "only b" }], [{ id: 1, a: "older", g: 3 }, { id: 1, b: "b2" }], [{ id: 3, a: "z", g: 1 }]]],
    ["engines.lk_agg", "id INT NOT NULL, n BIGINT, s STRING", { "merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "fields.s.aggregate-function": "listagg" }, [[{ id: 1, n: 2, s: "a" }], [{ id: 1, n: 3, s: "b" }, { id: 2, n: 1 }], [{ id: 1, n: 4 }]]],
    ["engines.lk_first", "id INT NOT NULL, v STRING", { "merge-engine": "first-row" }, [[{ id: 1, v: "first" }], [{ id: 1, v: "second" }, { id: 2, v: "two" }]]],
  ];
  for (const [name, columns, options, commits] of cases) {
    const t = await new Catalog(wh.path).createTable(parseIdentifier(name), { columns: parseColumnList(columns), primaryKeys: ["id"], partitionKeys: [], options: { bucket: "1", ...options } });
    for (const [c, rows] of commits.entries()) {
      const w = await BatchWriter.open(t);
      await w.write(rows);
      await w.commit();
      if (c === 0) await compactTable(t, { full: true });
    }
    const read = await readJson(t);
    assert.ok(read.length > 0, name);
    const got = await lookupKeys(t, [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 9 }]);
    const byId = new Map(read.map((r) => [r["id"], r]));
    assert.deepEqual(
      got.map((r) => (r === null ? null : expectedJson(t, r))),
      [1, 2, 3, 9].map((id) => byId.get(id) ?? null),
      name,
    );
  }
});
