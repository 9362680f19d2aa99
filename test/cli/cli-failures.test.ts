/**
 * The CLI when things go wrong (issue 9): a read-only or impossible warehouse, a closed pipe, a missing warehouse,
 * an unreachable NATS, primary keys without fixed buckets, values that would have been changed silently. Each says what is wrong
 * in one line, without a stack, with its exit code (docs/reference/exit-codes.md: 0 ok, 2 bad input, 3 conflict, 1 other).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { tempDir } from "../helpers/tables.ts";
import { canMount, readOnlyView, type ReadOnlyView } from "../helpers/readonly.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const wh = tempDir();
after(() => wh.cleanup());

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  signal: NodeJS.Signals | null;
}

function nl(args: string[], opts: { env?: Record<string, string>; timeoutMs?: number } = {}): Run {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, NATSLAKE_WAREHOUSE: wh.path, ...opts.env }, encoding: "utf8", timeout: opts.timeoutMs ?? 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, signal: r.signal };
}
const ok = (args: string[]): string => {
  const r = nl(args);
  assert.equal(r.code, 0, `natslake ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
};
const NO_STACK = /^\s+at |\.ts:\d+|node:internal/m;
function fails(r: Run, code: number, message: RegExp, what: string): void {
  assert.equal(r.signal, null, `${what}: killed by ${r.signal} (it hung)`);
  assert.equal(r.code, code, `${what}: exit code ${r.code}, stderr: ${r.stderr}`);
  assert.match(r.stderr, message, what);
  assert.doesNotMatch(r.stderr, NO_STACK, `${what}: no stack trace`);
  assert.equal(r.stderr.trim().split("\n").length, 1, `${what}: one line: ${r.stderr}`);
}

before(() => {
  ok(["table", "create", "f.t", "--columns", "id BIGINT, d DATE, ts TIMESTAMP(3), x DECIMAL(5, 2), f DOUBLE, g FLOAT"]);
  // More output than a pipe holds (64 KiB), so a reader that stops early closes the pipe under the writer.
  const lines: string[] = [];
  for (let i = 0; i < 6000; i++) lines.push(JSON.stringify({ id: i, d: "2026-02-28", x: "1.25", f: i / 7 }));
  writeFileSync(join(wh.path, "many.jsonl"), lines.join("\n") + "\n");
  ok(["write", "f.t", join(wh.path, "many.jsonl"), "--no-progress"]);
});

test("cli failures - values are never changed silently: invalid dates and timestamps, excess decimal scale; -0.0 reads back", () => {
  const cases: Array<[string, RegExp]> = [
    ['{"id": 1, "d": "2026-02-30"}', /bad-value\.jsonl:2: column d: '2026-02-30' is not a valid date: 2026-02 has no day 30/],
    ['{"id": 1, "ts": "2026-02-30T10:00:00"}', /bad-value\.jsonl:2: column ts: '2026-02-30T10:00:00' is not a valid timestamp/],
    ['{"id": 1, "ts": "2026-01-01T25:00:00"}', /bad-value\.jsonl:2: column ts: .* hour 25 is beyond 23/],
    ['{"id": 1, "x": "1.239"}', /bad-value\.jsonl:2: column x: '1\.239' has 3 digits after the decimal point; DECIMAL\(5, 2\) keeps 2/],
    ['{"id": 1, "x": 1.239}', /bad-value\.jsonl:2: column x: '1\.239' has 3 digits/],
  ];
  for (const [line, re] of cases) {
    const f = join(wh.path, "bad-value.jsonl");
    writeFileSync(f, `{"id": 0}\n${line}\n`);
    fails(nl(["write", "f.t", f, "--no-progress"]), 2, re, line);
  }
  assert.equal(ok(["snapshots", "f.t", "--json"]).trim().split("\n").length, 1, "nothing was committed");
  const z = join(wh.path, "zero.jsonl");
  writeFileSync(z, '{"id": -1, "f": -0.0, "g": -0.0, "x": "-0.00"}\n');
  ok(["write", "f.t", z, "--no-progress"]);
  const row = ok(["read", "f.t", "--format", "jsonl"]).split("\n").find((l) => l.startsWith('{"id":-1,'));
  assert.equal(row, '{"id":-1,"d":null,"ts":null,"x":"0.00","f":-0.0,"g":-0.0}');
  assert.ok(Object.is((JSON.parse(row!) as { f: number }).f, -0));
});

test("cli failures - read | head and table describe | true exit quietly when the pipe closes", () => {
  const node = `'${process.execPath}' '${BIN}'`;
  for (const cmd of [`${node} read f.t --format jsonl`, `${node} read f.t`, `${node} table describe f.t`, `${node} snapshots f.t`]) {
    const r = spawnSync("bash", ["-c", `set -o pipefail; ${cmd} | head -c 1 >/dev/null; echo "status=$?"`], { env: { ...process.env, NATSLAKE_WAREHOUSE: wh.path }, encoding: "utf8", timeout: 60_000 });
    assert.match(r.stdout, /status=0/, `${cmd}: ${r.stderr}`);
    assert.equal(r.stderr, "", `${cmd} | head: quiet`);
    const t = spawnSync("bash", ["-c", `set -o pipefail; ${cmd} | true; echo "status=$?"`], { env: { ...process.env, NATSLAKE_WAREHOUSE: wh.path }, encoding: "utf8", timeout: 60_000 });
    assert.match(t.stdout, /status=0/, `${cmd} | true: ${t.stderr}`);
    assert.equal(t.stderr, "", `${cmd} | true: quiet`);
  }
});

test("cli failures - a missing warehouse is said, not listed as empty; a warehouse that cannot be made fails at once", () => {
  const missing = join(wh.path, "no-such-warehouse");
  for (const args of [["table", "list"], ["table", "list", "db"], ["table", "describe", "f.t"], ["read", "f.t"], ["snapshots", "f.t"], ["table", "drop", "f.t"]]) {
    fails(nl([...args, "--warehouse", missing]), 2, new RegExp(`warehouse ${missing} does not exist`), args.join(" "));
  }
  assert.equal(nl(["table", "drop", "f.t", "--if-exists", "--warehouse", missing]).code, 0, "drop --if-exists: nothing to drop is fine");
  assert.equal(existsSync(missing), false, "reading commands make no warehouse");
  // /proc refuses new entries with ENOENT; Node's recursive mkdir retried that forever at 100% CPU.
  fails(nl(["table", "create", "x.y", "--columns", "a INT", "--warehouse", "/proc/natslake-nope"], { timeoutMs: 30_000 }), 1, /cannot create directory \/proc\/natslake-nope: .*\(ENOENT\)/, "create under /proc");
  fails(nl(["table", "create", "x.y", "--columns", "a INT", "--warehouse", "/sys/natslake-nope"], { timeoutMs: 30_000 }), 1, /cannot create directory \/sys\/natslake-nope: /, "create under /sys");
});

test("cli failures - a read-only warehouse: create and write say so (the cause, not the cleanup), exit 1", { skip: !canMount() && "needs mount rights for a read-only bind mount" }, () => {
  let ro: ReadOnlyView | null = null;
  try {
    ro = readOnlyView(wh.path);
    assert.ok(ro !== null);
    fails(nl(["table", "create", "f.new", "--columns", "a INT", "--warehouse", ro.path]), 1, /cannot create directory .*f\.db\/new: read-only file system \(EROFS\)/, "create in a read-only database");
    fails(nl(["table", "create", "g.new", "--columns", "a INT", "--warehouse", join(ro.path, "sub")]), 1, /cannot create directory .*sub: read-only file system \(EROFS\)/, "create a warehouse in a read-only dir");
    const f = join(wh.path, "one.jsonl");
    writeFileSync(f, '{"id": 1}\n');
    const r = nl(["write", "f.t", f, "--no-progress", "--warehouse", ro.path]);
    fails(r, 1, /read-only file system \(EROFS\)/, "write into a read-only warehouse");
    assert.doesNotMatch(r.stderr, /delete /, "the cleanup's failure does not hide the cause");
  } finally {
    ro?.cleanup();
  }
});

test("cli failures - table create --nats with nothing there: 'cannot reach NATS at <url>', exit 1", async () => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const url = `nats://127.0.0.1:${port}`;
  fails(nl(["table", "create", "n.t", "--columns", "a INT", "--nats", url]), 1, new RegExp(`^error: cannot reach NATS at ${url}: `), "--nats to a closed port");
});

test("cli failures - --primary-key without a fixed bucket count is refused at create, saying to set bucket = N; nothing is made", () => {
  fails(nl(["table", "create", "pk.t", "--columns", "id BIGINT NOT NULL, v STRING", "--primary-key", "id"]), 2, /pk\.t: natslake writes primary-key tables with a fixed bucket count; set the option bucket = N/, "--primary-key");
  assert.equal(existsSync(join(wh.path, "pk.db", "t")), false);
});

test("cli failures - natslake node --config with an unknown key: refused naming the nearest setting, exit 2", () => {
  const file = join(wh.path, "node.json");
  writeFileSync(file, JSON.stringify({ nats: "nats://127.0.0.1:1", warehouse: wh.path, roles: ["writer"], comitInterval: "1s" }));
  const r = nl(["node", "--config", file], { timeoutMs: 30_000 });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /comitInterval: unknown setting \(did you mean 'commitInterval'\?\)/);
  assert.doesNotMatch(r.stderr, NO_STACK);
});
