/**
 * Bad data on disk (issue 29): real tables damaged each way — a truncated snapshot, a corrupt manifest and manifest
 * list, a damaged schema, consumer file and data file, a missing data file, foreign files, overlapping levels written
 * by hand, a stale LATEST hint, a consumer at an expired snapshot. `natslake doctor` finds each (the file, the
 * snapshots using it, what to do), exits 1 (0 on a healthy table) and says the same in --json; every reader — a
 * scan, the CLI's read, a tail with a consumer, the commit planning a snapshot on top — fails with an error naming
 * the file. (The damaged snapshot's readers and recovery: damaged-snapshot.test.ts.)
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, statSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import { createTable, readJson, reopen, tempDir, writeRows } from "../helpers/tables.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { doctorTable, type DoctorFinding, type DoctorReport } from "../../src/maintenance/doctor.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { writeConsumer, listConsumers } from "../../src/table/consumers.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { FileStoreCommit } from "../../src/commit/file-store-commit.ts";
import { CommitKind } from "../../src/format/snapshot.ts";
import { FileKind } from "../../src/format/manifest.ts";
import { TableStream } from "../../src/scan/table-stream.ts";
import type { Table } from "../../src/table/table.ts";
import { runNatslake as cli } from "../helpers/warehouse-cli.ts";

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** An append table of three snapshots, one row each, and a consumer at snapshot 2. */
async function threeSnapshots(wh: string, name: string): Promise<Table> {
  const t = await createTable(wh, name, "id BIGINT NOT NULL, v STRING", { options: { bucket: "1", "bucket-key": "id" } });
  for (const id of [1, 2, 3]) await writeRows(t, [{ id, v: `v${id}` }]);
  await writeConsumer(t, "c1", 2);
  return reopen(wh, name);
}

/** The data file and the manifests snapshot 3 added (what it alone holds). */
async function addedBy3(t: Table): Promise<{ dataFile: string; manifest: string; deltaList: string }> {
  const s = await t.snapshots.snapshot(3);
  const store = new ManifestStore(t);
  const metas = await store.readManifestList(s.deltaManifestList);
  const entries = await store.readEntries(metas);
  const added = entries.find((e) => e.kind === FileKind.ADD)!;
  return { dataFile: `${t.root}/bucket-0/${added.file.fileName}`, manifest: t.paths.manifestPath(metas[0]!.fileName), deltaList: t.paths.manifestPath(s.deltaManifestList) };
}

const only = (r: DoctorReport, check: DoctorFinding["check"]): DoctorFinding[] => r.findings.filter((f) => f.check === check);

test("doctor - a healthy append and primary-key table: no findings, exit 0, --json", { timeout: 120_000 }, async () => {
  const dir = tempDir();
  try {
    await threeSnapshots(dir.path, "d.append");
    const pk = await new Catalog(dir.path).createTable(parseIdentifier("d.pk"), { columns: parseColumnList("id BIGINT NOT NULL, v STRING"), primaryKeys: ["id"], options: { bucket: "2" } });
    for (const round of [0, 1, 2]) await writeRows(pk, [1, 2, 3, 4].map((id) => ({ id, v: `r${round}` })));
    const r = await doctorTable(await reopen(dir.path, "d.pk"), { orphansOlderThanMs: 0 });
    assert.deepEqual(r.findings, [], JSON.stringify(r.findings));
    assert.equal(r.healthy, true);
    assert.deepEqual([r.earliestSnapshot, r.latestSnapshot, r.checked.snapshots], [1, 3, 3]);
    assert.ok(r.checked.dataFiles >= 6 && r.checked.buckets >= 2, JSON.stringify(r.checked));
    const json = await cli(["doctor", "d.append", "--json", "--orphans-older-than", "0 s", "--warehouse", dir.path]);
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout) as DoctorReport;
    assert.deepEqual([report.healthy, report.findings, report.checked.dataFiles, report.checked.consumers], [true, [], 3, 1]);
    const text = await cli(["doctor", "d.pk", "--warehouse", dir.path]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^d\.pk: healthy \(snapshots 1\.\.3; checked 1 schemas, 3 snapshots, /);
  } finally {
    dir.cleanup();
  }
});

