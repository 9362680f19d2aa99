/**
 * Incremental reads: the rows APPEND snapshots in (A, B] added, bucket order kept; OVERWRITE snapshots skipped (as
 * Paimon's delta mode does); a range reaching back past expired snapshots refused; and the CLI's --incremental and
 * --incremental-since. Checked against pypaimon: for a range of appends, the incremental rows are exactly the rows of
 * snapshot B that snapshot A does not have.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createTable, readJson, reopen, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { parseIncrementalRange } from "../../src/scan/incremental.ts";
import { readAllRows } from "../../src/scan/read.ts";

const wh = tempDir();
after(() => wh.cleanup());
const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

const key = (r: Record<string, unknown>): string => JSON.stringify(r);

test("incremental - rows added by the APPEND snapshots of a range, in snapshot and bucket order; overwrites skipped", async () => {
  const name = "inc.t";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, dt STRING NOT NULL, n INT", { partitionKeys: ["dt"], options: { bucket: "2", "bucket-key": "id" } });
  // Snapshots 1..4 append; 5 overwrites partition a; 6 appends.
  for (let c = 0; c < 4; c++) await writeRows(t, Array.from({ length: 6 }, (_, k) => ({ id: c * 10 + k, dt: k % 2 === 0 ? "a" : "b", n: c })));
  await writeRows(t, [{ id: 500, dt: "a", n: 5 }], { partition: ["a"] });
  await writeRows(t, [{ id: 600, dt: "b", n: 6 }, { id: 601, dt: "a", n: 6 }]);
  t = await reopen(wh.path, name);

  // (1, 3]: the rows of commits 2 and 3, in snapshot order, and per bucket in write order.
  const mid = await readJson(t, { incremental: { from: 1, to: 3 } });
  assert.deepEqual(mid.map((r) => r["n"]), [1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2], "snapshot order");
  assert.deepEqual(mid.map((r) => Number(r["id"])).sort((x, y) => x - y), [10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25]);
  // Within a snapshot and bucket, rows come in write order (the append queue).
  for (const n of [1, 2]) for (const dt of ["a", "b"]) {
    const seq = mid.filter((r) => r["n"] === n && r["dt"] === dt).map((r) => Number(r["id"]));
    assert.deepEqual(seq, [...seq].sort((x, y) => x - y), `write order in partition ${dt} of commit ${n}`);
  }
  // The oracle: rows of snapshot 3 minus rows of snapshot 1, by pypaimon.
  const py3 = (await paimonRead(wh.path, name, { snapshot: 3 })).map(key);
  const py1 = new Set((await paimonRead(wh.path, name, { snapshot: 1 })).map(key));
  assert.deepEqual(sortRows(await readJson(t, { incremental: { from: 1, to: 3 } })).map(key), py3.filter((r) => !py1.has(r)).sort());

  // (4, 6]: the overwrite (5) is skipped, the append after it (6) delivered.
  assert.deepEqual((await readJson(t, { incremental: { from: 4, to: 6 } })).map((r) => Number(r["id"])).sort((x, y) => x - y), [600, 601]);
  // (0, 6]: every appended row once, including those the overwrite replaced later.
  const all = await readAllRows(t, { incremental: { from: 0, to: 6 } });
  assert.equal(all.length, 4 * 6 + 2);
  assert.equal(new Set(all.map((r) => Number(r["id"]))).size, all.length, "no row twice");
  // Projection and a partition.
  assert.deepEqual((await readJson(t, { incremental: { from: 0, to: 2 }, projection: ["id"], partition: ["b"] })).map((r) => Number(r["id"])).sort((x, y) => x - y), [1, 3, 5, 11, 13, 15]);

  // Bad ranges.
  await assert.rejects(readAllRows(t, { incremental: { from: 3, to: 3 } }), /need 0 <= A < B/);
  await assert.rejects(readAllRows(t, { incremental: { from: 1, to: 99 } }), /latest snapshot is 6/);
  assert.throws(() => parseIncrementalRange("5"), /A\.\.B/);
  assert.deepEqual(parseIncrementalRange("3,7"), { from: 3, to: 7 });

  // After expiration, a range that starts before the earliest retained snapshot is refused.
  await expireSnapshots(t, { retainMin: 2, timeRetainedMs: 0 });
  const t2 = await reopen(wh.path, name);
  await assert.rejects(readAllRows(t2, { incremental: { from: 1, to: 6 } }), /were expired/);
  assert.equal((await readAllRows(t2, { incremental: { from: 5, to: 6 } })).length, 2);
});

test("incremental - the CLI: --incremental A..B, --incremental-since, and what it refuses", async () => {
  const name = "inc.cli";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
  for (let c = 0; c < 3; c++) await writeRows(t, [{ id: c }]);
  const run = (...args: string[]) => spawnSync(process.execPath, [BIN, "read", name, ...args, "--warehouse", wh.path], { encoding: "utf8" });
  const r = run("--incremental", "1..3", "--format", "jsonl");
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split("\n").map((l) => JSON.parse(l) as unknown), [{ id: 1 }, { id: 2 }]);
  const since = run("--incremental-since", new Date(Date.now() + 60_000).toISOString(), "--format", "jsonl");
  assert.equal(since.status, 0, since.stderr);
  assert.equal(since.stdout.trim(), "", "nothing after the latest snapshot");
  const bad = run("--incremental", "3..1");
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /A must be below B/);
  const both = run("--incremental", "0..1", "--snapshot", "2");
  assert.equal(both.status, 2);
  assert.match(both.stderr, /without --snapshot, --at or --tag/);
});
