/**
 * A damaged snapshot file (docs/operations/runbook.md, "A corrupted snapshot"): every command that reads it says which file is
 * damaged and how to recover, in one line (no stack); `rollback --to-snapshot <last good>` recovers the table —
 * refused without --force when the damaged one is the latest (who committed it cannot be checked) — and natslake and
 * pypaimon then read the rows of the target; the files only the damaged snapshot added go with remove-orphans, and
 * writing goes on. A damaged snapshot in the middle does not stop reads of the latest, and rolling back past it works.
 * A damaged middle snapshot can also be expired (orphan cleanup refuses to run while it is there). A leader that
 * starts on a damaged latest snapshot fails every commit round (`natslake_commit_failures_total`, the P0 alert) and
 * says it is blocked by it (`natslake_commit_blocked{reason="damaged-snapshot"}` 1, then 0) until `rollback --force`
 * to the last good one; then rows published since land, exactly once — and the rows only
 * the damaged snapshot held are gone (their stream messages were purged when it landed).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createTable, readJson, reopen, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { freePort } from "../../cluster/local/servers.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

function cli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    p.on("exit", (status) => resolve({ status, stdout, stderr }));
  });
}

/**
 * Node n1 leads a new one-bucket table; each batch of ids is published and waited for until visible; then n1 stops.
 * Returns the producer (and a `publish` that waits for its acks only) for what comes next.
 */
async function landedThenStopped(c: Awaited<ReturnType<typeof startCluster>>, name: string, batches: number[][]): Promise<{ catalog: Catalog; producer: Awaited<ReturnType<typeof producerWhenRegistered>>; publish: (ids: number[]) => Promise<void> }> {
  c.startNode("n1");
  const catalog = new Catalog(c.warehouse);
  await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "1", "bucket-key": "id" } });
  const producer = await producerWhenRegistered(c.nc, name);
  const publish = async (ids: number[]): Promise<void> => {
    for (const id of ids) void producer.write({ id });
    for (const o of await producer.flush()) assert.equal(o.status, "ok", JSON.stringify(o));
  };
  for (const ids of batches) {
    await publish(ids);
    await producer.waitVisible(producer.token(), 60_000);
  }
  c.signal("n1", "SIGTERM");
  assert.equal(await c.waitExit("n1", 60_000), 0);
  return { catalog, producer, publish };
}

/** natslake_commit_blocked of the table for `reason` on the node's /metrics, or null while it has no such series. */
async function commitBlocked(port: number, table: string, reason: string): Promise<number | null> {
  const m = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = m.split("\n").find((l) => l.startsWith("natslake_commit_blocked{") && l.includes(`table="${table}"`) && l.includes(`reason="${reason}"`));
  return line === undefined ? null : Number(line.slice(line.lastIndexOf(" ") + 1));
}

