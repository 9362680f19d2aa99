/**
 * The chaos runner (chaos/main.ts) as a test starts it: its own process, its output collected, stopped with SIGTERM
 * past `budgetMs` or when the test runner ends the file (the runner then stops every process it started; otherwise it
 * would run on, orphaned, with its servers).
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** Where tests put their chaos reports: kept, as `npm run chaos`'s are (a failed run's logs are next to its report). */
export function chaosReportsDir(label: string): string {
  return join(REPO, "chaos-reports", `${label}-${new Date().toISOString().replace(/[:.]/g, "-")}`);
}

/** Runs `chaos/main.ts <args>`; resolves with its exit code and everything it printed. */
export async function runChaosRunner(args: string[], budgetMs: number): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO, "chaos/main.ts"), ...args], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out += b.toString()));
  const timer = setTimeout(() => child.kill("SIGTERM"), budgetMs);
  const onTerm = (): void => {
    child.kill("SIGTERM");
    process.exit(143);
  };
  process.once("SIGTERM", onTerm);
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  process.off("SIGTERM", onTerm);
  clearTimeout(timer);
  return { code, out };
}
