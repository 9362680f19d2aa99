/**
 * Which nats-server the suite runs against: the current one (v2.12.15, built by scripts/setup.sh with `go install`;
 * `$NATSLAKE_NATS_SERVER_CURRENT`, else where setup.sh puts it) with `jetstream { sync_interval: always }`, else
 * Debian's (2.9.10, which rejects that setting) — a fallback the report states.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { natsServerBin, natsServerVersion, supportsSyncInterval } from "../test/helpers/nats-cluster.ts";

export interface NatsChoice {
  bin: string;
  version: string;
  /** `jetstream { sync_interval: always }` is set (the server supports it). */
  syncAlways: boolean;
  /** Why the current server is not used, when it is not. */
  fallback: string | null;
  /** One line for the report. */
  label: string;
}

/** Where scripts/setup.sh installs the current server (as scripts/run-tests.mjs finds it). */
function setupBuiltServer(): string | null {
  const versionFile = fileURLToPath(new URL("../scripts/nats-server-version", import.meta.url));
  if (!existsSync(versionFile)) return null;
  const version = readFileSync(versionFile, "utf8").trim();
  const bin = join(process.env["NATSLAKE_TOOLS_DIR"] ?? join(homedir(), "go", "natslake-bin"), `nats-server-${version}`, "nats-server");
  return existsSync(bin) ? bin : null;
}

export function chooseNatsServer(explicit?: string): NatsChoice {
  let bin: string;
  let fallback: string | null = null;
  if (explicit) bin = explicit;
  else {
    const current = process.env["NATSLAKE_NATS_SERVER_CURRENT"] || setupBuiltServer();
    if (current) bin = current;
    else {
      bin = natsServerBin("default");
      fallback = "no current nats-server found (NATSLAKE_NATS_SERVER_CURRENT unset and scripts/setup.sh built none); using the default one";
    }
  }
  const version = natsServerVersion(bin).join(".");
  const syncAlways = supportsSyncInterval(bin);
  if (!syncAlways) fallback = `${fallback ? fallback + "; " : ""}nats-server ${version} has no jetstream sync_interval (acknowledged writes are fsynced lazily)`;
  const label = `nats-server ${version} (${bin}), 3-node cluster, R3 streams, ${syncAlways ? "jetstream sync_interval: always" : "lazy fsync (no sync_interval)"}${fallback ? ` — FALLBACK: ${fallback}` : ""}`;
  return { bin, version, syncAlways, fallback, label };
}
