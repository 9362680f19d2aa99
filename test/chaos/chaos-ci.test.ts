/**
 * The chaos suite's CI subset (`npm run chaos:ci`: one run of each failpoint kind — every writer failpoint, every
 * commit failpoint —, maintenance-ci: a writer killed mid-compaction, then the leader after a
 * COMPACT snapshot, mid-expiration or mid orphan cleanup, and pk-upserts-ci: upserts and deletes into a primary-key
 * table the leader compacts, while a writer is killed mid-flush and the leader mid-compaction and mid-commit) as part
 * of `npm test`, with `--auth`: every server requires users with least-privilege permissions, every process connects
 * as its role, and no nats-server may log a refusal (test/chaos/nats-violations.test.ts shows that check can fail) —
 * the faults meet the permissions production runs with, at no extra run's cost. The runner runs in its own
 * process, writes a JSON report per run under chaos-reports/ci-<time>/, and every report must be ok. Seeds are random
 * and printed; a failed run keeps its logs next to its report (rerun it with `npm run chaos -- <scenario> --seed
 * <seed>`).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ChaosReport } from "../../chaos/types.ts";
import { COMMIT_FAILPOINTS, WRITER_FAILPOINTS } from "../../chaos/faults.ts";
import { chaosReportsDir, runChaosRunner } from "../helpers/chaos-runner.ts";

/**
 * Node's runner ends a whole file at `--test-timeout` whatever a test's own timeout says: scripts/run-tests.mjs gives
 * this file 8 minutes (and runs it after the others, on its own), so the subset must stay below that.
 */
const BUDGET_MS = 7 * 60_000;

test("chaos - the CI subset (each writer and commit failpoint, maintenance kills, primary-key upserts under kills mid-flush and mid-compaction) passes every invariant", { timeout: BUDGET_MS + 60_000 }, async (t) => {
  const reports = chaosReportsDir("ci");
  const started = Date.now();
  // Stopped past the budget (SIGTERM: the runner stops every process it started).
  const { code, out } = await runChaosRunner(["run", "--ci", "--auth", "--reports", reports], BUDGET_MS + 30_000);
  const elapsed = Date.now() - started;
  t.diagnostic(`chaos CI subset: exit ${code} after ${(elapsed / 1000).toFixed(0)} s; reports in ${reports}`);
  for (const line of out.split("\n").filter((l) => /^(PASS|FAIL)|seed|recovered|^\s+(ok|FAIL) /.test(l))) t.diagnostic(line);
  const files = readdirSync(reports).filter((f) => f.endsWith(".json"));
  const runs = files.map((f) => JSON.parse(readFileSync(join(reports, f), "utf8")) as ChaosReport);
  assert.ok(runs.length >= 4, `a report per CI scenario (got ${runs.length}):\n${out.slice(-4000)}`);
  for (const r of runs) {
    const failed = Object.entries(r.invariants).filter(([, v]) => !v.ok);
    assert.ok(r.ok, `${r.scenario} (seed ${r.seed}) failed: ${r.error ?? failed.map(([k, v]) => `${k}: ${v.detail}`).join("; ")}`);
    assert.ok(r.faults.length > 0 && r.faults.every((f) => f.fired !== false), `${r.scenario}: every planned fault happened`);
    assert.ok(r.rows.acknowledged > 0 && r.lost === 0 && r.duplicated === 0 && r.reordered === 0);
    assert.equal(r.auth, true, `${r.scenario}: run with users and least-privilege permissions`);
    assert.match(r.invariants["permissions"]?.detail ?? "", /no permission or authorization violation in the 3 nats-server logs/, `${r.scenario}: no nats-server logged a refusal`);
  }
  const points = new Set(runs.flatMap((r) => r.faults.map((f) => String(f.detail?.["point"] ?? ""))).filter(Boolean));
  const missing = [...WRITER_FAILPOINTS, ...COMMIT_FAILPOINTS].filter((p) => !points.has(p));
  assert.deepEqual(missing, [], `every writer and commit failpoint fired: ${[...points].join(", ")}`);
  const maintenance = runs.find((r) => r.scenario === "maintenance-ci");
  assert.ok(maintenance, "the maintenance-ci scenario ran");
  assert.equal(maintenance.faults.length, 2, "a writer killed mid-compaction, the leader mid-maintenance");
  assert.ok(maintenance.invariants["compaction"]?.ok, "writer-side compaction ran and bounded the files per bucket");
  const pkRun = runs.find((r) => r.scenario === "pk-upserts-ci");
  const pk = pkRun?.pk;
  assert.ok(pkRun && pk, "the pk-upserts-ci scenario ran and judged the primary-key table");
  assert.ok(pk.changes.acknowledged > pk.keys && pk.pypaimon !== null && pk.enginesAgree, "keys changed again and again; natslake and pypaimon read the same rows");
  assert.ok(pkRun.faults.some((f) => /^leader SIGKILL at compact\./.test(f.name)), "the leader was killed mid-compaction");
  assert.ok(pk.levels.withUpperLevels > 0 && pk.levels.problems === 0 && pk.sequenceProblems === 0, "compactions put files above level 0; levels and sequence numbers checked at every snapshot");
  assert.ok(pk.flushes.changes > 0 && pk.flushes.problems === 0, "changes found in the flushed files, each flushed once within its snapshot's offsets");
  assert.equal(code, 0, out.slice(-4000));
  assert.ok(elapsed < BUDGET_MS, `the CI subset took ${(elapsed / 1000).toFixed(0)} s (budget ${BUDGET_MS / 1000} s)`);
});
