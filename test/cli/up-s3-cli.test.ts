/**
 * `natslake up --s3`: a temporary SeaweedFS beside nats-server and redis-server, the nodes on an s3:// warehouse
 * (credentials through their environment), the demo's rows visible; at stop every server is gone and the temporary
 * run directory removed. `--s3` with a `--warehouse` is refused in one line.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test("up --s3 - the demo's rows land in an S3 warehouse; the servers are stopped and the run directory removed at the end", { timeout: 300_000 }, () => {
  const r = spawnSync(process.execPath, [BIN, "up", "--s3", "--demo", "--duration", "3", "--nodes", "2"], { encoding: "utf8", timeout: 280_000 });
  const out = `${r.stdout}${r.stderr}`;
  assert.equal(r.status, 0, out);
  const weed = /seaweedfs \(S3 gateway http:\/\/127\.0\.0\.1:\d+\): pid (\d+), data (\S+); credentials for your commands: source (\S+)/.exec(out);
  assert.ok(weed, out);
  assert.match(out, /natslake local cluster: 2 nodes, warehouse s3:\/\/natslake\/warehouse\?endpoint=http:\/\/127\.0\.0\.1:\d+/);
  assert.match(out, /demo: created demo\.events and published 1000 rows; visible in a snapshot \d+ ms after the last ack/);
  assert.doesNotMatch(out, /AWS_SECRET_ACCESS_KEY=|secretAccessKey/, "no secret on the terminal");
  assert.equal(alive(Number(weed[1])), false, "weed was stopped");
  assert.equal(existsSync(weed[2]!), false, "the temporary store was removed");
  assert.equal(existsSync(weed[3]!), false, "the credentials file went with the run directory");
});

test("up --s3 with --warehouse is refused in one line (exit 2)", () => {
  const r = spawnSync(process.execPath, [BIN, "up", "--s3", "--warehouse", "/tmp/x"], { encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr.trim(), /^error: --s3 starts a temporary object store of its own; .*--warehouse s3:\/\/bucket\/prefix/);
  assert.equal(r.stderr.trim().split("\n").length, 1);
});
