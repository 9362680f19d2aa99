/**
 * Local servers for `natslake up` and for integration tests: `nats-server` (JetStream) and `redis-server` from PATH, started on free
 * loopback ports with their own temporary directories, and stopped by PID. No mocks.
 *
 *   const nats = await startNats();   // nats.url = "nats://127.0.0.1:<port>"
 *   const redis = await startRedis(); // redis.url = "redis://127.0.0.1:<port>"
 *   ...
 *   await nats.stop(); await redis.stop();
 *
 * `NATSLAKE_NATS_SERVER` / `NATSLAKE_REDIS_SERVER` point at other binaries (e.g. a current nats-server built with
 * `go install`). A missing binary is an error that says how to install it (tests never skip).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { connect as tlsConnect, type ConnectionOptions as TlsConnectionOptions } from "node:tls";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../repo-root.ts";
import { unsupportedNatsServer } from "../nats/server-version.ts";

export interface ServerHandle {
  url: string;
  port: number;
  pid: number;
  dir: string;
  /** SIGTERM, then SIGKILL after 5 s; removes the data directory unless `keepData`. */
  stop(opts?: { keepData?: boolean }): Promise<void>;
  /** SIGKILL now (a crash); the data directory is kept for a restart. */
  kill(): Promise<void>;
  process: ChildProcess;
  /** The last 8 KB the server printed (stdout and stderr), e.g. to say why it exited. */
  output(): string;
}

/** A free TCP port on 127.0.0.1, picked by the OS. Another process may take it before the caller binds it (see launchOnFreePort). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Who answers on a port: `ours` when the server listening is the one just started, `other` when another process holds
 * the port (freePort's race: between its close and the server's bind, another test's server or any socket took it).
 */
type Identity = "ours" | "other";

/**
 * Reads from a connection to `port` until `decide` has an answer (or the connection ends: undefined); over TLS with
 * `tlsOpts` (a server that speaks TLS first).
 */
function probe(port: number, greet: string | undefined, decide: (text: string) => Identity | undefined, timeoutMs: number, tlsOpts?: TlsConnectionOptions): Promise<Identity | undefined> {
  return new Promise((resolve, reject) => {
    const sock = tlsOpts === undefined ? createConnection({ port, host: "127.0.0.1" }) : tlsConnect({ ...tlsOpts, port, host: "127.0.0.1" });
    let text = "";
    const finish = (r: Identity | undefined): void => {
      clearTimeout(timer);
      sock.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    sock.once(tlsOpts === undefined ? "connect" : "secureConnect", () => {
      if (greet !== undefined) sock.write(greet);
    });
    sock.on("data", (b: Buffer) => {
      text += b.toString("latin1");
      const r = decide(text);
      if (r !== undefined) finish(r);
    });
    sock.once("end", () => finish(undefined));
    sock.once("error", (e) => {
      clearTimeout(timer);
      sock.destroy();
      reject(e);
    });
  });
}

/** nats-server greets with `INFO {json}`; ours carries the server name it was started with. */
function natsIdentity(name: string, tlsOpts?: TlsConnectionOptions) {
  return (port: number): Promise<Identity | undefined> =>
    probe(port, undefined, (text) => {
      const line = /^INFO ([^\r\n]*)\r?\n/.exec(text);
      if (line === null) return text.includes("\n") ? "other" : undefined;
      try {
        return (JSON.parse(line[1]!.trim()) as { server_name?: string }).server_name === name ? "ours" : "other";
      } catch {
        return "other";
      }
    }, 2000, tlsOpts);
}

/** redis-server answers `INFO server` with its process id (after `AUTH` when its default user is off). */
function redisIdentity(pid: () => number | undefined, auth?: { user: string; password: string }, tlsOpts?: TlsConnectionOptions) {
  const greet = `${auth !== undefined ? `AUTH ${auth.user} ${auth.password}\r\n` : ""}INFO server\r\n`;
  return (port: number): Promise<Identity | undefined> =>
    probe(port, greet, (text) => {
      const m = /process_id:(\d+)/.exec(text);
      if (m !== null) return Number(m[1]) === pid() ? "ours" : "other";
      return (text.startsWith("-") && auth === undefined) || text.length > 64 * 1024 ? "other" : undefined;
    }, 2000, tlsOpts);
}

/** The port a server was started on was taken by another process first: try again on another. */
export class PortTakenError extends Error {}

/** A server process started by this module: the tail of its output, and a stop that signals and waits. */
export interface ServerProcess {
  proc: ChildProcess;
  /** The last 8 KB it printed (stdout and stderr). */
  output(): string;
  /** `signal`, SIGKILL after 5 s, wait for the exit; then removes `dir` unless `keepData`. */
  stop(signal: NodeJS.Signals, keepData: boolean): Promise<void>;
}

/** What a server printed that is kept: the last OUTPUT_KEPT bytes (an error message names why it exited). */
const OUTPUT_KEPT = 8000;

/** The last `OUTPUT_KEPT` bytes of `file` written after offset `from` ("" when it cannot be read). */
function fileTail(file: string, from: number): string {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return "";
  }
  try {
    const size = statSync(file).size;
    const start = Math.max(from, size - OUTPUT_KEPT);
    const buf = Buffer.alloc(Math.max(0, size - start));
    const n = readSync(fd, buf, 0, buf.length, start);
    return buf.subarray(0, n).toString();
  } finally {
    closeSync(fd);
  }
}

