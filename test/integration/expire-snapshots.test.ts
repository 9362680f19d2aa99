/**
 * Snapshot expiration (Paimon's rules): which snapshots go, that the files only they referenced go with them while
 * every retained snapshot stays whole (natslake and pypaimon read it), that tags protect what they hold, and that a
 * run SIGKILLed at any step leaves the retained snapshots whole and the next run finishes the job.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTable, readJson, reopen, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import { paimonRead, paimonWrite } from "../helpers/python.ts";
import { FileStoreCommit } from "../../src/commit/file-store-commit.ts";
import { natslakeStateAsOf } from "../../src/commit/stream-commit.ts";
import { natslakeProperties } from "../../src/format/snapshot.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { planScan } from "../../src/scan/plan.ts";
import type { Table } from "../../src/table/table.ts";

const wh = tempDir();
after(() => wh.cleanup());
const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

/** A table with `commits` appends of 5 rows, a partition overwrite in the middle (so deltas DELETE files). */
async function history(name: string, commits: number, overwriteAt: number): Promise<Table> {
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, dt STRING NOT NULL", { partitionKeys: ["dt"], options: { bucket: "2", "bucket-key": "id" } });
  for (let c = 0; c < commits; c++) {
    const rows = Array.from({ length: 5 }, (_, k) => ({ id: c * 5 + k, dt: c % 2 === 0 || c === overwriteAt ? "a" : "b" }));
    await writeRows(t, rows, c === overwriteAt ? { partition: ["a"] } : undefined);
  }
  return reopen(wh.path, name);
}

/** Every data file and manifest a snapshot references exists. */
async function assertWhole(t: Table, id: number): Promise<void> {
  const s = await t.snapshots.snapshot(id);
  const store = new ManifestStore(t);
  for (const list of [s.baseManifestList, s.deltaManifestList]) {
    assert.ok(existsSync(t.paths.manifestPath(list)), `snapshot ${id}: manifest list ${list} exists`);
    for (const m of await store.readManifestList(list)) assert.ok(existsSync(t.paths.manifestPath(m.fileName)), `snapshot ${id}: manifest ${m.fileName} exists`);
  }
  const plan = await planScan(t, { snapshotId: id });
  for (const split of plan.splits) {
    const dir = join(t.root, `dt=${String(split.partitionValues[0])}`, `bucket-${split.bucket}`);
    for (const f of split.files) assert.ok(existsSync(join(dir, f.fileName)), `snapshot ${id}: data file ${f.fileName} exists`);
  }
}

/** Data files on disk under the table. */
function dataFilesOnDisk(t: Table): string[] {
  const out: string[] = [];
  for (const p of ["dt=a", "dt=b"]) for (const b of ["bucket-0", "bucket-1"]) if (existsSync(join(t.root, p, b))) out.push(...readdirSync(join(t.root, p, b)));
  return out.sort();
}

test("expire - keeps num-retained.min, deletes the expired snapshots' own files, every retained snapshot whole", async () => {
  const t = await history("exp.basic", 20, 9);
  const before = sortRows(await readJson(t));
  const filesBefore = dataFilesOnDisk(t);
  const dry = await expireSnapshots(t, { retainMin: 5, timeRetainedMs: 0, limit: 100, dryRun: true });
  assert.deepEqual([dry.from, dry.to, dry.snapshotsDeleted], [1, 16, 15]);
  assert.ok(dry.dataFilesDeleted > 0, "the overwrite's replaced files are expirable");
  assert.equal(readdirSync(join(t.root, "snapshot")).filter((n) => n.startsWith("snapshot-")).length, 20, "a dry run deletes nothing");
  assert.deepEqual(dataFilesOnDisk(t), filesBefore);

  const r = await expireSnapshots(t, { retainMin: 5, timeRetainedMs: 0, limit: 100 });
  assert.deepEqual([r.from, r.to, r.dataFilesDeleted, r.manifestsDeleted], [1, 16, dry.dataFilesDeleted, dry.manifestsDeleted]);
  assert.deepEqual(await t.snapshots.listIds(), [16, 17, 18, 19, 20]);
  assert.equal(readFileSync(join(t.root, "snapshot", "EARLIEST"), "utf8"), "16");
  for (let id = 16; id <= 20; id++) await assertWhole(t, id);
  // Only the files the overwrite replaced are gone; every live file of the latest snapshot stays.
  assert.equal(dataFilesOnDisk(t).length, filesBefore.length - r.dataFilesDeleted);
  // No manifest is left that no retained snapshot references.
  const store = new ManifestStore(t);
  const referenced = new Set<string>();
  for (let id = 16; id <= 20; id++) {
    const s = await t.snapshots.snapshot(id);
    for (const list of [s.baseManifestList, s.deltaManifestList]) {
      referenced.add(list);
      for (const m of await store.readManifestList(list)) referenced.add(m.fileName);
    }
  }
  assert.deepEqual(readdirSync(join(t.root, "manifest")).sort(), [...referenced].sort());
  // Readers see the same rows; pypaimon reads the expired table and time-travels to a retained snapshot.
  assert.deepEqual(sortRows(await readJson(t)), before);
  assert.deepEqual(sortRows(await paimonRead(wh.path, "exp.basic")), before);
  assert.equal((await paimonRead(wh.path, "exp.basic", { snapshot: 16 })).length, (await readJson(t, { snapshotId: 16 })).length);
  // Nothing more to expire.
  assert.equal((await expireSnapshots(t, { retainMin: 5, timeRetainedMs: 0 })).snapshotsDeleted, 0);
});

