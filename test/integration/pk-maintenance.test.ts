/**
 * Maintenance of primary-key tables written by natslake's BatchWriter (upserts, deletes, changelog-producer = input)
 * and compacted by natslake, on a real filesystem, checked against a model and by pypaimon and Java Paimon 1.4.2:
 * - snapshot expiration keeps a file a compaction upgraded (its DELETE at the old level and ADD at the new one are
 *   one delta) and deletes the changelog files, changelog manifests and lists the expired snapshots alone held —
 *   those of a tagged snapshot stay until the tag goes;
 * - orphan removal counts the changelog of retained snapshots and tags as referenced (and a tag whose changelog list
 *   Java's expiration deleted is no damage), and removes a changelog file nothing committed;
 * - rollback deletes the changelog of the snapshots and tags it removes, and keeps files upgraded after its target;
 * - restore puts files a compaction moved since back at the target's level (valid levels, no copy);
 * - partition expiration drops a primary-key partition;
 * - a changelog retention that outlives the snapshots (Paimon's decoupled changelog) is refused.
 * After each, every file on disk is referenced (remove-orphans finds nothing) and what is referenced exists.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { liveBucketLevels } from "../../src/maintenance/bucket-levels.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { compactTable } from "../../src/maintenance/compact.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { expirePartitions } from "../../src/maintenance/expire-partitions.ts";
import { removeOrphans } from "../../src/maintenance/remove-orphans.ts";
import { rollback } from "../../src/maintenance/rollback.ts";
import { restoreTable } from "../../src/maintenance/restore.ts";
import { changelogFilesOf, dataFilePath } from "../../src/table/file-refs.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { createTag, deleteTag, listTags } from "../../src/table/tags.ts";
import { TableWrite } from "../../src/write/table-write.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { ErrorKind, isLakeError } from "../../src/errors.ts";
import type { Snapshot } from "../../src/format/snapshot.ts";
import type { Table } from "../../src/table/table.ts";
import { paimonRead } from "../helpers/python.ts";
import { javaPaimonRead, javaRows } from "../helpers/java.ts";
import { readJson, reopen, sortRows, tempDir } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

type R = Record<string, unknown>;
type Change = { kind: "upsert"; id: number; score: number } | { kind: "delete"; id: number };

/** A primary-key table whose files are large enough to upgrade (no compression, long values, 4 KB target). */
async function pkTable(name: string, extra: { partitionKeys?: string[]; columns?: string; options?: Record<string, string> } = {}): Promise<Table> {
  return new Catalog(wh.path).createTable(parseIdentifier(name), {
    columns: parseColumnList(extra.columns ?? "id INT NOT NULL, name STRING, score INT"),
    partitionKeys: extra.partitionKeys ?? [],
    primaryKeys: extra.partitionKeys === undefined ? ["id"] : [...extra.partitionKeys, "id"],
    options: { bucket: "1", "changelog-producer": "input", "target-file-size": "4 kb", "file.compression": "none", ...extra.options },
  });
}

const nameOf = (id: number, score: number): string => `row-${id}-${score}-`.padEnd(48, String.fromCharCode(97 + (id % 26)));

/** Commits the changes (in order) and applies them to the model; returns the snapshot id. */
async function commit(t: Table, model: Map<number, R>, changes: readonly Change[]): Promise<number> {
  const w = await BatchWriter.open(t);
  for (const c of changes) {
    if (c.kind === "upsert") {
      const row = { id: c.id, name: nameOf(c.id, c.score), score: c.score };
      await w.upsert([row]);
      model.set(c.id, row);
    } else {
      await w.delete([{ id: c.id }]);
      model.delete(c.id);
    }
  }
  return (await w.commit()).snapshot!.id;
}

const upserts = (from: number, to: number, score: number): Change[] => Array.from({ length: to - from + 1 }, (_, i) => ({ kind: "upsert" as const, id: from + i, score }));
const rowsOf = (model: Map<number, R>): R[] => sortRows([...model.values()]);

