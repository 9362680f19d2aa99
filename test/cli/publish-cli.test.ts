/**
 * `natslake publish` and `natslake subscribe` as a user runs them (issue 9): every row counted under its outcome and
 * the exit code set by any row not acknowledged; bad input, an unknown table and an unreachable server end promptly
 * with one line and a non-zero exit; `--idempotent` stores a re-published file once.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { currentNatsServer, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { freePort } from "../helpers/servers.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
let c: TestCluster;
before(async () => {
  // The full-stream test needs the current nats-server's refusal (see currentNatsServer).
  c = await startCluster({ nodes: 1, ...currentNatsServer() });
});
after(async () => {
  await c.stop();
});

/** Runs the CLI; a run that does not end by itself within `timeoutMs` is killed (signal set) and fails the test. */
const nl = (args: string[], timeoutMs = 60_000) => spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", timeout: timeoutMs });

async function createTable(name: string, extra: string[] = []): Promise<void> {
  await waitFor(`${name} created`, () => {
    const x = nl(["table", "create", name, "--nats", c.nats.url, "--columns", "id BIGINT NOT NULL, item STRING", "--option", "bucket=4", "--option", "bucket-key=id", ...extra]);
    return x.status === 0 ? x : undefined;
  }, 30_000, 500);
}

function rowsFile(name: string, n: number, start = 0): string {
  const file = join(c.dir, name);
  writeFileSync(file, Array.from({ length: n }, (_, i) => JSON.stringify({ id: start + i, item: `it${start + i}` })).join("\n") + "\n");
  return file;
}

test("publish - every row is counted, not only the batches that flush() settled", { timeout: 120_000 }, async () => {
  await createTable("pub.counts");
  const r = nl(["publish", "pub.counts", rowsFile("counts.jsonl", 15_000), "--nats", c.nats.url, "--no-progress"]);
  assert.equal(r.signal, null, "publish ended by itself");
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /published 15000 rows to pub\.counts: 15000 ok$/m);
});

test("publish - rows a full stream refused are counted as failed and make the exit code 1", { timeout: 120_000 }, async () => {
  assert.ok(process.env["NATSLAKE_NATS_SERVER_CURRENT"], "needs the current nats-server (scripts/setup.sh builds it; scripts/run-tests.mjs finds it)");
  await createTable("pub.full");
  // A small stream, set on the stream itself (a table's natslake.stream.max-bytes applies too: test/integration/stream-limits.test.ts).
  await (await jetstreamManager(c.nc)).streams.update("LAKE_IN_pub_full", { max_bytes: 32 * 1024 });
  const r = nl(["publish", "pub.full", rowsFile("full.jsonl", 15_000), "--nats", c.nats.url, "--no-progress"]);
  assert.equal(r.signal, null, "publish ended by itself");
  assert.equal(r.status, 1, `${r.stdout}\n${r.stderr}`);
  const m = /published 15000 rows to pub\.full: (.*)$/m.exec(r.stdout);
  assert.ok(m, r.stdout);
  const counts = Object.fromEntries(m[1]!.split(", ").map((p) => p.split(" ").reverse() as [string, string]));
  assert.equal(Object.values(counts).reduce((a, b) => a + Number(b), 0), 15_000, `every row counted once: ${m[1]}`);
  assert.ok(Number(counts["failed"] ?? 0) > 0, m[1]);
  assert.match(r.stdout, /failed: \d+ rows in \d+ batches; first error: .*maximum bytes/i);
  assert.match(r.stderr, /rows were not acknowledged/);
});

