/**
 * The cluster on a local warehouse and on an S3 warehouse (SeaweedFS on loopback, cluster/local/seaweedfs.ts), in the
 * same run and the same way (part of bench/cluster.bench.ts, section `s3`): N node processes with every role, a
 * 6-bucket table, 250 ms commits, the load generator in its own process.
 *
 * Per warehouse: end-to-end rows/s (rows as fast as the producer goes, first publish → all visible), then
 * publish → visible p50/p99 at a fixed offered rate after a 2 s warm-up. On S3, from the nodes' own
 * `natslake_s3_requests_total{type, area}` (summed over the nodes): requests per commit in the latency phase (commits
 * = snapshots landed, the writers' COMPACT snapshots included), the listings by area while the load ran (the commit
 * path must list nothing: no LIST of snapshot/, manifest/ or data directories), and LISTs per second per node idle
 * and under load. The figures are printed with the targets (S3 throughput ≥ 0.8× local; S3 p99 ≤ commit interval +
 * 200 ms; no LIST on the commit path) and the CPU of the nodes, nats-server and SeaweedFS.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { nodeProcessEnv } from "../cluster/local/node-env.ts";
import { mkdtempSync, openSync, closeSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import { chooseNatsServer, freePort, startNats, startRedis } from "../cluster/local/servers.ts";
import { seaweedVersion, startSeaweed, type SeaweedHandle } from "../cluster/local/seaweedfs.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { parseColumnList } from "../src/format/data-types.ts";
import { S3_AREAS, type S3Area } from "../src/io/s3-requests.ts";
import { requestsSince, scrapeMetrics, scrapeS3Requests, type NodeS3Requests } from "../test/helpers/node-metrics.ts";
import { assertAlive, procStats, publishBenchRows, runLoad, waitForAssignment } from "./cluster-harness.ts";
import { BENCH_COLUMNS } from "./shape.ts";
import { targetAtLeast, targetAtMost, type FigureSet } from "./figures.ts";

const BIN = fileURLToPath(new URL("../bin/natslake.mjs", import.meta.url));
const TABLE = "bench.events";
const COMMIT_INTERVAL_MS = 250;
/** Areas a listing of the commit path would touch (the table scan lists `catalog`, the leader's consumer checks `consumer`). */
const COMMIT_PATH_AREAS: readonly S3Area[] = ["snapshot", "manifest", "data", "schema", "tag", "committables"];

export interface CompareOptions {
  /** Rows of the throughput phase. */
  rows: number;
  /** Offered rows/s and rows of the latency phase (after 2 s of the same load as a warm-up). */
  latencyRate: number;
  latencyRows: number;
  nodes: number;
}

interface Phase {
  rowsPerSec: number;
  p50: number | null;
  p99: number | null;
  warmupP99: number | null;
}

