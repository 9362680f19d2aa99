/**
 * Cluster primary-key benchmark (issue 27; part of `npm run bench`; a benchmark, not a test: it prints figures and
 * whether each meets its target). Real nats-server and redis-server on loopback, `--nodes` node processes (default 2),
 * 250 ms commits, a table with primary key `id` and 4 buckets (the cluster's retention defaults), fed by the load
 * generator (bench/cluster-load.ts, its own process) with upserts over `--keys` keys (default 1,000,000): row i
 * upserts key `benchKeyOf(i, keys)` (bench/shape.ts), so the first `keys` rows insert every key once and every later
 * row updates one.
 *
 *   A  max rate: `--upserts` upserts (default: one per key) as fast as the producer goes; upserts/s acknowledged
 *      (every publish acked) and visible (every row in a snapshot).
 *   B  once A's compaction backlog is worked off (every bucket at most at `num-sorted-run.compaction-trigger`, waited
 *      for at most 60 s and reported; a stall meanwhile counts as A's), `--rate` upserts/s (default 50,000) for
 *      `--seconds` (default 60; `--minutes 10` is the issue's long form), after a 2 s warm-up reported apart: publish → visible p50/p99. Every `--sample-seconds` (5) this process reads the
 *      latest snapshot's levels with the library (bench/pk-tables.ts): live files and sorted runs per bucket (a sorted
 *      run = each level-0 file + each non-empty level ≥ 1, what `num-sorted-run.stop-trigger` counts). The nodes' RSS
 *      is read every 500 ms.
 *   Stalled time: the nodes' /metrics scraped before A, after A and after B for metrics of stall time
 *      (bench/stall-metric.ts); "n/a" when the nodes export none.
 *   C  the nodes stopped: a full scan of the live table (rows/s, median of 3 after a warm-up scan not timed; rows and
 *      distinct keys checked), then
 *      `compact --full` through the library (src/maintenance/compact-pk.ts) and the same scan; the ratio.
 * Targets (issue 27): p99 ≤ 450 ms; stalled time 0; sorted runs per bucket ≤ the stop trigger at every sample; live
 * scan ≥ 0.5 × the compacted one; node RSS ≤ 400 MB. The samples, the latency per second and the nodes' RSS go to
 * the results file as time series (section `cluster_pk`), drawn on docs/benchmarks.md.
 *
 *   node --import tsx bench/cluster-pk.bench.ts [--minutes N | --seconds N] [--keys N] [--upserts N] [--rate N]
 *     [--nodes N] [--sample-seconds N] [--node-cpu-prof DIR]
 */
import { nodeProcessEnv } from "../cluster/local/node-env.ts";
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { CLUSTER_TABLE_DEFAULTS } from "../cluster/admin.ts";
import { chooseNatsServer, freePort, startNats, startRedis, type ServerHandle } from "../cluster/local/servers.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { readLsmCompactionOptions } from "../src/lsm/compaction-options.ts";
import { compactPrimaryKeyTable } from "../src/maintenance/compact-pk.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import { scrapeMetrics } from "../test/helpers/node-metrics.ts";
import { assertAlive, nodeProfiling, nodesRunFrom, procStats, runLoad, waitForAssignment, type LoadRun } from "./cluster-harness.ts";
import { recordFigures, targetAtLeast, targetAtMost, type Figures, type Series, type Target } from "./figures.ts";
import { bucketShapes, scanKeys, type BucketShape, type KeyScan } from "./pk-tables.ts";
import { percentileLines, sampleRss, secondsSince, type RssFigures } from "./series.ts";
import { BENCH_COLUMNS, benchKeysProblem } from "./shape.ts";
import { stalledTime, sumStalled, type StallTime } from "./stall-metric.ts";

const BIN = fileURLToPath(new URL("../bin/natslake.mjs", import.meta.url));
const TABLE = "bench.pk";
const BUCKETS = 4;
const COMMIT_INTERVAL_MS = 250;
const TARGETS = { p99Ms: 450, stalledSeconds: 0, scanRatio: 0.5, rssMb: 400 };
/** Phase B's load before its measured run, reported apart. */
const WARMUP_SECONDS = 2;
const SCAN_RUNS = 3;
const RSS_READ_MS = 500;
/** Phase B's publish → visible percentiles are recorded per window of this many ms. */
const LATENCY_WINDOW_MS = 1_000;

