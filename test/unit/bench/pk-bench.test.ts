/**
 * What the primary-key benchmarks rely on: the cluster benchmark's key of row i visits every key once in any `keys`
 * consecutive rows (so phase A inserts each key once and later rows only update); the stall-time metric is read from
 * /metrics text whatever its exact name, and is absent (null, printed n/a) rather than 0 when no metric reports it;
 * bench/pk-tables.ts counts a real table's sorted runs per bucket as the LSM does (each level-0 file, each non-empty
 * level) before and after a full compaction, and its scan counts rows and distinct keys.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { BENCH_MAX_KEYS, benchKeyOf, benchKeysProblem, benchKeyedRow, benchInputRow } from "../../../bench/shape.ts";
import { stalledTime, sumStalled } from "../../../bench/stall-metric.ts";
import { bucketShapes, scanKeys } from "../../../bench/pk-tables.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { compactPrimaryKeyTable } from "../../../src/maintenance/compact-pk.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { BatchWriter } from "../../../src/write/batch-writer.ts";
import { tempDir } from "../../helpers/tables.ts";

test("pk bench - benchKeyOf is a permutation of 0…keys−1 over any keys consecutive rows, scattered over the range", () => {
  for (const keys of [1, 2, 7, 10, 1000, 99_991, 100_000]) {
    for (const first of [0, 3 * keys + 5]) {
      const seen = new Uint8Array(keys);
      for (let i = first; i < first + keys; i++) {
        const k = benchKeyOf(i, keys);
        assert.ok(Number.isInteger(k) && k >= 0 && k < keys, `key ${k} of row ${i} out of 0…${keys - 1}`);
        assert.equal(seen[k], 0, `key ${k} twice among rows ${first}…${first + keys - 1} (keys ${keys})`);
        seen[k] = 1;
      }
    }
  }
  // Neighbouring rows land far apart: a producer batch covers the whole range, not a slice of it.
  const keys = 1_000_000;
  const batch = Array.from({ length: 500 }, (_, i) => benchKeyOf(i, keys));
  assert.ok(Math.min(...batch) < keys / 100 && Math.max(...batch) > keys - keys / 100, "500 consecutive rows span the key range");
  assert.deepEqual(benchKeyedRow(12, keys), { ...benchInputRow(12), id: benchKeyOf(12, keys) });
  // The largest key count still computes exact keys.
  assert.ok(Number.isSafeInteger((BENCH_MAX_KEYS - 1) * (BENCH_MAX_KEYS - 1)));
});

test("pk bench - benchKeysProblem refuses key counts the permutation cannot use", () => {
  assert.equal(benchKeysProblem(1_000_000), null);
  assert.equal(benchKeysProblem(BENCH_MAX_KEYS), null);
  assert.match(benchKeysProblem(0)!, /positive integer/);
  assert.match(benchKeysProblem(1.5)!, /positive integer/);
  assert.match(benchKeysProblem(BENCH_MAX_KEYS + 1)!, /at most/);
});

test("pk bench - stalled time: counters and histogram sums with a time unit in the name, in seconds; none is null", () => {
  const body = [
    "# HELP natslake_writer_stalled_seconds_total time buckets spent stalled",
    "# TYPE natslake_writer_stalled_seconds_total counter",
    'natslake_writer_stalled_seconds_total{table="bench.pk",bucket="0"} 1.5',
    'natslake_writer_stalled_seconds_total{table="bench.pk",bucket="1"} 0.25',
    'natslake_lsm_stall_ms_bucket{le="100"} 3',
    'natslake_lsm_stall_ms_sum{table="bench.pk"} 500',
    'natslake_lsm_stall_ms_count{table="bench.pk"} 3',
    'natslake_buckets_stalled{table="bench.pk"} 2',
    'natslake_commit_duration_ms_sum{table="bench.pk"} 9999',
    "",
  ].join("\n");
  assert.deepEqual(stalledTime(body), { seconds: 2.25, metrics: ["natslake_lsm_stall_ms_sum", "natslake_writer_stalled_seconds_total"] });
  // Only help text or unit-less metrics mention stalls: no stall time is exported.
  assert.equal(stalledTime("# HELP natslake_actors_stuck actors for the node's stallReport\nnatslake_actors_stuck 0\nnatslake_buckets_stalled 1\n"), null);
  assert.equal(stalledTime(""), null);
  // The writer's own counter of stopped milliseconds at the stop trigger is stall time (actors/metrics.ts).
  assert.deepEqual(stalledTime('natslake_bucket_stopped_ms_total{table="bench.pk",bucket="0"} 1500\nnatslake_bucket_stopped_ms_total{table="bench.pk",bucket="1"} 0\n'), { seconds: 1.5, metrics: ["natslake_bucket_stopped_ms_total"] });
  // A node at zero still reports (0 s is a measurement, not an absence).
  assert.deepEqual(stalledTime("natslake_writer_stalled_seconds_total 0\n"), { seconds: 0, metrics: ["natslake_writer_stalled_seconds_total"] });
  assert.equal(sumStalled([null, null]), null);
  assert.deepEqual(sumStalled([{ seconds: 1, metrics: ["a_stall_seconds_total"] }, null, { seconds: 0.5, metrics: ["a_stall_seconds_total"] }]), { seconds: 1.5, metrics: ["a_stall_seconds_total"] });
});

test("pk bench - bucketShapes counts live files and sorted runs per bucket; scanKeys counts rows and distinct keys", async (tc) => {
  const wh = tempDir();
  tc.after(() => wh.cleanup());
  const table = await new Catalog(wh.path).createTable(parseIdentifier("bench.pk"), { columns: parseColumnList("id BIGINT, name STRING"), primaryKeys: ["id"], options: { bucket: "2" } });
  assert.deepEqual(await bucketShapes(table), [], "no snapshot yet");
  // Three commits over the same 40 keys: each adds a level-0 file to each bucket.
  for (let round = 0; round < 3; round++) {
    const w = await BatchWriter.open(table);
    await w.upsert(Array.from({ length: 40 }, (_, i) => ({ id: i, name: `r${round}-${i}` })));
    await w.commit();
  }
  // Each bucket's files by level and rows: the same keys split 23 / 17 between the buckets in each commit.
  assert.deepEqual(await bucketShapes(table), [
    { bucket: 0, files: 3, sortedRuns: 3, fileRows: ["L0:23", "L0:23", "L0:23"] },
    { bucket: 1, files: 3, sortedRuns: 3, fileRows: ["L0:17", "L0:17", "L0:17"] },
  ]);
  const live = await scanKeys(table, "id");
  assert.deepEqual([live.rows, live.keys], [40, 40]);
  assert.ok(live.seconds > 0);
  await compactPrimaryKeyTable(table, { full: true });
  const full = await bucketShapes(table);
  assert.deepEqual(full.map(({ bucket, files, sortedRuns }) => ({ bucket, files, sortedRuns })), [
    { bucket: 0, files: 1, sortedRuns: 1 },
    { bucket: 1, files: 1, sortedRuns: 1 },
  ]);
  // Compacted to the top level (5 of num-levels 6), each bucket's keys once.
  assert.deepEqual(full.map((s) => s.fileRows), [["L5:23"], ["L5:17"]]);
  const compacted = await scanKeys(table, "id", ["name"]);
  assert.deepEqual([compacted.rows, compacted.keys], [40, 40], "the key column is read even when the projection leaves it out");
  // Updates of ten keys and a new one (both buckets get some): a level-0 file above each bucket's compacted level.
  const w = await BatchWriter.open(table);
  await w.upsert([...Array.from({ length: 10 }, (_, i) => ({ id: i, name: "again" })), { id: 100, name: "new" }]);
  await w.commit();
  const shapes = await bucketShapes(table);
  assert.equal(shapes.reduce((n, s) => n + s.files, 0), 4);
  assert.equal(shapes.reduce((n, s) => n + s.sortedRuns, 0), 4, "each bucket: its level-0 file (if any) + its one non-empty level");
  const after = await scanKeys(table, "id");
  assert.deepEqual([after.rows, after.keys], [41, 41]);
});
