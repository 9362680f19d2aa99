/**
 * `chaos run --auth`: one short scenario that kills the leader (`leader-kill@committer.after-snapshot`: the leading
 * committer dies after its snapshot, before the notification; the other committer takes the Redis lease and the
 * table's lead, the killed one comes back) with users and least-privilege permissions on every server — a NATS user
 * per role, Redis's default user off — and every process connecting as its role. The run must pass every invariant, say that auth was on, and have checked that no
 * nats-server logged a refusal (the `permissions` invariant; test/chaos/nats-violations.test.ts shows it can fail).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ChaosReport } from "../../chaos/types.ts";
import { chaosReportsDir, runChaosRunner } from "../helpers/chaos-runner.ts";

const SCENARIO = "leader-kill@committer.after-snapshot";
const BUDGET_MS = 150_000;

test("chaos --auth - the leader killed mid-run under least-privilege users: every invariant holds, no refusal logged", { timeout: BUDGET_MS + 30_000 }, async (t) => {
  const reports = chaosReportsDir("auth");
  const { code, out } = await runChaosRunner(["run", SCENARIO, "--auth", "--duration", "12s", "--reports", reports], BUDGET_MS);
  for (const line of out.split("\n").filter((l) => /^(PASS|FAIL)|against|^\s+(ok|FAIL) /.test(l))) t.diagnostic(line);

  const files = readdirSync(reports).filter((f) => f.endsWith(".json"));
  assert.equal(files.length, 1, `one report:\n${out.slice(-4000)}`);
  const r = JSON.parse(readFileSync(join(reports, files[0]!), "utf8")) as ChaosReport;
  const failed = Object.entries(r.invariants).filter(([, v]) => !v.ok);
  assert.ok(r.ok, `${r.scenario} (seed ${r.seed}) failed: ${r.error ?? failed.map(([k, v]) => `${k}: ${v.detail}`).join("; ")}`);
  assert.equal(r.auth, true, "the report says auth was on");
  assert.match(out, /auth on \(a user per role/, "the summary says so too");
  const permissions = r.invariants["permissions"];
  assert.ok(permissions?.ok, "the permission invariant was checked");
  assert.match(permissions.detail, /no permission or authorization violation in the 3 nats-server logs \(\d+ lines\)/);
  assert.ok(r.faults.length === 1 && r.faults[0]!.fired !== false, "the leader was killed at its failpoint");
  assert.ok(r.rows.acknowledged > 0 && r.lost === 0 && r.duplicated === 0, "rows acknowledged, none lost or doubled");
  assert.ok(r.subscriber.notifications > 0, "the subscriber (as the consumer user) got snapshot notifications");
  assert.equal(code, 0, out.slice(-4000));
});
