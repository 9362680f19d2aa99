/**
 * The `natslake` commander program: every command group of cluster/cli/ registered on one program. Building it runs
 * nothing, so a test can parse a command line with the real option parser (cluster/main.ts runs it).
 */
import { Command } from "commander";
import { registerDataCommands } from "./data-commands.ts";
import { registerTailCommand } from "./tail-command.ts";
import { registerStatusCommand } from "./status-command.ts";
import { registerTableCommands } from "./table-commands.ts";
import { registerClusterCommands } from "./cluster-commands.ts";
import { registerChaosCommands } from "./chaos-commands.ts";
import { registerMaintenanceCommands } from "./maintenance-commands.ts";
import { registerConsumerCommands } from "./consumer-commands.ts";
import { registerExpirePartitionsCommand } from "./expire-partitions-command.ts";
import { registerRemoveOrphansCommand } from "./remove-orphans-command.ts";
import { registerTagCommands } from "./tag-commands.ts";
import { registerRollbackCommand } from "./rollback-command.ts";
import { registerCompactCommand } from "./compact-command.ts";
import { registerDlqCommands } from "./dlq-commands.ts";
import { registerDoctorCommand } from "./doctor-command.ts";
import { NATSLAKE_VERSION } from "../version.ts";
import { installRedisCommitLock } from "../redis/commit-lock.ts";
import { addConnectionFlags } from "./connection-flags.ts";

/** The program; `out` receives each line a command prints on stdout. */
export function buildProgram(out: (s: string) => void): Command {
  // A warehouse URI with commit-lock=redis locks in the Redis NATSLAKE_REDIS names (src/io/commit-lock.ts); `natslake
  // node` registers its own --redis instead (cluster/node.ts).
  installRedisCommitLock();
  const program = new Command("natslake")
    .description("natslake: rows published on NATS, landed as Apache Paimon tables")
    // Which code runs: the compiled build (dist/) or the TypeScript sources (bin/natslake.mjs decides and says so).
    .version(`${NATSLAKE_VERSION} (${process.env["NATSLAKE_RUNNING_FROM"] ?? "sources"})`)
    .showHelpAfterError("(run with --help for usage)")
    // A command's options are its own, written after it: `natslake node drain n2 --nats URL` gives --nats to drain,
    // not to `node` (which has a --nats of its own).
    .enablePositionalOptions()
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
  registerDlqCommands(program, out);
  registerDoctorCommand(program, out);
  registerChaosCommands(program);
  addConnectionFlags(program);
  return program;
}
