/**
 * The commands `natslake up` prints for the user to try next. Each one works when pasted as printed in the
 * repository folder while the cluster runs (test/cli/up-cli.test.ts runs every one of them):
 * - `npx natslake …`: the package's bin, which npx finds in the checkout (and in a project that installed the
 *   package) — a bare `natslake` is on no PATH after `npm run up`;
 * - this run's real URLs and paths, shell-quoted where they need it;
 * - no trailing `# comment` (an interactive zsh passes it on as arguments); what a command does is in its label;
 * - an example or a sample file only when the folder has it (an installed package ships no examples/), and the
 *   Python examples only when the checkout's .venv exists (scripts/setup.sh makes it): they need its packages.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { NATS_AUTH_ENV, type NatsAuthKey, type NatsAuthSettings } from "../nats/connect-options.ts";
import { connectionArgs } from "./connection-flags.ts";

export interface GuideInput {
  natsUrl: string;
  /** The warehouse the nodes use (an s3:// URI carries its endpoint). */
  warehouse: string;
  /** For an `--s3` run: the file with the credentials, sourced before a command that reads the warehouse. */
  s3EnvFile?: string;
  /** The package's root: where examples/ and .venv are looked for. */
  root: string;
  /** The NATS credential and TLS flags `up` was given (file names and a user name: no secret), for its commands too. */
  natsAuth?: NatsAuthSettings;
}

/** The table the examples default to, which `up --demo` creates (examples/typescript/producer.ts creates it too). */
export const EXAMPLE_TABLE = "demo.events";

/** `s` as one shell word: as it is when it needs no quoting, else single-quoted. */
export function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

const line = (label: string, command: string): string => `  ${`${label}:`.padEnd(19)} ${command}`;

/** `npx natslake read` and the like need the S3 credentials in their environment on an `--s3` run. */
function withWarehouse(g: GuideInput, command: string): string {
  return `${g.s3EnvFile !== undefined ? `source ${shellQuote(g.s3EnvFile)} && ` : ""}${command} --warehouse ${shellQuote(g.warehouse)}`;
}

/** `--nats URL` and the credential flags `up` was given: a pasted command logs in as `up`'s nodes do. */
function natsFlags(g: GuideInput): string {
  return [`--nats ${shellQuote(g.natsUrl)}`, ...connectionArgs(g.natsAuth ?? {}).map(shellQuote)].join(" ");
}

/** The examples take their credentials from the environment only: the same settings as NATSLAKE_NATS_* assignments. */
function natsEnvPrefix(g: GuideInput): string {
  return Object.entries(g.natsAuth ?? {})
    .filter(([, v]) => v !== undefined && v !== false)
    .map(([k, v]) => `${NATS_AUTH_ENV[k as NatsAuthKey]}=${shellQuote(String(v))} `)
    .join("");
}

/** A first table of the user's own: create, publish a sample file, read, watch, status. */
export function tryCommands(g: GuideInput): string[] {
  const nats = natsFlags(g);
  const sample = "examples/data/events.jsonl";
  const lines = [
    "try it (paste these in the repository folder while the cluster runs; Ctrl-C here stops it):",
    line("create a table", `npx natslake table create db.events ${nats} --columns "id BIGINT NOT NULL, msg STRING" --option bucket=4 --option bucket-key=id`),
  ];
  if (existsSync(join(g.root, sample))) lines.push(line("publish rows", `npx natslake publish db.events ${sample} ${nats} --wait-visible`));
  lines.push(
    line("read the table", withWarehouse(g, "npx natslake read db.events")),
    line("watch snapshots", `npx natslake subscribe db.events ${nats}`),
    line("cluster status", withWarehouse(g, `npx natslake status ${nats}`)),
  );
  return lines;
}

/** After `up --demo`: its rows. */
export function demoReadCommand(g: GuideInput): string {
  return line("read them", `${withWarehouse(g, `npx natslake read ${EXAMPLE_TABLE}`)} --limit 5`);
}

/** The examples under examples/, on the demo table, with this run's URL and warehouse. */
export function exampleCommands(g: GuideInput): string[] {
  if (!existsSync(join(g.root, "examples", "typescript"))) return [];
  const nats = `--nats ${shellQuote(g.natsUrl)}`;
  const table = `--table ${EXAMPLE_TABLE}`;
  const env = natsEnvPrefix(g);
  const tsx = `${env}npx tsx --conditions=development examples/typescript`;
  const lines = [
    `examples (examples/; how each works is at its top), on ${EXAMPLE_TABLE}:`,
    line("producer (TS)", `${tsx}/producer.ts ${nats} ${table}`),
    line("consumer (TS)", `${tsx}/consumer.ts ${nats} ${table} --consumer-id example`),
  ];
  if (!existsSync(join(g.root, ".venv", "bin", "python"))) {
    lines.push("  the Python examples (examples/python/) need the packages of examples/python/requirements.txt: scripts/setup.sh makes .venv with them");
    return lines;
  }
  const py = `${env}.venv/bin/python examples/python`;
  lines.push(
    line("publisher (Py)", `${py}/publish.py ${nats} ${table} < examples/data/events.jsonl`),
    line("consumer (Py)", `${py}/consume.py ${nats} ${table} --consumer-id example-py`),
  );
  // pypaimon reads a local warehouse here; an S3 one needs its endpoint and credentials (see query.py).
  if (g.s3EnvFile === undefined) lines.push(line("query (Py+DuckDB)", `${py}/query.py --warehouse ${shellQuote(g.warehouse)} ${table}`));
  return lines;
}
