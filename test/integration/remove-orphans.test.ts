/**
 * Orphan-file cleanup on a real filesystem: a table with a few commits, then orphans planted as crashed and rejected
 * writes leave them (data files in bucket directories, a stray manifest, temp files of interrupted atomic writes, a
 * committable body), all aged past the bound — and every committed file aged too, so only references protect them —
 * plus young orphans. Checked: old orphans go, young ones and everything referenced stay (every snapshot whole,
 * natslake and pypaimon read the same rows), a tag holds its files after its snapshot was expired, a dry run deletes
 * nothing, in-flight committables protect their files, a SIGKILL mid-run then a rerun, the option and the CLI.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { createTable, readJson, reopen, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { dataFilePathOf, removeOrphans } from "../../src/maintenance/remove-orphans.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { snapshotFromJson, type Snapshot } from "../../src/format/snapshot.ts";
import { parseJson } from "../../src/format/wire/json.ts";
import { encodeMsg } from "../../actors/wire/codec.ts";
import type { Committable } from "../../actors/wire/messages.ts";
import type { Table } from "../../src/table/table.ts";
import { LocalFileIO } from "../../src/io/local.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";

const wh = tempDir();
after(() => wh.cleanup());
const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const DAY = 86_400_000;

/** A partitioned, bucketed table with `commits` appends of 5 rows and a partition overwrite at `overwriteAt`. */
async function history(name: string, commits: number, overwriteAt: number, options: Record<string, string> = {}): Promise<Table> {
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, dt STRING NOT NULL", { partitionKeys: ["dt"], options: { bucket: "2", "bucket-key": "id", ...options } });
  for (let c = 0; c < commits; c++) {
    const rows = Array.from({ length: 5 }, (_, k) => ({ id: c * 5 + k, dt: c % 2 === 0 || c === overwriteAt ? "a" : "b" }));
    await writeRows(t, rows, c === overwriteAt ? { partition: ["a"] } : undefined);
  }
  return reopen(wh.path, name);
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

/** Sets the mtime of every file under the table `ms` into the past (so age alone protects nothing committed). */
function ageAll(root: string, ms: number): void {
  const t = (Date.now() - ms) / 1000;
  for (const f of filesUnder(root)) utimesSync(join(root, f), t, t);
}

function age(path: string, ms: number): void {
  const t = (Date.now() - ms) / 1000;
  utimesSync(path, t, t);
}

/** Every manifest list, manifest and data file `s` references exists. */
async function assertWhole(t: Table, s: Snapshot, what: string): Promise<void> {
  const store = new ManifestStore(t);
  for (const list of [s.baseManifestList, s.deltaManifestList]) {
    assert.ok(existsSync(t.paths.manifestPath(list)), `${what}: manifest list ${list} exists`);
    for (const m of await store.readManifestList(list)) assert.ok(existsSync(t.paths.manifestPath(m.fileName)), `${what}: manifest ${m.fileName} exists`);
  }
  for (const e of await store.readLiveEntries(s)) {
    const p = dataFilePathOf(t, e.partition, e.bucket, e.file.fileName);
    assert.ok(existsSync(p), `${what}: data file ${relative(t.root, p)} exists`);
  }
}

async function assertAllWhole(t: Table): Promise<void> {
  for (const id of await t.snapshots.listIds()) await assertWhole(t, await t.snapshots.snapshot(id), `snapshot ${id}`);
}

/** A committed data file of the table (relative path), to copy under orphan names. */
async function someDataFile(t: Table): Promise<string> {
  const s = (await t.snapshots.latest())!;
  const e = (await new ManifestStore(t).readLiveEntries(s))[0]!;
  return relative(t.root, dataFilePathOf(t, e.partition, e.bucket, e.file.fileName));
}

interface Planted {
  old: Record<string, "data" | "manifest" | "committable" | "temp">;
  young: string[];
}

/** Plants orphans of every kind, old (2 days) and young; the committed files are aged first. */
async function plant(t: Table): Promise<Planted> {
  ageAll(t.root, 3 * DAY);
  const src = join(t.root, await someDataFile(t));
  const manifest = readdirSync(join(t.root, "manifest")).find((n) => n.startsWith("manifest-") && !n.startsWith("manifest-list-"))!;
  const old: Planted["old"] = {
    [`dt=a/bucket-0/data-${randomUUID()}-0.parquet`]: "data", // a rejected committable's file
    [`dt=b/bucket-1/data-${randomUUID()}-3.parquet`]: "data",
    [`dt=zzz/bucket-0/data-${randomUUID()}-0.parquet`]: "data", // a partition only a crashed write ever had
    [`manifest/manifest-${randomUUID()}-0`]: "manifest", // a commit that died after its manifests
    [`manifest/manifest-list-${randomUUID()}-1`]: "manifest",
    [`natslake-committables/${randomUUID()}`]: "committable", // a rejected committable's body
    [`dt=a/bucket-1/.data-${randomUUID()}-0.parquet.${randomUUID()}.tmp`]: "temp", // interrupted atomic writes
    [`snapshot/.snapshot-99.${randomUUID()}.tmp`]: "temp",
    [`manifest/.manifest-${randomUUID()}-0.${randomUUID()}.tmp`]: "temp",
  };
  const young = [`dt=a/bucket-0/data-${randomUUID()}-0.parquet`, `manifest/manifest-${randomUUID()}-0`, `natslake-committables/${randomUUID()}`, `snapshot/.snapshot-98.${randomUUID()}.tmp`];
  for (const p of [...Object.keys(old), ...young]) {
    const abs = join(t.root, p);
    mkdirSync(join(abs, ".."), { recursive: true });
    if (p.endsWith(".parquet")) copyFileSync(src, abs);
    else if (p.startsWith("manifest/manifest-")) copyFileSync(join(t.root, "manifest", manifest), abs);
    else writeFileSync(abs, randomUUID().repeat(3));
  }
  for (const p of Object.keys(old)) age(join(t.root, p), 2 * DAY);
  age(join(t.root, "dt=zzz", "bucket-0"), 2 * DAY);
  return { old, young };
}

test("remove-orphans - old orphans of every kind go, young ones and everything referenced stay; readers see the same rows", async () => {
  const name = "orph.basic";
  const t = await history(name, 8, 4);
  const before = sortRows(await readJson(t));
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), before);
  const { old, young } = await plant(t);
  const onDisk = filesUnder(t.root);

  // A dry run names exactly the old orphans and deletes nothing.
  const dry = await removeOrphans(t, { dryRun: true });
  assert.deepEqual(dry.files.map((f) => f.path), Object.keys(old).sort());
  assert.deepEqual(Object.fromEntries(dry.files.map((f) => [f.path, f.kind])), old);
  assert.deepEqual(filesUnder(t.root), onDisk, "a dry run deletes nothing");
  assert.deepEqual(dry.dirsRemoved, ["dt=zzz", "dt=zzz/bucket-0"]);
  assert.equal(dry.youngKept, young.length);

  const r = await removeOrphans(t);
  assert.deepEqual(r.files, dry.files);
  assert.deepEqual(r.byKind, { data: { files: 3, bytes: 3 * statSync(join(t.root, young[0]!)).size }, manifest: { files: 2, bytes: r.byKind.manifest.bytes }, committable: { files: 1, bytes: 108 }, temp: { files: 3, bytes: 3 * 108 } });
  assert.equal(r.totalBytes, r.files.reduce((n, f) => n + f.size, 0));
  assert.deepEqual(r.dirsRemoved, ["dt=zzz", "dt=zzz/bucket-0"]);
  assert.ok(!existsSync(join(t.root, "dt=zzz")), "the partition only orphans had is gone");
  for (const p of Object.keys(old)) assert.ok(!existsSync(join(t.root, p)), `old orphan ${p} deleted`);
  for (const p of young) assert.ok(existsSync(join(t.root, p)), `young orphan ${p} kept`);
  // Exactly the old orphans went: everything else (schema, snapshots, hints, committed files) is still there.
  assert.deepEqual(filesUnder(t.root), onDisk.filter((p) => !(p in old)));
  const t2 = await reopen(wh.path, name);
  await assertAllWhole(t2);
  assert.deepEqual(sortRows(await readJson(t2)), before);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), before);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name, { snapshot: 1 })), sortRows(await readJson(t2, { snapshotId: 1 })));
  // Nothing left to do; a bound of zero then takes the young ones too.
  assert.equal((await removeOrphans(t2)).totalFiles, 0);
  const all = await removeOrphans(t2, { olderThanMs: 0, now: Date.now() + 1000 });
  assert.deepEqual(all.files.map((f) => f.path), [...young].sort());
  await assertAllWhole(t2);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), before);
});

