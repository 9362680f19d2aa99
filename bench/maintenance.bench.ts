/**
 * Maintenance benchmark (issue 10; part of `npm run bench`; a benchmark, not a test: it prints figures and ratios).
 *
 * A sustained run through the cluster — real nats-server and redis-server on loopback, 2 node processes, 250 ms
 * commits, a table of 6 buckets created with the cluster's retention defaults — fed 10,000 rows/s by the load
 * generator (bench/cluster-load.ts, its own process). After an unmeasured warm-up phase (60 s into a table of its own,
 * maintenance on, so that both measured phases run on nodes whose code is compiled), two phases one after the other
 * on the same cluster, each phase's table dropped once it is measured (the next phase's CPU is its own table's):
 *   on   maintenance on: each writer compacts its bucket, the leader expires snapshots;
 *   off  `write-only = true`: neither.
 * Every 10 s this process samples the table from the warehouse, read-only: live data files per bucket, snapshot
 * files (and what the retention options allow), manifest files, bytes, and the wall and CPU time to plan a scan; and
 * between the samples it plans a scan once a second (the plan target compares the CPU times of these plans at minute 1
 * and at the end: the work, which wall time on a saturated machine hides under the load). It times a full
 * scan at minute 1 and at the end, and compares the end's with the same rows written by one batch write. From the
 * load generator: throughput and publish→visible p50/p99 per phase. Each issue-10 target is printed with ✔/✘, and
 * issue 28's node CPU with maintenance on ≤ 1.3× off. With --node-cpu-prof, each phase's CLOCK_MONOTONIC window is
 * printed for bench/cpuprofile-summary.mjs.
 * The samples, the latencies per 5 s window and the nodes' RSS (every 500 ms, the largest per 5 s) go to the results
 * file as time series, drawn on docs/benchmarks.md.
 *
 *   node --import tsx bench/maintenance.bench.ts [--minutes N] [--warm-seconds S] [--option KEY=VALUE] [--node-logs DIR --log-level debug] [--node-cpu-prof DIR]
 *   (default 2 minutes per phase; the issue's run: 10)
 * Its figures go to the benchmark results file too (bench/figures.ts, section `maintenance`).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { CLUSTER_TABLE_DEFAULTS } from "../cluster/admin.ts";
import { chooseNatsServer, startNats, startRedis, type ServerHandle } from "../cluster/local/servers.ts";
import { nodeProcessEnv } from "../cluster/local/node-env.ts";
import { planScan } from "../src/scan/plan.ts";
import { readBatches } from "../src/scan/read.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import type { Snapshot } from "../src/format/snapshot.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import { BatchWriter } from "../src/write/batch-writer.ts";
import { assertAlive, nodeProfiling, nodesRunFrom, procStats, runLoad, waitForAssignment, type LoadRun } from "./cluster-harness.ts";
import { BENCH_COLUMNS } from "./shape.ts";
import { recordFigures, targetAtLeast, targetAtMost, type FigureSet, type Figures, type Series, type SeriesLine, type Target } from "./figures.ts";
import { percentileLines, sampleRss } from "./series.ts";

const BIN = fileURLToPath(new URL("../bin/natslake.mjs", import.meta.url));
const RATE = 10_000;
const BUCKETS = 6;
const NODES = 2;
const COMMIT_INTERVAL_MS = 250;
const SAMPLE_EVERY_MS = 10_000;
/**
 * Between the samples, one plan of the latest snapshot every this many ms (a probe): the planning target compares
 * the medians of the probes of two windows. What a plan reads swings with the manifest merges (a run's samples read
 * 32 to 384 entries, at 4–6 µs CPU an entry), so a median of 3 samples 10 s apart drew that cycle's phase rather than
 * the table's age: the same code measured 0.29× to 2.14× (paired runs of two commits side by side).
 */
const PLAN_PROBE_MS = 1_000;
/** Seconds of probes at each end of the plan comparison: from minute 1 on, and the last ones under load. */
const PLAN_WINDOW_S = 30;
/** The nodes' RSS is read every 500 ms (for the peak); the recorded series keeps the largest per 5 s. */
const RSS_READ_MS = 500;
const RSS_POINT_MS = 5_000;
/** The recorded publish→visible percentiles are per window of this many ms of publish time. */
const LATENCY_WINDOW_MS = 5_000;
/** Load before the measured run, reported apart (the cluster's first seconds on a new table: JIT, first files). */
const WARMUP_SECONDS = 5;
/**
 * A warm-up phase before the two measured ones, on a table of its own with maintenance on, its CPU not counted: the
 * phases run one after the other on the same nodes, so without it the first (on) phase paid most of the nodes' JIT
 * warm-up and the off phase ran on warm nodes. V8 optimizes a function once it has run enough, and code that runs a
 * few times a second per bucket (a flush's encode, a commit's manifest write, a compaction's stitch) gets there only
 * after minutes, at 20–90 ms of compilation each (`--trace-opt` of both nodes, 1-minute phases from cold: ~3.2 s of
 * compilation in the first 20 s, ~6 s in the rest of the on phase, ~2.4 s in the off phase that followed).
 * `--warm-seconds 0` measures from cold as before.
 */
const WARM_PHASE_SECONDS_DEFAULT = "60";
/** Plans timed per sample; the median is reported. */
const PLAN_RUNS = 3;
/** Full scans timed at the end and of the batch-written baseline; the median is reported. */
const SCAN_RUNS = 3;
/**
 * Snapshots committed this recently are not counted against the retention bound: the leader expires right after each
 * commit, off the commit path, so a snapshot outlives its retention by the time a run takes (tens of ms) or, when
 * another maintenance task is running, until that task ends.
 */
const EXPIRE_GRACE_MS = 1_000;
/** Issue 28's: node CPU with maintenance on ≤ 1.3× off at 10k rows/s (both phases' nodes summed). */
const ON_TARGETS = { filesPerBucket: 10, planGrowth: 1.2, scanVsBatch: 0.8, throughputVsOff: 0.9, p99Ms: COMMIT_INTERVAL_MS + 100, nodeCpuVsOff: 1.3 };