/** Every file under the table's data and manifest directories, relative to its root. */
function filesOnDisk(t: Table): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) {
        if (!["schema", "snapshot", "tag"].includes(name)) walk(p);
      } else out.push(relative(t.root, p));
    }
  };
  walk(t.root);
  return out.sort();
}

/**
 * Nothing on disk is unreferenced (remove-orphans, age bound 0, finds nothing), and everything the snapshots and
 * tags reference exists: each reads, and each one's changelog files are there.
 */
async function consistent(t: Table): Promise<void> {
  const dry = await removeOrphans(t, { olderThanMs: 0, now: Date.now() + 60_000, dryRun: true });
  assert.deepEqual(dry.files.map((f) => f.path), [], "no unreferenced file");
  const store = new ManifestStore(t);
  const holders: Snapshot[] = [];
  for (const id of await t.snapshots.listIds()) holders.push(await t.snapshots.snapshot(id));
  for (const tag of await listTags(t)) holders.push(tag.snapshot);
  for (const s of holders) for (const e of await changelogFilesOf(store, s)) assert.ok(await t.io.isFile(dataFilePath(t, e)), `snapshot ${s.id}'s changelog file ${e.file.fileName} exists`);
  for (const id of await t.snapshots.listIds()) await readJson(t, { snapshotId: id });
  for (const tag of await listTags(t)) await readJson(t, { tag: tag.name });
}

/** natslake, pypaimon and Java read the model's rows (at the latest snapshot). */
async function allRead(t: Table, model: Map<number, R>): Promise<void> {
  const expected = rowsOf(model);
  const fresh = await reopen(wh.path, t.name);
  assert.deepEqual(sortRows(await readJson(fresh)), expected, "natslake");
  assert.deepEqual(sortRows(await paimonRead(wh.path, t.name)), expected, "pypaimon");
  const [java] = await javaPaimonRead(wh.path, [fresh], [{ table: t.name }]);
  assert.deepEqual(sortRows(javaRows(java)), expected, "Java Paimon");
}

async function liveOf(t: Table, s?: Snapshot): Promise<Array<{ name: string; level: number }>> {
  const snap = s ?? (await t.snapshots.latest())!;
  return (await new ManifestStore(t).readLiveEntries(snap)).map((e) => ({ name: e.file.fileName, level: e.file.level })).sort((a, b) => (a.name < b.name ? -1 : 1));
}

