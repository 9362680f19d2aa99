/**
 * The chaos runner's command line (started by `natslake chaos run …`, `npm run chaos` and `npm run chaos:ci`):
 *
 *   node --import tsx chaos/main.ts run [scenario…] [--runs N] [--seed S] [--duration D] [--ci] [--keep] [--verbose]
 *                                        [--nats-server PATH] [--reports DIR] [--s3] [--auth] [--tls]
 *   node --import tsx chaos/main.ts list
 *
 * No scenario names: the full suite (or the CI subset with --ci). A name may be a prefix (`writer-kill` runs every
 * `writer-kill@<point>`). `--seed S` makes run i use seed S + i − 1 (otherwise a random seed per run, printed and in
 * the report). `--duration` is the load's duration per run (e.g. 90s, 5min; the soak's length). Exit code: 0 when
 * every run passed or was skipped (its setup says it cannot run on this machine), 1 when one failed, 2 for bad
 * arguments. `--auth`: the servers require users and least-privilege permissions, every process connects as its
 * role, and no nats-server may log a refusal (chaos/auth.ts, chaos/nats-violations.ts). `--tls`: the servers require
 * mutual TLS (NATS client ports and routes, Redis), every process connects with the run's CA and a client certificate,
 * and no nats-server may log a refused TLS handshake (chaos/tls.ts); the natural pairing is `--auth --tls`, where the
 * NATS users sign in with nkeys instead of passwords.
 */
import { Command, CommanderError, InvalidArgumentError } from "commander";
import { resolve } from "node:path";
import { parseDuration } from "../src/options.ts";
import { chooseNatsServer } from "./nats-choice.ts";
import { installCleanup } from "./procs.ts";
import { randomSeed } from "./prng.ts";
import { runScenario } from "./runner.ts";
import { loadScenarios, selectScenarios } from "./scenarios/index.ts";
import type { ChaosReport } from "./types.ts";

/** The run flags that make a variant of any scenario (named by `list`). */
const RUN_VARIANTS =
  "--s3 (the warehouse on S3), --auth (a NATS user per role with least-privilege permissions, Redis ACL; no permission violation may be logged) and --tls (mutual TLS on NATS and Redis; no refused handshake may be logged)";

/** A wrong command line found after parsing (unknown scenario names): printed, exit code 2. */
class UsageError extends Error {}

interface RunFlags {
  runs: number;
  seed?: number;
  duration?: number;
  ci?: boolean;
  keep?: boolean;
  verbose?: boolean;
  natsServer?: string;
  reports: string;
  s3?: boolean;
  auth?: boolean;
  tls?: boolean;
}

function parseRuns(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 1000) throw new InvalidArgumentError(`--runs must be an integer from 1 to 1000, got '${v}'`);
  return Number(v);
}

function parseSeed(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 2 ** 32 - 1) throw new InvalidArgumentError(`--seed must be an integer from 0 to 4294967295, got '${v}'`);
  return Number(v);
}

/** A duration with a unit (a bare number is ambiguous here), from 10 s to 24 h. */
function parseChaosDuration(v: string): number {
  if (/^\s*\d+(\.\d+)?\s*$/.test(v)) throw new InvalidArgumentError(`--duration needs a unit, e.g. 90s or 5min (got '${v}')`);
  let ms: number;
  try {
    ms = parseDuration(v);
  } catch {
    throw new InvalidArgumentError(`--duration '${v}' is not a duration (e.g. 90s, 5min, 1h)`);
  }
  if (ms < 10_000 || ms > 86_400_000) throw new InvalidArgumentError(`--duration must be between 10s and 24h, got '${v}'`);
  return ms;
}

