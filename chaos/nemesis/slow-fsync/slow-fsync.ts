/**
 * Slow fsync, two ways (dm-delay is not available here; see reliability.md §7):
 *
 * 1. An LD_PRELOAD shim (slowfsync.c, built with gcc on first use) for processes that sync through libc: a Node
 *    process (natslake node, `fs.fsync*`, `FileHandle.sync`, all via libuv), a C program. It sleeps before every
 *    `fsync`, `fdatasync` and `sync_file_range` of the process it is preloaded into, whatever file the call is
 *    for (the warehouse, logs, anything).
 *
 *      spawn("node", args, { env: { ...process.env, ...(await slowFsyncEnv(200)) } });   // fixed 200 ms
 *
 *      const ctl = await createSlowFsyncControl();     // adjustable while the process runs
 *      spawn("node", args, { env: { ...process.env, ...ctl.env } });
 *      await ctl.set(200); ...; await ctl.set(0); ...; await ctl.close();
 *
 *    It does NOT slow Go programs: nats-server (Debian 2.9.10 and a `go install`ed 2.12.x alike) issues the fsync
 *    system call directly, not through libc (measured: 20 JetStream publishes with `sync_interval: always` take
 *    the same time with and without the shim).
 *
 * 2. `attachSlowFsync(pid, ms)`: strace attached to a running process with `-e inject=…:delay_enter=…`. The kernel
 *    stops the process at each system call entry, so this works for any process, Go included (nats-server's
 *    JetStream fsync), and is healed by detaching. Costs a ptrace stop per system call while attached. Needs
 *    `strace` (apt) and ptrace rights (root).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, promises as fs, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { run, sleep } from "../run.ts";

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), "slowfsync.c");
const GCC_ARGS = ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra"];

/** Where built shims are cached: `NATSLAKE_CHAOS_CACHE`, else `~/.cache/natslake-chaos` (outside the repo). */
export function chaosCacheDir(): string {
  return process.env["NATSLAKE_CHAOS_CACHE"] || join(homedir(), ".cache", "natslake-chaos");
}

/**
 * Compiles slowfsync.c into `<cacheDir>/slowfsync.so` when it is missing or was built from another source or
 * compiler command (a `.stamp` file next to it holds their hash); returns the .so path. Concurrent callers are
 * safe: each compiles to its own temp name and renames into place.
 */
export async function buildSlowFsyncShim(opts: { cacheDir?: string; force?: boolean } = {}): Promise<string> {
  const dir = opts.cacheDir ?? chaosCacheDir();
  const so = join(dir, "slowfsync.so");
  const stamp = `${so}.stamp`;
  const source = readFileSync(SOURCE);
  const want = createHash("sha256").update(source).update(GCC_ARGS.join(" ")).digest("hex");
  if (!opts.force && existsSync(so) && existsSync(stamp) && readFileSync(stamp, "utf8") === want) return so;
  await fs.mkdir(dir, { recursive: true });
  const tmp = `${so}.${process.pid}.${Date.now()}.tmp`;
  try {
    await run("gcc", [...GCC_ARGS, "-o", tmp, SOURCE, "-ldl"], 60_000).catch((e: unknown) => {
      throw new Error(`cannot build the slow-fsync shim (is gcc installed? apt-get install gcc): ${e instanceof Error ? e.message : String(e)}`);
    });
    await fs.rename(tmp, so);
  } finally {
    await fs.rm(tmp, { force: true });
  }
  await fs.writeFile(stamp, want);
  return so;
}

/** Env vars that start a process with every fsync/fdatasync/sync_file_range delayed by `ms`. */
export async function slowFsyncEnv(ms: number, opts: { shimPath?: string } = {}): Promise<Record<string, string>> {
  checkMs(ms);
  const shim = opts.shimPath ?? (await buildSlowFsyncShim());
  return { LD_PRELOAD: shim, NATSLAKE_SLOW_FSYNC_MS: String(Math.round(ms)) };
}

export interface SlowFsyncControl {
  /** Start the process with these (merge into its env; see `combineEnv` for LD_PRELOAD). */
  readonly env: Record<string, string>;
  /** The file the shim reads the delay from on every call. */
  readonly file: string;
  /** Current delay in ms. */
  readonly ms: number;
  /** Takes effect at the next fsync of every process started with `env`. */
  set(ms: number): Promise<void>;
  /** Removes the control file (processes still running see no delay). */
  close(): Promise<void>;
}