test("PK maintenance - expiration keeps upgraded files and deletes the changelog only expired snapshots held; a tag keeps its snapshot's changelog until it goes", { timeout: 300_000 }, async () => {
  const t = await pkTable("m.expire");
  const model = new Map<number, R>();
  await commit(t, model, upserts(0, 59, 1)); // 1: large L0 file [0, 59]
  await commit(t, model, upserts(100, 159, 1)); // 2: large L0 file [100, 159], overlapping nothing
  const s = await compactTable(t, { full: true }); // 3: both upgraded (no deletes) to the max level
  assert.deepEqual([s.snapshotId, s.primaryKey!.upgradedFiles, s.primaryKey!.rewrittenFiles], [3, 2, 0]);
  const upgraded = await liveOf(t);
  assert.ok(upgraded.every((f) => f.level === 5));
  await commit(t, model, [{ kind: "upsert", id: 7, score: 2 }, { kind: "delete", id: 8 }, { kind: "delete", id: 120 }]); // 4
  await commit(t, model, [{ kind: "upsert", id: 200, score: 3 }]); // 5
  // A tag on snapshot 1: it holds the first file (not the second: whether that survives is expiration's alone).
  await createTag(t, "one", { snapshotId: 1 });
  const store = new ManifestStore(t);
  const changelogOf = async (id: number): Promise<string[]> => (await changelogFilesOf(store, await t.snapshots.snapshot(id))).map((e) => dataFilePath(t, e));
  const [cl1, cl2, cl4] = [await changelogOf(1), await changelogOf(2), await changelogOf(4)];
  assert.deepEqual([cl1.length, cl2.length, cl4.length], [1, 1, 1], "one changelog file per append snapshot");

  const r = await expireSnapshots(t, { retainMin: 2, timeRetainedMs: 0 });
  assert.deepEqual([r.from, r.to, r.snapshotsDeleted], [1, 4, 3]);
  assert.equal(r.changelogFilesDeleted, 1, "snapshot 2's changelog goes; snapshot 1's stays with its tag; 3 (COMPACT) had none");
  assert.equal(await t.io.isFile(cl1[0]!), true);
  assert.equal(await t.io.isFile(cl2[0]!), false);
  const live = await liveOf(t);
  for (const f of upgraded) {
    assert.ok(filesOnDisk(t).some((p) => p.endsWith(f.name)), `${f.name}, upgraded by snapshot 3 (DELETE + ADD in one delta), is still on disk`);
    assert.ok(live.some((x) => x.name === f.name && x.level === 5));
  }
  await consistent(t);
  await allRead(t, model);
  assert.deepEqual(sortRows(await readJson(t, { tag: "one" })), sortRows(upserts(0, 59, 1).map((c) => ({ id: c.id, name: nameOf(c.id, 1), score: 1 }))), "the tag still reads");

  // The tag goes: it was the last holder of snapshot 1's changelog (and of its manifests), not of its data file.
  const d = await deleteTag(t, "one");
  assert.deepEqual([d.changelogFilesDeleted, d.dataFilesDeleted], [1, 0]);
  assert.equal(await t.io.isFile(cl1[0]!), false);
  await consistent(t);

  // Everything but the latest expires: the rest of the changelog goes; the live files stay and read.
  const all = await expireSnapshots(t, { retainMin: 1, timeRetainedMs: 0 });
  assert.equal(all.changelogFilesDeleted, 1, "snapshot 4's");
  assert.equal(await t.io.isFile(cl4[0]!), false);
  await consistent(t);
  await allRead(t, model);
});

test("PK maintenance - orphan removal: changelog of retained snapshots and tags is referenced, a changelog file nothing committed goes; a tag whose changelog list Java's expiration deleted is no damage", { timeout: 120_000 }, async () => {
  const t = await pkTable("m.orphans");
  const model = new Map<number, R>();
  await commit(t, model, upserts(0, 9, 1));
  await commit(t, model, [{ kind: "delete", id: 3 }, { kind: "upsert", id: 4, score: 2 }]);
  await createTag(t, "first", { snapshotId: 1 });
  // A write whose commit never happened: its data file and its changelog file are orphans.
  const tw = new TableWrite(t, { encoderPool: null });
  tw.upsert([{ id: 50, name: "never", score: 0 }]);
  await tw.prepareCommit();
  assert.equal(tw.writtenFiles.length, 2, "a data file and a changelog file");
  const r = await removeOrphans(t, { olderThanMs: 0, now: Date.now() + 60_000 });
  assert.deepEqual(r.files.map((f) => f.path.split("/").pop()).sort(), tw.writtenFiles.map((p) => p.split("/").pop()).sort());
  assert.ok(r.files.some((f) => f.path.includes("changelog-")), "the uncommitted changelog file is an orphan");
  await consistent(t);

  // Java's expiration deletes a tagged snapshot's changelog list (and manifests and files) with the snapshot.
  const tagged = (await listTags(t))[0]!.snapshot;
  const store = new ManifestStore(t);
  const files = await changelogFilesOf(store, tagged);
  const metas = await store.readManifestList(tagged.changelogManifestList!);
  await expireSnapshots(t, { retainMin: 1, timeRetainedMs: 0 });
  for (const e of files) await t.io.delete(dataFilePath(t, e));
  for (const m of metas) await t.io.delete(t.paths.manifestPath(m.fileName));
  await t.io.delete(t.paths.manifestPath(tagged.changelogManifestList!));
  const again = await removeOrphans(t, { olderThanMs: 0, now: Date.now() + 60_000, dryRun: true });
  assert.deepEqual(again.files, [], "nothing to remove, and no refusal over the tag's missing changelog list");
  assert.equal((await deleteTag(t, "first")).changelogFilesDeleted, 0, "the tag goes, its changelog was gone already");
  await allRead(t, model);
});