test("doctor - each damage found with the file, the snapshots using it and what to do; exit 1 and --json", { timeout: 180_000 }, async () => {
  const dir = tempDir();
  const wh = dir.path;
  try {
    // A truncated snapshot: the latest (roll back with --force) and one in the middle (expire it).
    const latest = await threeSnapshots(wh, "d.snaplatest");
    writeFileSync(`${latest.root}/snapshot/snapshot-3`, '{"version": 3, "id": 3, "sch');
    let r = await doctorTable(latest);
    assert.equal(r.healthy, false);
    assert.deepEqual(only(r, "snapshot").map((f) => [f.path, f.action]), [[`${latest.root}/snapshot/snapshot-3`, "restore it from a backup, or roll back to the snapshot before it: natslake rollback d.snaplatest --to-snapshot 2 --force (the rows only it held are lost)"]]);
    assert.match(only(r, "snapshot")[0]!.problem, /^damaged: /);
    assert.deepEqual(r.skipped, ["orphans: remove-orphans refuses to run while the table is damaged (the problems above)"]);
    const middle = await threeSnapshots(wh, "d.snapmiddle");
    truncateSync(`${middle.root}/snapshot/snapshot-2`, 10);
    r = await doctorTable(middle);
    assert.deepEqual(only(r, "snapshot").map((f) => f.action), ["restore it from a backup, or expire it (reads of the latest snapshot do not need it): natslake expire-snapshots d.snapmiddle --retain-max 1 --older-than '0 s'"]);

    // A corrupt manifest and manifest list: used by snapshot 3 only; roll back to 2.
    const man = await threeSnapshots(wh, "d.manifest");
    const m = await addedBy3(man);
    truncateSync(m.manifest, Math.floor(statSync(m.manifest).size / 2));
    r = await doctorTable(man);
    assert.deepEqual(r.findings.map((f) => [f.check, f.path, f.snapshots]), [["manifest", m.manifest, [3]]]);
    assert.equal(r.findings[0]!.action, "restore it from a backup, or roll back to snapshot 2, the last before it: natslake rollback d.manifest --to-snapshot 2 (the rows written since are lost)");
    const list = await threeSnapshots(wh, "d.list");
    const l = await addedBy3(list);
    writeFileSync(l.deltaList, "garbage");
    r = await doctorTable(list);
    assert.deepEqual(r.findings.map((f) => [f.check, f.path, f.snapshots]), [["manifest-list", l.deltaList, [3]]]);
    assert.match(r.findings[0]!.problem, /^damaged: malformed Avro file/);

    // A data file: deleted, truncated, its bytes damaged (same size: the footer check finds it).
    for (const [name, damage, problem] of [
      ["d.missing", (p: string) => unlinkSync(p), /^missing$/],
      ["d.truncated", (p: string) => truncateSync(p, 100), /^damaged: 100 bytes, its manifest entry says \d+$/],
      ["d.footer", (p: string) => {
        const b = readFileSync(p);
        b.fill(7, b.length - 60, b.length - 8);
        writeFileSync(p, b);
      }, /^damaged: not a readable Parquet footer/],
    ] as const) {
      const t = await threeSnapshots(wh, name);
      const { dataFile } = await addedBy3(t);
      damage(dataFile);
      r = await doctorTable(t);
      const found = only(r, "data-file");
      assert.deepEqual(found.map((f) => [f.path, f.snapshots]), [[dataFile, [3]]], name);
      assert.match(found[0]!.problem, problem, name);
      assert.match(found[0]!.action, new RegExp(`natslake rollback ${escape(name)} --to-snapshot 2 `), name);
    }

    // Foreign files: one in snapshot/ (no Paimon file has that name), one in a bucket (an orphan once old enough).
    const foreign = await threeSnapshots(wh, "d.foreign");
    writeFileSync(`${foreign.root}/snapshot/README.txt`, "notes");
    writeFileSync(`${foreign.root}/bucket-0/notes.txt`, "notes");
    r = await doctorTable(foreign, { orphansOlderThanMs: 0 });
    assert.deepEqual(r.findings.map((f) => [f.check, f.path ?? f.files]), [["orphan", ["bucket-0/notes.txt"]], ["foreign-file", `${foreign.root}/snapshot/README.txt`]]);
    assert.equal(only(r, "orphan")[0]!.action, "run natslake remove-orphans d.foreign (add --dry-run to list them first)");
    assert.match(only(r, "orphan")[0]!.problem, /^1 file \(5 bytes\) no snapshot, tag or in-flight committable references, older than 0 s$/);
    assert.deepEqual((await doctorTable(foreign)).findings.map((f) => f.check), ["foreign-file"], "young unreferenced files are no orphans yet");

    // A stale LATEST hint (the directory says 3).
    const hint = await threeSnapshots(wh, "d.hint");
    writeFileSync(`${hint.root}/snapshot/LATEST`, "1");
    r = await doctorTable(hint, { hintRecheckMs: 10 });
    assert.deepEqual(r.findings.map((f) => [f.check, f.path, f.action]), [["hint", `${hint.root}/snapshot/LATEST`, "write 3 into it (the next commit rewrites it too)"]]);
    assert.match(r.findings[0]!.problem, /^the LATEST hint says 1, but the newest snapshot on disk is 3 /);

    // A consumer at an expired snapshot, and one past the next snapshot.
    const cons = await threeSnapshots(wh, "d.consumers");
    await writeRows(cons, [{ id: 4, v: "v4" }]);
    await writeConsumer(cons, "c1", 4);
    await expireSnapshots(cons, { retainMin: 1, retainMax: 2, timeRetainedMs: 0 });
    await writeConsumer(cons, "late", 1);
    await writeConsumer(cons, "ahead", 9);
    const earliest = (await cons.snapshots.earliestId())!;
    assert.ok(earliest > 1, `snapshots expired: earliest ${earliest}`);
    r = await doctorTable(cons);
    assert.deepEqual(r.findings.map((f) => [f.check, f.snapshots, f.action]), [
      ["consumer", [9], "move it to the next snapshot (natslake consumer reset d.consumers ahead --next-snapshot 5)"],
      ["consumer", [1], `move it to the earliest retained snapshot (natslake consumer reset d.consumers late --next-snapshot ${earliest}), or delete it and read the table in full again (natslake consumer delete d.consumers late)`],
    ]);
    assert.match(r.findings[1]!.problem, new RegExp(`^consumer late is at snapshot 1, which was expired \\(the earliest retained is ${earliest}\\)`));

    // The CLI: exit 1, each finding with its action, the same in --json.
    const text = await cli(["doctor", "d.manifest", "--warehouse", wh]);
    assert.equal(text.code, 1, text.stderr);
    assert.equal(text.stderr, "error: d.manifest: 1 problem found\n");
    assert.match(text.stdout, new RegExp(`^d\\.manifest: 1 problem \\(snapshots 1\\.\\.3; .*\\)\\n  manifest: ${escape(m.manifest)}: damaged: .* \\[snapshot 3\\]\\n    → restore it from a backup, or roll back to snapshot 2`));
    const json = await cli(["doctor", "d.consumers", "--json", "--warehouse", wh]);
    assert.equal(json.code, 1, json.stderr);
    const report = JSON.parse(json.stdout) as DoctorReport;
    assert.deepEqual([report.healthy, report.findings.map((f) => f.check), report.earliestSnapshot, report.latestSnapshot], [false, ["consumer", "consumer"], earliest, 4]);
  } finally {
    dir.cleanup();
  }
});

