/**
 * Maintenance on an S3 warehouse (SeaweedFS, real), run through the CLI as a user runs it (`--warehouse
 * s3://bucket/prefix?endpoint=…`, credentials in the environment), pypaimon reading the results from the same store:
 * compaction (fewer files, same rows in the same per-bucket order), snapshot expiration (the replaced files and old
 * manifests deleted, EARLIEST written), tags (two creators of one name: one wins; a tag read after its snapshot
 * expired, pypaimon's tags listed, deleting a tag frees what only it held), orphan cleanup (ages from the objects' LastModified; young orphans kept, old ones
 * deleted, every retained snapshot still whole), Paimon's rollback (later snapshots, tags and objects deleted; the
 * next commit re-creates the next id with a conditional put) including to a tag whose snapshot had expired, and the
 * restore that keeps the history (the target's files brought back as server-side copies under new names, which
 * survive the expiration of the originals).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { readJson, reopen, sortRows, writeRows } from "../../helpers/tables.ts";
import { historyTable, idsByBucket, liveDataFiles, warehouseCli } from "../../helpers/warehouse-cli.ts";
import { paimonCreateTag, paimonRead, paimonReadTag } from "../../helpers/python.ts";
import { startS3Store, type S3TestStore } from "../../helpers/s3.ts";
import { ManifestStore } from "../../../src/table/manifest-store.ts";
import { createTag, listTags } from "../../../src/table/tags.ts";
import type { Table } from "../../../src/table/table.ts";

let store: S3TestStore;
before(async () => {
  store = await startS3Store();
});
after(async () => {
  await store?.stop();
});

/** A warehouse on a fresh prefix: the URI natslake takes, the plain one pypaimon takes (endpoint from the environment). */
function warehouse(): { uri: string; plain: string } & ReturnType<typeof warehouseCli> {
  const prefix = `mt-${randomBytes(4).toString("hex")}`;
  const uri = store.uri(prefix);
  return { uri, plain: `s3://${store.bucket}/${prefix}`, ...warehouseCli(uri) };
}

/** Every object under the table, as sorted paths relative to it (the FileIO's listings: one LIST per directory). */
async function objectsOf(t: Table): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const e of await t.io.listStatus(dir)) {
      if (e.kind === "directory") await walk(join(dir, e.name), join(rel, e.name));
      else out.push(join(rel, e.name));
    }
  };
  await walk(t.root, "");
  return out.sort();
}

const dataObjects = async (t: Table): Promise<string[]> => (await objectsOf(t)).filter((p) => p.startsWith("dt="));
const jsonl = (text: string): Array<Record<string, unknown>> => text.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);

test("compaction and expiration on S3: fewer files, the same rows in each bucket's order, the replaced objects deleted by expiration; pypaimon agrees", async () => {
  const wh = warehouse();
  const name = "mt.compact";
  const t = await historyTable(wh.uri, name, 12);
  const order = await idsByBucket(t);
  const rows = sortRows(await readJson(t));
  const filesBefore = await liveDataFiles(t, {});
  assert.ok(filesBefore.length >= 20, `many small files: ${filesBefore.length}`);

  assert.match(await wh.ok(["compact", name, "--dry-run"]), /would compact/);
  assert.equal(await (await reopen(wh.uri, name)).snapshots.latestId(), 12, "the dry run commits nothing");
  const summary = JSON.parse(await wh.ok(["compact", name, "--json"])) as { inputFiles: number; outputFiles: number; snapshotId: number };
  assert.equal(summary.snapshotId, 13);
  assert.ok(summary.inputFiles > summary.outputFiles, JSON.stringify(summary));
  const t2 = await reopen(wh.uri, name);
  const filesAfter = await liveDataFiles(t2, {});
  assert.ok(filesAfter.length <= 4 && filesAfter.length < filesBefore.length, `${filesBefore.length} → ${filesAfter.length} files`);
  assert.equal((await t2.snapshots.snapshot(13)).commitKind, "COMPACT");
  assert.deepEqual(await idsByBucket(t2), order, "each bucket reads in the same order");
  assert.deepEqual(sortRows(await paimonRead(wh.plain, name)), rows);

  // Expire all but the compaction's snapshot: the small files it replaced go, and the manifests only old snapshots used.
  assert.match(await wh.ok(["expire-snapshots", name, "--retain-min", "1", "--older-than", "0 s"]), /expired snapshots 1\.\.12 \(12\)/);
  const t3 = await reopen(wh.uri, name);
  assert.deepEqual(await t3.snapshots.listIds(), [13]);
  assert.equal(await t3.io.readText(join(t3.root, "snapshot", "EARLIEST")), "13");
  assert.deepEqual(await dataObjects(t3), filesAfter, "only the live data files are left in the bucket");
  const s13 = await t3.snapshots.snapshot(13);
  const store13 = new ManifestStore(t3);
  const manifests = new Set<string>([s13.baseManifestList, s13.deltaManifestList]);
  for (const l of [s13.baseManifestList, s13.deltaManifestList]) for (const m of await store13.readManifestList(l)) manifests.add(m.fileName);
  assert.deepEqual((await objectsOf(t3)).filter((p) => p.startsWith("manifest/")).map((p) => p.slice("manifest/".length)), [...manifests].sort(), "and only its manifests");
  assert.deepEqual(await idsByBucket(t3), order);
  assert.deepEqual(sortRows(await paimonRead(wh.plain, name)), rows);
  // Writing goes on: the next commit is snapshot 14.
  assert.equal(await writeRows(t3, [{ id: 1000, dt: "a", msg: "after" }]), 14);
  assert.equal((await paimonRead(wh.plain, name)).length, rows.length + 1);
});