test("remove-orphans - a tag holds its files after its snapshot was expired; consumers' snapshots are all read", async () => {
  const name = "orph.tagged";
  const t = await history(name, 8, 5);
  mkdirSync(join(t.root, "tag"), { recursive: true });
  writeFileSync(join(t.root, "tag", "tag-keep"), readFileSync(join(t.root, "snapshot", "snapshot-3")));
  mkdirSync(join(t.root, "consumer"), { recursive: true });
  writeFileSync(join(t.root, "consumer", "consumer-app"), JSON.stringify({ nextSnapshot: 7 }));
  const tagged = snapshotFromJson(parseJson(readFileSync(join(t.root, "tag", "tag-keep"), "utf8")));
  const tagRows = sortRows(await readJson(t, { snapshotId: 3 }));
  const before = sortRows(await readJson(t));
  const e = await expireSnapshots(t, { retainMin: 1, timeRetainedMs: 0, limit: 100, protectFrom: 7 });
  assert.deepEqual([e.from, e.to], [1, 7]);
  await plant(t);
  const r = await removeOrphans(await reopen(wh.path, name));
  assert.equal(r.tagsRead, 1);
  assert.equal(r.byKind.data.files, 3);
  const t2 = await reopen(wh.path, name);
  // The tag's manifests and data files — which only the tag references now — are all there.
  await assertWhole(t2, tagged, "tag keep");
  await assertAllWhole(t2);
  assert.ok(existsSync(join(t2.root, "consumer", "consumer-app")) && existsSync(join(t2.root, "tag", "tag-keep")));
  assert.deepEqual(sortRows(await readJson(t2)), before);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), before);
  // Put the tag back as a snapshot to read it: the same rows as snapshot 3 had.
  writeFileSync(join(t2.root, "snapshot", "snapshot-3"), readFileSync(join(t2.root, "tag", "tag-keep")));
  assert.deepEqual(sortRows(await readJson(await reopen(wh.path, name), { snapshotId: 3 })), tagRows);
});

