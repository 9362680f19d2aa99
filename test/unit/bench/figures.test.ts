/**
 * bench/figures.ts on a temporary file: sections merge by benchmark, each with its command, machine and series; a
 * reset starts one run's file; every write is whole (a reader in another thread never sees a partial file); targets
 * are judged against their bounds. (bench/report.ts has its own test.)
 */
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { commandLine, emptyResults, readResults, recordFigures, resetResults, resultsText, targetAtLeast, targetAtMost, writeResults, type BenchResults, type Series } from "../../../bench/figures.ts";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/** A temporary directory for the test's file (`<dir>/out/latest.json`, its folder not yet made), removed after it. */
function tempFile(tc: TestContext): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "natslake-bench-json-"));
  tc.after(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, file: join(dir, "out", "latest.json") };
}

/** recordFigures prints where it wrote; the tests keep stdout for the runner. */
function quietly<T>(f: () => T): T {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = (() => true) as typeof process.stdout.write;
  try {
    return f();
  } finally {
    process.stdout.write = write;
  }
}

const started = { at: new Date("2026-12-02T10:00:00Z"), load: [0.5, 0.25, 0.125] as [number, number, number] };

test("figures - two benchmarks merge into one file, keyed by benchmark, each with its own finishedAt", (tc) => {
  const t = tempFile(tc);
  quietly(() => recordFigures("decode", { rows: 100_000, direct_rows_per_sec: 4_100_000.5 }, [], { file: t.file, now: new Date("2026-12-02T10:01:00Z"), started }));
  const after = quietly(() =>
    recordFigures("cluster", { latency_p99_ms: 160, notification_in_order: true }, [targetAtMost("latency_p99_ms", 160, 200)], {
      file: t.file,
      now: new Date("2026-12-02T10:05:00Z"),
      natsServer: "2.12.15",
      started: { at: new Date("2026-12-02T10:02:00Z"), load: [1, 1, 1] },
    }),
  );
  const read = readResults(t.file)!;
  assert.deepEqual(read, after);
  assert.deepEqual(Object.keys(read.benchmarks), ["decode", "cluster"]);
  // The file's start is the first benchmark's (no reset before it); each section keeps its own times.
  assert.equal(read.startedAt, "2026-12-02T10:00:00.000Z");
  assert.deepEqual(read.machine.loadAverageAtStart, [0.5, 0.25, 0.13]);
  assert.equal(read.benchmarks["decode"]!.finishedAt, "2026-12-02T10:01:00.000Z");
  assert.equal(read.benchmarks["cluster"]!.finishedAt, "2026-12-02T10:05:00.000Z");
  assert.deepEqual(read.benchmarks["cluster"]!.loadAverageAtStart, [1, 1, 1]);
  assert.deepEqual(read.benchmarks["decode"]!.figures, { rows: 100_000, direct_rows_per_sec: 4_100_000.5 });
  assert.deepEqual(read.benchmarks["cluster"]!.targets, [{ name: "latency_p99_ms", measured: 160, target: "≤ 200", met: true }]);
  assert.deepEqual(read.machine.natsServer, { cluster: "2.12.15" });
  assert.equal(read.machine.cpuCount, cpus().length);
  assert.equal(read.machine.node, process.version);
  assert.ok(read.machine.memoryGiB > 0 && read.machine.kernel.length > 0 && read.machine.cpuModel.length > 0);

  // A benchmark run again replaces its section (and moves it last: the order they finished in).
  quietly(() => recordFigures("decode", { rows: 200_000 }, [], { file: t.file, started }));
  const again = readResults(t.file)!;
  assert.deepEqual(Object.keys(again.benchmarks), ["cluster", "decode"]);
  assert.deepEqual(again.benchmarks["decode"]!.figures, { rows: 200_000 });
  assert.equal(again.startedAt, "2026-12-02T10:00:00.000Z");
  assert.deepEqual(again.machine.natsServer, { cluster: "2.12.15" });
});

test("figures - a reset starts a file with no sections; the next benchmark merges into it", (tc) => {
  const t = tempFile(tc);
  quietly(() => recordFigures("decode", { rows: 1 }, [], { file: t.file, started }));
  const reset = resetResults(t.file, new Date("2026-12-03T08:00:00Z"));
  assert.deepEqual(readResults(t.file), reset);
  assert.deepEqual(reset.benchmarks, {});
  assert.deepEqual(reset.machine.natsServer, {});
  assert.equal(reset.startedAt, "2026-12-03T08:00:00.000Z");
  quietly(() => recordFigures("table_core", { rows: 5 }, [], { file: t.file, started }));
  const r = readResults(t.file)!;
  assert.equal(r.startedAt, "2026-12-03T08:00:00.000Z", "the reset's start, not the benchmark's");
  assert.deepEqual(Object.keys(r.benchmarks), ["table_core"]);
});

