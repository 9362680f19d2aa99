/**
 * Consumer benchmark (issue 11; part of `npm run bench`; a benchmark, not a test: it prints figures and ratios).
 *
 * Rows over NATS (cluster/consumer.ts ↔ cluster/consume-service.ts on a reader node), on loopback nats-server and
 * redis-server, with 2 node processes `--roles writer,committer` and ONE `--roles reader`, so every consume session
 * lands on that reader, whose CPU and RSS are reported. Consumers run in their own process (bench/consumer-load.ts;
 * a latency phase's consumers in up to --consumer-processes P processes, default 1), the load generator in another
 * (bench/cluster-load.ts), so each one's CPU is apart.
 *   latency   a 6-bucket table, 100 ms commits (--commit-interval-ms), 50k rows/s; N = 1, 10, 100 consumers `from: "latest"`: snapshot
 *             link → the consumer holds the whole snapshot, p50/p99 per N (the first seconds reported apart);
 *   catch-up  a backlog of --rows rows, committed; one consumer `from: "full"` receiving all of them (rows/s)
 *             against natslake's own full scan of the same snapshot in this process (readBatches), before and after;
 *   stall     one consumer (window 8) takes one snapshot and then pulls nothing for --stall-seconds while 50k rows/s
 *             keep landing; the reader's RSS sampled every second; a fast consumer's latency meanwhile.
 * The reader's part of each delivery (link → its session sent the rows) comes from its natslake_consume_delivery_ms
 * histogram (/metrics): what is left of a consumer's latency is NATS and the consumer process.
 * Each issue-11 target is printed with ✔/✘, with the load average at the start and the end. The delivery latencies per
 * second of each latency phase (p50, p99) and the reader's RSS over the latency and stall phases go to the results
 * file as time series, drawn on docs/benchmarks.md.
 *
 *   node --import tsx bench/consumer.bench.ts [--rows N] [--stall-seconds S] [--consumer-processes P] [--writers-nice N] [--node-cpu-prof DIR] [--commit-interval-ms N] [--consumers 1,10,100] [--latency-only] [--catch-up-only N] [--quick]
 *   (defaults: a 1M-row backlog, a 60 s stall, 20 s per latency phase; --quick: 200k rows, 15 s, 8 s)
 * `--consumers` picks the latency phases; `--latency-only` skips catch-up and stall and records nothing (a quick look or a
 * profile: with `--node-cpu-prof`, each latency phase prints its window for `bench/cpuprofile-summary.mjs FILE FROM TO`).
 * `--writers-nice N` (0-19, default 19): the latency phases run with every thread of the two writer nodes at nice N,
 * so that the reader, nats-server and the consumers get the CPU first, as where a reader has cores of its own. On this
 * 2-core machine the writers take 1.1-1.2 cores for 50k rows/s at 100 ms commits and the other processes the rest:
 * with every process alike both cores are busy ~98 % of the time, and the 10-consumer p99 (~100 ms) is run-queue
 * waits (perf sched: the consumer process's main thread waited up to 20 ms per wake-up, its event loop stood still
 * 50-100 ms at a time using a fifth of that in CPU). So a 10-consumer phase with the writers at the same priority as
 * everything else runs first and is reported beside (`latency_10_equal_priority_*`, no target); then the writers are
 * reniced (threads they start later inherit it). `--writers-nice 0`: no renice, no extra phase.
 * Its figures go to the benchmark results file too (bench/figures.ts, section `consumer`).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { nodeProcessEnv } from "../cluster/local/node-env.ts";
import { mkdtempSync, openSync, readdirSync, rmSync } from "node:fs";
import { loadavg, setPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { CLUSTER_TABLE_DEFAULTS } from "../cluster/admin.ts";
import { Subjects } from "../cluster/nats/subjects.ts";
import { chooseNatsServer, freePort, startNats, startRedis, type ServerHandle } from "../cluster/local/servers.ts";
import { readBatches } from "../src/scan/read.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import type { Table } from "../src/table/table.ts";
import { assertAlive, nodeProfiling, procStats, publishBenchRows, runLoad, waitForAssignment, type LoadRun } from "./cluster-harness.ts";
import { BENCH_COLUMNS } from "./shape.ts";
import type { FeedStage } from "../actors/consume-feed.ts";
import { recordFigures, targetAtLeast, targetAtMost, type FigureSet, type Figures, type Series, type SeriesLine } from "./figures.ts";
import { secondsSince, windowQuantile } from "./series.ts";

const BIN = fileURLToPath(new URL("../bin/natslake.mjs", import.meta.url));
const CONSUMERS = fileURLToPath(new URL("./consumer-load.ts", import.meta.url));
const RATE = 50_000;
const BUCKETS = 6;
const WRITERS = 2;
const DEFAULT_CONSUMER_COUNTS = [1, 10, 100];
/**
 * How many processes carry a latency phase's consumers (`--consumer-processes P`): one per process up to P, then
 * shared evenly (100 consumers with P = 10: 10 processes of 10). Default 1, all in one process, as the README's
 * figures were taken. Neither measures the reader alone on this 2-core machine: in one process the 10th consumer's
 * chunks wait behind the other nine's (reader send → receipt p50 23 / p99 169 ms, against 4 / 45 ms with one
 * consumer), while 10 processes cost 2.5-3.5× the consumers' CPU (8-11 CPU s against 3 per 24 s phase), taken from
 * the nodes; in runs side by side neither moved the 10-consumer p99 beyond the machine's noise.
 */
const DEFAULT_CONSUMER_PROCESSES = 1;
/** Snapshots linked in the first seconds of each latency phase's load are reported apart (JIT, first files). */
const WARMUP_SECONDS = 2;
/** How long the consumers get, after the load, to receive the last snapshot before the missing ones are counted. */
const DRAIN_MS = 30_000;
const TARGETS = { p99Ms: 50, p99Consumers: 10, catchUpVsScan: 0.5, stalledRssMb: 300, stallSeconds: 60 };

