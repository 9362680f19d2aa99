/**
 * `natslake up` run by a test as a user runs it: its output collected, its children found with ps, every process it
 * started (and any a test started) killed at the end whatever happened (`killSeen`).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { waitFor } from "./cluster.ts";
import { pidAlive } from "./servers.ts";

export const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
export const REPO = fileURLToPath(new URL("../..", import.meta.url));
/** Every process a test saw (up's children included): killed by `killSeen` at the end. */
export const seen = new Set<number>();

/** SIGKILL to every process seen that still runs (a test file's `after`). */
export function killSeen(): void {
  for (const pid of seen) if (pidAlive(pid)) process.kill(pid, "SIGKILL");
}

/** The descendants of `pid` now (from ps), so that a cleanup reaches them even if `up` never printed their ids. */
export function descendants(pid: number): number[] {
  const rows = spawnSync("ps", ["-e", "-o", "pid=,ppid="], { encoding: "utf8" }).stdout.trim().split("\n").map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  const walk = (p: number): void => {
    for (const [child, parent] of rows) {
      if (parent === p) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

export interface Up {
  proc: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * `group`: `up` leads a process group of its own, so a test can signal the group as a terminal's Ctrl-C does.
 * `command`: how it is started (default `natslake up` itself; `npm run up` and a pasted line go through a shell).
 */
export function startUp(args: string[], group = false, command: [string, string[]] = [process.execPath, [BIN, "up", ...args]]): Up {
  const proc = spawn(command[0], command[1], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"], detached: group });
  seen.add(proc.pid!);
  let out = "";
  let err = "";
  proc.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  proc.stderr!.on("data", (b: Buffer) => (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => proc.once("exit", (code, signal) => r({ code, signal })));
  return { proc, out: () => out, err: () => err, exited };
}

/** Resolves with `up`'s exit, or throws after `ms` (the test then fails; the cleanup kills what is left). */
export async function exitWithin(up: Up, ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      up.exited,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`up did not exit within ${ms} ms after SIGINT:\n${up.out()}\n${up.err()}`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export const match = (up: Up, re: RegExp, what: string, ms: number): Promise<RegExpExecArray> =>
  waitFor(what, () => {
    for (const pid of descendants(up.proc.pid!)) seen.add(pid);
    const m = re.exec(up.out());
    if (m === null && up.proc.exitCode !== null) throw new Error(`up exited (${up.proc.exitCode}) before ${what}:\n${up.out()}\n${up.err()}`);
    return m ?? undefined;
  }, ms, 200).catch((e: unknown) => {
    throw new Error(`${String(e)}\n--- up's stdout ---\n${up.out()}\n--- stderr ---\n${up.err()}`);
  });

/** `up`'s children by what they run (found with ps, not from what `up` prints: the old `up` printed no pids). */
export function children(upPid: number): { nats: number; redis: number; nodes: Map<string, number> } {
  const rows = spawnSync("ps", ["-o", "pid=,args=", "--ppid", String(upPid)], { encoding: "utf8" }).stdout.trim().split("\n");
  const found = { nats: 0, redis: 0, nodes: new Map<string, number>() };
  for (const row of rows) {
    const m = /^\s*(\d+)\s+(.*)$/.exec(row);
    if (m === null) continue;
    const [pid, args] = [Number(m[1]), m[2]!];
    if (/nats-server/.test(args)) found.nats = pid;
    else if (/redis-server/.test(args)) found.redis = pid;
    else {
      const id = /--node-id (\S+)/.exec(args)?.[1];
      if (id !== undefined) found.nodes.set(id, pid);
    }
  }
  return found;
}

