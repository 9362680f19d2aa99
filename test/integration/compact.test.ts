/**
 * Compaction of append tables (src/maintenance/compact.ts) on a real filesystem, checked by natslake's reader,
 * pypaimon and Java Paimon: small files become fewer, readers see the same rows (a fixed bucket in the same order),
 * sequence ranges stay contiguous, the latest snapshot's properties are carried forward; conflicts with overwrites and
 * other compactions abort and leave no files; appends committed meanwhile stay; a dry run changes nothing; a run
 * SIGKILLed mid-rewrite or before its snapshot leaves the table as it was and the next run succeeds; manifest full compaction keeps
 * planning bounded; the CLI's summary and its refusals.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { DuckDBInstance } from "@duckdb/node-api";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTable, readJson, reopen, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { javaPaimonRead, javaRows } from "../helpers/java.ts";
import { FileStoreCommit } from "../../src/commit/file-store-commit.ts";
import { sharedParquetPool } from "../../src/codec/parquet-pool.ts";
import { parquetRowGroupRows } from "../../src/codec/parquet-stitch.ts";
import { abortCompaction, commitCompaction, compactTable, planCompaction, rewrite } from "../../src/maintenance/compact.ts";
import { CommitKind, natslakeProperties } from "../../src/format/snapshot.ts";
import { FileSource } from "../../src/format/manifest.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { planScan } from "../../src/scan/plan.ts";
import { isLakeError, ErrorKind } from "../../src/errors.ts";
import type { Table } from "../../src/table/table.ts";

const wh = tempDir();
after(() => wh.cleanup());
const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, NATSLAKE_FROM_SOURCE: "1", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    p.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** `commits` appends of `rows` rows each, ids continuing; returns the table reopened. */
async function appends(t: Table, commits: number, rows: number, first = 0, extra: (id: number) => Record<string, unknown> = () => ({})): Promise<number> {
  let id = first;
  for (let c = 0; c < commits; c++) {
    await writeRows(t, Array.from({ length: rows }, () => ({ id, who: `w${id}`, ...extra(id++) })));
  }
  return id;
}

/** natslake's rows of each bucket, in the bucket's read (sequence) order. */
async function bucketOrder(t: Table): Promise<Map<number, unknown[]>> {
  const out = new Map<number, unknown[]>();
  for (let b = 0; b < t.bucket; b++) out.set(b, (await readJson(t, { buckets: [b] })).map((r) => r["id"]));
  return out;
}

/** Live files per (partition, bucket), in sequence order. */
async function liveFiles(t: Table): Promise<Array<{ partition: unknown[]; bucket: number; files: Awaited<ReturnType<typeof planScan>>["splits"][number]["files"] }>> {
  return (await planScan(t)).splits.map((s) => ({ partition: s.partitionValues, bucket: s.bucket, files: s.files }));
}

const countFiles = async (t: Table): Promise<number> => (await liveFiles(t)).reduce((n, s) => n + s.files.length, 0);

/** Every .parquet file under the table directory. */
function parquetOnDisk(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith(".parquet")) out.push(join(d, e.name));
    }
  };
  walk(root);
  return out.sort();
}