const { values: flags } = parseArgs({ options: { rows: { type: "string" }, "stall-seconds": { type: "string" }, "consumer-processes": { type: "string" }, "writers-nice": { type: "string" }, "node-cpu-prof": { type: "string" }, "commit-interval-ms": { type: "string" }, consumers: { type: "string" }, "latency-only": { type: "boolean", default: false }, "catch-up-only": { type: "string" }, quick: { type: "boolean", default: false } } });
const PROFILING = nodeProfiling(flags["node-cpu-prof"]);
/** The cluster's commit interval (`--commit-interval-ms`, default 100: snapshots every 100 ms, the harder case for the reader). */
const COMMIT_INTERVAL_MS = Number(flags["commit-interval-ms"] ?? 100);
if (!Number.isInteger(COMMIT_INTERVAL_MS) || COMMIT_INTERVAL_MS < 10) throw new Error(`--commit-interval-ms must be an integer ≥ 10, got ${flags["commit-interval-ms"]}`);
const QUICK = flags.quick === true;
/** `--consumers 10` or `1,10`: the latency phases to run (default 1, 10, 100). */
const CONSUMER_COUNTS = flags.consumers === undefined ? DEFAULT_CONSUMER_COUNTS : flags.consumers.split(",").map(Number);
if (!CONSUMER_COUNTS.every((n) => Number.isInteger(n) && n > 0)) throw new Error(`--consumers is a comma-separated list of positive integers, got ${flags.consumers}`);
/** `--latency-only`: only the latency phases (for profiling and quick looks); nothing is recorded in the results file. */
const LATENCY_ONLY = flags["latency-only"] === true;
/** `--catch-up-only N`: only the catch-up phase, N times on fresh backlogs (its ratio is noisy on a shared machine); nothing recorded. */
const CATCH_UP_ONLY = flags["catch-up-only"] === undefined ? 0 : Number(flags["catch-up-only"]);
if (!Number.isInteger(CATCH_UP_ONLY) || CATCH_UP_ONLY < 0) throw new Error(`--catch-up-only takes a repeat count (a positive integer), got ${flags["catch-up-only"]}`);
const ROWS = Number(flags.rows ?? (QUICK ? 200_000 : 1_000_000));
const STALL_SECONDS = Number(flags["stall-seconds"] ?? (QUICK ? 15 : 60));
const LATENCY_SECONDS = QUICK ? 8 : 20;
const CONSUMER_PROCESSES = Number(flags["consumer-processes"] ?? DEFAULT_CONSUMER_PROCESSES);
if (!(ROWS > 0) || !(STALL_SECONDS > 0)) throw new Error(`--rows and --stall-seconds must be positive numbers, got ${flags.rows} and ${flags["stall-seconds"]}`);
if (!Number.isInteger(CONSUMER_PROCESSES) || CONSUMER_PROCESSES < 1) throw new Error(`--consumer-processes must be a positive integer, got ${flags["consumer-processes"]}`);
const WRITERS_NICE = Number(flags["writers-nice"] ?? 19);
if (!Number.isInteger(WRITERS_NICE) || WRITERS_NICE < 0 || WRITERS_NICE > 19) throw new Error(`--writers-nice must be an integer in 0..19, got ${flags["writers-nice"]}`);

/** CLOCK_MONOTONIC in µs: the clock of a .cpuprofile's sample times. */
const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number): string => Math.round(n).toLocaleString("en-US");
const say = (line: string): void => void process.stdout.write(line + "\n");
const mark = (ok: boolean): string => (ok ? "✔" : "✘");
const ms = (v: unknown): string => (typeof v === "number" ? `${v} ms` : "n/a");
const loads = (): string => loadavg().map((x) => x.toFixed(2)).join(" ");

/** What a run started, for stopCluster (a start that failed halfway stops what it got). */
interface Processes {
  dir: string;
  servers: ServerHandle[];
  nc: NatsConnection | null;
  /** n1, n2: writer,committer; n3: the reader. Logs in `<dir>/n<i>.log` (assertAlive reads them). */
  nodes: ChildProcess[];
  /** Consumer processes still running (killed at the end). */
  children: Set<ChildProcess>;
  /** Aborted at the end: kills a load generator still running. */
  abort: AbortController;
}

interface Cluster extends Processes {
  nats: ServerHandle;
  redis: ServerHandle;
  warehouse: string;
  nc: NatsConnection;
  catalog: Catalog;
  reader: ChildProcess;
  /** The reader's /metrics (its delivery-latency histogram: link → a session sent the rows). */
  readerMetricsPort: number;
}

// ---------------------------------------------------------------------------------------------------------------
// The consumer process

type Event = Record<string, unknown> & { event: string };

interface ConsumerRun {
  /** The first event of that name (waits for it, rejecting after `timeoutMs` or when the process exits first). */
  next(event: string, timeoutMs: number): Promise<Event>;
  /** Asks a latency job to drain and report. */
  stop(): void;
}

