/**
 * Cluster benchmark (part of `npm run bench`; a benchmark, not a test): real nats-server and redis-server on
 * loopback, N node processes, and a load generator in its own process (bench/cluster-load.ts).
 *
 * 1. End-to-end rows/s (first publish → all rows committed) with 1, 2 and 3 writer processes, and in the same run
 *    the raw JetStream consume + decode rate of the same messages (an ordered consumer decoding every row batch into
 *    Arrow columns in this process), with the ratio. The nodes' CPU per million rows against the ingest floor
 *    (issue 28): that raw consume's CPU plus pyarrow's `write_table` of the same rows under the table's Parquet
 *    settings (bench/py/pyarrow_write_floor.py), both taken in the same run. `steady`: the same for 1 writer on a
 *    write-only table, 3× the rows after a warm-up of 10× (`steady_…` figures; see `Steady` and STEADY_WARMUP_ROWS).
 * 2. Publish → visible latency p50/p99 at 50k rows/s with a 100 ms commit interval, and in the same run the
 *    notification latency a snapshot subscriber in its own process sees (snapshot link → receipt; target p99 ≤ 50 ms).
 * 3. The same cluster on a local and on an S3 warehouse (SeaweedFS) at a 250 ms commit interval: rows/s, p50/p99,
 *    and S3 requests per commit from the nodes' metrics (bench/warehouse-compare.ts).
 * RSS (peak) and CPU seconds of every process are printed; the load generator's CPU apart. The latency run's
 * percentiles per second and the catch-up's rows committed and node RSS over time go to the results file as time
 * series, drawn on docs/benchmarks.md.
 *
 *   node --import tsx bench/cluster.bench.ts [rows=1000000] [--node-cpu-prof DIR] [--steady-warmup-rows N]
 *   CLUSTER_BENCH_ONLY=1,2,3,steady,catch-up,latency,s3 (a subset)
 * `--node-cpu-prof DIR`: every node runs under the V8 profiler and writes its .cpuprofile into DIR when the scenario
 * ends (bench/cpuprofile-summary.mjs summarises one); profiled CPU figures run high.
 * Its figures go to the benchmark results file too (bench/figures.ts, section `cluster`: the parts that ran).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, openSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import { chooseNatsServer, startNats, startRedis } from "../cluster/local/servers.ts";
import { nodeProcessEnv } from "../cluster/local/node-env.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { decodeSized, packPayloads } from "../actors/ingest/decode.ts";
import { Subjects } from "../cluster/nats/subjects.ts";
import { BENCH_COLUMNS } from "./shape.ts";
import { assertAlive, nodeProfiling, procStats, publishBenchRows, runLoad, waitForAssignment } from "./cluster-harness.ts";
import { compareWarehouses } from "./warehouse-compare.ts";
import { recordFigures, targetAtLeast, targetAtMost, type FigureSet, type Series } from "./figures.ts";
import { percentileLines, secondsSince } from "./series.ts";
import { runPython } from "../test/helpers/python.ts";

const ARGS = parseArgs({ allowPositionals: true, strict: true, options: { "node-cpu-prof": { type: "string" }, "steady-warmup-rows": { type: "string" } } });
const ROWS = Number(ARGS.positionals[0] ?? 1_000_000);
/**
 * The `steady` part: the node ingests STEADY_WARMUP_ROWS (default 10× rows) before its CPU is counted over
 * STEADY_ROWS (3× rows). V8 optimizes a function once it has run enough, and the code that runs once per flush or
 * commit (4 times a second) gets there only after tens of seconds, at 20–90 ms of compilation each: after a warm-up of
 * 1M rows (~2 s) the node was still compiling its flush and commit paths while it was measured (1.96 CPU-s per
 * million rows, against 1.49 after 8M and 1.35 after 20M, one run each at load 10–14).
 */
