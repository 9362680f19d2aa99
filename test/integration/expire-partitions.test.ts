/**
 * Partition expiration (Paimon's rules), on the operators' case: daily `dt` partitions kept 7 days. The expired
 * partitions disappear in ONE OVERWRITE snapshot that carries the stream offsets forward, every other row stays
 * (natslake and pypaimon read it), time travel still sees the dropped rows until snapshot expiration removes their
 * files; hourly partitions through `$dt $hour:00:00`; unparsable partitions are kept; the CLI.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTable, readJson, reopen, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { FileStoreCommit } from "../../src/commit/file-store-commit.ts";
import { CommitKind, natslakeProperties } from "../../src/format/snapshot.ts";
import { FileKind } from "../../src/format/manifest.ts";
import { deserializeBinaryRow, serializeBinaryRow } from "../../src/format/binary-row.ts";
import { expirePartitions, partitionExpirationDue } from "../../src/maintenance/expire-partitions.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { localWallClockMillis } from "../../src/write/data-file-writer.ts";
import { isLakeError, ErrorKind } from "../../src/errors.ts";
import type { Table } from "../../src/table/table.ts";

const wh = tempDir();
after(() => wh.cleanup());
const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const DAY = 86_400_000;
/** Noon local time: the partitions' dates are computed from its local wall clock, so any TZ gives the same cases. */
const NOW = new Date(2026, 11, 1, 12, 0, 0).getTime();
const dayBack = (i: number): string => new Date(localWallClockMillis(NOW) - i * DAY).toISOString().slice(0, 10);

/** Paths of the data files a snapshot references, per partition directory. */
async function liveFiles(t: Table, snapshotId?: number): Promise<Map<string, string[]>> {
  const s = snapshotId === undefined ? await t.snapshots.latest() : await t.snapshots.snapshot(snapshotId);
  const out = new Map<string, string[]>();
  for (const e of await new ManifestStore(t).readLiveEntries(s!)) {
    const dt = deserializeBinaryRow(t.partitionTypes, e.partition);
    const dir = t.partitionKeys.map((k, i) => `${k}=${String(dt[i])}`).join("/");
    const list = out.get(dir) ?? [];
    list.push(join(t.root, dir, `bucket-${e.bucket}`, e.file.fileName));
    out.set(dir, list);
  }
  return out;
}

async function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    p.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

