/**
 * The `natslake` commander program: the command groups of cluster/cli/ (command-groups.ts) registered on one program.
 * Building it runs nothing, so a test can parse a command line with the real option parser (cluster/main.ts runs it).
 */
import { Command } from "commander";
import { NATSLAKE_VERSION } from "../version.ts";
import { installLazyRedisCommitLock } from "../redis/lazy-commit-lock.ts";
import { addConnectionFlags } from "./connection-flags.ts";
import { COMMAND_GROUPS, commandWordOf, groupOf } from "./command-groups.ts";

/**
 * The program; `out` receives each line a command prints on stdout. Given the command line's arguments (after the
 * executable and the script), only the group of its command is loaded — when the command word is one the program
 * knows; otherwise (no command, `--help`, a misspelt command that commander suggests the right one for) all of them.
 */
export async function buildProgram(out: (s: string) => void, args?: readonly string[]): Promise<Command> {
  // A warehouse URI with commit-lock=redis locks in the Redis NATSLAKE_REDIS names (src/io/commit-lock.ts); `natslake
  // node` registers its own --redis instead (cluster/node.ts).
  installLazyRedisCommitLock();
  const program = new Command("natslake")
    .description("natslake: rows published on NATS, landed as Apache Paimon tables")
    // Which code runs: the compiled build (dist/) or the TypeScript sources (bin/natslake.mjs decides and says so).
    .version(`${NATSLAKE_VERSION} (${process.env["NATSLAKE_RUNNING_FROM"] ?? "sources"})`)
    .showHelpAfterError("(run with --help for usage)")
    // A command's options are its own, written after it: `natslake node drain n2 --nats URL` gives --nats to drain,
    // not to `node` (which has a --nats of its own).
    .enablePositionalOptions()
    .exitOverride();
  const only = args === undefined ? undefined : groupOf(commandWordOf(args));
  const groups = only !== undefined ? [only] : COMMAND_GROUPS;
  const registers = await Promise.all(groups.map((g) => g.load()));
  for (const register of registers) register(program, out);
  addConnectionFlags(program);
  return program;
}
