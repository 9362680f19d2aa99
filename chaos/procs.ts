/**
 * Every process the chaos runner starts, by PID, so that all of them are stopped at the end — also when the runner
 * fails or is interrupted (the `exit` handler sends SIGCONT then SIGKILL to whatever is still registered).
 * Only PIDs registered here are ever signalled; nothing is stopped by name.
 */
const live = new Map<number, string>();

export function trackPid(pid: number | undefined, what: string): void {
  if (pid !== undefined) live.set(pid, what);
}

export function untrackPid(pid: number | undefined): void {
  if (pid !== undefined) live.delete(pid);
}

/** Sends SIGCONT (a paused process cannot die otherwise) and SIGKILL to every registered process that is alive. */
export function killTracked(): string[] {
  const killed: string[] = [];
  for (const [pid, what] of live) {
    try {
      process.kill(pid, 0);
    } catch {
      live.delete(pid);
      continue;
    }
    try {
      process.kill(pid, "SIGCONT");
      process.kill(pid, "SIGKILL");
      killed.push(`${what} (pid ${pid})`);
    } catch {
      // gone in the meantime
    }
    live.delete(pid);
  }
  return killed;
}

let installed = false;

/** Installs the last-resort cleanup (process exit, SIGINT, SIGTERM) once. */
export function installCleanup(): void {
  if (installed) return;
  installed = true;
  process.on("exit", () => {
    killTracked();
  });
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.on(sig, () => {
      const killed = killTracked();
      process.stderr.write(`chaos: ${sig}; stopped ${killed.length} processes\n`);
      process.exit(130);
    });
  }
}