test("figures - the reset CLI honours NATSLAKE_BENCH_JSON; bad arguments exit non-zero with one line", (tc) => {
  const t = tempFile(tc);
  writeFileSync(join(t.dir, "x.json"), "old");
  const env = { ...process.env, NATSLAKE_BENCH_JSON: join(t.dir, "x.json") };
  const ok = spawnSync(process.execPath, ["--import", "tsx", "bench/figures.ts", "--reset"], { cwd: REPO, env, encoding: "utf8", timeout: 120_000 });
  assert.equal(ok.status, 0, ok.stderr);
  assert.deepEqual(readResults(join(t.dir, "x.json"))!.benchmarks, {});
  const bad = spawnSync(process.execPath, ["--import", "tsx", "bench/figures.ts", "--rest"], { cwd: REPO, env, encoding: "utf8", timeout: 120_000 });
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr.trim().split("\n").length, 1);
});

test("figures - names must be lower_snake_case; non-finite numbers are recorded as null", (tc) => {
  const t = tempFile(tc);
  assert.throws(() => recordFigures("decode", { rowsPerSec: 1 }, [], { file: t.file }), /lower_snake_case: rowsPerSec/);
  assert.throws(() => recordFigures("table-core", { rows: 1 }, [], { file: t.file }), /lower_snake_case: table-core/);
  assert.throws(() => recordFigures("decode", { rows: 1 }, [targetAtLeast("p99 ms", 1, 2)], { file: t.file }), /lower_snake_case: p99 ms/);
  assert.equal(readResults(t.file), null, "nothing written when a name is refused");
  quietly(() => recordFigures("decode", { ratio: NaN, rate: Infinity, fine: 1.5 }, [targetAtLeast("ratio", NaN, 1)], { file: t.file }));
  const s = readResults(t.file)!.benchmarks["decode"]!;
  assert.deepEqual(s.figures, { ratio: null, rate: null, fine: 1.5 });
  assert.deepEqual(s.targets, [{ name: "ratio", measured: null, target: "≥ 1", met: null }]);
});

test("figures - a file that is not a results file is refused by readResults and replaced by recordFigures", (tc) => {
  const t = tempFile(tc);
  mkdirSync(join(t.dir, "out"));
  writeFileSync(t.file, "{ half a file");
  assert.throws(() => readResults(t.file), /is not a benchmark results file/);
  writeFileSync(t.file, JSON.stringify({ startedAt: "x", machine: {}, benchmarks: {} }));
  assert.throws(() => readResults(t.file), /not a benchmark results file: machine\.cpuModel/);
  const stderr = process.stderr.write.bind(process.stderr);
  let warned = "";
  process.stderr.write = ((s: string) => ((warned += s), true)) as typeof process.stderr.write;
  try {
    quietly(() => recordFigures("decode", { rows: 1 }, [], { file: t.file }));
  } finally {
    process.stderr.write = stderr;
  }
  assert.match(warned, /starting a new file/);
  assert.deepEqual(Object.keys(readResults(t.file)!.benchmarks), ["decode"]);
});

test("figures - writes are atomic: a reader in another thread only ever sees a whole file; no temporary file is left", async (tc) => {
  const t = tempFile(tc);
  // About 1 MB per write, so a write in place would be seen half done.
  const big = (n: number): BenchResults => {
    const r = emptyResults();
    r.benchmarks["big"] = { finishedAt: new Date().toISOString(), loadAverageAtStart: [0, 0, 0], figures: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`figure_${i}`, n * 1e6 + i])), targets: [] };
    return r;
  };
  writeResults(big(0), t.file);
  const reader = new Worker(
    `const { readFileSync } = require("node:fs");
     const { parentPort, workerData } = require("node:worker_threads");
     let reads = 0, bad = 0, stop = false;
     parentPort.on("message", () => { stop = true; });
     const loop = () => {
       for (let i = 0; i < 20 && !stop; i++) {
         try { JSON.parse(readFileSync(workerData, "utf8")); } catch { bad++; }
         reads++;
       }
       if (stop || reads >= 100000) parentPort.postMessage({ reads, bad }); else setImmediate(loop);
     };
     loop();`,
    { eval: true, workerData: t.file },
  );
  const done = new Promise<{ reads: number; bad: number }>((resolve, reject) => {
    reader.once("message", resolve);
    reader.once("error", reject);
  });
  const deadline = Date.now() + 20_000;
  for (let n = 1; n <= 60 && Date.now() < deadline; n++) {
    writeResults(big(n), t.file);
    await new Promise((r) => setImmediate(r));
  }
  reader.postMessage("stop");
  const { reads, bad } = await done;
  await reader.terminate();
  assert.ok(reads > 0, "the reader read");
  assert.equal(bad, 0, `${bad} of ${reads} reads saw a partial file`);
  assert.deepEqual(readdirSync(join(t.dir, "out")), ["latest.json"]);
  assert.equal(JSON.parse(readFileSync(t.file, "utf8")).benchmarks.big.figures.figure_0 > 0, true);
});