const USAGE =
  "usage: bench/cluster-pk.bench.ts [--minutes N | --seconds N] [--keys N] [--upserts N] [--rate N] [--nodes N] [--sample-seconds N] [--node-cpu-prof DIR]";

interface Settings {
  keys: number;
  upserts: number;
  rate: number;
  seconds: number;
  nodes: number;
  sampleMs: number;
  cpuProfDir: string | undefined;
}

/** The command line, or a one-line error and exit 2. */
function settings(): Settings {
  const fail = (why: string): never => {
    process.stderr.write(`cluster-pk bench: ${why}\n${USAGE}\n`);
    process.exit(2);
  };
  let values: Record<string, string | undefined>;
  try {
    const opt = { type: "string" } as const;
    values = parseArgs({ options: { minutes: opt, seconds: opt, keys: opt, upserts: opt, rate: opt, nodes: opt, "sample-seconds": opt, "node-cpu-prof": opt }, strict: true, allowPositionals: false }).values;
  } catch (e) {
    return fail((e as Error).message);
  }
  const positive = (name: string, fallback: number, integer: boolean): number => {
    const raw = values[name];
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!(n > 0) || (integer && !Number.isSafeInteger(n))) fail(`--${name} must be a positive ${integer ? "integer" : "number"}, got '${raw}'`);
    return n;
  };
  if (values["minutes"] !== undefined && values["seconds"] !== undefined) fail("give --minutes or --seconds, not both");
  const keys = positive("keys", 1_000_000, true);
  const keysProblem = benchKeysProblem(keys);
  if (keysProblem !== null) fail(keysProblem);
  const seconds = values["minutes"] !== undefined ? positive("minutes", 1, false) * 60 : positive("seconds", 60, false);
  return {
    keys,
    upserts: positive("upserts", keys, true),
    rate: positive("rate", 50_000, true),
    seconds,
    nodes: positive("nodes", 2, true),
    sampleMs: positive("sample-seconds", 5, false) * 1000,
    cpuProfDir: values["node-cpu-prof"],
  };
}

const S = settings();
const PROFILING = nodeProfiling(S.cpuProfDir);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number): string => Math.round(n).toLocaleString("en-US");
const r3 = (x: number): number => Math.round(x * 1000) / 1000;
const say = (line: string): void => void process.stdout.write(line + "\n");

interface Cluster {
  dir: string;
  servers: ServerHandle[];
  nats: ServerHandle | null;
  nc: NatsConnection | null;
  nodes: ChildProcess[];
  metricsPorts: number[];
  warehouse: string;
  /** Aborted when the run ends: kills a load generator still running. */
  abort: AbortController;
}

async function startCluster(natsBin: string): Promise<Cluster> {
  const c: Cluster = { dir: mkdtempSync(join(tmpdir(), "natslake-pkbench-")), servers: [], nats: null, nc: null, nodes: [], metricsPorts: [], warehouse: "", abort: new AbortController() };
  c.warehouse = join(c.dir, "wh");
  try {
    c.nats = await startNats({ bin: natsBin });
    c.servers.push(c.nats);
    const redis = await startRedis();
    c.servers.push(redis);
    c.nc = await connect({ servers: c.nats.url });
    for (let i = 1; i <= S.nodes; i++) {
      const port = await freePort();
      c.metricsPorts.push(port);
      const fd = openSync(join(c.dir, `n${i}.log`), "a");
      try {
        const args = [BIN, "node", "--nats", c.nats.url, "--redis", redis.url, "--warehouse", c.warehouse, "--node-id", `n${i}`, "--commit-interval", `${COMMIT_INTERVAL_MS}ms`, "--metrics-port", String(port), "--log-level", "warn"];
        c.nodes.push(spawn(process.execPath, [...PROFILING.flags, ...args], { stdio: ["ignore", fd, fd], env: nodeProcessEnv(process.env) }));
      } finally {
        closeSync(fd);
      }
    }
    return c;
  } catch (e) {
    await stopCluster(c);
    throw e;
  }
}

