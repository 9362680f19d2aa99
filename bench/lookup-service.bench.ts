/**
 * Lookups over NATS (issue 30; part of `npm run bench`; a benchmark, not a test: it prints figures and whether each
 * meets its target). Real nats-server and redis-server on loopback, a writer-and-committer node and ONE reader node,
 * 250 ms commits, a table of the bench shape under primary key `id` with 4 buckets and `--keys` keys (default
 * 1,000,000), first loaded by the load generator (bench/cluster-load.ts, its own process) as fast as it goes, then
 * kept under `--rate` upserts/s (default 20,000) while this process looks keys up through the lookup client
 * (`natslake/lookup`; nine keys in ten written, one in ten never):
 *   cold    the reader's first lookups of the table: single keys, each decoding the files of its bucket it needs;
 *   warm    after a pass that decodes every file: single keys one at a time (lookups/s, p50/p99 per call, and how late
 *           the reader's event loop ran meanwhile, from its natslake_event_loop_delay_ms), batches
 *           of 100 one at a time (p50/p99), and batches of 100 from `--callers` concurrent callers (keys/s, and keys
 *           per CPU-second of the reader: its cores' worth) — and the same once the writes stopped (the reader's own
 *           cost, no new files to decode);
 *   visible an upsert of a new key, then a lookup of it with the producer's token (read-your-writes): publish → the
 *           first lookup that answers it, p50/p99.
 * Targets (issue 30): warm single-key p99 ≤ 5 ms; ≥ 50,000 keys/s per reader CPU-second in batches; publish → visible
 * to lookups p99 ≤ commit interval + 200 ms. Each measured loop stops after its count or `--seconds` (default 8).
 *
 *   node --import tsx bench/lookup-service.bench.ts [--keys N] [--rate N] [--seconds S] [--callers N] [--node-cpu-prof DIR]
 * `--node-cpu-prof DIR`: the reader node runs under the V8 profiler (bench/cluster-harness.ts) and is stopped with SIGTERM at the
 * end, so that its profile lands in DIR (bench/cpuprofile-summary.mjs summarises it).
 * Figures go to the benchmark results file (bench/figures.ts, section `pk_lookup_service`).
 */
import { parseArgs } from "node:util";
import { loadavg } from "node:os";
import { parseColumnList } from "../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { createProducer } from "../cluster/producer.ts";
import { createLookupClient, type LookupClient } from "../cluster/lookup-client.ts";
import { startCluster, waitFor, type TestCluster } from "../test/helpers/cluster.ts";
import { chooseNatsServer, freePort } from "../cluster/local/servers.ts";
import { seeded } from "../test/helpers/pk-lookup.ts";
import { nodeProfiling, procStats, runLoad, waitForAssignment } from "./cluster-harness.ts";
import { timedCalls, type TimedCalls } from "./timed-calls.ts";
import { recordFigures, targetAtLeast, targetAtMost } from "./figures.ts";
import { BENCH_COLUMNS, benchInputRow, benchKeysProblem } from "./shape.ts";

const TABLE = "bench.lookupsvc";
const BUCKETS = 4;
const COMMIT_INTERVAL_MS = 250;
const BATCH = 100;
const TARGETS = { warmSingleP99Ms: 5, keysPerReaderCpuSecond: 50_000, visibleP99Ms: COMMIT_INTERVAL_MS + 200 };

const { values: flags } = parseArgs({ options: { keys: { type: "string", default: "1000000" }, rate: { type: "string", default: "20000" }, seconds: { type: "string", default: "8" }, callers: { type: "string", default: "4" }, "node-cpu-prof": { type: "string" } } });
const KEYS = Number(flags.keys);
const RATE = Number(flags.rate);
const SECONDS = Number(flags.seconds);
const CALLERS = Number(flags.callers);
const problem = benchKeysProblem(KEYS);
if (problem !== null || KEYS < 1000) throw new Error(`--keys: ${problem ?? "at least 1000"}`);
if (!(Number.isInteger(RATE) && RATE >= 1 && RATE <= 200_000)) throw new Error(`--rate must be an integer in 1..200000, got ${flags.rate}`);
if (!(SECONDS > 0 && SECONDS <= 600)) throw new Error(`--seconds must be in (0, 600], got ${flags.seconds}`);
if (!(Number.isInteger(CALLERS) && CALLERS >= 1 && CALLERS <= 64)) throw new Error(`--callers must be an integer in 1..64, got ${flags.callers}`);