// --node-logs DIR keeps the nodes' logs (at --log-level, default warn) after the run, e.g. to read compaction timings.
// --retain-max N sets the table's snapshot.num-retained.max (the cluster's default is 3000, reached after ~3.5 min):
// a short run then tests the expiration bound too.
// --option KEY=VALUE (repeatable) adds a table option to the on phase, e.g. natslake.compaction.copy-row-group-rows=0
// to measure compaction without row-group copying.
const { values: flags } = parseArgs({ options: { minutes: { type: "string", default: "2" }, "node-logs": { type: "string" }, "log-level": { type: "string", default: "warn" }, "retain-max": { type: "string" }, "node-cpu-prof": { type: "string" }, option: { type: "string", multiple: true }, "warm-seconds": { type: "string", default: WARM_PHASE_SECONDS_DEFAULT } } });
const ON_OPTIONS: Record<string, string> = Object.fromEntries(
  (flags.option ?? []).map((kv) => {
    const at = kv.indexOf("=");
    if (at <= 0) throw new Error(`--option takes KEY=VALUE, got '${kv}'`);
    return [kv.slice(0, at), kv.slice(at + 1)];
  }),
);
const PROFILING = nodeProfiling(flags["node-cpu-prof"]);
const MINUTES = Number(flags.minutes);
if (!(MINUTES > 0)) throw new Error(`--minutes must be a positive number, got ${flags.minutes}`);
const WARM_PHASE_SECONDS = Number(flags["warm-seconds"]);
if (!(Number.isFinite(WARM_PHASE_SECONDS) && WARM_PHASE_SECONDS >= 0 && WARM_PHASE_SECONDS <= 600)) throw new Error(`--warm-seconds must be a number of seconds in 0..600, got ${flags["warm-seconds"]}`);
if (flags["retain-max"] !== undefined && !(Number.isInteger(Number(flags["retain-max"])) && Number(flags["retain-max"]) >= 10)) throw new Error(`--retain-max must be an integer ≥ 10 (num-retained.min), got ${flags["retain-max"]}`);
/** The on phase's retention: the cluster's defaults, or --retain-max. */
const RETENTION: Readonly<Record<string, string>> = { ...CLUSTER_TABLE_DEFAULTS, ...(flags["retain-max"] !== undefined ? { "snapshot.num-retained.max": flags["retain-max"] } : {}) };

interface Sample {
  /** Seconds since the phase's load generator started. */
  t: number;
  rows: number;
  snapshots: number;
  /** The oldest snapshot on disk (1 while nothing has been expired). */
  earliest: number;
  /** Snapshot files the retention options allow at this moment (see retentionBound). */
  bound: number;
  filesMax: number;
  filesMean: number;
  manifests: number;
  bytes: number;
  planMs: number;
  /**
   * The planning's CPU time (this process, all threads: the manifest reads' I/O threads too), median of the runs:
   * the work a plan takes, which — unlike its wall time on a 2-core machine the cluster saturates — does not swing
   * with what the other processes are doing at that moment.
   */
  planCpuMs: number;
  /** What planning read: manifests (of the base and delta lists) and their entries, ADDs and DELETEs before merging. */
  planManifests: number;
  planEntries: number;
  /** True while the load generator was still publishing or waiting for its rows to be visible. */
  underLoad: boolean;
}

/** One timed plan of the latest snapshot (see PLAN_PROBE_MS). */
interface PlanProbe {
  /** Seconds since the phase's load generator started. */
  t: number;
  ms: number;
  /** CPU time of the plan (this process, all threads), ms. */
  cpuMs: number;
  /** Manifest entries of the planned snapshot (base and delta lists), ADDs and DELETEs before merging. */
  entries: number;
  underLoad: boolean;
}

interface ScanFigure {
  rows: number;
  seconds: number;
  /** Every run's seconds (the figure is their median). */
  runs: number[];
}

interface PhaseResult {
  name: string;
  table: string;
  samples: Sample[];
  scanMinute1: ScanFigure | null;
  planProbes: PlanProbe[];
  scanEnd: ScanFigure;
  endSnapshot: number;
  load: LoadRun;
  /** When the phase's load generator started (epoch ms): the series' time 0. */
  startedAt: number;
  nodeCpu: number[];
  nodePeakRssMb: number[];
  /** Per node, its RSS over the phase (the largest per RSS_POINT_MS). */
  nodeRss: SeriesLine[];
  natsCpu: number;
  seconds: number;
  tableHandle: Table;
}

/** What a run started, for stopCluster (a start that failed halfway stops what it got). */
interface Processes {
  dir: string;
  /** nats-server, then redis-server. */
  servers: ServerHandle[];
  nc: NatsConnection | null;
  nodes: ChildProcess[];
  /** Aborted at the end: kills a load generator still running. */
  abort: AbortController;
}

interface Cluster extends Processes {
  nats: ServerHandle;
  nc: NatsConnection;
  catalog: Catalog;
}

/** CLOCK_MONOTONIC in µs: the clock of a .cpuprofile's sample times (a phase's window, for cpuprofile-summary.mjs). */
const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number): string => Math.round(n).toLocaleString("en-US");
const say = (line: string): void => void process.stdout.write(line + "\n");

/** Bytes of every file under `dir`; a file removed meanwhile (expiration runs beside us) counts as gone. */
async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += await dirBytes(p);
    else total += await stat(p).then((s) => s.size, () => 0);
  }
  return total;
}

/** How many of `ids` (ascending) were committed at or after `cutoff`; commit times grow with ids (binary search). */
async function countSince(table: Table, ids: number[], cutoff: number): Promise<number> {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    // A snapshot expired since the listing was old enough to go: older than any cutoff here.
    const time = await table.snapshots.snapshot(ids[mid]!).then((s) => s.timeMillis, () => -Infinity);
    if (time >= cutoff) hi = mid;
    else lo = mid + 1;
  }
  return ids.length - lo;
}

/**
 * The snapshot files the table's retention options allow now, by Paimon's rules (expire-snapshots.ts): at most
 * `num-retained.max`, at least `num-retained.min`, otherwise those younger than `time-retained` — plus the ones
 * committed in the last EXPIRE_GRACE_MS, which the leader has not had its chance to act on yet.
 */
