/**
 * The `natslake` command line: parses process.argv with the command tree (cluster/cli/program.ts) and turns
 * failures into a one-line message on stderr and a non-zero exit code (2 = bad input, 3 = conflict, 1 = other).
 */
import { CommanderError, InvalidArgumentError } from "commander";
import { describeFailure, exitCodeOf } from "./cli/common.ts";
import { buildProgram } from "./cli/program.ts";

const out = (s: string): void => {
  process.stdout.write(s + "\n");
};

// `natslake read … | head`: once the reader of stdout is gone, the output is not wanted any more. Exit quietly
// (status 0, as the pipeline's reader chose to stop) instead of dying on an unhandled EPIPE with a stack.
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") process.exit(0);
  throw e;
});

export async function main(argv: string[]): Promise<number> {
  try {
    await (await buildProgram(out, argv.slice(2))).parseAsync(argv);
    return 0;
  } catch (e) {
    // commander has printed its message already (help and version exit 0).
    if (e instanceof CommanderError && !(e instanceof InvalidArgumentError)) return exitCodeOf(e);
    process.stderr.write(`error: ${describeFailure(e)}\n`);
    return exitCodeOf(e);
  }
}

process.exitCode = await main(process.argv);