test("remove-orphans - a branch's snapshots and tags hold the shared manifests and data files they reference", async () => {
  const name = "orph.branch";
  const t = await history(name, 6, 2);
  const bdir = join(t.root, "branch", "branch-b");
  mkdirSync(join(bdir, "snapshot"), { recursive: true });
  mkdirSync(join(bdir, "tag"), { recursive: true });
  copyFileSync(join(t.root, "snapshot", "snapshot-3"), join(bdir, "snapshot", "snapshot-3"));
  copyFileSync(join(t.root, "snapshot", "snapshot-2"), join(bdir, "tag", "tag-t"));
  const onBranch = snapshotFromJson(parseJson(readFileSync(join(bdir, "snapshot", "snapshot-3"), "utf8")));
  const branchTag = snapshotFromJson(parseJson(readFileSync(join(bdir, "tag", "tag-t"), "utf8")));
  // Main's snapshots 1..3 go (their files stay), so only the branch references the lists of 2 and 3; snapshot 1's
  // lists are referenced by nothing now.
  const first = await t.snapshots.snapshot(1);
  const { rmSync } = await import("node:fs");
  for (const id of [1, 2, 3]) rmSync(join(t.root, "snapshot", `snapshot-${id}`));
  writeFileSync(join(t.root, "snapshot", "EARLIEST"), "4");
  const { old } = await plant(t);
  const r = await removeOrphans(await reopen(wh.path, name));
  assert.deepEqual(r.files.map((f) => f.path), [...Object.keys(old), `manifest/${first.baseManifestList}`, `manifest/${first.deltaManifestList}`].sort());
  assert.equal(r.tagsRead, 1);
  const t2 = await reopen(wh.path, name);
  await assertWhole(t2, onBranch, "branch b snapshot 3");
  await assertWhole(t2, branchTag, "branch b tag t");
  await assertAllWhole(t2);
});

