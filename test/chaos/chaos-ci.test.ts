/**
 * The chaos suite's CI subset (`npm run chaos:ci`: one run of each failpoint kind — every writer failpoint, every
 * commit failpoint — and the poison scenario) as part of `npm test`: the runner runs in its own process, writes a
 * JSON report per run under chaos-reports/ci-<time>/, and every report must be ok. Seeds are random and printed;
 * a failed run keeps its logs next to its report (rerun it with `npm run chaos -- <scenario> --seed <seed>`).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ChaosReport } from "../../chaos/types.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const BUDGET_MS = 5 * 60_000;

test("chaos - the CI subset (each writer and commit failpoint, poison) passes every invariant", { timeout: BUDGET_MS + 60_000 }, async (t) => {
  const reports = join(REPO, "chaos-reports", `ci-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  const started = Date.now();
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO, "chaos/main.ts"), "run", "--ci", "--reports", reports], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out += b.toString()));
  // The runner stops every process it started when it gets SIGTERM; past the budget it gets one.
  const timer = setTimeout(() => child.kill("SIGTERM"), BUDGET_MS + 30_000);
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  clearTimeout(timer);
  const elapsed = Date.now() - started;
  t.diagnostic(`chaos CI subset: exit ${code} after ${(elapsed / 1000).toFixed(0)} s; reports in ${reports}`);
  for (const line of out.split("\n").filter((l) => /^(PASS|FAIL)|seed|recovered|^\s+(ok|FAIL) /.test(l))) t.diagnostic(line);
  const files = readdirSync(reports).filter((f) => f.endsWith(".json"));
  const runs = files.map((f) => JSON.parse(readFileSync(join(reports, f), "utf8")) as ChaosReport);
  assert.ok(runs.length >= 3, `a report per CI scenario (got ${runs.length}):\n${out.slice(-4000)}`);
  for (const r of runs) {
    const failed = Object.entries(r.invariants).filter(([, v]) => !v.ok);
    assert.ok(r.ok, `${r.scenario} (seed ${r.seed}) failed: ${r.error ?? failed.map(([k, v]) => `${k}: ${v.detail}`).join("; ")}`);
    assert.ok(r.faults.length > 0 && r.faults.every((f) => f.fired !== false), `${r.scenario}: every planned fault happened`);
    assert.ok(r.rows.acknowledged > 0 && r.lost === 0 && r.duplicated === 0 && r.reordered === 0);
  }
  const points = new Set(runs.flatMap((r) => r.faults.map((f) => String(f.detail?.["point"] ?? ""))).filter(Boolean));
  assert.equal(points.size, 11, `every writer and commit failpoint fired once: ${[...points].join(", ")}`);
  assert.equal(code, 0, out.slice(-4000));
  assert.ok(elapsed < BUDGET_MS, `the CI subset took ${(elapsed / 1000).toFixed(0)} s (budget ${BUDGET_MS / 1000} s)`);
});
