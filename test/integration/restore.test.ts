/**
 * Rollback that keeps the history (`natslake rollback --keep-history`, src/maintenance/restore.ts — what the cluster's
 * leader runs for `rollback --nats`): the target's content as one new OVERWRITE snapshot, on a real filesystem with
 * pypaimon as the oracle — later snapshots and tags kept, the target's files back under new names, the cluster's
 * offsets carried forward, the table whole after the old snapshots expire, and a run SIGKILLed before its snapshot.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { readJson, reopen, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { filesOf, historyTable, idsByBucket, liveDataFiles, warehouseCli } from "../helpers/warehouse-cli.ts";
import { FileStoreCommit } from "../../src/commit/file-store-commit.ts";
import { natslakeProperties } from "../../src/format/snapshot.ts";
import { listTags } from "../../src/table/tags.ts";
import type { Table } from "../../src/table/table.ts";

const wh = tempDir();
after(() => wh.cleanup());
const { cli, ok, fails } = warehouseCli(wh.path);
const history = (name: string, commits: number, overwriteAt = -1): Promise<Table> => historyTable(wh.path, name, commits, overwriteAt);

test("rollback --keep-history - the target's content as ONE new snapshot: later snapshots and tags stay, its files come back under new names, the offsets go forward; expiring the old snapshots keeps it whole", async () => {
  const name = "tg.restore";
  await history(name, 8, 5);
  // A compaction after snapshot 4 replaces files snapshot 4 holds: restoring 4 must bring them back.
  await ok(["compact", name]);
  await ok(["tag", "create", name, "late", "--snapshot", "7"]);
  const t1 = await reopen(wh.path, name);
  const latest = (await t1.snapshots.latestId())!;
  // The latest snapshot as the cluster leaves it: offsets in its properties (a restore carries them forward).
  await new FileStoreCommit(t1).commit({
    commitUser: `natslake-${name}`,
    messages: [],
    prepare: async (base) => ({ properties: natslakeProperties({ epoch: 3, buckets: new Map([[0, { offset: 41n, ownerEpoch: 2 }]]) }, base?.properties ?? null), messages: [], commitIdentifier: 1n, commitEmpty: true }),
  });
  const at4 = await readJson(t1, { snapshotId: 4 });
  const order4 = await idsByBucket(t1, { snapshotId: 4 });
  const before = filesOf(t1);
  const beforeRows = sortRows(await readJson(await reopen(wh.path, name)));

  const dry = await ok(["rollback", name, "--to-snapshot", "4", "--keep-history", "--dry-run"]);
  assert.match(dry, new RegExp(`would restore the content of snapshot 4 on top of snapshot ${latest + 1} as one new snapshot: \\d+ files removed, [1-9]\\d* brought back under new names, ${beforeRows.length} → ${at4.length} rows`));
  assert.deepEqual(filesOf(t1), before, "the dry run changes nothing");

  const out = await ok(["rollback", name, "--to-snapshot", "4", "--keep-history", "--json"]);
  const r = JSON.parse(out) as { target: number; fromLatest: number; snapshot: number; filesRemoved: number; filesRestored: number; rowsBefore: number; rowsAfter: number };
  assert.deepEqual([r.target, r.fromLatest, r.snapshot, r.rowsBefore, r.rowsAfter], [4, latest + 1, latest + 2, beforeRows.length, at4.length]);
  const t2 = await reopen(wh.path, name);
  const s = await t2.snapshots.snapshot(r.snapshot);
  assert.equal(s.commitKind, "OVERWRITE");
  assert.equal(s.properties?.["natslake.offset.0"], "41", "the cluster's offsets are carried forward");
  assert.equal(s.properties?.["natslake.epoch"], "3");
  assert.deepEqual(await t2.snapshots.listIds(), Array.from({ length: latest + 2 }, (_, i) => i + 1), "no snapshot is deleted, none re-used");
  assert.deepEqual((await listTags(t2)).map((x) => x.name), ["late"]);
  // The same rows in the same order (each bucket reads in its sequence order), for natslake, pypaimon and the tag.
  assert.deepEqual(await idsByBucket(t2), await idsByBucket(t2, { snapshotId: 4 }));
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(at4));
  assert.deepEqual(sortRows(await readJson(t2, { tag: "late" })), sortRows(await readJson(t2, { snapshotId: 7 })));
  const restored = await liveDataFiles(t2, {});
  const original = await liveDataFiles(t2, { snapshotId: 4 });
  assert.equal(restored.filter((f) => !original.includes(f)).length, r.filesRestored, "brought back under new names");

  // Expire everything but the restore: the files of snapshot 4 lose their old names, the restore keeps its own.
  await ok(["expire-snapshots", name, "--retain-min", "1", "--older-than", "0 s"]);
  const t3 = await reopen(wh.path, name);
  assert.deepEqual(await t3.snapshots.listIds(), [r.snapshot]);
  assert.deepEqual(await idsByBucket(t3), order4);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(at4));
  for (const f of restored) assert.ok(existsSync(join(t3.root, f)), `${f} is still there`);
  // Writing goes on after the restored rows.
  await writeRows(t3, [{ id: 999, dt: "a", msg: "after" }]);
  const rows = await readJson(await reopen(wh.path, name));
  assert.equal(rows.length, at4.length + 1);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(rows));
  assert.match(await ok(["rollback", name, "--to-snapshot", String(r.snapshot + 1), "--keep-history"]), new RegExp(`snapshot ${r.snapshot + 1} already holds the content of snapshot ${r.snapshot + 1}; nothing to restore`));
  await fails(["rollback", name, "--to-snapshot", "2", "--keep-history", "--force"], 2, /--force and --guard apply to Paimon's rollback, not to --keep-history/);
});

test("rollback --keep-history - SIGKILL after its links, before its snapshot: the table is unchanged, the rerun restores, the links left behind are orphans", async () => {
  const name = "tg.restore_kill";
  // The overwrite at 3 replaces partition a: restoring 2 brings its files back (links).
  const t = await history(name, 6, 3);
  await ok(["compact", name]);
  const at2 = await readJson(t, { snapshotId: 2 });
  const latestRows = await readJson(await reopen(wh.path, name));
  const latestOrder = await idsByBucket(await reopen(wh.path, name));
  const order2 = await idsByBucket(t, { snapshotId: 2 });
  const ids = await (await reopen(wh.path, name)).snapshots.listIds();
  const killed = await cli(["rollback", name, "--to-snapshot", "2", "--keep-history"], { FAILPOINTS: "restore.after-links:kill" });
  assert.equal(killed.signal, "SIGKILL", killed.stderr);
  const t2 = await reopen(wh.path, name);
  assert.deepEqual(await t2.snapshots.listIds(), ids, "no snapshot was committed");
  assert.deepEqual(await idsByBucket(t2), latestOrder);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(latestRows));
  const orphansBefore = JSON.parse(await ok(["remove-orphans", name, "--older-than", "0 s", "--dry-run", "--json"])) as { totalFiles: number };
  assert.ok(orphansBefore.totalFiles > 0, "the links of the killed run are orphans");
  assert.match(await ok(["rollback", name, "--to-snapshot", "2", "--keep-history"]), /restored the content of snapshot 2 as snapshot/);
  const t3 = await reopen(wh.path, name);
  assert.deepEqual(await idsByBucket(t3), order2);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(at2));
  await ok(["remove-orphans", name, "--older-than", "0 s"]);
  assert.deepEqual(await idsByBucket(await reopen(wh.path, name)), order2, "orphan cleanup removed only the killed run's links");
});