async function retentionBound(table: Table, ids: number[], now: number): Promise<number> {
  const o = table.options;
  const young = await countSince(table, ids, now - o.duration("snapshot.time-retained"));
  const recent = await countSince(table, ids, now - EXPIRE_GRACE_MS);
  return Math.min(o.int("snapshot.num-retained.max"), Math.max(o.int("snapshot.num-retained.min"), young)) + recent;
}

/** Plans a scan of the latest snapshot PLAN_RUNS times (each with a fresh manifest cache, as a new reader would). */
async function timePlans(table: Table): Promise<{ ms: number; cpuMs: number; plan: Awaited<ReturnType<typeof planScan>> }> {
  const times: number[] = [];
  const cpuTimes: number[] = [];
  let plan: Awaited<ReturnType<typeof planScan>> | null = null;
  for (let i = 0; i < PLAN_RUNS; i++) {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    plan = await planScan(table);
    const cpu = process.cpuUsage(cpu0);
    times.push(performance.now() - t0);
    cpuTimes.push((cpu.user + cpu.system) / 1000);
  }
  return { ms: median(times), cpuMs: median(cpuTimes), plan: plan! };
}

/** One plan of the latest snapshot, timed, with a fresh manifest cache (as a new reader); its entries counted after. */
async function probePlan(table: Table, t: number): Promise<PlanProbe> {
  const store = new ManifestStore(table);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const plan = await planScan(table, {}, store);
  const cpu = process.cpuUsage(cpu0);
  const ms = performance.now() - t0;
  // From the cache the plan filled: not timed.
  const entries = plan.snapshot === null ? 0 : (await store.readEntries(await store.allManifests(plan.snapshot))).length;
  return { t, ms, cpuMs: (cpu.user + cpu.system) / 1000, entries, underLoad: true };
}

/**
 * What planning `snapshot` reads: the deterministic side of the plan time, which on a shared machine swings with
 * the load far more than with the table.
 */
async function planReads(table: Table, snapshot: Snapshot | null): Promise<{ manifests: number; entries: number }> {
  if (snapshot === null) return { manifests: 0, entries: 0 };
  const store = new ManifestStore(table);
  const metas = await store.allManifests(snapshot);
  return { manifests: metas.length, entries: (await store.readEntries(metas)).length };
}

/** One sample of the table; concurrent expiration can remove a file between listing and reading, so it retries. */
async function sample(table: Table, t: number, underLoad: boolean): Promise<Sample> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await sampleOnce(table, t, underLoad);
    } catch (e) {
      if (attempt >= 3) throw e;
    }
  }
}

async function sampleOnce(table: Table, t: number, underLoad: boolean): Promise<Sample> {
  const ids = await table.snapshots.listIds();
  const bound = await retentionBound(table, ids, Date.now());
  // planScan groups the latest snapshot's live entries (ManifestStore.readLiveEntries) into one split per bucket.
  const { ms, cpuMs, plan } = await timePlans(table);
  const perBucket = Array.from({ length: BUCKETS }, (_, b) => plan.splits.find((s) => s.bucket === b)?.files.length ?? 0);
  const manifests = (await readdir(table.paths.manifestDir).catch(() => [])).length;
  const read = await planReads(table, plan.snapshot);
  return {
    t,
    rows: Number(plan.snapshot?.totalRecordCount ?? 0),
    snapshots: ids.length,
    earliest: ids[0] ?? 0,
    bound,
    filesMax: Math.max(...perBucket),
    filesMean: perBucket.reduce((a, b) => a + b, 0) / BUCKETS,
    manifests,
    bytes: await dirBytes(table.root),
    planMs: ms,
    planCpuMs: cpuMs,
    planManifests: read.manifests,
    planEntries: read.entries,
    underLoad,
  };
}

/** A full scan as `natslake read` does it (readRows is readBatches turned into row objects; Arrow batches here). */
async function scanOnce(table: Table, snapshotId?: number): Promise<{ rows: number; seconds: number }> {
  const t0 = performance.now();
  let rows = 0;
  for await (const b of readBatches(table, snapshotId === undefined ? {} : { snapshotId })) rows += b.numRows;
  return { rows, seconds: (performance.now() - t0) / 1000 };
}

async function timeScans(table: Table, runs: number, snapshotId?: number): Promise<ScanFigure> {
  const all: Array<{ rows: number; seconds: number }> = [];
  for (let i = 0; i < runs; i++) all.push(await scanOnce(table, snapshotId));
  return scanFigure(all);
}

/** Timed scans of the same rows as one figure: their median. */
function scanFigure(all: ReadonlyArray<{ rows: number; seconds: number }>): ScanFigure {
  return { rows: all[0]!.rows, seconds: median(all.map((s) => s.seconds)), runs: all.map((s) => s.seconds) };
}

const scanRate = (s: ScanFigure): number => s.rows / s.seconds;

function sampleLine(s: Sample): string {
  const cols = [
    `${s.t.toFixed(0).padStart(5)} s`,
    fmt(s.rows).padStart(10),
    `${String(s.snapshots).padStart(5)} (≤ ${String(s.bound).padStart(4)})`,
    `${String(s.filesMax).padStart(4)} / ${s.filesMean.toFixed(1).padStart(5)}`,
    String(s.manifests).padStart(6),
    (s.bytes / 1024 / 1024).toFixed(1).padStart(8),
    s.planMs.toFixed(1).padStart(8),
    s.planCpuMs.toFixed(1).padStart(8),
    `${String(s.planManifests).padStart(4)} / ${String(s.planEntries).padStart(6)}`,
    s.underLoad ? "" : "(after the load)",
  ];
  return "  " + cols.join("  ");
}

const SAMPLE_HEADER = "  " + ["    t", "      rows", "snapshots (bound)", "files/bucket max / mean", "manifests", "      MB", " plan ms", "plan CPU", "plan reads manifests / entries"].join("  ");

/** Creates the phase's table as the cluster would (its retention defaults) and waits until its buckets are served. */
async function createServedTable(c: Cluster, name: string, options: Record<string, string>): Promise<Table> {
  const table = await c.catalog.createTable(parseIdentifier(name), {
    columns: parseColumnList(BENCH_COLUMNS),
    options: { ...CLUSTER_TABLE_DEFAULTS, bucket: String(BUCKETS), "bucket-key": "id", ...options },
  });
  // Nodes find new tables by scanning the warehouse every 2 s.
  if (!(await waitForAssignment(c.nc, name, BUCKETS, NODES, 60_000))) throw new Error(`${name}: its ${BUCKETS} buckets were not assigned to ${NODES} nodes within 60 s`);
  assertAlive(c.nodes, c.dir, `while ${name} started`);
  return table;
}