/**
 * Spawns `bin` in `dir` (resolves once spawned; a missing binary rejects, naming it and `hint`). With `logFile`, its
 * stdout and stderr are appended to that file (the process writes it itself, so nothing is lost if its owner dies
 * first), and `output()` reads this run's part of it; else they are piped here and only their tail is kept.
 */
export async function spawnServerProcess(bin: string, args: string[], o: { dir: string; detached?: boolean; hint?: string; logFile?: string; env?: NodeJS.ProcessEnv }): Promise<ServerProcess> {
  let proc: ChildProcess;
  let output: () => string;
  if (o.logFile !== undefined) {
    const logFile = o.logFile;
    const from = existsSync(logFile) ? statSync(logFile).size : 0;
    const fd = openSync(logFile, "a");
    try {
      proc = spawn(bin, args, { stdio: ["ignore", fd, fd], cwd: o.dir, detached: o.detached ?? false, ...(o.env !== undefined ? { env: o.env } : {}) });
    } finally {
      closeSync(fd);
    }
    output = () => fileTail(logFile, from);
  } else {
    const piped = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], cwd: o.dir, detached: o.detached ?? false, ...(o.env !== undefined ? { env: o.env } : {}) });
    let out = "";
    const keep = (b: Buffer): void => {
      out = (out + b.toString()).slice(-OUTPUT_KEPT);
    };
    piped.stdout.on("data", keep);
    piped.stderr.on("data", keep);
    proc = piped;
    output = () => out;
  }
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    proc.once("error", (e) => reject(new Error(`cannot start ${bin}: ${e.message}${o.hint ? `. ${o.hint}` : ""}`)));
    proc.once("spawn", () => resolve());
  });
  return {
    proc,
    output,
    stop: async (signal, keepData) => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill(signal);
        const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(timer);
      }
      if (!keepData) rmSync(o.dir, { recursive: true, force: true });
    },
  };
}

/**
 * Waits until the server listens on `port` and `identify` says it is the one started (a port held by another process
 * is refused at once, so a caller cannot silently share another test's server).
 */
function waitForPort(port: number, proc: ChildProcess, timeoutMs: number, logs: () => string, identify: (port: number) => Promise<Identity | undefined>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const exited = (): boolean => proc.exitCode !== null || proc.signalCode !== null;
    const attempt = (): void => {
      if (exited()) {
        const out = logs();
        const msg = `server exited (${proc.exitCode ?? proc.signalCode}) before listening on ${port}:\n${out}`;
        reject(/address already in use/i.test(out) ? new PortTakenError(msg) : new Error(msg));
        return;
      }
      identify(port).then(
        (who) => {
          if (who === "ours") resolve();
          else if (who === "other") reject(new PortTakenError(`port ${port} is held by another server`));
          else retry();
        },
        () => retry(),
      );
    };
    const retry = (): void => {
      if (Date.now() > deadline) reject(new Error(`server did not listen on ${port} within ${timeoutMs} ms:\n${logs()}`));
      else setTimeout(attempt, 50);
    };
    attempt();
  });
}