test("damaged snapshot - a clear error naming the file; rollback --force to the last good one recovers; orphans removed; writes go on", { timeout: 180_000 }, async () => {
  const dir = tempDir();
  try {
    const wh = dir.path;
    const t = await createTable(wh, "d.latest", "id BIGINT NOT NULL");
    for (const id of [1, 2, 3]) await writeRows(t, [{ id }]);
    const path = `${t.root}/snapshot/snapshot-3`;
    writeFileSync(path, '{"version": 3, "id": 3, "sch');
    const w = ["--warehouse", wh];
    for (const args of [["snapshots", "d.latest"], ["read", "d.latest"]]) {
      const r = await cli([...args, ...w]);
      assert.equal(r.status, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`^error: ${path.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} is damaged: not a readable snapshot \\(.*\\); restore the file from a backup, or roll the table back to the last good snapshot \\(natslake rollback <table> --to-snapshot 2 --force\\)\\n$`));
    }
    const refused = await cli(["rollback", "d.latest", "--to-snapshot", "2", ...w]);
    assert.equal(refused.status, 3, refused.stderr);
    assert.match(refused.stderr, /^error: d\.latest: the latest snapshot 3 is damaged, so who committed it cannot be checked: pass --force/);
    const rolled = await cli(["rollback", "d.latest", "--to-snapshot", "2", "--force", ...w]);
    assert.equal(rolled.status, 0, rolled.stderr);
    assert.match(rolled.stdout, /^d\.latest: rolled back from snapshot 3 to 2; deleted snapshots 3\.\.3 \(1\), 0 tags, 0 data files and 0 manifest files\n {2}damaged snapshots 3: /);
    assert.deepEqual(sortRows(await readJson(await reopen(wh, "d.latest"))), [{ id: 1 }, { id: 2 }]);
    assert.deepEqual(sortRows(await paimonRead(wh, "d.latest")), [{ id: 1 }, { id: 2 }], "pypaimon reads snapshot 2's rows");
    // Snapshot 3's data file and manifests are referenced by nothing now.
    const orphans = await cli(["remove-orphans", "d.latest", "--older-than", "0 s", "--json", ...w]);
    assert.equal(orphans.status, 0, orphans.stderr);
    const removed = JSON.parse(orphans.stdout) as { byKind: { data: { files: number }; manifest: { files: number } } };
    assert.deepEqual([removed.byKind.data.files, removed.byKind.manifest.files], [1, 3], orphans.stdout);
    await writeRows(await reopen(wh, "d.latest"), [{ id: 4 }]);
    assert.deepEqual(sortRows(await paimonRead(wh, "d.latest")), [{ id: 1 }, { id: 2 }, { id: 4 }], "writes go on from snapshot 2");

    // A damaged snapshot in the middle: the latest still reads; a rollback past it works without --force.
    const m = await createTable(wh, "d.middle", "id BIGINT NOT NULL");
    for (const id of [1, 2, 3]) await writeRows(m, [{ id }]);
    writeFileSync(`${m.root}/snapshot/snapshot-2`, "");
    const read = await cli(["read", "d.middle", "--format", "jsonl", ...w]);
    assert.equal(read.status, 0, read.stderr);
    assert.equal(read.stdout, '{"id":1}\n{"id":2}\n{"id":3}\n');
    const back = await cli(["rollback", "d.middle", "--to-snapshot", "1", "--json", ...w]);
    assert.equal(back.status, 0, back.stderr);
    const r = JSON.parse(back.stdout) as { snapshotsDeleted: number[]; damagedSnapshots: number[]; dataFilesDeleted: number };
    assert.deepEqual([r.snapshotsDeleted, r.damagedSnapshots, r.dataFilesDeleted], [[2, 3], [2], 2], "the files of 2 and 3, known from 3's live files");
    assert.deepEqual(sortRows(await paimonRead(wh, "d.middle")), [{ id: 1 }]);

    // …or expired: nothing of the latest is lost; orphan cleanup, refused while it is there, works after.
    const e = await createTable(wh, "d.expire", "id BIGINT NOT NULL");
    for (const id of [1, 2, 3, 4]) await writeRows(e, [{ id }]);
    writeFileSync(`${e.root}/snapshot/snapshot-2`, "not json");
    const blocked = await cli(["remove-orphans", "d.expire", "--older-than", "0 s", ...w]);
    assert.equal(blocked.status, 2);
    assert.match(blocked.stderr, /snapshot-2 is damaged/);
    const expired = await cli(["expire-snapshots", "d.expire", "--retain-min", "2", "--older-than", "0 s", ...w]);
    assert.equal(expired.status, 0, expired.stderr);
    assert.match(expired.stdout, /^d\.expire: expired snapshots 1\.\.2 \(2\); .*earliest snapshot now 3\n {2}damaged snapshots 2 expired: /);
    const cleaned = await cli(["remove-orphans", "d.expire", "--older-than", "0 s", ...w]);
    assert.equal(cleaned.status, 0, cleaned.stderr);
    assert.deepEqual(sortRows(await paimonRead(wh, "d.expire")), [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }]);
  } finally {
    dir.cleanup();
  }
});