test("tags on S3: read after their snapshot expired (natslake, CLI, pypaimon); pypaimon's tags listed; deleting a tag frees what only it held", async () => {
  const wh = warehouse();
  const name = "mt.tags";
  const t = await historyTable(wh.uri, name, 6);
  assert.match(await wh.ok(["tag", "create", name, "keep", "--snapshot", "3"]), /created tag 'keep' of mt\.tags on snapshot 3/);
  assert.equal(await paimonCreateTag(wh.plain, name, "py-tag", { snapshot: 5 }), 5);
  assert.deepEqual(jsonl(await wh.ok(["tag", "list", name, "--json"])).map((x) => [x["name"], x["snapshot"]]), [["keep", 3], ["py-tag", 5]]);
  const tagged = sortRows(await readJson(t, { snapshotId: 3 }));
  const taggedFiles = await liveDataFiles(t, { snapshotId: 3 });
  assert.deepEqual(sortRows(await readJson(t, { tag: "py-tag" })), sortRows(await readJson(t, { snapshotId: 5 })));
  // A tag is created with a conditional put: of two creators of one name exactly one wins.
  const race = await Promise.allSettled([createTag(t, "race", { snapshotId: 1 }), createTag(t, "race", { snapshotId: 2 })]);
  assert.equal(race.filter((x) => x.status === "fulfilled").length, 1, JSON.stringify(race.map((x) => x.status)));
  await wh.ok(["tag", "delete", name, "race"]);

  // Every row replaced, then every snapshot but the newest expired.
  await writeRows(t, [{ id: 1000, dt: "z", msg: "new" }], { partition: null });
  assert.match(await wh.ok(["expire-snapshots", name, "--retain-min", "1", "--older-than", "0 s"]), /expired snapshots 1\.\.6 \(6\)/);
  const t2 = await reopen(wh.uri, name);
  assert.deepEqual(await t2.snapshots.listIds(), [7]);
  assert.deepEqual(sortRows(await readJson(t2, { tag: "keep" })), tagged, "natslake reads the tag");
  assert.deepEqual(sortRows(jsonl(await wh.ok(["read", name, "--tag", "keep", "--format", "jsonl"]))), tagged, "the CLI reads the tag");
  assert.deepEqual(sortRows(await paimonReadTag(wh.plain, name, "keep")), tagged, "pypaimon reads the tag");
  const objects = new Set(await objectsOf(t2));
  for (const f of taggedFiles) assert.ok(objects.has(f), `${f} kept for the tag`);

  await wh.ok(["tag", "delete", name, "py-tag"]);
  assert.match(await wh.ok(["tag", "delete", name, "keep"]), new RegExp(`deleted tag 'keep' of mt\\.tags \\(snapshot 3\\); deleted ${taggedFiles.length} data files and \\d+ manifest files only it held`));
  const t3 = await reopen(wh.uri, name);
  assert.deepEqual(await dataObjects(t3), await liveDataFiles(t3, {}), "only the latest snapshot's data files are left");
  assert.deepEqual(await listTags(t3), []);
  assert.deepEqual(sortRows(await paimonRead(wh.plain, name)), [{ id: 1000, dt: "z", msg: "new" }]);
});

