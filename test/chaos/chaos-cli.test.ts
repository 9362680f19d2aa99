/**
 * The chaos suite's command line without running a cluster: `natslake chaos list`, wrong arguments (exit 2 with what
 * is wrong, from the CLI and from the runner), scenario selection by name and prefix, and the seeded generator.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createRng } from "../../chaos/prng.ts";
import { loadScenarios, selectScenarios } from "../../chaos/scenarios/index.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const nl = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", timeout: 60_000 });

test("chaos cli - list names every scenario; wrong arguments exit 2 and say what is wrong", () => {
  const list = nl(["chaos", "list"]);
  assert.equal(list.status, 0, list.stderr);
  for (const name of ["writer-failpoints", "committer-failpoints", "poison", "leader-pause", "redis-restart", "redis-outage", "nats-node-kill", "writer-partition", "disk-full", "slow-fsync", "clock-skew", "maintenance", "maintenance-ci", "pk-upserts", "pk-upserts-ci", "soak", "writer-kill@io.write.mid", "leader-kill@committer.after-snapshot"]) {
    assert.match(list.stdout, new RegExp(`^${name.replace(/[.@]/g, "\\$&")}\\s`, "m"));
  }
  assert.match(list.stdout, /^Every scenario also runs with --s3 .*, --auth \(a NATS user per role.* and --tls \(mutual TLS on NATS and Redis/m, "list names the run variants");
  const help = nl(["chaos", "run", "--help"]);
  assert.match(help.stdout, /--auth\s+users and least-privilege/);
  assert.match(help.stdout, /--tls\s+mutual TLS on the servers/);
  assert.match(help.stdout, /natslake chaos run leader-kill --auth --tls/);
  const cases: Array<[string[], RegExp]> = [
    [["chaos", "run", "--runs", "0"], /--runs must be an integer from 1 to 1000/],
    [["chaos", "run", "--seed", "-3"], /--seed/],
    [["chaos", "run", "--duration", "90"], /--duration must be a duration with a unit/],
    [["chaos", "run", "--duration", "soon"], /--duration must be a duration/],
    [["chaos", "run", "no-such-scenario"], /unknown scenario 'no-such-scenario'; known: writer-failpoints/],
    [["chaos", "run", "--s3", "no-such-scenario"], /unknown scenario 'no-such-scenario'/],
    [["chaos", "run", "--auth", "no-such-scenario"], /unknown scenario 'no-such-scenario'/],
    [["chaos", "run", "--auth", "--tls", "no-such-scenario"], /unknown scenario 'no-such-scenario'/],
  ];
  for (const [args, message] of cases) {
    const r = nl(args);
    assert.equal(r.status, 2, `${args.join(" ")}: exit ${r.status}\n${r.stderr}`);
    assert.match(r.stderr, message, args.join(" "));
  }
});

test("chaos - scenarios are selected by name or prefix; the CI subset and the full suite; seeds replay", async () => {
  const all = await loadScenarios();
  assert.deepEqual(selectScenarios(all, [], true).map((s) => s.name), ["writer-failpoints", "committer-failpoints", "maintenance-ci", "pk-upserts-ci"]);
  const suite = selectScenarios(all, [], false).map((s) => s.name);
  assert.ok(suite.includes("maintenance") && !suite.includes("maintenance-ci"), "the full suite runs maintenance, not its CI form");
  assert.ok(suite.includes("pk-upserts") && !suite.includes("pk-upserts-ci"), "the full suite runs the primary-key workload, not its CI form");
  assert.deepEqual(selectScenarios(all, ["maintenance"], false).map((s) => s.name), ["maintenance"], "an exact name selects only itself");
  assert.deepEqual(suite.slice(0, 12), ["writer-failpoints", "committer-failpoints", "leader-pause", "redis-restart", "redis-outage", "nats-node-kill", "writer-partition", "disk-full", "slow-fsync", "clock-skew", "poison", "soak"]);
  assert.ok(!suite.some((n) => n.includes("@")), "per-failpoint variants run by name only");
  assert.equal(selectScenarios(all, ["writer-kill"], false).length, 6);
  assert.equal(selectScenarios(all, ["leader-kill"], false).length, 5);
  assert.throws(() => selectScenarios(all, ["nope"], false), /unknown scenario 'nope'/);
  const a = createRng(42);
  const b = createRng(42);
  const xs = Array.from({ length: 20 }, () => a.int(5000, 15_000));
  assert.deepEqual(xs, Array.from({ length: 20 }, () => b.int(5000, 15_000)));
  assert.ok(xs.every((x) => x >= 5000 && x <= 15_000));
  assert.notDeepEqual(xs, Array.from({ length: 20 }, ((r) => () => r.int(5000, 15_000))(createRng(43))));
});
