/**
 * The cluster benchmark's load generator, in its own process so its CPU is reported apart:
 *   node --import tsx bench/cluster-load.ts <nats-url> <db.table> <rows> <rows-per-sec | 0 for max> [warm-up rows] [keys] [first row]
 * Publishes rows of the 6-column bench shape through the producer client (row i: `benchInputRow(i)`; with `keys` > 0
 * the upserts of a primary-key table, `benchKeyedRow(i, keys)`: every key once in any `keys` consecutive rows; the
 * measured run is rows `first row` onwards, its warm-up the rows after them), records for every batch its first
 * publish time and acknowledged sequence, and (subscribed to the table's snapshot notifications) the time each batch
 * became visible. Prints one JSON line: rows, acknowledged, publish seconds, publish→visible latencies (ms), CPU, and
 * `timeline`: per batch of the measured run [its first publish (epoch ms), its publish→visible ms].
 */
import { connect } from "@nats-io/transport-node";
import { createProducer } from "../cluster/producer.ts";
import { subscribeSnapshots } from "../cluster/snapshots-client.ts";
import { benchInputRow, benchKeyedRow, benchKeysProblem } from "./shape.ts";

const USAGE = "usage: cluster-load.ts <nats-url> <db.table> <rows> <rows-per-sec|0> [warm-up rows] [keys (0: id = row index)] [first row]";
const [url, table, rowsArg, rateArg] = process.argv.slice(2);
if (!url || !table || !rowsArg || rateArg === undefined) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}
const ROWS = Number(rowsArg);
const RATE = Number(rateArg);
/**
 * Rows published (at RATE) and waited for before the measured run: the cluster's first seconds (JIT, first files,
 * first commits) are reported apart from its steady state.
 */
const WARMUP = Number(process.argv[6] ?? 0);
/** 0: row i has id i; else the rows upsert `KEYS` keys (benchKeyedRow). */
const KEYS = Number(process.argv[7] ?? 0);
/** The measured run publishes rows FIRST … FIRST + ROWS − 1, the warm-up the WARMUP rows after them. */
const FIRST = Number(process.argv[8] ?? 0);
const problem = KEYS === 0 ? null : benchKeysProblem(KEYS);
if (problem !== null || !Number.isSafeInteger(FIRST) || FIRST < 0) {
  process.stderr.write(`${problem ?? `first row must be an integer ≥ 0, got ${process.argv[8]}`} (${USAGE})\n`);
  process.exit(2);
}
const rowOf = KEYS === 0 ? benchInputRow : (i: number): Record<string, unknown> => benchKeyedRow(i, KEYS);
const DEBUG = process.env["LATENCY_DEBUG"] === "1";
/** [write time, latency, snapshot id] per batch (with LATENCY_DEBUG=1 also summarised on stderr at the end). */
const trace: Array<[number, number, number]> = [];

const nc = await connect({ servers: url });
const producer = await createProducer({ nc, table, maxBatchRows: 500, lingerMs: 5, maxInFlight: 64 });
/** Per bucket: [seq, firstWriteMillis] of acknowledged batches waiting to become visible. */
const waiting = new Map<number, Array<[number, number]>>();
const latencies: number[] = [];
const sub = await subscribeSnapshots(nc, table, (n) => {
  const now = Date.now();
  for (const [b, list] of waiting) {
    const off = n.offsets[String(b)] ?? 0;
    while (list.length > 0 && list[0]![0] <= off) {
      const at = list.shift()![1];
      latencies.push(now - at);
      trace.push([at, now - at, n.snapshotId]);
    }
  }
});
/** Publishes `rows` rows (ids from `base`) at RATE and waits until all are visible; latencies go to `latencies`. */
async function run(rows: number, base: number): Promise<{ publishSeconds: number; visibleSeconds: number; acked: number }> {
  const t0 = performance.now();
  let acked = 0;
  // Rows of one batch share one outcome promise: it is followed once, from the batch's first row (whose write time
  // stands for the batch), so the generator makes no garbage per row beyond the row itself.
  const followed = new WeakSet<Promise<unknown>>();
  const pending: Array<Promise<void>> = [];
  for (let n = 0; n < rows; n++) {
    const i = base + n;
    const p = producer.write(rowOf(i));
    if (!followed.has(p)) {
      followed.add(p);
      const writtenAt = Date.now();
      pending.push(
        p.then((o) => {
          if (o.status === "ok" || o.status === "duplicate") {
            acked += o.rows;
            const list = waiting.get(o.bucket) ?? [];
            if (list.length === 0 || list[list.length - 1]![0] !== o.seq) list.push([o.seq!, writtenAt]);
            waiting.set(o.bucket, list);
          }
        }),
      );
    }
    if (RATE > 0 && n % 500 === 499) {
      const ahead = (n + 1) / RATE - (performance.now() - t0) / 1000;
      if (ahead > 0) await new Promise((r) => setTimeout(r, ahead * 1000));
    }
    if (n % 20_000 === 19_999) await Promise.all(pending.splice(0));
  }
  await producer.flush();
  await Promise.all(pending);
  const publishSeconds = (performance.now() - t0) / 1000;
  await producer.waitVisible(producer.token(), 120_000);
  return { publishSeconds, visibleSeconds: (performance.now() - t0) / 1000, acked };
}

let warmup: { p99: number | null; p50: number | null } | null = null;
if (WARMUP > 0) {
  await run(WARMUP, FIRST + ROWS);
  await new Promise((r) => setTimeout(r, 300));
  latencies.sort((a, b) => a - b);
  warmup = { p50: latencies[Math.floor(latencies.length * 0.5)] ?? null, p99: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? null };
  latencies.length = 0;
  trace.length = 0;
}
const cpu0 = process.cpuUsage();
const { publishSeconds, visibleSeconds, acked } = await run(ROWS, FIRST);
await new Promise((r) => setTimeout(r, 300));
sub.stop();
const cpu = process.cpuUsage(cpu0);
latencies.sort((a, b) => a - b);
if (DEBUG && trace.length > 0) {
  const t0w = trace[0]![0];
  const bySec = new Map<number, number[]>();
  for (const [at, l] of trace) bySec.set(Math.floor((at - t0w) / 250), [...(bySec.get(Math.floor((at - t0w) / 250)) ?? []), l]);
  for (const [q, ls] of [...bySec].sort((a, b) => a[0] - b[0])) process.stderr.write(`t=${(q * 0.25).toFixed(2)}s n=${ls.length} max=${Math.max(...ls)} p50=${ls.sort((a, b) => a - b)[ls.length >> 1]}\n`);
}
const pct = (p: number): number | null => (latencies.length === 0 ? null : latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!);
process.stdout.write(
  JSON.stringify({ rows: ROWS, acked, publishSeconds, visibleSeconds, latencyP50: pct(0.5), latencyP99: pct(0.99), samples: latencies.length, cpuSeconds: (cpu.user + cpu.system) / 1e6, warmupP50: warmup?.p50 ?? null, warmupP99: warmup?.p99 ?? null, timeline: trace.map(([at, latency]) => [at, latency]) }) + "\n",
);
await producer.close();
await nc.close();