const STEADY_WARMUP_ROWS = Number(ARGS.values["steady-warmup-rows"] ?? 10 * ROWS);
const STEADY_ROWS = 3 * ROWS;
if (!Number.isSafeInteger(STEADY_WARMUP_ROWS) || STEADY_WARMUP_ROWS < 0) throw new Error(`--steady-warmup-rows must be a whole number of rows, got ${ARGS.values["steady-warmup-rows"]}`);
const PROFILING = nodeProfiling(ARGS.values["node-cpu-prof"]);
/** The nats-server every scenario runs: the current one scripts/setup.sh built, unless NATSLAKE_NATS_SERVER says (chooseNatsServer). */
const NATS = chooseNatsServer();
const PYARROW_FLOOR_PY = fileURLToPath(new URL("./py/pyarrow_write_floor.py", import.meta.url));
const BIN = fileURLToPath(new URL("../bin/natslake.mjs", import.meta.url));
const COLUMNS = BENCH_COLUMNS;
const TARGETS = { rowsPerSec: 250_000, rawRatio: 0.35, latencyOverIntervalMs: 100, notificationP99Ms: 50, rssMb: 300, nodeCpuVsFloor: 1.5 };
const r3 = (x: number): number => Math.round(x * 1000) / 1000;
/** The latency run's recorded percentiles are per window of this many ms of publishing. */
const LATENCY_WINDOW_MS = 1_000;

/**
 * The steady-state variant of scenario 1 (`steady_…` figures): the table is `write-only` (no writer-side compaction,
 * no snapshot expiration: maintenance has its own budget in issue 28, "maintenance on ≤ 1.3× off") and the node has
 * ingested `warmupRows` rows before its CPU is counted — so the figure is a node's cost per row, not its first
 * seconds' JIT compilation of the whole ingest path (measured: a fifth of the node's CPU in a cold 1M-row run).
 */
interface Steady {
  warmupRows: number;
}

/**
 * One cluster run: its report lines and its figures, named `writers_<N>_…` (as fast as the producer goes),
 * `steady_…` (the same with `steady`) or `latency_…` (at `rate` rows/s).
 */
