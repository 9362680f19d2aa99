/**
 * What every CLI command shares: resolving the warehouse (flag > NATSLAKE_WAREHOUSE; a directory or an
 * `s3://bucket/prefix` URI, see src/io/warehouse.ts), turning errors into a clear
 * message and a non-zero exit code, and small output helpers.
 */
import { statSync } from "node:fs";
import { CommanderError, InvalidArgumentError } from "commander";
import type { ConnectionOptions, NatsConnection } from "@nats-io/transport-node";
import { ConnectionSettingsError, type NatsAuthSettings } from "../nats/connect-options.ts";
import { connectNats, NatsConnectError } from "../nats/connect.ts";
import { redactUrlsIn } from "../nats/connect-errors.ts";
import { natsAuthFlags } from "./connection-flags.ts";
import { ErrorKind, isLakeError, LakeError } from "../../src/errors.ts";
import { Catalog } from "../../src/table/catalog.ts";
import { isObjectStoreUri } from "../../src/io/warehouse.ts";
import { toJsonText } from "../../src/format/values.ts";
import { parseDuration } from "../../src/options.ts";

/** The `--warehouse` flag every command that takes a warehouse declares (with {@link WAREHOUSE_HELP}). */
export const WAREHOUSE_FLAG = "--warehouse <dir|s3://bucket/prefix>";
/** Its help text: a directory or an object-store URI (src/io/warehouse.ts), credentials never on the command line. */
export const WAREHOUSE_HELP = "warehouse: a directory or s3://bucket/prefix[?endpoint=…] (credentials from the AWS environment); or NATSLAKE_WAREHOUSE";

export interface WarehouseOpts {
  warehouse?: string;
}

/**
 * The catalog of the warehouse the command names. Commands that only read or change existing tables pass
 * `mustExist`: a warehouse that is not there is said to be missing (exit 2), not shown as an empty one. `table create`
 * makes the warehouse directory when it is missing.
 */
export function catalogFrom(opts: WarehouseOpts, { mustExist = false }: { mustExist?: boolean } = {}): Catalog {
  const wh = opts.warehouse ?? process.env["NATSLAKE_WAREHOUSE"];
  if (!wh) throw new UsageError("no warehouse: pass --warehouse <dir|s3://bucket/prefix> or set NATSLAKE_WAREHOUSE");
  const catalog = new Catalog(wh);
  // An object-store warehouse is checked by its first request (a missing bucket is named then): a prefix has no
  // existence of its own to check here.
  if (mustExist && !isObjectStoreUri(wh)) {
    let st: ReturnType<typeof statSync> | undefined;
    try {
      st = statSync(catalog.warehouse);
    } catch (e) {
      if (errnoCode(e) !== "ENOENT" && errnoCode(e) !== "ENOTDIR") throw e;
    }
    if (st === undefined) throw new LakeError(ErrorKind.NotFound, `warehouse ${catalog.warehouse} does not exist (check --warehouse / NATSLAKE_WAREHOUSE; 'table create' makes it)`);
    if (!st.isDirectory()) throw new LakeError(ErrorKind.NotFound, `warehouse ${catalog.warehouse} is not a directory`);
  }
  return catalog;
}

/** The errno code (`EROFS`, `EPIPE`, …) of an error or of the first cause in its chain that has one. */
export function errnoCode(e: unknown): string | undefined {
  for (let x: unknown = e, depth = 0; x instanceof Error && depth < 8; x = x.cause, depth++) {
    const code = (x as NodeJS.ErrnoException).code;
    if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return code;
  }
  return undefined;
}

/** What a command that talks to a cluster is given: the URL(s) and the credential and TLS flags (nats-auth-flags.ts). */
export type NatsTarget = { nats: string } & NatsAuthSettings;

