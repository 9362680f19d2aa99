/**
 * A real 3-node (by default) nats-server cluster with JetStream for integration and chaos tests, on free loopback
 * ports, each node with its own client, cluster-route and monitoring port and its own store directory:
 *
 *   const c = await startNatsCluster();                 // resolves once an R3 stream can be created
 *   const nc = await connect({ servers: c.urls });
 *   await c.kill(1);                                    // SIGKILL node n2, data kept
 *   await c.restart(1);                                 // same ports, same store; waits until R3 works again
 *   await c.stop();
 *
 * Nodes are indexed from 0 (`nodes[i].name` is `n${i + 1}`). JetStream clustering needs a server name per node and
 * a cluster name; each node routes to all the others. Options that have no flag (e.g. `sync_interval: always`,
 * nats-server >= 2.10) go in a per-node config file (`jetstream` option); flags take precedence over the file.
 *
 * Binary: `opts.bin`, else `natsServerBin("default")`. `natsServerBin("current")` prefers the go-installed current
 * server that .ci/run exports as `NATSLAKE_NATS_SERVER_CURRENT`.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { freePort, startNats, type ServerHandle } from "./servers.ts";

/**
 * The nats-server binary to use. "default": `NATSLAKE_NATS_SERVER` (scripts/run-tests.mjs sets it to the current one) or `nats-server` on PATH.
 * "current": `NATSLAKE_NATS_SERVER_CURRENT` (a current server from `go install`, set by .ci/run) when set, else the
 * default; check `natsServerVersion` / `supportsSyncInterval` before relying on features of the current one.
 */
export function natsServerBin(prefer: "current" | "default" = "default"): string {
  const current = process.env["NATSLAKE_NATS_SERVER_CURRENT"];
  if (prefer === "current" && current) return current;
  return process.env["NATSLAKE_NATS_SERVER"] || "nats-server";
}

