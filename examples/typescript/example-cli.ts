/**
 * What the TypeScript examples share, so that each of them is about its client: the command line (flags with the
 * defaults `npm run up` starts; a bad one is a line and exit 2), the NATS connection (an unreachable server is a
 * line, not a stack), and the exit (0, or the code `main` returns; 1 with the message when it throws).
 */
import { parseArgs } from "node:util";
import { connect, type NatsConnection } from "@nats-io/transport-node";

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

export async function connectTo(url: string): Promise<NatsConnection> {
  try {
    return await connect({ servers: url });
  } catch (e) {
    throw new Error(`cannot reach NATS at ${url} (is \`npm run up\` running?): ${(e as Error).message}`);
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
