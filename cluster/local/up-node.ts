/**
 * One node process of `natslake up`, supervised: its output appended to its log, its death reported at once, and —
 * unless `restart` is off — started again, as a supervisor would (systemd's `Restart=on-failure`): after a death by a
 * signal or a non-zero exit, RESTART_DELAY_MS later, at most RESTARTS_PER_MINUTE times in any minute (a node that keeps
 * dying, e.g. on a bad setting, is then left down and said so, not restarted in a loop). An exit 0 outside a stop is
 * a node drained and told to exit (`natslake node drain <id> --exit`): reported, not restarted, not a failure.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../repo-root.ts";

const BIN = join(REPO_ROOT, "bin", "natslake.mjs");
/** Between a node's death and its restart (the others take its buckets over meanwhile). */
export const RESTART_DELAY_MS = 1000;
/** Restarts of one node in any minute, at most. */
export const RESTARTS_PER_MINUTE = 3;

/** At most `limit` restarts in any `windowMs`. */
export class RestartBudget {
  private readonly times: number[] = [];

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  /** Whether a restart at `now` is within the budget (it is then counted). */
  take(now: number): boolean {
    while (this.times.length > 0 && this.times[0]! <= now - this.windowMs) this.times.shift();
    if (this.times.length >= this.limit) return false;
    this.times.push(now);
    return true;
  }
}

export interface UpNodeOptions {
  id: string;
  /** `natslake node` flags. */
  args: string[];
  env: NodeJS.ProcessEnv;
  /** stdout and stderr of every run of it are appended here. */
  log: string;
  /** Start it again after a death (see the module's comment). */
  restart: boolean;
  out: (s: string) => void;
  /** It died (a signal, a non-zero exit) outside a stop, or failed its drain: what happened, for `up`'s exit. */
  onFailure: (what: string) => void;
  /** How many of `up`'s nodes run now (for the report of a death). */
  running: () => number;
}

const gone = (p: ChildProcess): boolean => p.exitCode !== null || p.signalCode !== null;

export class UpNode {
  private proc!: ChildProcess;
  private currentExit!: Promise<void>;
  private stopping = false;
  private pendingRestart: NodeJS.Timeout | null = null;
  private readonly budget = new RestartBudget(RESTARTS_PER_MINUTE, 60_000);

  constructor(private readonly o: UpNodeOptions) {
    this.spawn();
  }

  get id(): string {
    return this.o.id;
  }

  get log(): string {
    return this.o.log;
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  get running(): boolean {
    return !gone(this.proc);
  }

  /** The exit of its current process (a restart pending: resolved). */
  get exited(): Promise<void> {
    return this.currentExit;
  }

  /** No more restarts; a running process gets SIGTERM (it drains, then exits). False when none was running. */
  drain(): boolean {
    this.stopping = true;
    if (this.pendingRestart !== null) clearTimeout(this.pendingRestart);
    this.pendingRestart = null;
    if (!this.running) return false;
    this.proc.kill("SIGTERM");
    return true;
  }

  /** SIGKILL to the running process (a drain that did not end in time). */
  kill(): void {
    if (this.running) this.proc.kill("SIGKILL");
  }

  private spawn(): void {
    const fd = openSync(this.o.log, "a");
    let proc: ChildProcess;
    try {
      proc = spawn(process.execPath, [BIN, "node", ...this.o.args], { stdio: ["ignore", fd, fd], env: this.o.env });
    } finally {
      closeSync(fd);
    }
    this.proc = proc;
    this.currentExit = new Promise<void>((resolve) =>
      proc.once("exit", (code, signal) => {
        resolve();
        this.onExit(code, signal);
      }),
    );
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    const { id, log, out } = this.o;
    const what = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
    if (this.stopping) {
      // Drained (exit 0), or killed by the stop's bound (said so there); a failed drain is a failure.
      if (signal === null && code !== 0) {
        out(`node ${id} ${what} while draining (log: ${log})`);
        this.o.onFailure(`node ${id} ${what}`);
      }
      return;
    }
    if (signal === null && code === 0) {
      out(`node ${id} exited with code 0 (drained with \`natslake node drain ${id} --exit\`?): not restarted (log: ${log})`);
      return;
    }
    // A Ctrl-C at the terminal reaches the whole process group: a node still loading its code (before its own handler
    // drains on SIGINT) dies of it, and its exit may be seen before `up`'s own handler has run. A stop, not a failure.
    if (signal === "SIGINT") {
      this.stopping = true;
      out(`node ${id} stopped by Ctrl-C while it was starting (log: ${log})`);
      return;
    }
    this.o.onFailure(`node ${id} ${what}`);
    if (this.o.restart && this.budget.take(Date.now())) {
      out(`node ${id} ${what} (log: ${log}); restarting it in ${RESTART_DELAY_MS / 1000} s`);
      this.pendingRestart = setTimeout(() => {
        this.pendingRestart = null;
        if (this.stopping) return;
        this.spawn();
        out(`node ${id} restarted (pid ${this.proc.pid})`);
      }, RESTART_DELAY_MS);
      return;
    }
    const left = this.o.running();
    const why = this.o.restart ? `restarted ${RESTARTS_PER_MINUTE} times in the last minute: not restarted again` : "not restarted (--no-restart)";
    const rest = left > 0 ? `${left} node(s) still running take over its buckets` : "none of up's nodes is left; NATS and Redis keep running (for nodes you start by hand)";
    out(`node ${id} ${what} (log: ${log}); ${why}; ${rest}; Ctrl-C stops the cluster`);
  }
}
