/**
 * `natslake compact` on primary-key tables, as users run it: one universal pick per bucket, `--full` to the top level,
 * `--dry-run`, the JSON summary; `--full` refused on an append table; a run SIGKILLed mid-compaction or before its
 * snapshot leaves the table as it was and its outputs to remove-orphans, and the next run succeeds; a compaction that
 * loses a race at commit time exits 3 and removes its outputs; the leader's path (runMaintenanceJob, the request
 * schema) takes `full`, and `--nats` against a cluster that does not serve the table runs it on the warehouse.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { compactTable } from "../../src/maintenance/compact.ts";
import { removeOrphans } from "../../src/maintenance/remove-orphans.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { runMaintenanceJob } from "../../actors/maintenance-jobs.ts";
import { parseMaintenanceRequest } from "../../actors/wire/maintenance-request.ts";
import type { CompactSummary } from "../../src/maintenance/compact-summary.ts";
import type { Table } from "../../src/table/table.ts";
import { startNats } from "../helpers/servers.ts";
import { paimonRead } from "../helpers/python.ts";
import { createTable, readJson, reopen, sortRows, tempDir } from "../helpers/tables.ts";
import { warehouseCli } from "../helpers/warehouse-cli.ts";

const wh = tempDir();
after(() => wh.cleanup());
const cli = warehouseCli(wh.path);
const FROM_SOURCE = { NATSLAKE_FROM_SOURCE: "1" };

async function pkTable(name: string, options: Record<string, string> = {}): Promise<Table> {
  return new Catalog(wh.path).createTable(parseIdentifier(name), {
    columns: parseColumnList("id INT NOT NULL, name STRING, score INT"),
    primaryKeys: ["id"],
    options: { bucket: "2", "num-sorted-run.compaction-trigger": "3", ...options },
  });
}

/** `rounds` commits of upserts over ids 0..29 (each round a different score) and a few deletes. */
async function history(t: Table, rounds: number): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    const w = await BatchWriter.open(t);
    await w.upsert(Array.from({ length: 10 }, (_, i) => ({ id: (r * 7 + i * 3) % 30, name: `r${r}`, score: r * 100 + i })));
    if (r % 2 === 1) await w.delete([{ id: r }]);
    await w.commit();
  }
}

function parquetOnDisk(t: Table): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const n of readdirSync(dir)) {
      const p = join(dir, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (n.endsWith(".parquet")) out.push(relative(t.root, p));
    }
  };
  walk(t.root);
  return out.sort();
}

async function levelsOf(t: Table): Promise<number[]> {
  return (await new ManifestStore(t).readLiveEntries((await t.snapshots.latest())!)).map((e) => e.file.level).sort();
}

test("compact PK - CLI: one universal pick per bucket, then --full to the top level; dry runs write nothing; rows unchanged (natslake, pypaimon)", { timeout: 180_000 }, async () => {
  const name = "p.cli";
  let t = await pkTable(name);
  await history(t, 6);
  const rows = sortRows(await readJson(t));
  const files = parquetOnDisk(t);
  const dry = JSON.parse(await cli.ok(["compact", name, "--dry-run", "--json"])) as CompactSummary;
  assert.deepEqual([dry.dryRun, dry.tasks, dry.snapshotId, dry.primaryKey!.full], [true, 2, null, false]);
  assert.deepEqual(parquetOnDisk(t), files, "a dry run writes nothing");

  const out = await cli.ok(["compact", name]);
  assert.match(out, /^p\.cli: compacted 2 buckets into level 3: 0 files moved up unchanged, 12 rewritten into 2; 12 → 2 files, .* rows read, \d+ written; deletes dropped in 2 buckets \(compacted into their top level\); snapshot 7\n$/);
  t = await reopen(wh.path, name);
  assert.deepEqual(await levelsOf(t), [3, 3], "num-levels = trigger + 1 = 4: the top level is 3");
  assert.deepEqual(sortRows(await readJson(t)), rows);

  // Three more commits: a pick per bucket compacts the new level-0 files above the top level.
  await history(t, 3);
  const rows2 = sortRows(await readJson(t));
  const universal = JSON.parse(await cli.ok(["compact", name, "--json"])) as CompactSummary;
  assert.equal(universal.snapshotId, 11);
  assert.ok(universal.primaryKey!.buckets.length === 2);
  t = await reopen(wh.path, name);
  assert.deepEqual(sortRows(await readJson(t)), rows2);
  const full = JSON.parse(await cli.ok(["compact", name, "--full", "--json"])) as CompactSummary;
  t = await reopen(wh.path, name);
  assert.deepEqual(await levelsOf(t), [3, 3], "--full: every bucket one run at the top level");
  assert.ok(full.snapshotId === null || full.snapshotId === 12);
  assert.match(await cli.ok(["compact", name, "--full"]), /^p\.cli: nothing to compact \(2 files, .*; every bucket is one sorted run at the top level already\)\n$/);
  assert.match(await cli.ok(["compact", name]), /no bucket's sorted runs call for a compaction/);
  assert.deepEqual(sortRows(await readJson(t)), rows2);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), rows2);
});

