/**
 * Point lookups (src/scan/lookup.ts: a key's versions found by binary search and folded one key at a time) answer
 * exactly what a full read of the same snapshot (the bucket's k-way merge, src/lsm/merge-reader.ts) has for each
 * key — property-tested over random histories (fast-check) of every merge engine: deduplicate (plain, with a
 * `sequence.field`, with ignore-delete, as a lookup table), partial-update (ignore-delete, remove-record-on-delete,
 * as a lookup table), aggregation and first-row; upserts, -U/+U pairs and deletes over a few commits, compacted
 * (universal pick or full) at random points so that keys have versions in several sorted runs and levels. Each history
 * is asked one key at a time, all keys at once, again from a warm cache, and projected.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { BatchWriter, Catalog, parseColumnList, parseIdentifier } from "../../src/index.ts";
import { compactTable } from "../../src/maintenance/compact.ts";
import { readAllRows } from "../../src/scan/read.ts";
import { KeyLookup, LruDecodedFileCache } from "../../src/scan/lookup.ts";
import type { Row } from "../../src/format/values.ts";
import { tempDir } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

/** The engines and options tried, each a table of `id INT` primary key, v STRING, n BIGINT, ts INT. */
const CONFIGS: ReadonlyArray<Record<string, string>> = [
  {},
  { "sequence.field": "ts" },
  { "sequence.field": "ts", "sequence.field.sort-order": "descending" },
  { "ignore-delete": "true" },
  { "changelog-producer": "lookup" },
  { "merge-engine": "partial-update", "ignore-delete": "true" },
  { "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true" },
  { "merge-engine": "partial-update", "ignore-delete": "true", "changelog-producer": "lookup" },
  { "merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "fields.ts.aggregate-function": "max", "fields.ts.ignore-retract": "true" },
  { "merge-engine": "first-row", "ignore-delete": "true" },
];
const KEYS = 12;

const changeArb = fc.record({
  id: fc.integer({ min: 0, max: KEYS - 1 }),
  op: fc.constantFrom("+I", "+I", "+I", "-U/+U", "-D"),
  v: fc.option(fc.string({ maxLength: 4 }), { nil: null }),
  n: fc.option(fc.bigInt({ min: -1000n, max: 1000n }), { nil: null }),
  ts: fc.option(fc.integer({ min: 0, max: 5 }), { nil: null }),
});
type Change = { id: number; op: string; v: string | null; n: bigint | null; ts: number | null };

const historyArb = fc.record({
  config: fc.integer({ min: 0, max: CONFIGS.length - 1 }),
  commits: fc.array(fc.record({ changes: fc.array(changeArb, { minLength: 1, maxLength: 12 }), compact: fc.constantFrom("none", "none", "pick", "full") }), { minLength: 1, maxLength: 6 }),
  bucket: fc.constantFrom("1", "2"),
});

const rowsOf = (c: Change): Array<Record<string, unknown>> => {
  const row = { id: c.id, v: c.v, n: c.n, ts: c.ts };
  if (c.op === "-D") return [{ _row_kind: "-D", ...row }];
  if (c.op === "-U/+U") return [{ _row_kind: "-U", ...row }, { _row_kind: "+U", ...row, v: `${c.v ?? ""}'` }];
  return [row];
};

/** The full read's row of each key (by id), with `columns`. */
function byKey(rows: readonly Row[], columns: readonly string[]): Map<number, Row> {
  return new Map(rows.map((r) => [Number(r["id"]), Object.fromEntries(columns.map((c) => [c, r[c] ?? null]))]));
}

let tables = 0;

test("lookup property: every key of a random history answers exactly as a full read of its snapshot, per merge engine", { timeout: 120_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(historyArb, async ({ config, commits, bucket }) => {
      const options = CONFIGS[config]!;
      const t = await new Catalog(wh.path).createTable(parseIdentifier(`lp.t${tables++}`), {
        columns: parseColumnList("id INT NOT NULL, v STRING, n BIGINT, ts INT"),
        primaryKeys: ["id"],
        options: { bucket, "file.compression": "none", ...options },
      });
      const snapshots: number[] = [];
      for (const c of commits) {
        const w = await BatchWriter.open(t);
        await w.write(c.changes.flatMap(rowsOf));
        const s = (await w.commit()).snapshot?.id;
        if (s !== undefined) snapshots.push(s);
        if (c.compact !== "none") {
          const id = (await compactTable(t, c.compact === "full" ? { full: true } : {})).snapshotId;
          if (id !== null && id !== undefined) snapshots.push(id);
        }
      }
      const keys = Array.from({ length: KEYS + 2 }, (_, id) => ({ id }));
      const all = ["id", "v", "n", "ts"];
      for (const snapshotId of [snapshots.at(-1)!, snapshots[Math.floor(snapshots.length / 2)]!]) {
        const expected = byKey(await readAllRows(t, { snapshotId }), all);
        const want = keys.map((k) => expected.get(k.id) ?? null);
        const cache = new LruDecodedFileCache(64 * 1024 * 1024);
        const lookup = await KeyLookup.open(t, { snapshotId, cache, decoderPool: null });
        const one: Array<Row | null> = [];
        for (const k of keys) one.push((await lookup.get([k]))[0]!);
        assert.deepStrictEqual(one, want, `one key at a time, ${JSON.stringify(options)}`);
        assert.deepStrictEqual(await lookup.get(keys), want, `all keys at once (warm), ${JSON.stringify(options)}`);
        const cold = await KeyLookup.open(t, { snapshotId, decoderPool: null });
        assert.deepStrictEqual(await cold.get([...keys].reverse()), [...want].reverse(), `all keys at once (cold), ${JSON.stringify(options)}`);
        const projected = await KeyLookup.open(t, { snapshotId, columns: ["n", "v"], decoderPool: null });
        const wantProjected = keys.map((k) => (expected.has(k.id) ? { n: expected.get(k.id)!["n"] ?? null, v: expected.get(k.id)!["v"] ?? null } : null));
        assert.deepStrictEqual(await projected.get(keys), wantProjected, `projected, ${JSON.stringify(options)}`);
      }
    }),
    { numRuns: Number(process.env["LOOKUP_PROPERTY_RUNS"] ?? 24), ...(process.env["FUZZ_SEED"] !== undefined ? { seed: Number(process.env["FUZZ_SEED"]) } : {}) },
  );
});
