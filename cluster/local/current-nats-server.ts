/**
 * The nats-server `natslake up` runs:
 *
 * - `NATSLAKE_NATS_SERVER` when set: an explicit choice, run as given (`up` warns when it is older than 2.10);
 * - else `NATSLAKE_NATS_SERVER_CURRENT` (exported by scripts/setup.sh and scripts/run-tests.mjs);
 * - else the current one (scripts/nats-server-version) where scripts/setup.sh puts it, which
 *   scripts/install-nats-server.sh — the script setup.sh runs too — finds or, when it is missing, builds there with
 *   `go install` (its progress line goes to this process's stderr).
 *
 * Never Debian's 2.9 on PATH: when the current server can be neither found nor built, the script has printed why
 * and the commands that fix it, and this fails.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { ErrorKind, LakeError } from "../../src/errors.ts";
import { unsupportedNatsServer } from "../nats/server-version.ts";
import { REPO_ROOT } from "../repo-root.ts";
import { natsServerVersionOf, type NatsServerChoice } from "./servers.ts";

export const INSTALL_NATS_SERVER_SCRIPT = join(REPO_ROOT, "scripts", "install-nats-server.sh");

function described(bin: string, source: string): NatsServerChoice {
  const version = natsServerVersionOf(bin);
  return { bin, source, version, old: unsupportedNatsServer(version) !== undefined };
}

/** Runs scripts/install-nats-server.sh (its stderr is ours: progress and refusals reach the user as printed). */
function installScript(env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [INSTALL_NATS_SERVER_SCRIPT], { stdio: ["ignore", "pipe", "inherit"], env });
    let stdout = "";
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    child.once("error", (e) => reject(new LakeError(ErrorKind.Io, `cannot run ${INSTALL_NATS_SERVER_SCRIPT}: ${e.message}`)));
    child.once("close", (code, signal) => {
      const bin = stdout.trim().split("\n").pop() ?? "";
      if (code === 0 && bin !== "") resolve(bin);
      else reject(new LakeError(ErrorKind.Io, `no current nats-server (${signal ?? `exit ${code}`} from scripts/install-nats-server.sh; what to do is printed above)`));
    });
  });
}

export async function natsServerForUp(env: NodeJS.ProcessEnv = process.env): Promise<NatsServerChoice> {
  const explicit = env["NATSLAKE_NATS_SERVER"];
  if (explicit) return described(explicit, "NATSLAKE_NATS_SERVER");
  const current = env["NATSLAKE_NATS_SERVER_CURRENT"];
  if (current) return described(current, "NATSLAKE_NATS_SERVER_CURRENT");
  return described(await installScript(env), "current, scripts/install-nats-server.sh");
}