test("expire partitions - daily dt kept 7 days: the older partitions go in one OVERWRITE snapshot, every other row stays", async () => {
  const name = "exp.daily";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, dt STRING NOT NULL, v STRING", {
    partitionKeys: ["dt"],
    options: { bucket: "2", "bucket-key": "id", "partition.expiration-time": "7 d", "partition.timestamp-formatter": "yyyy-MM-dd" },
  });
  // The cluster's state first (stream offsets, epochs), as a leader's commit leaves it; batch writes carry it forward.
  const props = natslakeProperties({ epoch: 3, buckets: new Map([[0, { offset: 41n, ownerEpoch: 2 }], [1, { offset: 17n, ownerEpoch: 2 }]]), stream: "lake-x@1", offsetEpoch: 0 });
  await new FileStoreCommit(t).commit({ commitUser: "leader", messages: [], prepare: () => ({ properties: props, messages: [], commitIdentifier: 1n, commitEmpty: true }) });
  const days = Array.from({ length: 10 }, (_, i) => dayBack(i)); // today .. 9 days back
  const rows = (round: number): Array<Record<string, unknown>> =>
    [...days, "backfill"].flatMap((dt, d) => Array.from({ length: 4 }, (_, k) => ({ id: round * 1000 + d * 10 + k, dt, v: `r${round}` })));
  await writeRows(t, rows(0));
  await writeRows(t, rows(1)); // two files per partition and bucket
  t = await reopen(wh.path, name);
  const before = await t.snapshots.latest();
  const all = sortRows(await readJson(t));
  assert.equal(all.length, 88);
  const expiredDays = new Set([dayBack(7), dayBack(8), dayBack(9)]); // midnight of day 7 is before now − 7 d (noon)
  const keptRows = sortRows(all.filter((r) => !expiredDays.has(r["dt"] as string)));
  const filesBefore = await liveFiles(t);

  // Dry run: the list, nothing changed.
  const dry = await expirePartitions(t, { now: NOW, dryRun: true });
  assert.deepEqual(dry.partitions.map((p) => p.path), [...expiredDays].sort().map((d) => `dt=${d}`));
  assert.deepEqual(dry.partitions.map((p) => p.time), [...expiredDays].sort().map((d) => `${d}T00:00:00`));
  assert.equal(dry.files, [...expiredDays].reduce((n, d) => n + filesBefore.get(`dt=${d}`)!.length, 0));
  assert.equal(dry.rows, 24);
  assert.equal(dry.cutoff, `${dayBack(7)}T12:00:00`);
  assert.deepEqual(dry.skipped.map((s) => s.path), ["dt=backfill"], "an unparsable partition is reported and kept");
  assert.match(dry.skipped[0]!.reason, /does not match the formatter 'yyyy-MM-dd'/);
  assert.deepEqual(dry.snapshotIds, []);
  assert.equal(await t.snapshots.latestId(), before!.id, "a dry run commits nothing");

  const r = await expirePartitions(t, { now: NOW });
  assert.deepEqual(r.snapshotIds, [before!.id + 1], "one snapshot");
  assert.deepEqual([r.partitions.length, r.files, r.rows], [3, dry.files, 24]);
  t = await reopen(wh.path, name);
  const s = (await t.snapshots.latest())!;
  assert.equal(s.id, before!.id + 1);
  assert.equal(s.commitKind, CommitKind.OVERWRITE);
  assert.deepEqual(s.properties, before!.properties, "the natslake.* properties (offsets, epochs) carried forward unchanged");
  assert.equal(s.properties!["natslake.offset.0"], "41");
  const delta = await new ManifestStore(t).readDeltaEntries(s);
  assert.equal(delta.length, dry.files);
  assert.ok(delta.every((e) => e.kind === FileKind.DELETE), "the drop only DELETEs");
  assert.equal(s.totalRecordCount, before!.totalRecordCount - 24);
  assert.equal(s.deltaRecordCount, -24);

  // The other partitions keep every row, for natslake and pypaimon; the previous snapshot still has all of them.
  assert.deepEqual(sortRows(await readJson(t)), keptRows);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), keptRows);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name, { partition: { dt: dayBack(6) } })), keptRows.filter((x) => x["dt"] === dayBack(6)));
  assert.deepEqual(await paimonRead(wh.path, name, { partition: { dt: dayBack(7) } }), [], "pypaimon sees no rows in a dropped partition");
  assert.deepEqual(sortRows(await paimonRead(wh.path, name, { snapshot: before!.id })), all, "time travel: the previous snapshot still has them");
  assert.deepEqual(sortRows(await readJson(t, { snapshotId: before!.id })), all);

  // Nothing left to expire: no new snapshot.
  const again = await expirePartitions(t, { now: NOW });
  assert.deepEqual([again.partitions.length, again.snapshotIds.length], [0, 0]);
  assert.equal(await t.snapshots.latestId(), s.id);

  // Snapshot expiration then removes the dropped files from disk (and only them).
  for (const d of expiredDays) for (const f of filesBefore.get(`dt=${d}`)!) assert.ok(existsSync(f), "files stay until snapshot expiration");
  const x = await expireSnapshots(t, { retainMin: 1, timeRetainedMs: 0, limit: 100 });
  assert.equal(x.to, s.id);
  for (const d of expiredDays) for (const f of filesBefore.get(`dt=${d}`)!) assert.ok(!existsSync(f), `${f} is gone after snapshot expiration`);
  for (const [dir, files] of filesBefore) if (!expiredDays.has(dir.slice(3))) for (const f of files) assert.ok(existsSync(f), `${f} is kept`);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), keptRows);
});

