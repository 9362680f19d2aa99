/**
 * The consumer benchmark's consumers (bench/consumer.bench.ts), in their own process so their CPU is reported apart
 * from the reader's and the load generator's:
 *   node --import tsx bench/consumer-load.ts <nats-url> <db.table> <job as JSON>
 * Jobs:
 *   {"mode":"latency","consumers":N,"warmupMs":W,"drainMs":D}  N consumers `from: "latest"`; on "stop" (stdin) waits up
 *       to D ms for every consumer to receive the last APPEND snapshot notified, then reports delivery latencies (each
 *       one with its snapshot's link time, and p50/p99 of this process's; the bench runs several such processes and
 *       merges them);
 *   {"mode":"catchup","rows":R,"timeoutMs":T}  one consumer `from: "full"`, timed until it holds R rows;
 *   {"mode":"stall","stallMs":S,"resumeMs":M}  a fast consumer and one (window 8) that takes one snapshot, then pulls
 *       nothing for S ms, then pulls again until it reaches the latest APPEND snapshot (at most M ms).
 * Latency of a delivered snapshot = the time the consumer holds it whole (its batches read to the end: the client
 * yields a snapshot with its first chunk and feeds the rest as it arrives) − its link time (`linkedAtMillis` of the
 * snapshot notification, same machine clock).
 * Stdout: JSON lines with an `event`: "ready", then (stall) "stall-start" / "stall-end", then one "result".
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { openConsumer, type ConsumedSnapshot, type Consumer } from "../cluster/consumer.ts";
import { subscribeSnapshots } from "../cluster/snapshots-client.ts";

type Job =
  | { mode: "latency"; consumers: number; warmupMs: number; drainMs: number }
  | { mode: "catchup"; rows: number; timeoutMs: number }
  | { mode: "stall"; stallMs: number; resumeMs: number };

const [url, table, jobArg] = process.argv.slice(2);
if (!url || !table || !jobArg) {
  process.stderr.write("usage: consumer-load.ts <nats-url> <db.table> <job as JSON>\n");
  process.exit(2);
}
const job = JSON.parse(jobArg) as Job;
/** Consumers per NATS connection: "one connection or a few", so one socket's reads do not serialise 100 sessions. */
const PER_CONNECTION = 25;

const emit = (event: string, data: Record<string, unknown> = {}): void => void process.stdout.write(JSON.stringify({ event, ...data }) + "\n");
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Reads a snapshot's batches to the end; its rows. */
async function rowsOf(s: ConsumedSnapshot): Promise<number> {
  let n = 0;
  for await (const b of s.batches) n += b.numRows;
  return n;
}
const cpuSeconds = (since: NodeJS.CpuUsage): number => {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1e6;
};

function pct(sorted: number[], p: number): number | null {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/** Link times by snapshot id, and the APPEND snapshots among them (the ones a consumer is delivered). */
interface Links {
  linkedAt: Map<number, number>;
  appends: number[];
  stop(): void;
}

async function watchLinks(nc: NatsConnection): Promise<Links> {
  const linkedAt = new Map<number, number>();
  const appends: number[] = [];
  const sub = await subscribeSnapshots(nc, table!, (n) => {
    linkedAt.set(n.snapshotId, n.linkedAtMillis);
    if (n.kind === "APPEND") appends.push(n.snapshotId);
  });
  return { linkedAt, appends, stop: () => sub.stop() };
}

/** One consumer's deliveries: receipt time by snapshot id, in order. */
interface Follower {
  consumer: Consumer;
  received: Map<number, number>;
  rows: number;
  last: number;
  done: Promise<void>;
}

/** Takes every snapshot as soon as it is whole, recording when (the loop ends when the consumer is closed). */
function follow(consumer: Consumer): Follower {
  const f: Follower = { consumer, received: new Map(), rows: 0, last: 0, done: Promise.resolve() };
  f.done = (async () => {
    for await (const s of consumer) await record(f, s);
  })();
  return f;
}

/** Reads the snapshot whole, then records when. */
async function record(f: Follower, s: ConsumedSnapshot): Promise<void> {
  f.rows += await rowsOf(s);
  f.received.set(s.snapshotId, Date.now());
  f.last = Math.max(f.last, s.snapshotId);
}

async function connections(n: number): Promise<NatsConnection[]> {
  return Promise.all(Array.from({ length: Math.max(1, Math.ceil(n / PER_CONNECTION)) }, () => connect({ servers: url! })));
}

/** Waits until every follower has received `target` (or `ms` passed). */
async function drain(fs: Follower[], target: number, ms: number): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < ms && fs.some((f) => f.last < target)) await sleep(20);
  return Date.now() - t0;
}

