/**
 * Which module registers each top-level command, loaded on demand. `natslake tag create …` needs the tag commands
 * and what they import — not the node, the metrics SDK, Redis or the S3 client — and a CLI call that loads only its
 * own group starts in about half the time (every module loaded costs CPU at each start; a test run starts the CLI
 * hundreds of times, an operator's script as often). program.ts builds the whole tree (help, docs, tests) from the
 * same table, so the two cannot disagree on which commands exist (test/cli/command-groups.test.ts checks that each
 * group's tree is the whole program's).
 */
import type { Command } from "commander";

/** A command group's registration: adds its commands to the program; `out` receives each line a command prints. */
export type RegisterCommands = (program: Command, out: (s: string) => void) => void;

export interface CommandGroup {
  /** The top-level command names the group registers. */
  readonly names: readonly string[];
  readonly load: () => Promise<RegisterCommands>;
}

/** In the order of `natslake --help`. */
export const COMMAND_GROUPS: readonly CommandGroup[] = [
  { names: ["table", "snapshots"], load: async () => (await import("./table-commands.ts")).registerTableCommands },
  { names: ["write", "read"], load: async () => (await import("./data-commands.ts")).registerDataCommands },
  { names: ["get"], load: async () => (await import("./get-command.ts")).registerGetCommand },
  { names: ["node", "up", "publish", "subscribe"], load: async () => (await import("./cluster-commands.ts")).registerClusterCommands },
  { names: ["expire-snapshots"], load: async () => (await import("./maintenance-commands.ts")).registerMaintenanceCommands },
  { names: ["consumer"], load: async () => (await import("./consumer-commands.ts")).registerConsumerCommands },
  { names: ["tail"], load: async () => (await import("./tail-command.ts")).registerTailCommand },
  { names: ["status"], load: async () => (await import("./status-command.ts")).registerStatusCommand },
  { names: ["expire-partitions"], load: async () => (await import("./expire-partitions-command.ts")).registerExpirePartitionsCommand },
  { names: ["remove-orphans"], load: async () => (await import("./remove-orphans-command.ts")).registerRemoveOrphansCommand },
  { names: ["tag"], load: async () => (await import("./tag-commands.ts")).registerTagCommands },
  { names: ["rollback"], load: async () => (await import("./rollback-command.ts")).registerRollbackCommand },
  { names: ["compact"], load: async () => (await import("./compact-command.ts")).registerCompactCommand },
  { names: ["dlq"], load: async () => (await import("./dlq-commands.ts")).registerDlqCommands },
  { names: ["doctor"], load: async () => (await import("./doctor-command.ts")).registerDoctorCommand },
  { names: ["chaos"], load: async () => (await import("./chaos-commands.ts")).registerChaosCommands },
];

/**
 * The command word of a command line (`natslake [--version|--help] <command> …`): the first argument that is not an
 * option. The root program has no option that takes a value, so nothing else can come first.
 */
export function commandWordOf(args: readonly string[]): string | undefined {
  return args.find((a) => !a.startsWith("-"));
}

/** The group that registers `word`, if any. */
export function groupOf(word: string | undefined): CommandGroup | undefined {
  return word === undefined ? undefined : COMMAND_GROUPS.find((g) => g.names.includes(word));
}