test("expire partitions - dt + hour through '$dt $hour:00:00'; the cutoff itself is not expired; an unparsable hour is kept", async () => {
  const name = "exp.hourly";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, dt STRING NOT NULL, hour STRING NOT NULL", {
    partitionKeys: ["dt", "hour"],
    options: { "partition.expiration-time": "12 h", "partition.timestamp-pattern": "$dt $hour:00:00", "partition.timestamp-formatter": "yyyy-MM-dd HH:mm:ss" },
  });
  const parts: Array<[string, string]> = [[dayBack(1), "00"], [dayBack(1), "23"], [dayBack(1), "xx"], [dayBack(0), "00"], [dayBack(0), "01"], [dayBack(0), "11"]];
  await writeRows(t, parts.flatMap(([dt, hour], p) => Array.from({ length: 3 }, (_, k) => ({ id: p * 10 + k, dt, hour }))));
  t = await reopen(wh.path, name);
  const all = sortRows(await readJson(t));
  const r = await expirePartitions(t, { now: NOW });
  // now − 12 h is today's midnight: yesterday's hours go, today 00:00 (exactly the cutoff) stays.
  assert.deepEqual(r.partitions.map((p) => p.path), [`dt=${dayBack(1)}/hour=00`, `dt=${dayBack(1)}/hour=23`]);
  assert.deepEqual(r.partitions.map((p) => p.spec), [{ dt: dayBack(1), hour: "00" }, { dt: dayBack(1), hour: "23" }]);
  assert.deepEqual(r.skipped.map((s) => s.path), [`dt=${dayBack(1)}/hour=xx`]);
  assert.equal(r.rows, 6);
  const kept = all.filter((x) => !(x["dt"] === dayBack(1) && (x["hour"] === "00" || x["hour"] === "23")));
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(kept));
  assert.deepEqual(sortRows(await paimonRead(wh.path, name, { partition: { dt: dayBack(1), hour: "xx" } })), sortRows(all.filter((x) => x["hour"] === "xx")));
  assert.deepEqual(await paimonRead(wh.path, name, { partition: { dt: dayBack(1), hour: "23" } }), []);
  assert.deepEqual(sortRows(await readJson(await reopen(wh.path, name))), sortRows(kept));
});

test("expire partitions - max-num, update-time, the check interval and the overrides", async () => {
  const name = "exp.limits";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, dt STRING NOT NULL", {
    partitionKeys: ["dt"],
    options: { "partition.expiration-time": "1 d", "partition.expiration-max-num": "2", "partition.expiration-check-interval": "30 min" },
  });
  await writeRows(t, [0, 2, 3, 4, 5].map((i) => ({ id: i, dt: dayBack(i) })));
  t = await reopen(wh.path, name);
  // No formatter: Paimon's default yyyy-MM-dd[ HH:mm:ss]. 4 expired, the 2 oldest go, 2 are deferred.
  const r = await expirePartitions(t, { now: NOW });
  assert.deepEqual(r.partitions.map((p) => p.path), [`dt=${dayBack(5)}`, `dt=${dayBack(4)}`]);
  assert.equal(r.deferred, 2);
  const r2 = await expirePartitions(t, { now: NOW });
  assert.deepEqual([r2.partitions.map((p) => p.path), r2.deferred], [[`dt=${dayBack(3)}`, `dt=${dayBack(2)}`], 0]);
  assert.deepEqual((await readJson(t)).map((x) => x["dt"]), [dayBack(0)]);
  // partition.expiration-batch-size: one OVERWRITE snapshot per batch.
  const b = await createTable(wh.path, "exp.batch", "id BIGINT NOT NULL, dt STRING NOT NULL", { partitionKeys: ["dt"], options: { "partition.expiration-time": "1 d", "partition.expiration-batch-size": "2" } });
  await writeRows(b, [2, 3, 4].map((i) => ({ id: i, dt: dayBack(i) })));
  const rb = await expirePartitions(await reopen(wh.path, "exp.batch"), { now: NOW });
  assert.deepEqual([rb.snapshotIds, rb.rows], [[2, 3], 3]);
  const bs = await reopen(wh.path, "exp.batch");
  assert.deepEqual([(await bs.snapshots.snapshot(2)).deltaRecordCount, (await bs.snapshots.snapshot(3)).deltaRecordCount], [-2, -1]);

  // update-time: by the newest file's creation time, whatever the values say.
  await writeRows(t, [{ id: 9, dt: "not-a-date" }]);
  const young = await expirePartitions(t, { now: Date.now(), strategy: "update-time", dryRun: true });
  assert.deepEqual([young.partitions.length, young.skipped.length], [0, 0], "files written just now are not older than 1 d");
  const old = await expirePartitions(t, { now: Date.now() + 2 * DAY, strategy: "update-time", dryRun: true });
  assert.deepEqual(old.partitions.map((p) => p.path).sort(), [`dt=${dayBack(0)}`, "dt=not-a-date"]);
  // An override of the expiration time: 10 d keeps everything.
  assert.equal((await expirePartitions(t, { now: NOW, expirationTimeMs: 10 * DAY, dryRun: true })).partitions.length, 0);

  assert.equal(partitionExpirationDue(t, null, NOW), true, "never checked: due");
  assert.equal(partitionExpirationDue(t, NOW - 29 * 60_000, NOW), false, "30 min interval not passed");
  assert.equal(partitionExpirationDue(t, NOW - 31 * 60_000, NOW), true);
  const plain = await createTable(wh.path, "exp.plain", "id BIGINT NOT NULL, dt STRING NOT NULL", { partitionKeys: ["dt"] });
  assert.equal(partitionExpirationDue(plain, null, NOW), false, "no partition.expiration-time: never due");
  await assert.rejects(expirePartitions(plain, { now: NOW }), (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /has no partition\.expiration-time/.test(e.message));
});