/**
 * Samples the table every SAMPLE_EVERY_MS until `loadDone` settles, and with `probePlans` plans it once every
 * PLAN_PROBE_MS between the samples; times one full scan at the first sample from minute 1 on (under load, like the
 * samples). Each sample line is printed as it is taken.
 */
async function sampleDuringLoad(table: Table, t0: number, loadDone: Promise<unknown>, probePlans: boolean): Promise<{ samples: Sample[]; scanMinute1: ScanFigure | null; planProbes: PlanProbe[] }> {
  let done = false;
  void loadDone.then(
    () => (done = true),
    () => (done = true),
  );
  const samples: Sample[] = [];
  const planProbes: PlanProbe[] = [];
  let scanMinute1: ScanFigure | null = null;
  const probesPerSample = SAMPLE_EVERY_MS / PLAN_PROBE_MS;
  // One after the other, never at once: each times its plans by this process's CPU.
  for (let k = 1; ; k++) {
    const wait = t0 + k * PLAN_PROBE_MS - Date.now();
    if (wait > 0) await Promise.race([sleep(wait), loadDone.catch(() => undefined)]);
    if (done) break;
    if (wait <= -PLAN_PROBE_MS) continue; // the previous sample or probe overran this slot
    if (k % probesPerSample !== 0) {
      if (probePlans) planProbes.push(await probePlan(table, (Date.now() - t0) / 1000));
      continue;
    }
    const s = await sample(table, (Date.now() - t0) / 1000, true);
    samples.push(s);
    say(sampleLine(s));
    if (scanMinute1 === null && s.t >= 60) {
      scanMinute1 = await timeScans(table, 1);
      say(`  full scan at ${s.t.toFixed(0)} s: ${fmt(scanMinute1.rows)} rows in ${scanMinute1.seconds.toFixed(2)} s = ${fmt(scanRate(scanMinute1))} rows/s (one run, under load)`);
    }
  }
  return { samples, scanMinute1, planProbes };
}

/** The unmeasured warm-up phase (WARM_PHASE_SECONDS_DEFAULT): load at the bench's rate into a table of its own. */
async function warmUp(c: Cluster, options: Record<string, string>): Promise<void> {
  const tableName = "bench.maint_warm";
  await createServedTable(c, tableName, options);
  const rows = Math.round(RATE * WARM_PHASE_SECONDS);
  say(`\nwarm-up (not measured): ${tableName}, maintenance on, ${fmt(rows)} rows at ${fmt(RATE)} rows/s`);
  const load = await runLoad(c.nats.url, tableName, rows, RATE, 0, { timeoutMs: 2 * WARM_PHASE_SECONDS * 1000 + 180_000, signal: c.abort.signal });
  assertAlive(c.nodes, c.dir, "during the warm-up");
  say(`  ${fmt(num(load, "rows"))} rows visible after ${num(load, "visibleSeconds").toFixed(1)} s`);
  dropServedTable(c, tableName);
}

/**
 * Drops a table the cluster serves (`natslake table drop --nats`: every node stops it, then its files and streams go),
 * so that a finished phase's table does not keep working in the next one's CPU: a served table's writers keep
 * planning and finishing compactions, and with the warm-up's and the on phase's tables both still served, the off
 * phase measured 26.5 node CPU-s per million rows against 18.6 with one.
 */
function dropServedTable(c: Cluster, name: string): void {
  const r = spawnSync(process.execPath, [BIN, "table", "drop", name, "--nats", c.nats.url, "--warehouse", join(c.dir, "wh")], { encoding: "utf8", timeout: 120_000 });
  if (r.status !== 0) throw new Error(`natslake table drop ${name} failed (${r.status ?? r.signal}): ${(r.stderr || r.stdout).trim().split("\n").slice(-3).join(" | ")}`);
  say(`  ${name} dropped`);
}

async function runPhase(c: Cluster, name: string, options: Record<string, string>, what: string): Promise<PhaseResult> {
  const tableName = `bench.maint_${name}`;
  const table = await createServedTable(c, tableName, options);
  const rows = Math.round(RATE * MINUTES * 60);
  say(`\nphase ${name} (${what}): ${tableName}, ${fmt(rows)} rows at ${fmt(RATE)} rows/s after a ${WARMUP_SECONDS} s warm-up`);
  say(SAMPLE_HEADER);
  const cpu0 = c.nodes.map((n) => procStats(n.pid!).cpu);
  const natsCpu0 = procStats(c.nats.pid).cpu;
  // VmRSS sampled (VmHWM would carry the previous phase's peak).
  const rss = sampleRss(
    c.nodes.map((n) => n.pid!),
    c.nodes.map((_, i) => `n${i + 1}`),
    RSS_READ_MS,
    RSS_POINT_MS,
  );
  const t0 = Date.now();
  const fromUs = monotonicUs();
  // Its deadline: the publishing time, plus as long again (and 3 min) for a cluster that falls behind to drain.
  const timeoutMs = 2 * (MINUTES * 60 + WARMUP_SECONDS) * 1000 + 180_000;
  const loadP = runLoad(c.nats.url, tableName, rows, RATE, RATE * WARMUP_SECONDS, { timeoutMs, signal: c.abort.signal });
  // Observed at once: when sampling fails, the run ends and the generator is killed, and its rejection is expected.
  loadP.catch(() => undefined);
  // Plans are probed in the on phase only (the target's): the off table's plans grow to ~100 ms of this process's CPU
  // a second, which would load the machine in that phase alone and bias the node CPU comparison.
  const { samples, scanMinute1, planProbes } = await sampleDuringLoad(table, t0, loadP, name === "on");
  const load = await loadP;
  const seconds = (Date.now() - t0) / 1000;
  const { peakMb: nodePeakRssMb, lines: nodeRss } = rss.stop();
  assertAlive(c.nodes, c.dir, `during phase ${name}`);
  const nodeCpu = c.nodes.map((n, i) => procStats(n.pid!).cpu - cpu0[i]!);
  const natsCpu = procStats(c.nats.pid).cpu - natsCpu0;
  if (PROFILING.flags.length > 0) say(`  profile window of the phase's load (CLOCK_MONOTONIC µs, for bench/cpuprofile-summary.mjs FILE FROM TO): ${fromUs} ${monotonicUs()}`);
  // The end: the snapshot the last rows became visible in, pinned, so compaction after the load does not flatter it.
  const endSnapshot = (await table.snapshots.latestId())!;
  const last = await sample(table, (Date.now() - t0) / 1000, false);
  samples.push(last);
  say(sampleLine(last));
  const scanEnd = await timeScans(table, SCAN_RUNS, endSnapshot);
  say(`  full scan of snapshot ${endSnapshot} (the end): ${fmt(scanEnd.rows)} rows, median of ${SCAN_RUNS} ${scanEnd.seconds.toFixed(2)} s = ${fmt(scanRate(scanEnd))} rows/s (runs ${scanEnd.runs.map((x) => x.toFixed(2)).join(" ")} s)`);
  return { name, table: tableName, samples, scanMinute1, planProbes, scanEnd, endSnapshot, load, startedAt: t0, nodeCpu, nodePeakRssMb, nodeRss, natsCpu, seconds, tableHandle: table };
}