test("compact - fixed buckets: fewer files, same rows in the same bucket order, contiguous sequence ranges, properties carried", async () => {
  const name = "c.fixed";
  // A small target so one large commit makes a file that is not small: it must end a run and stay as it is.
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING", { options: { bucket: "2", "bucket-key": "id", "target-file-size": "8kb" } });
  let next = await appends(t, 7, 20);
  next = await appends(t, 1, 6000, next);
  next = await appends(t, 6, 20, next);
  // A snapshot with natslake's stream state, as the cluster's committer writes it.
  const props = natslakeProperties({ epoch: 3, buckets: new Map([[0, { offset: 41n, ownerEpoch: 2 }], [1, { offset: 17n, ownerEpoch: 2 }]]), stream: "LAKE_c_fixed@123" });
  await new FileStoreCommit(t).commit({ commitUser: "cluster", messages: [], prepare: () => ({ properties: props, commitEmpty: true }) });
  t = await reopen(wh.path, name);
  const before = await liveFiles(t);
  const large = before.flatMap((s) => s.files).filter((f) => f.fileSize >= Math.floor(8 * 1024 * 0.7));
  assert.equal(large.length, 2, "the 6000-row commit made one large file per bucket");
  const orderBefore = await bucketOrder(t);
  const rowsBefore = sortRows(await readJson(t));
  const latestBefore = (await t.snapshots.latest())!;

  const s = await compactTable(t);
  assert.equal(s.filesBefore, 28);
  // Per bucket: 7 small, the large one, 6 small → two runs ≥ 5 files → 2 outputs; 3 files per bucket, 6 in all.
  assert.deepEqual([s.tasks, s.inputFiles, s.outputFiles, s.filesAfter], [4, 26, 4, 6]);
  t = await reopen(wh.path, name);
  const snap = (await t.snapshots.latest())!;
  assert.equal(snap.id, latestBefore.id + 1);
  assert.equal(snap.commitKind, CommitKind.COMPACT);
  assert.equal(snap.deltaRecordCount, 0);
  assert.equal(snap.totalRecordCount, latestBefore.totalRecordCount);
  assert.deepEqual(snap.properties, props, "natslake's offsets are carried forward unchanged");
  const delta = await new ManifestStore(t).readDeltaEntries(snap);
  assert.equal(delta.filter((e) => e.kind === 1).length, 26, "the inputs are DELETEd …");
  assert.equal(delta.filter((e) => e.kind === 0).length, 4, "… and the outputs ADDed in the same snapshot");

  const after = await liveFiles(t);
  assert.equal(await countFiles(t), 6);
  for (const split of after) {
    // The large file is untouched; the outputs are COMPACT files; sequence ranges follow each other without gaps.
    assert.ok(split.files.some((f) => large.some((l) => l.fileName === f.fileName)), `bucket ${split.bucket} keeps its large file`);
    for (let i = 0; i < split.files.length; i++) {
      const f = split.files[i]!;
      assert.equal(f.maxSequenceNumber - f.minSequenceNumber + 1n, BigInt(f.rowCount));
      if (i > 0) assert.equal(f.minSequenceNumber, split.files[i - 1]!.maxSequenceNumber + 1n, `bucket ${split.bucket}: contiguous sequence numbers`);
      if (!large.some((l) => l.fileName === f.fileName)) assert.equal(f.fileSource, FileSource.COMPACT);
    }
    const beforeSplit = before.find((b) => b.bucket === split.bucket)!;
    assert.equal(split.files[0]!.minSequenceNumber, beforeSplit.files[0]!.minSequenceNumber);
    assert.equal(split.files.at(-1)!.maxSequenceNumber, beforeSplit.files.at(-1)!.maxSequenceNumber);
  }
  assert.deepEqual(await bucketOrder(t), orderBefore, "each bucket reads in the same order");
  assert.deepEqual(sortRows(await readJson(t)), rowsBefore);
  const py = await paimonRead(wh.path, name, { withBucket: true });
  assert.deepEqual(sortRows(py.map(({ id, who }) => ({ id, who }))), rowsBefore);
  // pypaimon does not read a bucket's files in sequence order (its splits are not the append queue): same rows per bucket.
  for (const [b, ids] of orderBefore) assert.deepEqual(py.filter((r) => r["_bucket"] === b).map((r) => r["id"]).sort((x, y) => Number(x) - Number(y)), [...ids].sort((x, y) => Number(x) - Number(y)));

  // A write after the compaction continues each bucket's sequence, and Java (which orders a bucket's files by
  // sequence number) reads every bucket in natslake's order.
  await appends(t, 1, 10, next);
  t = await reopen(wh.path, name);
  const order = await bucketOrder(t);
  const java = javaRows((await javaPaimonRead(wh.path, [t], [{ table: name }]))[0]);
  for (const [b, ids] of order) {
    const mine = new Set(ids);
    assert.deepEqual(java.map((r) => r["id"]).filter((id) => mine.has(id)), ids, `Java reads bucket ${b} in the same order`);
  }
  // Nothing more to do: the rest are too few small files.
  const again = await compactTable(t);
  assert.equal(again.tasks, 0);
  assert.equal(again.snapshotId, null);
});