async function main(argv: string[]): Promise<number> {
  const program = new Command("chaos").description("natslake's chaos suite").exitOverride().showHelpAfterError("(run with --help for usage)");
  let code = 0;
  program
    .command("list")
    .description("list the scenarios")
    .action(async () => {
      for (const s of await loadScenarios()) process.stdout.write(`${s.name.padEnd(40)} ${s.ci ? "[ci] " : ""}${s.suite === false ? "[by name] " : ""}${s.description}\n`);
      process.stdout.write(`\nEvery scenario also runs with ${RUN_VARIANTS}.\n`);
    });
  program
    .command("run")
    .description("run scenarios and write a JSON report per run")
    .argument("[scenarios...]", "scenario names or prefixes (default: the full suite)")
    .option("--runs <n>", "runs of each scenario", parseRuns, 1)
    .option("--seed <s>", "seed of the first run (run i uses seed + i - 1)", parseSeed)
    .option("--duration <d>", "load duration per run, e.g. 90s or 5min (default: the scenario's)", parseChaosDuration)
    .option("--ci", "the CI subset (one run of each failpoint kind) when no names are given")
    .option("--keep", "keep the run directory and copy the logs next to the report even when the run passed")
    .option("--verbose", "print the run's events as they happen")
    .option("--nats-server <path>", "nats-server binary (default: the current one built by scripts/setup.sh, else Debian's)")
    .option("--reports <dir>", "where reports go", "chaos-reports")
    .option("--s3", "the warehouse in an S3 bucket on a SeaweedFS of each run's own (built by scripts/setup.sh) instead of a directory")
    .option("--auth", "users and least-privilege permissions on the servers (a NATS user per role, Redis ACL), every process connecting as its role; no nats-server may log a refusal")
    .option("--tls", "mutual TLS on the servers (NATS client ports and routes, Redis; a CA and certificates made per run), every process connecting with the CA and a client certificate; no nats-server may log a refused handshake; with --auth the NATS users sign in with nkeys")
    .action(async (names: string[], o: RunFlags) => {
      const all = await loadScenarios();
      let selected;
      try {
        selected = selectScenarios(all, names, o.ci === true);
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
      if (selected.length === 0) throw new UsageError("no scenario selected");
      installCleanup();
      const nats = chooseNatsServer(o.natsServer);
      process.stdout.write(`chaos: ${selected.length} scenario(s) × ${o.runs} run(s) against ${nats.label}${o.s3 === true ? ", the warehouse on S3 (SeaweedFS)" : ""}${o.auth === true ? `, auth on (${o.tls === true ? "an nkey" : "a user and password"} per role)` : ""}${o.tls === true ? ", mutual TLS" : ""}\n\n`);
      const reports: ChaosReport[] = [];
      const t0 = Date.now();
      for (const s of selected) {
        for (let run = 1; run <= o.runs; run++) {
          const seed = o.seed === undefined ? randomSeed() : (o.seed + run - 1) % 2 ** 32;
          process.stdout.write(`── ${s.name}: run ${run}/${o.runs}, seed ${seed}, load ${((o.duration ?? s.defaultDurationMs) / 1000).toFixed(0)} s — ${s.description}\n`);
          reports.push(await runScenario({ scenario: s, seed, run, ...(o.duration !== undefined ? { durationMs: o.duration } : {}), nats, reportsDir: resolve(o.reports), keep: o.keep === true, verbose: o.verbose === true, s3: o.s3 === true, auth: o.auth === true, tls: o.tls === true }));
        }
      }
      const failed = reports.filter((r) => !r.ok && r.skipped === undefined);
      const skipped = reports.filter((r) => r.skipped !== undefined);
      process.stdout.write(
        `chaos: ${reports.length - failed.length - skipped.length}/${reports.length} runs passed${skipped.length > 0 ? `, ${skipped.length} skipped (cannot run on this machine)` : ""} in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`,
      );
      for (const r of reports) {
        const rec = r.faults.map((f) => f.effectiveRecoveryMs).filter((x): x is number => x !== undefined);
        process.stdout.write(
          `  ${r.skipped !== undefined ? "SKIP" : r.ok ? "PASS" : "FAIL"} ${r.scenario.padEnd(36)} seed ${String(r.seed).padEnd(10)} rows ${String(r.rows.found).padStart(7)}  lost ${r.lost}  dup ${r.duplicated}  reordered ${r.reordered}  faults ${r.faults.length}  max recovery ${rec.length ? (Math.max(...rec) / 1000).toFixed(1) + " s" : "-"}\n`,
        );
      }
      code = failed.length === 0 ? 0 : 1;
    });
  try {
    await program.parseAsync(argv);
    return code;
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`error: ${e.message}\n`);
      return 2;
    }
    // commander printed its own message already.
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    process.stderr.write(`chaos: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv);
