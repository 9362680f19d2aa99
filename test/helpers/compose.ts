/**
 * compose/docker-compose.yml as the tests see it, and the same topology as local processes.
 *
 * The file is read through `docker-compose config` (Debian's docker-compose 1.29, installed by scripts/setup.sh):
 * what it prints is the file as Docker would run it — anchors merged, `.env` read, paths made absolute — parsed with
 * `yaml`. Docker itself does not run here, so `startComposeTopology` starts the servers and the natslake nodes the
 * file describes as processes on 127.0.0.1: the nats-servers load compose/nats/nats.conf (with the users of
 * permissions.conf) and get their service's environment (the users' passwords), redis-server runs with the redis
 * service's arguments (its ACL), and every node runs its service's command line and environment, with only the places
 * (NATS, Redis, warehouse, metrics address) replaced by local ones. Everything is stopped by PID.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { buildProgram } from "../../cluster/cli/program.ts";
import { nodeConfigOf, type NodeFlags } from "../../cluster/cli/cluster-commands.ts";
import type { NodeConfig } from "../../cluster/config.ts";
import { freePort, startRedis, type ServerHandle } from "./servers.ts";
import { startNatsCluster, type NatsCluster } from "./nats-cluster.ts";
import { permissionViolationsIn } from "./nats-violations.ts";
import { clientInboxPrefix } from "../../cluster/nats/inbox.ts";
import { NATS_AUTH_ENV, NATS_PASSWORD_ENV } from "../../cluster/nats/connect-options.ts";
import type { Role } from "../../cluster/nats/permissions.ts";
import { COMPOSE_REDIS_USER } from "../../scripts/compose-redis-acl.ts";

export const COMPOSE_DIR = fileURLToPath(new URL("../../compose/", import.meta.url));
const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string };
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[]; interval?: string; timeout?: string; retries?: number; start_period?: string };
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/**
 * `docker-compose config` of compose/docker-compose.yml, parsed; throws with its output when it refuses the file.
 * `env`: the shell's variables the file takes (NATSLAKE_WAREHOUSE, AWS_*), set for docker-compose; none by default.
 * `envFile`: an env file in place of compose/.env (`--env-file`).
 */
export function composeConfig(env: Record<string, string> = {}, envFile?: string): ComposeFile {
  // Nothing of this process's environment that the file reads: only compose/.env (or envFile) and `env` count.
  const shell = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "NATSLAKE_WAREHOUSE" && !k.startsWith("AWS_") && !/^NATSLAKE_(NATS|REDIS)_PASSWORD_/.test(k)));
  const args = [...(envFile !== undefined ? ["--env-file", envFile] : []), "--file", "docker-compose.yml", "config"];
  const r = spawnSync("docker-compose", args, { cwd: COMPOSE_DIR, encoding: "utf8", timeout: 60_000, env: { ...shell, ...env } });
  if (r.error) throw new Error(`cannot run docker-compose (scripts/setup.sh installs Debian's docker-compose): ${r.error.message}`);
  if (r.status !== 0) throw new Error(`docker-compose config refused compose/docker-compose.yml (exit ${r.status}):\n${r.stderr}${r.stdout}`);
  return parseYaml(r.stdout) as ComposeFile;
}

/** The natslake node services: those whose command is `natslake node …` (the image's entrypoint is `natslake`). */
export function nodeServices(c: ComposeFile): Array<[string, ComposeService & { command: string[] }]> {
  return Object.entries(c.services).filter((e): e is [string, ComposeService & { command: string[] }] => e[1].command?.[0] === "node");
}

/**
 * Parses a `natslake` command line (without the program name) with the CLI's own commander program and validates
 * the node configuration it makes with `env`, as `natslake node` would — without starting anything. Throws what
 * the CLI would print for a bad flag or setting.
 */
export async function parseNodeCommand(args: string[], env: Record<string, string>): Promise<NodeConfig> {
  const program = await buildProgram(() => undefined);
  const node = program.commands.find((c) => c.name() === "node");
  if (node === undefined) throw new Error("the CLI has no `node` command");
  let errors = "";
  for (const c of [program, node]) c.configureOutput({ writeErr: (s) => (errors += s), writeOut: () => undefined });
  let flags: NodeFlags | undefined;
  node.action((o: NodeFlags) => {
    flags = o;
  });
  try {
    await program.parseAsync(args, { from: "user" });
  } catch (e) {
    throw new Error(`natslake ${args.join(" ")}: ${errors.trim() || (e as Error).message}`, { cause: e });
  }
  if (flags === undefined) throw new Error(`natslake ${args.join(" ")}: not a \`natslake node\` command line`);
  return nodeConfigOf(flags, env);
}

