/**
 * Consumers' progress in Paimon's format (`consumer/consumer-<id>`, `{"nextSnapshot": N}`): snapshot expiration keeps
 * every snapshot from the smallest next snapshot on, an idle consumer (`consumer.expiration-time`) is removed and
 * protects nothing, and `natslake consumer list|reset|delete` manage them.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTable, readJson, reopen, tempDir, writeRows } from "../helpers/tables.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { consumerLag, getConsumer, listConsumers, writeConsumer } from "../../src/table/consumers.ts";
import { consumerLagTask } from "../../actors/maintenance-tasks.ts";
import { metrics } from "@opentelemetry/api";

const wh = tempDir();
after(() => wh.cleanup());
const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

test("consumers - expiration keeps every snapshot from the smallest next snapshot on; idle consumers stop protecting", async () => {
  const t = await createTable(wh.path, "con.t", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id", "consumer.expiration-time": "1 h" } });
  for (let c = 0; c < 12; c++) await writeRows(t, [{ id: c }]);
  await writeConsumer(t, "slow", 4);
  await writeConsumer(t, "fast", 11);
  // The file is Paimon's format.
  assert.deepEqual(JSON.parse(readFileSync(join(t.root, "consumer", "consumer-slow"), "utf8")), { nextSnapshot: 4 });
  const r = await expireSnapshots(t, { retainMin: 1, timeRetainedMs: 0, limit: 100 });
  assert.deepEqual([r.from, r.to], [1, 4], "snapshot 4, the slow consumer's next, and every later one stay");
  assert.equal((await readJson(t, { snapshotId: 4 })).length, 4, "the consumer can still read its next snapshot");
  // The slow consumer goes idle past consumer.expiration-time: it is removed and protects nothing more.
  const old = new Date(Date.now() - 2 * 3_600_000);
  utimesSync(join(t.root, "consumer", "consumer-slow"), old, old);
  const dry = await expireSnapshots(await reopen(wh.path, "con.t"), { retainMin: 1, timeRetainedMs: 0, limit: 100, dryRun: true });
  assert.deepEqual([dry.from, dry.to], [4, 11]);
  assert.notEqual(await getConsumer(t, "slow"), null, "a dry run removes no consumer");
  const r2 = await expireSnapshots(await reopen(wh.path, "con.t"), { retainMin: 1, timeRetainedMs: 0, limit: 100 });
  assert.deepEqual([r2.from, r2.to], [4, 11], "now only the fast consumer's next snapshot bounds it");
  assert.deepEqual((await listConsumers(t)).map((c) => c.id), ["fast"]);
});

test("consumers - the CLI lists, resets and deletes them, and refuses what makes no sense", async () => {
  const t = await createTable(wh.path, "con.cli", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
  for (let c = 0; c < 3; c++) await writeRows(t, [{ id: c }]);
  const run = (...args: string[]) => spawnSync(process.execPath, [BIN, "consumer", ...args, "--warehouse", wh.path], { encoding: "utf8" });
  const reset = run("reset", "con.cli", "billing", "--next-snapshot", "2");
  assert.equal(reset.status, 0, reset.stderr);
  assert.match(reset.stdout, /consumer billing of con\.cli: next snapshot \(new\) -> 2/);
  const list = run("list", "con.cli", "--json");
  assert.equal(list.status, 0, list.stderr);
  const rows = list.stdout.trim().split("\n").map((l) => JSON.parse(l) as { id: string; nextSnapshot: number; behind: number });
  assert.deepEqual(rows.map((r) => [r.id, r.nextSnapshot, r.behind]), [["billing", 2, 2]]);
  const tooFar = run("reset", "con.cli", "billing", "--next-snapshot", "9");
  assert.equal(tooFar.status, 2);
  assert.match(tooFar.stderr, /has snapshots 1\.\.3; choose one of them or 4/);
  const badId = run("reset", "con.cli", "../x", "--next-snapshot", "1");
  assert.equal(badId.status, 2);
  assert.match(badId.stderr, /invalid consumer id '\.\.\/x': path separators are not allowed/);
  const newBadId = run("reset", "con.cli", "billing team", "--next-snapshot", "1");
  assert.equal(newBadId.status, 2);
  assert.match(newBadId.stderr, /invalid consumer id 'billing team': whitespace is not allowed; new consumer id names are 1-200 characters/);
  assert.equal(run("delete", "con.cli", "billing").status, 0);
  const again = run("delete", "con.cli", "billing");
  assert.equal(again.status, 2);
  assert.match(again.stderr, /has no consumer 'billing'/);
  assert.deepEqual(await listConsumers(t), []);
});

test("consumers - lag: snapshots and seconds behind the latest, 0 when caught up; the leader's task measures every consumer", async () => {
  const t = await createTable(wh.path, "con.lag", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
  for (let c = 0; c < 5; c++) await writeRows(t, [{ id: c }]);
  await writeConsumer(t, "behind", 3);
  await writeConsumer(t, "caught-up", 6);
  const third = await t.snapshots.snapshot(3);
  const now = third.timeMillis + 42_000;
  const lag = new Map((await consumerLag(t, now)).map((l) => [l.id, l]));
  assert.deepEqual({ ...lag.get("behind")! }, { id: "behind", nextSnapshot: 3, snapshotsBehind: 3, secondsBehind: 42 }, "snapshots 3, 4, 5 unprocessed; the oldest is 42 s old");
  assert.deepEqual({ ...lag.get("caught-up")! }, { id: "caught-up", nextSnapshot: 6, snapshotsBehind: 0, secondsBehind: 0 });
  const task = consumerLagTask(metrics.getMeter("test"), () => now);
  assert.deepEqual(await task.run(t), { consumers: 2 });
});
