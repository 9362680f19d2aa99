/**
 * The one way a natslake process opens a NATS connection: its URL(s), its credentials and TLS settings
 * (connect-options.ts), and a failure that says why — a refusal named, the URL's password never printed.
 */
import { connect, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";
import { natsConnectionOptions, type NatsAuthSettings } from "./connect-options.ts";
import { natsConnectFailureMessage } from "./connect-errors.ts";

/** A connection that failed: the message names the URL (redacted) and why. */
export class NatsConnectError extends Error {
  override readonly name = "NatsConnectError";
}

/** `nats://a:4222, nats://b:4222` → the servers of a NATS cluster. */
export function natsServers(url: string): string[] {
  return url.split(",").map((u) => u.trim()).filter((u) => u !== "");
}

/**
 * Connects with the settings (over the NATSLAKE_NATS_* environment). A setting that cannot be used throws
 * ConnectionSettingsError before anything is tried; a failed connection throws NatsConnectError.
 */
export async function connectNats(url: string, settings: NatsAuthSettings, opts: Omit<ConnectionOptions, "servers"> = {}, env: NodeJS.ProcessEnv = process.env): Promise<NatsConnection> {
  const auth = natsConnectionOptions(settings, env);
  try {
    return await connect({ ...opts, ...auth, servers: natsServers(url) });
  } catch (e) {
    throw new NatsConnectError(natsConnectFailureMessage(e, url, settings, env), { cause: e });
  }
}
