/**
 * Stand-in implementations of the `Logger` port (actor.ts) for when the node has not injected pino: a silent one
 * and a JSON-lines one on stderr, plus `withFields` to stamp every line with fixed fields (the actor's name).
 * All are stateless; nothing here is shared mutable state.
 */
import type { Logger } from "./actor.ts";

export const LogLevel = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof LogLevel;

const noop = (): void => {};

export const noopLogger: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });

/** Makes Error values readable in JSON (JSON.stringify renders them as `{}`). */
function plain(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    out[k] = v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v;
  }
  return out;
}

/** One JSON line per entry on stderr, dropping entries below `minLevel`. */
export function consoleLogger(minLevel: LogLevel = "info"): Logger {
  const floor = LogLevel[minLevel];
  const line =
    (level: LogLevel) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      if (LogLevel[level] < floor) return;
      const entry = { time: new Date().toISOString(), level, msg, ...(fields === undefined ? {} : plain(fields)) };
      let text: string;
      try {
        text = JSON.stringify(entry);
      } catch {
        // Cyclic or BigInt fields: keep the message rather than lose the line.
        text = JSON.stringify({ time: entry.time, level, msg, fields: "<unserialisable>" });
      }
      process.stderr.write(text + "\n");
    };
  return { debug: line("debug"), info: line("info"), warn: line("warn"), error: line("error") };
}

/** A logger that adds `fields` to every entry (entry fields win on a clash). */
export function withFields(log: Logger, fields: Record<string, unknown>): Logger {
  const merge = (f?: Record<string, unknown>): Record<string, unknown> => (f === undefined ? fields : { ...fields, ...f });
  return {
    debug: (msg, f) => log.debug(msg, merge(f)),
    info: (msg, f) => log.info(msg, merge(f)),
    warn: (msg, f) => log.warn(msg, merge(f)),
    error: (msg, f) => log.error(msg, merge(f)),
  };
}