/** Stops the nodes (SIGTERM when profiling, so they write their profiles) and waits for them to exit. */
async function stopNodes(c: Cluster): Promise<void> {
  for (const n of c.nodes) if (n.exitCode === null && n.signalCode === null) n.kill(PROFILING.stopSignal);
  await Promise.all(c.nodes.map((n) => new Promise((r) => (n.exitCode !== null || n.signalCode !== null ? r(null) : n.once("exit", r)))));
}

async function stopCluster(c: Cluster): Promise<void> {
  c.abort.abort();
  await stopNodes(c);
  await c.nc?.close().catch(() => undefined);
  for (const s of c.servers) await s.stop();
  rmSync(c.dir, { recursive: true, force: true });
}

/**
 * The stalled time the nodes report now (null: none exports a stall-time metric). A node's /metrics that does not
 * answer is asked again, for up to 10 s; then the run fails (an unanswered scrape must not read as "no stall").
 */
async function scrapeStalled(c: Cluster): Promise<StallTime | null> {
  const scrape = async (port: number): Promise<StallTime | null> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return stalledTime(await scrapeMetrics(port));
      } catch (e) {
        if (attempt >= 10) throw new Error(`the node's /metrics on port ${port} did not answer: ${(e as Error).message}`);
        await sleep(1000);
      }
    }
  };
  return sumStalled(await Promise.all(c.metricsPorts.map(scrape)));
}

interface ShapeSample {
  /** Epoch ms. */
  at: number;
  shapes: BucketShape[];
}

/**
 * Reads the table's bucket shapes every `everyMs` until stop(). Expiration runs beside the reads and can remove a
 * manifest between listing and reading: a sample that fails is retried once, then skipped (and counted).
 */