test("expire partitions - the drop deletes what is live at commit time, appends after the plan included (no conflict), as Paimon's dropPartitions", async () => {
  const name = "exp.race";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, dt STRING NOT NULL", { partitionKeys: ["dt"] });
  await writeRows(t, [{ id: 1, dt: "a" }, { id: 2, dt: "b" }]);
  const planned = await t.snapshots.latestId();
  await writeRows(t, [{ id: 3, dt: "a" }, { id: 4, dt: "b" }]); // lands between the plan and the drop
  t = await reopen(wh.path, name);
  const a = serializeBinaryRow(t.partitionTypes, ["a"]);
  const matches = (p: Uint8Array): boolean => Buffer.compare(p, a) === 0;
  // An INSERT OVERWRITE planned at `planned` conflicts with the append; the drop deletes the appended file too.
  await assert.rejects(new FileStoreCommit(t).commit({ commitUser: "ow", messages: [], overwrite: { matches, readSnapshotId: planned } }), (e: unknown) => isLakeError(e, ErrorKind.Conflict));
  const res = await new FileStoreCommit(t).commit({ commitUser: "drop", kind: CommitKind.OVERWRITE, messages: [], overwrite: { matches, readSnapshotId: planned, atCommitTime: true } });
  assert.equal(res.snapshot!.commitKind, CommitKind.OVERWRITE);
  assert.deepEqual(sortRows(await readJson(t)), [{ id: 2, dt: "b" }, { id: 4, dt: "b" }]);
});

test("expire partitions - CLI: dry run and run, JSON, bad arguments and tables without the options exit 2", async () => {
  const name = "exp.cli";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, dt STRING NOT NULL", { partitionKeys: ["dt"], options: { "partition.timestamp-formatter": "yyyyMMdd" } });
  const ymd = (i: number): string => dayBack(i).replaceAll("-", "");
  await writeRows(t, [{ id: 1, dt: ymd(0) }, { id: 2, dt: ymd(40) }, { id: 3, dt: ymd(400) }]);
  const w = ["--warehouse", wh.path];

  const none = await cli(["expire-partitions", name, ...w]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /^error: table exp\.cli has no partition\.expiration-time: set the option \(e\.g\. 7 d\) or pass an expiration time\n$/);

  const dry = await cli(["expire-partitions", name, "--expiration-time", "30 d", "--dry-run", "--json", ...w]);
  assert.equal(dry.code, 0, dry.stderr);
  const j = JSON.parse(dry.stdout) as { dryRun: boolean; partitions: Array<{ path: string }>; rows: number };
  assert.deepEqual([j.dryRun, j.partitions.map((p) => p.path), j.rows], [true, [`dt=${ymd(400)}`, `dt=${ymd(40)}`], 2]);
  assert.equal((await readJson(await reopen(wh.path, name))).length, 3, "the dry run dropped nothing");

  const run = await cli(["expire-partitions", name, "--expiration-time", "30 d", ...w]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /exp\.cli: dropped 2 partition\(s\) older than .* in snapshot 2: 2 files, 2 rows\n/);
  assert.deepEqual((await readJson(await reopen(wh.path, name))).map((x) => x["id"]), [1]);

  for (const [args, msg] of [
    [["--expiration-time", "a week"], /not a duration: 'a week'/],
    [["--expiration-time", "1 d", "--timestamp-formatter", "yyyy-MM-dd EEE"], /pattern letter 'E' is not supported/],
    [["--expiration-time", "1 d", "--timestamp-pattern", "dt"], /names no partition key/],
  ] as const) {
    const r = await cli(["expire-partitions", name, ...args, ...w]);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, msg);
  }
  const unknown = await cli(["expire-partitions", "exp.nope", "--expiration-time", "1 d", ...w]);
  assert.equal(unknown.code, 2);
  const help = await cli(["expire-partitions", "--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /natslake expire-partitions shop\.orders --expiration-time '7 d' --timestamp-formatter yyyy-MM-dd --dry-run/);
});
