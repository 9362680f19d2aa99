/**
 * The one way a natslake process opens a NATS connection: its URL(s), its credentials and TLS settings
 * (connect-options.ts), and a failure that says why — a refusal named, the URL's password never printed.
 */
import { connect, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";
import { natsConnectionOptions, type NatsAuthSettings } from "./connect-options.ts";
import { natsConnectFailureMessage } from "./connect-errors.ts";
import { inboxOptions } from "./inbox.ts";

/** A connection that failed: the message names the URL (redacted) and why. */
export class NatsConnectError extends Error {
  override readonly name = "NatsConnectError";
}

/** `nats://a:4222, nats://b:4222` → the servers of a NATS cluster. */
export function natsServers(url: string): string[] {
  return url.split(",").map((u) => u.trim()).filter((u) => u !== "");
}

/**
 * Credentials written in a server URL (`nats://user:password@host`, `nats://token@host`), which nats.js does not read
 * itself, and the URLs without them. The first URL that has some gives them (one cluster, one set of credentials).
 */
export function splitUrlCredentials(servers: string[]): { servers: string[]; auth: Pick<ConnectionOptions, "user" | "pass" | "token"> } {
  let auth: Pick<ConnectionOptions, "user" | "pass" | "token"> = {};
  const bare = servers.map((s) => {
    const m = /^((?:[a-z][a-z0-9+.-]*:\/\/)?)([^/@]*)@(.*)$/i.exec(s);
    if (m === null) return s;
    if (auth.user === undefined && auth.token === undefined) {
      const userinfo = m[2]!;
      const colon = userinfo.indexOf(":");
      auth = colon >= 0 ? { user: decodeURIComponent(userinfo.slice(0, colon)), pass: decodeURIComponent(userinfo.slice(colon + 1)) } : { token: decodeURIComponent(userinfo) };
    }
    return `${m[1]}${m[3]}`;
  });
  return { servers: bare, auth };
}

/**
 * Connects with the settings (over the NATSLAKE_NATS_* environment), under the inbox prefix NATSLAKE_INBOX_PREFIX
 * names (inbox.ts). A setting that cannot be used throws
 * ConnectionSettingsError before anything is tried; a failed connection throws NatsConnectError.
 */
export async function connectNats(url: string, settings: NatsAuthSettings, opts: Omit<ConnectionOptions, "servers"> = {}, env: NodeJS.ProcessEnv = process.env): Promise<NatsConnection> {
  const auth = natsConnectionOptions(settings, env);
  const fromUrl = splitUrlCredentials(natsServers(url));
  // The settings' credentials win over the URL's.
  const hasAuth = auth.user !== undefined || auth.token !== undefined || auth.authenticator !== undefined;
  try {
    return await connect({ ...inboxOptions(env), ...opts, ...(hasAuth ? {} : fromUrl.auth), ...auth, servers: fromUrl.servers });
  } catch (e) {
    throw new NatsConnectError(natsConnectFailureMessage(e, url, settings, env), { cause: e });
  }
}
