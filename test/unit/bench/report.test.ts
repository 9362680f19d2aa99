/**
 * bench/report.ts: a fixture results file renders into the expected page (each benchmark's run, machine, command,
 * targets met or missed, figures, chart links); a file without a benchmark, or from before sections had a command,
 * machine or series, renders what it has; the primary-key benchmarks get one summary before their sections; the CLI
 * writes the page, its charts and the results it was made from, and refuses bad arguments with one line.
 */
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readResults, type BenchResults } from "../../../bench/figures.ts";
import { chartFile, formatValue, renderPage, writePage } from "../../../bench/report.ts";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const FIXTURE = fileURLToPath(new URL("../../fixtures/bench/results.json", import.meta.url));
const EXPECTED_PAGE = fileURLToPath(new URL("../../fixtures/bench/page.md", import.meta.url));

const fixture = (): BenchResults => readResults(FIXTURE)!;

function tempDir(tc: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "natslake-bench-report-"));
  tc.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The lines of the page's section `## name`, up to the next section. */
function section(md: string, name: string): string {
  const from = md.indexOf(`\n## ${name}\n`);
  assert.ok(from >= 0, `no section ${name}`);
  const to = md.indexOf("\n## ", from + 1);
  return md.slice(from, to < 0 ? undefined : to);
}

test("report - the fixture results render into the expected page", () => {
  const md = renderPage(fixture(), "benchmarks");
  assert.equal(md, readFileSync(EXPECTED_PAGE, "utf8"));
});