test("compact - unaware buckets, partitioned: one partition, then the rest; max.file-num caps a task", async () => {
  const name = "c.unaware";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING, dt STRING NOT NULL", { partitionKeys: ["dt"], options: { "compaction.max.file-num": "4" } });
  let id = 0;
  for (let c = 0; c < 9; c++) {
    await writeRows(t, ["a", "b"].flatMap((dt) => Array.from({ length: 5 }, () => ({ id: id++, who: "x", dt }))));
  }
  t = await reopen(wh.path, name);
  const rows = sortRows(await readJson(t));
  const dry = await compactTable(t, { partition: ["a"], dryRun: true });
  assert.deepEqual([dry.tasks, dry.inputFiles, dry.filesBefore, dry.filesAfter], [2, 8, 9, 3], "9 files of 'a' in bins of ≤ 4 files: 4 + 4, and a last bin of 1 (< min.file-num) is left");
  const s = await compactTable(t, { partition: ["a"] });
  assert.equal(s.filesAfter, s.filesBefore - s.inputFiles + s.outputFiles);
  t = await reopen(wh.path, name);
  const per = new Map((await liveFiles(t)).map((x) => [String(x.partition[0]), x.files.length]));
  assert.ok(per.get("a")! < 9, `partition a compacted (${per.get("a")} files)`);
  assert.equal(per.get("b"), 9, "partition b untouched");
  const all = await compactTable(t);
  assert.ok(all.tasks > 0);
  t = await reopen(wh.path, name);
  const per2 = new Map((await liveFiles(t)).map((x) => [String(x.partition[0]), x.files.length]));
  assert.ok(per2.get("b")! < 9, "partition b compacted too");
  assert.deepEqual(sortRows(await readJson(t)), rows);
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), rows);
});

test("compact - an overwrite that replaced the inputs makes the commit a Conflict; its outputs are deleted", async () => {
  const name = "c.conflict";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING, dt STRING NOT NULL", { partitionKeys: ["dt"], options: { bucket: "1", "bucket-key": "id" } });
  await appends(t, 6, 3, 0, () => ({ dt: "a" }));
  t = await reopen(wh.path, name);
  const plan = await planCompaction(t);
  assert.equal(plan.tasks.length, 1);
  const results = [await rewrite(t, plan.tasks[0]!)];
  assert.ok(results[0]!.writtenPaths.every((p) => existsSync(p)));
  // Meanwhile, the partition is overwritten.
  await writeRows(t, [{ id: 100, who: "new", dt: "a" }], { partition: ["a"] });
  const latest = await t.snapshots.latestId();
  await assert.rejects(commitCompaction(t, results), (e: unknown) => isLakeError(e, ErrorKind.Conflict) && /no longer live/.test(e.message));
  assert.ok(results[0]!.writtenPaths.every((p) => !existsSync(p)), "the outputs are removed");
  assert.equal(await t.snapshots.latestId(), latest, "nothing was committed");
  assert.deepEqual(await readJson(t), [{ id: 100, who: "new", dt: "a" }]);

  // Two compactions of the same files: the second to commit conflicts.
  await appends(t, 6, 3, 200, () => ({ dt: "a" }));
  t = await reopen(wh.path, name);
  const p1 = await planCompaction(t);
  const p2 = await planCompaction(t);
  const r1 = await Promise.all(p1.tasks.map((x) => rewrite(t, x)));
  const r2 = await Promise.all(p2.tasks.map((x) => rewrite(t, x)));
  assert.ok(await commitCompaction(t, r1));
  await assert.rejects(commitCompaction(t, r2), (e: unknown) => isLakeError(e, ErrorKind.Conflict));
  assert.ok(r2.flatMap((r) => r.writtenPaths).every((p) => !existsSync(p)));
  assert.ok(r1.flatMap((r) => r.writtenPaths).every((p) => existsSync(p)));
  assert.equal((await readJson(t)).length, 19);
});