interface LaunchSpec {
  bin: string;
  args: string[];
  port: number;
  dir: string;
  url: string;
  hint: string;
  identify: (pid: () => number | undefined) => (port: number) => Promise<Identity | undefined>;
  /** In a process group of its own: a Ctrl-C at the terminal does not reach it (its owner stops it). */
  detached?: boolean;
  /** Its stdout and stderr are appended here (else only their tail is kept, in memory). */
  logFile?: string;
  /** Its environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

async function launch(spec: LaunchSpec): Promise<ServerHandle> {
  const { bin, args, port, dir, url, hint } = spec;
  const server = await spawnServerProcess(bin, args, {
    dir,
    hint,
    ...(spec.detached !== undefined ? { detached: spec.detached } : {}),
    ...(spec.logFile !== undefined ? { logFile: spec.logFile } : {}),
    ...(spec.env !== undefined ? { env: spec.env } : {}),
  });
  const proc = server.proc;
  try {
    await waitForPort(port, proc, 15_000, server.output, spec.identify(() => proc.pid));
  } catch (e) {
    // Not left running on a port it never got (or that nobody will use).
    await server.stop("SIGKILL", true);
    throw e;
  }
  return {
    url,
    port,
    pid: proc.pid!,
    dir,
    process: proc,
    output: server.output,
    stop: (opts?: { keepData?: boolean }) => server.stop("SIGTERM", opts?.keepData ?? false),
    kill: () => server.stop("SIGKILL", true),
  };
}

/**
 * Launches on `port`, or on free ports until one is really ours: a port that freePort returned can be taken by
 * another process before the server binds it (tests start servers concurrently).
 */
async function launchOnFreePort(port: number | undefined, make: (port: number) => LaunchSpec): Promise<ServerHandle> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(make(port ?? (await freePort())));
    } catch (e) {
      if (port !== undefined || !(e instanceof PortTakenError) || attempt >= 5) throw e;
    }
  }
}

export interface NatsOptions {
  port?: number;
  /** Reuse a data directory (restart after kill). */
  dir?: string;
  extraArgs?: string[];
  /** The nats-server binary (default `NATSLAKE_NATS_SERVER` or `nats-server` on PATH); see `natsServerBin` in nats-cluster.ts. */
  bin?: string;
  /** The JetStream store directory (default `<dir>/js`); `stop()` removes `dir`, never a store outside it. */
  storeDir?: string;
  /** Start it in its own process group (see LaunchSpec.detached). */
  detached?: boolean;
  /** Append its output to this file (see LaunchSpec.logFile). */
  logFile?: string;
  /** A server that speaks TLS first (handshake_first): how to reach it to see it is ours. */
  probeTls?: TlsConnectionOptions;
  /**
   * Configuration text (e.g. an `authorization` block): written to `<dir>/nats.conf` and loaded with `-c`. The
   * command line's address, port, JetStream and name still apply.
   */
  config?: string;
  /** The server's environment (default: this process's), e.g. the passwords a config file names as `$VARIABLE`. */
  env?: NodeJS.ProcessEnv;
}

export async function startNats(opts: NatsOptions = {}): Promise<ServerHandle> {
  const bin = opts.bin ?? (process.env["NATSLAKE_NATS_SERVER"] || "nats-server");
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "natslake-nats-"));
  // The server name tells this server from another one on the same port: the caller's (`-n`), else a unique one.
  const extra = opts.extraArgs ?? [];
  const named = extra.findIndex((a) => a === "-n" || a === "--name" || a === "--server_name");
  const name = named >= 0 && extra[named + 1] !== undefined ? extra[named + 1]! : `natslake-${randomBytes(6).toString("hex")}`;
  const nameArgs = named >= 0 ? [] : ["-n", name];
  const configArgs: string[] = [];
  if (opts.config !== undefined) {
    const file = join(dir, "nats.conf");
    writeFileSync(file, opts.config);
    configArgs.push("-c", file);
  }
  return launchOnFreePort(opts.port, (port) => ({
    bin,
    args: [...configArgs, "-a", "127.0.0.1", "-p", String(port), "-js", "-sd", opts.storeDir ?? join(dir, "js"), ...nameArgs, ...extra],
    port,
    dir,
    url: `nats://127.0.0.1:${port}`,
    hint: "install it with `apt-get install nats-server` (or run .ci/run)",
    identify: () => natsIdentity(name, opts.probeTls),
    detached: opts.detached ?? false,
    ...(opts.logFile !== undefined ? { logFile: opts.logFile } : {}),
    ...(opts.env !== undefined ? { env: opts.env } : {}),
  }));
}