test("PK maintenance - rollback deletes the changelog of the snapshots and tags it removes and keeps files upgraded after its target", { timeout: 300_000 }, async () => {
  const t = await pkTable("m.rollback");
  const model = new Map<number, R>();
  await commit(t, model, upserts(0, 59, 1)); // 1
  await commit(t, model, upserts(100, 159, 1)); // 2
  const atTwo = new Map(model);
  const live2 = await liveOf(t);
  assert.equal((await compactTable(t, { full: true })).primaryKey!.upgradedFiles, 2); // 3: both upgraded
  await commit(t, model, [{ kind: "delete", id: 5 }, { kind: "upsert", id: 300, score: 4 }]); // 4
  await commit(t, model, [{ kind: "upsert", id: 6, score: 5 }]); // 5
  await createTag(t, "later", { snapshotId: 4 });
  const store = new ManifestStore(t);
  const dropped = [...(await changelogFilesOf(store, await t.snapshots.snapshot(4))), ...(await changelogFilesOf(store, await t.snapshots.snapshot(5)))].map((e) => dataFilePath(t, e));
  const kept = [...(await changelogFilesOf(store, await t.snapshots.snapshot(1))), ...(await changelogFilesOf(store, await t.snapshots.snapshot(2)))].map((e) => dataFilePath(t, e));
  const r = await rollback(t, { toSnapshot: 2 });
  assert.deepEqual([r.snapshotsDeleted, r.tagsDeleted, r.changelogFilesDeleted], [[3, 4, 5], ["later"], 2]);
  for (const p of dropped) assert.equal(await t.io.isFile(p), false);
  for (const p of kept) assert.equal(await t.io.isFile(p), true);
  assert.deepEqual(await liveOf(t), live2, "snapshot 2's files at level 0, still on disk though snapshot 3 had moved them");
  await consistent(t);
  await allRead(t, atTwo);
});

test("PK maintenance - restore brings files a compaction moved since back at the target's level under new names: the target's levels, read alike by natslake, pypaimon and Java", { timeout: 300_000 }, async () => {
  const t = await pkTable("m.restore");
  const model = new Map<number, R>();
  await commit(t, model, upserts(0, 59, 1)); // 1: [0, 59]
  await commit(t, model, upserts(100, 159, 1)); // 2: [100, 159]
  const atTwo = new Map(model);
  const live2 = await liveOf(t);
  await compactTable(t, { full: true }); // 3: both upgraded to the max level
  await commit(t, model, [{ kind: "upsert", id: 10, score: 9 }, { kind: "delete", id: 11 }]); // 4: overlaps [0, 59]
  await compactTable(t, { full: true }); // 5: [0, 59] rewritten with it; [100, 159] stays at the max level
  const live5 = await liveOf(t);
  const moved = live2.find((f) => live5.some((x) => x.name === f.name))!;
  assert.equal(live5.find((x) => x.name === moved.name)!.level, 5, "one of snapshot 2's files is still live, at the max level");
  const r = await restoreTable(t, { toSnapshot: 2 });
  assert.deepEqual([r.snapshot, r.filesRemoved, r.filesRestored], [6, 2, 2]);
  const live6 = await liveOf(t);
  assert.deepEqual(live6.map((f) => f.level), [0, 0], "the target's levels");
  assert.ok(!live6.some((f) => live2.some((x) => x.name === f.name)), "both under new names: no (file, level) is added again after its deletion");
  await allRead(t, atTwo);
  // The restored bucket is a valid tree and compacts again; expiring the history leaves only what is referenced.
  await liveBucketLevels(t); // throws when a level >= 1 of a bucket overlaps
  await expireSnapshots(t, { retainMin: 1, timeRetainedMs: 0 });
  await consistent(t);
  await compactTable(t, { full: true });
  await allRead(t, atTwo);
});