test("compact - appends committed between plan and commit are kept; an overwrite across a compaction is no conflict", async () => {
  const name = "c.concurrent";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING", { options: { bucket: "1", "bucket-key": "id" } });
  await appends(t, 5, 4);
  t = await reopen(wh.path, name);
  const plan = await planCompaction(t);
  const results = await Promise.all(plan.tasks.map((x) => rewrite(t, x)));
  await appends(t, 1, 4, 20);
  const snap = await commitCompaction(t, results);
  assert.equal(snap?.commitKind, CommitKind.COMPACT);
  t = await reopen(wh.path, name);
  assert.deepEqual((await readJson(t)).map((r) => r["id"]), Array.from({ length: 24 }, (_, i) => i), "the append is kept, after the compacted rows");
  assert.equal(await countFiles(t), 2);

  // An overwrite that began before a compaction commits after it: the compaction added no row it did not see.
  await appends(t, 4, 1, 30);
  t = await reopen(wh.path, name);
  const { BatchWriter } = await import("../../src/write/batch-writer.ts");
  const ow = await BatchWriter.open(t, { overwrite: { partition: null } });
  await ow.write([{ id: 1000, who: "ow" }]);
  assert.ok((await compactTable(t)).snapshotId !== null);
  const ok = await ow.commit().then(
    () => true,
    (e: unknown) => e,
  );
  assert.equal(ok, true);
  assert.deepEqual(await readJson(await reopen(wh.path, name)), [{ id: 1000, who: "ow" }]);
});

test("compact - a dry run writes nothing; abortCompaction removes rewritten outputs", async () => {
  const name = "c.dry";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING", { options: { "write-only": "true" } });
  await appends(t, 6, 2);
  t = await reopen(wh.path, name);
  const files = parquetOnDisk(t.root);
  const latest = await t.snapshots.latestId();
  const dry = await compactTable(t, { dryRun: true });
  assert.deepEqual([dry.dryRun, dry.tasks, dry.filesBefore, dry.filesAfter, dry.snapshotId], [true, 1, 6, 1, null]);
  assert.equal(await t.snapshots.latestId(), latest);
  assert.deepEqual(parquetOnDisk(t.root), files);
  // Compaction runs off the calling thread (issue 10): every input is decoded and every output encoded in the Parquet
  // pool, small ones too (these hold 2 rows each, far below the table writer's inline threshold).
  // Copying row groups off (0): by default these small groups are the output's last run, copied as they are.
  const pool = sharedParquetPool()!;
  const before = { ...pool.completed };
  const r = await rewrite(t, (await planCompaction(t)).tasks[0]!, { rules: { copyRowGroupRows: 0 } });
  assert.deepEqual([pool.completed.decode - before.decode, pool.completed.encode - before.encode], [6, 1], "6 inputs decoded and 1 output encoded in the pool");
  assert.equal(parquetOnDisk(t.root).length, 7);
  await abortCompaction(t, [r]);
  assert.deepEqual(parquetOnDisk(t.root), files);
  const copyBefore = { ...pool.completed };
  const copied = await rewrite(t, (await planCompaction(t)).tasks[0]!);
  assert.deepEqual([pool.completed.decode - copyBefore.decode, pool.completed.encode - copyBefore.encode, copied.rowsCopied], [0, 0, 12], "12 rows in small groups copied, nothing decoded or encoded");
  await abortCompaction(t, [copied]);
  assert.deepEqual(parquetOnDisk(t.root), files);
  // write-only = true does not stop an explicit compaction.
  assert.equal((await compactTable(t)).filesAfter, 1);
});

