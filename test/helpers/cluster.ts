/**
 * A real natslake cluster for integration tests: one nats-server and one redis-server on free loopback ports, a
 * temporary warehouse, and N node processes (`natslake node`), each stoppable, killable (SIGKILL), pausable
 * (SIGSTOP/SIGCONT) and restartable. Everything is stopped by PID at the end.
 */
import { after, before } from "node:test";
import { spawn, type ChildProcess } from "node:child_process";
import { nodeProcessEnv } from "../../cluster/local/node-env.ts";
import { closeSync, mkdtempSync, rmSync, openSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { startNats, startRedis, type ServerHandle } from "./servers.ts";
import { createProducer, type Producer } from "../../cluster/producer.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

export interface NodeProc {
  id: string;
  proc: ChildProcess;
  logFile: string;
}

export interface TestCluster {
  nats: ServerHandle;
  redis: ServerHandle;
  warehouse: string;
  dir: string;
  nc: NatsConnection;
  nodes: Map<string, NodeProc>;
  /** `nodeFlags`: Node's own flags for the process (e.g. `--cpu-prof`, which NODE_OPTIONS does not take). */
  startNode(id: string, extra?: string[], env?: Record<string, string>, nodeFlags?: string[]): NodeProc;
  signal(id: string, sig: NodeJS.Signals): void;
  waitExit(id: string, timeoutMs?: number): Promise<number | null>;
  logs(id: string): string;
  stop(): Promise<void>;
}

export interface SpawnNodeOptions {
  id: string;
  /** A NATS URL, or a comma-separated list of a cluster's URLs. */
  nats: string;
  redis?: string;
  warehouse: string;
  /** stdout and stderr of the process are appended here. */
  logFile: string;
  commitInterval?: string;
  leaseTtl?: string;
  /** More `natslake node` flags (e.g. `--roles writer`, `--replicas 3`). */
  extra?: string[];
  /** Added to this process's environment (e.g. FAILPOINTS). */
  env?: Record<string, string>;
  /** Node's own flags, before the program (e.g. `--cpu-prof`). */
  nodeFlags?: string[];
}

/**
 * Starts one `natslake node` process (also used by the chaos suite's topology). SIGUSR2 makes it write Node's
 * diagnostic report (its JavaScript stack, even while its event loop is busy) next to its log: see
 * `withNodeLogsOnFailure`.
 */
export function spawnNode(o: SpawnNodeOptions): ChildProcess {
  const fd = openSync(o.logFile, "a");
  try {
    return spawn(
      process.execPath,
      [...(o.nodeFlags ?? []), "--report-on-signal", "--report-signal=SIGUSR2", `--report-directory=${dirname(o.logFile)}`, BIN, "node", "--nats", o.nats, ...(o.redis ? ["--redis", o.redis] : []), "--warehouse", o.warehouse, "--node-id", o.id, "--commit-interval", o.commitInterval ?? "100ms", "--lease-ttl", o.leaseTtl ?? "2s", "--log-level", "info", ...(o.extra ?? [])],
      // The environment natslake up and compose give their nodes (memory settings), as a deployment runs them.
      { stdio: ["ignore", fd, fd], env: nodeProcessEnv({ ...process.env, ...o.env }) },
    );
  } finally {
    closeSync(fd);
  }
}

/** `warehouse`: another warehouse than a fresh local directory (e.g. an `s3://bucket/prefix` URI; its store is the caller's). */
export async function startCluster(opts: { nodes: number; commitInterval?: string; leaseTtl?: string; env?: Record<string, string>; natsBin?: string; warehouse?: string }): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), "natslake-cluster-"));
  const warehouse = opts.warehouse ?? join(dir, "warehouse");
  const nats = await startNats(opts.natsBin ? { bin: opts.natsBin } : {});
  const redis = await startRedis();
  const nc = await connect({ servers: nats.url });
  const nodes = new Map<string, NodeProc>();
  const startNode = (id: string, extra: string[] = [], env: Record<string, string> = {}, nodeFlags: string[] = []): NodeProc => {
    const logFile = join(dir, `${id}.log`);
    const proc = spawnNode({ id, nats: nats.url, redis: redis.url, warehouse, logFile, commitInterval: opts.commitInterval ?? "100ms", leaseTtl: opts.leaseTtl ?? "2s", extra, env: { ...opts.env, ...env }, nodeFlags });
    const n = { id, proc, logFile };
    nodes.set(id, n);
    return n;
  };
  for (let i = 1; i <= opts.nodes; i++) startNode(`n${i}`);
  const cluster: TestCluster = {
    nats,
    redis,
    warehouse,
    dir,
    nc,
    nodes,
    startNode,
    signal(id, sig) {
      nodes.get(id)?.proc.kill(sig);
    },
    waitExit(id, timeoutMs = 30_000) {
      const p = nodes.get(id)!.proc;
      if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve(p.exitCode);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`${id} did not exit within ${timeoutMs} ms`)), timeoutMs);
        p.once("exit", (code) => {
          clearTimeout(t);
          resolve(code);
        });
      });
    },
    logs(id) {
      try {
        return readFileSync(nodes.get(id)!.logFile, "utf8");
      } catch {
        return "";
      }
    },
    async stop() {
      for (const n of nodes.values()) {
        if (n.proc.exitCode === null && n.proc.signalCode === null) {
          n.proc.kill("SIGCONT");
          n.proc.kill("SIGKILL");
        }
      }
      await Promise.all([...nodes.values()].map((n) => (n.proc.exitCode !== null || n.proc.signalCode !== null ? undefined : new Promise((r) => n.proc.once("exit", r)))));
      await nc.close().catch(() => undefined);
      await nats.stop();
      await redis.stop();
      // NATSLAKE_TEST_KEEP_CLUSTER=1 keeps the node logs and the warehouse for a failure to be read afterwards.
      if (process.env["NATSLAKE_TEST_KEEP_CLUSTER"] === "1") process.stderr.write(`cluster kept in ${dir}\n`);
      else rmSync(dir, { recursive: true, force: true });
    },
  };
  // Every node has announced itself (a heartbeat in the members KV) before a test starts: a test that creates a
  // table at once would otherwise see its buckets all on the first node up.
  // (No nodes yet — a test that starts them itself — nothing to wait for.)
  if (nodes.size > 0) await waitFor("every node heartbeating", async () => {
    try {
      const kv = await new Kvm(nc).open("lake_members");
      const ids = new Set<string>();
      for await (const k of await kv.keys()) ids.add(k);
      return [...nodes.keys()].every((id) => ids.has(id)) ? true : undefined;
    } catch {
      return undefined; // the KV bucket is created by the first node
    }
  }, 60_000, 100);
  return cluster;
}

