/**
 * Maintenance commands against a table a running cluster serves (`--nats`): compact, expire-snapshots and
 * remove-orphans go to the table's leader (the node holding its lease, named in the reply and in its own log) and
 * run there, with the same output as the local path; rows read back whole by natslake and pypaimon. A table the
 * cluster does not serve runs on the warehouse; a bad request is refused with a clear message; no leader answering
 * (every node paused, or none running) fails with a clear message and exit 1 instead of running beside the cluster.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Kvm } from "@nats-io/kv";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { paimonRead } from "../helpers/python.ts";
import { createTable, reopen } from "../helpers/tables.ts";
import { readRows } from "../../src/scan/read.ts";
import type { MaintenanceReply, TableAssignment } from "../../actors/wire/messages.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const NAME = "mcli.events";
const ROWS = 400;
let c: TestCluster;

function nl(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    p.once("exit", (status) => resolve({ status, stdout, stderr }));
  });
}

async function leaderOf(table: string): Promise<string> {
  return waitFor(`${table}'s leader`, async () => {
    const e = await (await new Kvm(c.nc).open("lake_assign")).get(table);
    return e === null ? undefined : (e.json() as TableAssignment).leader;
  });
}

async function ids(): Promise<number[]> {
  const out: number[] = [];
  for await (const r of readRows(await reopen(c.warehouse, NAME))) out.push(Number(r["id"]));
  return out.sort((a, b) => a - b);
}

before(async () => {
  c = await startCluster({ nodes: 2 });
  // Retention far beyond the test and write-only (no writer-side compaction, no scheduled expiration): what goes is what the
  // requests removed.
  await createTable(c.warehouse, NAME, "id BIGINT NOT NULL, msg STRING", { options: { bucket: "2", "bucket-key": "id", "snapshot.num-retained.min": "100", "snapshot.time-retained": "1 h", "write-only": "true" } });
  const producer = await producerWhenRegistered(c.nc, NAME);
  // Ten rounds, each visible before the next: ten snapshots, each bucket ten small files.
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < ROWS / 10; i++) void producer.write({ id: round * 1000 + i, msg: `m${i}` });
    await producer.flush();
    await producer.waitVisible(producer.token(), 30_000);
  }
  await producer.close();
});
after(async () => {
  await c.stop();
});

const expected = (): number[] => Array.from({ length: 10 }, (_, r) => Array.from({ length: ROWS / 10 }, (_, i) => r * 1000 + i)).flat().sort((a, b) => a - b);

test("maintenance cli --nats - expire-snapshots runs on the table's leader, prints what the local path prints, and the table reads back whole", { timeout: 120_000 }, async () => {
  await withNodeLogsOnFailure(c, async () => {
    const leader = await leaderOf(NAME);
    const args = ["expire-snapshots", NAME, "--retain-min", "3", "--older-than", "0 s"];
    // A dry run on either path: the same summary, byte for byte (text and JSON), and nothing deleted.
    for (const extra of [["--dry-run"], ["--dry-run", "--json"]]) {
      const local = await nl([...args, ...extra, "--warehouse", c.warehouse]);
      const remote = await nl([...args, ...extra, "--nats", c.nats.url]);
      assert.equal(local.status, 0, local.stderr);
      assert.equal(remote.status, 0, remote.stderr);
      assert.equal(remote.stdout, local.stdout, "the same output whichever path ran");
      assert.match(remote.stderr, new RegExp(`expire-snapshots of ${NAME} ran on ${leader}, the table's leader`));
    }
    const before = (await (await reopen(c.warehouse, NAME)).snapshots.listIds()).length;
    const r = await nl([...args, "--json", "--nats", c.nats.url]);
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { table: string; from: number; to: number; snapshotsDeleted: number; dryRun: boolean };
    assert.equal(out.table, NAME);
    assert.equal(out.dryRun, false);
    assert.ok(out.snapshotsDeleted >= before - 3 && out.snapshotsDeleted > 0, `expired ${out.snapshotsDeleted} of ${before}`);
    const t = await reopen(c.warehouse, NAME);
    assert.equal(await t.snapshots.earliestId(), out.to);
    assert.match(c.logs(leader), /"task":"expire-snapshots".*"msg":"maintenance request done"/, "the leader ran it");
    const other = [...c.nodes.keys()].find((n) => n !== leader)!;
    assert.doesNotMatch(c.logs(other), /maintenance request (started|done)/, "the standby ran nothing");
    assert.deepEqual(await ids(), expected());
    assert.deepEqual((await paimonRead(c.warehouse, NAME)).map((x) => Number(x["id"])).sort((a, b) => a - b), expected());
  });
});

test("maintenance cli --nats - remove-orphans --dry-run lists the old orphan through the leader and deletes nothing; the real run deletes it", { timeout: 120_000 }, async () => {
  await withNodeLogsOnFailure(c, async () => {
    const leader = await leaderOf(NAME);
    const t = await reopen(c.warehouse, NAME);
    const orphan = join(t.root, "bucket-0", "data-00000000-0000-0000-0000-000000000000-0.parquet");
    writeFileSync(orphan, "not referenced by any snapshot");
    const old = (Date.now() - 3 * 86_400_000) / 1000;
    utimesSync(orphan, old, old);
    const dry = await nl(["remove-orphans", NAME, "--dry-run", "--nats", c.nats.url]);
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(dry.stdout, /would delete data bucket-0\/data-00000000-0000-0000-0000-000000000000-0\.parquet \(30 B\)/);
    assert.match(dry.stdout, new RegExp(`${NAME.replace(".", "\\.")}: would delete 1 orphan files, 30 B: 1 data \\(30 B\\)`));
    assert.match(dry.stderr, new RegExp(`remove-orphans of ${NAME} ran on ${leader}`));
    assert.ok(existsSync(orphan), "a dry run deletes nothing");
    assert.match(c.logs(leader), /"task":"remove-orphans".*"msg":"maintenance request done"/);
    const real = await nl(["remove-orphans", NAME, "--json", "--nats", c.nats.url]);
    assert.equal(real.status, 0, real.stderr);
    const r = JSON.parse(real.stdout) as { table: string; totalFiles: number; files: Array<{ path: string }> };
    assert.equal(r.table, NAME);
    assert.deepEqual(r.files.map((f) => f.path), ["bucket-0/data-00000000-0000-0000-0000-000000000000-0.parquet"]);
    assert.ok(!existsSync(orphan));
    assert.deepEqual(await ids(), expected());
  });
});

test("maintenance cli --nats - a result larger than one NATS message (thousands of orphans listed) arrives whole", { timeout: 120_000 }, async () => {
  await withNodeLogsOnFailure(c, async () => {
    const t = await reopen(c.warehouse, NAME);
    const dir = join(t.root, "bucket-1");
    const old = (Date.now() - 3 * 86_400_000) / 1000;
    const names: string[] = [];
    for (let i = 0; i < 9000; i++) {
      const name = `data-${String(i).padStart(8, "0")}-aaaa-bbbb-cccc-${"d".repeat(40)}-0.parquet`;
      const path = join(dir, name);
      writeFileSync(path, "x");
      utimesSync(path, old, old);
      names.push(`bucket-1/${name}`);
    }
    const dry = await nl(["remove-orphans", NAME, "--dry-run", "--json", "--nats", c.nats.url]);
    assert.equal(dry.status, 0, dry.stderr);
    assert.ok(dry.stdout.length > 1024 * 1024, `the result is ${dry.stdout.length} bytes, more than max_payload`);
    const r = JSON.parse(dry.stdout) as { totalFiles: number; files: Array<{ path: string }> };
    assert.equal(r.totalFiles, 9000);
    assert.deepEqual(r.files.map((f) => f.path), names);
    const real = await nl(["remove-orphans", NAME, "--nats", c.nats.url]);
    assert.equal(real.status, 0, real.stderr);
    assert.match(real.stdout, /deleted 9000 orphan files/);
    assert.ok(names.every((n) => !existsSync(join(t.root, n))));
    assert.deepEqual(await ids(), expected());
  });
});

test("maintenance cli --nats - compact rewrites the small files on the leader (one COMPACT snapshot); natslake and pypaimon read the same rows", { timeout: 120_000 }, async () => {
  await withNodeLogsOnFailure(c, async () => {
    const leader = await leaderOf(NAME);
    const r = await nl(["compact", NAME, "--json", "--nats", c.nats.url]);
    assert.equal(r.status, 0, r.stderr);
    const s = JSON.parse(r.stdout) as { table: string; tasks: number; inputFiles: number; outputFiles: number; snapshotId: number; rows: number };
    assert.equal(s.table, NAME);
    assert.ok(s.tasks >= 1 && s.inputFiles >= 10 && s.outputFiles < s.inputFiles, JSON.stringify(s));
    assert.match(r.stderr, new RegExp(`compact of ${NAME} ran on ${leader}`));
    assert.match(c.logs(leader), /"task":"compact".*"msg":"maintenance request done"/);
    const t = await reopen(c.warehouse, NAME);
    const snap = await t.snapshots.snapshot(s.snapshotId);
    assert.equal(snap.commitKind, "COMPACT");
    // The cluster's stream offsets are carried forward: the next commit builds on them.
    assert.ok(Object.keys(snap.properties ?? {}).some((k) => k.startsWith("natslake.offset.")), "offsets carried forward");
    assert.deepEqual(await ids(), expected());
    assert.deepEqual((await paimonRead(c.warehouse, NAME)).map((x) => Number(x["id"])).sort((a, b) => a - b), expected());
    // A second run finds nothing more to do (the same path, the same rules).
    const again = await nl(["compact", NAME, "--nats", c.nats.url]);
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stdout, /nothing to compact/);
  });
});

test("maintenance cli --nats - bad requests are refused with a clear message: bad options from the CLI (exit 2), malformed requests on the subject", { timeout: 60_000 }, async () => {
  const bucket = await nl(["compact", NAME, "--bucket", "7", "--nats", c.nats.url]);
  assert.equal(bucket.status, 2, bucket.stderr);
  assert.match(bucket.stderr, /^error: --bucket 7: mcli\.events has buckets 0\.\.1$/m);
  const both = await nl(["compact", NAME, "--local", "--nats", c.nats.url]);
  assert.equal(both.status, 2);
  assert.match(both.stderr, /--local.*cannot be used with.*--nats/);
  // Straight onto the subject: every answer is one `done` with ok false, the kind and the reason.
  const ask = async (payload: unknown): Promise<MaintenanceReply> => {
    const m = await c.nc.request("lake.ctl.maint.mcli.events", new TextEncoder().encode(JSON.stringify(payload)), { timeout: 10_000 });
    return JSON.parse(new TextDecoder().decode(m.data)) as MaintenanceReply;
  };
  const bad = await ask({ type: "maintenance", v: 1, task: "remove-orphans", table: NAME, options: { olderThan: "1 d" } });
  assert.equal(bad.type, "done");
  assert.ok(bad.type === "done" && !bad.ok);
  assert.equal(bad.kind, "DataInvalid");
  assert.match(bad.error, /options: unknown key 'olderThan'/);
  const wrongTable = await ask({ type: "maintenance", v: 1, task: "compact", table: "mcli.other", options: {} });
  assert.ok(wrongTable.type === "done" && !wrongTable.ok && /names table 'mcli\.other'/.test(wrongTable.error));
  const task = await ask({ type: "maintenance", v: 1, task: "vacuum", table: NAME, options: {} });
  assert.ok(task.type === "done" && !task.ok && /unknown task "vacuum"/.test(task.error));
});

test("maintenance cli --nats - a table the cluster does not serve runs on the warehouse, said on stderr", { timeout: 60_000 }, async () => {
  // Another prefix: no cluster serves anything under it.
  const r = await nl(["expire-snapshots", NAME, "--dry-run", "--nats", c.nats.url, "--prefix", "other", "--warehouse", c.warehouse]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /mcli\.events: (nothing to expire|would expire)/);
  assert.match(r.stderr, /mcli\.events is not served by the cluster at .*: expire-snapshots ran on the warehouse directly/);
  const noWarehouse = await nl(["expire-snapshots", NAME, "--nats", c.nats.url, "--prefix", "other"]);
  assert.equal(noWarehouse.status, 2);
  assert.match(noWarehouse.stderr, /not served by the cluster .* pass --warehouse/);
});

test("maintenance cli --nats - no leader answering: a clear error and exit 1, nothing run beside the cluster", { timeout: 120_000 }, async () => {
  const t = await reopen(c.warehouse, NAME);
  const earliest = await t.snapshots.earliestId();
  // Every node paused: the leader's subscription is still there, but nobody answers.
  for (const id of c.nodes.keys()) c.signal(id, "SIGSTOP");
  try {
    const r = await nl(["expire-snapshots", NAME, "--retain-min", "1", "--older-than", "0 s", "--nats", c.nats.url, "--timeout", "1 s"]);
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /^error: no leader of mcli\.events answered within 1 s \(the table is served by the cluster, but its leader is down, paused or changing\): nothing was done/m);
    assert.equal(await (await reopen(c.warehouse, NAME)).snapshots.earliestId(), earliest, "nothing expired");
  } finally {
    for (const id of c.nodes.keys()) c.signal(id, "SIGCONT");
  }
  // No node at all: the server says at once that nobody serves the subject.
  for (const id of c.nodes.keys()) c.signal(id, "SIGKILL");
  for (const id of c.nodes.keys()) await c.waitExit(id);
  await waitFor("the dead nodes' subscriptions gone", async () => {
    const r = await nl(["compact", NAME, "--nats", c.nats.url, "--timeout", "5 s"]);
    return /nobody serves lake\.ctl\.maint\.mcli\.events/.test(r.stderr) && r.status === 1 ? true : undefined;
  }, 30_000, 500);
});
