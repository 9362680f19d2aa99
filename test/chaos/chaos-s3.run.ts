/**
 * The chaos suite on an S3 warehouse (`npm run test:chaos-s3`; not part of `npm test`, whose 30 minutes it no longer fits): `committer-failpoints` with `--s3` (a SeaweedFS of its own) —
 * every commit failpoint around the snapshot's conditional put, where an object store differs most from a
 * filesystem's `link()`. `writer-failpoints --s3` (`io.write.mid` cutting a PUT half-way among them) runs in the full
 * suite; CI's 30 minutes do not hold both (about 2 minutes each here). The local-directory subset is test/chaos/chaos-ci.test.ts;
 * `poison` is not repeated here (its faults are in the rows, not the storage). The runner runs in its own process,
 * writes a JSON report per run under chaos-reports/ci-s3-<time>/, and every report must be ok. Seeds are random and
 * printed; rerun a failed one with `npm run chaos -- <scenario> --s3 --seed <seed>`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ChaosReport } from "../../chaos/types.ts";
import { chaosReportsDir, runChaosRunner } from "../helpers/chaos-runner.ts";

const SCENARIOS = ["committer-failpoints"];
const BUDGET_MS = 4 * 60_000;

test("chaos on S3 - the committer failpoints pass every invariant with the warehouse in SeaweedFS", { timeout: BUDGET_MS + 60_000 }, async (t) => {
  const reports = chaosReportsDir("ci-s3");
  const started = Date.now();
  // Stopped past the budget (SIGTERM: the runner stops every process it started, SeaweedFS included).
  const { code, out } = await runChaosRunner(["run", ...SCENARIOS, "--s3", "--reports", reports], BUDGET_MS + 30_000);
  const elapsed = Date.now() - started;
  t.diagnostic(`chaos on S3: exit ${code} after ${(elapsed / 1000).toFixed(0)} s; reports in ${reports}`);
  for (const line of out.split("\n").filter((l) => /^(PASS|FAIL)|seed|recovered|warehouse|^\s+(ok|FAIL) /.test(l))) t.diagnostic(line);
  const files = readdirSync(reports).filter((f) => f.endsWith(".json"));
  const runs = files.map((f) => JSON.parse(readFileSync(join(reports, f), "utf8")) as ChaosReport);
  assert.deepEqual(runs.map((r) => r.scenario).sort(), [...SCENARIOS].sort(), `a report per scenario:\n${out.slice(-4000)}`);
  for (const r of runs) {
    const failed = Object.entries(r.invariants).filter(([, v]) => !v.ok);
    assert.ok(r.ok, `${r.scenario} (seed ${r.seed}) failed: ${r.error ?? failed.map(([k, v]) => `${k}: ${v.detail}`).join("; ")}`);
    assert.match(r.warehouse ?? "", /^S3 \(SeaweedFS /, `${r.scenario} ran on S3`);
    assert.ok(r.faults.length > 0 && r.faults.every((f) => f.fired !== false), `${r.scenario}: every planned fault happened`);
    assert.ok(r.rows.acknowledged > 0 && r.lost === 0 && r.duplicated === 0 && r.reordered === 0);
  }
  const points = new Set(runs.flatMap((r) => r.faults.map((f) => String(f.detail?.["point"] ?? ""))).filter(Boolean));
  assert.equal(points.size, 5, `every commit failpoint fired once: ${[...points].join(", ")}`);
  assert.equal(code, 0, out.slice(-4000));
  assert.ok(elapsed < BUDGET_MS, `the S3 subset took ${(elapsed / 1000).toFixed(0)} s (budget ${BUDGET_MS / 1000} s)`);
});