test("expire - time-retained, num-retained.max and expire.limit bound the range as Paimon's do", async () => {
  const t = await history("exp.bounds", 12, 5);
  const times = await Promise.all((await t.snapshots.listIds()).map(async (id) => (await t.snapshots.snapshot(id)).timeMillis));
  // Every snapshot is younger than an hour: nothing goes (the table's default time-retained is 1 h).
  assert.equal((await expireSnapshots(t, { retainMin: 1 })).snapshotsDeleted, 0);
  // Beyond num-retained.max snapshots go whatever their age.
  const r = await expireSnapshots(t, { retainMin: 1, retainMax: 8, limit: 100 });
  assert.deepEqual([r.from, r.to], [1, 5]);
  // expire.limit caps a run.
  const l = await expireSnapshots(t, { retainMin: 1, timeRetainedMs: 0, limit: 3 });
  assert.deepEqual([l.from, l.to], [5, 8]);
  // A cutoff between two snapshots' times keeps the younger one and everything after it.
  const cutoffAfter = times[9]!; // snapshot 10's time
  const c = await expireSnapshots(t, { retainMin: 1, now: cutoffAfter + 1, timeRetainedMs: 1, limit: 100 });
  let expectedEnd = 8;
  while (expectedEnd < 10 && times[expectedEnd - 1]! < cutoffAfter) expectedEnd++;
  assert.deepEqual([c.from, c.to], [8, expectedEnd]);
  assert.ok(expectedEnd <= 10);
  for (const id of await t.snapshots.listIds()) await assertWhole(t, id);
  await assert.rejects(expireSnapshots(t, { retainMin: 0 }), /must be at least 1/);
  await assert.rejects(expireSnapshots(t, { retainMin: 5, retainMax: 2 }), /must not exceed/);
});

test("expire - a tag (in Paimon's format) holds its snapshot's data files and manifests", async () => {
  const t = await history("exp.tagged", 10, 8);
  // A tag on snapshot 3, in Paimon's format (the snapshot's JSON under tag/).
  mkdirSync(join(t.root, "tag"), { recursive: true });
  writeFileSync(join(t.root, "tag", "tag-keep"), readFileSync(join(t.root, "snapshot", "snapshot-3")));
  const tagged = sortRows(await readJson(t, { snapshotId: 3 }));
  const r = await expireSnapshots(t, { retainMin: 1, timeRetainedMs: 0, limit: 100 });
  assert.deepEqual([r.from, r.to], [1, 10]);
  // The tag's files are all still there: read them through its manifests.
  const tagSnapshot = JSON.parse(readFileSync(join(t.root, "tag", "tag-keep"), "utf8")) as { baseManifestList: string; deltaManifestList: string };
  const store = new ManifestStore(t);
  for (const list of [tagSnapshot.baseManifestList, tagSnapshot.deltaManifestList]) {
    assert.ok(existsSync(t.paths.manifestPath(list)), `tag manifest list ${list}`);
    for (const m of await store.readManifestList(list)) assert.ok(existsSync(t.paths.manifestPath(m.fileName)), `tag manifest ${m.fileName}`);
  }
  const live = new Set(dataFilesOnDisk(t));
  // Read losslessly: the snapshot's commitIdentifier is Paimon's Long.MAX_VALUE, beyond what JSON.parse keeps exact.
  const { snapshotFromJson } = await import("../../src/format/snapshot.ts");
  const { parseJson } = await import("../../src/format/wire/json.ts");
  for (const e of await store.readLiveEntries(snapshotFromJson(parseJson(readFileSync(join(t.root, "tag", "tag-keep"), "utf8"))))) assert.ok(live.has(e.file.fileName), `tagged file ${e.file.fileName} kept`);
  assert.equal(tagged.length, 15);
  await assertWhole(t, 10);
});