// Mid-rewrite (after the first task's output), after every output, right before the snapshot: outputs left behind.
for (const [point, outputsLeft] of [["compact.rewrite.after-output", 1], ["compact.after-rewrite", 2], ["commit.before-snapshot", 2]] as const) {
  test(`compact - SIGKILL at ${point}: same rows for natslake and pypaimon, orphans left, the next run succeeds`, async () => {
    const name = `c.crash_${point.replace(/[.-]/g, "_")}`;
    let t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING", { options: { bucket: "2", "bucket-key": "id" } });
    await appends(t, 6, 10);
    t = await reopen(wh.path, name);
    const rows = await readJson(t);
    const latest = await t.snapshots.latestId();
    const files = parquetOnDisk(t.root);
    const r = await cli(["compact", name, "--warehouse", wh.path], { FAILPOINTS: `${point}:kill` });
    assert.equal(r.signal, "SIGKILL", `the compaction dies at ${point}: ${r.stderr}`);
    t = await reopen(wh.path, name);
    assert.equal(await t.snapshots.latestId(), latest);
    assert.deepEqual(await readJson(t), rows);
    assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(rows));
    const orphans = parquetOnDisk(t.root).filter((f) => !files.includes(f));
    assert.equal(orphans.length, outputsLeft, "the outputs the killed run wrote (one per bucket's task) are orphans");
    const ok = await cli(["compact", name, "--warehouse", wh.path, "--json"]);
    assert.equal(ok.code, 0, ok.stderr);
    const s = JSON.parse(ok.stdout) as { filesBefore: number; filesAfter: number; snapshotId: number };
    assert.deepEqual([s.filesBefore, s.filesAfter, s.snapshotId], [12, 2, latest! + 1]);
    t = await reopen(wh.path, name);
    assert.deepEqual(await readJson(t), rows);
    assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(rows));
  });
}

test("compact - CLI: an overwrite while the compaction runs is a conflict (exit 3), its outputs removed", async () => {
  const name = "c.cli_conflict";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING", { options: { bucket: "1", "bucket-key": "id" } });
  await appends(t, 5, 3);
  t = await reopen(wh.path, name);
  const files = parquetOnDisk(t.root);
  // The compaction pauses after writing its outputs; the overwrite lands meanwhile.
  const run = cli(["compact", name, "--warehouse", wh.path], { FAILPOINTS: "compact.after-rewrite:sleep(4000)" });
  const deadline = Date.now() + 30_000;
  while (parquetOnDisk(t.root).length === files.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  assert.equal(parquetOnDisk(t.root).length, files.length + 1, "the compaction wrote its output");
  await writeRows(t, [{ id: 99, who: "ow" }], { partition: null });
  const r = await run;
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /^error: COMPACT commit to c\.cli_conflict conflicts with snapshot 6: file .* no longer live/);
  const left = parquetOnDisk(t.root).filter((f) => !files.includes(f));
  assert.equal(left.length, 1, "only the overwrite's file is new: the compaction's output is removed");
  assert.deepEqual(await readJson(await reopen(wh.path, name)), [{ id: 99, who: "ow" }]);
});

test("compact - manifest full compaction folds ADD/DELETE pairs: planning reads a bounded number of entries", async () => {
  const rounds = 12;
  const entriesRead = async (t: Table): Promise<number> => {
    const s = (await t.snapshots.latest())!;
    const store = new ManifestStore(t);
    return (await store.readEntries(await store.allManifests(s))).length;
  };
  const grow = async (name: string, threshold: string): Promise<number[]> => {
    let t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING", {
      options: { bucket: "1", "bucket-key": "id", "manifest.target-file-size": "2kb", "manifest.merge-min-count": "3", "manifest.full-compaction-threshold-size": threshold },
    });
    const seen: number[] = [];
    let id = 0;
    for (let r = 0; r < rounds; r++) {
      id = await appends(t, 5, 1, id);
      t = await reopen(wh.path, name);
      await compactTable(t);
      seen.push(await entriesRead(t));
    }
    assert.equal((await readJson(t)).length, rounds * 5);
    assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(await readJson(t)));
    return seen;
  };
  const bounded = await grow("c.mf_full", "4kb");
  const unbounded = await grow("c.mf_none", "1 gb");
  // With full compaction: the live files (rounds outputs at most) plus the entries of the few commits since the
  // last full compaction; without, every DELETE and the ADD it cancels stay once their manifest is full.
  assert.ok(Math.max(...bounded) <= rounds + 16, `bounded: ${bounded.join(",")}`);
  assert.ok(bounded.at(-1)! < unbounded.at(-1)! / 2, `full compaction reads fewer entries: ${bounded.at(-1)} vs ${unbounded.at(-1)}`);
  assert.ok(unbounded.at(-1)! > unbounded[2]!, `without it, entries grow with the table's age: ${unbounded.join(",")}`);
});