/** `[major, minor, patch]` of a nats-server binary (`--version` prints e.g. "nats-server: v2.12.15"). */
export function natsServerVersion(bin: string): [number, number, number] {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 10_000 });
  if (r.error) throw new Error(`cannot run ${bin} --version: ${r.error.message}; install it with \`apt-get install nats-server\` (or run .ci/run)`);
  const m = /v?(\d+)\.(\d+)\.(\d+)/.exec(`${r.stdout}${r.stderr}`);
  if (!m) throw new Error(`${bin} --version printed no version: ${r.stdout}${r.stderr}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** `jetstream { sync_interval: ... }` exists from nats-server 2.10 on (2.9 rejects the key at startup). */
export function supportsSyncInterval(bin: string): boolean {
  const [major, minor] = natsServerVersion(bin);
  return major > 2 || (major === 2 && minor >= 10);
}

export interface NatsClusterOptions {
  /** Number of nodes (default 3). */
  size?: number;
  bin?: string;
  clusterName?: string;
  /** Entries of the `jetstream {}` block of each node's config file, e.g. `{ sync_interval: "always" }`. */
  jetstream?: Record<string, string | number | boolean>;
  /**
   * A nats-server config file every node loads (`-c`; e.g. compose/nats/nats.conf). The helper's flags (addresses,
   * ports, routes, store directory, server name) override what the file says; the cluster name is the file's
   * unless `clusterName` is given. Not together with `jetstream`.
   */
  configFile?: string;
  /** More command-line arguments for every node. */
  extraArgs?: string[];
  /** Every node's environment (default: this process's), e.g. the passwords `configFile` names as `$VARIABLE`. */
  env?: NodeJS.ProcessEnv;
  /**
   * How the readiness check logs in when the servers require it (user, pass, and the user's inboxPrefix): a user
   * that may create and delete a stream.
   */
  readyAuth?: Pick<ConnectionOptions, "user" | "pass" | "inboxPrefix">;
  /**
   * How the readiness check connects, instead of `readyAuth` (e.g. through cluster/nats/connect.ts with a client
   * certificate): `servers` are the running nodes' URLs; the check closes the connection.
   */
  readyConnect?: (servers: string[]) => Promise<NatsConnection>;
  /** Each node appends its log to `<logDir>/<name>.log` (kept after `stop`), else only its output's tail is kept. */
  logDir?: string;
  /**
   * More configuration text for every node's config file, beside `jetstream` (e.g. an `authorization` block). Not
   * together with `configFile`.
   */
  config?: string;
  /** How long `startNatsCluster` / `restart` / `waitReady` wait for a working JetStream meta group (default 30 s). */
  readyTimeoutMs?: number;
}

export interface NatsClusterNode {
  readonly index: number;
  readonly name: string;
  readonly port: number;
  readonly clusterPort: number;
  readonly monitorPort: number;
  /** nats://127.0.0.1:<port> */
  readonly url: string;
  /** http://127.0.0.1:<monitorPort> (varz, jsz, routez, healthz). */
  readonly monitorUrl: string;
  readonly dir: string;
  /** The running process, undefined after `kill`. */
  handle: ServerHandle | undefined;
  paused: boolean;
}

export interface NatsCluster {
  readonly bin: string;
  readonly version: string;
  readonly clusterName: string;
  readonly nodes: readonly NatsClusterNode[];
  /** Client URLs of every node (pass all of them as `servers`). */
  readonly urls: string[];
  /** SIGKILL node i (a crash); its store is kept for `restart`. */
  kill(i: number): Promise<void>;
  /** Starts node i again on the same ports and store; waits for `waitReady` unless `{ wait: false }`. */
  restart(i: number, opts?: { wait?: boolean }): Promise<void>;
  /** SIGSTOP / SIGCONT node i (a hung server: connections stay open, nothing answers). */
  pause(i: number): void;
  resume(i: number): void;
  /** Resolves once an R3 stream (num_replicas = min(3, size)) can be created and deleted. */
  waitReady(timeoutMs?: number): Promise<void>;
  /** Stops every node (SIGTERM, then SIGKILL) and removes all data. */
  stop(): Promise<void>;
}

async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

function configText(jetstream: Record<string, string | number | boolean> | undefined, config: string | undefined): string {
  const lines = Object.entries(jetstream ?? {}).map(([k, v]) => `  ${k}: ${typeof v === "string" ? JSON.stringify(v) : String(v)}`);
  return `# written by test/helpers/nats-cluster.ts\n${lines.length > 0 ? `jetstream {\n${lines.join("\n")}\n}\n` : ""}${config ?? ""}`;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The stream the readiness check creates and deletes. One name (a cluster's checks run one after another; adding it
 * again with the same configuration succeeds), so that a server requiring users can grant exactly it.
 */
export const READY_STREAM = "natslake_ready";

