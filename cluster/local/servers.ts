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
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
}

/** A free TCP port on 127.0.0.1 (the OS picks it; a tiny race with other processes is accepted). */
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

function waitForPort(port: number, proc: ChildProcess, timeoutMs: number, logs: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        reject(new Error(`server exited (${proc.exitCode ?? proc.signalCode}) before listening on ${port}:\n${logs()}`));
        return;
      }
      const sock = createConnection({ port, host: "127.0.0.1" });
      sock.once("connect", () => {
        sock.destroy();
        resolve();
      });
      sock.once("error", () => {
        sock.destroy();
        if (Date.now() > deadline) reject(new Error(`server did not listen on ${port} within ${timeoutMs} ms:\n${logs()}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

function launch(bin: string, args: string[], port: number, dir: string, url: string, hint: string): Promise<ServerHandle> {
  const proc = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], cwd: dir });
  let out = "";
  const keep = (b: Buffer): void => {
    out = (out + b.toString()).slice(-8000);
  };
  proc.stdout?.on("data", keep);
  proc.stderr?.on("data", keep);
  const spawned = new Promise<void>((resolve, reject) => {
    proc.once("error", (e) => reject(new Error(`cannot start ${bin}: ${e.message}. ${hint}`)));
    proc.once("spawn", () => resolve());
  });
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  const stopWith = async (signal: NodeJS.Signals, keepData: boolean): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
    if (!keepData) rmSync(dir, { recursive: true, force: true });
  };
  return spawned
    .then(() => waitForPort(port, proc, 15_000, () => out))
    .then(() => ({
      url,
      port,
      pid: proc.pid!,
      dir,
      process: proc,
      stop: (opts?: { keepData?: boolean }) => stopWith("SIGTERM", opts?.keepData ?? false),
      kill: () => stopWith("SIGKILL", true),
    }));
}

export interface NatsOptions {
  port?: number;
  /** Reuse a data directory (restart after kill). */
  dir?: string;
  extraArgs?: string[];
  /** The nats-server binary (default `NATSLAKE_NATS_SERVER` or `nats-server` on PATH); see `natsServerBin` in nats-cluster.ts. */
  bin?: string;
}

export async function startNats(opts: NatsOptions = {}): Promise<ServerHandle> {
  const bin = opts.bin ?? (process.env["NATSLAKE_NATS_SERVER"] || "nats-server");
  const port = opts.port ?? (await freePort());
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "natslake-nats-"));
  const args = ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", join(dir, "js"), ...(opts.extraArgs ?? [])];
  return launch(bin, args, port, dir, `nats://127.0.0.1:${port}`, "install it with `apt-get install nats-server` (or run .ci/run)");
}

export interface RedisOptions {
  port?: number;
  dir?: string;
}

export async function startRedis(opts: RedisOptions = {}): Promise<ServerHandle> {
  const bin = process.env["NATSLAKE_REDIS_SERVER"] || "redis-server";
  const port = opts.port ?? (await freePort());
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "natslake-redis-"));
  // No persistence: a restart loses the fencing counter, which the design must (and does) tolerate.
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "yes"];
  return launch(bin, args, port, dir, `redis://127.0.0.1:${port}`, "install it with `apt-get install redis-server` (or run .ci/run)");
}
