/**
 * The permission violations a nats-server logged: each publish or subscription it refused a client, which it logs as
 * `… "<version>:<name>:user:<user>" - Publish Violation - Subject "<subject>"` (or Subscription). A test that runs
 * processes under their users' permissions checks there are none.
 */
import { readFileSync } from "node:fs";
import { violationLines } from "../../chaos/nats-violations.ts";

/**
 * The violations in a server's log text, as `user kind subject` lines (`producer-a Publish lake.in.lp.b`); a line that
 * names a violation in another form is returned whole, so no refusal goes unnoticed.
 */
export function permissionViolations(logText: string): string[] {
  // The chaos suite's `permissions` invariant recognises the same lines (chaos/nats-violations.ts): one pattern.
  return violationLines(logText).map((line) => {
    const m = /"[^"]*user:([^"]+)" - (\w+) Violation - Subject "([^"]+)"/.exec(line);
    return m === null ? line.trim() : `${m[1]} ${m[2]} ${m[3]}`;
  });
}

/** The violations logged in each of these files (a file that does not exist yet has none). */
export function permissionViolationsIn(logFiles: readonly string[]): string[] {
  return logFiles.flatMap((f) => {
    let text: string;
    try {
      text = readFileSync(f, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw e;
    }
    return permissionViolations(text);
  });
}
