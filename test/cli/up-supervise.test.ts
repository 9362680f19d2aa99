/**
 * `natslake up` as a supervisor (issue 29): a node it started that dies is started again, at most 3 times a minute
 * (then left down, said so); its servers stay up whatever the nodes do — none of its nodes running, or all of them
 * dead with --no-restart, while a node started by hand against them keeps using them; a server of its that exits is
 * reported at once; every server's output is kept in the logs folder.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { waitFor } from "../helpers/cluster.ts";
import { pidAlive as alive } from "../helpers/servers.ts";
import { BIN, children, exitWithin, killSeen, match, seen, startUp, type Up } from "../helpers/up-process.ts";
import { createProducer } from "../../cluster/producer.ts";

/** Directories removed at the end, once every process that may still write to them is gone. */
const dirs: string[] = [];
after(() => {
  killSeen();
  for (const d of dirs) rmSync(d, { recursive: true, force: true, maxRetries: 5 });
});

/** The node ids and pids `up` reported as restarted so far (`node node-N restarted (pid P)`). */
const restarts = (up: Up): Array<{ id: string; pid: number }> => [...up.out().matchAll(/^node (\S+) restarted \(pid (\d+)\)$/gm)].map((m) => ({ id: m[1]!, pid: Number(m[2]) }));

/** Whether the node's log says it started `times` times (a restart appends to the same log). */
const startedTimes = (log: string): number => readFileSync(log, "utf8").split('"msg":"node started"').length - 1;

test("up - a node it started that dies is started again, at most 3 times a minute (then left down); with none of its nodes running NATS and Redis stay up, the node comes back and the cluster goes on", { timeout: 300_000 }, async () => {
  const wh = mkdtempSync(join(tmpdir(), "natslake-up-restart-"));
  dirs.push(wh);
  const up = startUp(["--nodes", "2", "--warehouse", wh, "--demo"]);
  await match(up, /demo: created demo\.events and published 1000 rows/, "the demo rows visible", 150_000);
  const kids = children(up.proc.pid!);
  for (const pid of [kids.nats, kids.redis, ...kids.nodes.values()]) seen.add(pid);
  const logs = /logs (\S+)\/node-\*\.log/.exec(up.out())![1]!;
  const url = /NATS {2}(nats:\/\/\S+)/.exec(up.out())![1]!;
  const restartsOf = (id: string): number[] => restarts(up).filter((r) => r.id === id).map((r) => r.pid);

  // node-1 killed again and again, each time as soon as it was started again: 3 restarts, then it is left down.
  let victim = kids.nodes.get("node-1")!;
  for (let k = 1; k <= 3; k++) {
    process.kill(victim, "SIGKILL");
    await waitFor(`node-1 restarted (${k})`, () => (restartsOf("node-1").length >= k ? true : undefined), 15_000, 100);
    victim = restartsOf("node-1").at(-1)!;
    seen.add(victim);
  }
  assert.equal(up.out().match(/^node node-1 was killed by SIGKILL \(log: \S+\); restarting it in 1 s$/gm)?.length, 3, "each death reported");
  process.kill(victim, "SIGKILL");
  await match(up, /node node-1 was killed by SIGKILL \(log: \S+\); restarted 3 times in the last minute: not restarted again; 1 node\(s\) still running take over its buckets/, "node-1 left down", 15_000);
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal(children(up.proc.pid!).nodes.get("node-1"), undefined, "node-1 was not started a 4th time");

  // Its last running node killed: NATS and Redis stay up meanwhile, the node comes back, the cluster takes rows.
  process.kill(kids.nodes.get("node-2")!, "SIGKILL");
  await match(up, /node node-2 was killed by SIGKILL \(log: \S+\); restarting it in 1 s/, "node-2's death reported", 15_000);
  for (const [what, pid] of [["nats-server", kids.nats], ["redis-server", kids.redis]] as const) assert.ok(alive(pid), `${what} (pid ${pid}) still runs`);
  await waitFor("node-2 restarted", () => (restartsOf("node-2").length >= 1 ? true : undefined), 15_000, 100);
  seen.add(restartsOf("node-2")[0]!);
  await waitFor("node-2 started again", () => (startedTimes(join(logs, "node-2.log")) >= 2 ? true : undefined), 90_000, 200);
  assert.doesNotMatch(up.out(), /no node is left|stopping the local cluster/, "up goes on");
  const nc = await connect({ servers: url });
  try {
    const producer = await createProducer({ nc, table: "demo.events" });
    for (let i = 0; i < 100; i++) void producer.write({ id: 10_000 + i, msg: `after the restart ${i}`, at: Date.now() });
    await producer.flush();
    await producer.waitVisible(producer.token(), 90_000);
    await producer.close();
  } finally {
    await nc.close();
  }

  up.proc.kill("SIGINT");
  const r = await exitWithin(up, 60_000);
  assert.equal(r.code, 1, "nodes died during the run: exit 1");
  assert.match(up.out(), /draining node-2…/);
  for (const pid of [kids.nats, kids.redis]) assert.ok(!alive(pid), `server pid ${pid} is gone`);
});