async function scenario(writers: number, rows: number, rate: number, commitIntervalMs: number, steady?: Steady): Promise<{ lines: string[] } & FigureSet> {
  const commitInterval = `${commitIntervalMs}ms`;
  const p = steady !== undefined ? "steady" : rate === 0 ? `writers_${writers}` : "latency";
  const figures: FigureSet["figures"] = {};
  const targets: FigureSet["targets"] = [];
  const series: Record<string, Series> = {};
  const dir = mkdtempSync(join(tmpdir(), "natslake-cbench-"));
  const nats = await startNats({ bin: NATS.bin });
  const redis = await startRedis();
  const nodes: ChildProcess[] = [];
  const lines: string[] = [];
  try {
    const warehouse = join(dir, "wh");
    const catalog = new Catalog(warehouse);
    await catalog.createTable(parseIdentifier("bench.events"), { columns: parseColumnList(COLUMNS), options: { bucket: "6", "bucket-key": "id", ...(steady !== undefined ? { "write-only": "true" } : {}) } });
    for (let i = 1; i <= writers; i++) {
      const fd = openSync(join(dir, `n${i}.log`), "a");
      nodes.push(spawn(process.execPath, [...PROFILING.flags, BIN, "node", "--nats", nats.url, "--redis", redis.url, "--warehouse", warehouse, "--node-id", `n${i}`, "--commit-interval", commitInterval, "--log-level", "warn"], { stdio: ["ignore", fd, fd], env: nodeProcessEnv(process.env) }));
    }
    // Wait until every bucket has an active writer and the writers are spread.
    const nc = await connect({ servers: nats.url });
    await waitForAssignment(nc, "bench.events", 6, writers, 60_000);
    assertAlive(nodes, dir, "while starting");
    if (steady !== undefined) await runLoad(nats.url, "bench.events", steady.warmupRows, 0, 0);
    // CPU is counted from here: node start-up (loading and compiling the TypeScript) is not part of the work.
    const before = nodes.map((n) => procStats(n.pid!).cpu);
    const natsBefore = procStats(nats.pid).cpu;
    // A subscriber in its own process (as a consumer service runs) during the latency run: link → receipt.
    const subscriber = rate > 0 ? spawnSubscriber(nats.url, Math.ceil((rows / rate) * 1000) + 30_000) : null;
    // The latency run starts after 2 s of the same load (reported apart): steady state, not the cluster's first seconds.
    const loadFromUs = process.hrtime.bigint() / 1000n;
    const load = await runLoad(nats.url, "bench.events", rows, rate, rate > 0 ? rate * 2 : 0);
    // The run's window on the monotonic clock: for `bench/cpuprofile-summary.mjs FILE FROM TO` with profiles, and for
    // `perf record -k mono` samples of a node (perf's --time takes the same instants in seconds).
    lines.push(`  ${PROFILING.flags.length > 0 ? "profiled; " : ""}the load ran over monotonic µs ${loadFromUs} ${process.hrtime.bigint() / 1000n}`);
    assertAlive(nodes, dir, "during the run");
    const nodeStats = nodes.map((n, i) => {
      const s = procStats(n.pid!);
      return { cpu: s.cpu - before[i]!, rssMb: s.rssMb };
    });
    const natsStats = { cpu: procStats(nats.pid).cpu - natsBefore };
    const r = load.result;
    const e2e = rows / Number(r["visibleSeconds"]);
    if (rate === 0) {
      const raw = await rawConsume(nc, rows);
      Object.assign(figures, {
        [`${p}_rows_per_sec`]: Math.round(e2e),
        [`${p}_publish_s`]: r3(Number(r["publishSeconds"])),
        [`${p}_visible_s`]: r3(Number(r["visibleSeconds"])),
        [`${p}_raw_rows_per_sec`]: Math.round(raw.rowsPerSec),
        [`${p}_raw_ratio`]: r3(e2e / raw.rowsPerSec),
      });
      if (steady === undefined) targets.push(targetAtLeast(`${p}_rows_per_sec`, Math.round(e2e), TARGETS.rowsPerSec), targetAtLeast(`${p}_raw_ratio`, r3(e2e / raw.rowsPerSec), TARGETS.rawRatio));
      lines.push(
        `  ${steady !== undefined ? `steady state (write-only table, after ${steady.warmupRows.toLocaleString("en-US")} rows), ` : ""}${writers} writer process(es): end-to-end ${Math.round(e2e).toLocaleString("en-US")} rows/s (publish ${Number(r["publishSeconds"]).toFixed(2)} s, visible ${Number(r["visibleSeconds"]).toFixed(2)} s); ` +
          `raw consume+decode ${Math.round(raw.rowsPerSec).toLocaleString("en-US")} rows/s; ratio ${(e2e / raw.rowsPerSec).toFixed(2)}×`,
      );
      if (writers === 1) {
        const floor = await ingestFloor(raw, rows);
        const perMillion = (cpu: number): number => r3((cpu * 1_000_000) / rows);
        const nodeCpu = nodeStats.reduce((t, s) => t + s.cpu, 0);
        const ratio = r3(nodeCpu / (floor.rawCpuSeconds + floor.pyarrowCpuSeconds));
        // Scenario 1's names are the issue's; the steady variant's carry its prefix.
        const named = (name: string): string => (steady === undefined ? name : `${p}_${name}`);
        Object.assign(figures, {
          [`${p}_node_cpu_s_per_million_rows`]: perMillion(nodeCpu),
          [`${p}_raw_cpu_s`]: r3(floor.rawCpuSeconds),
          [`${p}_pyarrow_write_cpu_s`]: r3(floor.pyarrowCpuSeconds),
          [named("ingest_floor_cpu_s_per_million_rows")]: perMillion(floor.rawCpuSeconds + floor.pyarrowCpuSeconds),
          [named("node_cpu_vs_floor_ratio")]: ratio,
          [`${p}_load_average_1m`]: Math.round(loadavg()[0]! * 100) / 100,
        });
        targets.push(targetAtMost(named("node_cpu_vs_floor_ratio"), ratio, TARGETS.nodeCpuVsFloor));
        lines.push(
          `    node CPU ${perMillion(nodeCpu).toFixed(2)} s per million rows; floor ${perMillion(floor.rawCpuSeconds + floor.pyarrowCpuSeconds).toFixed(2)} s ` +
            `(raw consume+decode ${floor.rawCpuSeconds.toFixed(2)} CPU s + pyarrow write_table ${floor.pyarrowCpuSeconds.toFixed(2)} CPU s); ratio ${ratio.toFixed(2)}× ` +
            `(target ≤ ${TARGETS.nodeCpuVsFloor}×; load average ${loadavg().map((x) => x.toFixed(2)).join(" ")})`,
        );
      }
    } else {
      lines.push(`  ${rate.toLocaleString("en-US")} rows/s offered, commit interval ${commitInterval}: publish→visible p50 ${r["latencyP50"]} ms, p99 ${r["latencyP99"]} ms (${r["samples"]} batches; after a 2 s warm-up whose p50/p99 were ${r["warmupP50"]}/${r["warmupP99"]} ms)`);
      const num = (v: number | null | undefined): number | null => (typeof v === "number" ? v : null);
      Object.assign(figures, {
        [`${p}_rows`]: rows,
        [`${p}_offered_rows_per_sec`]: rate,
        [`${p}_commit_interval_ms`]: commitIntervalMs,
        [`${p}_p50_ms`]: num(r["latencyP50"]),
        [`${p}_p99_ms`]: num(r["latencyP99"]),
        [`${p}_batches`]: num(r["samples"]),
        [`${p}_warmup_p50_ms`]: num(r["warmupP50"]),
        [`${p}_warmup_p99_ms`]: num(r["warmupP99"]),
      });
      targets.push(targetAtMost(`${p}_p99_ms`, num(r["latencyP99"]), commitIntervalMs + TARGETS.latencyOverIntervalMs));
      if (subscriber !== null) {
        const n = await subscriber.summary();
        lines.push(`  snapshot notifications to a subscriber process: ${n.line}`);
        Object.assign(figures, { notification_p50_ms: n.p50, notification_p99_ms: n.p99, notification_snapshots: n.count, notification_in_order: n.inOrder });
        targets.push(targetAtMost("notification_p99_ms", n.p99, TARGETS.notificationP99Ms));
      }
      // Time 0: the first batch of the measured run (the warm-up's batches are not in the timeline).
      const t0 = Math.min(...load.timeline.map(([at]) => at));
      series.latency = {
        title: `Publish → visible latency per ${LATENCY_WINDOW_MS / 1000} s of publishing: ${rate.toLocaleString("en-US")} rows/s, ${commitInterval} commits, ${writers} writer processes`,
        x: "time since the measured load started (s)",
        y: "latency (ms)",
        lines: percentileLines(load.timeline, t0, LATENCY_WINDOW_MS),
        limits: [{ name: `target p99 ≤ ${commitIntervalMs + TARGETS.latencyOverIntervalMs} ms`, y: commitIntervalMs + TARGETS.latencyOverIntervalMs }],
      };
    }
    const rssMax = Math.max(...nodeStats.map((s) => s.rssMb));
    Object.assign(figures, {
      [`${p}_node_cpu_s`]: r3(nodeStats.reduce((t, s) => t + s.cpu, 0)),
      [`${p}_node_rss_max_mb`]: rssMax,
      [`${p}_load_generator_cpu_s`]: r3(Number(r["cpuSeconds"])),
      [`${p}_load_generator_rss_mb`]: load.rssMb,
      [`${p}_nats_cpu_s`]: r3(natsStats.cpu),
    });
    targets.push(targetAtMost(`${p}_node_rss_max_mb`, rssMax, TARGETS.rssMb));
    lines.push(`    nodes: ${nodeStats.map((s, i) => `n${i + 1} ${s.cpu.toFixed(1)} CPU s, RSS ${s.rssMb} MB`).join("; ")}; load generator ${Number(r["cpuSeconds"]).toFixed(1)} CPU s, RSS ${load.rssMb} MB; nats-server ${natsStats.cpu.toFixed(1)} CPU s`);
    await nc.close();
  } finally {
    for (const n of nodes) n.kill(PROFILING.stopSignal);
    await Promise.all(nodes.map((n) => new Promise((r) => (n.exitCode !== null ? r(null) : n.once("exit", r)))));
    await nats.stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return { lines, figures, targets, series };
}

interface NotificationSummary {
  line: string;
  p50: number | null;
  p99: number | null;
  /** Notifications timed (the first, the KV's last value, left out). */
  count: number;
  inOrder: boolean;
}

/**
 * test/helpers/subscriber-child.ts in its own process for `ms`: one line per notification with its receipt time.
 * `summary()` stops it and gives the link → receipt latency p50/p99 (the first notification, the KV's last value, is
 * left out) and whether ids came in order without gaps.
 */
function spawnSubscriber(url: string, ms: number): { summary: () => Promise<NotificationSummary> } {
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("../test/helpers/subscriber-child.ts", import.meta.url)), url, "bench.events", String(ms)], { stdio: ["ignore", "pipe", "inherit"] });
  let text = "";
  child.stdout!.on("data", (b: Buffer) => (text += b.toString()));
  return {
    async summary() {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once("exit", r)));
      const got = text.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as { n: { snapshotId: number; linkedAtMillis: number }; at: number });
      const lat = got.slice(1).map((g) => g.at - g.n.linkedAtMillis).sort((a, b) => a - b);
      const inOrder = got.every((g, i) => i === 0 || g.n.snapshotId === got[i - 1]!.n.snapshotId + 1);
      if (lat.length === 0) return { line: "none received", p50: null, p99: null, count: 0, inOrder };
      const q = (p: number): number => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))]!;
      const line = `p50 ${q(0.5)} ms, p99 ${q(0.99)} ms over ${lat.length} snapshots, ${inOrder ? "every id in order" : "GAPS OR REORDERING"} (target p99 ≤ ${TARGETS.notificationP99Ms} ms)`;
      return { line, p50: q(0.5), p99: q(0.99), count: lat.length, inOrder };
    },
  };
}