/**
 * The scan's yardstick: the rows of the phase's end snapshot written by ONE batch write (one BatchWriter, one
 * commit) into a fresh table of the same schema and buckets, in a warehouse of its own (the cluster does not serve
 * it), then scanned the same way — alternately with the maintained table's end snapshot, so both are timed under the
 * same conditions. (The phase's own end scan runs right after the load, while the writers still compact what the
 * last minutes left and the leader lands and expires: on this 2-core machine it competes with them, and the batch
 * copy, scanned later, would not.)
 */
async function batchBaseline(dir: string, source: Table, snapshotId: number): Promise<{ scan: ScanFigure; maintained: ScanFigure; files: number; writeSeconds: number }> {
  const table = await new Catalog(join(dir, "baseline-wh")).createTable(parseIdentifier("bench.batch"), {
    columns: parseColumnList(BENCH_COLUMNS),
    options: { ...CLUSTER_TABLE_DEFAULTS, bucket: String(BUCKETS), "bucket-key": "id" },
  });
  const t0 = performance.now();
  const writer = await BatchWriter.open(table);
  for await (const b of readBatches(source, { snapshotId })) await writer.writeArrow(b);
  const res = await writer.commit();
  const writeSeconds = (performance.now() - t0) / 1000;
  const batch: Array<{ rows: number; seconds: number }> = [];
  const maintained: Array<{ rows: number; seconds: number }> = [];
  for (let i = 0; i < SCAN_RUNS; i++) {
    batch.push(await scanOnce(table));
    maintained.push(await scanOnce(source, snapshotId));
  }
  return { scan: scanFigure(batch), maintained: scanFigure(maintained), files: res.files, writeSeconds };
}

function num(r: LoadRun, key: string): number {
  const v = r.result[key];
  return typeof v === "number" ? v : NaN;
}

function ingestLines(p: PhaseResult): string[] {
  const rows = num(p.load, "rows");
  const cpu = p.nodeCpu.reduce((a, b) => a + b, 0);
  return [
    `  phase ${p.name}: ${fmt(rows)} rows (${fmt(num(p.load, "acked"))} acknowledged), published in ${num(p.load, "publishSeconds").toFixed(1)} s, all visible after ${num(p.load, "visibleSeconds").toFixed(1)} s = ${fmt(rows / num(p.load, "visibleSeconds"))} rows/s; publish→visible p50 ${num(p.load, "latencyP50")} ms, p99 ${num(p.load, "latencyP99")} ms (${fmt(num(p.load, "samples"))} batches; warm-up p50/p99 ${num(p.load, "warmupP50")}/${num(p.load, "warmupP99")} ms)`,
    `    nodes: ${p.nodeCpu.map((x, i) => `n${i + 1} ${x.toFixed(1)} CPU s, peak RSS ${p.nodePeakRssMb[i]} MB`).join("; ")} (${(cpu / (rows / 1e6)).toFixed(2)} node CPU s per 1M rows); nats-server ${p.natsCpu.toFixed(1)} CPU s; load generator ${num(p.load, "cpuSeconds").toFixed(1)} CPU s; phase ${p.seconds.toFixed(0)} s`,
  ];
}

const mark = (ok: boolean | null): string => (ok === null ? "–" : ok ? "✔" : "✘");

/** Samples medianed for each end of the samples' plan comparison (printed beside the probes' target figure). */
const PLAN_WINDOW = 3;

interface PlanPoint {
  /** Median plan time (ms) of the window's samples or probes. */
  ms: number;
  /** Median planning CPU time (ms) of the window's samples or probes. */
  cpuMs: number;
  entries: number;
  from: number;
  to: number;
  /** Samples or probes in the window. */
  n: number;
}

function planPoint(window: ReadonlyArray<{ t: number; ms: number; cpuMs: number; entries: number }>): PlanPoint {
  return { ms: median(window.map((s) => s.ms)), cpuMs: median(window.map((s) => s.cpuMs)), entries: median(window.map((s) => s.entries)), from: window[0]!.t, to: window[window.length - 1]!.t, n: window.length };
}

/**
 * The issue's "minute 1" and "minute 10" by the samples: the first PLAN_WINDOW from minute 1 on, and the last
 * PLAN_WINDOW taken under load (none when the run is too short for two windows that do not overlap).
 */
function planPoints(samples: Sample[]): { first: PlanPoint; last: PlanPoint } | null {
  const loaded = samples.filter((s) => s.underLoad).map((s) => ({ t: s.t, ms: s.planMs, cpuMs: s.planCpuMs, entries: s.planEntries }));
  const from1 = loaded.findIndex((s) => s.t >= 60);
  if (from1 < 0 || loaded.length - from1 < 2 * PLAN_WINDOW) return null;
  return { first: planPoint(loaded.slice(from1, from1 + PLAN_WINDOW)), last: planPoint(loaded.slice(-PLAN_WINDOW)) };
}