function startConsumers(c: Cluster, table: string, job: Record<string, unknown>): ConsumerRun {
  const p = spawn(process.execPath, [...PROFILING.flags, "--import", "tsx", CONSUMERS, c.nats.url, table, JSON.stringify(job)], { stdio: ["pipe", "pipe", "inherit"] });
  c.children.add(p);
  const events: Event[] = [];
  const waiters = new Set<() => void>();
  let exited: string | null = null;
  let buf = "";
  p.stdout!.on("data", (b: Buffer) => {
    buf += b.toString();
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      events.push(JSON.parse(buf.slice(0, i)) as Event);
      buf = buf.slice(i + 1);
    }
    for (const w of waiters) w();
  });
  p.on("exit", (code, signal) => {
    c.children.delete(p);
    exited = `consumer process exited with ${code ?? signal}`;
    for (const w of waiters) w();
  });
  return {
    next: (event, timeoutMs) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const e = events.find((x) => x.event === event);
          if (e !== undefined) done(() => resolve(e));
          else if (exited !== null) done(() => reject(new Error(`${exited} before its "${event}"`)));
        };
        const timer = setTimeout(() => done(() => reject(new Error(`no "${event}" from the consumer process within ${Math.round(timeoutMs / 1000)} s`))), timeoutMs);
        const done = (then: () => void): void => {
          clearTimeout(timer);
          waiters.delete(check);
          then();
        };
        waiters.add(check);
        check();
      }),
    stop: () => void p.stdin!.end("stop\n"),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The reader's figures

interface PhaseFigures {
  reader: { cpu: number; peakMb: number };
  /** CPU seconds of the writer,committer nodes (together) and of nats-server: is the machine saturated? */
  writersCpu: number;
  natsCpu: number;
  seconds: number;
}

interface ClusterWatch {
  /** The reader's RSS samples (VmRSS, MB) with their time. */
  samples: Array<{ at: number; rssMb: number }>;
  stop(): PhaseFigures;
}

/**
 * Samples the reader's RSS every `everyMs` (VmHWM would carry earlier phases' peaks) and counts the CPU of the
 * reader, the writers and nats-server from now.
 */
function watchCluster(c: Cluster, everyMs: number): ClusterWatch {
  const pid = c.reader.pid!;
  const writers = c.nodes.filter((n) => n !== c.reader);
  const cpuOf = (): { reader: number; writers: number; nats: number } => ({
    reader: procStats(pid).cpu,
    writers: writers.reduce((t, n) => t + procStats(n.pid!).cpu, 0),
    nats: procStats(c.nats.pid).cpu,
  });
  const cpu0 = cpuOf();
  const t0 = Date.now();
  const samples: Array<{ at: number; rssMb: number }> = [];
  const read = (): void => {
    try {
      samples.push({ at: Date.now(), rssMb: procStats(pid).rssNowMb });
    } catch {
      /* exited: assertAlive reports it */
    }
  };
  read();
  const timer = setInterval(read, everyMs);
  return {
    samples,
    stop: () => {
      clearInterval(timer);
      read();
      const cpu = cpuOf();
      return {
        reader: { cpu: cpu.reader - cpu0.reader, peakMb: Math.max(...samples.map((s) => s.rssMb)) },
        writersCpu: cpu.writers - cpu0.writers,
        natsCpu: cpu.nats - cpu0.nats,
        seconds: (Date.now() - t0) / 1000,
      };
    },
  };
}

function figuresLine(f: PhaseFigures): string {
  const cores = (cpu: number): string => `${cpu.toFixed(1)} CPU s (${(cpu / f.seconds).toFixed(2)} cores)`;
  return `reader ${cores(f.reader.cpu)}, peak RSS ${f.reader.peakMb} MB; writers ${cores(f.writersCpu)}; nats-server ${cores(f.natsCpu)}; over ${f.seconds.toFixed(0)} s`;
}

/** The reader's delivery histogram and its stage histogram (by stage): cumulative bucket counts by upper bound. */
interface ReaderHistograms {
  delivery: Map<number, number>;
  stages: Map<string, Map<number, number>>;
}

/** The stages of the reader's part (natslake_consume_stage_ms), in the order a delivery passes them. */
const STAGES: ReadonlyArray<FeedStage | "notified"> = ["notified", "snapshot", "plan", "read"];

/** Reads `natslake_consume_delivery_ms` and `natslake_consume_stage_ms` (all tables) from the reader's /metrics. */
async function readerHistograms(c: Cluster): Promise<ReaderHistograms> {
  const out: ReaderHistograms = { delivery: new Map(), stages: new Map() };
  const add = (into: Map<number, number>, le: string, n: string): void => {
    const bound = le === "+Inf" ? Infinity : Number(le);
    into.set(bound, (into.get(bound) ?? 0) + Number(n));
  };
  try {
    const body = await (await fetch(`http://127.0.0.1:${c.readerMetricsPort}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
    for (const m of body.matchAll(/^natslake_consume_delivery_ms_bucket\{[^}]*le="([^"]+)"[^}]*\} (\S+)$/gm)) add(out.delivery, m[1]!, m[2]!);
    for (const m of body.matchAll(/^natslake_consume_stage_ms_bucket\{([^}]*)\} (\S+)$/gm)) {
      // Label names whole (`table="…"` ends in `le="` too).
      const stage = /(?:^|,)stage="([^"]+)"/.exec(m[1]!)?.[1];
      const le = /(?:^|,)le="([^"]+)"/.exec(m[1]!)?.[1];
      if (stage === undefined || le === undefined) continue;
      if (!out.stages.has(stage)) out.stages.set(stage, new Map());
      add(out.stages.get(stage)!, le, m[2]!);
    }
  } catch {
    /* no figures: the line says so */
  }
  return out;
}

/** The bucket bounds a histogram's p50 and p99 fall under over a phase (its growth between two reads), or null. */
function grownQuantiles(before: Map<number, number> | undefined, after: Map<number, number> | undefined): { p50: string; p99: string; total: number } | null {
  if (after === undefined) return null;
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const grown = bounds.map((le) => ({ le, n: (after.get(le) ?? 0) - (before?.get(le) ?? 0) }));
  const total = grown[grown.length - 1]?.n ?? 0;
  if (total <= 0) return null;
  const under = (p: number): string => {
    const le = grown.find((g) => g.n >= p * total)!.le;
    return le === Infinity ? "above the largest bucket" : `≤ ${le} ms`;
  };
  return { p50: under(0.5), p99: under(0.99), total };
}