test("doctor - overlapping levels of a primary-key bucket written by hand: found with the snapshot to roll back to", { timeout: 120_000 }, async () => {
  const dir = tempDir();
  try {
    const t = await new Catalog(dir.path).createTable(parseIdentifier("d.levels"), { columns: parseColumnList("id BIGINT NOT NULL, v STRING"), primaryKeys: ["id"], options: { bucket: "1" } });
    await writeRows(t, [1, 2, 3].map((id) => ({ id, v: "a" })));
    await writeRows(t, [2, 3, 4].map((id) => ({ id, v: "b" })));
    // Both level-0 files (key ranges 1..3 and 2..4) "upgraded" to level 1 by hand: level 1 overlaps.
    const store = new ManifestStore(t);
    const live = await store.readLiveEntries((await t.snapshots.latest())!);
    assert.equal(live.length, 2);
    const e0 = live[0]!;
    await new FileStoreCommit(t).commit({
      commitUser: "by-hand",
      kind: CommitKind.COMPACT,
      messages: [{ partition: e0.partition, bucket: e0.bucket, totalBuckets: e0.totalBuckets, deletedFiles: live.map((e) => e.file), newFiles: live.map((e) => ({ ...e.file, level: 1 })) }],
    });
    const r = await doctorTable(await reopen(dir.path, "d.levels"));
    assert.deepEqual(r.findings.map((f) => [f.check, f.snapshots]), [["levels", [3]]]);
    assert.match(r.findings[0]!.problem, /^bucket 0: level 1 is not a sorted run: /);
    assert.match(r.findings[0]!.action, /^roll back to snapshot 2, the last before it: natslake rollback d\.levels --to-snapshot 2 /);
  } finally {
    dir.cleanup();
  }
});