/**
 * The current nats-server when scripts/setup.sh built one (`NATSLAKE_NATS_SERVER_CURRENT`), as startCluster's
 * option: 2.9's discard-new size check (nats-io/nats-server#4771) deletes old messages of a full stream instead of
 * refusing new ones, and tests of a full stream need the refusal.
 */
export function currentNatsServer(): { natsBin?: string } {
  const current = process.env["NATSLAKE_NATS_SERVER_CURRENT"];
  return current ? { natsBin: current } : {};
}

/**
 * One cluster for the tests of a file: started before the first, stopped after the last. The function returns it
 * (throws if called before it started, e.g. outside a test).
 */
export function clusterPerFile(opts: Parameters<typeof startCluster>[0]): () => TestCluster {
  let cluster: TestCluster | undefined;
  before(async () => {
    cluster = await startCluster(opts);
  });
  after(async () => {
    await cluster?.stop();
  });
  return () => {
    if (cluster === undefined) throw new Error("the file's cluster has not started");
    return cluster;
  };
}

/** Polls `check` every `everyMs` until it returns a value (not undefined) or the timeout passes. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A producer for `table` once the cluster has registered it (its metadata is in KV), polling up to `timeoutMs`. */
export function producerWhenRegistered(nc: NatsConnection, table: string, timeoutMs = 60_000): Promise<Producer> {
  return waitFor(`${table} registered by the cluster`, async () => {
    try {
      return await createProducer({ nc, table });
    } catch {
      return undefined;
    }
  }, timeoutMs, 200);
}

/**
 * Runs `fn`; when it throws, prints the last lines of every node's log first, so a failure seen once (in CI, under
 * the load of the whole suite) can be diagnosed from its output — and, for each node still running, its CPU use
 * over one second (a busy loop or a wait) and the JavaScript stack of its diagnostic report (where it is).
 */
export async function withNodeLogsOnFailure<T>(c: TestCluster, fn: () => Promise<T>, lines = 60): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    for (const n of c.nodes.values()) {
      const tail = c.logs(n.id).split("\n").slice(-lines).join("\n");
      process.stderr.write(`--- last ${lines} log lines of ${n.id} ---\n${tail}\n`);
      if (n.proc.exitCode === null && n.proc.signalCode === null && n.proc.pid !== undefined) process.stderr.write(`--- ${n.id} now ---\n${await nodeDiagnosis(n)}\n`);
    }
    throw e;
  }
}

/** CPU seconds (user + system) the process has used, from /proc (Linux); null elsewhere or once it is gone. */
function cpuSeconds(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 per second)
  } catch {
    return null;
  }
}

/** The node's CPU use over the next second and the JavaScript stack and uptime its diagnostic report (SIGUSR2) gives. */
async function nodeDiagnosis(n: NodeProc): Promise<string> {
  const pid = n.proc.pid!;
  const dir = dirname(n.logFile);
  const before = cpuSeconds(pid);
  const reportsBefore = new Set(readdirSync(dir).filter((f) => f.startsWith("report.")));
  n.proc.kill("SIGUSR2");
  await new Promise((r) => setTimeout(r, 1000));
  const after = cpuSeconds(pid);
  const out = [before !== null && after !== null ? `CPU over 1 s: ${Math.round((after - before) * 100)}%` : "CPU: unknown"];
  for (let i = 0; i < 20; i++) {
    const report = readdirSync(dir).find((f) => f.startsWith("report.") && f.endsWith(".json") && !reportsBefore.has(f) && f.includes(`.${pid}.`));
    if (report !== undefined) {
      try {
        const r = JSON.parse(readFileSync(join(dir, report), "utf8")) as { javascriptStack?: { message?: string; stack?: string[] }; libuv?: Array<{ type: string; is_active?: boolean }> };
        const active = (r.libuv ?? []).filter((h) => h.is_active === true).map((h) => h.type);
        const counts = [...new Set(active)].map((t) => `${t}×${active.filter((x) => x === t).length}`).join(" ");
        out.push(`JavaScript stack: ${r.javascriptStack?.message ?? ""}\n  ${(r.javascriptStack?.stack ?? []).join("\n  ")}`, `active libuv handles: ${counts}`);
        break;
      } catch {
        // written but not complete yet: read it again
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  if (out.length === 1) out.push("no diagnostic report within 6 s");
  return out.join("\n");
}