/**
 * Connects to NATS with the command's credential and TLS flags (over the NATSLAKE_NATS_* environment), or throws a
 * CliError (exit code 1, no stack): `cannot reach NATS at <url>: <reason>`, or `cannot connect to NATS at <url>: …`
 * naming a refusal (no or wrong credentials, an untrusted certificate, TLS on one side only) — the URL's password
 * never printed. A credential file that cannot be read is bad input (exit 2). For every command that talks to a
 * cluster (`table create --nats`, `publish`, `subscribe`, `status`, `up --nats`, …). `timeout` bounds the initial
 * connection attempt (a host that accepts TCP but speaks no NATS).
 */
export async function connectOrExplain(target: NatsTarget, opts: Omit<ConnectionOptions, "servers"> = {}): Promise<NatsConnection> {
  try {
    return await connectNats(target.nats, natsAuthFlags(target), { timeout: 5000, ...opts });
  } catch (e) {
    if (e instanceof ConnectionSettingsError) throw new UsageError(e.message, { cause: e });
    if (e instanceof NatsConnectError) throw new CliError(e.message, { cause: e });
    throw e;
  }
}

/**
 * The exit codes of `natslake` and what each means: scripts may rely on them (docs/reference/exit-codes.md is
 * written from this table).
 */
export const EXIT = {
  ok: {
    code: 0,
    meaning:
      "the command did what it was asked; also `--help` and `--version`, and a command whose output's reader went away (`natslake read … | head`)",
  },
  failure: {
    code: 1,
    meaning:
      "the command failed for a reason other than its input: a filesystem, object-store or network error, NATS or Redis not reachable, rows `publish` could not get acknowledged, letters `dlq replay` did not replay, a drain that timed out (`node drain`; a node whose own shutdown did not finish), a node of `up` that died, a chaos run that failed, a table in which `doctor` found a problem — or a bug, printed with its stack",
  },
  usage: {
    code: 2,
    meaning:
      "bad input, nothing done about it: a wrong command line (an unknown command or option, a missing or malformed argument), invalid data (a row, a file, an option value, a node setting), a table, warehouse, tag or snapshot that does not exist or already exists, a feature natslake does not support",
  },
  conflict: {
    code: 3,
    meaning: "a conflict: a concurrent commit changed what this one depended on (an overwrite raced a write); running the command again may succeed",
  },
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT]["code"];

/** The exit code of a library error, by its kind (every kind has one: the type says so). */
export const EXIT_CODE_OF_KIND: Readonly<Record<ErrorKind, ExitCode>> = {
  [ErrorKind.DataInvalid]: EXIT.usage.code,
  [ErrorKind.NotFound]: EXIT.usage.code,
  [ErrorKind.AlreadyExists]: EXIT.usage.code,
  [ErrorKind.Unsupported]: EXIT.usage.code,
  [ErrorKind.Conflict]: EXIT.conflict.code,
  [ErrorKind.CommitRace]: EXIT.failure.code,
  [ErrorKind.Fenced]: EXIT.failure.code,
  [ErrorKind.Io]: EXIT.failure.code,
  [ErrorKind.Unexpected]: EXIT.failure.code,
};

/** An expected failure with a complete message (printed without a stack; exit code 1 unless given). */
export class CliError extends Error {
  override readonly name = "CliError";
  readonly exitCode: number;
  constructor(message: string, opts: { cause?: unknown; exitCode?: ExitCode } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.exitCode = opts.exitCode ?? EXIT.failure.code;
  }
}

/**
 * The one line a failed command prints: the message of an error that explains itself (LakeError, UsageError,
 * CliError, a filesystem errno such as EROFS or EACCES); a stack only for the unexpected (a bug).
 */
export function describeFailure(e: unknown): string {
  // A URL's password may be in any message (a connection string in an error): it is never printed.
  return redactUrlsIn(unredactedFailure(e));
}

