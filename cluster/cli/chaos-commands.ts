/**
 * `natslake chaos run [scenario…] [--runs N] [--seed S] [--duration D] [--ci] [--s3] [--auth] [--tls] …` and `natslake chaos list`: start the
 * chaos suite's runner (chaos/main.ts) as a child process with inherited stdio — the product never imports chaos/.
 * Arguments are checked here first (a wrong one is reported at once, exit 2); the runner checks scenario names.
 * The exit code is the runner's: 0 when every run passed, 1 when one failed.
 */
import { REPO_ROOT } from "../repo-root.ts";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { InvalidArgumentError, type Command } from "commander";
import { parseDuration } from "../../src/options.ts";
import { CliError, UsageError, examples } from "./common.ts";

const CHAOS_MAIN = join(REPO_ROOT, "chaos", "main.ts");
const REPO = REPO_ROOT;

interface ChaosFlags {
  runs?: string;
  seed?: string;
  duration?: string;
  ci?: boolean;
  keep?: boolean;
  verbose?: boolean;
  natsServer?: string;
  reports?: string;
  s3?: boolean;
  auth?: boolean;
  tls?: boolean;
}

const check = (ok: (v: string) => boolean, message: string) => (v: string): string => {
  if (!ok(v)) throw new InvalidArgumentError(message.replace("%s", v));
  return v;
};

function durationOk(v: string): boolean {
  if (/^\s*\d+(\.\d+)?\s*$/.test(v)) return false;
  try {
    const ms = parseDuration(v);
    return ms >= 10_000 && ms <= 86_400_000;
  } catch {
    return false;
  }
}

/** Runs chaos/main.ts with `args`; resolves with its exit code (signals count as failures). */
function runChaos(args: string[]): Promise<number> {
  if (!existsSync(CHAOS_MAIN)) throw new UsageError(`the chaos suite is not part of this installation (${CHAOS_MAIN} is missing); run it from a checkout`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHAOS_MAIN, ...args], { cwd: REPO, stdio: "inherit", env: process.env });
    const forward = (sig: NodeJS.Signals): void => {
      child.kill(sig);
    };
    process.on("SIGINT", forward);
    process.on("SIGTERM", forward);
    child.once("error", (e) => reject(new Error(`cannot start the chaos runner: ${e.message}`)));
    child.once("exit", (code, signal) => {
      process.off("SIGINT", forward);
      process.off("SIGTERM", forward);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

async function finish(code: number): Promise<void> {
  if (code === 2) throw new UsageError("the chaos runner refused the arguments (see above)");
  if (code !== 0) throw new CliError(`chaos: not every run passed (runner exit code ${code}); the reports are under chaos-reports/`);
  await Promise.resolve();
}

export function registerChaosCommands(program: Command): void {
  const chaos = program.command("chaos").description("the chaos suite: faults injected into a local cluster, every acknowledged row checked (see README, Chaos suite)").addHelpText("after", examples("natslake chaos list", "natslake chaos run leader-kill --runs 2"));
  chaos
    .command("run")
    .description("run chaos scenarios (default: the full suite) and write a JSON report per run under chaos-reports/")
    .argument("[scenarios...]", "scenario names or prefixes (`natslake chaos list`)")
    .option("--runs <n>", "runs of each scenario", check((v) => /^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= 1000, "--runs must be an integer from 1 to 1000, got '%s'"))
    .option("--seed <s>", "seed of the first run (run i uses seed + i - 1)", check((v) => /^\d+$/.test(v) && Number(v) <= 2 ** 32 - 1, "--seed must be an integer from 0 to 4294967295, got '%s'"))
    .option("--duration <d>", "load duration per run, e.g. 90s or 5min", check(durationOk, "--duration must be a duration with a unit between 10s and 24h (e.g. 90s, 5min), got '%s'"))
    .option("--ci", "the CI subset when no names are given")
    .option("--keep", "keep the run directory and the logs even when the run passed")
    .option("--verbose", "print the run's events as they happen")
    .option("--nats-server <path>", "nats-server binary (default: the current one built by scripts/setup.sh, else Debian's)")
    .option("--reports <dir>", "where reports go (default chaos-reports)")
    .option("--s3", "the warehouse in S3: a SeaweedFS of each run's own (built by scripts/setup.sh) instead of a directory")
    .option("--auth", "users and least-privilege permissions on the servers (a NATS user per role, Redis ACL), every process connecting as its role; fails a run whose nats-servers logged a permission or authorization violation")
    .option("--tls", "mutual TLS on the servers (NATS client ports and routes, Redis; a CA and certificates made per run), every process connecting with the CA and a client certificate; fails a run whose nats-servers logged a refused TLS handshake; with --auth the NATS users sign in with nkeys instead of passwords")
    .addHelpText("after", examples("natslake chaos run writer-failpoints --runs 5 --seed 42", "natslake chaos run soak --duration 10min --seed 7 --verbose", "natslake chaos run --ci", "natslake chaos run leader-kill --auth", "natslake chaos run leader-kill --auth --tls"))
    .action(async (names: string[], o: ChaosFlags) => {
      const args = ["run", ...names];
      if (o.runs !== undefined) args.push("--runs", o.runs);
      if (o.seed !== undefined) args.push("--seed", o.seed);
      if (o.duration !== undefined) args.push("--duration", o.duration);
      if (o.ci) args.push("--ci");
      if (o.keep) args.push("--keep");
      if (o.verbose) args.push("--verbose");
      if (o.s3) args.push("--s3");
      if (o.auth) args.push("--auth");
      if (o.tls) args.push("--tls");
      // The runner works in the checkout: paths given here are relative to the caller's directory.
      if (o.natsServer !== undefined) args.push("--nats-server", o.natsServer.includes("/") ? resolve(o.natsServer) : o.natsServer);
      if (o.reports !== undefined) args.push("--reports", resolve(o.reports));
      await finish(await runChaos(args));
    });
  chaos
    .command("list")
    .description("list the chaos scenarios")
    .addHelpText("after", examples("natslake chaos list"))
    .action(async () => {
      await finish(await runChaos(["list"]));
    });
}