/** Probes at least in each window for the probes' comparison. */
const MIN_WINDOW_PROBES = 10;

/**
 * The same by the probes: those of the PLAN_WINDOW_S seconds from minute 1 on, and of the last PLAN_WINDOW_S seconds
 * under load (none when the windows would overlap or hold too few probes).
 */
function probePoints(probes: PlanProbe[]): { first: PlanPoint; last: PlanPoint } | null {
  const loaded = probes.filter((p) => p.underLoad);
  if (loaded.length === 0) return null;
  const end = loaded[loaded.length - 1]!.t;
  const first = loaded.filter((p) => p.t >= 60 && p.t < 60 + PLAN_WINDOW_S);
  const last = loaded.filter((p) => p.t > end - PLAN_WINDOW_S);
  if (first.length < MIN_WINDOW_PROBES || last.length < MIN_WINDOW_PROBES || last[0]!.t <= first[first.length - 1]!.t) return null;
  return { first: planPoint(first), last: planPoint(last) };
}

/** A phase's ingest figures for the results file, named `<phase>_…`. */
function ingestFigures(p: PhaseResult): Figures {
  const rows = num(p.load, "rows");
  const r3 = (x: number): number => Math.round(x * 1000) / 1000;
  const ms = (key: string): number | null => (Number.isFinite(num(p.load, key)) ? num(p.load, key) : null);
  const nodeCpu = p.nodeCpu.reduce((a, b) => a + b, 0);
  return {
    [`${p.name}_rows`]: rows,
    [`${p.name}_rows_per_sec`]: Math.round(rows / num(p.load, "visibleSeconds")),
    [`${p.name}_p50_ms`]: ms("latencyP50"),
    [`${p.name}_p99_ms`]: ms("latencyP99"),
    [`${p.name}_warmup_p99_ms`]: ms("warmupP99"),
    [`${p.name}_node_cpu_s`]: r3(nodeCpu),
    [`${p.name}_node_cpu_s_per_million_rows`]: r3(nodeCpu / (rows / 1e6)),
    [`${p.name}_node_peak_rss_max_mb`]: Math.max(...p.nodePeakRssMb),
    [`${p.name}_nats_cpu_s`]: r3(p.natsCpu),
    [`${p.name}_load_generator_cpu_s`]: r3(num(p.load, "cpuSeconds")),
    [`${p.name}_scan_end_rows_per_sec`]: Math.round(scanRate(p.scanEnd)),
    [`${p.name}_scan_minute_1_rows_per_sec`]: p.scanMinute1 === null ? null : Math.round(scanRate(p.scanMinute1)),
    [`${p.name}_phase_s`]: Math.round(p.seconds),
  };
}