/** The raw consume + decode of the benchmark's rows: its rate and this process's CPU seconds over it. */
interface RawConsume {
  rowsPerSec: number;
  cpuSeconds: number;
}

/**
 * The same messages consumed raw: republish `rows` rows as the producer did (500-row batches) to a scratch stream,
 * then time an ordered consumer decoding them into Arrow column builders (wall and CPU).
 */
async function rawConsume(nc: Awaited<ReturnType<typeof connect>>, rows: number): Promise<RawConsume> {
  const { jetstreamManager } = await import("@nats-io/jetstream");
  const catalog = new Catalog(mkdtempSync(join(tmpdir(), "natslake-raw-")));
  const table = await catalog.createTable(parseIdentifier("bench.raw"), { columns: parseColumnList(COLUMNS), options: { bucket: "6", "bucket-key": "id" } });
  const { ensureTableInfra } = await import("../cluster/nats/table-infra.ts");
  const subjects = new Subjects();
  await ensureTableInfra({ nc, subjects, table });
  await publishBenchRows(nc, "bench.raw", rows);
  const js = jetstream(nc);
  const consumer = await js.consumers.get(subjects.ingestStream(table.identifier), { deliver_policy: DeliverPolicy.All });
  const fields = table.schema.fields;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let n = 0;
  // The writers' own decoding (actors/ingest/decode.ts), here on this thread, in jobs of 64 messages as they fetch.
  let job: Array<{ seq: number; data: Uint8Array }> = [];
  let left = (await (await jetstreamManager(nc)).streams.info(subjects.ingestStream(table.identifier))).state.messages;
  const msgs = await consumer.consume({ max_messages: 256 });
  for await (const m of msgs) {
    job.push({ seq: m.seq, data: m.data });
    left--;
    if (job.length === 64 || left === 0) {
      n += decodeSized(fields, packPayloads(job)).rows;
      job = [];
    }
    if (left === 0) break;
  }
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await msgs.close();
  await (await jetstreamManager(nc)).streams.delete(subjects.ingestStream(table.identifier));
  return { rowsPerSec: n / secs, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

/**
 * The ingest floor of issue 28, its two parts taken in the same run: the raw consume + decode's CPU (`raw`, this
 * process) and pyarrow's `write_table` CPU for the same rows under the table's Parquet settings (the median of its
 * runs, bench/py/pyarrow_write_floor.py).
 */
async function ingestFloor(raw: RawConsume, rows: number): Promise<{ rawCpuSeconds: number; pyarrowCpuSeconds: number }> {
  const dir = mkdtempSync(join(tmpdir(), "natslake-floor-"));
  try {
    const out = JSON.parse((await runPython(PYARROW_FLOOR_PY, [dir, String(rows)], { timeoutMs: 300_000 })).trim().split("\n").pop()!) as { pyarrow_write_cpu_s: number };
    return { rawCpuSeconds: raw.cpuSeconds, pyarrowCpuSeconds: out.pyarrow_write_cpu_s };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Catch-up: the rows are in the stream before any node runs (published by this process), then one writer node
 * starts. Rate = rows / (the last snapshot's time − the first "bucket opened"), so node start-up is left out. This
 * is the writer's whole pipeline (consume, decode, Parquet, commit) against the raw consume + decode of the same
 * messages, with no load generator competing for the two cores.
 */
async function catchUp(rows: number): Promise<{ lines: string[] } & FigureSet> {
  const dir = mkdtempSync(join(tmpdir(), "natslake-cbench-"));
  const nats = await startNats({ bin: NATS.bin });
  const redis = await startRedis();
  let node: ChildProcess | null = null;
  try {
    const warehouse = join(dir, "wh");
    const table = await new Catalog(warehouse).createTable(parseIdentifier("bench.events"), { columns: parseColumnList(COLUMNS), options: { bucket: "6", "bucket-key": "id" } });
    const nc = await connect({ servers: nats.url });
    const { ensureTableInfra } = await import("../cluster/nats/table-infra.ts");
    await ensureTableInfra({ nc, subjects: new Subjects(), table });
    await publishBenchRows(nc, "bench.events", rows);
    const logFile = join(dir, "n1.log");
    const fd = openSync(logFile, "a");
    node = spawn(process.execPath, [BIN, "node", "--nats", nats.url, "--redis", redis.url, "--warehouse", warehouse, "--node-id", "n1", "--commit-interval", "250ms", "--log-level", "info"], { stdio: ["ignore", fd, fd], env: nodeProcessEnv(process.env) });
    const deadline = Date.now() + 120_000;
    let rss = 0;
    let last = await table.snapshots.latest();
    // Every 100 ms: the node's RSS now and the rows committed.
    const samples: Array<{ at: number; rssMb: number; rows: number }> = [];
    while ((last === null || Number(last.totalRecordCount) < rows) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      const stats = procStats(node.pid!);
      rss = Math.max(rss, stats.rssMb);
      last = await table.snapshots.latest();
      samples.push({ at: Date.now(), rssMb: stats.rssNowMb, rows: Number(last?.totalRecordCount ?? 0) });
    }
    if (last === null || Number(last.totalRecordCount) < rows) throw new Error("catch-up did not finish within 120 s");
    const cpu = procStats(node.pid!).cpu;
    const opened = readFileSync(logFile, "utf8")
      .split("\n")
      .filter((l) => l.includes('"msg":"bucket opened"'))
      .map((l) => (JSON.parse(l) as { time: number }).time);
    const secs = (Number(last.timeMillis) - Math.min(...opened)) / 1000;
    const raw = (await rawConsume(nc, rows)).rowsPerSec;
    await nc.close();
    const figures = {
      catch_up_rows_per_sec: Math.round(rows / secs),
      catch_up_s: r3(secs),
      catch_up_snapshots: Number(last.id),
      catch_up_raw_rows_per_sec: Math.round(raw),
      catch_up_raw_ratio: r3(rows / secs / raw),
      catch_up_node_cpu_s: r3(cpu),
      catch_up_node_rss_mb: rss,
    };
    const lines = [
      `  catch-up, 1 writer process: ${Math.round(rows / secs).toLocaleString("en-US")} rows/s (${secs.toFixed(2)} s from the first bucket opened to the last snapshot, ${Number(last.id)} snapshots); raw consume+decode ${Math.round(raw).toLocaleString("en-US")} rows/s; ratio ${(rows / secs / raw).toFixed(2)}×`,
      `    node: ${cpu.toFixed(1)} CPU s including start-up, RSS ${rss} MB`,
    ];
    // Time 0 as for the rate: the first bucket opened; the node's start-up before it is left out but for a second.
    const t0 = Math.min(...opened);
    const shown = samples.filter((p) => p.at >= t0 - 1000);
    const x = "time since the node opened its first bucket (s)";
    const series: Record<string, Series> = {
      catch_up_rows: { title: `Catch-up: rows committed from a backlog of ${rows.toLocaleString("en-US")} (one writer node, 250 ms commits)`, x, y: "rows committed", lines: [{ name: "rows", points: shown.map((p) => [secondsSince(t0, p.at), p.rows]) }] },
      catch_up_rss: { title: "Catch-up: the writer node's RSS (read every 100 ms)", x, y: "RSS (MB)", lines: [{ name: "n1", points: shown.map((p) => [secondsSince(t0, p.at), p.rssMb]) }] },
    };
    return { lines, figures, targets: [], series };
  } finally {
    node?.kill("SIGKILL");
    if (node !== null && node.exitCode === null) await new Promise((r) => node!.once("exit", r));
    await nats.stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const recorded: FigureSet = { figures: { rows: ROWS }, targets: [] };
const keep = (part: { lines: string[] } & FigureSet): string[] => {
  Object.assign(recorded.figures, part.figures);
  recorded.targets.push(...part.targets);
  recorded.series = { ...recorded.series, ...part.series };
  return part.lines;
};
const out: string[] = [`cluster, ${ROWS.toLocaleString("en-US")} rows of the 6-column shape, 6 buckets, commit interval 250 ms, loopback nats-server ${NATS.version ?? "(version unknown)"} (${NATS.source}) + redis-server, 2 cores shared by everything`];
// CLUSTER_BENCH_ONLY=1,3,steady,catch-up,latency,s3 runs only those scenarios (for quick comparisons); default: all.
const only = process.env["CLUSTER_BENCH_ONLY"]?.split(",");
for (const writers of [1, 2, 3]) if (!only || only.includes(String(writers))) out.push(...keep(await scenario(writers, ROWS, 0, 250)));
if (!only || only.includes("steady")) out.push(...keep(await scenario(1, STEADY_ROWS, 0, 250, { warmupRows: STEADY_WARMUP_ROWS })));
if (!only || only.includes("catch-up")) out.push(...keep(await catchUp(ROWS)));
if (!only || only.includes("latency")) {
  out.push("latency");
  out.push(...keep(await scenario(3, 500_000, 50_000, 100)));
}
out.push(
  `targets: ≥ ${TARGETS.rowsPerSec / 1000}k rows/s end-to-end and ≥ ${TARGETS.rawRatio}× the raw rate; p99 ≤ commit interval + ${TARGETS.latencyOverIntervalMs} ms; notification p99 ≤ ${TARGETS.notificationP99Ms} ms; RSS ≤ ${TARGETS.rssMb} MB per node; node CPU per row ≤ ${TARGETS.nodeCpuVsFloor}× the ingest floor (1 writer; and in the steady state)`,
);
if (!only || only.includes("s3")) {
  const load0 = loadavg().map((x) => x.toFixed(2)).join(" ");
  const load1m0 = loadavg()[0]!;
  out.push(...keep(await compareWarehouses({ rows: ROWS, latencyRate: 50_000, latencyRows: Math.min(500_000, Math.max(100_000, Math.floor(ROWS / 2))), nodes: 2 })));
  out.push(`  load average at the start of the warehouse runs ${load0}, at the end ${loadavg().map((x) => x.toFixed(2)).join(" ")} (a shared machine: figures under load are indicative)`);
  Object.assign(recorded.figures, { s3_load_average_1m_start: Math.round(load1m0 * 100) / 100, s3_load_average_1m_end: Math.round(loadavg()[0]! * 100) / 100 });
}
process.stdout.write(out.join("\n") + "\n");
recordFigures("cluster", recorded.figures, recorded.targets, { natsServer: NATS.version, series: recorded.series ?? {}, commandEnv: ["CLUSTER_BENCH_ONLY"] });
