/**
 * The `natslake` command line. Each command group lives in cluster/cli/; this file wires them and turns failures
 * into a one-line message on stderr and a non-zero exit code (2 = bad input, 3 = conflict, 1 = other).
 */
import { Command, CommanderError } from "commander";
import { describeFailure, exitCodeOf } from "./cli/common.ts";
import { registerDataCommands } from "./cli/data-commands.ts";
import { registerTailCommand } from "./cli/tail-command.ts";
import { registerStatusCommand } from "./cli/status-command.ts";
import { registerTableCommands } from "./cli/table-commands.ts";
import { registerClusterCommands } from "./cli/cluster-commands.ts";
import { registerChaosCommands } from "./cli/chaos-commands.ts";
import { registerMaintenanceCommands } from "./cli/maintenance-commands.ts";
import { registerConsumerCommands } from "./cli/consumer-commands.ts";
import { registerExpirePartitionsCommand } from "./cli/expire-partitions-command.ts";
import { registerRemoveOrphansCommand } from "./cli/remove-orphans-command.ts";
import { registerTagCommands } from "./cli/tag-commands.ts";
import { registerRollbackCommand } from "./cli/rollback-command.ts";
import { registerCompactCommand } from "./cli/compact-command.ts";

const out = (s: string): void => {
  process.stdout.write(s + "\n");
};

// `natslake read … | head`: once the reader of stdout is gone, the output is not wanted any more. Exit quietly
// (status 0, as the pipeline's reader chose to stop) instead of dying on an unhandled EPIPE with a stack.
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") process.exit(0);
  throw e;
});

export function buildProgram(): Command {
  const program = new Command("natslake")
    .description("natslake: rows published on NATS, landed as Apache Paimon tables")
    // Which code runs: the compiled build (dist/) or the TypeScript sources (bin/natslake.mjs decides and says so).
    .version(`0.1.0 (${process.env["NATSLAKE_RUNNING_FROM"] ?? "sources"})`)
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride();
  registerTableCommands(program, out);
  registerDataCommands(program, out);
  registerClusterCommands(program, out);
  registerMaintenanceCommands(program, out);
  registerConsumerCommands(program, out);
  registerTailCommand(program, out);
  registerStatusCommand(program, out);
  registerExpirePartitionsCommand(program, out);
  registerRemoveOrphansCommand(program, out);
  registerTagCommands(program, out);
  registerRollbackCommand(program, out);
  registerCompactCommand(program, out);
  registerChaosCommands(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander has printed its message already; help and version exit 0.
      return e.exitCode === 0 ? 0 : 2;
    }
    process.stderr.write(`error: ${describeFailure(e)}\n`);
    return exitCodeOf(e);
  }
}

process.exitCode = await main(process.argv);