function targetLines(on: PhaseResult, off: PhaseResult, baseline: { scan: ScanFigure; maintained: ScanFigure }): { lines: string[] } & FigureSet {
  const after1 = on.samples.filter((s) => s.t > 60);
  const filesMax = after1.length === 0 ? null : Math.max(...after1.map((s) => s.filesMax));
  const over = after1.length === 0 ? null : Math.max(...after1.map((s) => s.snapshots - s.bound));
  // The target is on the probes (PLAN_PROBE_MS); the samples' 3-point comparison is printed beside it.
  const plans = probePoints(on.planProbes);
  const samplePlans = planPoints(on.samples);
  // The target is on the planning's CPU time — the work, which is what grows with the table's metadata; its wall time
  // on this saturated machine measured the load of the moment (a run read 0.66x the entries at minute 10 and took
  // 1.62x the time). Both are printed.
  const planRatio = plans === null ? null : plans.last.cpuMs / plans.first.cpuMs;
  const planWallRatio = plans === null ? null : plans.last.ms / plans.first.ms;
  const samplePlanRatio = samplePlans === null ? null : samplePlans.last.cpuMs / samplePlans.first.cpuMs;
  const span = (p: PlanPoint): string => `${p.cpuMs.toFixed(1)} CPU ms (${p.ms.toFixed(1)} ms wall, ${p.entries} entries) at ${p.from.toFixed(0)}–${p.to.toFixed(0)} s`;
  const scanRatio = scanRate(baseline.maintained) / scanRate(baseline.scan);
  const tput = (p: PhaseResult): number => num(p.load, "rows") / num(p.load, "visibleSeconds");
  const tputRatio = tput(on) / tput(off);
  // Per million rows: the phases ingest the same rows, but a run cut short by its deadline would not.
  const cpuPerRow = (p: PhaseResult): number => p.nodeCpu.reduce((a, b) => a + b, 0) / num(p.load, "rows");
  const cpuRatio = cpuPerRow(on) / cpuPerRow(off);
  const p99 = num(on.load, "latencyP99");
  const na = "n/a (no samples after minute 1: run longer)";
  const end = on.samples[on.samples.length - 1]!;
  // A run shorter than time-retained tests the bound only through num-retained.max (3000 with the cluster's defaults).
  const r3 = (x: number): number => Math.round(x * 1000) / 1000;
  const targets: Target[] = [
    targetAtMost("files_per_bucket_max", filesMax, ON_TARGETS.filesPerBucket),
    targetAtMost("snapshots_over_retention_bound", over, 0),
    targetAtMost("plan_growth_ratio", planRatio === null ? null : r3(planRatio), ON_TARGETS.planGrowth),
    targetAtLeast("scan_vs_batch_ratio", r3(scanRatio), ON_TARGETS.scanVsBatch),
    targetAtLeast("throughput_on_vs_off_ratio", r3(tputRatio), ON_TARGETS.throughputVsOff),
    targetAtMost("node_cpu_on_vs_off_ratio", Number.isFinite(cpuRatio) ? r3(cpuRatio) : null, ON_TARGETS.nodeCpuVsOff),
    targetAtMost("on_p99_ms", Number.isFinite(p99) ? p99 : null, ON_TARGETS.p99Ms),
  ];
  const figures: Figures = {
    off_files_per_bucket_max: Math.max(...off.samples.map((s) => s.filesMax)),
    off_snapshots_max: Math.max(...off.samples.map((s) => s.snapshots)),
    on_snapshots_max_after_minute_1: after1.length === 0 ? null : Math.max(...after1.map((s) => s.snapshots)),
    on_snapshots_expired: end.earliest - 1,
    plan_minute_1_ms: plans === null ? null : r3(plans.first.ms),
    plan_end_ms: plans === null ? null : r3(plans.last.ms),
    plan_minute_1_cpu_ms: plans === null ? null : r3(plans.first.cpuMs),
    plan_end_cpu_ms: plans === null ? null : r3(plans.last.cpuMs),
    plan_wall_growth_ratio: planWallRatio === null ? null : r3(planWallRatio),
    plan_window_probes: plans === null ? null : Math.min(plans.first.n, plans.last.n),
    plan_growth_ratio_of_3_samples: samplePlanRatio === null ? null : r3(samplePlanRatio),
    baseline_scan_rows_per_sec: Math.round(scanRate(baseline.scan)),
    on_scan_alternated_rows_per_sec: Math.round(scanRate(baseline.maintained)),
    on_scan_right_after_load_vs_batch_ratio: r3(scanRate(on.scanEnd) / scanRate(baseline.scan)),
    off_scan_vs_batch_ratio: r3(scanRate(off.scanEnd) / scanRate(baseline.scan)),
  };
  const expired = end.earliest > 1 ? `snapshots 1–${end.earliest - 1} expired by the end` : `nothing expired yet: no snapshot was older than ${RETENTION["snapshot.time-retained"]} or beyond ${RETENTION["snapshot.num-retained.max"]}`;
  const lines = [
    `targets (phase on unless said)`,
    `  ${mark(filesMax === null ? null : filesMax <= ON_TARGETS.filesPerBucket)} live data files per bucket ≤ ${ON_TARGETS.filesPerBucket} after minute 1: max ${filesMax ?? na} (phase off: max ${Math.max(...off.samples.map((s) => s.filesMax))})`,
    `  ${mark(over === null ? null : over <= 0)} snapshot files within the retention bound after minute 1: ${over === null ? na : over <= 0 ? `always (at most ${Math.max(...after1.map((s) => s.snapshots))} files)` : `exceeded by up to ${over}`}; ${expired} (phase off, write-only: ${Math.max(...off.samples.map((s) => s.snapshots))} at the end)`,
    `  ${mark(planRatio === null ? null : planRatio <= ON_TARGETS.planGrowth)} planning's CPU time at the end ≤ ${ON_TARGETS.planGrowth}× minute 1: ${plans === null || planRatio === null || planWallRatio === null ? "n/a (too few plan probes after minute 1: run longer)" : `median of ${plans.last.n} / ${plans.first.n} plans (one a second) ${span(plans.last)} / ${span(plans.first)} = ${planRatio.toFixed(2)}× (wall time ${planWallRatio.toFixed(2)}×); entries read ${(plans.last.entries / plans.first.entries).toFixed(2)}×${samplePlanRatio === null ? "" : `; by ${PLAN_WINDOW} samples 10 s apart ${samplePlanRatio.toFixed(2)}×`}`}`,
    `  ${mark(scanRatio >= ON_TARGETS.scanVsBatch)} full scan at the end ≥ ${ON_TARGETS.scanVsBatch}× one batch write's, scanned alternately: ${fmt(scanRate(baseline.maintained))} / ${fmt(scanRate(baseline.scan))} rows/s = ${scanRatio.toFixed(2)}× (right after the load, the cluster still compacting: ${(scanRate(on.scanEnd) / scanRate(baseline.scan)).toFixed(2)}×; phase off: ${(scanRate(off.scanEnd) / scanRate(baseline.scan)).toFixed(2)}×)`,
    `  ${mark(tputRatio >= ON_TARGETS.throughputVsOff)} ingest throughput on ≥ ${ON_TARGETS.throughputVsOff}× off (rows / first publish → all visible): ${fmt(tput(on))} / ${fmt(tput(off))} rows/s = ${tputRatio.toFixed(3)}×`,
    `  ${mark(cpuRatio <= ON_TARGETS.nodeCpuVsOff)} node CPU on ≤ ${ON_TARGETS.nodeCpuVsOff}× off (issue 28; both nodes, per 1M rows ingested): ${(cpuPerRow(on) * 1e6).toFixed(2)} / ${(cpuPerRow(off) * 1e6).toFixed(2)} CPU s = ${cpuRatio.toFixed(2)}×`,
    `  ${mark(p99 <= ON_TARGETS.p99Ms)} publish→visible p99 ≤ commit interval + 100 ms = ${ON_TARGETS.p99Ms} ms: on ${p99} ms, off ${num(off.load, "latencyP99")} ms`,
  ];
  return { lines, figures, targets };
}

/** The phases' samples and load as time series (time 0: the phase's load generator started). */
function maintenanceSeries(on: PhaseResult, off: PhaseResult): Record<string, Series> {
  const x = "time since the phase's load started (s)";
  const sampled = (p: PhaseResult, name: string, y: (s: Sample) => number): SeriesLine => ({ name: `${p.name}: ${name}`, points: p.samples.map((s) => [Math.round(s.t * 10) / 10, Math.round(y(s) * 10) / 10]) });
  return {
    files_per_bucket: {
      title: `Live data files per bucket (sampled every ${SAMPLE_EVERY_MS / 1000} s)`,
      x,
      y: "data files per bucket",
      lines: [sampled(on, "max", (s) => s.filesMax), sampled(on, "mean", (s) => s.filesMean), sampled(off, "max", (s) => s.filesMax), sampled(off, "mean", (s) => s.filesMean)],
      limits: [{ name: `target (on, after minute 1) ≤ ${ON_TARGETS.filesPerBucket}`, y: ON_TARGETS.filesPerBucket }],
    },
    snapshot_files: {
      title: "Snapshot files, and what the retention options allow (phase on)",
      x,
      y: "snapshot files",
      lines: [sampled(on, "snapshots", (s) => s.snapshots), sampled(on, "retention bound", (s) => s.bound), sampled(off, "snapshots", (s) => s.snapshots)],
    },
    plan_cpu: {
      title: `Planning a scan of the latest snapshot: CPU time (median of ${PLAN_RUNS})`,
      x,
      y: "CPU ms",
      lines: [sampled(on, "plan", (s) => s.planCpuMs), sampled(off, "plan", (s) => s.planCpuMs)],
    },
    latency: {
      title: `Publish → visible latency per ${LATENCY_WINDOW_MS / 1000} s of publishing`,
      x,
      y: "latency (ms)",
      lines: [on, off].flatMap((p) => percentileLines(p.load.timeline, p.startedAt, LATENCY_WINDOW_MS, `${p.name}: `)),
      limits: [{ name: `target p99 ≤ ${ON_TARGETS.p99Ms} ms`, y: ON_TARGETS.p99Ms }],
    },
    node_rss: {
      title: `Node RSS (largest of every ${RSS_POINT_MS / 1000} s, read every ${RSS_READ_MS} ms)`,
      x,
      y: "RSS (MB)",
      lines: [on, off].flatMap((p) => p.nodeRss.map((l) => ({ name: `${p.name}: ${l.name}`, points: l.points }))),
    },
  };
}