export interface RedisOptions {
  port?: number;
  dir?: string;
  /** More redis-server arguments (e.g. `--user`, `--aclfile`). */
  extraArgs?: string[];
  /** A user whose AUTH lets the start-up check run `INFO` (with `--user default off`). */
  probeAuth?: { user: string; password: string };
  /** TLS only: the port is a `tls-port` (plain port off), with these PEM files; clients must show a certificate when `authClients`. */
  tls?: { cert: string; key: string; ca: string; authClients: boolean };
  /** Start it in its own process group (see LaunchSpec.detached). */
  detached?: boolean;
  /** Append its output to this file (see LaunchSpec.logFile). */
  logFile?: string;
}

export async function startRedis(opts: RedisOptions = {}): Promise<ServerHandle> {
  const bin = process.env["NATSLAKE_REDIS_SERVER"] || "redis-server";
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "natslake-redis-"));
  return launchOnFreePort(opts.port, (port) => ({
    bin,
    // No persistence: a restart loses the fencing counter, which the design must (and does) tolerate.
    args: [
      ...(opts.tls === undefined
        ? ["--port", String(port)]
        : ["--port", "0", "--tls-port", String(port), "--tls-cert-file", opts.tls.cert, "--tls-key-file", opts.tls.key, "--tls-ca-cert-file", opts.tls.ca, "--tls-auth-clients", opts.tls.authClients ? "yes" : "no"]),
      ...["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "yes"],
      ...(opts.extraArgs ?? []),
    ],
    port,
    dir,
    url: `${opts.tls === undefined ? "redis" : "rediss"}://127.0.0.1:${port}`,
    hint: "install it with `apt-get install redis-server` (or run .ci/run)",
    identify: (pid) =>
      redisIdentity(
        pid,
        opts.probeAuth,
        opts.tls === undefined ? undefined : { ca: readFileSync(opts.tls.ca), ...(opts.tls.authClients ? { cert: readFileSync(opts.tls.cert), key: readFileSync(opts.tls.key) } : {}) },
      ),
    detached: opts.detached ?? false,
    ...(opts.logFile !== undefined ? { logFile: opts.logFile } : {}),
  }));
}

export interface NatsServerChoice {
  bin: string;
  /** Why this one: which setting or place it came from. */
  source: string;
  /** e.g. "2.12.15", or undefined when `--version` printed none. */
  version: string | undefined;
  /** Older than 2.10 (2.9's JetStream can lose acknowledged rows near max_bytes, nats-io/nats-server#4771). */
  old: boolean;
}

/** The version a nats-server binary reports (`nats-server: v2.12.15`), or undefined. */
export function natsServerVersionOf(bin: string): string | undefined {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 10_000 });
  if (r.error) return undefined;
  return /v?(\d+\.\d+\.\d+)/.exec(`${r.stdout}${r.stderr}`)?.[1];
}

/** Where scripts/setup.sh builds the current nats-server (the path scripts/run-tests.mjs computes too). */
export function setupBuiltNatsServer(env: NodeJS.ProcessEnv = process.env): string | undefined {
  let version: string;
  try {
    version = readFileSync(join(REPO_ROOT, "scripts", "nats-server-version"), "utf8").trim();
  } catch {
    return undefined;
  }
  const bin = join(env["NATSLAKE_TOOLS_DIR"] || join(homedir(), "go", "natslake-bin"), `nats-server-${version}`, "nats-server");
  return existsSync(bin) ? bin : undefined;
}

/**
 * The nats-server the benchmarks run: `NATSLAKE_NATS_SERVER` when set (an explicit choice), else the current one
 * (`NATSLAKE_NATS_SERVER_CURRENT`, else the one scripts/setup.sh built under ~/go/natslake-bin), else `nats-server`
 * on PATH (Debian's is 2.9.10; `old` says so). `natslake up` never falls back to PATH: see current-nats-server.ts.
 */
export function chooseNatsServer(env: NodeJS.ProcessEnv = process.env): NatsServerChoice {
  const pick = (bin: string, source: string): NatsServerChoice => {
    const version = natsServerVersionOf(bin);
    return { bin, source, version, old: unsupportedNatsServer(version) !== undefined };
  };
  if (env["NATSLAKE_NATS_SERVER"]) return pick(env["NATSLAKE_NATS_SERVER"], "NATSLAKE_NATS_SERVER");
  if (env["NATSLAKE_NATS_SERVER_CURRENT"]) return pick(env["NATSLAKE_NATS_SERVER_CURRENT"], "NATSLAKE_NATS_SERVER_CURRENT");
  const built = setupBuiltNatsServer(env);
  if (built !== undefined) return pick(built, "built by scripts/setup.sh");
  return pick("nats-server", "PATH");
}