/**
 * The reader's part of the latency over a phase (link → the session sent the snapshot's rows), and where it went by
 * stage (the shared reads' stages count once per snapshot, not per session).
 */
function readerLatencyLine(before: ReaderHistograms, after: ReaderHistograms): string {
  const q = grownQuantiles(before.delivery, after.delivery);
  if (q === null) return "reader: no delivery latency recorded";
  const stages = STAGES.flatMap((s) => {
    const sq = grownQuantiles(before.stages.get(s), after.stages.get(s));
    return sq === null ? [] : [`${s} p50 ${sq.p50} p99 ${sq.p99}`];
  });
  return `reader's part (link → rows sent, its histogram): p50 ${q.p50}, p99 ${q.p99} over ${fmt(q.total)} session deliveries${stages.length > 0 ? `; by stage: ${stages.join(", ")}` : ""}`;
}

function loadLine(l: LoadRun): string {
  const r = l.result;
  return `load generator: ${fmt(Number(r["rows"]))} rows (${fmt(Number(r["acked"]))} acknowledged) in ${Number(r["publishSeconds"]).toFixed(1)} s, publish→visible p50 ${ms(r["latencyP50"])}, p99 ${ms(r["latencyP99"])}, ${Number(r["cpuSeconds"]).toFixed(1)} CPU s`;
}

// ---------------------------------------------------------------------------------------------------------------
// Phases

interface LatencyFigure {
  consumers: number;
  p50: number | null;
  p99: number | null;
  samples: number;
  missing: number;
  /** When the phase's load generator started (epoch ms): its series' time 0. */
  startedAt: number;
  /** [link time (epoch ms), delivery latency ms] of every delivery, the warm-up's included. */
  timed: Array<[number, number]>;
  /** The reader's RSS over the phase. */
  readerRss: Array<{ at: number; rssMb: number }>;
}

/** p50, p99 and max of latencies (ms), as bench/consumer-load.ts computes them for one process. */
function latencySummary(latencies: number[]): { p50: number | null; p99: number | null; max: number | null } {
  const s = [...latencies].sort((a, b) => a - b);
  const at = (p: number): number | null => (s.length === 0 ? null : s[Math.min(s.length - 1, Math.floor(s.length * p))]!);
  return { p50: at(0.5), p99: at(0.99), max: s.length === 0 ? null : s[s.length - 1]! };
}

/** How many consumer processes carry `n` consumers: one each up to CONSUMER_PROCESSES, then shared evenly. */
function processSplit(n: number): number[] {
  const procs = Math.min(n, CONSUMER_PROCESSES);
  return Array.from({ length: procs }, (_, i) => Math.floor(n / procs) + (i < n % procs ? 1 : 0));
}

/** N consumers from latest on the live table while the load generator writes 50k rows/s for LATENCY_SECONDS. */
async function latencyPhase(c: Cluster, table: string, n: number): Promise<LatencyFigure> {
  const split = processSplit(n);
  say(`\nlatency, ${n} consumer(s) from latest in ${split.length} process(es), ${fmt(RATE)} rows/s for ${LATENCY_SECONDS} s after ${WARMUP_SECONDS} s of warm-up`);
  const runs = split.map((k) => startConsumers(c, table, { mode: "latency", consumers: k, warmupMs: WARMUP_SECONDS * 1000, drainMs: DRAIN_MS }));
  const ready = await Promise.all(runs.map((r) => r.next("ready", 120_000)));
  const watch = watchCluster(c, 500);
  const buckets = await readerHistograms(c);
  const seconds = LATENCY_SECONDS + WARMUP_SECONDS;
  const fromUs = monotonicUs();
  const startedAt = Date.now();
  const load = await runLoad(c.nats.url, table, RATE * LATENCY_SECONDS, RATE, RATE * WARMUP_SECONDS, { timeoutMs: seconds * 3000 + 120_000, signal: c.abort.signal });
  const toUs = monotonicUs();
  for (const run of runs) run.stop();
  const rs = await Promise.all(runs.map((run) => run.next("result", DRAIN_MS + 60_000)));
  const figures = watch.stop();
  assertAlive(c.nodes, c.dir, `during the latency phase with ${n} consumers`);
  const sum = (k: string): number => rs.reduce((t, r) => t + Number(r[k]), 0);
  const timed = rs.flatMap((r) => r["timed"] as Array<[number, number]>);
  const warmTimed = rs.flatMap((r) => r["warmupTimed"] as Array<[number, number]>);
  const all = timed.map(([, latency]) => latency);
  const r = latencySummary(all);
  const warm = latencySummary(warmTimed.map(([, latency]) => latency));
  const drainMs = Math.max(...rs.map((x) => Number(x["drainMs"])));
  const readersOf = (events: Event[]): string => [...new Set(events.flatMap((x) => x["readers"] as string[]))].join(", ");
  const cpus = rs.map((x) => Number(x["cpuSeconds"]));
  say(`  delivery latency (link → whole snapshot at the consumer): p50 ${ms(r.p50)}, p99 ${ms(r.p99)}, max ${ms(r.max)} over ${fmt(all.length)} deliveries; warm-up p50/p99 ${ms(warm.p50)}/${ms(warm.p99)}`);
  say(`  ${fmt(sum("rows"))} rows received in all; ${sum("missing")} snapshot deliveries missing ${drainMs >= DRAIN_MS ? `(still missing ${DRAIN_MS / 1000} s after the load ended)` : `(all in ${drainMs} ms after the load ended)`}; ${sum("unlinked")} without a link time; ${sum("sessions")} sessions on ${readersOf(rs)} (at open: ${readersOf(ready)})`);
  say(`  ${readerLatencyLine(buckets, await readerHistograms(c))} (warm-up included)`);
  say(`  ${figuresLine(figures)}; consumer processes ${cpus.reduce((a, b) => a + b, 0).toFixed(1)} CPU s in all (at most ${Math.max(...cpus).toFixed(1)} in one)`);
  say(`  ${loadLine(load)}`);
  if (PROFILING.flags.length > 0) say(`  profile window (CLOCK_MONOTONIC µs, for bench/cpuprofile-summary.mjs FILE FROM TO): ${fromUs} ${toUs}`);
  return { consumers: n, p50: r.p50, p99: r.p99, samples: all.length, missing: sum("missing"), startedAt, timed: [...warmTimed, ...timed], readerRss: watch.samples };
}

