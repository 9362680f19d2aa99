/**
 * The runner's handling of `Scenario.setup` without a cluster: a setup that says the scenario cannot run on this
 * machine gives a SKIP report with the reason (neither passed nor failed), its cleanup is not needed, and nothing
 * is started; a setup that throws is a harness error (FAIL) and the cleanup of a setup that succeeded always runs;
 * with `--s3`, a scenario that puts its warehouse in a directory of its own is skipped.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runScenario, summary } from "../../chaos/runner.ts";
import type { NatsChoice } from "../../chaos/nats-choice.ts";
import type { ChaosReport, Scenario } from "../../chaos/types.ts";

// A nats-server that cannot exist: the topology must never be started in these tests.
const nats: NatsChoice = { bin: "/nonexistent/nats-server", version: "0", syncAlways: false, fallback: null, label: "none" };

function quiet<T>(f: () => Promise<T>): Promise<T> {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = (() => true) as typeof process.stdout.write;
  return f().finally(() => {
    process.stdout.write = write;
  });
}

test("runner - a setup that cannot run here gives a SKIP report with its reason", async () => {
  const reports = mkdtempSync(join(tmpdir(), "natslake-chaos-reports-"));
  try {
    let ran = false;
    const s: Scenario = {
      name: "needs-mount",
      description: "",
      defaultDurationMs: 10_000,
      setup: () => Promise.resolve({ skip: "cannot mount a small disk: not running as root" }),
      run: () => {
        ran = true;
        return Promise.resolve();
      },
    };
    const r = await quiet(() => runScenario({ scenario: s, seed: 1, run: 1, nats, reportsDir: reports, keep: false, verbose: false }));
    assert.equal(ran, false);
    assert.equal(r.skipped, "cannot mount a small disk: not running as root");
    assert.equal(r.ok, false);
    assert.equal(r.error, undefined);
    assert.equal(r.logsDir, null, "no logs copied for a skipped run");
    const files = readdirSync(reports).filter((f) => f.endsWith(".json"));
    assert.equal(files.length, 1);
    const onDisk = JSON.parse(readFileSync(join(reports, files[0]!), "utf8")) as ChaosReport;
    assert.equal(onDisk.skipped, r.skipped);
    assert.match(summary(r, "x.json"), /^SKIP {2}needs-mount[\s\S]*skipped: cannot mount a small disk/);
  } finally {
    rmSync(reports, { recursive: true, force: true });
  }
});

test("runner - a failing setup is a harness error; the cleanup of a successful setup runs even when the topology fails", async () => {
  const reports = mkdtempSync(join(tmpdir(), "natslake-chaos-reports-"));
  try {
    const broken: Scenario = { name: "broken-setup", description: "", defaultDurationMs: 10_000, setup: () => Promise.reject(new Error("boom")), run: () => Promise.resolve() };
    const r1 = await quiet(() => runScenario({ scenario: broken, seed: 1, run: 1, nats, reportsDir: reports, keep: false, verbose: false }));
    assert.equal(r1.ok, false);
    assert.equal(r1.skipped, undefined);
    assert.match(r1.error ?? "", /boom/);

    let cleaned = 0;
    const s: Scenario = {
      name: "cleanup-runs",
      description: "",
      defaultDurationMs: 10_000,
      setup: () => Promise.resolve({ cleanup: () => Promise.resolve(void cleaned++) }),
      run: () => Promise.resolve(),
    };
    // The topology cannot start (no such nats-server): the run fails, the cleanup still runs once.
    const r2 = await quiet(() => runScenario({ scenario: s, seed: 1, run: 1, nats, reportsDir: reports, keep: false, verbose: false }));
    assert.equal(r2.ok, false);
    assert.ok(r2.error !== undefined);
    assert.equal(cleaned, 1);
  } finally {
    rmSync(reports, { recursive: true, force: true });
  }
});

test("runner - with --s3, a scenario that needs its warehouse in a directory of its own is skipped, saying why; its cleanup runs", async () => {
  const reports = mkdtempSync(join(tmpdir(), "natslake-chaos-reports-"));
  try {
    let cleaned = 0;
    const s: Scenario = {
      name: "tmpfs-warehouse",
      description: "",
      defaultDurationMs: 10_000,
      setup: (run) => Promise.resolve({ topology: { warehouse: join(run.dir, "small-disk") }, cleanup: () => Promise.resolve(void cleaned++) }),
      run: () => Promise.resolve(),
    };
    const r = await quiet(() => runScenario({ scenario: s, seed: 1, run: 1, nats, reportsDir: reports, keep: false, verbose: false, s3: true }));
    assert.match(r.skipped ?? "", /^tmpfs-warehouse needs its warehouse in a directory of its own \(.*small-disk\); it does not run with --s3$/);
    assert.equal(r.warehouse, "S3");
    assert.equal(r.error, undefined);
    assert.equal(cleaned, 1);
  } finally {
    rmSync(reports, { recursive: true, force: true });
  }
});
