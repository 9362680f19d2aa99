/**
 * What the TypeScript examples share, so that each of them is about its client: the command line (flags with the
 * defaults `npm run up` starts; a bad one is a line and exit 2), the NATS connection (an unreachable server is a
 * line, not a stack), and the exit (0, or the code `main` returns; 1 with the message when it throws).
 */
import { parseArgs } from "node:util";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats, NatsConnectError } from "natslake/producer";

/** The flags every example takes: what `npm run up` starts and creates. */
const COMMON = { nats: "nats://127.0.0.1:4222", table: "demo.events" };

/**
 * The command line: `--nats`, `--table` and the example's own flags (name → default), all strings; `check` turns
 * them into the example's options and throws for a bad value.
 */
export function flags<K extends string, T>(script: string, own: Record<K, string>, check: (v: Record<K | keyof typeof COMMON, string>) => T): T {
  const defaults: Record<string, string> = { ...COMMON, ...own };
  const usage = `usage: ${script} ${Object.keys(defaults).map((k) => `[--${k} ${defaults[k]}]`).join(" ")}`;
  try {
    const { values } = parseArgs({ options: Object.fromEntries(Object.entries(defaults).map(([k, d]) => [k, { type: "string", default: d }])) });
    return check(values as Record<K | keyof typeof COMMON, string>);
  } catch (e) {
    console.error(`${script}: ${(e as Error).message}\n${usage}`);
    process.exit(2);
  }
}

/**
 * A connection with the credentials and TLS of the NATSLAKE_NATS_* environment (docs/operations/security.md), as
 * natslake's own commands connect; a refusal says which, and a URL's password is never printed.
 */
export async function connectTo(url: string): Promise<NatsConnection> {
  try {
    return await connectNats(url, {}, { timeout: 5000 });
  } catch (e) {
    if (!(e instanceof NatsConnectError)) throw e;
    throw new Error(e.message.replace(/^(cannot reach NATS at \S+):/, "$1 (is `npm run up` running?):"));
  }
}

/** Runs `main` and exits with its code (0 when it returns none), or 1 with its error's message. */
export function run(script: string, main: () => Promise<number | void>): void {
  main().then(
    (code) => process.exit(code ?? 0),
    (e: unknown) => {
      console.error(`${script}: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    },
  );
}