test("compact PK - --bucket chooses the bucket compacted; --full on an append table is refused", { timeout: 120_000 }, async () => {
  const name = "p.choose";
  let t = await pkTable(name);
  await history(t, 4);
  const s = JSON.parse(await cli.ok(["compact", name, "--full", "--bucket", "1", "--json"])) as CompactSummary;
  assert.deepEqual(s.primaryKey!.buckets.map((b) => [b.bucket, b.outputLevel]), [[1, 3]]);
  t = await reopen(wh.path, name);
  const byBucket = new Map<number, number[]>();
  for (const e of await new ManifestStore(t).readLiveEntries((await t.snapshots.latest())!)) byBucket.set(e.bucket, [...(byBucket.get(e.bucket) ?? []), e.file.level]);
  assert.deepEqual(byBucket.get(1), [3]);
  assert.ok(byBucket.get(0)!.every((l) => l === 0), "bucket 0 untouched");
  await createTable(wh.path, "p.append", "id BIGINT NOT NULL");
  await cli.fails(["compact", "p.append", "--full"], 2, /^error: p\.append is an append table: a full compaction \(--full\) applies to primary-key tables/);
});

for (const point of ["compact.rewrite.after-output", "compact.after-rewrite"] as const) {
  test(`compact PK - SIGKILL at ${point}: the table as it was, the outputs orphans that remove-orphans removes, the next run succeeds`, { timeout: 180_000 }, async () => {
    const name = `p.crash_${point.replace(/[.-]/g, "_")}`;
    let t = await pkTable(name);
    await history(t, 6);
    const rows = sortRows(await readJson(t));
    const latest = await t.snapshots.latestId();
    const files = parquetOnDisk(t);
    const r = await cli.cli(["compact", name, "--full"], { ...FROM_SOURCE, FAILPOINTS: `${point}:kill` });
    assert.equal(r.signal, "SIGKILL", r.stderr);
    t = await reopen(wh.path, name);
    assert.equal(await t.snapshots.latestId(), latest);
    assert.deepEqual(sortRows(await readJson(t)), rows);
    const orphans = parquetOnDisk(t).filter((f) => !files.includes(f));
    assert.equal(orphans.length, point === "compact.after-rewrite" ? 2 : 1, "one output per bucket compacted before the kill");
    const removed = await removeOrphans(t, { olderThanMs: 0, now: Date.now() + 60_000 });
    assert.deepEqual(removed.files.map((f) => f.path).sort(), orphans);
    const ok = JSON.parse(await cli.ok(["compact", name, "--full", "--json"])) as CompactSummary;
    assert.equal(ok.snapshotId, latest! + 1);
    t = await reopen(wh.path, name);
    assert.deepEqual(sortRows(await readJson(t)), rows);
  });
}

test("compact PK - a commit that changed a bucket while the compaction ran: exit 3, outputs removed", { timeout: 120_000 }, async () => {
  const name = "p.conflict";
  let t = await pkTable(name, { bucket: "1" });
  await history(t, 4);
  const files = parquetOnDisk(t);
  const run = cli.cli(["compact", name, "--full"], { ...FROM_SOURCE, FAILPOINTS: "compact.after-rewrite:sleep(4000)" });
  const deadline = Date.now() + 60_000;
  while (parquetOnDisk(t).length === files.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  assert.equal(parquetOnDisk(t).length, files.length + 1, "the compaction wrote its output");
  // Another compaction of the same bucket lands meanwhile.
  const other = await compactTable(await reopen(wh.path, name), { full: true });
  assert.ok(other.snapshotId !== null);
  const r = await run;
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /^error: COMPACT commit to p\.conflict conflicts with snapshot 5: file .* no longer live/);
  t = await reopen(wh.path, name);
  assert.equal(parquetOnDisk(t).length, files.length + 1, "only the other compaction's output is new");
});

test("compact PK - the leader's path: the request schema takes full; runMaintenanceJob compacts a primary-key table; --nats to a cluster that does not serve it runs on the warehouse", { timeout: 120_000 }, async () => {
  const name = "p.routed";
  let t = await pkTable(name);
  await history(t, 5);
  const rows = sortRows(await readJson(t));
  const req = parseMaintenanceRequest(new TextEncoder().encode(JSON.stringify({ type: "maintenance", v: 1, task: "compact", table: name, options: { full: true, dryRun: true } })));
  assert.deepEqual(req.options, { full: true, dryRun: true });
  assert.throws(() => parseMaintenanceRequest(new TextEncoder().encode(JSON.stringify({ type: "maintenance", v: 1, task: "compact", table: name, options: { full: "yes" } }))), /full/);
  const progress: number[] = [];
  const s = await runMaintenanceJob(t, { task: "compact", options: { full: true } }, { onProgress: (p) => progress.push(p.done) });
  assert.deepEqual([s.primaryKey!.full, s.tasks, progress], [true, 2, [1, 2]]);
  t = await reopen(wh.path, name);
  assert.deepEqual(await levelsOf(t), [3, 3]);
  assert.deepEqual(sortRows(await readJson(t)), rows);

  await history(t, 4);
  const nats = await startNats();
  try {
    const r = await cli.cli(["compact", name, "--full", "--nats", nats.url, "--json"], FROM_SOURCE);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /p\.routed is not served by the cluster at .*: compact ran on the warehouse directly/);
    assert.equal((JSON.parse(r.stdout) as CompactSummary).primaryKey!.full, true);
  } finally {
    await nats.stop();
  }
});