async function createServedTable(c: Cluster, name: string): Promise<Table> {
  const table = await c.catalog.createTable(parseIdentifier(name), {
    columns: parseColumnList(BENCH_COLUMNS),
    options: { ...CLUSTER_TABLE_DEFAULTS, bucket: String(BUCKETS), "bucket-key": "id" },
  });
  // Nodes find new tables by scanning the warehouse every 2 s.
  if (!(await waitForAssignment(c.nc, name, BUCKETS, WRITERS, 60_000))) throw new Error(`${name}: its ${BUCKETS} buckets were not assigned to ${WRITERS} writer nodes within 60 s`);
  assertAlive(c.nodes, c.dir, `while ${name} started`);
  return table;
}

/** Waits until the table holds `rows` rows and then commits nothing for `quietMs` (writer-side compaction is done). */
async function waitCommittedAndQuiet(table: Table, rows: number, quietMs: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const s = await table.snapshots.latest();
    const id = s === null ? -1 : Number(s.id);
    if (id !== last) [last, since] = [id, Date.now()];
    if (s !== null && Number(s.totalRecordCount) >= rows && Date.now() - since >= quietMs) return id;
    await sleep(100);
  }
  throw new Error(`${table.name}: not ${fmt(rows)} rows committed and quiet within ${Math.round(timeoutMs / 1000)} s`);
}

async function scan(table: Table, snapshotId: number): Promise<{ rows: number; seconds: number }> {
  const t0 = performance.now();
  let rows = 0;
  for await (const b of readBatches(table, { snapshotId })) rows += b.numRows;
  return { rows, seconds: (performance.now() - t0) / 1000 };
}

/** The backlog: published, committed, then one consumer from full against natslake's own full scan around it. */
async function catchUpPhase(c: Cluster, name = "bench.backlog"): Promise<{ consumerRate: number; scanRate: number }> {
  say(`\ncatch-up: a backlog of ${fmt(ROWS)} rows, then one consumer from full against natslake's full scan of the same snapshot`);
  const table = await createServedTable(c, name);
  const t0 = performance.now();
  await publishBenchRows(c.nc, name, ROWS);
  const published = (performance.now() - t0) / 1000;
  const snapshotId = await waitCommittedAndQuiet(table, ROWS, 3000, 300_000);
  say(`  published in ${published.toFixed(1)} s, committed and quiet (no snapshot for 3 s) at snapshot ${snapshotId} after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // Scans before and after the consumer: the machine's load drifts, so the consumer is framed by both.
  const before = await scan(table, snapshotId);
  const watch = watchCluster(c, 500);
  const run = startConsumers(c, name, { mode: "catchup", rows: ROWS, timeoutMs: 300_000 });
  await run.next("ready", 60_000);
  const r = await run.next("result", 330_000);
  const figures = watch.stop();
  const after = await scan(table, snapshotId);
  assertAlive(c.nodes, c.dir, "during the catch-up");
  if (r["timedOut"] === true || Number(r["rows"]) !== ROWS) throw new Error(`catch-up consumer received ${r["rows"]} rows, expected ${ROWS}${r["timedOut"] === true ? " (timed out)" : ""}`);
  if (before.rows !== ROWS || after.rows !== ROWS) throw new Error(`full scans read ${before.rows} and ${after.rows} rows, expected ${ROWS}`);
  const consumerRate = ROWS / Number(r["seconds"]);
  const scanRate = ROWS / Math.min(before.seconds, after.seconds);
  say(`  consumer from full: ${fmt(ROWS)} rows in ${Number(r["seconds"]).toFixed(2)} s = ${fmt(consumerRate)} rows/s (open ${Number(r["openMs"]).toFixed(0)} ms, first rows whole after ${Number(r["firstRowsMs"]).toFixed(0)} ms, ${r["snapshots"]} snapshot(s)); consumer process ${Number(r["cpuSeconds"]).toFixed(1)} CPU s`);
  say(`  natslake full scan (readBatches, this process): before ${before.seconds.toFixed(2)} s, after ${after.seconds.toFixed(2)} s; the faster = ${fmt(scanRate)} rows/s`);
  say(`  ${figuresLine(figures)}`);
  return { consumerRate, scanRate };
}

interface StallFigure {
  peakMb: number;
  atStartMb: number;
  seconds: number;
  fastP99: number | null;
  /** When the stall started (epoch ms): its series' time 0. */
  startAt: number;
  /** The reader's RSS over the whole phase, every second. */
  readerRss: Array<{ at: number; rssMb: number }>;
}

/** A consumer stalled for STALL_SECONDS while the load goes on; the reader's RSS every second. */
async function stallPhase(c: Cluster, table: string): Promise<StallFigure> {
  say(`\nstall: one consumer (window 8) takes a snapshot and pulls nothing for ${STALL_SECONDS} s at ${fmt(RATE)} rows/s; a fast consumer beside it`);
  const resumeMs = 60_000;
  const run = startConsumers(c, table, { mode: "stall", stallMs: STALL_SECONDS * 1000, resumeMs });
  await run.next("ready", 60_000);
  const watch = watchCluster(c, 1000);
  // Enough load to cover the stall and the stalled consumer's catch-up after it.
  const seconds = STALL_SECONDS + 20;
  const loadP = runLoad(c.nats.url, table, RATE * seconds, RATE, 0, { timeoutMs: seconds * 3000 + 120_000, signal: c.abort.signal });
  loadP.catch(() => undefined); // observed below; a failed phase kills it through the abort
  const start = await run.next("stall-start", 60_000);
  const buckets = await readerHistograms(c);
  const end = await run.next("stall-end", STALL_SECONDS * 1000 + 60_000);
  const bucketsAtEnd = await readerHistograms(c);
  const r = await run.next("result", resumeMs + 60_000);
  const load = await loadP;
  const figures = watch.stop();
  assertAlive(c.nodes, c.dir, "during the stall");
  const during = watch.samples.filter((s) => s.at >= Number(start["at"]) && s.at <= Number(end["at"]));
  const peakMb = Math.max(...during.map((s) => s.rssMb));
  const atStartMb = during[0]?.rssMb ?? NaN;
  const fast = r["fast"] as Record<string, unknown>;
  const stalled = r["stalled"] as Record<string, unknown>;
  say(`  reader RSS during the stall (${during.length} samples, 1 s apart): at its start ${atStartMb} MB, max ${peakMb} MB, at its end ${during[during.length - 1]?.rssMb ?? "n/a"} MB`);
  say(`  fast consumer during the stall: p50 ${ms(fast["p50"])}, p99 ${ms(fast["p99"])}, max ${ms(fast["max"])} over ${fast["samples"]} snapshots, ${fast["missing"]} missing, ${fast["sessions"]} session(s); ${readerLatencyLine(buckets, bucketsAtEnd)} (both sessions: the stalled one's late sends, once pulled again, may fall in)`);
  say(`  stalled consumer: held snapshot ${stalled["firstSnapshot"]}; pulled again, it ${stalled["reached"] === true ? "reached" : "did NOT reach"} snapshot ${stalled["resumeTarget"]} (the latest at the stall's end) in ${stalled["resumeMs"]} ms, ${stalled["resumeSnapshots"]} snapshots, ${stalled["skipped"]} skipped, ${stalled["sessions"]} session(s)`);
  say(`  the whole phase: ${figuresLine(figures)}`);
  say(`  ${loadLine(load)}`);
  return { peakMb, atStartMb, seconds: (Number(end["at"]) - Number(start["at"])) / 1000, fastP99: fast["p99"] as number | null, startAt: Number(start["at"]), readerRss: watch.samples };
}

// ---------------------------------------------------------------------------------------------------------------
// The cluster

/** How the nodes run: `natslake --version` says "dist" when dist/ matches the sources, else "sources" (tsx). */
function nodesRunFrom(): string {
  const r = spawnSync(process.execPath, [BIN, "--version"], { encoding: "utf8", timeout: 60_000 });
  return /\((\w+)\)/.exec(r.stdout ?? "")?.[1] ?? "unknown";
}

/**
 * Lowers the CPU priority of every thread of the writer nodes to nice `n` (Linux: a thread's nice value is its own,
 * and setpriority given a thread id changes that thread; threads a process starts later inherit their creator's).
 */
function reniceWriters(c: Cluster, n: number): void {
  for (const node of c.nodes) {
    if (node === c.reader) continue;
    const pid = node.pid!;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        setPriority(Number(tid), n);
      } catch {
        /* the thread ended meanwhile */
      }
    }
  }
}

