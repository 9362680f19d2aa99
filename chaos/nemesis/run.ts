/**
 * Small helpers the nemeses share: running a system command with a deadline, and bounding a promise in time.
 */
import { execFile } from "node:child_process";

export interface CommandResult {
  stdout: string;
  stderr: string;
}

/** Thrown when a command fails; `message` carries the command, the exit status and stderr. */
export class CommandError extends Error {
  override readonly name = "CommandError";
  constructor(
    message: string,
    readonly code: number | string | null,
    readonly stderr: string,
  ) {
    super(message);
  }
}

/** Runs `cmd args` (no shell) and resolves with its output, or rejects with a CommandError; killed after `timeoutMs`. */
export function run(cmd: string, args: readonly string[], timeoutMs = 15_000): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      if (!err) {
        resolve({ stdout, stderr });
        return;
      }
      const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null };
      const code = typeof e.code === "number" || typeof e.code === "string" ? e.code : null;
      const why =
        e.code === "ENOENT"
          ? "not found on PATH"
          : e.killed
            ? `killed after ${timeoutMs} ms`
            : `exit ${String(code)}${e.signal ? ` (${e.signal})` : ""}`;
      reject(new CommandError(`${[cmd, ...args].join(" ")}: ${why}${stderr.trim() ? `: ${stderr.trim()}` : ""}`, code, stderr));
    });
  });
}

/** Resolves or rejects like `p`, or rejects after `ms` with a message naming `what`. */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
