/**
 * The `permissions` invariant of a run with `--auth`: no nats-server of the run refused anything to anyone. A role
 * that lacks a subject it needs only sometimes (a bucket hand-off, a failover, a KV watch created again) is refused
 * by the server, which logs it — while the process that was refused may well retry, time out and carry on, so the
 * logs are where such a gap shows.
 *
 * What nats-server writes (server/client.go): `Publish Violation - Subject "…"` (or `- Reply "…"`),
 * `Subscription Violation - Subject "…"` for a permission refused, `authentication error - User "…"` for a refused
 * connection; the client is sent `-ERR 'Permissions Violation for …'` / `'Authorization Violation'`, which the
 * server logs too when it traces. Each of these lines counts.
 *
 * With `--tls` (chaos/tls.ts) a refused TLS handshake counts too: nats-server logs `TLS handshake error: tls: client
 * didn't provide a certificate`, `… tls: failed to verify certificate: x509: …` (`TLS route handshake error: …` on a
 * route) — the Go TLS stack's `tls:` / `x509:` errors. A handshake cut short is not a refusal and does not count
 * (`… handshake error: EOF`, `… read tcp …: connection reset by peer`, `… i/o timeout`): a process killed or paused
 * by a nemesis mid-handshake, or the start-up check that reads the server's plain INFO line and hangs up.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import type { InvariantResult } from "./types.ts";

const VIOLATION = /Permissions Violation|Authorization Violation|\b(?:Publish|Subscription) Violation\b|authentication error|TLS (?:route )?handshake error: .*\b(?:tls|x509): /i;

/** The lines of a nats-server log that say something was refused. */
export function violationLines(log: string): string[] {
  return log.split("\n").filter((l) => VIOLATION.test(l));
}

/** How many refusals the detail quotes (the logs are kept with a failed run). */
const SHOWN = 5;

/**
 * The invariant over the run's nats-server logs (every file given must be readable: a log that cannot be read cannot
 * show there was no violation). `tls`: the servers required TLS, and the detail says no handshake was refused.
 */
export function permissionsInvariant(logFiles: readonly string[], opts: { tls?: boolean } = {}): InvariantResult {
  if (logFiles.length === 0) return { ok: false, detail: "no nats-server log to read" };
  const found: string[] = [];
  const unreadable: string[] = [];
  let lines = 0;
  for (const f of logFiles) {
    let text: string;
    try {
      text = readFileSync(f, "utf8");
    } catch (e) {
      unreadable.push(`${basename(f)} (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
      continue;
    }
    lines += text.split("\n").length - 1;
    found.push(...violationLines(text).map((l) => `${basename(f)}: ${l.trim()}`));
  }
  if (unreadable.length > 0) return { ok: false, detail: `cannot read nats-server logs: ${unreadable.join(", ")}` };
  if (found.length === 0) return { ok: true, detail: `no permission or authorization violation in the ${logFiles.length} nats-server logs (${lines} lines)${opts.tls === true ? ", no refused TLS handshake" : ""}` };
  return { ok: false, detail: `${found.length} refusals in the nats-server logs: ${found.slice(0, SHOWN).join(" | ")}${found.length > SHOWN ? ` … (${found.length - SHOWN} more)` : ""}` };
}