test("remove-orphans - files of in-flight committables and of young committable bodies are kept", async () => {
  const name = "orph.inflight";
  const t = await history(name, 3, 99);
  const { old } = await plant(t);
  const [inFlight, viaBody] = Object.keys(old).filter((p) => old[p] === "data");
  const r = await removeOrphans(t, { inFlightFiles: async () => [join(t.root, inFlight!)] });
  assert.ok(existsSync(join(t.root, inFlight!)), "the leader's in-flight committable holds its file");
  assert.ok(!existsSync(join(t.root, viaBody!)));
  assert.equal(r.byKind.data.files, 2);

  // Through the CLI: a young body (a committable sent by reference, not yet decided) names an old file.
  const again = await plant(t);
  const target = Object.keys(again.old).find((p) => p.startsWith("dt=a/bucket-0/"))!;
  const entry = (await new ManifestStore(t).readLiveEntries((await t.snapshots.latest())!)).find((x) => x.bucket === 0 && dataFilePathOf(t, x.partition, 0, "x").includes("dt=a"))!;
  const c: Committable = {
    type: "committable",
    v: 1,
    table: name,
    bucket: 0,
    ownerEpoch: 1,
    writerId: "w",
    prevOffset: 0,
    lastOffset: 5,
    rowCount: 1,
    files: [{ partition: entry.partition, totalBuckets: 2, meta: { ...entry.file, fileName: target.split("/").pop()! } }],
    flushId: 1,
    firstArrivalMillis: Date.now(),
  };
  writeFileSync(join(t.root, "natslake-committables", randomUUID()), encodeMsg(c));
  const cli = await run(["remove-orphans", name, "--json"]);
  assert.equal(cli.code, 0, cli.stderr);
  const res = JSON.parse(cli.stdout) as { files: Array<{ path: string }> };
  assert.ok(!res.files.some((f) => f.path === target), "the young body's file is not an orphan");
  assert.ok(existsSync(join(t.root, target)));
  for (const p of Object.keys(again.old)) if (p !== target) assert.ok(res.files.some((f) => f.path === p), `${p} is an orphan`);
});

test("remove-orphans - the bound comes from natslake.orphan-older-than (validated at create), default 1 day", async () => {
  await assert.rejects(history("orph.badopt", 1, 99, { "natslake.orphan-older-than": "soon" }), /natslake\.orphan-older-than.*not a duration/);
  await assert.rejects(history("orph.badopt2", 1, 99, { "natslake.orphan-older-thn": "1 h" }), /did you mean 'natslake\.orphan-older-than'/);
  const t = await history("orph.opt", 2, 99, { "natslake.orphan-older-than": "1 h" });
  const d = await history("orph.default", 2, 99);
  for (const table of [t, d]) {
    ageAll(table.root, 3 * DAY);
    const two = join(table.root, "dt=a", "bucket-0", `data-${randomUUID()}-0.parquet`);
    const half = join(table.root, "dt=a", "bucket-0", `data-${randomUUID()}-1.parquet`);
    writeFileSync(two, "x");
    writeFileSync(half, "x");
    age(two, 2 * 3_600_000);
    age(half, 1_800_000);
  }
  const r = await removeOrphans(t);
  assert.equal(r.olderThanMs, 3_600_000);
  assert.equal(r.totalFiles, 1, "2 h old goes under a 1 h bound, 30 min old stays");
  const rd = await removeOrphans(d);
  assert.equal(rd.olderThanMs, DAY);
  assert.equal(rd.totalFiles, 0, "under the 1 day default both stay");
});