/** Starts node n<i> (nodes[i - 1], replacing a previous one of that number), with `extra` flags. */
function spawnNode(p: Processes, i: number, roles: string, nats: ServerHandle, redis: ServerHandle, warehouse: string, extra: string[] = []): ChildProcess {
  const fd = openSync(join(p.dir, `n${i}.log`), "a");
  const args = [...PROFILING.flags, BIN, "node", "--roles", roles, "--nats", nats.url, "--redis", redis.url, "--warehouse", warehouse, "--node-id", `n${i}`, "--commit-interval", `${COMMIT_INTERVAL_MS}ms`, "--log-level", "warn", ...extra];
  const n = spawn(process.execPath, args, { stdio: ["ignore", fd, fd], env: nodeProcessEnv(process.env) });
  p.nodes[i - 1] = n;
  return n;
}

/**
 * Waits until a reader answers on the consume-open subject: a request that is not JSON is refused in the reply, so
 * it opens no session (a request nobody answers fails at once with "no responders" and is tried again).
 */
async function waitForReader(c: Cluster, timeoutMs: number): Promise<void> {
  const subject = new Subjects().consumeOpen;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    assertAlive(c.nodes, c.dir, "while starting");
    const answered = await c.nc.request(subject, new TextEncoder().encode("not a request"), { timeout: 1000 }).then(
      () => true,
      () => false,
    );
    if (answered) return;
    await sleep(200);
  }
  throw new Error(`no reader answered on ${subject} within ${Math.round(timeoutMs / 1000)} s`);
}

/**
 * A fresh reader process (SIGTERM: it drains its sessions; SIGKILL after 40 s): its RSS then shows what a stalled
 * consumer costs, not the high-water mark of earlier phases (V8 keeps heap it grew, and the 100-consumer and
 * full-scan phases grow it most).
 */
async function restartReader(c: Cluster): Promise<void> {
  const old = c.reader;
  const exited = new Promise((r) => (old.exitCode !== null || old.signalCode !== null ? r(null) : old.once("exit", r)));
  old.kill("SIGTERM");
  const killer = setTimeout(() => old.kill("SIGKILL"), 40_000);
  await exited;
  clearTimeout(killer);
  c.reader = spawnNode(c, WRITERS + 1, "reader", c.nats, c.redis, c.warehouse, ["--metrics-port", String(c.readerMetricsPort)]);
  await waitForReader(c, 60_000);
}