const say = (line: string): void => void process.stdout.write(line + "\n");
const fmt = (n: number): string => Math.round(n).toLocaleString("en-US");
const percentile = (xs: number[], p: number): number | null => (xs.length === 0 ? null : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!);
const ms = (v: number | null, digits = 2): string => (v === null ? "n/a" : `${v.toFixed(digits)} ms`);

const random = seeded(2026_12_07);
/** Nine keys in ten written (0..KEYS-1), one in ten beyond them. */
const askedKey = (): { id: number } => ({ id: random() < 0.9 ? Math.floor(random() * KEYS) : KEYS + Math.floor(random() * KEYS) });
const batch = (): Array<{ id: number }> => Array.from({ length: BATCH }, askedKey);

/** Runs `call` up to `count` times or SECONDS seconds, one at a time (bench/timed-calls.ts). */
const measure = (count: number, call: () => Promise<unknown>): Promise<TimedCalls> => timedCalls(count, SECONDS, call);

/** `callers` loops of batches at once for SECONDS (at most 200,000 batches in all): keys/s and the reader's CPU seconds. */
async function concurrentBatches(client: LookupClient, readerPid: number): Promise<{ keysPerSec: number; readerCpu: number; seconds: number }> {
  const cpu0 = procStats(readerPid).cpu;
  const start = performance.now();
  const deadline = start + SECONDS * 1000;
  let batches = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (performance.now() < deadline && batches < 200_000) {
        await client.get(TABLE, batch());
        batches++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  return { keysPerSec: (batches * BATCH) / seconds, readerCpu: procStats(readerPid).cpu - cpu0, seconds };
}

/**
 * Publish → the first lookup that answers the new key (read-your-writes), once every 250 ms for SECONDS (≤ 200); beside
 * it, publish → the snapshot notification that covers the key (the producer's waitVisible): the cluster's part, so
 * what the reader adds is their difference.
 */
async function publishToVisible(c: TestCluster, client: LookupClient): Promise<{ lookup: number[]; notified: number[] }> {
  const producer = await createProducer({ nc: c.nc, table: TABLE, lingerMs: 0 });
  const out: number[] = [];
  const notified: number[] = [];
  const deadline = performance.now() + SECONDS * 1000;
  try {
    for (let i = 0; i < 200 && performance.now() < deadline; i++) {
      const id = 2 * KEYS + i;
      const t0 = performance.now();
      await producer.upsert([{ ...benchInputRow(i), id }]);
      const token = producer.token();
      const [r] = await Promise.all([client.get(TABLE, [{ id }], { readYourWrites: token, waitMs: 10_000 }).then((x) => (out.push(performance.now() - t0), x)), producer.waitVisible(token, 10_000).then(() => notified.push(performance.now() - t0))]);
      if (r.rows[0] === null) throw new Error(`key ${id} was not seen by a read-your-writes lookup (snapshot ${r.snapshotId})`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await producer.close();
  }
  return { lookup: out, notified };
}

/** The reader's `natslake_event_loop_delay_ms` by quantile since the previous scrape (a scrape starts a new window). */
async function eventLoopDelay(port: number): Promise<Record<string, number>> {
  const body = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const out: Record<string, number> = {};
  for (const m of body.matchAll(/^natslake_event_loop_delay_ms\{[^}]*quantile="([^"]+)"[^}]*\} ([\d.e+-]+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

const nats = chooseNatsServer();
const c = await startCluster({ nodes: 0, commitInterval: `${COMMIT_INTERVAL_MS}ms`, natsBin: nats.bin });
let client: LookupClient | undefined;
try {
  say(`lookups over NATS: ${fmt(KEYS)} keys, ${BUCKETS} buckets, ${COMMIT_INTERVAL_MS} ms commits, one reader node, ${fmt(RATE)} upserts/s during the lookups; load average at start ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  c.startNode("w", ["--roles", "writer,committer"]);
  const profileDir = flags["node-cpu-prof"];
  // The reader's metrics say how late its event loop ran during the single-key lookups (what their tail is made of).
  const readerMetricsPort = await freePort();
  const reader = c.startNode("r", ["--roles", "reader", "--metrics-port", String(readerMetricsPort)], {}, nodeProfiling(profileDir).flags);
  await waitFor("the reader started", () => (c.logs("r").includes('"msg":"node started"') ? true : undefined), 60_000, 100);
  await new Catalog(c.warehouse).createTable(parseIdentifier(TABLE), { columns: parseColumnList(BENCH_COLUMNS), primaryKeys: ["id"], options: { bucket: String(BUCKETS) } });
  if (!(await waitForAssignment(c.nc, TABLE, BUCKETS, 1, 120_000))) throw new Error(`the ${BUCKETS} buckets were not assigned within 120 s`);

  const loadStart = performance.now();
  const load = await runLoad(c.nats.url, TABLE, KEYS, 0, 0, { timeoutMs: 300_000 }, { keys: KEYS, firstRow: 0 });
  say(`load: ${fmt(KEYS)} keys upserted and visible in ${((performance.now() - loadStart) / 1000).toFixed(1)} s (${fmt(KEYS / Number(load.result["visibleSeconds"]))} upserts/s)`);

  // Upserts at RATE while the lookups run (rows for longer than their phases can take); stopped once they are done.
  const stopLoad = new AbortController();
  const underLoad = runLoad(c.nats.url, TABLE, Math.round(RATE * (SECONDS * 6 + 60)), RATE, 0, { timeoutMs: (SECONDS * 6 + 120) * 1000, signal: stopLoad.signal }, { keys: KEYS, firstRow: KEYS });
  const loadGone = underLoad.catch((e: unknown) => e);
  // Its own connection, as an application's client opens it (cluster/lookup-client.ts), not the cluster helper's.
  client = await createLookupClient({ servers: c.nats.url, defaults: { timeoutMs: 10_000 } });
  await new Promise((r) => setTimeout(r, 1000));

  const cold = await measure(50, () => client!.get(TABLE, [askedKey()]));
  const firstPass = performance.now();
  for (let k = 0; k < 20; k++) await client.get(TABLE, Array.from({ length: 500 }, (_, j) => ({ id: Math.floor(((k * 500 + j) * KEYS) / 10_000) })));
  const firstPassSeconds = (performance.now() - firstPass) / 1000;
  // A scrape starts the reader's event-loop delay window afresh: the next one covers the single-key lookups.
  await eventLoopDelay(readerMetricsPort);
  const warmSingle = await measure(50_000, () => client!.get(TABLE, [askedKey()]));
  const singleLoopDelay = await eventLoopDelay(readerMetricsPort);
  const warmBatch = await measure(10_000, () => client!.get(TABLE, batch()));
  const parallel = await concurrentBatches(client, reader.proc.pid!);
  const visible = await publishToVisible(c, client);
  // Still publishing, as it should be: had it ended early (an error), the lookups ran without their load.
  const early = await Promise.race([loadGone, new Promise<null>((r) => setTimeout(() => r(null), 0))]);
  if (early !== null) say(`note: the upserts ended before the lookups did: ${early instanceof Error ? early.message : "finished"}`);
  stopLoad.abort();
  await loadGone;
  // The same batches with the writes stopped (and the last commits settled): the reader's own cost per key, without
  // the files that commits and compactions keep adding to decode.
  await new Promise((r) => setTimeout(r, 2000));
  await client.get(TABLE, Array.from({ length: 1000 }, (_, k) => ({ id: Math.floor((k * KEYS) / 1000) })));
  const idle = await concurrentBatches(client, reader.proc.pid!);

  const figures = {
    keys: KEYS,
    upserts_per_sec: RATE,
    cold_single_p50_ms: percentile(cold.latencies, 0.5),
    cold_single_p99_ms: percentile(cold.latencies, 0.99),
    warm_first_pass_s: firstPassSeconds,
    warm_single_lookups_per_sec: warmSingle.calls / warmSingle.seconds,
    warm_single_p50_ms: percentile(warmSingle.latencies, 0.5),
    warm_single_p99_ms: percentile(warmSingle.latencies, 0.99),
    warm_single_reader_loop_delay_p99_ms: singleLoopDelay["0.99"] ?? null,
    warm_single_reader_loop_delay_max_ms: singleLoopDelay["1"] ?? null,
    warm_batch100_keys_per_sec: (warmBatch.calls * BATCH) / warmBatch.seconds,
    warm_batch100_p50_ms: percentile(warmBatch.latencies, 0.5),
    warm_batch100_p99_ms: percentile(warmBatch.latencies, 0.99),
    parallel_batch100_keys_per_sec: parallel.keysPerSec,
    parallel_reader_cpu_s: parallel.readerCpu,
    keys_per_reader_cpu_s: parallel.readerCpu > 0 ? (parallel.keysPerSec * parallel.seconds) / parallel.readerCpu : null,
    idle_batch100_keys_per_sec: idle.keysPerSec,
    idle_keys_per_reader_cpu_s: idle.readerCpu > 0 ? (idle.keysPerSec * idle.seconds) / idle.readerCpu : null,
    publish_to_lookup_p50_ms: percentile(visible.lookup, 0.5),
    publish_to_lookup_p99_ms: percentile(visible.lookup, 0.99),
    publish_to_notified_p50_ms: percentile(visible.notified, 0.5),
    publish_to_notified_p99_ms: percentile(visible.notified, 0.99),
  };
  const targets = [
    targetAtMost("warm_single_p99_ms", figures.warm_single_p99_ms, TARGETS.warmSingleP99Ms),
    targetAtLeast("keys_per_reader_cpu_s", figures.keys_per_reader_cpu_s, TARGETS.keysPerReaderCpuSecond),
    targetAtMost("publish_to_lookup_p99_ms", figures.publish_to_lookup_p99_ms, TARGETS.visibleP99Ms),
  ];
  const judged = (name: string): string => {
    const t = targets.find((x) => x.name === name)!;
    return `${t.met === null ? "n/a" : t.met ? "PASS" : "MISS"} (target ${t.target})`;
  };
  say(`cold single key:  p50 ${ms(figures.cold_single_p50_ms)}, p99 ${ms(figures.cold_single_p99_ms)} (${cold.calls} calls; the reader's first lookups decode the files they need)`);
  say(`warm first pass:  ${firstPassSeconds.toFixed(1)} s (10,000 keys across the key range)`);
  say(`warm single key:  ${fmt(figures.warm_single_lookups_per_sec)} lookups/s, p50 ${ms(figures.warm_single_p50_ms, 3)}, p99 ${ms(figures.warm_single_p99_ms, 3)} (${warmSingle.calls} calls) — ${judged("warm_single_p99_ms")}`);
  say(`  the reader's event loop ran late by p99 ${ms(figures.warm_single_reader_loop_delay_p99_ms, 1)}, at most ${ms(figures.warm_single_reader_loop_delay_max_ms, 1)} meanwhile (natslake_event_loop_delay_ms, 10 ms resolution)`);
  say(`warm 100 keys:    ${fmt(figures.warm_batch100_keys_per_sec)} keys/s, p50 ${ms(figures.warm_batch100_p50_ms)}, p99 ${ms(figures.warm_batch100_p99_ms)} per batch (${warmBatch.calls} calls)`);
  say(`${CALLERS} callers × 100:  ${fmt(parallel.keysPerSec)} keys/s, reader CPU ${parallel.readerCpu.toFixed(1)} s over ${parallel.seconds.toFixed(1)} s: ${figures.keys_per_reader_cpu_s === null ? "n/a" : fmt(figures.keys_per_reader_cpu_s)} keys per reader CPU-second — ${judged("keys_per_reader_cpu_s")}`);
  say(`  without writes: ${fmt(idle.keysPerSec)} keys/s, reader CPU ${idle.readerCpu.toFixed(1)} s over ${idle.seconds.toFixed(1)} s: ${figures.idle_keys_per_reader_cpu_s === null ? "n/a" : fmt(figures.idle_keys_per_reader_cpu_s)} keys per reader CPU-second (the reader's own cost, no new files to decode)`);
  say(`publish → lookup: p50 ${ms(figures.publish_to_lookup_p50_ms, 0)}, p99 ${ms(figures.publish_to_lookup_p99_ms, 0)} (${visible.lookup.length} upserts, read-your-writes) — ${judged("publish_to_lookup_p99_ms")}; publish → its snapshot's notification p50 ${ms(figures.publish_to_notified_p50_ms, 0)}, p99 ${ms(figures.publish_to_notified_p99_ms, 0)}`);
  recordFigures("pk_lookup_service", figures, targets, { natsServer: nats.version });
  if (profileDir !== undefined) {
    // A reader that exits on its own writes its profile (a SIGKILL at the cluster's stop would lose it).
    const exited = new Promise((r) => reader.proc.once("exit", r));
    reader.proc.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
    say(`reader profile in ${profileDir}`);
  }
} finally {
  await client?.close();
  await c.stop();
}