test("PK maintenance - partition expiration drops a primary-key partition; its files go with the snapshots that held them", { timeout: 300_000 }, async () => {
  const t = await pkTable("m.partitions", {
    columns: "dt STRING NOT NULL, id INT NOT NULL, name STRING, score INT",
    partitionKeys: ["dt"],
    options: { "partition.expiration-time": "7 d", "partition.timestamp-formatter": "yyyy-MM-dd" },
  });
  const today = new Date().toISOString().slice(0, 10);
  const rows: R[] = [];
  const w = async (changes: R[]): Promise<void> => {
    const bw = await BatchWriter.open(t);
    await bw.write(changes);
    await bw.commit();
  };
  await w([...Array.from({ length: 10 }, (_, i) => ({ dt: "2020-01-01", id: i, name: "old", score: i })), ...Array.from({ length: 10 }, (_, i) => ({ dt: today, id: i, name: "new", score: i }))]);
  await w([{ _row_kind: "-D", dt: "2020-01-01", id: 3 }, { _row_kind: "-D", dt: today, id: 4 }, { dt: today, id: 5, name: "newer", score: 50 }]);
  await compactTable(t, { full: true });
  for (let i = 0; i < 10; i++) if (i !== 4) rows.push({ dt: today, id: i, name: i === 5 ? "newer" : "new", score: i === 5 ? 50 : i });
  const r = await expirePartitions(t);
  assert.deepEqual(r.partitions.map((p) => p.path), ["dt=2020-01-01"]);
  const fresh = await reopen(wh.path, t.name);
  assert.deepEqual(sortRows(await readJson(fresh)), sortRows(rows));
  assert.deepEqual(sortRows(await paimonRead(wh.path, t.name)), sortRows(rows));
  const [java] = await javaPaimonRead(wh.path, [fresh], [{ table: t.name }]);
  assert.deepEqual(sortRows(javaRows(java)), sortRows(rows));
  const e = await expireSnapshots(fresh, { retainMin: 1, timeRetainedMs: 0 });
  assert.ok(e.dataFilesDeleted > 0 && e.changelogFilesDeleted === 4, `the old partition's data files and the changelog files of two commits to two partitions go (${JSON.stringify(e)})`);
  assert.ok(!filesOnDisk(fresh).some((p) => p.startsWith("dt=2020-01-01/")), "nothing left of the old partition");
  await consistent(fresh);
});

test("PK maintenance - changelog kept longer than snapshots (Paimon's decoupled changelog) is refused at create and by expiration", async () => {
  const refused = (pattern: RegExp) => (e: unknown): boolean => isLakeError(e, ErrorKind.Unsupported) && pattern.test((e as Error).message);
  await assert.rejects(pkTable("m.decoupled", { options: { "changelog.num-retained.max": "50", "snapshot.num-retained.max": "20" } }), refused(/changelog\.num-retained\.max = 50 > snapshot\.num-retained\.max = 20/));
  await assert.rejects(pkTable("m.decoupled", { options: { "changelog.time-retained": "2 h" } }), refused(/changelog\.time-retained = 2 h > snapshot\.time-retained/));
  // Retaining no more than the snapshots is the coupled default: accepted, and expiration goes on as usual.
  const t = await pkTable("m.coupled", { options: { "changelog.num-retained.min": "5", "changelog.time-retained": "30 min" } });
  const model = new Map<number, R>();
  for (let i = 0; i < 8; i++) await commit(t, model, [{ kind: "upsert", id: i, score: i }]);
  assert.equal((await expireSnapshots(t, { retainMin: 5, timeRetainedMs: 30 * 60_000, now: Date.now() + 3_600_000 })).snapshotsDeleted, 3);
  // Retaining fewer snapshots than the changelog asks for would decouple them: refused, nothing deleted.
  await assert.rejects(expireSnapshots(t, { retainMin: 1, timeRetainedMs: 30 * 60_000 }), refused(/changelog\.num-retained\.min = 5 > snapshot\.num-retained\.min = 1/));
  assert.deepEqual(await t.snapshots.listIds(), [4, 5, 6, 7, 8]);
});