test("orphan cleanup on S3: ages from LastModified; young orphans kept, old ones deleted (dry run first), every snapshot still whole", async () => {
  const wh = warehouse();
  const name = "mt.orphans";
  const t = await historyTable(wh.uri, name, 5);
  const snapshotRows = new Map<number, Array<Record<string, unknown>>>();
  for (const id of await t.snapshots.listIds()) snapshotRows.set(id, sortRows(await readJson(t, { snapshotId: id })));
  const live = await objectsOf(t);
  // Orphans of every kind a crash leaves on S3: a data file, a manifest, a committable body.
  const planted = ["dt=a/bucket-0/data-0b5e7a0e-orphan-0.parquet", "manifest/manifest-0b5e7a0e-orphan-0", "natslake-committables/0b5e7a0e-orphan"];
  for (const p of planted) await t.io.writeFile(join(t.root, p), randomBytes(300));

  const young = JSON.parse(await wh.ok(["remove-orphans", name, "--older-than", "1 h", "--json"])) as { totalFiles: number; youngKept: number };
  assert.equal(young.totalFiles, 0, "nothing is an hour old");
  assert.ok(young.youngKept >= planted.length, `young orphans kept: ${JSON.stringify(young)}`);
  // Past the bound (0 s: everything written before now is old enough, the committed files too: only references keep them).
  await new Promise((r) => setTimeout(r, 1100)); // LastModified has one-second resolution
  const dry = JSON.parse(await wh.ok(["remove-orphans", name, "--older-than", "0 s", "--dry-run", "--json"])) as { files: Array<{ path: string; kind: string }> };
  assert.deepEqual(dry.files.map((f) => [f.path, f.kind]).sort(), [[planted[0], "data"], [planted[1], "manifest"], [planted[2], "committable"]].sort());
  assert.deepEqual(await objectsOf(t), [...live, ...planted].sort(), "the dry run deletes nothing");
  const done = JSON.parse(await wh.ok(["remove-orphans", name, "--older-than", "0 s", "--json"])) as { totalFiles: number };
  assert.equal(done.totalFiles, planted.length);
  const t2 = await reopen(wh.uri, name);
  assert.deepEqual(await objectsOf(t2), live, "exactly the orphans are gone");
  for (const [id, rows] of snapshotRows) assert.deepEqual(sortRows(await readJson(t2, { snapshotId: id })), rows, `snapshot ${id} reads whole`);
  assert.deepEqual(sortRows(await paimonRead(wh.plain, name)), snapshotRows.get(5));
});

