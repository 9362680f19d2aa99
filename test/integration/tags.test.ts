/**
 * Tags and rollback (issue 10), on a real filesystem with pypaimon as the oracle: tags in Paimon's format made by the
 * CLI and read by pypaimon and the other way round, reads at a tag, a tag outliving the expiration of its snapshot,
 * tag deletion, rollback to a snapshot and to a tag (pypaimon reads the same rows afterwards), the dry run, a rollback
 * SIGKILLed mid-way and run again, and the refusal while a cluster committed a moment ago.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readJson, reopen, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import { dataFilesOnDisk, filesOf, historyTable, liveDataFiles, warehouseCli } from "../helpers/warehouse-cli.ts";
import { paimonCreateTag, paimonListTags, paimonRead, paimonReadTag } from "../helpers/python.ts";
import { FileStoreCommit } from "../../src/commit/file-store-commit.ts";
import { natslakeProperties } from "../../src/format/snapshot.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { listTags } from "../../src/table/tags.ts";
import { readRows } from "../../src/scan/read.ts";
import type { Table } from "../../src/table/table.ts";

const wh = tempDir();
after(() => wh.cleanup());
const { cli, ok, fails } = warehouseCli(wh.path);
const history = (name: string, commits: number, overwriteAt = -1): Promise<Table> => historyTable(wh.path, name, commits, overwriteAt);

test("tags - create, list, delete through the CLI; refused names, duplicates and missing snapshots (exit 2, one line)", async () => {
  const name = "tg.cli";
  const t = await history(name, 4);
  assert.match(await ok(["tag", "create", name, "t-latest"]), /created tag 't-latest' of tg\.cli on snapshot 4/);
  assert.match(await ok(["tag", "create", name, "t2", "--snapshot", "2", "--time-retained", "1 d"]), /on snapshot 2/);

  // The files are Paimon's: the snapshot's JSON; with a retention also tagCreateTime (a LocalDateTime array) and
  // tagTimeRetained (decimal seconds).
  const plain = JSON.parse(readFileSync(join(t.root, "tag", "tag-t-latest"), "utf8")) as Record<string, unknown>;
  const snap4 = JSON.parse(readFileSync(join(t.root, "snapshot", "snapshot-4"), "utf8")) as Record<string, unknown>;
  assert.deepEqual(plain, snap4, "a tag without retention is the snapshot's JSON, as Java writes it");
  const raw2 = readFileSync(join(t.root, "tag", "tag-t2"), "utf8");
  const retained = JSON.parse(raw2) as Record<string, unknown>;
  assert.equal(retained["id"], 2);
  assert.match(raw2, /"tagTimeRetained"\s*:\s*86400\.000\b/);
  const created = retained["tagCreateTime"] as number[];
  assert.ok(Array.isArray(created) && created.length >= 5 && created[0]! >= 2024, `tagCreateTime ${JSON.stringify(created)}`);

  // natslake's list, and pypaimon's view of the same files.
  const listed = (await ok(["tag", "list", name, "--json"])).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(listed.map((x) => [x["name"], x["snapshot"], x["timeRetainedMs"]]), [["t-latest", 4, null], ["t2", 2, 86_400_000]]);
  assert.equal(listed[0]!["createTime"], null);
  assert.ok(Math.abs(Date.parse(String(listed[1]!["createTime"])) - Date.now()) < 120_000, "create time is now");
  const py = await paimonListTags(wh.path, name);
  assert.deepEqual(py.map((x) => [x.name, x.snapshot, x.timeRetainedSeconds]), [["t-latest", 4, null], ["t2", 2, 86400]]);
  assert.match(await ok(["tag", "list", name]), /t-latest \| 4 .*\n[^]*t2 +\| 2 .*86400 s[^]*\(2 tags\)/);

  await fails(["tag", "create", name, "t2"], 2, /^error: tag 't2' of tg\.cli already exists \(on snapshot 2\)/);
  await fails(["tag", "create", name, "t9", "--snapshot", "9"], 2, /^error: snapshot 9 of tg\.cli does not exist \(snapshots 1\.\.4 exist\)/);
  await fails(["tag", "create", name, "a/b"], 2, /^error: invalid tag name 'a\/b': path separators are not allowed/);
  await fails(["tag", "create", name, "42"], 2, /^error: invalid tag name '42': a name of digits only would read as a snapshot id/);
  await fails(["tag", "create", name, ".hidden"], 2, /^error: invalid tag name '\.hidden': it must not start with '\.'/);
  await fails(["tag", "create", name, " "], 2, /^error: invalid tag name ' ': it is empty/);
  await fails(["tag", "create", name, "t3", "--time-retained", "soon"], 2, /not a positive duration: 'soon'/);
  await fails(["tag", "delete", name, "nope"], 2, /^error: tag 'nope' of tg\.cli does not exist \(tags: t-latest, t2\)/);
  assert.deepEqual(readdirSync(join(t.root, "tag")).sort(), ["tag-t-latest", "tag-t2"], "refusals leave no file, not even a temp file");

  assert.match(await ok(["tag", "delete", name, "t2"]), /deleted tag 't2' of tg\.cli \(snapshot 2\)$/m);
  assert.deepEqual((await listTags(await reopen(wh.path, name))).map((x) => x.name), ["t-latest"]);
  assert.ok(existsSync(join(t.root, "snapshot", "snapshot-2")), "deleting a tag of a live snapshot leaves the snapshot");
});

test("tags - two creators of one name: exactly one wins", async () => {
  const name = "tg.race";
  await history(name, 2);
  const runs = await Promise.all([cli(["tag", "create", name, "same", "--snapshot", "1"]), cli(["tag", "create", name, "same", "--snapshot", "2"])]);
  assert.deepEqual(runs.map((r) => r.code).sort(), [0, 2], runs.map((r) => r.stderr).join(""));
  const winner = runs.find((r) => r.code === 0)!;
  const tags = await listTags(await reopen(wh.path, name));
  assert.equal(tags.length, 1);
  assert.match(winner.stdout, new RegExp(`on snapshot ${tags[0]!.snapshot.id}`));
});

test("tags - read --tag equals the snapshot's rows (library, CLI, pypaimon); --tag excludes --snapshot/--at", async () => {
  const name = "tg.read";
  const t = await history(name, 5);
  await ok(["tag", "create", name, "mid", "--snapshot", "3"]);
  const at3 = sortRows(await readJson(t, { snapshotId: 3 }));
  assert.equal(at3.length, 15);
  assert.deepEqual(sortRows(await readJson(t, { tag: "mid" })), at3);
  const lib: unknown[] = [];
  for await (const r of readRows(t, { tag: "mid", projection: ["id"] })) lib.push(r["id"]);
  assert.equal(lib.length, 15);
  const viaCli = (await ok(["read", name, "--tag", "mid", "--format", "jsonl"])).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(sortRows(viaCli), at3);
  assert.deepEqual(sortRows(await paimonReadTag(wh.path, name, "mid")), at3);
  assert.equal((await readJson(t)).length, 25, "the latest is unchanged");
  await fails(["read", name, "--tag", "mid", "--snapshot", "3"], 2, /use one of --snapshot, --at and --tag/);
  await fails(["read", name, "--tag", "mid", "--at", "2026-01-01T00:00:00Z"], 2, /use one of --snapshot, --at and --tag/);
  await fails(["read", name, "--tag", "gone"], 2, /^error: tag 'gone' of tg\.read does not exist \(tags: mid\)/);
  await assert.rejects(readJson(t, { tag: "mid", snapshotId: 3 }), /choose one of a snapshot id, a point in time or a tag/);
});

test("tags - a CLI tag reads the same after its snapshot and all later ones were expired and its files replaced; deleting it frees them", async () => {
  const name = "tg.expire";
  const t = await history(name, 6);
  await ok(["tag", "create", name, "keep", "--snapshot", "3"]);
  const tagged = sortRows(await readJson(t, { snapshotId: 3 }));
  const taggedFiles = await liveDataFiles(t, { snapshotId: 3 });
  // Every row replaced, then every snapshot but the newest expired (3 and the ones after it included).
  await writeRows(t, [{ id: 1000, dt: "z", msg: "new" }], { partition: null });
  assert.match(await ok(["expire-snapshots", name, "--retain-min", "1", "--older-than", "0 s"]), /expired snapshots 1\.\.6 \(6\)/);
  const t2 = await reopen(wh.path, name);
  assert.deepEqual(await t2.snapshots.listIds(), [7]);
  assert.deepEqual(sortRows(await readJson(t2)), [{ id: 1000, dt: "z", msg: "new" }]);
  assert.deepEqual(sortRows(await readJson(t2, { tag: "keep" })), tagged, "natslake reads the tag as before");
  assert.deepEqual(sortRows(await paimonReadTag(wh.path, name, "keep")), tagged, "pypaimon reads the tag as before");
  assert.deepEqual(sortRows((await ok(["read", name, "--tag", "keep", "--format", "jsonl"])).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>)), tagged);
  for (const f of taggedFiles) assert.ok(existsSync(join(t2.root, f)), `${f} kept for the tag`);

  // Deleting the tag of an expired snapshot deletes what only it held, as Paimon's TagManager.deleteTag does.
  const out = await ok(["tag", "delete", name, "keep"]);
  assert.match(out, new RegExp(`deleted tag 'keep' of tg\\.expire \\(snapshot 3\\); deleted ${taggedFiles.length} data files and \\d+ manifest files only it held`));
  for (const f of taggedFiles) assert.ok(!existsSync(join(t2.root, f)), `${f} deleted with the tag`);
  assert.deepEqual(dataFilesOnDisk(t2), await liveDataFiles(t2, {}), "only the latest snapshot's data files are left");
  const store = new ManifestStore(t2);
  const s7 = await t2.snapshots.snapshot(7);
  const manifests = new Set<string>([s7.baseManifestList, s7.deltaManifestList]);
  for (const l of [s7.baseManifestList, s7.deltaManifestList]) for (const m of await store.readManifestList(l)) manifests.add(m.fileName);
  assert.deepEqual(readdirSync(join(t2.root, "manifest")).sort(), [...manifests].sort(), "and only its manifests");
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), [{ id: 1000, dt: "z", msg: "new" }]);
});

test("tags - a tag made by pypaimon is listed and read by natslake", async () => {
  const name = "tg.py";
  const t = await history(name, 4);
  assert.equal(await paimonCreateTag(wh.path, name, "py-tag", { snapshot: 2, timeRetained: "12h" }), 2);
  assert.equal(await paimonCreateTag(wh.path, name, "py-plain"), 4);
  const tags = await listTags(t);
  assert.deepEqual(tags.map((x) => [x.name, x.snapshot.id, x.timeRetainedMs]), [["py-plain", 4, null], ["py-tag", 2, 12 * 3600 * 1000]]);
  assert.ok(tags[1]!.createTimeMillis !== null && Math.abs(tags[1]!.createTimeMillis - Date.now()) < 120_000, "pypaimon's LocalDateTime create time read back");
  const at2 = sortRows(await readJson(t, { snapshotId: 2 }));
  assert.equal(at2.length, 10);
  assert.deepEqual(sortRows(await readJson(t, { tag: "py-tag" })), at2);
  const listed = (await ok(["tag", "list", name, "--json"])).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(listed.map((x) => [x["name"], x["snapshot"], x["timeRetainedMs"]]), [["py-plain", 4, null], ["py-tag", 2, 43_200_000]]);
  assert.deepEqual(sortRows((await ok(["read", name, "--tag", "py-tag", "--format", "jsonl"])).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>)), at2);
});

test("rollback - to a snapshot: its rows, later snapshots, their tags and files gone, pypaimon reads the same; the dry run changes nothing", async () => {
  const name = "tg.rb_snap";
  const t = await history(name, 8, 5);
  await ok(["tag", "create", name, "early", "--snapshot", "2"]);
  await ok(["tag", "create", name, "late", "--snapshot", "6"]);
  const at4 = sortRows(await readJson(t, { snapshotId: 4 }));
  const before = filesOf(t);
  const beforeRows = sortRows(await readJson(t));

  const dry = await ok(["rollback", name, "--to-snapshot", "4", "--dry-run"]);
  assert.match(dry, /would roll back from snapshot 8 to 4; would delete snapshots 5\.\.8 \(4\), 1 tags \(late\), \d+ data files and \d+ manifest files/);
  assert.deepEqual(filesOf(t), before, "the dry run changes nothing");
  assert.deepEqual(sortRows(await readJson(await reopen(wh.path, name))), beforeRows);

  const done = await ok(["rollback", name, "--to-snapshot", "4", "--json"]);
  const r = JSON.parse(done) as { target: number; fromLatest: number; snapshotsDeleted: number[]; tagsDeleted: string[]; dataFilesDeleted: number };
  assert.deepEqual([r.target, r.fromLatest, r.snapshotsDeleted, r.tagsDeleted], [4, 8, [5, 6, 7, 8], ["late"]]);
  const t2 = await reopen(wh.path, name);
  assert.deepEqual(await t2.snapshots.listIds(), [1, 2, 3, 4]);
  assert.equal(readFileSync(join(t2.root, "snapshot", "LATEST"), "utf8"), "4");
  assert.deepEqual((await listTags(t2)).map((x) => x.name), ["early"]);
  assert.deepEqual(sortRows(await readJson(t2)), at4);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), at4, "pypaimon reads snapshot 4's rows");
  assert.deepEqual(sortRows(await paimonReadTag(wh.path, name, "early")), sortRows(await readJson(t2, { snapshotId: 2 })));
  // Nothing but what snapshots 1..4 use is left: the data files the later snapshots added are gone.
  const live = new Set<string>();
  for (let id = 1; id <= 4; id++) for (const f of await liveDataFiles(t2, { snapshotId: id })) live.add(f);
  assert.deepEqual(dataFilesOnDisk(t2), [...live].sort());
  assert.ok(r.dataFilesDeleted > 0);
  assert.ok(!existsSync(join(t2.root, "natslake-rollback")), "the journal is gone");
  // Writing goes on from snapshot 4.
  assert.equal(await writeRows(t2, [{ id: 999, dt: "a", msg: "after" }]), 5);
  assert.equal((await paimonRead(wh.path, name)).length, at4.length + 1);
  await fails(["rollback", name, "--to-snapshot", "9"], 2, /snapshot 9 of tg\.rb_snap does not exist and no tag holds it/);
  await fails(["rollback", name], 2, /exactly one of --to-snapshot N and --to-tag NAME/);
  await fails(["rollback", name, "--to-snapshot", "1", "--to-tag", "early"], 2, /exactly one of --to-snapshot N and --to-tag NAME/);
});

test("rollback - to a tag whose snapshot was expired: the snapshot is written back from the tag", async () => {
  const name = "tg.rb_tag";
  const t = await history(name, 6);
  await ok(["tag", "create", name, "base", "--snapshot", "2"]);
  const at2 = sortRows(await readJson(t, { snapshotId: 2 }));
  await ok(["expire-snapshots", name, "--retain-min", "2", "--older-than", "0 s"]);
  assert.deepEqual(await (await reopen(wh.path, name)).snapshots.listIds(), [5, 6]);
  assert.match(await ok(["rollback", name, "--to-tag", "base"]), /rolled back from snapshot 6 to 2 \(re-created snapshot 2 from its tag\); deleted snapshots 5\.\.6 \(2\), 0 tags, \d+ data files/);
  const t2 = await reopen(wh.path, name);
  assert.deepEqual(await t2.snapshots.listIds(), [2]);
  assert.equal(readFileSync(join(t2.root, "snapshot", "EARLIEST"), "utf8"), "2");
  assert.deepEqual(sortRows(await readJson(t2)), at2);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), at2);
  assert.deepEqual(dataFilesOnDisk(t2), await liveDataFiles(t2, {}), "the files snapshots 3..6 added are gone, also those of the expired 3 and 4");
  assert.deepEqual((await listTags(t2)).map((x) => x.name), ["base"]);
});

for (const [point, at] of [
  ["rollback.after-snapshot@2", "latest"],
  ["rollback.after-data-file@2", "target"],
] as const) {
  test(`rollback - SIGKILL at ${point}: the table reads at its ${at === "latest" ? "original latest" : "target"} snapshot, the rerun finishes`, async () => {
    const name = `tg.kill_${at}`;
    const t = await history(name, 7, 4);
    await ok(["tag", "create", name, "after", "--snapshot", "5"]);
    const at3 = sortRows(await readJson(t, { snapshotId: 3 }));
    const latestRows = sortRows(await readJson(t));
    const killed = await cli(["rollback", name, "--to-snapshot", "3"], { FAILPOINTS: `${point.split("@")[0]}:kill@2` });
    assert.equal(killed.signal, "SIGKILL", killed.stderr);
    assert.ok(existsSync(join(t.root, "natslake-rollback")), "the journal is left for the rerun");
    const expected = at === "latest" ? latestRows : at3;
    assert.deepEqual(sortRows(await readJson(await reopen(wh.path, name))), expected);
    assert.deepEqual(sortRows(await paimonRead(wh.path, name)), expected, "pypaimon reads the same");
    // Another target is refused until this one is finished.
    await fails(["rollback", name, "--to-snapshot", "2"], 3, /an interrupted rollback to snapshot 3 is unfinished/);
    const rerun = await ok(["rollback", name, "--to-snapshot", "3"]);
    assert.match(rerun, /finishing an interrupted rollback: rolled back from snapshot 7 to 3/);
    const t2 = await reopen(wh.path, name);
    assert.deepEqual(await t2.snapshots.listIds(), [1, 2, 3]);
    assert.deepEqual(await listTags(t2), []);
    assert.deepEqual(sortRows(await readJson(t2)), at3);
    assert.deepEqual(sortRows(await paimonRead(wh.path, name)), at3);
    const live = new Set<string>();
    for (let id = 1; id <= 3; id++) for (const f of await liveDataFiles(t2, { snapshotId: id })) live.add(f);
    assert.deepEqual(dataFilesOnDisk(t2), [...live].sort(), "nothing the rolled-back snapshots added is left behind");
    assert.ok(!existsSync(join(t2.root, "natslake-rollback")));
    assert.match(await ok(["rollback", name, "--to-snapshot", "3"]), /already at snapshot 3; nothing to roll back/);
  });
}

test("rollback - refused while a cluster committed the latest snapshot within the guard window, unless forced", async () => {
  const name = "tg.guard";
  const t = await history(name, 3);
  // Snapshot 4 as the cluster's committer commits it (its commit user, offsets in the properties).
  await new FileStoreCommit(t).commit({
    commitUser: `natslake-${name}`,
    messages: [],
    prepare: async () => ({ properties: natslakeProperties({ epoch: 1, buckets: new Map([[0, { offset: 5n, ownerEpoch: 1 }]]) }), messages: [], commitIdentifier: 1n, commitEmpty: true }),
  });
  await fails(["rollback", name, "--to-snapshot", "2"], 3, /latest snapshot 4 was committed by a natslake cluster \(natslake-tg\.guard\) \d+ s ago: roll back through the cluster \(--nats URL.*or with --keep-history, stop the cluster first, or pass --force/);
  await fails(["rollback", name, "--to-snapshot", "2", "--dry-run"], 3, /stop the cluster/);
  assert.deepEqual(await (await reopen(wh.path, name)).snapshots.listIds(), [1, 2, 3, 4], "nothing changed");
  assert.match(await ok(["rollback", name, "--to-snapshot", "4"]), /already at snapshot 4; nothing to roll back/, "nothing to do is not refused");
  // Forced; or the cluster's commit older than the guard window (here 0 s).
  assert.match(await ok(["rollback", name, "--to-snapshot", "3", "--force"]), /rolled back from snapshot 4 to 3/);
  await new FileStoreCommit(await reopen(wh.path, name)).commit({
    commitUser: `natslake-${name}`,
    messages: [],
    prepare: async () => ({ properties: natslakeProperties({ epoch: 1, buckets: new Map([[0, { offset: 6n, ownerEpoch: 1 }]]) }), messages: [], commitIdentifier: 2n, commitEmpty: true }),
  });
  await fails(["rollback", name, "--to-snapshot", "3"], 3, /stop the cluster/);
  assert.match(await ok(["rollback", name, "--to-snapshot", "3", "--guard", "0 s"]), /rolled back from snapshot 4 to 3/);
  await writeRows(await reopen(wh.path, name), [{ id: 77, dt: "a", msg: "x" }]);
  assert.match(await ok(["rollback", name, "--to-snapshot", "2"]), /rolled back from snapshot 4 to 2/, "CLI writes are not the cluster's");
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(await readJson(await reopen(wh.path, name), { snapshotId: 2 })));
});