function unredactedFailure(e: unknown): string {
  if (isLakeError(e) || e instanceof UsageError || e instanceof CliError || e instanceof InvalidArgumentError) return e.message;
  if (e instanceof NatsConnectError || e instanceof ConnectionSettingsError) return e.message;
  if (e instanceof Error && errnoCode(e) !== undefined && (e as NodeJS.ErrnoException).syscall !== undefined) return e.message;
  return e instanceof Error ? (e.stack ?? e.message) : String(e);
}

/** A wrong command line: printed without a stack, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/**
 * The exit code of a failed command ({@link EXIT}): 2 for bad input (arguments, data, names), 3 for a conflict, 1 for
 * everything else. A CommanderError is commander's own (it printed its message): 0 after help and version, else 2.
 */
export function exitCodeOf(e: unknown): number {
  if (e instanceof CliError) return e.exitCode;
  // InvalidArgumentError is a CommanderError too: an argument parser refused a value.
  if (e instanceof UsageError || e instanceof InvalidArgumentError || e instanceof ConnectionSettingsError) return EXIT.usage.code;
  if (e instanceof CommanderError) return e.exitCode === 0 ? EXIT.ok.code : EXIT.usage.code;
  if (isLakeError(e)) return EXIT_CODE_OF_KIND[e.kind];
  return EXIT.failure.code;
}

export function parsePositiveInt(what: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v) || Number(v) <= 0) throw new InvalidArgumentError(`${what} must be a positive integer, got '${v}'`);
    return Number(v);
  };
}

export function parseNonNegativeInt(what: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v)) throw new InvalidArgumentError(`${what} must be a non-negative integer, got '${v}'`);
    return Number(v);
  };
}

/** `--at` accepts ISO-8601 text or epoch milliseconds. */
export function parseTime(v: string): number {
  if (/^\d+$/.test(v)) return Number(v);
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) throw new InvalidArgumentError(`'${v}' is not a time (use ISO-8601 such as 2026-01-31T12:00:00Z, or epoch milliseconds)`);
  return ms;
}

/** `--option key=value`, repeatable. */
export function collectKeyValue(v: string, acc: Record<string, string>): Record<string, string> {
  const i = v.indexOf("=");
  if (i <= 0) throw new InvalidArgumentError(`option '${v}' must have the form key=value`);
  acc[v.slice(0, i).trim()] = v.slice(i + 1).trim();
  return acc;
}

/** Renders rows as an aligned text table. */
export function renderTable(columns: string[], rows: unknown[][]): string {
  const cell = (v: unknown): string => (v === null || v === undefined ? "NULL" : typeof v === "object" ? toJsonText(v) : Object.is(v, -0) ? "-0.0" : String(v));
  const cells = rows.map((r) => r.map(cell));
  const widths = columns.map((c, i) => Math.min(60, Math.max(c.length, ...cells.map((r) => r[i]!.length))));
  const fit = (s: string, w: number): string => (s.length > w ? s.slice(0, w - 1) + "…" : s.padEnd(w));
  const line = (vals: string[]): string => vals.map((v, i) => fit(v, widths[i]!)).join(" | ").trimEnd();
  return [line(columns), widths.map((w) => "-".repeat(w)).join("-+-"), ...cells.map(line)].join("\n");
}

/**
 * The "Example(s):" block at the end of a command's --help: whole command lines, each one parsed by the real CLI in
 * test/cli/help-examples.test.ts (a `  # comment` after two spaces is allowed).
 */
export function examples(...lines: string[]): string {
  return `\nExample${lines.length > 1 ? "s" : ""}:\n${lines.map((l) => `  ${l}`).join("\n")}\n`;
}

/** A commander argument parser for durations (`30 s`, `10 min`, `7 d`, or milliseconds). */
export function durationArg(v: string): number {
  try {
    return parseDuration(v);
  } catch {
    throw new InvalidArgumentError(`not a duration: '${v}' (e.g. 30 s, 10 min, 1 h, 7 d)`);
  }
}