async function startCluster(natsBin: string): Promise<Cluster> {
  const p: Processes = { dir: mkdtempSync(join(tmpdir(), "natslake-consumer-bench-")), servers: [], nc: null, nodes: [], children: new Set(), abort: new AbortController() };
  try {
    const nats = await startNats({ bin: natsBin });
    p.servers.push(nats);
    const redis = await startRedis();
    p.servers.push(redis);
    p.nc = await connect({ servers: nats.url });
    const warehouse = join(p.dir, "wh");
    for (let i = 1; i <= WRITERS; i++) spawnNode(p, i, "writer,committer", nats, redis, warehouse);
    const readerMetricsPort = await freePort();
    const reader = spawnNode(p, WRITERS + 1, "reader", nats, redis, warehouse, ["--metrics-port", String(readerMetricsPort)]);
    const c: Cluster = { ...p, nats, redis, warehouse, nc: p.nc, catalog: new Catalog(warehouse), reader, readerMetricsPort };
    await waitForReader(c, 60_000);
    return c;
  } catch (e) {
    await stopCluster(p);
    throw e;
  }
}

/** Kills the load generator, the consumer processes and the nodes, stops the servers, removes the temp dir. */
async function stopCluster(c: Processes): Promise<void> {
  c.abort.abort();
  const all = [...c.children, ...c.nodes];
  for (const p of all) p.kill(c.nodes.includes(p) ? PROFILING.stopSignal : "SIGKILL");
  await Promise.all(all.map((p) => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(null) : p.once("exit", r)))));
  await c.nc?.close().catch(() => undefined);
  for (const s of c.servers) await s.stop();
  rmSync(c.dir, { recursive: true, force: true });
}

function targetLines(lat: LatencyFigure[], equal: LatencyFigure | null, catchUp: { consumerRate: number; scanRate: number }, stall: StallFigure): { lines: string[] } & FigureSet {
  const ten = lat.find((l) => l.consumers === TARGETS.p99Consumers);
  const p99 = ten?.p99 ?? null;
  const ratio = catchUp.consumerRate / catchUp.scanRate;
  const short = STALL_SECONDS < TARGETS.stallSeconds ? ` (shorter than the target's ${TARGETS.stallSeconds} s)` : "";
  const r3 = (x: number): number => Math.round(x * 1000) / 1000;
  const figures: Figures = {};
  for (const l of lat) Object.assign(figures, { [`latency_${l.consumers}_p50_ms`]: l.p50, [`latency_${l.consumers}_p99_ms`]: l.p99, [`latency_${l.consumers}_deliveries`]: l.samples, [`latency_${l.consumers}_missing`]: l.missing });
  if (equal !== null) Object.assign(figures, { latency_10_equal_priority_p50_ms: equal.p50, latency_10_equal_priority_p99_ms: equal.p99, latency_10_equal_priority_missing: equal.missing });
  Object.assign(figures, {
    catch_up_rows_per_sec: Math.round(catchUp.consumerRate),
    scan_rows_per_sec: Math.round(catchUp.scanRate),
    catch_up_vs_scan_ratio: r3(ratio),
    stall_measured_s: r3(stall.seconds),
    stall_reader_rss_start_mb: Number.isFinite(stall.atStartMb) ? stall.atStartMb : null,
    stall_reader_rss_max_mb: stall.peakMb,
    stall_fast_p99_ms: stall.fastP99,
  });
  // As printed: the p99 target also wants every delivery there.
  const p99Target = targetAtMost(`latency_${TARGETS.p99Consumers}_p99_ms`, p99, TARGETS.p99Ms);
  const targets = [
    { ...p99Target, target: `${p99Target.target}, none missing`, met: p99 !== null && p99 <= TARGETS.p99Ms && ten!.missing === 0 },
    targetAtLeast("catch_up_vs_scan_ratio", r3(ratio), TARGETS.catchUpVsScan),
    targetAtMost("stall_reader_rss_max_mb", stall.peakMb, TARGETS.stalledRssMb),
  ];
  const lines = [
    "targets",
    `  ${mark(p99 !== null && p99 <= TARGETS.p99Ms && ten!.missing === 0)} delivery p99 ≤ ${TARGETS.p99Ms} ms with ${TARGETS.p99Consumers} consumers: ${ms(p99)}${ten !== undefined && ten.missing > 0 ? `, ${ten.missing} deliveries missing` : ""} (1: ${ms(lat[0]?.p99)}, 100: ${ms(lat[2]?.p99)}; no target)${WRITERS_NICE > 0 ? `, the writer nodes at nice ${WRITERS_NICE}${equal !== null ? `; at the same priority as every other process: ${ms(equal.p99)} (no target: both cores saturated)` : ""}` : ""}`,
    `  ${mark(ratio >= TARGETS.catchUpVsScan)} catch-up ≥ ${TARGETS.catchUpVsScan}× natslake's full scan: ${fmt(catchUp.consumerRate)} / ${fmt(catchUp.scanRate)} rows/s = ${ratio.toFixed(2)}×`,
    `  ${mark(stall.peakMb <= TARGETS.stalledRssMb)} reader RSS ≤ ${TARGETS.stalledRssMb} MB with a consumer stalled for ${stall.seconds.toFixed(0)} s${short}: max ${stall.peakMb} MB (${stall.atStartMb} MB at the stall's start); the fast consumer's p99 meanwhile ${ms(stall.fastP99)}`,
  ];
  return { lines, figures, targets };
}

/** Recorded delivery percentiles are per window of this many ms of link time. */
const LATENCY_WINDOW_MS = 1_000;