test("report - each benchmark has its run, machine, command, targets met or missed, figures and chart links", () => {
  const md = renderPage(fixture(), "benchmarks");
  assert.match(md, /^# Benchmarks\n/);
  assert.match(md, /^Run started 2026-12-02 10:00 UTC; its last benchmark finished 2026-12-02 10:13 UTC\.$/m);
  assert.match(md, /^Not in this run: table_core, scan_files, maintenance, consumer, pk_write, cluster_pk, pk_engines\.$/m);
  assert.ok(md.indexOf("\n## decode\n") < md.indexOf("\n## cluster\n"), "sections in the order npm run bench runs them");

  const cluster = section(md, "cluster");
  assert.ok(cluster.includes("- **Ran:** started 2026-12-02 10:01 UTC, took 12 min 30 s; load average at its start 1.25 1.00 0.75\n"));
  assert.ok(cluster.includes("- **Machine:** 2 × Test CPU @ 2.0GHz, 23.43 GiB, Linux 6.1.0-test, Node v20.20.2, nats-server 2.9.10\n"));
  assert.ok(cluster.includes("- **Command:** `CLUSTER_BENCH_ONLY=1,latency node --import tsx bench/cluster.bench.ts 100000`\n"));
  for (const row of ["| writers_1_rows_per_sec | 549,123 | ≥ 250,000 | ✔ met |", "| writers_1_raw_ratio | 0.160 | ≥ 0.35 | ✘ missed |", "| no_list_on_commit_path | 3 | = 0 | – not judged |"]) assert.ok(cluster.includes(row), row);
  for (const row of ["| latency_p99_ms | 163 |", "| notification_in_order | yes |", "| note | a\\|b |", "| missing | – |"]) assert.ok(cluster.includes(row), row);
  assert.ok(cluster.includes("![Publish → visible latency per 1 s of publishing](benchmarks/cluster.latency.svg)"));
  assert.ok(cluster.includes("![Catch-up: the writer node's RSS \\[MB\\]](benchmarks/cluster.catch_up_rss.svg)"), "brackets in a title are escaped");
  assert.ok(cluster.includes("*A series that sampled nothing: no samples in this run.*"), "a series without points is named, not drawn");
  assert.ok(!cluster.includes("cluster.empty.svg"));

  const decode = section(md, "decode");
  assert.ok(decode.includes("- **Machine:** 2 × Test CPU @ 2.0GHz, 23.43 GiB, Linux 6.1.0-test, Node v20.20.2\n"), "no nats-server for a benchmark that starts none");
  assert.ok(!decode.includes("| target |"), "no targets table for a benchmark without targets");
  assert.ok(!decode.includes("!["), "no charts for a benchmark without series");
  assert.equal(formatValue(12.345), "12.3");
  assert.equal(formatValue(-0.5), "-0.500");
});

test("report - sections are in the suite's order whatever order they finished in; others follow", () => {
  const r = fixture();
  const { decode, cluster } = r.benchmarks;
  r.benchmarks = { extra_check: decode!, cluster: cluster!, decode: decode! };
  const md = renderPage(r, "benchmarks");
  const at = (name: string): number => md.indexOf(`\n## ${name}\n`);
  assert.ok(at("decode") >= 0 && at("decode") < at("cluster") && at("cluster") < at("extra_check"), "decode, cluster, then the section the suite does not know");
  assert.ok(md.includes("- [decode](#decode)\n- [cluster](#cluster)\n- [extra_check](#extra_check)\n"), "the contents in the same order");
});

test("report - a results file missing a benchmark renders without it; an empty one says so", () => {
  const r = fixture();
  delete r.benchmarks["cluster"];
  const md = renderPage(r, "benchmarks");
  assert.ok(!md.includes("## cluster") && !md.includes("cluster."), "nothing of the missing benchmark");
  assert.ok(md.includes("## decode"));
  assert.match(md, /^Not in this run: table_core, scan_files, cluster, maintenance, consumer, pk_write, cluster_pk, pk_engines\.$/m);
  const none = renderPage({ ...r, benchmarks: {} }, "benchmarks");
  assert.match(none, /^No benchmark has recorded figures in this results file\.$/m);
  assert.ok(!none.includes("Not in this run"));
});

test("report - the primary-key benchmarks get one summary before their first section: writers side by side, their targets", () => {
  const r = fixture();
  const base = r.benchmarks["decode"]!;
  r.benchmarks["cluster_pk"] = { ...base, figures: { keys: 1_000_000, b_p99_ms: 320 }, targets: [{ name: "b_p99_ms", measured: 320, target: "≤ 450", met: true }, { name: "stalled_s", measured: null, target: "≤ 0", met: null }] };
  r.benchmarks["pk_write"] = {
    ...base,
    figures: { rows: 1_000_000, keys: 900_000, buckets: 4, natslake_rows_per_sec: 150_000, java_rows_per_sec: 200_000, pypaimon_rows_per_sec: 50_000 },
    targets: [{ name: "natslake_vs_java_ratio", measured: 0.75, target: "≥ 1", met: false }],
  };
  const md = renderPage(r, "benchmarks");
  assert.ok(md.includes("- [cluster](#cluster)\n- [Primary-key tables](#primary-key-tables)\n- [pk_write](#pk_write)\n- [cluster_pk](#cluster_pk)\n"), "the summary in the contents, before the first primary-key section");
  const at = (heading: string): number => md.indexOf(`\n## ${heading}\n`);
  assert.ok(at("cluster") < at("Primary-key tables") && at("Primary-key tables") < at("pk_write") && at("pk_write") < at("cluster_pk"));
  const summary = section(md, "Primary-key tables");
  assert.ok(summary.includes("1,000,000 upserts over 900,000 keys into 4 buckets"));
  for (const row of [
    "| natslake BatchWriter.upsert | 150,000 | 1.00× |",
    "| Java Paimon BatchTableWrite, one thread | 200,000 | 0.75× |",
    "| pypaimon write_arrow | 50,000 | 3.00× |",
    "| pk_write | natslake_vs_java_ratio | 0.750 | ≥ 1 | ✘ missed |",
    "| cluster_pk | b_p99_ms | 320 | ≤ 450 | ✔ met |",
    "| cluster_pk | stalled_s | – | ≤ 0 | – not judged |",
  ])
    assert.ok(summary.includes(row), row);
  assert.ok(summary.includes("(section [pk_write](#pk_write))") && summary.includes("(section [cluster_pk](#cluster_pk))"));
  // One of the two alone: the summary says the other is not in this run, and has no writers table without pk_write.
  delete r.benchmarks["pk_write"];
  const alone = section(renderPage(r, "benchmarks"), "Primary-key tables");
  assert.ok(alone.includes("(pk_write: not in this run)") && !alone.includes("| writer |") && alone.includes("| cluster_pk | b_p99_ms |"));
  // Neither: no summary at all.
  delete r.benchmarks["cluster_pk"];
  assert.ok(!renderPage(r, "benchmarks").includes("Primary-key tables"));
});

test("report - a section written before commands, machines and series were recorded renders what it has", () => {
  const r = fixture();
  r.benchmarks["decode"] = { finishedAt: "2026-12-02T10:00:47.000Z", loadAverageAtStart: [0, 0, 0], figures: { rows: 5 }, targets: [] };
  r.machine.natsServer["decode"] = "2.10.1";
  const decode = section(renderPage(r, "benchmarks"), "decode");
  assert.ok(decode.includes("- **Ran:** finished 2026-12-02 10:00 UTC; load average at its start 0.00 0.00 0.00\n"));
  assert.ok(decode.includes("- **Machine:** 2 × Test CPU @ 2.0GHz, 23.43 GiB, Linux 6.1.0-test, Node v20.20.2, nats-server 2.10.1\n"), "the file's machine");
  assert.ok(decode.includes("- **Command:** not recorded in this results file\n"));
  assert.ok(decode.includes("| rows | 5 |"));
});

test("report - writePage writes the page, a chart per drawable series and the results; charts of an earlier run go", async (tc) => {
  const dir = tempDir(tc);
  const page = join(dir, "docs", "benchmarks.md");
  mkdirSync(join(dir, "docs", "benchmarks"), { recursive: true });
  writeFileSync(join(dir, "docs", "benchmarks", "old.gone.svg"), "<svg/>");
  writeFileSync(join(dir, "docs", "benchmarks", "notes.txt"), "not a chart");
  const written = await writePage(fixture(), page);
  assert.equal(readFileSync(page, "utf8"), renderPage(fixture(), "benchmarks"));
  assert.deepEqual(readdirSync(join(dir, "docs", "benchmarks")).sort(), [chartFile("cluster", "catch_up_rss"), chartFile("cluster", "latency"), "notes.txt", "results.json"].sort());
  assert.deepEqual(readResults(join(dir, "docs", "benchmarks", "results.json")), fixture(), "the results the page was made from, beside it");
  assert.equal(written.length, 4);
  for (const f of written) assert.ok(existsSync(f), f);
  assert.match(readFileSync(join(dir, "docs", "benchmarks", "cluster.latency.svg"), "utf8"), /^<svg /);
});

test("report - the CLI writes the page from --file; --stdout prints it; bad input is a one-line error", (tc) => {
  const dir = tempDir(tc);
  const run = (args: string[]): ReturnType<typeof spawnSync> => spawnSync(process.execPath, ["--import", "tsx", "bench/report.ts", ...args], { cwd: REPO, encoding: "utf8", timeout: 120_000 });
  const page = join(dir, "out", "page.md");
  const ok = run(["--file", FIXTURE, "--page", page]);
  assert.equal(ok.status, 0, String(ok.stderr));
  assert.match(String(ok.stdout), /^bench report: 4 files written from /);
  assert.equal(readFileSync(page, "utf8"), renderPage(fixture(), "page"));
  assert.ok(existsSync(join(dir, "out", "page", "cluster.latency.svg")));

  const printed = run(["--file", FIXTURE, "--page", join(dir, "elsewhere.md"), "--stdout"]);
  assert.equal(printed.status, 0, String(printed.stderr));
  assert.equal(printed.stdout, renderPage(fixture(), "elsewhere"));
  assert.ok(!existsSync(join(dir, "elsewhere.md")) && !existsSync(join(dir, "elsewhere")), "--stdout writes nothing");

  const missing = run(["--file", join(dir, "none.json"), "--page", page]);
  assert.equal(missing.status, 1);
  assert.match(String(missing.stderr), /^bench report: no results file at .*none\.json: run npm run bench/);
  assert.equal(String(missing.stderr).trim().split("\n").length, 1);
  writeFileSync(join(dir, "bad.json"), JSON.stringify({ startedAt: "x", machine: {}, benchmarks: {} }));
  const bad = run(["--file", join(dir, "bad.json"), "--page", page]);
  assert.equal(bad.status, 1);
  assert.match(String(bad.stderr), /^bench report: .*bad\.json is not a benchmark results file: machine\.cpuModel/);
  const stray = run(["100000"]);
  assert.equal(stray.status, 2);
  assert.equal(String(stray.stderr).trim().split("\n").length, 1);
});