/** The NATS services of the file (nats-1, nats-2, …). */
export function natsServiceNames(c: ComposeFile): string[] {
  return Object.keys(c.services).filter((n) => /^nats-\d+$/.test(n));
}

/** The variable of the NATS servers' environment that holds a role's password (nats/permissions.conf). */
export function natsPasswordVariable(role: Role): string {
  return `NATSLAKE_NATS_PASSWORD_${role.toUpperCase()}`;
}

/**
 * The environment a process on the host needs to log in as `role` (compose/README.md): its user, its password (the
 * one the NATS services were given) and its inbox prefix.
 */
export function composeClientEnv(c: ComposeFile, role: Role): Record<string, string> {
  const password = c.services[natsServiceNames(c)[0]!]?.environment?.[natsPasswordVariable(role)];
  if (password === undefined || password === "") throw new Error(`the NATS services have no ${natsPasswordVariable(role)}`);
  return { [NATS_AUTH_ENV.natsUser]: role, [NATS_PASSWORD_ENV]: password, NATSLAKE_INBOX_PREFIX: clientInboxPrefix(role) };
}

/** The redis service's command line without the program: redis-server's arguments (its ACL among them). */
export function redisServerArgs(c: ComposeFile): string[] {
  const command = c.services["redis"]?.command;
  if (command?.[0] !== "redis-server") throw new Error(`the redis service does not run redis-server: ${JSON.stringify(command)}`);
  return command.slice(1);
}

/** The environment variables of a node service that name places; the local topology gives each a local value. */
export const PLACE_SETTINGS = ["NATSLAKE_NATS", "NATSLAKE_REDIS", "NATSLAKE_WAREHOUSE", "NATSLAKE_METRICS_PORT", "NATSLAKE_METRICS_HOST"] as const;

export interface ComposeNodeProc {
  service: string;
  proc: ChildProcess;
  logFile: string;
  metricsPort: number;
  /** The service's environment with the local places: what the process got on top of this process's environment. */
  env: Record<string, string>;
}

export interface ComposeTopology {
  compose: ComposeFile;
  nats: NatsCluster;
  redis: ServerHandle;
  warehouse: string;
  dir: string;
  nodes: Map<string, ComposeNodeProc>;
  /** nats://… of every NATS server, comma-separated (as NATSLAKE_NATS). */
  natsUrls: string;
  logs(service: string): string;
  /** The permission violations the NATS servers logged so far (nats-violations.ts), as `user kind subject` lines. */
  natsViolations(): string[];
  /**
   * Runs the redis service's compose healthcheck (`CMD-SHELL`, with the service's environment and `env` over it)
   * against the local redis-server; true on exit 0.
   */
  redisHealthy(env?: Record<string, string>): Promise<boolean>;
  /**
   * Runs a service's compose healthcheck command here (`CMD node …` with the node's environment, and `env` over it);
   * true on exit 0.
   */
  healthy(service: string, env?: Record<string, string>): Promise<boolean>;
  stop(): Promise<void>;
}

/** The host path bind-mounted at `target` in a service (docker-compose config makes host paths absolute). */
export function mountedFrom(s: ComposeService, target: string): string {
  for (const v of s.volumes ?? []) {
    const [host, at] = v.split(":");
    if (at === target && host !== undefined && host.startsWith("/")) return host;
  }
  throw new Error(`nothing is bind-mounted at ${target} (volumes: ${(s.volumes ?? []).join(", ")})`);
}

/**
 * Starts the topology of compose/docker-compose.yml on 127.0.0.1: a nats-server cluster of the compose file's NATS
 * services loading its nats.conf (`nats` binary: NATSLAKE_NATS_SERVER, the current server), redis-server, and a
 * process per natslake node service with its command line and environment. Resolves once the NATS cluster takes R3
 * streams; the nodes are starting (see `healthy`).
 */