/** The latency phases' deliveries and the reader's RSS as time series. */
function consumerSeries(lat: LatencyFigure[], equal: LatencyFigure | null, stall: StallFigure): Record<string, Series> {
  const phases = [
    ...(equal === null ? [] : [{ ...equal, label: `${equal.consumers} consumers, equal priority` }]),
    ...lat.map((l) => ({ ...l, label: `${l.consumers} consumer${l.consumers === 1 ? "" : "s"}` })),
  ];
  const x = "time since the phase's load started (s)";
  const rss = (samples: Array<{ at: number; rssMb: number }>, t0: number): Array<[number, number]> => samples.map((s) => [secondsSince(t0, s.at), s.rssMb]);
  const percentile = (p: number): SeriesLine[] => phases.map((ph) => ({ name: ph.label, points: windowQuantile(ph.timed, ph.startedAt, LATENCY_WINDOW_MS, p) }));
  const title = (p: string): string => `Delivery latency ${p} per ${LATENCY_WINDOW_MS / 1000} s of link time (link → whole snapshot at the consumer; the first ${WARMUP_SECONDS} s are the warm-up)`;
  return {
    delivery_p50: { title: title("p50"), x, y: "latency (ms)", lines: percentile(0.5) },
    delivery_p99: { title: title("p99"), x, y: "latency (ms)", lines: percentile(0.99), limits: [{ name: `target with ${TARGETS.p99Consumers} consumers ≤ ${TARGETS.p99Ms} ms`, y: TARGETS.p99Ms }] },
    reader_rss_latency: { title: "Reader RSS during the latency phases (read every 500 ms)", x, y: "RSS (MB)", lines: phases.map((ph) => ({ name: ph.label, points: rss(ph.readerRss, ph.startedAt) })) },
    stall_reader_rss: {
      title: `Reader RSS while one consumer stalls for ${STALL_SECONDS} s at ${fmt(RATE)} rows/s (read every second)`,
      x: "time since the stall started (s)",
      y: "RSS (MB)",
      lines: [{ name: "reader", points: rss(stall.readerRss, stall.startAt) }],
      limits: [{ name: `target ≤ ${TARGETS.stalledRssMb} MB`, y: TARGETS.stalledRssMb }],
    },
  };
}

async function main(): Promise<void> {
  const started = Date.now();
  const nats = chooseNatsServer();
  const nodesFrom = nodesRunFrom();
  say(`consumer${QUICK ? " (--quick)" : ""}: ${WRITERS} writer,committer nodes + 1 reader node (from ${nodesFrom}), ${BUCKETS} buckets, ${COMMIT_INTERVAL_MS} ms commits, ${fmt(RATE)} rows/s, backlog ${fmt(ROWS)} rows, stall ${STALL_SECONDS} s, loopback nats-server + redis-server${WRITERS_NICE > 0 ? `; writer nodes reniced to ${WRITERS_NICE} after a first 10-consumer phase (--writers-nice)` : ""}`);
  say(`  nats-server ${nats.version ?? "(version unknown)"} (${nats.bin}, ${nats.source}${nats.old ? "; older than 2.10" : ""}); load average at start ${loads()}`);
  const c = await startCluster(nats.bin);
  try {
    if (CATCH_UP_ONLY > 0) {
      const ratios: number[] = [];
      for (let i = 0; i < CATCH_UP_ONLY; i++) {
        const r = await catchUpPhase(c, `bench.backlog${i}`);
        ratios.push(r.consumerRate / r.scanRate);
      }
      say(`\ncatch-up ratios (--catch-up-only: not recorded): ${ratios.map((r) => r.toFixed(2)).join(" ")}`);
      return;
    }
    const live = "bench.live";
    await createServedTable(c, live);
    const lat: LatencyFigure[] = [];
    let equal: LatencyFigure | null = null;
    if (WRITERS_NICE > 0) {
      if (CONSUMER_COUNTS.includes(TARGETS.p99Consumers)) {
        say(`\n(writers at the same priority as every other process)`);
        equal = await latencyPhase(c, live, TARGETS.p99Consumers);
      }
      reniceWriters(c, WRITERS_NICE);
      say(`\n(every thread of the writer nodes at nice ${WRITERS_NICE} from here)`);
    }
    for (const n of CONSUMER_COUNTS) lat.push(await latencyPhase(c, live, n));
    if (LATENCY_ONLY) {
      const ten = lat.find((l) => l.consumers === TARGETS.p99Consumers);
      if (ten !== undefined) say(`\n${mark(ten.p99 !== null && ten.p99 <= TARGETS.p99Ms && ten.missing === 0)} delivery p99 ≤ ${TARGETS.p99Ms} ms with ${TARGETS.p99Consumers} consumers: ${ms(ten.p99)}${equal !== null ? ` (${ms(equal.p99)} with the writers at the same priority)` : ""} (--latency-only: not recorded)`);
      return;
    }
    const catchUp = await catchUpPhase(c);
    const before = procStats(c.reader.pid!).rssNowMb;
    await restartReader(c);
    say(`\nreader restarted before the stall (RSS ${before} MB after the earlier phases; ${procStats(c.reader.pid!).rssNowMb} MB fresh)`);
    const stall = await stallPhase(c, live);
    say("");
    const judged = targetLines(lat, equal, catchUp, stall);
    for (const l of judged.lines) say(l);
    say(`whole run ${((Date.now() - started) / 1000).toFixed(0)} s; load average at the end ${loads()}`);
    const figures: Figures = {
      quick: QUICK,
      backlog_rows: ROWS,
      stall_asked_s: STALL_SECONDS,
      latency_phase_s: LATENCY_SECONDS,
      offered_rows_per_sec: RATE,
      consumer_processes_max: CONSUMER_PROCESSES,
      writers_nice: WRITERS_NICE,
      nodes_from: nodesFrom,
      ...judged.figures,
      run_s: Math.round((Date.now() - started) / 1000),
      load_average_1m_end: Math.round(loadavg()[0]! * 100) / 100,
    };
    recordFigures("consumer", figures, judged.targets, { natsServer: nats.version, series: consumerSeries(lat, equal, stall) });
  } finally {
    await stopCluster(c);
  }
}

await main();
