#!/usr/bin/env node
// Runs every *.test.ts under the given folders with node's own test runner (through tsx).
// Node 20's --test does not expand globs, so the files are listed here.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
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
const res = spawnSync(
  process.execPath,
  // A hung test fails after 5 minutes (tests that need longer set their own timeout) instead of hanging the run.
  ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, `--test-timeout=${process.env.TEST_TIMEOUT_MS ?? 300000}`, "--test-reporter=spec", ...files],
  { stdio: "inherit", env: process.env },
);
process.exit(res.status ?? 1);