async function startCluster(natsBin: string): Promise<Cluster> {
  const p: Processes = { dir: mkdtempSync(join(tmpdir(), "natslake-mbench-")), servers: [], nc: null, nodes: [], abort: new AbortController() };
  try {
    const nats = await startNats({ bin: natsBin });
    p.servers.push(nats);
    const redis = await startRedis();
    p.servers.push(redis);
    const nc = await connect({ servers: nats.url });
    p.nc = nc;
    const warehouse = join(p.dir, "wh");
    for (let i = 1; i <= NODES; i++) {
      if (flags["node-logs"] !== undefined) mkdirSync(flags["node-logs"], { recursive: true });
      const fd = openSync(join(flags["node-logs"] ?? p.dir, `n${i}.log`), "a");
      const args = [BIN, "node", "--nats", nats.url, "--redis", redis.url, "--warehouse", warehouse, "--node-id", `n${i}`, "--commit-interval", `${COMMIT_INTERVAL_MS}ms`, "--log-level", flags["log-level"]];
      p.nodes.push(spawn(process.execPath, [...PROFILING.flags, ...args], { stdio: ["ignore", fd, fd], env: nodeProcessEnv(process.env) }));
    }
    return { ...p, nats, nc, catalog: new Catalog(warehouse) };
  } catch (e) {
    await stopCluster(p);
    throw e;
  }
}

/** Kills the load generator and the nodes, stops the servers, removes the temporary directory. */
async function stopCluster(c: Processes): Promise<void> {
  c.abort.abort();
  for (const n of c.nodes) n.kill(PROFILING.stopSignal);
  await Promise.all(c.nodes.map((n) => new Promise((r) => (n.exitCode !== null || n.signalCode !== null ? r(null) : n.once("exit", r)))));
  await c.nc?.close().catch(() => undefined);
  for (const s of c.servers) await s.stop();
  rmSync(c.dir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const started = Date.now();
  const nats = chooseNatsServer();
  const nodesFrom = nodesRunFrom();
  say(`maintenance, ${MINUTES} min per phase, ${fmt(RATE)} rows/s, ${BUCKETS} buckets, ${COMMIT_INTERVAL_MS} ms commits, ${NODES} nodes (from ${nodesFrom}), loopback nats-server + redis-server`);
  say(`  nats-server ${nats.version ?? "(version unknown)"} (${nats.bin}, ${nats.source}${nats.old ? "; older than 2.10" : ""}); load average at start ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  say(`  retention: ${Object.entries(RETENTION).map(([k, v]) => `${k} = ${v}`).join(", ")}`);
  const c = await startCluster(nats.bin);
  try {
    if (WARM_PHASE_SECONDS > 0) await warmUp(c, { ...(flags["retain-max"] !== undefined ? { "snapshot.num-retained.max": flags["retain-max"] } : {}), ...ON_OPTIONS });
    const on = await runPhase(c, "on", { ...(flags["retain-max"] !== undefined ? { "snapshot.num-retained.max": flags["retain-max"] } : {}), ...ON_OPTIONS }, "writer-side compaction, expiration by the leader");
    say(`\nbaseline: the ${fmt(on.scanEnd.rows)} rows of snapshot ${on.endSnapshot} written by one batch write`);
    const baseline = await batchBaseline(c.dir, on.tableHandle, on.endSnapshot);
    say(`  written in ${baseline.writeSeconds.toFixed(1)} s into ${baseline.files} files; full scans alternated with the maintained table's snapshot ${on.endSnapshot}, median of ${SCAN_RUNS}: batch ${baseline.scan.seconds.toFixed(2)} s = ${fmt(scanRate(baseline.scan))} rows/s (runs ${baseline.scan.runs.map((x) => x.toFixed(2)).join(" ")} s), maintained ${baseline.maintained.seconds.toFixed(2)} s = ${fmt(scanRate(baseline.maintained))} rows/s (runs ${baseline.maintained.runs.map((x) => x.toFixed(2)).join(" ")} s)`);
    dropServedTable(c, on.table);
    const off = await runPhase(c, "off", { "write-only": "true" }, "write-only = true: no writer-side compaction, no expiration");
    say("\ningest");
    for (const p of [on, off]) for (const l of ingestLines(p)) say(l);
    say("");
    const judged = targetLines(on, off, baseline);
    for (const l of judged.lines) say(l);
    say(`phases: on ${on.seconds.toFixed(0)} s, off ${off.seconds.toFixed(0)} s; whole run ${((Date.now() - started) / 1000).toFixed(0)} s; load average at the end ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
    const figures: Figures = {
      minutes_per_phase: MINUTES,
      warm_phase_s: WARM_PHASE_SECONDS,
      offered_rows_per_sec: RATE,
      nodes_from: nodesFrom,
      ...ingestFigures(on),
      ...ingestFigures(off),
      baseline_files: baseline.files,
      baseline_write_s: Math.round(baseline.writeSeconds * 1000) / 1000,
      ...judged.figures,
      run_s: Math.round((Date.now() - started) / 1000),
      load_average_1m_end: Math.round(loadavg()[0]! * 100) / 100,
    };
    recordFigures("maintenance", figures, judged.targets, { natsServer: nats.version, series: maintenanceSeries(on, off) });
  } finally {
    await stopCluster(c);
  }
}

await main();