test("damaged latest snapshot met by a starting leader - every commit round fails (the P0 counter) until rollback --force; then new rows land exactly once", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "d.cluster";
      const { catalog, producer, publish } = await landedThenStopped(c, name, [[1, 2], [3, 4]]);
      // The file of the latest snapshot is damaged while the node is stopped; rows keep arriving in the stream.
      const t = await catalog.getTable(parseIdentifier(name));
      const latest = (await t.snapshots.latestId())!;
      const good = latest - 1;
      assert.ok(good >= 1);
      const rowsOfGood = new Set((await readJson(t, { snapshotId: good })).map((r) => Number(r["id"])));
      writeFileSync(`${t.root}/snapshot/snapshot-${latest}`, "{");
      await publish([5, 6]);
      // A new leader reads the chain from disk: every round fails on the damaged snapshot, counted for the P0 alert.
      const port = await freePort();
      c.startNode("n2", ["--metrics-port", String(port)]);
      const failures = async (): Promise<number> => {
        const m = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        return Number(/natslake_commit_failures_total\{[^}]*table="d\.cluster"[^}]*\} (\d+)/.exec(m)?.[1] ?? 0);
      };
      await waitFor("commit rounds failing on the damaged snapshot", async () => ((await failures().catch(() => 0)) > 1 ? true : undefined), 90_000, 500);
      assert.match(c.logs("n2"), /snapshot-\d+ is damaged: not a readable snapshot/);
      // …and blocked for that reason (NatslakeCommitBlocked), until the rollback.
      const blocked = (): Promise<number | null> => commitBlocked(port, name, "damaged-snapshot");
      assert.equal(await blocked(), 1);
      assert.match(c.logs("n2"), /won the lease but the table is damaged: refusing to commit until it is repaired/);
      const rolled = await cli(["rollback", name, "--to-snapshot", String(good), "--force", "--warehouse", c.warehouse]);
      assert.equal(rolled.status, 0, rolled.stderr);
      const ids = async (): Promise<number[]> => (await readJson(await reopen(c.warehouse, name))).map((r) => Number(r["id"])).sort((a, b) => a - b);
      const landed = await waitFor("rows published since landed", async () => {
        const now = await ids();
        return now.includes(5) && now.includes(6) ? now : undefined;
      }, 90_000, 500);
      assert.deepEqual(landed, [...new Set(landed)], "nothing twice");
      await waitFor("the block cleared", async () => ((await blocked()) === 0 ? true : undefined), 30_000, 500);
      // What is missing is exactly what only the damaged snapshot held (its messages were purged when it landed).
      const missing = [1, 2, 3, 4, 5, 6].filter((i) => !landed.includes(i));
      for (const i of missing) assert.ok(!rowsOfGood.has(i) && i <= 4, `row ${i} is missing but was not only in the damaged snapshot`);
      assert.deepEqual(sortRows(await paimonRead(c.warehouse, name)).map((r) => Number(r["id"])).sort((a, b) => a - b), landed, "pypaimon reads the same");
      await producer.close();
    }, 40);
  } finally {
    await c.stop();
  }
});

test("damaged manifest met by a starting leader - it refuses to lead and commit on top (natslake_commit_blocked{reason=damaged-manifest}); restoring the file from a backup unblocks it and the rows land", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "d.manifest";
      const { catalog, producer, publish } = await landedThenStopped(c, name, [[1, 2]]);
      // A manifest of the latest snapshot is damaged (kept aside, as a backup would be).
      const t = await catalog.getTable(parseIdentifier(name));
      const latest = (await t.snapshots.latestId())!;
      const metas = await new ManifestStore(t).allManifests((await t.snapshots.latest())!);
      const manifest = t.paths.manifestPath(metas[metas.length - 1]!.fileName);
      const backup = readFileSync(manifest);
      writeFileSync(manifest, backup.subarray(0, 12));
      await publish([3, 4]);
      const port = await freePort();
      c.startNode("n2", ["--metrics-port", String(port)]);
      await waitFor("the leader blocked by the damaged manifest", async () => ((await commitBlocked(port, name, "damaged-manifest").catch(() => null)) === 1 ? true : undefined), 90_000, 500);
      // It does not lead while it cannot read the latest snapshot (its writers cannot open the bucket either).
      const refusal = c.logs("n2").split("\n").find((l) => l.includes("the table is damaged: refusing to commit until it is repaired"));
      assert.ok(refusal?.includes(`${manifest} is damaged: not a readable manifest`), refusal);
      assert.equal(await (await reopen(c.warehouse, name)).snapshots.latestId(), latest, "nothing committed on top of it");
      writeFileSync(manifest, backup);
      const landed = await waitFor("rows published meanwhile landed", async () => {
        const ids = (await readJson(await reopen(c.warehouse, name))).map((r) => Number(r["id"])).sort((a, b) => a - b);
        return ids.length >= 4 ? ids : undefined;
      }, 90_000, 500);
      assert.deepEqual(landed, [1, 2, 3, 4]);
      await waitFor("the block cleared", async () => ((await commitBlocked(port, name, "damaged-manifest")) === 0 ? true : undefined), 30_000, 500);
      await producer.close();
    }, 40);
  } finally {
    await c.stop();
  }
});
