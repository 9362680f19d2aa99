/**
 * `natslake up` as an SRE runs it (issue 9): which nats-server runs (the current one, a warning for one older than
 * 2.10); a node killed by a signal is reported; Ctrl-C drains the nodes and then stops the servers, within a bound,
 * leaving no process behind; with `--warehouse` the JetStream store is kept, so a restart finds the same stream.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { waitFor } from "../helpers/cluster.ts";
import { pidAlive as alive } from "../helpers/servers.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const warehouse = mkdtempSync(join(tmpdir(), "natslake-up-test-"));
/** Every process a test saw (up's children included), killed at the end whatever happened. */
const seen = new Set<number>();
after(() => {
  for (const pid of seen) if (alive(pid)) process.kill(pid, "SIGKILL");
  rmSync(warehouse, { recursive: true, force: true });
});

/** The descendants of `pid` now (from ps), so that a cleanup reaches them even if `up` never printed their ids. */
function descendants(pid: number): number[] {
  const rows = spawnSync("ps", ["-e", "-o", "pid=,ppid="], { encoding: "utf8" }).stdout.trim().split("\n").map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  const walk = (p: number): void => {
    for (const [child, parent] of rows) {
      if (parent === p) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

interface Up {
  proc: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `group`: `up` leads a process group of its own, so a test can signal the group as a terminal's Ctrl-C does. */
function startUp(args: string[], group = false): Up {
  const proc = spawn(process.execPath, [BIN, "up", ...args], { stdio: ["ignore", "pipe", "pipe"], detached: group });
  seen.add(proc.pid!);
  let out = "";
  let err = "";
  proc.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  proc.stderr!.on("data", (b: Buffer) => (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => proc.once("exit", (code, signal) => r({ code, signal })));
  return { proc, out: () => out, err: () => err, exited };
}

/** Resolves with `up`'s exit, or throws after `ms` (the test then fails; the cleanup kills what is left). */
async function exitWithin(up: Up, ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      up.exited,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`up did not exit within ${ms} ms after SIGINT:\n${up.out()}\n${up.err()}`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const match = (up: Up, re: RegExp, what: string, ms: number): Promise<RegExpExecArray> =>
  waitFor(what, () => {
    for (const pid of descendants(up.proc.pid!)) seen.add(pid);
    const m = re.exec(up.out());
    if (m === null && up.proc.exitCode !== null) throw new Error(`up exited (${up.proc.exitCode}) before ${what}:\n${up.out()}\n${up.err()}`);
    return m ?? undefined;
  }, ms, 200).catch((e: unknown) => {
    throw new Error(`${String(e)}\n--- up's stdout ---\n${up.out()}\n--- stderr ---\n${up.err()}`);
  });

let lastSeqBeforeStop = 0;

/** `up`'s children by what they run (found with ps, not from what `up` prints: the old `up` printed no pids). */
function children(upPid: number): { nats: number; redis: number; nodes: Map<string, number> } {
  const rows = spawnSync("ps", ["-o", "pid=,args=", "--ppid", String(upPid)], { encoding: "utf8" }).stdout.trim().split("\n");
  const found = { nats: 0, redis: 0, nodes: new Map<string, number>() };
  for (const row of rows) {
    const m = /^\s*(\d+)\s+(.*)$/.exec(row);
    if (m === null) continue;
    const [pid, args] = [Number(m[1]), m[2]!];
    if (/nats-server/.test(args)) found.nats = pid;
    else if (/redis-server/.test(args)) found.redis = pid;
    else {
      const id = /--node-id (\S+)/.exec(args)?.[1];
      if (id !== undefined) found.nodes.set(id, pid);
    }
  }
  return found;
}

test("up - a node killed by SIGKILL is reported; Ctrl-C drains the rest and stops the servers; it says which nats-server ran", { timeout: 240_000 }, async () => {
  const up = startUp(["--nodes", "2", "--warehouse", warehouse, "--demo"]);
  await match(up, /demo: created demo\.events and published 1000 rows/, "the demo rows visible", 150_000);
  const kids = children(up.proc.pid!);
  const [natsPid, redisPid, n1, n2] = [kids.nats, kids.redis, kids.nodes.get("node-1") ?? 0, kids.nodes.get("node-2") ?? 0];
  for (const pid of [natsPid, redisPid, n1, n2]) seen.add(pid);
  assert.ok(natsPid > 0 && redisPid > 0 && n1 > 0 && n2 > 0, `up's children: ${JSON.stringify({ natsPid, redisPid, n1, n2 })}`);
  // What the stream holds before the stop (the restart below must find it).
  const url = /NATS {2}(nats:\/\/\S+)/.exec(up.out())![1]!;
  const nc = await connect({ servers: url });
  lastSeqBeforeStop = (await (await jetstreamManager(nc)).streams.info("LAKE_IN_demo_events")).state.last_seq;
  await nc.close();
  assert.ok(lastSeqBeforeStop > 0);

  process.kill(n2, "SIGKILL");
  await match(up, /node node-2 was killed by SIGKILL/, "the killed node reported", 15_000);
  assert.ok(alive(natsPid) && alive(redisPid) && alive(n1), "the cluster keeps running without node-2");

  up.proc.kill("SIGINT");
  // The old `up` waited forever here for node-2's exit event, which had fired already.
  const r = await exitWithin(up, 60_000);
  assert.equal(r.signal, null);
  assert.equal(r.code, 1, "a node failed during the run: exit 1");
  assert.match(up.err(), /node node-2 was killed by SIGKILL/);
  assert.match(up.out(), /draining node-1…/);
  for (const [what, pid] of [["nats-server", natsPid], ["redis-server", redisPid], ["node-1", n1]] as const) assert.ok(!alive(pid), `${what} (pid ${pid}) is gone`);

  // Which nats-server ran: the current one when there is one, not Debian's 2.9.
  const nats = /^nats-server v(\S+): (.+) \((.+)\), pid (\d+), JetStream store (.+)$/m.exec(up.out());
  assert.ok(nats, `up says which nats-server runs:\n${up.out()}`);
  assert.equal(Number(nats[4]), natsPid);
  const current = process.env["NATSLAKE_NATS_SERVER_CURRENT"];
  if (current) {
    assert.equal(nats[2], current, "the current nats-server, not Debian's 2.9");
    assert.doesNotMatch(nats[1]!, /^2\.9\./);
  }
  assert.equal(nats[5], join(warehouse, ".natslake-up", "jetstream"));
});

test("up - a restart on the same --warehouse finds the kept JetStream store (same stream, same messages)", { timeout: 180_000 }, async () => {
  assert.ok(lastSeqBeforeStop > 0, "the first test ran");
  const up = startUp(["--nodes", "1", "--warehouse", warehouse]);
  const url = (await match(up, /NATS {2}(nats:\/\/\S+)/, "the NATS URL", 60_000))[1]!;
  const nc = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(nc);
    // The old `up` started from an empty store: the stream appeared only once the node recreated it, empty.
    const info = await waitFor("the demo stream", async () => await jsm.streams.info("LAKE_IN_demo_events"), 60_000, 200);
    assert.ok(info.state.last_seq >= lastSeqBeforeStop, `the stream kept its messages: last_seq ${info.state.last_seq}, before the stop ${lastSeqBeforeStop}`);
  } finally {
    await nc.close();
  }
  await match(up, /nodes node-1 \(pid \d+\)/, "the node", 10_000);
  up.proc.kill("SIGINT");
  const r = await exitWithin(up, 60_000);
  assert.equal(r.code, 0, up.err());
  assert.match(up.out(), /kept the JetStream store and logs in .*\.natslake-up/);
});

test("up - a Ctrl-C at the terminal (SIGINT to the whole process group) drains the nodes while NATS still runs", { timeout: 180_000 }, async () => {
  const wh = mkdtempSync(join(tmpdir(), "natslake-up-group-"));
  try {
    const up = startUp(["--nodes", "1", "--warehouse", wh, "--demo"], true);
    await match(up, /demo: created demo\.events and published 1000 rows/, "the demo rows visible", 150_000);
    const kids = children(up.proc.pid!);
    for (const pid of [kids.nats, kids.redis, ...kids.nodes.values()]) seen.add(pid);
    // What a terminal does at Ctrl-C: SIGINT to every process of the foreground group. The old `up` had its servers
    // in that group, so NATS died at once while the nodes were still draining through it.
    process.kill(-up.proc.pid!, "SIGINT");
    const r = await exitWithin(up, 60_000);
    const logs = /logs (\S+)\/node-\*\.log/.exec(up.out())![1]!;
    const whole = readFileSync(join(logs, "node-1.log"), "utf8");
    const log = whole.slice(whole.indexOf('"msg":"signal received; draining"'));
    assert.ok(whole.includes('"msg":"signal received; draining"'), "the node got the Ctrl-C");
    // The old `up`: "lease lost" (Redis gone), "heartbeat failed" and writer timeouts (NATS gone) during the drain.
    assert.doesNotMatch(log, /"level":50|heartbeat failed|lease lost|drain failed|shutdown did not finish/, "NATS and Redis were there all through the drain");
    assert.match(log, /"msg":"node stopped"/, "the node finished its drain");
    assert.doesNotMatch(up.out(), /exited with|killed by|while draining|did not stop/);
    assert.equal(r.code, 0, `${up.out()}\n${up.err()}`);
    assert.equal(logs, join(wh, ".natslake-up", "logs"));
    for (const pid of [kids.nats, kids.redis]) assert.ok(!alive(pid), `server pid ${pid} is gone`);
  } finally {
    rmSync(wh, { recursive: true, force: true });
  }
});

test("up - warns when the nats-server it runs is older than 2.10", { timeout: 120_000 }, () => {
  const r = spawnSync(process.execPath, [BIN, "up", "--nodes", "1", "--duration", "1"], {
    encoding: "utf8",
    timeout: 90_000,
    // No current server anywhere: Debian's nats-server on PATH.
    env: { ...process.env, NATSLAKE_NATS_SERVER_CURRENT: "", NATSLAKE_NATS_SERVER: "", NATSLAKE_TOOLS_DIR: join(warehouse, "no-tools-here") },
  });
  assert.equal(r.signal, null, "up stopped by itself");
  const version = spawnSync("nats-server", ["--version"], { encoding: "utf8" }).stdout;
  assert.match(r.stdout, /^nats-server v\S+: nats-server \(PATH\), pid \d+/m);
  if (/v2\.[0-9]\./.test(version)) assert.match(r.stderr, /warning: nats-server 2\.\d\.\d+ is older than the supported 2\.10: .*nats-io\/nats-server#4771.*It is nats-server;/);
  assert.equal(r.status, 0, r.stderr);
});
