/**
 * What the cluster benchmarks (bench/cluster.bench.ts, bench/maintenance.bench.ts, bench/consumer.bench.ts,
 * bench/cluster-pk.bench.ts) share:
 * process figures from /proc, the load generator (bench/cluster-load.ts) in its own process, a check that no node
 * died, the wait for a table's buckets to be assigned, a backlog published as fast as the producer goes, the
 * nodes' CPU profiles (`--node-cpu-prof DIR`) and whether the nodes run from dist/ or the sources.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NatsConnection } from "@nats-io/transport-node";
import { createProducer } from "../cluster/producer.ts";
import { benchInputRow } from "./shape.ts";

/**
 * `--node-cpu-prof DIR`: the Node flags that run a node under the V8 profiler into DIR (none without a DIR), and the
 * signal that stops it — SIGTERM, so the node exits and the profile is written; SIGKILL otherwise.
 */
export function nodeProfiling(dir: string | undefined): { flags: string[]; stopSignal: NodeJS.Signals } {
  return dir === undefined ? { flags: [], stopSignal: "SIGKILL" } : { flags: ["--cpu-prof", "--cpu-prof-dir", dir], stopSignal: "SIGTERM" };
}

const LOAD = fileURLToPath(new URL("./cluster-load.ts", import.meta.url));
const BIN = fileURLToPath(new URL("../bin/natslake.mjs", import.meta.url));

/** How the nodes run: `natslake --version` says "dist" when dist/ matches the sources, else "sources" (tsx). */
export function nodesRunFrom(): string {
  const r = spawnSync(process.execPath, [BIN, "--version"], { encoding: "utf8", timeout: 60_000 });
  return /\((\w+)\)/.exec(r.stdout ?? "")?.[1] ?? "unknown";
}

export interface ProcStats {
  /** User + system CPU seconds since the process started. */
  cpu: number;
  /** Peak RSS (VmHWM) over the process's life, MB. */
  rssMb: number;
  /** RSS now (VmRSS), MB: sampled, it gives the peak of one part of a run. */
  rssNowMb: number;
}

/** CPU seconds and RSS (MB) of a live process, from /proc. */
export function procStats(pid: number): ProcStats {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string): number => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { cpu: ticks / 100, rssMb: Math.round(kb("VmHWM") / 1024), rssNowMb: Math.round(kb("VmRSS") / 1024) };
}

/** The load generator's JSON line (bench/cluster-load.ts) and its process's last figures. */
export interface LoadRun {
  result: Record<string, number | null>;
  /** Per batch of the measured run: [its first publish (epoch ms), its publish→visible ms]. */
  timeline: Array<[number, number]>;
  cpu: number;
  rssMb: number;
}

export interface LoadLimits {
  /** Killed, and the run rejected, after this long. */
  timeoutMs?: number;
  /** Aborting kills the generator (the caller gave up on the run). */
  signal?: AbortSignal;
}

/**
 * Upserts of a primary-key table instead of rows with new ids (cluster-load.ts): row i upserts key
 * `benchKeyOf(i, keys)` (bench/shape.ts); the measured run is rows `firstRow` onwards.
 */
export interface UpsertLoad {
  keys: number;
  firstRow: number;
}

/**
 * Runs the load generator to its end: `rows` rows at `rate` rows/s (0: as fast as it can), after `warmupRows`; with
 * `upserts`, the rows upsert that many keys.
 */
export function runLoad(natsUrl: string, table: string, rows: number, rate: number, warmupRows: number, limits: LoadLimits = {}, upserts?: UpsertLoad): Promise<LoadRun> {
  return new Promise((resolve, reject) => {
    const shape = upserts === undefined ? [] : [String(upserts.keys), String(upserts.firstRow)];
    const p = spawn(process.execPath, ["--import", "tsx", LOAD, natsUrl, table, String(rows), String(rate), String(warmupRows), ...shape], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    let last = { cpu: 0, rssMb: 0 };
    let why: string | null = null;
    const kill = (reason: string): void => {
      why ??= reason;
      p.kill("SIGKILL");
    };
    const sampler = setInterval(() => {
      try {
        last = procStats(p.pid!);
      } catch {
        /* exited */
      }
    }, 200);
    const timer = limits.timeoutMs === undefined ? null : setTimeout(() => kill(`load generator still running after ${Math.round(limits.timeoutMs! / 1000)} s`), limits.timeoutMs);
    const onAbort = (): void => kill("load generator stopped: the run was abandoned");
    limits.signal?.addEventListener("abort", onAbort, { once: true });
    if (limits.signal?.aborted === true) onAbort();
    p.stdout.on("data", (b: Buffer) => (out += b.toString()));
    p.on("exit", (code, signal) => {
      clearInterval(sampler);
      if (timer !== null) clearTimeout(timer);
      limits.signal?.removeEventListener("abort", onAbort);
      if (why !== null) reject(new Error(why));
      else if (code !== 0) reject(new Error(`load generator exited with ${code ?? signal}`));
      else {
        const { timeline, ...result } = JSON.parse(out.trim().split("\n").pop()!) as { timeline: Array<[number, number]> } & Record<string, unknown>;
        resolve({ result: result as Record<string, number | null>, timeline, ...last });
      }
    });
  });
}

/** A node that died invalidates the run: say why (its log's tail, `<dir>/n<i>.log`) instead of printing figures. */
export function assertAlive(nodes: ChildProcess[], dir: string, when: string): void {
  for (const [i, n] of nodes.entries()) {
    if (n.exitCode !== null || n.signalCode !== null) {
      const tail = readFileSync(join(dir, `n${i + 1}.log`), "utf8").split("\n").slice(-15).join("\n");
      throw new Error(`node n${i + 1} exited (${n.exitCode ?? n.signalCode}) ${when}:\n${tail}`);
    }
  }
}

/**
 * Waits until every one of the table's `buckets` has an active writer, spread over `writers` nodes (KV
 * `lake_assign`). Returns false when that did not happen within `timeoutMs`.
 */
export async function waitForAssignment(nc: NatsConnection, table: string, buckets: number, writers: number, timeoutMs: number): Promise<boolean> {
  const { Kvm } = await import("@nats-io/kv");
  const deadline = Date.now() + timeoutMs;
  let kv = null;
  while (Date.now() < deadline) {
    // The bucket appears once the first node has started; until then there is nothing to read.
    kv ??= await new Kvm(nc).open("lake_assign").catch(() => null);
    const e = kv ? await kv.get(table).catch(() => null) : null;
    const a = e && e.operation === "PUT" ? (e.json() as { buckets: Record<string, { node: string; state: string }> }) : null;
    if (a && Object.keys(a.buckets).length === buckets && Object.values(a.buckets).every((b) => b.state === "active") && new Set(Object.values(a.buckets).map((b) => b.node)).size === writers) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/** Publishes `rows` rows of the bench shape through the producer client (500-row batches) and waits for every ack. */
export async function publishBenchRows(nc: NatsConnection, table: string, rows: number): Promise<void> {
  const producer = await createProducer({ nc, table });
  const pending: Array<Promise<unknown>> = [];
  for (let i = 0; i < rows; i++) {
    pending.push(producer.write(benchInputRow(i)));
    if (pending.length >= 20_000) await Promise.all(pending.splice(0));
  }
  await producer.flush();
  await Promise.all(pending);
  await producer.close();
}