test("rollback on S3, Paimon's: to a snapshot (later snapshots, tags and objects deleted; the next id re-created) and to a tag whose snapshot expired", async () => {
  const wh = warehouse();
  const name = "mt.rollback";
  const t = await historyTable(wh.uri, name, 8, 5);
  await wh.ok(["tag", "create", name, "early", "--snapshot", "2"]);
  await wh.ok(["tag", "create", name, "late", "--snapshot", "6"]);
  const at4 = sortRows(await readJson(t, { snapshotId: 4 }));
  const at2 = sortRows(await readJson(t, { snapshotId: 2 }));
  const r = JSON.parse(await wh.ok(["rollback", name, "--to-snapshot", "4", "--json"])) as { target: number; snapshotsDeleted: number[]; tagsDeleted: string[]; dataFilesDeleted: number };
  assert.deepEqual([r.target, r.snapshotsDeleted, r.tagsDeleted], [4, [5, 6, 7, 8], ["late"]]);
  assert.ok(r.dataFilesDeleted > 0);
  const t2 = await reopen(wh.uri, name);
  assert.deepEqual(await t2.snapshots.listIds(), [1, 2, 3, 4]);
  assert.equal(await t2.io.readText(join(t2.root, "snapshot", "LATEST")), "4");
  assert.equal(await t2.io.isFile(join(t2.root, "natslake-rollback")), false, "the journal is gone");
  const kept = new Set<string>();
  for (let id = 1; id <= 4; id++) for (const f of await liveDataFiles(t2, { snapshotId: id })) kept.add(f);
  assert.deepEqual(await dataObjects(t2), [...kept].sort(), "the objects the later snapshots added are gone");
  assert.deepEqual(sortRows(await paimonRead(wh.plain, name)), at4, "pypaimon reads snapshot 4's rows");
  // Snapshot 5 is created again (a conditional put of a key that existed and was deleted).
  assert.equal(await writeRows(t2, [{ id: 999, dt: "a", msg: "after" }]), 5);
  assert.equal((await paimonRead(wh.plain, name)).length, at4.length + 1);

  // To a tag whose snapshot was expired: the snapshot is written back from the tag.
  await wh.ok(["expire-snapshots", name, "--retain-min", "2", "--older-than", "0 s"]);
  assert.deepEqual(await (await reopen(wh.uri, name)).snapshots.listIds(), [4, 5]);
  assert.match(await wh.ok(["rollback", name, "--to-tag", "early"]), /rolled back from snapshot 5 to 2 \(re-created snapshot 2 from its tag\)/);
  const t3 = await reopen(wh.uri, name);
  assert.deepEqual(await t3.snapshots.listIds(), [2]);
  assert.equal(await t3.io.readText(join(t3.root, "snapshot", "EARLIEST")), "2");
  assert.deepEqual(sortRows(await readJson(t3)), at2);
  assert.deepEqual(sortRows(await paimonRead(wh.plain, name)), at2);
  assert.deepEqual(await dataObjects(t3), await liveDataFiles(t3, {}));
});

test("rollback --keep-history on S3: one new snapshot with the target's rows in each bucket's order, its files back as server-side copies that outlive the originals' expiration", async () => {
  const wh = warehouse();
  const name = "mt.restore";
  // The overwrite at 5 and the compaction replace files snapshot 4 holds: restoring 4 must bring them back.
  await historyTable(wh.uri, name, 8, 5);
  await wh.ok(["compact", name]);
  const t = await reopen(wh.uri, name);
  const latest = (await t.snapshots.latestId())!;
  const at4 = sortRows(await readJson(t, { snapshotId: 4 }));
  const order4 = await idsByBucket(t, { snapshotId: 4 });
  const original = await liveDataFiles(t, { snapshotId: 4 });
  const r = JSON.parse(await wh.ok(["rollback", name, "--to-snapshot", "4", "--keep-history", "--json"])) as { snapshot: number; filesRestored: number; filesRemoved: number };
  assert.equal(r.snapshot, latest + 1);
  assert.ok(r.filesRestored > 0, JSON.stringify(r));
  const t2 = await reopen(wh.uri, name);
  assert.equal((await t2.snapshots.snapshot(r.snapshot)).commitKind, "OVERWRITE");
  assert.deepEqual(await t2.snapshots.listIds(), Array.from({ length: latest + 1 }, (_, i) => i + 1), "no snapshot deleted, none re-used");
  assert.deepEqual(await idsByBucket(t2), order4);
  assert.deepEqual(sortRows(await paimonRead(wh.plain, name)), at4);
  const restored = await liveDataFiles(t2, {});
  const copies = restored.filter((f) => !original.includes(f));
  assert.equal(copies.length, r.filesRestored, "brought back under new names");
  for (const c of copies) assert.ok((await t2.io.size(join(t2.root, c))) > 0);

  // Expire everything but the restore: the originals' names go, the copies stay and read.
  await wh.ok(["expire-snapshots", name, "--retain-min", "1", "--older-than", "0 s"]);
  const t3 = await reopen(wh.uri, name);
  assert.deepEqual(await t3.snapshots.listIds(), [r.snapshot]);
  assert.deepEqual(await dataObjects(t3), restored);
  assert.deepEqual(await idsByBucket(t3), order4);
  assert.deepEqual(sortRows(await paimonRead(wh.plain, name)), at4);
  await writeRows(t3, [{ id: 999, dt: "a", msg: "after" }]);
  assert.equal((await paimonRead(wh.plain, name)).length, at4.length + 1);
});