export async function startNatsCluster(opts: NatsClusterOptions = {}): Promise<NatsCluster> {
  const size = opts.size ?? 3;
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`size must be a positive integer, got ${size}`);
  const bin = opts.bin ?? natsServerBin("default");
  const version = natsServerVersion(bin).join(".");
  if (opts.configFile !== undefined && (opts.jetstream !== undefined || opts.config !== undefined)) throw new Error("give either configFile or jetstream/config, not both");
  const clusterName = opts.clusterName ?? "natslake";
  const readyTimeoutMs = opts.readyTimeoutMs ?? 30_000;
  const root = mkdtempSync(join(tmpdir(), "natslake-natscluster-"));
  const ports = await distinctFreePorts(3 * size);
  const nodes: NatsClusterNode[] = Array.from({ length: size }, (_, i) => {
    const port = ports[3 * i]!;
    const monitorPort = ports[3 * i + 2]!;
    const dir = join(root, `n${i + 1}`);
    mkdirSync(dir, { recursive: true });
    return {
      index: i,
      name: `n${i + 1}`,
      port,
      clusterPort: ports[3 * i + 1]!,
      monitorPort,
      url: `nats://127.0.0.1:${port}`,
      monitorUrl: `http://127.0.0.1:${monitorPort}`,
      dir,
      handle: undefined,
      paused: false,
    };
  });

  const argsFor = (node: NatsClusterNode): string[] => {
    const routes = nodes.filter((n) => n !== node).map((n) => `nats://127.0.0.1:${n.clusterPort}`);
    const args = [
      "-n", node.name,
      "-m", String(node.monitorPort),
      ...(opts.configFile === undefined || opts.clusterName !== undefined ? ["--cluster_name", clusterName] : []),
      "--cluster", `nats://127.0.0.1:${node.clusterPort}`,
      ...(routes.length ? ["--routes", routes.join(",")] : []),
    ];
    if (opts.configFile !== undefined) args.push("-c", opts.configFile);
    if ((opts.jetstream && Object.keys(opts.jetstream).length > 0) || opts.config !== undefined) {
      const conf = join(node.dir, "nats.conf");
      writeFileSync(conf, configText(opts.jetstream, opts.config));
      args.push("-c", conf);
    }
    return [...args, ...(opts.extraArgs ?? [])];
  };

  const startNode = async (node: NatsClusterNode): Promise<void> => {
    if (node.handle) throw new Error(`node ${node.name} is already running (pid ${node.handle.pid})`);
    node.handle = await startNats({
      bin,
      port: node.port,
      dir: node.dir,
      extraArgs: argsFor(node),
      ...(opts.env !== undefined ? { env: opts.env } : {}),
      ...(opts.logDir !== undefined ? { logFile: join(opts.logDir, `${node.name}.log`) } : {}),
    });
    node.paused = false;
  };

  const nodeAt = (i: number): NatsClusterNode => {
    const node = nodes[i];
    if (!node) throw new RangeError(`no node ${i} (cluster of ${size})`);
    return node;
  };

  const waitReady = async (timeoutMs = readyTimeoutMs): Promise<void> => {
    const replicas = Math.min(3, size);
    const deadline = Date.now() + timeoutMs;
    const urls = nodes.filter((n) => n.handle && !n.paused).map((n) => n.url);
    const nc = opts.readyConnect !== undefined ? await opts.readyConnect(urls) : await connect({ ...opts.readyAuth, servers: urls, timeout: 2000, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
    let lastErr: unknown;
    try {
      while (Date.now() < deadline) {
        try {
          const jsm = await jetstreamManager(nc, { timeout: 2000 });
          await jsm.streams.add({ name: READY_STREAM, subjects: [`natslake.ready.${READY_STREAM}`], num_replicas: replicas });
          await jsm.streams.delete(READY_STREAM);
          return;
        } catch (e) {
          lastErr = e;
          await sleep(200);
        }
      }
      const detail = lastErr instanceof Error ? lastErr.message : String(lastErr);
      throw new Error(`nats cluster (${bin} ${version}) not ready for R${replicas} streams within ${timeoutMs} ms: ${detail}`);
    } finally {
      await nc.close();
    }
  };

  const stopAll = async (): Promise<void> => {
    await Promise.all(
      nodes.map(async (n) => {
        const h = n.handle;
        n.handle = undefined;
        if (!h) return;
        if (n.paused) process.kill(h.pid, "SIGCONT");
        n.paused = false;
        await h.stop();
      }),
    );
    rmSync(root, { recursive: true, force: true });
  };

  try {
    // allSettled, not all: on a failure every node that did start must be known before stopAll runs.
    const started = await Promise.allSettled(nodes.map(startNode));
    for (const r of started) if (r.status === "rejected") throw r.reason;
    await waitReady();
  } catch (e) {
    await stopAll();
    throw e;
  }

  return {
    bin,
    version,
    clusterName,
    nodes,
    urls: nodes.map((n) => n.url),
    async kill(i) {
      const node = nodeAt(i);
      const h = node.handle;
      if (!h) throw new Error(`node ${node.name} is not running`);
      node.handle = undefined;
      node.paused = false;
      await h.kill();
    },
    async restart(i, o = {}) {
      await startNode(nodeAt(i));
      if (o.wait ?? true) await waitReady();
    },
    pause(i) {
      const node = nodeAt(i);
      if (!node.handle) throw new Error(`node ${node.name} is not running`);
      process.kill(node.handle.pid, "SIGSTOP");
      node.paused = true;
    },
    resume(i) {
      const node = nodeAt(i);
      if (!node.handle) throw new Error(`node ${node.name} is not running`);
      process.kill(node.handle.pid, "SIGCONT");
      node.paused = false;
    },
    waitReady,
    stop: stopAll,
  };
}