interface WarehouseRun {
  kind: "local" | "s3";
  throughput: Phase;
  latency: Phase;
  /** The mean commit round of the latency phase (all nodes' natslake_commit_duration_ms), null without rounds. */
  commitRoundMs: number | null;
  /** S3 only. */
  requests?: {
    perCommit: Record<"PUT" | "GET" | "HEAD" | "LIST" | "DELETE", number>;
    /** Per commit, by area, for the request types a commit's work and the periodic readers share. */
    perCommitByArea: Record<"PUT" | "GET" | "HEAD", Partial<Record<S3Area, number>>>;
    commits: number;
    /** LISTs by area over both load phases, summed over the nodes. */
    listsUnderLoad: Partial<Record<S3Area, number>>;
    listPerSecIdle: number[];
    listPerSecLoad: number[];
    /** Leaderships gained while the load ran: a new leader's first maintenance round lists the whole table. */
    leaderChanges: number;
  };
  cpu: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const n0 = (x: number): string => Math.round(x).toLocaleString("en-US");

function sum(rs: NodeS3Requests[]): NodeS3Requests {
  const out = rs[0]!;
  return rs.slice(1).reduce((acc, r) => {
    for (const a of S3_AREAS) for (const t of Object.keys(r.byArea[a]) as Array<keyof typeof r.total>) acc.byArea[a][t] += r.byArea[a][t];
    for (const t of Object.keys(r.total) as Array<keyof typeof r.total>) acc.total[t] += r.total[t];
    return acc;
  }, structuredClone(out));
}

function byAreaPer(r: NodeS3Requests, type: "PUT" | "GET" | "HEAD", commits: number): Partial<Record<S3Area, number>> {
  return Object.fromEntries(S3_AREAS.filter((a) => r.byArea[a][type] > 0).map((a) => [a, Math.round((r.byArea[a][type] / commits) * 10) / 10]));
}

/** `natslake_leader_changes_total` summed over the nodes. */
async function leaderChanges(ports: number[]): Promise<number> {
  let n = 0;
  for (const p of ports) for (const m of (await scrapeMetrics(p)).matchAll(/^natslake_leader_changes_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

/** A histogram's `_sum` and `_count` summed over the nodes (its mean between two scrapes is Δsum / Δcount). */
async function histogramTotals(ports: number[], name: string): Promise<{ sum: number; count: number }> {
  const out = { sum: 0, count: 0 };
  for (const p of ports) {
    const text = await scrapeMetrics(p);
    for (const m of text.matchAll(new RegExp(`^${name}_sum(?:\\{[^}]*\\})? ([0-9.e+-]+)`, "gm"))) out.sum += Number(m[1]);
    for (const m of text.matchAll(new RegExp(`^${name}_count(?:\\{[^}]*\\})? ([0-9.e+-]+)`, "gm"))) out.count += Number(m[1]);
  }
  return out;
}

async function runOn(kind: "local" | "s3", o: CompareOptions): Promise<WarehouseRun> {
  const dir = mkdtempSync(join(tmpdir(), `natslake-whbench-${kind}-`));
  const nats = await startNats({ bin: chooseNatsServer().bin });
  const redis = await startRedis();
  let s3: SeaweedHandle | null = null;
  const nodes: ChildProcess[] = [];
  const saved = { ...process.env };
  try {
    let warehouse = join(dir, "wh");
    if (kind === "s3") {
      s3 = await startSeaweed({ dir: join(dir, "seaweedfs") });
      await s3.createBucket("bench");
      // Credentials in the environment (this process's catalog and the nodes), never in the URI.
      Object.assign(process.env, s3.env);
      warehouse = `s3://bench/wh?endpoint=${encodeURIComponent(s3.endpoint)}`;
    }
    const catalog = new Catalog(warehouse);
    await catalog.createTable(parseIdentifier(TABLE), { columns: parseColumnList(BENCH_COLUMNS), options: { bucket: "6", "bucket-key": "id" } });
    const ports: number[] = [];
    for (let i = 1; i <= o.nodes; i++) {
      const port = await freePort();
      ports.push(port);
      const fd = openSync(join(dir, `n${i}.log`), "a");
      try {
        nodes.push(
          spawn(process.execPath, [BIN, "node", "--nats", nats.url, "--redis", redis.url, "--warehouse", warehouse, "--node-id", `n${i}`, "--commit-interval", `${COMMIT_INTERVAL_MS}ms`, "--metrics-port", String(port), "--log-level", "warn"], {
            stdio: ["ignore", fd, fd],
            env: nodeProcessEnv(process.env),
          }),
        );
      } finally {
        closeSync(fd);
      }
    }
    const nc = await connect({ servers: nats.url });
    if (!(await waitForAssignment(nc, TABLE, 6, o.nodes, 120_000))) throw new Error(`${kind}: the buckets were not assigned within 120 s`);
    assertAlive(nodes, dir, "while starting");
    // A first commit: until a table has one, its latest snapshot is found by listing snapshot/ (there is no LATEST
    // hint yet), and the figures are about a table in use.
    const table = await catalog.getTable(parseIdentifier(TABLE));
    await publishBenchRows(nc, TABLE, 6000);
    const first = Date.now() + 120_000;
    while (Number((await table.snapshots.latest())?.totalRecordCount ?? 0) < 6000) {
      if (Date.now() > first) throw new Error(`${kind}: the first 6000 rows were not committed within 120 s`);
      await sleep(250);
    }
    // A new leader runs each maintenance task once at once (orphan cleanup lists the whole table); the table
    // statistics, last of that round, show it is over.
    const deadline = Date.now() + 60_000;
    while (!(await Promise.all(ports.map((p) => scrapeMetrics(p).catch(() => "")))).some((m) => /natslake_table_snapshots\{[^}]*table="bench\.events"/.test(m))) {
      if (Date.now() > deadline) throw new Error(`${kind}: the leader's first maintenance round did not end within 60 s`);
      await sleep(250);
    }
    const scrapeAll = async (): Promise<NodeS3Requests[]> => Promise.all(ports.map((p) => scrapeS3Requests(p)));
    let idle: { a: NodeS3Requests[]; b: NodeS3Requests[]; secs: number } | null = null;
    if (s3 !== null) {
      const a = await scrapeAll();
      const t0 = Date.now();
      await sleep(6000);
      idle = { a, b: await scrapeAll(), secs: (Date.now() - t0) / 1000 };
    }
    const cpu0 = { nodes: nodes.map((n) => procStats(n.pid!).cpu), nats: procStats(nats.pid).cpu, weed: s3 ? procStats(s3.pid).cpu : 0 };

    const loadStart = s3 ? await scrapeAll() : null;
    const leadersBefore = await leaderChanges(ports);
    const tLoad0 = Date.now();
    const thr = await runLoad(nats.url, TABLE, o.rows, 0, 0, { timeoutMs: 600_000 });
    assertAlive(nodes, dir, "during the throughput phase");
    const latStartReq = s3 ? await scrapeAll() : null;
    const latStartId = (await table.snapshots.latestId()) ?? 0;
    const commitRounds0 = await histogramTotals(ports, "natslake_commit_duration_ms");
    const lat = await runLoad(nats.url, TABLE, o.latencyRows, o.latencyRate, o.latencyRate * 2, { timeoutMs: 600_000 });
    assertAlive(nodes, dir, "during the latency phase");
    const latEndReq = s3 ? await scrapeAll() : null;
    const latEndId = (await table.snapshots.latestId()) ?? 0;
    const commitRounds1 = await histogramTotals(ports, "natslake_commit_duration_ms");
    const commitRoundMs = commitRounds1.count > commitRounds0.count ? (commitRounds1.sum - commitRounds0.sum) / (commitRounds1.count - commitRounds0.count) : null;
    const loadSecs = (Date.now() - tLoad0) / 1000;
    const leadersDuring = (await leaderChanges(ports)) - leadersBefore;
    const cpu = `nodes ${nodes.map((n, i) => `${(procStats(n.pid!).cpu - cpu0.nodes[i]!).toFixed(1)}`).join(" + ")} CPU s, peak RSS ${nodes.map((n) => procStats(n.pid!).rssMb).join("/")} MB; nats-server ${(procStats(nats.pid).cpu - cpu0.nats).toFixed(1)} CPU s${s3 ? `; SeaweedFS ${(procStats(s3.pid).cpu - cpu0.weed).toFixed(1)} CPU s` : ""}`;
    await nc.close();

    const phase = (r: Record<string, number | null>, rows: number): Phase => ({ rowsPerSec: rows / Number(r["visibleSeconds"]), p50: r["latencyP50"] ?? null, p99: r["latencyP99"] ?? null, warmupP99: r["warmupP99"] ?? null });
    const out: WarehouseRun = { kind, throughput: phase(thr.result, o.rows), latency: phase(lat.result, o.latencyRows), cpu, commitRoundMs };
    if (s3 !== null && idle !== null && loadStart && latStartReq && latEndReq) {
      const commits = Math.max(1, latEndId - latStartId);
      const steady = sum(latEndReq.map((r, i) => requestsSince(latStartReq[i]!, r)));
      const under = sum(latEndReq.map((r, i) => requestsSince(loadStart[i]!, r)));
      out.requests = {
        commits,
        perCommit: { PUT: steady.total.PUT / commits, GET: steady.total.GET / commits, HEAD: steady.total.HEAD / commits, LIST: steady.total.LIST / commits, DELETE: steady.total.DELETE / commits },
        perCommitByArea: {
          PUT: byAreaPer(steady, "PUT", commits),
          GET: byAreaPer(steady, "GET", commits),
          HEAD: byAreaPer(steady, "HEAD", commits),
        },
        listsUnderLoad: Object.fromEntries(S3_AREAS.filter((a) => under.byArea[a].LIST > 0).map((a) => [a, under.byArea[a].LIST])),
        listPerSecIdle: idle.b.map((r, i) => requestsSince(idle.a[i]!, r).total.LIST / idle.secs),
        listPerSecLoad: latEndReq.map((r, i) => requestsSince(loadStart[i]!, r).total.LIST / loadSecs),
        leaderChanges: leadersDuring,
      };
    }
    return out;
  } finally {
    for (const n of nodes) n.kill("SIGKILL");
    await Promise.all(nodes.map((n) => new Promise((r) => (n.exitCode !== null || n.signalCode !== null ? r(null) : n.once("exit", r)))));
    await nats.stop();
    await redis.stop();
    await s3?.stop();
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs both warehouses; returns the report's lines and the figures (`local_…`, `s3_…`) and targets behind them. */
export async function compareWarehouses(o: CompareOptions): Promise<{ lines: string[] } & FigureSet> {
  const local = await runOn("local", o);
  const s3 = await runOn("s3", o);
  const lines = [`warehouses, ${o.nodes} nodes (every role), 6 buckets, commit interval ${COMMIT_INTERVAL_MS} ms; local directory vs S3 (SeaweedFS ${seaweedVersion()} on loopback)`];
  for (const r of [local, s3]) {
    const name = r.kind === "local" ? "local" : "S3   ";
    const ratio = r.kind === "s3" ? ` = ${(r.throughput.rowsPerSec / local.throughput.rowsPerSec).toFixed(2)}× local` : "";
    lines.push(
      `  ${name}: end-to-end ${n0(r.throughput.rowsPerSec)} rows/s (${n0(o.rows)} rows)${ratio}; ${n0(o.latencyRate)} rows/s offered: publish→visible p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms (warm-up p99 ${r.latency.warmupP99} ms)`,
    );
    lines.push(`    ${r.cpu}; the leader's commit round (natslake_commit_duration_ms) in the latency phase: mean ${r.commitRoundMs === null ? "–" : r.commitRoundMs.toFixed(0)} ms`);
  }
  const q = s3.requests!;
  const f = (x: number): string => x.toFixed(1);
  lines.push(`  S3 requests per commit (latency phase, ${q.commits} snapshots, all nodes): PUT ${f(q.perCommit.PUT)}, GET ${f(q.perCommit.GET)}, HEAD ${f(q.perCommit.HEAD)}, LIST ${f(q.perCommit.LIST)}, DELETE ${f(q.perCommit.DELETE)}`);
  lines.push(`    by area: PUT ${JSON.stringify(q.perCommitByArea.PUT)}; GET ${JSON.stringify(q.perCommitByArea.GET)}; HEAD ${JSON.stringify(q.perCommitByArea.HEAD)}`);
  lines.push(`  S3 LISTs while the load ran, by area: ${JSON.stringify(q.listsUnderLoad)}; LIST/s per node idle ${q.listPerSecIdle.map(f).join("/")}, under load ${q.listPerSecLoad.map(f).join("/")} (catalog: table scans; consumer: the leader's consumer checks)`);
  const commitPathLists = COMMIT_PATH_AREAS.reduce((n, a) => n + (q.listsUnderLoad[a] ?? 0), 0);
  const ratio = s3.throughput.rowsPerSec / local.throughput.rowsPerSec;
  const mark = (ok: boolean): string => (ok ? "✔" : "✘");
  // A leadership that moved during the load (a lease lost on a saturated machine) starts the new leader's maintenance
  // round, whose orphan cleanup lists the whole table: the listings then do not tell about the commit path.
  const listVerdict =
    q.leaderChanges > 0
      ? `not judged: the leadership moved ${q.leaderChanges} time(s) during the load (${commitPathLists} listings of the table's directories, a new leader's orphan cleanup among them)`
      : `${mark(commitPathLists === 0)} (${commitPathLists} listings of snapshot/, manifest/, data, schema/, tag/ or committables/)`;
  const r3 = (x: number): number => Math.round(x * 1000) / 1000;
  const figures: FigureSet["figures"] = { warehouse_offered_rows_per_sec: o.latencyRate, warehouse_latency_rows: o.latencyRows };
  for (const r of [local, s3]) {
    Object.assign(figures, {
      [`${r.kind}_rows_per_sec`]: Math.round(r.throughput.rowsPerSec),
      [`${r.kind}_p50_ms`]: r.latency.p50,
      [`${r.kind}_p99_ms`]: r.latency.p99,
      [`${r.kind}_warmup_p99_ms`]: r.latency.warmupP99,
      [`${r.kind}_commit_round_ms`]: r.commitRoundMs === null ? null : Math.round(r.commitRoundMs),
    });
  }
  Object.assign(figures, {
    s3_vs_local_ratio: r3(ratio),
    s3_commits: q.commits,
    s3_put_per_commit: r3(q.perCommit.PUT),
    s3_get_per_commit: r3(q.perCommit.GET),
    s3_head_per_commit: r3(q.perCommit.HEAD),
    s3_list_per_commit: r3(q.perCommit.LIST),
    s3_delete_per_commit: r3(q.perCommit.DELETE),
    s3_commit_path_lists: commitPathLists,
    s3_leader_changes: q.leaderChanges,
    s3_list_per_sec_idle_max: r3(Math.max(...q.listPerSecIdle)),
    s3_list_per_sec_load_max: r3(Math.max(...q.listPerSecLoad)),
  });
  const targets = [
    targetAtLeast("s3_vs_local_ratio", r3(ratio), 0.8),
    targetAtMost("s3_p99_ms", s3.latency.p99, COMMIT_INTERVAL_MS + 200),
    // Not judged when the leadership moved (see listVerdict).
    { name: "s3_commit_path_lists", measured: commitPathLists, target: "= 0", met: q.leaderChanges > 0 ? null : commitPathLists === 0 },
  ];
  lines.push(
    `  targets: S3 throughput ≥ 0.8× local ${mark(ratio >= 0.8)} (${ratio.toFixed(2)}×); S3 p99 ≤ ${COMMIT_INTERVAL_MS + 200} ms ${mark(s3.latency.p99 !== null && s3.latency.p99 <= COMMIT_INTERVAL_MS + 200)} (${s3.latency.p99} ms); no LIST on the commit path ${listVerdict}`,
  );
  return { lines, figures, targets };
}