test("up - --no-restart and its only node killed: NATS and Redis keep running for a node started by hand; its nats-server killed: said at once; each server's output is in the logs folder", { timeout: 240_000 }, async () => {
  const wh = mkdtempSync(join(tmpdir(), "natslake-up-servers-"));
  dirs.push(wh);
  const up = startUp(["--nodes", "1", "--warehouse", wh, "--no-restart"]);
  const urls = await match(up, /NATS {2}(nats:\/\/\S+) +Redis (redis:\/\/\S+)/, "the URLs", 90_000);
  const [natsUrl, redisUrl] = [urls[1]!, urls[2]!];
  const logs = /logs (\S+)\/node-\*\.log/.exec(up.out())![1]!;
  const kids = children(up.proc.pid!);
  for (const pid of [kids.nats, kids.redis, ...kids.nodes.values()]) seen.add(pid);
  await waitFor("node-1 started", () => (startedTimes(join(logs, "node-1.log")) >= 1 ? true : undefined), 90_000, 200);

  process.kill(kids.nodes.get("node-1")!, "SIGKILL");
  await match(up, /node node-1 was killed by SIGKILL \(log: \S+\); not restarted \(--no-restart\); none of up's nodes is left; NATS and Redis keep running/, "the last node's death reported", 15_000);
  await new Promise((r) => setTimeout(r, 3000));
  assert.ok(up.proc.exitCode === null, `up still runs:\n${up.out()}`);
  assert.doesNotMatch(up.out(), /stopping/);
  for (const [what, pid] of [["nats-server", kids.nats], ["redis-server", kids.redis]] as const) assert.ok(alive(pid), `${what} (pid ${pid}) still runs`);

  // A node started by hand against up's servers, as an SRE restarts one in a chaos session: it finds them.
  const handLog = join(logs, "by-hand.log");
  const fd = openSync(handLog, "a");
  const hand = spawn(process.execPath, [BIN, "node", "--nats", natsUrl, "--redis", redisUrl, "--warehouse", wh, "--node-id", "by-hand"], { stdio: ["ignore", fd, fd] });
  closeSync(fd);
  seen.add(hand.pid!);
  try {
    await waitFor("the node started by hand", () => (startedTimes(handLog) >= 1 ? true : undefined), 90_000, 200);
    assert.doesNotMatch(readFileSync(handLog, "utf8"), /ECONNREFUSED|connection refused/i);
  } finally {
    hand.kill("SIGKILL");
  }

  // Each server's output is in the logs folder.
  assert.match(readFileSync(join(logs, "nats-server.log"), "utf8"), /Server is ready/);
  assert.match(readFileSync(join(logs, "redis-server.log"), "utf8"), /Ready to accept connections/);

  // up's nats-server dies: up says so at once, naming its output.
  const killedAt = Date.now();
  process.kill(kids.nats, "SIGKILL");
  const said = await match(up, /^nats-server \(pid (\d+)\) was killed by SIGKILL \(its output: (\S+)\); the nodes cannot reach it until a server listens on (\S+) again/m, "nats-server's death reported", 10_000);
  assert.ok(Date.now() - killedAt < 3000, `reported ${Date.now() - killedAt} ms after the kill`);
  assert.equal(Number(said[1]), kids.nats);
  assert.equal(said[2], join(logs, "nats-server.log"));
  assert.equal(said[3], natsUrl);

  up.proc.kill("SIGINT");
  const r = await exitWithin(up, 60_000);
  assert.equal(r.code, 1, "a node and a server died during the run: exit 1");
  assert.match(up.err(), /nats-server was killed by SIGKILL/);
  assert.ok(!alive(kids.redis), "redis-server is stopped at the end");
});