interface LatencySummary {
  p50: number | null;
  p99: number | null;
  max: number | null;
  samples: number;
}

function summarise(latencies: number[]): LatencySummary {
  const s = [...latencies].sort((a, b) => a - b);
  return { p50: pct(s, 0.5), p99: pct(s, 0.99), max: s.length === 0 ? null : s[s.length - 1]!, samples: s.length };
}

/**
 * Latencies of the follower's deliveries whose link time lies in [from, to) — alone and as [link time (epoch ms),
 * latency] — and the APPEND snapshots in its range (after its first delivery, up to `target`) it never received.
 */
function latenciesOf(f: Follower, links: Links, from: number, to: number, target: number): { latencies: number[]; timed: Array<[number, number]>; missing: number; unlinked: number } {
  const timed: Array<[number, number]> = [];
  let unlinked = 0;
  for (const [id, at] of f.received) {
    const linked = links.linkedAt.get(id);
    if (linked === undefined) unlinked++; // core NATS dropped its notification here: no link time to measure from
    else if (linked >= from && linked < to) timed.push([linked, at - linked]);
  }
  const first = Math.min(...f.received.keys());
  const missing = links.appends.filter((id) => id > first && id <= target && !f.received.has(id)).length;
  return { latencies: timed.map(([, latency]) => latency), timed, missing, unlinked };
}

/** Resolves when a line "stop" arrives on stdin (or stdin closes: the bench went away). */
function stopRequested(): Promise<void> {
  return new Promise((resolve) => {
    let buf = "";
    process.stdin.on("data", (b: Buffer) => {
      buf += b.toString();
      if (buf.includes("stop")) resolve();
    });
    process.stdin.on("end", () => resolve());
  });
}

async function latencyJob(j: Extract<Job, { mode: "latency" }>): Promise<void> {
  const ncs = await connections(j.consumers);
  const links = await watchLinks(ncs[0]!);
  const consumers = await Promise.all(Array.from({ length: j.consumers }, (_, i) => openConsumer({ nc: ncs[i % ncs.length]!, table: table!, from: "latest" })));
  const readers = new Set(consumers.map((c) => c.reader));
  const followers = consumers.map(follow);
  const cpu0 = process.cpuUsage();
  emit("ready", { readers: [...readers] });
  await stopRequested();
  const target = links.appends[links.appends.length - 1] ?? 0;
  const drainMs = await drain(followers, target, j.drainMs);
  const cpu = cpuSeconds(cpu0);
  // Warm-up: snapshots linked in the first warmupMs of the load (the first APPEND notification seen) are apart.
  const firstLink = links.appends.length === 0 ? Infinity : links.linkedAt.get(links.appends[0]!)!;
  const measured: Array<[number, number]> = [];
  const warm: Array<[number, number]> = [];
  let missing = 0;
  let unlinked = 0;
  for (const f of followers) {
    if (f.received.size === 0) continue;
    const m = latenciesOf(f, links, firstLink + j.warmupMs, Infinity, target);
    measured.push(...m.timed);
    warm.push(...latenciesOf(f, links, -Infinity, firstLink + j.warmupMs, target).timed);
    missing += m.missing;
    unlinked += m.unlinked;
  }
  const rows = followers.reduce((n, f) => n + f.rows, 0);
  const sessions = consumers.reduce((n, c) => n + c.sessions, 0);
  links.stop();
  await Promise.all(consumers.map((c) => c.close()));
  // The latencies themselves too, with their link times: the bench merges the figures of several consumer processes
  // and records the percentiles over time.
  const latencies = (timed: Array<[number, number]>): number[] => timed.map(([, latency]) => latency);
  emit("result", { ...summarise(latencies(measured)), warmup: summarise(latencies(warm)), timed: measured, warmupTimed: warm, missing, unlinked, target, drainMs, rows, sessions, readers: [...new Set(consumers.map((c) => c.reader))], cpuSeconds: cpu, silentConsumers: followers.filter((f) => f.received.size === 0).length });
  await Promise.all(ncs.map((nc) => nc.close()));
}

