/**
 * The cluster from the command line: `table create --nats` (through a running node: the table, its ingest stream
 * with both subjects, discard new, max_bytes and an explicit duplicate window, and its producer metadata in KV),
 * `publish` with a final count, `subscribe`, and `up --demo` (the README's first command).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager, DiscardPolicy } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { startCluster, waitFor, type TestCluster } from "../helpers/cluster.ts";
import { freePort } from "../helpers/servers.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
let c: TestCluster;
before(async () => {
  c = await startCluster({ nodes: 1 });
});
after(async () => {
  await c.stop();
});

const nl = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", timeout: 120_000 });

test("cluster cli - table create --nats creates the table, its stream (both subjects, discard new, max_bytes, duplicate window) and its metadata", async () => {
  const r = await waitFor("a node answers admin requests", () => {
    const x = nl(["table", "create", "cli.orders", "--nats", c.nats.url, "--columns", "id BIGINT NOT NULL, item STRING", "--option", "bucket=3", "--option", "bucket-key=id"]);
    return x.status === 0 ? x : undefined;
  }, 30_000, 500);
  assert.match(r.stdout, /created cli\.orders/);
  const jsm = await jetstreamManager(c.nc);
  const info = await jsm.streams.info("LAKE_IN_cli_orders");
  assert.deepEqual([...info.config.subjects].sort(), ["lake.in.cli.orders", "lake.in.cli.orders.*"]);
  assert.equal(info.config.discard, DiscardPolicy.New);
  assert.ok(info.config.max_bytes > 0);
  assert.equal(info.config.duplicate_window, 120_000 * 1_000_000);
  const meta = (await (await new Kvm(c.nc).open("lake_tables")).get("cli.orders"))!.json() as { bucket: number; bucketKey: string[] };
  assert.equal(meta.bucket, 3);
  assert.deepEqual(meta.bucketKey, ["id"]);
  const again = nl(["table", "create", "cli.orders", "--nats", c.nats.url, "--columns", "id BIGINT NOT NULL"]);
  assert.notEqual(again.status, 0);
  assert.match(again.stderr, /already exists/);
  // --if-not-exists through the cluster, as on the warehouse: the table stays as it is (its 3 buckets), exit 0.
  const kept = nl(["table", "create", "cli.orders", "--nats", c.nats.url, "--columns", "id BIGINT NOT NULL", "--if-not-exists"]);
  assert.equal(kept.status, 0, kept.stderr);
  assert.match(kept.stdout, /cli\.orders exists already \(--if-not-exists\): left as it is/);
  const still = (await (await new Kvm(c.nc).open("lake_tables")).get("cli.orders"))!.json() as { bucket: number };
  assert.equal(still.bucket, 3);
});

test("cluster cli - publish reports its count; subscribe prints the snapshot; rows read back", async () => {
  const file = join(c.dir, "orders.jsonl");
  writeFileSync(file, Array.from({ length: 500 }, (_, i) => JSON.stringify({ id: i, item: `it${i}` })).join("\n") + "\n");
  const sub = spawn(process.execPath, [BIN, "subscribe", "cli.orders", "--nats", c.nats.url, "--count", "1"], { stdio: ["ignore", "pipe", "pipe"] });
  let subOut = "";
  let subErr = "";
  sub.stdout.on("data", (b: Buffer) => (subOut += b.toString()));
  sub.stderr.on("data", (b: Buffer) => (subErr += b.toString()));
  const pub = nl(["publish", "cli.orders", file, "--nats", c.nats.url, "--wait-visible"]);
  assert.equal(pub.status, 0, pub.stderr);
  assert.match(pub.stdout, /published 500 rows to cli\.orders: 500 ok/);
  assert.match(pub.stdout, /visible in a snapshot/);
  // `close`, not `exit`: a child's exit can be reported before the last of its stdout is read.
  const code = await new Promise((r) => sub.once("close", r));
  assert.ok(subOut.trim() !== "", `subscribe printed nothing (exit ${String(code)}): ${subErr}`);
  const n = JSON.parse(subOut.trim().split("\n")[0]!) as { table: string; snapshotId: number };
  assert.equal(n.table, "cli.orders");
  assert.ok(n.snapshotId >= 1);
  const read = nl(["read", "cli.orders", "--warehouse", c.warehouse, "--format", "jsonl"]);
  assert.equal(read.stdout.trim().split("\n").length, 500);
  const bad = nl(["publish", "cli.orders", join(c.dir, "missing.jsonl"), "--nats", c.nats.url]);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /cannot read input file/);
});

test("cluster cli - up --demo starts servers and nodes, shows rows visible, and stops by itself", { timeout: 120_000 }, () => {
  const r = nl(["up", "--nodes", "2", "--duration", "3", "--demo"]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /natslake local cluster: 2 nodes/);
  assert.match(r.stdout, /demo: created demo\.events and published 1000 rows; visible in a snapshot/);
  assert.match(r.stdout, /stopping the local cluster/);
});

test("cluster cli - a node that cannot start exits with the error instead of lingering; --nats takes a list of servers", { timeout: 90_000 }, async () => {
  // Replicas 3 on a single server (a prefix of its own, so its KV buckets are new): JetStream refuses them after the
  // node connected. And a warehouse that is a file: the node is up (heartbeats) when its first table scan fails.
  const file = join(c.dir, "not-a-directory");
  writeFileSync(file, "x");
  const attempts: Array<[string[], RegExp]> = [
    [["--prefix", "cannotstart", "--replicas", "3", "--warehouse", c.warehouse], /replica/i],
    [["--warehouse", file], /not-a-directory/],
  ];
  for (const [extra, message] of attempts) {
    const bad = spawnSync(process.execPath, [BIN, "node", "--roles", "writer", "--nats", c.nats.url, "--node-id", "cannot-start", ...extra], { encoding: "utf8", timeout: 30_000 });
    assert.equal(bad.signal, null, `the node exited by itself (not killed by the test's timeout): ${extra.join(" ")}`);
    assert.notEqual(bad.status, 0, extra.join(" "));
    assert.match(bad.stderr, message);
  }
  // A list of servers whose first one is down: the node starts on the other.
  const dead = `nats://127.0.0.1:${await freePort()}`;
  const ok = spawn(process.execPath, [BIN, "node", "--roles", "reader", "--nats", `${dead},${c.nats.url}`, "--warehouse", c.warehouse, "--node-id", "listed-servers"], { stdio: ["ignore", "ignore", "pipe"] });
  try {
    const members = await new Kvm(c.nc).open("lake_members");
    await waitFor("the node with a server list joins", async () => ((await members.get("listed-servers"))?.operation === "PUT" ? true : undefined), 30_000, 200);
  } finally {
    ok.kill("SIGKILL");
  }
});
