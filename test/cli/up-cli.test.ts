/**
 * `natslake up` as an SRE runs it (issue 9): which nats-server runs (the current one, a warning for one older than
 * 2.10); a node killed by a signal is reported; Ctrl-C drains the nodes and then stops the servers, within a bound,
 * leaving no process behind; with `--warehouse` the JetStream store is kept, so a restart finds the same stream.
 * As a supervisor: test/cli/up-supervise.test.ts.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { waitFor } from "../helpers/cluster.ts";
import { pidAlive as alive } from "../helpers/servers.ts";
import { BIN, children, exitWithin, killSeen, match, REPO, seen, startUp, type Up } from "../helpers/up-process.ts";

const warehouse = mkdtempSync(join(tmpdir(), "natslake-up-test-"));
/** Directories removed at the end, once every process that may still write to them is gone. */
const dirs = [warehouse];
after(() => {
  killSeen();
  for (const d of dirs) rmSync(d, { recursive: true, force: true, maxRetries: 5 });
});

let lastSeqBeforeStop = 0;

test("up - a node killed by SIGKILL is reported (--no-restart: left down); Ctrl-C drains the rest and stops the servers; it says which nats-server ran", { timeout: 240_000 }, async () => {
  const up = startUp(["--nodes", "2", "--warehouse", warehouse, "--demo", "--no-restart"]);
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
  await match(up, /node node-2 was killed by SIGKILL .*not restarted \(--no-restart\); 1 node\(s\) still running take over its buckets/, "the killed node reported", 15_000);
  assert.ok(alive(natsPid) && alive(redisPid) && alive(n1), "the cluster keeps running without node-2");
  assert.equal(children(up.proc.pid!).nodes.get("node-2"), undefined, "not restarted");

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

test("up - an explicit NATSLAKE_NATS_SERVER wins, with a warning when it is older than 2.10", { timeout: 120_000 }, () => {
  const debian = spawnSync("bash", ["-c", "command -v nats-server"], { encoding: "utf8" }).stdout.trim();
  assert.ok(debian !== "", "a nats-server on PATH (scripts/setup.sh installs Debian's)");
  const r = spawnSync(process.execPath, [BIN, "up", "--nodes", "1", "--duration", "1"], {
    encoding: "utf8",
    timeout: 90_000,
    // No current server anywhere, and an explicit choice: it runs as given, never built or replaced.
    env: { ...process.env, NATSLAKE_NATS_SERVER_CURRENT: "", NATSLAKE_NATS_SERVER: debian, NATSLAKE_TOOLS_DIR: join(warehouse, "no-tools-here") },
  });
  assert.equal(r.signal, null, "up stopped by itself");
  const version = spawnSync(debian, ["--version"], { encoding: "utf8" }).stdout;
  assert.match(r.stdout, new RegExp(`^nats-server v\\S+: ${debian} \\(NATSLAKE_NATS_SERVER\\), pid \\d+`, "m"));
  if (/v2\.[0-9]\./.test(version)) assert.match(r.stderr, /warning: nats-server 2\.\d\.\d+ is older than the supported 2\.10: .*nats-io\/nats-server#4771.*It is \S+ \(NATSLAKE_NATS_SERVER\); unset NATSLAKE_NATS_SERVER/);
  assert.doesNotMatch(r.stderr, /building/, "an explicit server is not replaced by a build");
  assert.equal(r.status, 0, r.stderr);
});

// ---------------------------------------------------------------------------------------------------------------
// `npm run up` on a machine with Debian's nats-server only: NATSLAKE_TOOLS_DIR points the lookup at an empty folder.

const NATS_VERSION = readFileSync(join(REPO, "scripts", "nats-server-version"), "utf8").trim();

/** The environment of a machine where no current nats-server was built: the lookup finds an empty tools folder. */
function freshMachine(tools: string, path = process.env["PATH"] ?? ""): NodeJS.ProcessEnv {
  return { ...process.env, NATSLAKE_TOOLS_DIR: tools, NATSLAKE_NATS_SERVER: "", NATSLAKE_NATS_SERVER_CURRENT: "", PATH: path };
}

/** `npm run up -- <args>` in the repository folder, as a user types it; its exit and output. */
function npmRunUp(args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): { status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string } {
  const r = spawnSync("npm", ["run", "up", "--", ...args], { cwd: REPO, encoding: "utf8", timeout: timeoutMs, env });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

test("npm run up - with no current nats-server and Go at hand, builds it into the tools folder (progress on stderr) and runs it", { timeout: 420_000 }, () => {
  const tools = mkdtempSync(join(tmpdir(), "natslake-up-tools-"));
  const wh = mkdtempSync(join(tmpdir(), "natslake-up-build-"));
  try {
    const r = npmRunUp(["--duration", "30", "--nodes", "1", "--warehouse", wh], freshMachine(tools), 400_000);
    const output = `--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`;
    assert.equal(r.signal, null, `up stopped by itself:\n${output}`);
    assert.equal(r.status, 0, output);
    const bin = join(tools, `nats-server-${NATS_VERSION}`, "nats-server");
    assert.match(r.stderr, new RegExp(`^nats-server: building ${NATS_VERSION} with go install into ${join(tools, `nats-server-${NATS_VERSION}`)} \\(once; about 30–60 s\\)$`, "m"));
    assert.match(r.stderr, new RegExp(`^nats-server: built ${NATS_VERSION} with go\\S+ in \\d+ s: ${bin}$`, "m"));
    assert.match(r.stdout, new RegExp(`^nats-server ${NATS_VERSION}: ${bin} \\(current, scripts/install-nats-server\\.sh\\), pid \\d+, JetStream store `, "m"), output);
    assert.match(r.stdout, /^demo: created demo\.events and published 1000 rows/m, output);
    assert.doesNotMatch(r.stderr, /warning: nats-server/, "not Debian's");
    assert.match(spawnSync(bin, ["--version"], { encoding: "utf8" }).stdout, new RegExp(`nats-server: ${NATS_VERSION}`));
    // The next run finds it where it is: no second build.
    const again = spawnSync("bash", [join(REPO, "scripts", "install-nats-server.sh")], { encoding: "utf8", env: freshMachine(tools) });
    assert.equal(again.stdout.trim(), bin);
    assert.equal(again.stderr, "");
  } finally {
    rmSync(tools, { recursive: true, force: true });
    rmSync(wh, { recursive: true, force: true });
  }
});

test("npm run up - with no current nats-server and no Go, refuses with the commands that fix it and exits non-zero, starting nothing", { timeout: 180_000 }, () => {
  const tools = mkdtempSync(join(tmpdir(), "natslake-up-tools-"));
  const wh = mkdtempSync(join(tmpdir(), "natslake-up-nogo-"));
  try {
    // Go hidden: every PATH entry that holds a `go` goes.
    const path = (process.env["PATH"] ?? "").split(":").filter((d) => d !== "" && !existsSync(join(d, "go"))).join(":");
    assert.equal(spawnSync("bash", ["-c", "command -v go"], { encoding: "utf8", env: { ...process.env, PATH: path } }).status, 1, "go is hidden");
    const r = npmRunUp(["--duration", "5", "--nodes", "1", "--warehouse", wh], freshMachine(tools, path), 150_000);
    const output = `--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`;
    assert.equal(r.signal, null, output);
    assert.notEqual(r.status, 0, output);
    const dir = join(tools, `nats-server-${NATS_VERSION}`);
    assert.match(r.stderr, new RegExp(`^nats-server: cannot build nats-server ${NATS_VERSION}: go is not on PATH$`, "m"));
    assert.match(r.stderr, /^Fix it with one of these, then run the same command again:$/m);
    const arch = ({ x64: "amd64", arm64: "arm64" } as Record<string, string>)[process.arch];
    if (arch !== undefined) {
      const name = `nats-server-${NATS_VERSION}-${process.platform}-${arch}`;
      const fetch = `mkdir -p ${dir} && curl -fsSL https://github.com/nats-io/nats-server/releases/download/${NATS_VERSION}/${name}.tar.gz | tar -xz -C ${dir} --strip-components=1 ${name}/nats-server`;
      assert.ok(r.stderr.split("\n").some((l) => l.trim() === fetch), `the exact fetch command:\n${fetch}\n${output}`);
    }
    assert.match(r.stderr, /install Go 1\.\d+ or newer \(https:\/\/go\.dev\/dl\/\)/);
    assert.match(r.stderr, /NATSLAKE_NATS_SERVER/);
    assert.match(r.stderr, /^error: no current nats-server/m);
    // Nothing started: not Debian's server in its place, no Redis, no node.
    assert.doesNotMatch(r.stdout, /^nats-server v|^redis-server: pid|natslake local cluster/m, output);
    assert.equal(existsSync(dir), false, "no half-built folder is left");
  } finally {
    rmSync(tools, { recursive: true, force: true });
    rmSync(wh, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------------------------------------------------------
// What `up` prints to try next: every command, pasted as printed in the repository folder, works.

/** A pasted line: run by bash in the repository folder; its exit and output (killed after `timeoutMs`). */
function paste(line: string, timeoutMs = 120_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn("bash", ["-c", line], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
    seen.add(p.pid!);
    let out = "";
    p.stdout.on("data", (b: Buffer) => (out += b.toString()));
    p.stderr.on("data", (b: Buffer) => (out += b.toString()));
    const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
    p.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** The `  label:   command` lines of up's output, in order. */
const printedCommands = (text: string): Array<{ label: string; command: string }> =>
  [...text.matchAll(/^ {2}([^:\n]{1,18}): +(\S.*)$/gm)].map((m) => ({ label: m[1]!, command: m[2]! }));

/**
 * A Ctrl-C at the terminal of an `up` started through npm or npx: they go with the signal (no exit code of theirs
 * then), so a clean stop is read from what `up` printed.
 */
async function ctrlC(up: Up): Promise<void> {
  process.kill(-up.proc.pid!, "SIGINT");
  const r = await exitWithin(up, 90_000);
  const output = `${up.out()}\n${up.err()}`;
  assert.ok(r.code === 0 || r.signal === "SIGINT", `${JSON.stringify(r)}\n${output}`);
  assert.match(up.out(), /kept the JetStream store and logs in /, output);
  assert.doesNotMatch(output, /exited with|killed by|while draining|did not stop|^error:/m, output);
}

/** What each printed command must show when it worked (besides exit 0). */
const PROOF: Record<string, RegExp> = {
  "create a table": /created db\.events/,
  "publish rows": /published 5 rows to db\.events: 5 ok/,
  "read the table": /hello from a file/,
  "cluster status": /db\.events/,
  "read them": /hello \d+/,
  "producer (TS)": /the stream stored nothing twice/,
  "consumer (TS)": /stopped: reached --rows 1000/,
  "publisher (Py)": /"rows": 5,/,
  "consumer (Py)": /stopped: reached --rows 1000/,
  "query (Py+DuckDB)": /^read \d+ rows of demo\.events \(snapshot \d+\)/m,
};

test("npm run up - every command it prints works pasted as printed in the repository folder", { timeout: 600_000 }, async () => {
  assert.ok(existsSync(join(REPO, ".venv", "bin", "python")), "the checkout's .venv (scripts/setup.sh): up prints the Python examples then");
  const wh = mkdtempSync(join(tmpdir(), "natslake-up-paste-"));
  dirs.push(wh);
  {
    const up = startUp([], true, ["npm", ["run", "up", "--", "--nodes", "1", "--warehouse", wh]]);
    await match(up, /^ {2}query \(Py\+DuckDB\): .*\n/m, "the examples printed after the demo", 240_000);
    const printed = printedCommands(up.out());
    assert.deepEqual(printed.map((p) => p.label).sort(), [...Object.keys(PROOF), "watch snapshots"].sort(), `every printed command is tried here:\n${up.out()}`);
    // No command a user would paste names a `natslake` that is on no PATH.
    for (const l of up.out().split("\n")) assert.doesNotMatch(l, /(?<!npx )\bnatslake (table|publish|read|subscribe|status|up|tail)\b/, `printed without npx: ${l}`);

    let subscribe: Up | undefined;
    for (const { label, command } of printed) {
      if (label === "watch snapshots") {
        // It runs until Ctrl-C, printing each new snapshot: started here, checked below.
        subscribe = startUp([], true, ["bash", ["-c", command]]);
        continue;
      }
      const r = await paste(command);
      assert.equal(r.code, 0, `${label}: ${command}\n${r.out}`);
      assert.match(r.out, PROOF[label]!, `${label}: ${command}\n${r.out}`);
    }
    // A new snapshot of db.events while the subscription runs: it prints it.
    assert.equal((await paste(printed.find((p) => p.label === "publish rows")!.command)).code, 0);
    await match(subscribe!, /"table":"db\.events"/, "the subscription's notification", 60_000);
    // Ctrl-C ends it (npx itself goes with the signal: no exit code then).
    process.kill(-subscribe!.proc.pid!, "SIGINT");
    const stopped = await exitWithin(subscribe!, 30_000);
    assert.ok(stopped.code === 0 || stopped.signal === "SIGINT", `${JSON.stringify(stopped)}\n${subscribe!.err()}`);

    await ctrlC(up);
    // The last line says how to resume; pasted, it starts the cluster again on the same warehouse.
    const resume = /`(npx natslake up [^`]+)` resumes from them/.exec(up.out());
    assert.ok(resume, up.out());
    const again = startUp([], true, ["bash", ["-c", resume[1]!]]);
    await match(again, /^natslake local cluster: \d+ nodes, warehouse /m, "the cluster started again", 120_000);
    await ctrlC(again);
  }
});
