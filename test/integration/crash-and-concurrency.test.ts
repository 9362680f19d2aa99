/**
 * Crash safety and concurrent commits, with real processes:
 * - a writer killed (SIGKILL) between writing its data files and creating the snapshot leaves the table readable
 *   at its previous snapshot, with none of the killed write's rows;
 * - two processes committing to one table at once produce contiguous snapshots and lose no rows.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createTable, readJson, reopen, tempDir, writeRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { rollback } from "../../src/maintenance/rollback.ts";

const wh = tempDir();
after(() => wh.cleanup());
const CHILD = fileURLToPath(new URL("../helpers/writer-child.ts", import.meta.url));

function runChild(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    p.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

for (const point of ["commit.after-manifests", "commit.after-manifest-lists", "commit.before-snapshot"]) {
  test(`crash - SIGKILL at ${point} leaves the table at its previous snapshot`, async () => {
    const name = `crash.t_${point.replace(/[.-]/g, "_")}`;
    const t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING", { options: { bucket: "2", "bucket-key": "id" } });
    await writeRows(t, [{ id: -1, who: "before" }]);
    const r = await runChild([wh.path, name, "0", "500", "1"], { FAILPOINTS: `${point}:kill` });
    assert.equal(r.signal, "SIGKILL", `child should die by SIGKILL at ${point}: ${r.stderr}`);
    const again = await reopen(wh.path, name);
    assert.equal(await again.snapshots.latestId(), 1);
    assert.deepEqual(await readJson(again), [{ id: -1, who: "before" }]);
    assert.deepEqual(await paimonRead(wh.path, name), [{ id: -1, who: "before" }]);
    // The table keeps working after the crash.
    await writeRows(again, [{ id: 7, who: "after" }]);
    assert.equal((await readJson(await reopen(wh.path, name))).length, 2);
  });
}

test("crash - SIGKILL right after the snapshot is linked keeps the commit whole", async () => {
  const name = "crash.after_link";
  await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING");
  const r = await runChild([wh.path, name, "0", "300", "1"], { FAILPOINTS: "commit.after-snapshot:kill" });
  assert.equal(r.signal, "SIGKILL");
  const t = await reopen(wh.path, name);
  assert.equal(await t.snapshots.latestId(), 1);
  assert.equal((await readJson(t)).length, 300);
});

test("concurrency - two processes committing at once: contiguous snapshots, no row lost or doubled", async () => {
  const name = "conc.t";
  await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING", { options: { bucket: "3", "bucket-key": "id" } });
  const commits = 12;
  const rows = 50;
  const [a, b] = await Promise.all([runChild([wh.path, name, "0", String(rows), String(commits)]), runChild([wh.path, name, "100000", String(rows), String(commits)])]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  const t = await reopen(wh.path, name);
  const ids = await t.snapshots.listIds();
  assert.deepEqual(ids, Array.from({ length: 2 * commits }, (_, i) => i + 1), "snapshot ids are contiguous from 1");
  const got = (await readJson(t)).map((r) => Number(r["id"]));
  assert.equal(got.length, 2 * commits * rows);
  assert.equal(new Set(got).size, got.length, "no duplicates");
  const want = [...Array.from({ length: commits * rows }, (_, i) => i), ...Array.from({ length: commits * rows }, (_, i) => 100000 + i)];
  assert.deepEqual([...got].sort((x, y) => x - y), want.sort((x, y) => x - y));
  const latest = await t.snapshots.latest();
  assert.equal(latest?.totalRecordCount, 2 * commits * rows);
});

test("concurrency - a handle's known latest snapshot is checked against the chain: another handle's commits and a rollback are seen", async () => {
  const name = "conc.known";
  await createTable(wh.path, name, "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
  const a = await reopen(wh.path, name);
  const b = await reopen(wh.path, name);
  await writeRows(a, [{ id: 1 }]);
  assert.equal(await a.snapshots.latestId(), 1, "its own commit");
  await writeRows(b, [{ id: 2 }]);
  await writeRows(b, [{ id: 3 }]);
  assert.equal(await a.snapshots.latestId(), 3, "commits by another handle, past the one it knows");
  await writeRows(a, [{ id: 4 }]);
  assert.equal((await a.snapshots.latest())?.totalRecordCount, 4, "a commit builds on the real latest");
  await rollback(a, { toSnapshot: 2 });
  assert.equal(await a.snapshots.latestId(), 2, "the rolled-back handle forgets the snapshots it removed");
  await writeRows(a, [{ id: 5 }]);
  assert.deepEqual((await readJson(await reopen(wh.path, name))).map((r) => Number(r["id"])).sort(), [1, 2, 5]);
});