export async function startComposeTopology(compose: ComposeFile = composeConfig()): Promise<ComposeTopology> {
  const natsServices = natsServiceNames(compose);
  const natsService = compose.services[natsServices[0]!]!;
  const conf = mountedFrom(natsService, "/etc/nats/nats.conf");
  const dir = mkdtempSync(join(tmpdir(), "natslake-compose-"));
  const warehouse = join(dir, "warehouse");
  const natsLogs = join(dir, "nats");
  mkdirSync(natsLogs);
  const writer = composeClientEnv(compose, "writer");
  const nats = await startNatsCluster({
    size: natsServices.length,
    configFile: conf,
    // The passwords permissions.conf reads from the servers' environment, as the NATS services get them.
    env: { ...process.env, ...natsService.environment },
    // The readiness check creates and deletes a stream: the writer's user may.
    readyAuth: { user: writer[NATS_AUTH_ENV.natsUser]!, pass: writer[NATS_PASSWORD_ENV]!, inboxPrefix: writer["NATSLAKE_INBOX_PREFIX"]! },
    logDir: natsLogs,
    readyTimeoutMs: 60_000,
  }).catch((e: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  let redis: ServerHandle | undefined;
  const nodes = new Map<string, ComposeNodeProc>();
  const natsUrls = nats.urls.join(",");
  const stop = async (): Promise<void> => {
    for (const n of nodes.values()) if (n.proc.exitCode === null && n.proc.signalCode === null) n.proc.kill("SIGKILL");
    await Promise.all([...nodes.values()].map((n) => (n.proc.exitCode !== null || n.proc.signalCode !== null ? undefined : new Promise((r) => n.proc.once("exit", r)))));
    await redis?.stop();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // The redis service's arguments (the default user off, the committers' ACL user); the start-up check logs in as it.
    const redisPassword = compose.services["redis"]?.environment?.["REDISCLI_AUTH"];
    if (redisPassword === undefined) throw new Error("the redis service has no REDISCLI_AUTH (its healthcheck's password)");
    redis = await startRedis({ extraArgs: redisServerArgs(compose), probeAuth: { user: COMPOSE_REDIS_USER, password: redisPassword } });
    const local: Record<(typeof PLACE_SETTINGS)[number], (service: string) => Promise<string> | string> = {
      NATSLAKE_NATS: () => natsUrls,
      NATSLAKE_REDIS: () => redis!.url,
      NATSLAKE_WAREHOUSE: () => warehouse,
      NATSLAKE_METRICS_PORT: () => freePort().then(String),
      // Loopback only: the containers' 0.0.0.0 would listen on every interface of this machine.
      NATSLAKE_METRICS_HOST: () => "127.0.0.1",
    };
    for (const [service, s] of nodeServices(compose)) {
      const env: Record<string, string> = { ...s.environment };
      for (const key of PLACE_SETTINGS) if (env[key] !== undefined) env[key] = await local[key](service);
      const logFile = join(dir, `${service}.log`);
      const fd = openSync(logFile, "a");
      try {
        const proc = spawn(process.execPath, [BIN, ...s.command], { stdio: ["ignore", fd, fd], env: { ...process.env, ...env } });
        nodes.set(service, { service, proc, logFile, metricsPort: Number(env["NATSLAKE_METRICS_PORT"]), env });
      } finally {
        closeSync(fd);
      }
    }
  } catch (e) {
    await stop();
    throw e;
  }
  const logs = (service: string): string => {
    try {
      return readFileSync(nodes.get(service)!.logFile, "utf8");
    } catch {
      return "";
    }
  };
  return {
    compose,
    nats,
    redis,
    warehouse,
    dir,
    nodes,
    natsUrls,
    logs,
    natsViolations: () => permissionViolationsIn(nats.nodes.map((n) => join(natsLogs, `${n.name}.log`))),
    redisHealthy(env = {}) {
      const s = compose.services["redis"];
      const test = s?.healthcheck?.test;
      if (test?.[0] !== "CMD-SHELL" || test[1] === undefined) throw new Error(`the redis healthcheck is not a \`CMD-SHELL …\` command: ${JSON.stringify(test)}`);
      // The only place in it: redis-cli's server, the container's own 127.0.0.1:6379 there.
      const local = test[1].replace(/\bredis-cli\b/g, `redis-cli -p ${redis!.port}`);
      return new Promise((resolve) => {
        const p = spawn("sh", ["-c", local], { stdio: "ignore", env: { PATH: process.env["PATH"] ?? "", ...s?.environment, ...env } });
        const timer = setTimeout(() => p.kill("SIGKILL"), 10_000);
        p.once("exit", (code) => {
          clearTimeout(timer);
          resolve(code === 0);
        });
      });
    },
    healthy(service, env = {}) {
      const n = nodes.get(service);
      const test = compose.services[service]?.healthcheck?.test;
      if (n === undefined || test === undefined) throw new Error(`${service} is not a node with a healthcheck`);
      if (test[0] !== "CMD" || test[1] !== "node") throw new Error(`${service}'s healthcheck is not a \`CMD node …\` command: ${JSON.stringify(test)}`);
      return new Promise((resolve) => {
        const p = spawn(process.execPath, test.slice(2), { stdio: "ignore", env: { ...process.env, ...n.env, ...env } });
        const timer = setTimeout(() => p.kill("SIGKILL"), 10_000);
        p.once("exit", (code) => {
          clearTimeout(timer);
          resolve(code === 0);
        });
      });
    },
    stop,
  };
}
