#!/usr/bin/env node
// Runs every *.test.ts under the given folders with node's own test runner (through tsx).
// Node 20's --test does not expand globs, so the files are listed here.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnSync } from "node:child_process";

const roots = process.argv.slice(2);
if (roots.length === 0) roots.push("test");
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith(".test.ts")) files.push(p);
  }
};
for (const r of roots) {
  if (statSync(r).isDirectory()) walk(r);
  else files.push(r);
}
if (files.length === 0) {
  console.error("no test files found under", roots.join(", "));
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? "2";
// Every test runs against the current nats-server scripts/setup.sh built (NATSLAKE_NATS_SERVER, when set, is an
// explicit choice and wins). Debian's 2.9.10 is below the supported 2.10 and panics when a message is read from a
// stream another client is still creating, so the tests refuse to fall back to it silently.
if (!process.env.NATSLAKE_NATS_SERVER_CURRENT) {
  const version = readFileSync(new URL("./nats-server-version", import.meta.url), "utf8").trim();
  const bin = join(process.env.NATSLAKE_TOOLS_DIR ?? join(homedir(), "go", "natslake-bin"), `nats-server-${version}`, "nats-server");
  if (existsSync(bin)) process.env.NATSLAKE_NATS_SERVER_CURRENT = bin;
}
if (!process.env.NATSLAKE_NATS_SERVER) {
  if (!process.env.NATSLAKE_NATS_SERVER_CURRENT) {
    console.error("no current nats-server: run scripts/setup.sh (it builds one with `go install`), or set NATSLAKE_NATS_SERVER");
    process.exit(1);
  }
  process.env.NATSLAKE_NATS_SERVER = process.env.NATSLAKE_NATS_SERVER_CURRENT;
}
// A hung test fails after 5 minutes instead of hanging the run. Node's --test-timeout also ends a whole FILE at that
// time, whatever its tests' own timeouts say; the files below need longer, so they run on their own (after the rest,
// one at a time — the chaos subset then has the machine's cores to itself) under their own cap.
const REPO = fileURLToPath(new URL("..", import.meta.url));
const LONG_FILES = new Map([
  [resolve(REPO, "test", "chaos", "chaos-ci.test.ts"), 480_000],
]);
// Files start in the order given, as many at a time as the concurrency allows: the longest first (their durations as
// test/durations.json last recorded them; a file not recorded yet counts as a long one), so that no long file starts
// last and runs on alone at the end. TEST_RECORD_DURATIONS=1 records this run's durations there.
const DURATIONS = resolve(REPO, "test", "durations.json");
const recorded = existsSync(DURATIONS) ? JSON.parse(readFileSync(DURATIONS, "utf8")) : {};
const UNRECORDED_S = 60;
const durationOf = (f) => recorded[relative(REPO, resolve(f))] ?? UNRECORDED_S;
files.sort((a, b) => durationOf(b) - durationOf(a));
const reporters = ["--test-reporter=spec", "--test-reporter-destination=stdout"];
if (process.env.TEST_RECORD_DURATIONS === "1") {
  process.env.TEST_DURATIONS_OUT = DURATIONS;
  reporters.push(`--test-reporter=${resolve(REPO, "scripts", "test-durations-reporter.mjs")}`, "--test-reporter-destination=stdout");
}
const run = (list, cap, concurrencyOf) =>
  spawnSync(process.execPath, ["--import", "tsx", "--test", `--test-concurrency=${concurrencyOf}`, `--test-timeout=${cap}`, ...reporters, ...list], { stdio: "inherit", env: process.env }).status ?? 1;
const defaultCap = Number(process.env.TEST_TIMEOUT_MS ?? 300000);
const long = files.filter((f) => LONG_FILES.has(resolve(f)));
const rest = files.filter((f) => !LONG_FILES.has(resolve(f)));
let status = rest.length > 0 ? run(rest, defaultCap, concurrency) : 0;
for (const f of long) status = run([f], Math.max(defaultCap, LONG_FILES.get(resolve(f))), 1) || status;
process.exit(status);