test("compact - CLI: summary, dry run and refusals (exit 2)", async () => {
  const name = "c.cli";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING, dt STRING NOT NULL", { partitionKeys: ["dt"], options: { bucket: "1", "bucket-key": "id" } });
  await appends(t, 5, 4, 0, () => ({ dt: "d1" }));
  const dry = await cli(["compact", name, "--warehouse", wh.path, "--partition", "dt=d1", "--dry-run"]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, /would compact 5 files in 1 task\(s\): 5 → 1 files, 20 rows rewritten; dry run/);
  const run = await cli(["compact", name, "--warehouse", wh.path]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /compacted 5 files into 1 in 1 task\(s\): 5 → 1 files, .* snapshot 6$/m);
  assert.equal(run.stderr, "", "no progress output without a terminal");
  // On a terminal (a pty from script(1)) a progress bar counts the tasks.
  await appends(t, 5, 4, 100, () => ({ dt: "d2" }));
  const tty = await new Promise<string>((resolve) => {
    const cmd = [process.execPath, BIN, "compact", name, "--warehouse", wh.path].map((a) => `'${a}'`).join(" ");
    const p = spawn("script", ["-qec", cmd, "/dev/null"], { env: { ...process.env, NATSLAKE_FROM_SOURCE: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    p.stdout.on("data", (b: Buffer) => (text += b.toString()));
    p.on("close", () => resolve(text));
  });
  assert.match(tty, /compacting \|.*\| 1\/1 tasks \| 5 files/);
  assert.match(tty, /compacted 5 files into 1 in 1 task\(s\): 6 → 2 files/);
  await createTable(wh.path, "c.cli_flat", "id BIGINT NOT NULL");
  const none = await cli(["compact", name, "--warehouse", wh.path]);
  assert.match(none.stdout, /nothing to compact \(2 files/);
  const bad: Array<[string[], RegExp]> = [
    [["compact", name, "--warehouse", wh.path, "--partition", "nope=1"], /unknown partition key 'nope'/],
    [["compact", name, "--warehouse", wh.path, "--bucket", "x"], /--bucket must be a non-negative integer/],
    [["compact", name, "--warehouse", wh.path, "--bucket", "1"], /has buckets 0\.\.0/],
    [["compact", "c.missing", "--warehouse", wh.path], /does not exist/],
    [["compact", name, "--warehouse", join(wh.path, "nowhere")], /warehouse .* does not exist/],
    [["compact", "c.cli_flat", "--warehouse", wh.path, "--partition", "dt=1"], /not partitioned/],
    [["compact", "c.cli_flat", "--warehouse", wh.path, "--bucket", "0"], /no fixed buckets/],
    [["compact", name, "--warehouse", wh.path, "--frobnicate"], /unknown option/],
  ];
  for (const [args, re] of bad) {
    const r = await cli(args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.doesNotMatch(r.stderr, /\n\s+at /, "one line, no stack");
  }
});

test("compact - files of an older schema come out in the current one; files pypaimon wrote are compacted too", async () => {
  const name = "c.evolved";
  let t = await createTable(wh.path, name, "id BIGINT NOT NULL, who STRING", { options: { bucket: "1", "bucket-key": "id" } });
  await appends(t, 3, 4);
  const { Catalog, parseIdentifier } = await import("../../src/table/catalog.ts");
  const { parseColumnList } = await import("../../src/format/data-types.ts");
  await new Catalog(wh.path).addColumns(parseIdentifier(name), parseColumnList("note STRING").map((f) => ({ name: f.name, type: f.type })));
  t = await reopen(wh.path, name);
  await appends(t, 3, 4, 12, (id) => ({ note: `n${id}` }));
  t = await reopen(wh.path, name);
  const rows = await readJson(t);
  assert.equal(rows[0]!["note"], null);
  const s = await compactTable(t);
  assert.equal(s.filesAfter, 1);
  t = await reopen(wh.path, name);
  const [split] = (await planScan(t)).splits;
  assert.equal(split!.files[0]!.schemaId, t.schema.id, "the output is written in the current schema");
  assert.deepEqual(await readJson(t), rows, "same rows, same order; old rows read the new column as null");
  assert.deepEqual(sortRows(await paimonRead(wh.path, name)), sortRows(rows));

  // A handle opened before another column was added never rewrites files of the newer schema (it would drop the
  // column): they end the run like large files.
  const stale = t;
  await new Catalog(wh.path).addColumns(parseIdentifier(name), parseColumnList("extra INT").map((f) => ({ name: f.name, type: f.type })));
  t = await reopen(wh.path, name);
  await appends(t, 5, 2, 100, (id) => ({ note: `m${id}`, extra: id }));
  const withExtra = await readJson(await reopen(wh.path, name));
  assert.equal((await compactTable(stale)).tasks, 0, "the stale handle finds nothing it may compact");
  assert.deepEqual(await readJson(await reopen(wh.path, name)), withExtra);
  const fresh = await compactTable(await reopen(wh.path, name));
  assert.deepEqual([fresh.filesBefore, fresh.filesAfter], [6, 1]);
  assert.deepEqual(await readJson(await reopen(wh.path, name)), withExtra, "the fresh handle keeps the new column's values");

  // A fixed-bucket table written by pypaimon (its DataFileMeta, its sequence numbers): natslake's DELETEs must match
  // pypaimon's ADDs exactly, or the commit would conflict (or both copies would be live).
  const py = "c.bypy";
  const { paimonWrite } = await import("../helpers/python.ts");
  const batches = Array.from({ length: 6 }, (_, b) => Array.from({ length: 5 }, (_, k) => ({ id: b * 5 + k, who: `p${b}` })));
  await paimonWrite({ warehouse: wh.path, table: py, create: { columns: [["id", "BIGINT NOT NULL"], ["who", "STRING"]], options: { bucket: "1", "bucket-key": "id" } }, batches, overwrite: null });
  let pt = await reopen(wh.path, py);
  const pyRows = sortRows(await readJson(pt));
  const ps = await compactTable(pt);
  assert.deepEqual([ps.filesBefore, ps.filesAfter], [6, 1]);
  pt = await reopen(wh.path, py);
  assert.deepEqual(sortRows(await readJson(pt)), pyRows);
  assert.deepEqual(sortRows(await paimonRead(wh.path, py)), pyRows);
});

test("compact - large row groups are copied byte for byte, small ones merged; same rows, order and statistics as a full rewrite; pypaimon, Java and DuckDB read it", async () => {
  // Two tables fed the same commits: one copies row groups of ≥ 300 rows, the other rewrites every row (0).
  const columns = "id BIGINT NOT NULL, who STRING, d DOUBLE, note STRING";
  const options = (copy: string): Record<string, string> => ({ bucket: "1", "bucket-key": "id", "natslake.compaction.copy-row-group-rows": copy });
  const names = ["c.copy", "c.nocopy"] as const;
  for (const [k, name] of names.entries()) await createTable(wh.path, name, columns, { options: options(k === 0 ? "300" : "0") });
  // Values that make merging statistics interesting: a NaN (no bounds in that file), long strings (truncated
  // bounds), nulls; the first rounds leave a stitched file with a small tail for the next round to merge.
  const row = (id: number): Record<string, unknown> => ({
    id,
    who: `w${id}`,
    d: id === 777 ? Number.NaN : id % 11 === 0 ? null : id / 3,
    note: id % 5 === 0 ? null : `${"x".repeat(id % 40)}-${id}`,
  });
  let id = 0;
  const feed = async (sizes: number[]): Promise<void> => {
    for (const n of sizes) {
      const rows = Array.from({ length: n }, () => row(id++));
      for (const name of names) await writeRows(await reopen(wh.path, name), rows);
    }
  };
  await feed([400, 20, 20, 500, 20]);
  const first = await compactTable(await reopen(wh.path, names[0]));
  assert.equal(first.filesAfter, 1);
  // Copied: the 400 and 500 groups, and the last 20 alone (encoding one group again gives the same group).
  assert.equal(first.rowsCopied, 920);
  assert.equal((await compactTable(await reopen(wh.path, names[1]))).rowsCopied, 0);
  // The output's last run (the 20-row tail and what the next rounds add) is copied as it is while it is below 300
  // rows, but for its newest groups below 300 / 4 or 300 / 16 once they make one such group; at 300 rows it is
  // encoded whole.
  const rowGroupsOf = async (name: string): Promise<number[]> => {
    const t = await reopen(wh.path, name);
    return parquetRowGroupRows(new Uint8Array(readFileSync(t.paths.dataFilePath("", 0, (await liveFiles(t))[0]!.files[0]!.fileName))));
  };
  let decodes = 0;
  const round = async (sizes: number[]): Promise<number> => {
    await feed(sizes);
    const before = sharedParquetPool()!.completed.decode;
    const copiedRows = (await compactTable(await reopen(wh.path, names[0]))).rowsCopied;
    decodes = sharedParquetPool()!.completed.decode - before;
    await compactTable(await reopen(wh.path, names[1]));
    return copiedRows;
  };
  assert.equal(await round([80, 90, 10, 5, 2]), 1147, "everything copied: the newest groups below 18.75 make 17");
  assert.deepEqual(await rowGroupsOf(names[0]), [400, 40, 500, 20, 80, 90, 10, 5, 2]);
  assert.equal(await round([3, 4, 2, 6]), 1130, "the newest groups below 18.75 make 32: encoded into one");
  assert.equal(decodes, 1, "the groups of 5 inputs decoded in one call (copied into a file of their own)");
  assert.deepEqual(await rowGroupsOf(names[0]), [400, 40, 500, 20, 80, 90, 32]);
  assert.equal(await round([30, 20, 5, 8]), 1130, "the newest groups below 75 make 95: encoded into one");
  assert.deepEqual(await rowGroupsOf(names[0]), [400, 40, 500, 20, 80, 90, 95]);
  assert.equal(await round([10, 5, 5, 5]), 940, "the last run reached 300 rows: encoded whole");

  const [copied, rewritten] = await Promise.all(names.map(async (name) => (await liveFiles(await reopen(wh.path, name)))[0]!.files));
  assert.equal(copied!.length, 1);
  assert.equal(rewritten!.length, 1);
  const out = copied![0]!;
  const t = await reopen(wh.path, names[0]);
  const path = t.paths.dataFilePath("", 0, out.fileName);
  const bytes = new Uint8Array(readFileSync(path));
  // The large groups (400, 500) kept their size; the small rows between and after them were merged into new groups:
  // 20+20 between, then the first round's 20-row tail with every later round's rows.
  assert.deepEqual(parquetRowGroupRows(bytes), [400, 40, 500, 310]);
  assert.equal(out.fileSource, FileSource.COMPACT);
  assert.equal(out.rowCount, 1250);
  assert.equal(out.maxSequenceNumber - out.minSequenceNumber + 1n, 1250n);
  // Same rows in the same order as the table that rewrote everything, and the same statistics (merged from the
  // inputs' on one side, computed from the values on the other; NaN and truncated strings included).
  assert.deepEqual(await readJson(t), await readJson(await reopen(wh.path, names[1])));
  assert.deepEqual(out.valueStats, rewritten![0]!.valueStats);
  assert.deepEqual(out.valueStatsCols, rewritten![0]!.valueStatsCols);
  const rows = await readJson(t);
  assert.deepEqual(rows.map((r) => r["id"]), Array.from({ length: 1250 }, (_, k) => k), "the bucket reads in write order");
  const py = await paimonRead(wh.path, names[0]);
  assert.deepEqual(py.map((r) => r["id"]).sort((a, b) => Number(a) - Number(b)), rows.map((r) => r["id"]), "pypaimon reads every row");
  assert.deepEqual(py.find((r) => r["id"] === 3)?.["note"], rows[3]!["note"]);
  const java = javaRows((await javaPaimonRead(wh.path, [t], [{ table: names[0] }]))[0]);
  assert.deepEqual(java.map((r) => r["id"]), rows.map((r) => r["id"]), "Java reads every row, in sequence order");
  const inst = await DuckDBInstance.create(":memory:");
  const conn = await inst.connect();
  try {
    const duck = (await conn.runAndReadAll(`select count(*)::INTEGER as n, sum(id)::BIGINT as s, count(note)::INTEGER as notes from read_parquet('${path}')`)).getRowObjectsJS()[0]!;
    assert.deepEqual(duck, { n: 1250, s: BigInt((1249 * 1250) / 2), notes: rows.filter((r) => r["note"] !== null).length });
  } finally {
    conn.closeSync();
    inst.closeSync();
  }
});