test("remove-orphans - deletes nothing when a tag's manifest is missing or the latest snapshot's files are not where expected", async () => {
  const name = "orph.damaged";
  const t = await history(name, 3, 99);
  const { old } = await plant(t);
  mkdirSync(join(t.root, "tag"), { recursive: true });
  const tag = JSON.parse(readFileSync(join(t.root, "snapshot", "snapshot-2"), "utf8")) as Record<string, unknown>;
  writeFileSync(join(t.root, "tag", "tag-broken"), JSON.stringify({ ...tag, baseManifestList: `manifest-list-${randomUUID()}-0` }));
  await assert.rejects(removeOrphans(t), /tag broken: manifest list .* is missing/);
  for (const p of Object.keys(old)) assert.ok(existsSync(join(t.root, p)));
  writeFileSync(join(t.root, "tag", "tag-broken"), JSON.stringify(tag));
  // A data file of the latest snapshot moved away (a layout natslake does not understand): nothing is deleted.
  const live = await someDataFile(t);
  const moved = join(t.root, "elsewhere");
  copyFileSync(join(t.root, live), moved);
  const { rmSync, renameSync } = await import("node:fs");
  rmSync(join(t.root, live));
  await assert.rejects(removeOrphans(t), /not where natslake expects it/);
  for (const p of Object.keys(old)) assert.ok(existsSync(join(t.root, p)));
  renameSync(moved, join(t.root, live));
  assert.equal((await removeOrphans(t)).totalFiles, Object.keys(old).length);
});

/** A filesystem where something happens (an expiration, a commit) just before the scan reads its first snapshot. */
class RacingIO extends LocalFileIO {
  hook: (() => Promise<void>) | null = null;
  override async readText(path: string): Promise<string> {
    const h = this.hook;
    if (h !== null && /[/\\]snapshot[/\\]snapshot-\d+$/.test(path)) {
      this.hook = null;
      await h();
    }
    return super.readText(path);
  }
}

test("remove-orphans - expiration and a commit during the scan: vanished snapshots are skipped, the new one is read, nothing referenced goes", async () => {
  const name = "orph.race";
  const t = await history(name, 6, 3);
  const before = sortRows(await readJson(t));
  const { old, young } = await plant(t);
  const io = new RacingIO();
  const racing = await new Catalog(wh.path, io).getTable(parseIdentifier(name));
  io.hook = async () => {
    // Between the listing and the reading of snapshots: snapshots 1..4 expire (with their files), 7 is committed.
    const other = await reopen(wh.path, name);
    const e = await expireSnapshots(other, { retainMin: 2, timeRetainedMs: 0, limit: 100 });
    assert.deepEqual([e.from, e.to], [1, 5]);
    assert.ok(e.dataFilesDeleted > 0);
    await writeRows(other, [{ id: 1000, dt: "c" }]);
  };
  const r = await removeOrphans(racing);
  assert.equal(io.hook, null, "the race happened");
  assert.equal(r.snapshotsRead, 3, "snapshots 5, 6 and the one committed during the scan");
  assert.deepEqual(r.files.map((f) => f.path), Object.keys(old).sort());
  for (const p of young) assert.ok(existsSync(join(t.root, p)));
  const after = await reopen(wh.path, name);
  assert.deepEqual(await after.snapshots.listIds(), [5, 6, 7]);
  await assertAllWhole(after);
  const rows = sortRows(await readJson(after));
  assert.deepEqual(rows, sortRows([...before, { id: 1000, dt: "c" }]));
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), rows);
});

test("remove-orphans - after an expiration killed before it deleted its snapshots (their manifests gone): skipped, nothing retained goes", async () => {
  const name = "orph.halfexpired";
  const t = await history(name, 6, 3);
  const before = sortRows(await readJson(t));
  const killed = await new Promise<NodeJS.Signals | null>((resolve) => {
    const p = spawn(process.execPath, [BIN, "expire-snapshots", name, "--retain-min", "2", "--older-than", "0 s", "--warehouse", wh.path], {
      env: { ...process.env, FAILPOINTS: "expire.before-snapshots:kill" },
      stdio: "ignore",
    });
    p.on("close", (_code, signal) => resolve(signal));
  });
  assert.equal(killed, "SIGKILL");
  const mid = await reopen(wh.path, name);
  assert.deepEqual(await mid.snapshots.listIds(), [1, 2, 3, 4, 5, 6], "the snapshots are still there, some of their manifests not");
  const { old } = await plant(mid);
  const r = await removeOrphans(mid);
  assert.deepEqual(r.files.map((f) => f.path), Object.keys(old).sort());
  for (const id of [5, 6]) await assertWhole(mid, await mid.snapshots.snapshot(id), `snapshot ${id}`);
  assert.deepEqual(sortRows(await readJson(mid)), before);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), before);
});