function sampleShapes(table: Table, everyMs: number): { stop(): Promise<{ samples: ShapeSample[]; failed: number }> } {
  const store = new ManifestStore(table);
  const samples: ShapeSample[] = [];
  let failed = 0;
  let stopped = false;
  let wake: (() => void) | null = null;
  const sampleNow = async (): Promise<ShapeSample> => {
    const at = Date.now();
    try {
      return { at, shapes: await bucketShapes(table, store) };
    } catch {
      return { at, shapes: await bucketShapes(table, store) };
    }
  };
  const loop = (async () => {
    while (!stopped) {
      const t = Date.now();
      await sampleNow().then(
        (s) => void samples.push(s),
        () => void failed++,
      );
      const wait = t + everyMs - Date.now();
      if (wait > 0 && !stopped) await new Promise<void>((r) => ((wake = r), setTimeout(r, wait)));
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      // The end: one more sample, after the last rows became visible.
      samples.push(await sampleNow());
      return { samples, failed };
    },
  };
}

const maxOf = (samples: readonly ShapeSample[], pick: (s: BucketShape) => number): number => Math.max(0, ...samples.flatMap((s) => s.shapes.map(pick)));
const shapeLine = (shapes: readonly BucketShape[]): string => shapes.map((s) => `b${s.bucket} ${s.files} files / ${s.sortedRuns} runs`).join(", ");

function num(r: LoadRun, key: string): number | null {
  const v = r.result[key];
  return typeof v === "number" ? v : null;
}

interface Phase {
  load: LoadRun;
  /** When the load generator started (epoch ms). */
  startedAt: number;
  shapes: { samples: ShapeSample[]; failed: number };
  rss: RssFigures;
  nodeCpu: number[];
}

/** Runs the load generator while sampling shapes and RSS; checks every row was acknowledged. */
async function phase(c: Cluster, table: Table, rows: number, rate: number, warmupRows: number, firstRow: number): Promise<Phase> {
  const cpu0 = c.nodes.map((n) => procStats(n.pid!).cpu);
  const rss = sampleRss(
    c.nodes.map((n) => n.pid!),
    c.nodes.map((_, i) => `n${i + 1}`),
    RSS_READ_MS,
    S.sampleMs,
  );
  const sampler = sampleShapes(table, S.sampleMs);
  const startedAt = Date.now();
  const seconds = rate > 0 ? (rows + warmupRows) / rate : rows / 10_000;
  // Its deadline: the publishing time twice over plus 5 min, for a cluster that falls behind to drain.
  const loadP = runLoad(c.nats!.url, TABLE, rows, rate, warmupRows, { timeoutMs: 2 * seconds * 1000 + 300_000, signal: c.abort.signal }, { keys: S.keys, firstRow });
  const load = await loadP.catch(async (e: unknown) => {
    rss.stop();
    await sampler.stop().catch(() => undefined);
    throw e;
  });
  const rssFigures = rss.stop();
  const shapes = await sampler.stop();
  assertAlive(c.nodes, c.dir, "during the load");
  if (num(load, "acked") !== rows) throw new Error(`${fmt(rows)} upserts published, ${num(load, "acked")} acknowledged`);
  return { load, startedAt, shapes, rss: rssFigures, nodeCpu: c.nodes.map((n, i) => procStats(n.pid!).cpu - cpu0[i]!) };
}

/**
 * SCAN_RUNS full scans of the latest snapshot after one not timed (a process's first merged read loads the merge code
 * into the Parquet pool's workers and warms their JIT, as bench/pk-engines.bench.ts excludes its warm-up scan); each
 * must give `keys` rows, one per key.
 */
async function timeScans(table: Table, keys: number, what: string): Promise<{ median: KeyScan; runs: number[] }> {
  const runs: KeyScan[] = [];
  for (let i = -1; i < SCAN_RUNS; i++) {
    const s = await scanKeys(table, "id");
    if (s.rows !== keys || s.keys !== keys) throw new Error(`the ${what} table reads as ${fmt(s.rows)} rows with ${fmt(s.keys)} distinct keys; ${fmt(keys)} keys were upserted`);
    if (i >= 0) runs.push(s);
  }
  const seconds = runs.map((s) => s.seconds);
  return { median: { rows: keys, keys, seconds: median(seconds) }, runs: seconds };
}

const verdict = (t: Target): string => (t.met === null ? "n/a" : t.met ? "PASS" : "MISS");

/** How long B waits at most for A's compaction backlog (`settleRuns`). */
const SETTLE_MAX_MS = 60_000;

/** Waits (at most `maxMs`) until every bucket's sorted runs are at most `trigger`; how long it took and the last count. */
async function settleRuns(table: Table, trigger: number, maxMs: number): Promise<{ seconds: number; runs: number | null; settled: boolean }> {
  const t0 = Date.now();
  for (;;) {
    const shapes = await bucketShapes(table);
    const runs = shapes.length === 0 ? null : Math.max(...shapes.map((x) => x.sortedRuns));
    const settled = runs !== null && runs <= trigger;
    if (settled || Date.now() - t0 >= maxMs) return { seconds: (Date.now() - t0) / 1000, runs, settled };
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const natsChoice = chooseNatsServer();
  const nodesFrom = nodesRunFrom();
  say(
    `cluster primary-key: ${BUCKETS} buckets, ${S.nodes} writer nodes (from ${nodesFrom}), ${COMMIT_INTERVAL_MS} ms commits, upserts over ${fmt(S.keys)} keys, loopback nats-server ${natsChoice.version ?? "(version unknown)"} + redis-server; load average at start ${loadavg().map((x) => x.toFixed(2)).join(" ")}`,
  );
  const c = await startCluster(natsChoice.bin);
  try {
    const table = await new Catalog(c.warehouse).createTable(parseIdentifier(TABLE), {
      columns: parseColumnList(BENCH_COLUMNS),
      primaryKeys: ["id"],
      options: { ...CLUSTER_TABLE_DEFAULTS, bucket: String(BUCKETS) },
    });
    const lsm = readLsmCompactionOptions(table.options);
    const stopTrigger = lsm.numSortedRunStopTrigger;
    // Nodes find new tables by scanning the warehouse every 2 s.
    if (!(await waitForAssignment(c.nc!, TABLE, BUCKETS, S.nodes, 120_000))) throw new Error(`the ${BUCKETS} buckets were not assigned to ${S.nodes} nodes within 120 s`);
    assertAlive(c.nodes, c.dir, "while starting");
    const stall0 = await scrapeStalled(c);

    // A: as fast as the producer goes.
    const a = await phase(c, table, S.upserts, 0, 0, 0);
    // B measures the steady state at its rate, so it starts once the writers worked off what A's burst left: every
    // bucket at most at the compaction trigger (bounded; the wait is reported, and a stall meanwhile counts as A's).
    const settle = await settleRuns(table, lsm.numSortedRunCompactionTrigger, SETTLE_MAX_MS);
    const stallA = await scrapeStalled(c);
    const aPublish = num(a.load, "publishSeconds")!;
    const aVisible = num(a.load, "visibleSeconds")!;
    say(`A  max rate: ${fmt(S.upserts)} upserts acknowledged at ${fmt(S.upserts / aPublish)} upserts/s (${aPublish.toFixed(2)} s), visible at ${fmt(S.upserts / aVisible)} upserts/s (${aVisible.toFixed(2)} s)`);
    say(`   at its end: ${shapeLine(a.shapes.samples.at(-1)!.shapes)}; sorted runs per bucket at most ${maxOf(a.shapes.samples, (s) => s.sortedRuns)} over ${a.shapes.samples.length} samples`);
    say(`   settled in ${settle.seconds.toFixed(1)} s: ${settle.runs === null ? "no snapshot" : `sorted runs per bucket at most ${settle.runs}`}${settle.settled ? "" : ` (still above the compaction trigger ${lsm.numSortedRunCompactionTrigger} after ${SETTLE_MAX_MS / 1000} s: B starts anyway)`}`);

    // B: the offered rate, sampled.
    const bRows = Math.round(S.rate * S.seconds);
    const b = await phase(c, table, bRows, S.rate, S.rate * WARMUP_SECONDS, S.upserts);
    const stallB = await scrapeStalled(c);
    const nodeHwm = c.nodes.map((n) => procStats(n.pid!).rssMb);
    const bSamples = b.shapes.samples;
    const runsMax = maxOf(bSamples, (s) => s.sortedRuns);
    const filesMax = maxOf(bSamples, (s) => s.files);
    const worst = bSamples.flatMap((s) => s.shapes.map((sh) => ({ t: secondsSince(b.startedAt, s.at), ...sh }))).reduce((w, x) => (x.sortedRuns > w.sortedRuns ? x : w), { t: 0, bucket: -1, files: 0, sortedRuns: -1 });
    const p50 = num(b.load, "latencyP50");
    const p99 = num(b.load, "latencyP99");
    const stalledA = stall0 === null || stallA === null ? null : stallA.seconds - stall0.seconds;
    const stalledB = stallA === null || stallB === null ? null : stallB.seconds - stallA.seconds;
    const stalled = stalledA === null || stalledB === null ? null : stalledA + stalledB;
    const rssMax = Math.max(...nodeHwm);
    const bCpu = b.nodeCpu.reduce((x, y) => x + y, 0);
    const loadGenCpu = num(b.load, "cpuSeconds") ?? 0;
    await stopNodes(c);

    // C: the live table as the cluster left it, then fully compacted.
    const live = await timeScans(table, S.keys, "live");
    const before = await bucketShapes(table);
    const t0 = performance.now();
    const summary = await compactPrimaryKeyTable(table, { full: true });
    const compactSeconds = (performance.now() - t0) / 1000;
    const after = await bucketShapes(table);
    const compacted = await timeScans(table, S.keys, "compacted");
    const liveRate = S.keys / live.median.seconds;
    const compactedRate = S.keys / compacted.median.seconds;
    const scanRatio = liveRate / compactedRate;

    const targets: Target[] = [
      targetAtMost("b_p99_ms", p99, TARGETS.p99Ms),
      targetAtMost("stalled_s", stalled === null ? null : r3(stalled), TARGETS.stalledSeconds),
      targetAtMost("sorted_runs_per_bucket_max", runsMax, stopTrigger),
      targetAtLeast("scan_live_vs_compacted_ratio", r3(scanRatio), TARGETS.scanRatio),
      targetAtMost("node_rss_max_mb", rssMax, TARGETS.rssMb),
    ];
    const [tP99, tStall, tRuns, tScan, tRss] = targets as [Target, Target, Target, Target, Target];
    const stallText =
      stalledA === null || stalledB === null
        ? "n/a (no node exports a metric of stall time)"
        : `${stalled!.toFixed(3)} s (phase A ${stalledA.toFixed(3)} s, phase B ${stalledB.toFixed(3)} s; ${stallB!.metrics.join(", ")})`;
    say(
      `B  ${fmt(S.rate)} upserts/s offered for ${S.seconds} s (${fmt(bRows)} upserts after a ${WARMUP_SECONDS} s warm-up whose p50/p99 were ${num(b.load, "warmupP50")}/${num(b.load, "warmupP99")} ms): all visible after ${(num(b.load, "visibleSeconds") ?? NaN).toFixed(1)} s`,
    );
    say(`   publish → visible p50 ${p50} ms, p99 ${p99} ms over ${fmt(num(b.load, "samples") ?? 0)} batches          target p99 ≤ ${TARGETS.p99Ms} ms: ${verdict(tP99)}`);
    say(`   stalled at the stop trigger: ${stallText}          target 0: ${verdict(tStall)}`);
    say(
      `   sorted runs per bucket: at most ${runsMax} (bucket ${worst.bucket} at ${worst.t} s) over ${bSamples.length} samples every ${S.sampleMs / 1000} s${b.shapes.failed > 0 ? ` (${b.shapes.failed} failed)` : ""}; stop trigger ${stopTrigger}          target ≤ ${stopTrigger} at every sample: ${verdict(tRuns)}`,
    );
    say(`   live files per bucket: at most ${filesMax}; at the end ${shapeLine(bSamples.at(-1)!.shapes)}`);
    say(`   node RSS: peak ${nodeHwm.map((mb, i) => `n${i + 1} ${mb} MB`).join(", ")} (whole run)          target ≤ ${TARGETS.rssMb} MB: ${verdict(tRss)}`);
    say(`   node CPU in B: ${b.nodeCpu.map((x, i) => `n${i + 1} ${x.toFixed(1)} s`).join(", ")} (${(bCpu / S.seconds).toFixed(2)} cores); load generator ${loadGenCpu.toFixed(1)} CPU s`);
    say(`C  full scan of the live table (${shapeLine(before)}): ${fmt(liveRate)} rows/s (${fmt(S.keys)} rows, one per key; median of ${SCAN_RUNS} after a warm-up scan: ${live.runs.map((x) => x.toFixed(2)).join(" ")} s)`);
    say(`   live files (level:rows) per bucket: ${before.map((s) => `b${s.bucket} ${s.fileRows.join(" ")}`).join("; ")}`);
    say(`   compact --full: ${compactSeconds.toFixed(1)} s, ${summary.filesBefore} files → ${summary.filesAfter} (${shapeLine(after)})`);
    say(`   full scan of the compacted table: ${fmt(compactedRate)} rows/s (median of ${SCAN_RUNS} after a warm-up scan: ${compacted.runs.map((x) => x.toFixed(2)).join(" ")} s)`);
    say(`   live ÷ compacted ${scanRatio.toFixed(2)}×          target ≥ ${TARGETS.scanRatio}: ${verdict(tScan)}`);
    say(`run ${((Date.now() - started) / 1000).toFixed(0)} s; load average at the end ${loadavg().map((x) => x.toFixed(2)).join(" ")} (a shared 2-core machine: figures under load are indicative)`);

    const figures: Figures = {
      keys: S.keys,
      buckets: BUCKETS,
      nodes: S.nodes,
      nodes_from: nodesFrom,
      commit_interval_ms: COMMIT_INTERVAL_MS,
      stop_trigger: stopTrigger,
      a_upserts: S.upserts,
      a_acked_upserts_per_sec: Math.round(S.upserts / aPublish),
      a_visible_upserts_per_sec: Math.round(S.upserts / aVisible),
      a_publish_s: r3(aPublish),
      a_visible_s: r3(aVisible),
      a_sorted_runs_per_bucket_max: maxOf(a.shapes.samples, (s) => s.sortedRuns),
      a_settle_s: Math.round(settle.seconds * 10) / 10,
      a_node_cpu_s: r3(a.nodeCpu.reduce((x, y) => x + y, 0)),
      b_offered_upserts_per_sec: S.rate,
      b_seconds: S.seconds,
      b_upserts: bRows,
      b_p50_ms: p50,
      b_p99_ms: p99,
      b_batches: num(b.load, "samples"),
      b_warmup_p50_ms: num(b.load, "warmupP50"),
      b_warmup_p99_ms: num(b.load, "warmupP99"),
      b_visible_s: num(b.load, "visibleSeconds") === null ? null : r3(num(b.load, "visibleSeconds")!),
      b_samples: bSamples.length,
      b_samples_failed: b.shapes.failed,
      sorted_runs_per_bucket_max: runsMax,
      live_files_per_bucket_max: filesMax,
      stall_metric: stallB === null ? "absent" : stallB.metrics.join(" "),
      stalled_a_s: stalledA === null ? null : r3(stalledA),
      stalled_b_s: stalledB === null ? null : r3(stalledB),
      stalled_s: stalled === null ? null : r3(stalled),
      b_node_cpu_s: r3(bCpu),
      b_load_generator_cpu_s: r3(loadGenCpu),
      node_rss_max_mb: rssMax,
      scan_live_rows_per_sec: Math.round(liveRate),
      scan_compacted_rows_per_sec: Math.round(compactedRate),
      scan_live_vs_compacted_ratio: r3(scanRatio),
      compact_full_s: r3(compactSeconds),
      files_before_compaction: summary.filesBefore,
      files_after_compaction: summary.filesAfter,
      run_s: Math.round((Date.now() - started) / 1000),
      load_average_1m_end: Math.round(loadavg()[0]! * 100) / 100,
    };
    const x = "time since phase B's load started (s)";
    const perBucket = (pick: (s: BucketShape) => number): Series["lines"] =>
      Array.from({ length: BUCKETS }, (_, bucket) => ({ name: `bucket ${bucket}`, points: bSamples.flatMap((s) => s.shapes.filter((sh) => sh.bucket === bucket).map((sh): [number, number] => [secondsSince(b.startedAt, s.at), pick(sh)])) }));
    const series: Record<string, Series> = {
      sorted_runs: {
        title: `Sorted runs per bucket at ${fmt(S.rate)} upserts/s (${COMMIT_INTERVAL_MS} ms commits, ${S.nodes} nodes), read every ${S.sampleMs / 1000} s`,
        x,
        y: "sorted runs",
        lines: perBucket((s) => s.sortedRuns),
        limits: [{ name: `stop trigger ${stopTrigger}`, y: stopTrigger }],
      },
      live_files: { title: `Live data files per bucket at ${fmt(S.rate)} upserts/s, read every ${S.sampleMs / 1000} s`, x, y: "files", lines: perBucket((s) => s.files) },
      latency: {
        title: `Publish → visible latency per ${LATENCY_WINDOW_MS / 1000} s of publishing: ${fmt(S.rate)} upserts/s over ${fmt(S.keys)} keys, ${COMMIT_INTERVAL_MS} ms commits`,
        x: "time since the measured load started (s)",
        y: "latency (ms)",
        lines: percentileLines(b.load.timeline, Math.min(...b.load.timeline.map(([at]) => at)), LATENCY_WINDOW_MS),
        limits: [{ name: `target p99 ≤ ${TARGETS.p99Ms} ms`, y: TARGETS.p99Ms }],
      },
      node_rss: {
        title: `Node RSS in phase B (largest of every ${S.sampleMs / 1000} s, read every ${RSS_READ_MS} ms)`,
        x: "time since phase B's load started (s)",
        y: "RSS (MB)",
        lines: b.rss.lines,
        limits: [{ name: `target ≤ ${TARGETS.rssMb} MB`, y: TARGETS.rssMb }],
      },
    };
    recordFigures("cluster_pk", figures, targets, { natsServer: natsChoice.version, series });
  } finally {
    await stopCluster(c);
  }
}

await main();