for (const point of ["expire.after-data-file", "expire.before-snapshots", "expire.after-snapshot"]) {
  test(`expire - SIGKILL at ${point}: retained snapshots whole, the next run finishes the job`, async () => {
    const name = `exp.kill_${point.replace(/[.-]/g, "_")}`;
    const t = await history(name, 12, 6);
    const before = sortRows(await readJson(t));
    const args = [BIN, "expire-snapshots", name, "--retain-min", "3", "--older-than", "0 s", "--warehouse", wh.path];
    const killed = await new Promise<{ signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, args, { env: { ...process.env, FAILPOINTS: `${point}:kill${point === "expire.before-snapshots" ? "" : "@2"}` }, stdio: ["ignore", "pipe", "pipe"] });
      let stderr = "";
      p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
      p.on("close", (_code, signal) => resolve({ signal, stderr }));
    });
    assert.equal(killed.signal, "SIGKILL", killed.stderr);
    const mid = await reopen(wh.path, name);
    for (let id = 10; id <= 12; id++) await assertWhole(mid, id);
    assert.deepEqual(sortRows(await readJson(mid)), before);
    assert.deepEqual(sortRows(await paimonRead(wh.path, name)), before);
    // The next run (the CLI, as an operator would) finishes it.
    const done = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const p = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
      let stdout = "";
      p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
      p.on("close", (code) => resolve({ code, stdout }));
    });
    assert.equal(done.code, 0);
    assert.match(done.stdout, /expired snapshots \d+\.\.9 .*earliest snapshot now 10/);
    const t2 = await reopen(wh.path, name);
    assert.deepEqual(await t2.snapshots.listIds(), [10, 11, 12]);
    for (let id = 10; id <= 12; id++) await assertWhole(t2, id);
    assert.deepEqual(sortRows(await readJson(t2)), before);
  });
}

test("expire - the CLI refuses bad arguments and prints a summary", async () => {
  await history("exp.cli", 4, 99);
  const run = (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      const p = spawn(process.execPath, [BIN, "expire-snapshots", ...args, "--warehouse", wh.path], { stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
      p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
      p.on("close", (code) => resolve({ code, stdout, stderr }));
    });
  const bad = await run(["exp.cli", "--retain-min", "zero"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--retain-min must be a positive integer/);
  const dur = await run(["exp.cli", "--older-than", "soon"]);
  assert.equal(dur.code, 2);
  assert.match(dur.stderr, /not a duration: 'soon'/);
  const none = await run(["exp.cli"]);
  assert.equal(none.code, 0);
  assert.match(none.stdout, /exp\.cli: nothing to expire/);
  const dry = await run(["exp.cli", "--retain-min", "1", "--older-than", "0 s", "--dry-run"]);
  assert.match(dry.stdout, /would expire snapshots 1\.\.3 \(3\)/);
});

test("expire - never expires the newest snapshot carrying natslake's offsets, even when other engines committed after it", async () => {
  const name = "exp.offsets";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, dt STRING NOT NULL", { options: { bucket: "2", "bucket-key": "id" } });
  // Snapshot 1: natslake's stream offsets (as the cluster's committer records them).
  await new FileStoreCommit(t).commit({
    commitUser: "cluster",
    messages: [],
    prepare: async () => ({ properties: natslakeProperties({ epoch: 1, buckets: new Map([[0, { offset: 5n, ownerEpoch: 1 }]]) }), messages: [], commitIdentifier: 1n, commitEmpty: true }),
  });
  // Snapshots 2..7 by pypaimon, which does not carry natslake's properties forward.
  const written = await paimonWrite({ warehouse: wh.path, table: name, create: null, batches: Array.from({ length: 6 }, (_, b) => [{ id: b, dt: "x" }]), overwrite: null });
  assert.deepEqual(written.snapshots, [2, 3, 4, 5, 6, 7]);
  const r = await expireSnapshots(await reopen(wh.path, name), { retainMin: 1, timeRetainedMs: 0, limit: 100 });
  assert.equal(r.snapshotsDeleted, 0, "snapshot 1 holds the only offsets on the chain");
  const again = await reopen(wh.path, name);
  const st = await natslakeStateAsOf(again, await again.snapshots.latest());
  assert.equal(st?.buckets.get(0)?.offset, 5n);
  // Once the cluster commits again (its committer carries the offsets forward), the older ones may go.
  await new FileStoreCommit(again).commit({
    commitUser: "cluster",
    messages: [],
    prepare: async () => ({ properties: natslakeProperties({ epoch: 1, buckets: new Map([[0, { offset: 9n, ownerEpoch: 1 }]]) }), messages: [], commitIdentifier: 2n, commitEmpty: true }),
  });
  const r2 = await expireSnapshots(await reopen(wh.path, name), { retainMin: 1, timeRetainedMs: 0, limit: 100 });
  assert.deepEqual([r2.from, r2.to], [1, 8]);
});