test("remove-orphans - SIGKILL mid-run leaves the table readable; the next run finishes", async () => {
  const name = "orph.kill";
  const t = await history(name, 6, 3);
  const before = sortRows(await readJson(t));
  const { old, young } = await plant(t);
  const args = [BIN, "remove-orphans", name, "--older-than", "1 h", "--warehouse", wh.path];
  const killed = await new Promise<{ signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    const p = spawn(process.execPath, args, { env: { ...process.env, FAILPOINTS: "orphans.after-delete:kill@4" }, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    p.on("close", (_code, signal) => resolve({ signal, stderr }));
  });
  assert.equal(killed.signal, "SIGKILL", killed.stderr);
  const left = Object.keys(old).filter((p) => existsSync(join(t.root, p)));
  assert.equal(left.length, Object.keys(old).length - 4, "killed after the fourth delete");
  const mid = await reopen(wh.path, name);
  await assertAllWhole(mid);
  assert.deepEqual(sortRows(await readJson(mid)), before);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), before);
  const done = await run(["remove-orphans", name, "--older-than", "1 h"]);
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stdout, new RegExp(`${name.replace(".", "\\.")}: deleted ${left.length} orphan files`));
  for (const p of Object.keys(old)) assert.ok(!existsSync(join(t.root, p)), `${p} gone after the rerun`);
  for (const p of young) assert.ok(existsSync(join(t.root, p)));
  await assertAllWhole(await reopen(wh.path, name));
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), before);
});

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args, ...(env["NO_WAREHOUSE"] ? [] : ["--warehouse", wh.path])], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    p.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

test("remove-orphans - the CLI: bad arguments exit 2, --help has an example, --dry-run lists, --json summarises", async () => {
  const name = "orph.cli";
  const t = await history(name, 2, 99);
  const { old } = await plant(t);
  const dur = await run(["remove-orphans", name, "--older-than", "soon"]);
  assert.equal(dur.code, 2);
  assert.match(dur.stderr, /not a duration: 'soon'/);
  const unknown = await run(["remove-orphans", name, "--bogus"]);
  assert.equal(unknown.code, 2);
  const missingArg = await run(["remove-orphans"]);
  assert.equal(missingArg.code, 2);
  const noTable = await run(["remove-orphans", "orph.nope"]);
  assert.equal(noTable.code, 2);
  const badName = await run(["remove-orphans", "a/b.c"]);
  assert.equal(badName.code, 2);
  const noWh = await run(["remove-orphans", name, "--warehouse", join(wh.path, "missing")], { NO_WAREHOUSE: "1" });
  assert.equal(noWh.code, 2);
  assert.match(noWh.stderr, /does not exist/);
  const help = await run(["remove-orphans", "--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /natslake remove-orphans shop\.orders --older-than/);

  const dry = await run(["remove-orphans", name, "--dry-run"]);
  assert.equal(dry.code, 0, dry.stderr);
  for (const [p, kind] of Object.entries(old)) assert.ok(dry.stdout.includes(`would delete ${kind} ${p} (`), `dry run lists ${p}`);
  assert.match(dry.stdout, /orph\.cli: would delete 9 orphan files, .*: 3 data \(.*\), 2 manifest \(.*\), 1 committable body \(.*\), 3 temp \(.*\); would remove 2 empty directories/);
  for (const p of Object.keys(old)) assert.ok(existsSync(join(t.root, p)));
  const json = await run(["remove-orphans", name, "--json"]);
  assert.equal(json.code, 0, json.stderr);
  const r = JSON.parse(json.stdout) as { table: string; totalFiles: number; byKind: Record<string, { files: number }>; dryRun: boolean };
  assert.equal(r.table, name);
  assert.equal(r.totalFiles, 9);
  assert.equal(r.byKind["committable"]!.files, 1);
  assert.equal(r.dryRun, false);
  const none = await run(["remove-orphans", name]);
  assert.match(none.stdout, /orph\.cli: no orphan files older than 1 d; kept 4 unreferenced files younger than the bound/);
});