test("damaged files - every reader names the file: scan, CLI read, a tail's consumer, the commit planning on top; nothing raw", { timeout: 180_000 }, async () => {
  const dir = tempDir();
  const wh = dir.path;
  try {
    const damagedRead = async (t: Table, path: string, what: string): Promise<void> => {
      await assert.rejects(readJson(await reopen(wh, t.name)), (e: Error) => {
        assert.equal(e.name, "LakeError");
        assert.match(e.message, new RegExp(`^${escape(path)} is damaged: not a readable ${what} \\(.+\\); restore the file from a backup`));
        return true;
      });
    };
    // Manifest and manifest list: the scan, and a commit on top (it would carry them into its base).
    const man = await threeSnapshots(wh, "r.manifest");
    const m = await addedBy3(man);
    truncateSync(m.manifest, 20);
    await damagedRead(man, m.manifest, "manifest");
    await assert.rejects(writeRows(await reopen(wh, "r.manifest"), [{ id: 9, v: "x" }]), new RegExp(`^LakeError: ${escape(m.manifest)} is damaged: not a readable manifest`));
    assert.equal(await (await reopen(wh, "r.manifest")).snapshots.latestId(), 3, "nothing committed on the damaged snapshot");
    const list = await threeSnapshots(wh, "r.list");
    const l = await addedBy3(list);
    writeFileSync(l.deltaList, "not avro");
    await damagedRead(list, l.deltaList, "manifest list");

    // A data file: damaged (the decoder's error, here and in the pool's workers) and missing.
    const data = await threeSnapshots(wh, "r.data");
    const { dataFile } = await addedBy3(data);
    const b = readFileSync(dataFile);
    b.fill(7, b.length - 60, b.length - 8);
    writeFileSync(dataFile, b);
    await damagedRead(data, dataFile, "data file");
    const read = await cli(["read", "r.data", "--warehouse", wh]);
    assert.equal(read.code, 2, read.stderr);
    assert.match(read.stderr, new RegExp(`^error: ${escape(dataFile)} is damaged: not a readable data file \\(.+\\); restore the file from a backup, or roll r\\.data back to a snapshot before the one that added it \\(natslake doctor r\\.data names the snapshots that use it\\)\\n$`));
    unlinkSync(dataFile);
    await assert.rejects(readJson(await reopen(wh, "r.data")), new RegExp(`^LakeError: data file ${escape(dataFile)} is missing; restore the file from a backup`));

    // A schema: the table cannot be opened; the error names the file.
    const sch = await threeSnapshots(wh, "r.schema");
    writeFileSync(`${sch.root}/schema/schema-0`, '{"id": 0, "fields": [');
    await assert.rejects(reopen(wh, "r.schema"), new RegExp(`^LakeError: ${escape(`${sch.root}/schema/schema-0`)} is damaged: not a readable schema \\(`));
    const doc = await cli(["doctor", "r.schema", "--json", "--warehouse", wh]);
    assert.equal(doc.code, 1, doc.stderr);
    assert.deepEqual((JSON.parse(doc.stdout) as DoctorReport).findings.map((f) => [f.check, f.path]), [["schema", `${sch.root}/schema/schema-0`]]);

    // A consumer file: listing consumers and a tail resuming with it.
    const con = await threeSnapshots(wh, "r.consumer");
    const consumerFile = `${con.root}/consumer/consumer-c1`;
    writeFileSync(consumerFile, "{nope");
    const expected = new RegExp(`^LakeError: ${escape(consumerFile)} is damaged: not a readable consumer \\(.+\\); set its progress again \\(natslake consumer reset r\\.consumer c1 --next-snapshot N\\) or delete it`);
    await assert.rejects(listConsumers(con), expected);
    const stream = new TableStream(con, { mode: { mode: "latest" }, consumerId: "c1", pollMs: 50 });
    await assert.rejects(stream[Symbol.asyncIterator]().next(), expected);
    stream.close();
  } finally {
    dir.cleanup();
  }
});