test("publish - bad input, an unknown table or an unreachable server: one line, non-zero, promptly", { timeout: 180_000 }, async () => {
  await createTable("pub.bad");
  const file = (name: string, text: string): string => {
    const f = join(c.dir, name);
    writeFileSync(f, text);
    return f;
  };
  const good = JSON.stringify({ id: 1, item: "a" });
  const dead = `nats://127.0.0.1:${await freePort()}`;
  const cases: Array<[string, string[], number, RegExp]> = [
    ["unknown table", ["publish", "pub.nosuch", file("u.jsonl", good + "\n"), "--nats", c.nats.url], 2, /unknown table 'pub\.nosuch'/],
    ["malformed JSON", ["publish", "pub.bad", file("m.jsonl", `${good}\n{"id": 2, "item": \n`), "--nats", c.nats.url], 2, /m\.jsonl:2: not valid JSON/],
    ["a wrong type", ["publish", "pub.bad", file("t.jsonl", `${good}\n${JSON.stringify({ id: "two" })}\n`), "--nats", c.nats.url], 2, /t\.jsonl:2: .*column id/],
    ["an unknown column", ["publish", "pub.bad", file("c.jsonl", `${good}\n\n${JSON.stringify({ id: 3, nope: 1 })}\n`), "--nats", c.nats.url], 2, /c\.jsonl:3: unknown column 'nope'/],
    ["a CSV wrong type", ["publish", "pub.bad", file("t.csv", "id,item\n1,a\ntwo,b\n"), "--nats", c.nats.url], 2, /t\.csv:3: .*column id/],
    ["a 10 MB row", ["publish", "pub.bad", file("big.jsonl", `${good}\n${JSON.stringify({ id: 4, item: "x".repeat(10 * 1024 * 1024) })}\n`), "--nats", c.nats.url], 2, /big\.jsonl:2: row is too large/],
    ["publish: a wrong --nats", ["publish", "pub.bad", file("d.jsonl", good + "\n"), "--nats", dead], 1, new RegExp(`cannot reach NATS at ${dead}: `)],
    ["subscribe: a wrong --nats", ["subscribe", "pub.bad", "--nats", dead], 1, new RegExp(`cannot reach NATS at ${dead}: `)],
    ["subscribe: an unknown table", ["subscribe", "pub.nosuch", "--nats", c.nats.url], 2, /unknown table 'pub\.nosuch'/],
  ];
  for (const [what, args, code, message] of cases) {
    const started = Date.now();
    const r = nl(args, 30_000);
    assert.equal(r.signal, null, `${what}: ended by itself (not killed after 30 s)`);
    assert.equal(r.status, code, `${what}: ${r.stderr}`);
    assert.match(r.stderr, message, what);
    assert.doesNotMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`);
    assert.ok(Date.now() - started < 20_000, `${what}: took ${Date.now() - started} ms`);
  }
  // The rows before a bad line were published and said so.
  const partial = nl(["publish", "pub.bad", join(c.dir, "t.jsonl"), "--nats", c.nats.url]);
  assert.match(partial.stdout, /published 1 rows to pub\.bad \(stopped at the error below\): 1 ok/);
});

test("publish - --idempotent: the same file published again is stored once; --help says plain publish duplicates", { timeout: 120_000 }, async () => {
  await createTable("pub.idem");
  const file = rowsFile("idem.jsonl", 3_000);
  // The node's log is printed when this fails: it failed once in CI (the second run never saw its rows visible), and
  // the output then held nothing to say why.
  await withNodeLogsOnFailure(c, async () => {
    const first = nl(["publish", "pub.idem", file, "--nats", c.nats.url, "--idempotent"]);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /published 3000 rows to pub\.idem: 3000 ok$/m);
    assert.match(first.stdout, /duplicate window \(120 s\)/);
    const again = nl(["publish", "pub.idem", file, "--nats", c.nats.url, "--idempotent", "--wait-visible"], 90_000);
    assert.equal(again.signal, null, `the second publish ended by itself (not killed after 90 s); stdout: ${again.stdout}; stderr: ${again.stderr}`);
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stdout, /published 3000 rows to pub\.idem: 3000 duplicate$/m);
  }, 150);
  const read = nl(["read", "pub.idem", "--warehouse", c.warehouse, "--format", "jsonl"]);
  assert.equal(read.stdout.trim().split("\n").length, 3000);
  const help = nl(["publish", "--help"]);
  assert.match(help.stdout, /without --idempotent stores its rows twice/);
  assert.match(help.stdout, /duplicate window/);
});

test("subscribe - a known table still prints its notifications and stops at --count", { timeout: 60_000 }, async () => {
  const sub = spawn(process.execPath, [BIN, "subscribe", "pub.idem", "--nats", c.nats.url, "--count", "1"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  sub.stdout.on("data", (b: Buffer) => (out += b.toString()));
  sub.stderr.on("data", (b: Buffer) => (err += b.toString()));
  const killer = setTimeout(() => sub.kill("SIGKILL"), 30_000);
  const code = await new Promise<number | null>((r) => sub.once("exit", r));
  clearTimeout(killer);
  await withNodeLogsOnFailure(c, async () => {
    assert.equal(code, 0, `subscribe exited by itself within 30 s; stdout: ${out}; stderr: ${err}`);
    assert.equal((JSON.parse(out.trim().split("\n")[0]!) as { table: string }).table, "pub.idem");
  });
});

test("publish, subscribe - a NATS server without JetStream: one line naming the server, exit 1, no stack", { timeout: 60_000 }, async () => {
  const port = await freePort();
  const plain = spawn(process.env["NATSLAKE_NATS_SERVER"] || "nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
  try {
    const url = `nats://127.0.0.1:${port}`;
    await waitFor("the plain nats-server", () => (nl(["subscribe", "pub.x", "--nats", url], 20_000).stderr.includes("cannot reach NATS") ? undefined : true), 15_000, 200);
    const file = rowsFile("plain.jsonl", 1);
    for (const args of [["publish", "pub.x", file, "--nats", url], ["subscribe", "pub.x", "--nats", url]]) {
      const r = nl(args, 30_000);
      assert.equal(r.signal, null, `${args[0]} ended by itself`);
      assert.notEqual(r.status, 0, r.stderr);
      assert.match(r.stderr, new RegExp(`(cannot read the metadata of 'pub\\.x' from NATS at ${url}|unknown table 'pub\\.x')`), r.stderr);
      assert.doesNotMatch(r.stderr, /\n\s+at /, `${args[0]}: no stack trace`);
    }
  } finally {
    plain.kill("SIGKILL");
  }
});
