/**
 * exit-codes.md: the exit codes of `natslake` (EXIT in cluster/cli/common.ts), and the code each kind of failure gets,
 * computed by the CLI's own exitCodeOf from an error of that kind — what a script can expect, as the code decides it.
 */
import { CommanderError, InvalidArgumentError } from "commander";
import { CliError, EXIT, exitCodeOf, UsageError } from "../../cluster/cli/common.ts";
import { ERROR_KIND_MEANING, ErrorKind, LakeError } from "../../src/errors.ts";
import { banner, code, page, prose, table } from "./markdown.ts";

/** The errors a command ends with besides the library's own (LakeError, by kind, below). */
const FAILURES: ReadonlyArray<{ error: unknown; what: string }> = [
  { error: new CommanderError(1, "commander.unknownOption", ""), what: "commander refused the command line (an unknown command or option, a missing argument or required option); its message is printed" },
  { error: new CommanderError(0, "commander.helpDisplayed", ""), what: "`--help`, `--version` (commander ends the command after printing them)" },
  { error: new InvalidArgumentError(""), what: "an option's or argument's value is malformed (a number, a duration, a time, a key=value pair)" },
  { error: new UsageError(""), what: "a command line or a setting that is wrong in a way the command checks itself (`UsageError`), e.g. no warehouse, a bad node setting" },
  { error: new CliError(""), what: "an expected failure with a complete message (`CliError`): NATS not reachable, rows not acknowledged, letters not replayed, a drain that timed out, a failed chaos run" },
  { error: new Error(""), what: "anything else: an unexpected error, printed with its stack (a bug: please report it)" },
];

export function exitCodesPage(): string {
  const codes = Object.values(EXIT).map((e) => [code(String(e.code)), prose(e.meaning)]);
  const failures = FAILURES.map((f) => [prose(f.what), code(String(exitCodeOf(f.error)))]);
  const kinds = Object.values(ErrorKind).map((k) => [code(k), code(String(exitCodeOf(new LakeError(k, "")))), prose(ERROR_KIND_MEANING[k])]);
  return page(
    banner("Exit codes", ["the CLI's exit code table and exitCodeOf (cluster/cli/common.ts)"]),
    prose(
      "A `natslake` command that fails prints one line on stderr, `error: <what went wrong>` (a stack only for a bug), and exits with one of these codes:",
    ),
    table(["Code", "Meaning"], codes),
    "## Which failure gets which code",
    table(["Failure", "Code"], failures),
    prose("Errors of the table library (`LakeError`) get their code by their kind:"),
    table(["Kind", "Code", "Meaning"], kinds),
    "## Long-running commands",
    prose(
      "`natslake node` exits 0 after a drain that finished (SIGTERM, SIGINT, or `natslake node drain --exit`) and 1 when its drain failed or did not finish within its `drainTimeout` plus 10 s. `natslake up` exits 1 when one of its nodes died during the run. `natslake chaos` exits 1 when a run failed and 2 when the runner refused its arguments. A command whose output's reader went away (`natslake read … | head`) exits 0.",
    ),
  );
}