async function catchupJob(j: Extract<Job, { mode: "catchup" }>): Promise<void> {
  const [nc] = await connections(1);
  emit("ready");
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const consumer = await openConsumer({ nc: nc!, table: table!, from: "full" });
  const openMs = performance.now() - t0;
  let rows = 0;
  let snapshots = 0;
  let firstRowsMs: number | null = null;
  const deadline = setTimeout(() => void consumer.close(), j.timeoutMs);
  for await (const s of consumer) {
    firstRowsMs ??= performance.now() - t0;
    rows += await rowsOf(s);
    snapshots++;
    if (rows >= j.rows) break;
  }
  const seconds = (performance.now() - t0) / 1000;
  clearTimeout(deadline);
  const cpu = cpuSeconds(cpu0);
  await consumer.close();
  emit("result", { rows, seconds, openMs, firstRowsMs, snapshots, cpuSeconds: cpu, reader: consumer.reader, timedOut: rows < j.rows });
  await nc!.close();
}

async function stallJob(j: Extract<Job, { mode: "stall" }>): Promise<void> {
  const ncs = await connections(2);
  const links = await watchLinks(ncs[0]!);
  const fast = follow(await openConsumer({ nc: ncs[0]!, table: table!, from: "latest" }));
  const stalledConsumer = await openConsumer({ nc: ncs[0]!, table: table!, from: "latest", window: 8 });
  const stalled: Follower = { consumer: stalledConsumer, received: new Map(), rows: 0, last: 0, done: Promise.resolve() };
  emit("ready", { readers: [fast.consumer.reader, stalledConsumer.reader] });
  const it = stalledConsumer[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done === true) throw new Error("the stalled consumer ended before its first snapshot");
  await record(stalled, first.value);
  const stallStart = Date.now();
  emit("stall-start", { at: stallStart, snapshotId: first.value.snapshotId });
  // The stall: nothing pulls from `it`, so the client holds its finished snapshot and stops crediting the reader.
  await sleep(j.stallMs);
  const stallEnd = Date.now();
  const resumeTarget = links.appends[links.appends.length - 1] ?? 0;
  emit("stall-end", { at: stallEnd, latest: resumeTarget });
  let resumeSnapshots = 0;
  const resumeDeadline = stallEnd + j.resumeMs;
  while (stalled.last < resumeTarget && Date.now() < resumeDeadline) {
    const r = await Promise.race([it.next(), sleep(resumeDeadline - Date.now()).then(() => null)]);
    if (r === null || r.done === true) break;
    await record(stalled, r.value);
    resumeSnapshots++;
  }
  const resumeMs = Date.now() - stallEnd;
  const fastLat = latenciesOf(fast, links, stallStart, stallEnd, resumeTarget);
  // What the stalled consumer missed in its range (from its first snapshot to the resume target).
  const skipped = links.appends.filter((id) => id > first.value.snapshotId && id <= resumeTarget && !stalled.received.has(id)).length;
  links.stop();
  await fast.consumer.close();
  await stalledConsumer.close();
  emit("result", {
    fast: { ...summarise(fastLat.latencies), missing: fastLat.missing, sessions: fast.consumer.sessions },
    stalled: { firstSnapshot: first.value.snapshotId, resumeTarget, reached: stalled.last >= resumeTarget, resumeMs, resumeSnapshots, skipped, rows: stalled.rows, sessions: stalledConsumer.sessions },
  });
  await Promise.all(ncs.map((nc) => nc.close()));
}

if (job.mode === "latency") await latencyJob(job);
else if (job.mode === "catchup") await catchupJob(job);
else await stallJob(job);
process.exit(0);