/** A delay that can be changed while the process runs: the shim re-reads `file` on every call (~µs, next to a fsync). */
export async function createSlowFsyncControl(opts: { initialMs?: number; shimPath?: string } = {}): Promise<SlowFsyncControl> {
  const shim = opts.shimPath ?? (await buildSlowFsyncShim());
  const dir = mkdtempSync(join(tmpdir(), "natslake-slowfsync-"));
  const file = join(dir, "delay-ms");
  let current = 0;
  const set = async (ms: number): Promise<void> => {
    checkMs(ms);
    // Rename, so a concurrent reader sees the old or the new value, never an empty file.
    const tmp = `${file}.tmp`;
    await fs.writeFile(tmp, `${Math.round(ms)}\n`);
    await fs.rename(tmp, file);
    current = ms;
  };
  await set(opts.initialMs ?? 0);
  return {
    env: { LD_PRELOAD: shim, NATSLAKE_SLOW_FSYNC_FILE: file },
    file,
    get ms() {
      return current;
    },
    set,
    close: async () => {
      current = 0;
      rmSync(dir, { recursive: true, force: true });
      await Promise.resolve();
    },
  };
}

function checkMs(ms: number): void {
  if (!(ms >= 0) || !Number.isFinite(ms)) throw new RangeError(`the fsync delay must be a finite number >= 0 (got ${ms})`);
}

/** The system calls `attachSlowFsync` delays by default. */
export const SYNC_SYSCALLS = ["fsync", "fdatasync", "sync_file_range", "syncfs", "msync"] as const;

export interface SlowFsyncAttachment {
  readonly pid: number;
  readonly stracePid: number;
  readonly ms: number;
  /** Detaches strace (the process runs at full speed again). Idempotent; bounded (SIGKILL to strace after 5 s). */
  detach(): Promise<void>;
}

/**
 * Attaches strace to `pid` (all its threads) so each of `syscalls` is delayed by `ms` on entry; resolves once every
 * thread of the process is traced (bounded by `timeoutMs`). The process keeps running; `detach()` heals it.
 */
export async function attachSlowFsync(
  pid: number,
  ms: number,
  opts: { syscalls?: readonly string[]; timeoutMs?: number } = {},
): Promise<SlowFsyncAttachment> {
  checkMs(ms);
  const set = (opts.syscalls ?? SYNC_SYSCALLS).join(",");
  const args = ["-f", "-qq", "-p", String(pid), "-o", "/dev/null", "-e", `trace=${set}`, "-e", `inject=${set}:delay_enter=${Math.round(ms * 1000)}`];
  // strace runs in a process group of its own, and detaching signals the whole group and waits for the process's
  // exit (not for its stdio to close): once, in CI, a strace interrupted while starting left a forked copy of itself
  // paused with our stderr pipe open, and waiting for 'close' hung the run.
  const proc: ChildProcess = spawn("strace", args, { stdio: ["ignore", "ignore", "pipe"], detached: true });
  let stderr = "";
  proc.stderr?.on("data", (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
  let spawnFailure: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    proc.once("exit", () => resolve());
    proc.once("error", (e) => {
      spawnFailure = new Error(`cannot run strace (apt-get install strace): ${e.message}`);
      resolve();
    });
  });
  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-proc.pid!, signal);
    } catch {
      // the group is gone already
    }
  };
  const detach = async (): Promise<void> => {
    if (spawnFailure === undefined && proc.pid !== undefined) {
      if (proc.exitCode === null && proc.signalCode === null) {
        signalGroup("SIGTERM");
        const timer = setTimeout(() => signalGroup("SIGKILL"), 5000);
        await exited;
        clearTimeout(timer);
      }
      // Whatever strace left behind in its group (a forked copy) goes too.
      signalGroup("SIGKILL");
      proc.stderr?.destroy();
    }
  };
  try {
    await waitTraced(pid, proc, Date.now() + (opts.timeoutMs ?? 5000), () => spawnFailure, () => stderr);
  } catch (e) {
    await detach();
    throw e;
  }
  let detaching: Promise<void> | undefined;
  return {
    pid,
    stracePid: proc.pid!,
    ms,
    detach: () => (detaching ??= detach()),
  };
}

/** Waits until every thread of `pid` has `TracerPid` = strace's pid (from /proc/<pid>/task/<tid>/status). */
async function waitTraced(pid: number, proc: ChildProcess, deadline: number, failure: () => Error | undefined, stderr: () => string): Promise<void> {
  while (true) {
    const f = failure();
    if (f) throw f;
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`strace exited (${proc.exitCode ?? proc.signalCode}) before attaching to ${pid}: ${stderr().trim()}`);
    }
    if (proc.pid !== undefined && (await allThreadsTracedBy(pid, proc.pid))) return;
    if (Date.now() > deadline) throw new Error(`strace did not attach to every thread of ${pid} in time: ${stderr().trim()}`);
    await sleep(20);
  }
}

async function allThreadsTracedBy(pid: number, tracer: number): Promise<boolean> {
  let tids: string[];
  try {
    tids = await fs.readdir(`/proc/${pid}/task`);
  } catch {
    throw new Error(`process ${pid} does not exist`);
  }
  for (const tid of tids) {
    try {
      const status = await fs.readFile(`/proc/${pid}/task/${tid}/status`, "utf8");
      if (/^TracerPid:\s*(\d+)/m.exec(status)?.[1] !== String(tracer)) return false;
    } catch {
      // the thread exited meanwhile
    }
  }
  return tids.length > 0;
}