test("figures - a write that fails leaves the old file and no temporary file", (tc) => {
  const t = tempFile(tc);
  writeResults(emptyResults(new Date("2026-01-01T00:00:00Z")), t.file);
  const before = readFileSync(t.file, "utf8");
  // A directory where the file should be: the rename fails after the temporary file was written.
  const blocked = join(t.dir, "out", "blocked.json");
  mkdirSync(join(blocked, "inside"), { recursive: true });
  assert.throws(() => writeResults(emptyResults(), blocked));
  assert.deepEqual(readdirSync(join(t.dir, "out")).sort(), ["blocked.json", "latest.json"]);
  assert.equal(readFileSync(t.file, "utf8"), before);
});

test("figures - a section records its start, command line, machine and series; non-finite points are dropped", (tc) => {
  const t = tempFile(tc);
  const series: Record<string, Series> = {
    latency: { title: "Latency", x: "t (s)", y: "ms", lines: [{ name: "p99", points: [[0, 10], [1, NaN], [2, 12], [Infinity, 3]] }], limits: [{ name: "target", y: 50 }] },
  };
  quietly(() => recordFigures("cluster", { rows: 1 }, [], { file: t.file, started, now: new Date("2026-12-02T10:03:00Z"), natsServer: "2.12.3", series, command: "node bench/cluster.bench.ts 5" }));
  const s = readResults(t.file)!.benchmarks["cluster"]!;
  assert.equal(s.startedAt, "2026-12-02T10:00:00.000Z");
  assert.equal(s.command, "node bench/cluster.bench.ts 5");
  assert.deepEqual(s.series, { latency: { ...series["latency"]!, lines: [{ name: "p99", points: [[0, 10], [2, 12]] }] } });
  assert.equal(s.machine!.natsServer, "2.12.3");
  assert.equal(s.machine!.cpuCount, cpus().length);
  assert.equal(s.machine!.node, process.version);
  // Without a command given, this process's own.
  quietly(() => recordFigures("decode", { rows: 1 }, [], { file: t.file }));
  const d = readResults(t.file)!.benchmarks["decode"]!;
  assert.equal(d.command, commandLine());
  assert.deepEqual(d.series, {});
  assert.equal(d.machine!.natsServer, undefined, "no nats-server for a benchmark that names none");
  assert.throws(() => recordFigures("decode", { rows: 1 }, [], { file: t.file, series: { "Bad name": series["latency"]! } }), /lower_snake_case: Bad name/);
});

test("figures - commandLine: node, its flags, the script from the repository root, its arguments quoted, chosen variables first", () => {
  const proc = (argv: string[], env: NodeJS.ProcessEnv = {}): { argv: string[]; execArgv: string[]; env: NodeJS.ProcessEnv } => ({ argv: ["/usr/bin/node", ...argv], execArgv: ["--expose-gc", "--import", "tsx"], env });
  assert.equal(commandLine([], proc([join(REPO, "bench", "table-core.bench.ts"), "100000"])), "node --expose-gc --import tsx bench/table-core.bench.ts 100000");
  assert.equal(commandLine(["CLUSTER_BENCH_ONLY", "UNSET"], proc([join(REPO, "bench", "cluster.bench.ts")], { CLUSTER_BENCH_ONLY: "1,latency" })), "CLUSTER_BENCH_ONLY=1,latency node --expose-gc --import tsx bench/cluster.bench.ts");
  assert.equal(commandLine([], proc([join(REPO, "bench", "x.ts"), "--option", "a b", "it's", "$HOME"])), "node --expose-gc --import tsx bench/x.ts --option 'a b' 'it'\\''s' '$HOME'");
});

test("figures - the file keeps a point or a load average on one line; arrays in strings are left alone", (tc) => {
  const t = tempFile(tc);
  const r = emptyResults(new Date("2026-12-02T10:00:00Z"), [0.5, 1, 1.5]);
  r.benchmarks["x"] = { finishedAt: "2026-12-02T10:00:00.000Z", loadAverageAtStart: [1, 2, 3], figures: { note: "[1,\n 2]" }, targets: [], series: { s: { title: "t", x: "x", y: "y", lines: [{ name: "a", points: [[0, -1.5], [1e-7, 2]] }] } } };
  const text = resultsText(r);
  assert.ok(text.includes('"loadAverageAtStart": [0.5, 1, 1.5]'));
  assert.ok(text.includes('"points": [\n') && text.includes("[0, -1.5],\n") && text.includes("[1e-7, 2]\n"));
  writeResults(r, t.file);
  assert.deepEqual(readResults(t.file), r, "the same data back");
});

test("figures - targets: at least, at most, and not judged without a measure", () => {
  assert.deepEqual(targetAtMost("rss_mb", 301, 300), { name: "rss_mb", measured: 301, target: "≤ 300", met: false });
  assert.deepEqual(targetAtLeast("ratio", 0.35, 0.35), { name: "ratio", measured: 0.35, target: "≥ 0.35", met: true });
  assert.equal(targetAtMost("p99_ms", null, 50).met, null);
});
