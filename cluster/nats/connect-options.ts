/**
 * How a process authenticates to NATS and encrypts its connection: the settings every process shares (node, CLI
 * commands, producer, `up`, chaos), where they come from (flags > NATSLAKE_NATS_* environment > the node's config
 * file), and the nats.js ConnectionOptions they make.
 *
 * Secrets never travel in a setting's value: a setting names a FILE (password file, token file, nkey seed, `nsc`
 * credentials, TLS key), or the secret comes from an environment variable (NATSLAKE_NATS_PASSWORD,
 * NATSLAKE_NATS_TOKEN) — a flag's value shows in `ps` and in shell history. Files are read here, once, so a missing or
 * unreadable one is named by its setting before any connection is tried.
 */
import { readFileSync } from "node:fs";
import { credsAuthenticator, nkeyAuthenticator, type ConnectionOptions } from "@nats-io/transport-node";

/** What a process is told about its NATS credentials and TLS (each a file path, except the user name and the switch). */
export interface NatsAuthSettings {
  /** User name; its password comes from NATSLAKE_NATS_PASSWORD or `natsPasswordFile`. */
  natsUser?: string | undefined;
  natsPasswordFile?: string | undefined;
  /** A file holding the token (or NATSLAKE_NATS_TOKEN). */
  natsTokenFile?: string | undefined;
  /** An nkey seed file (`SU…`), as `nsc` or `nk -gen user` write it. */
  natsNkey?: string | undefined;
  /** A credentials file (user JWT + nkey seed) as `nsc generate creds` writes it. */
  natsCreds?: string | undefined;
  /** PEM file of the CA(s) that signed the server's certificate (else the system's). */
  natsTlsCa?: string | undefined;
  /** PEM client certificate and its key (mutual TLS). */
  natsTlsCert?: string | undefined;
  natsTlsKey?: string | undefined;
  /** TLS before anything else (the server's `handshake_first`). */
  natsTlsFirst?: boolean | undefined;
}

export type NatsAuthKey = keyof NatsAuthSettings;

/** Each setting's environment variable (the CLI's flags and the node's config file take the same settings). */
export const NATS_AUTH_ENV: Readonly<Record<NatsAuthKey, string>> = {
  natsUser: "NATSLAKE_NATS_USER",
  natsPasswordFile: "NATSLAKE_NATS_PASSWORD_FILE",
  natsTokenFile: "NATSLAKE_NATS_TOKEN_FILE",
  natsNkey: "NATSLAKE_NATS_NKEY",
  natsCreds: "NATSLAKE_NATS_CREDS",
  natsTlsCa: "NATSLAKE_NATS_TLS_CA",
  natsTlsCert: "NATSLAKE_NATS_TLS_CERT",
  natsTlsKey: "NATSLAKE_NATS_TLS_KEY",
  natsTlsFirst: "NATSLAKE_NATS_TLS_FIRST",
};

/** Secrets given by value, in the environment only. */
export const NATS_PASSWORD_ENV = "NATSLAKE_NATS_PASSWORD";
export const NATS_TOKEN_ENV = "NATSLAKE_NATS_TOKEN";

/** The flag of each setting (`natsTlsCa` → `--nats-tls-ca`), for messages. */
export function flagOf(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** A switch given as text (environment): true for 1/true/yes/on, false for 0/false/no/off/"". */
export function parseSwitch(name: string, v: string): boolean {
  const t = v.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(t)) return true;
  if (["", "0", "false", "no", "off"].includes(t)) return false;
  throw new ConnectionSettingsError(`${name}: expected true or false, got '${v}'`);
}

/** A setting that cannot be used (a file that cannot be read, two kinds of credentials at once): bad input, exit 2. */
export class ConnectionSettingsError extends Error {
  override readonly name = "ConnectionSettingsError";
}

/** The settings the environment gives (NATS_AUTH_ENV), for a process that has no others. */
export function natsAuthFromEnv(env: NodeJS.ProcessEnv = process.env): NatsAuthSettings {
  const out: NatsAuthSettings = {};
  for (const [key, name] of Object.entries(NATS_AUTH_ENV) as [NatsAuthKey, string][]) {
    const v = env[name];
    if (v === undefined || v === "") continue;
    if (key === "natsTlsFirst") out.natsTlsFirst = parseSwitch(name, v);
    else out[key] = v;
  }
  return out;
}

/** `settings` over the environment's: what a flag gives wins, the environment fills the rest. */
export function withEnvAuth(settings: NatsAuthSettings, env: NodeJS.ProcessEnv = process.env): NatsAuthSettings {
  const merged: NatsAuthSettings = natsAuthFromEnv(env);
  for (const [k, v] of Object.entries(settings) as [NatsAuthKey, unknown][]) if (v !== undefined) (merged as Record<string, unknown>)[k] = v;
  return merged;
}

/** The text of the file a setting names, or a ConnectionSettingsError naming the setting's flag and variable. */
export function readSettingFile(key: string, envName: string, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ConnectionSettingsError(`cannot read the file of ${flagOf(key)} (${envName}) '${path}': ${code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : (e as Error).message}`);
  }
}

const readSecretFile = (key: NatsAuthKey, path: string): string => readSettingFile(key, NATS_AUTH_ENV[key], path);

/** A secret from its file (trailing newline dropped), else from its environment variable, else undefined. */
function secret(settings: NatsAuthSettings, fileKey: "natsPasswordFile" | "natsTokenFile", envName: string, env: NodeJS.ProcessEnv): string | undefined {
  const file = settings[fileKey];
  if (file !== undefined) {
    const text = readSecretFile(fileKey, file).replace(/\r?\n$/, "");
    if (text === "") throw new ConnectionSettingsError(`the file of ${flagOf(fileKey)} '${file}' is empty`);
    return text;
  }
  const v = env[envName];
  return v === undefined || v === "" ? undefined : v;
}

/**
 * The ConnectionOptions (without `servers`) the settings make: user/password, token, nkey or credentials — at most one
 * kind — and TLS when any TLS setting is given (a `tls://` URL or a server that requires TLS also gets TLS, with
 * the system's CAs unless one is given). Throws ConnectionSettingsError naming the setting that cannot be used.
 */
export function natsConnectionOptions(given: NatsAuthSettings, env: NodeJS.ProcessEnv = process.env): Partial<ConnectionOptions> {
  const s = withEnvAuth(given, env);
  const password = secret(s, "natsPasswordFile", NATS_PASSWORD_ENV, env);
  const token = secret(s, "natsTokenFile", NATS_TOKEN_ENV, env);
  const kinds = [
    s.natsUser !== undefined ? "a user (--nats-user)" : undefined,
    token !== undefined ? `a token (${s.natsTokenFile !== undefined ? "--nats-token-file" : NATS_TOKEN_ENV})` : undefined,
    s.natsNkey !== undefined ? "an nkey (--nats-nkey)" : undefined,
    s.natsCreds !== undefined ? "a credentials file (--nats-creds)" : undefined,
  ].filter((k) => k !== undefined);
  if (kinds.length > 1) throw new ConnectionSettingsError(`give one kind of NATS credentials, not ${kinds.join(" and ")}`);
  if (password !== undefined && s.natsUser === undefined) throw new ConnectionSettingsError(`a NATS password (${s.natsPasswordFile !== undefined ? "--nats-password-file" : NATS_PASSWORD_ENV}) needs a user: --nats-user <name> (or NATSLAKE_NATS_USER)`);
  if (s.natsUser !== undefined && password === undefined) throw new ConnectionSettingsError(`NATS user '${s.natsUser}' needs a password: --nats-password-file <file> or ${NATS_PASSWORD_ENV}`);
  if ((s.natsTlsCert === undefined) !== (s.natsTlsKey === undefined)) throw new ConnectionSettingsError("a NATS client certificate needs both --nats-tls-cert and --nats-tls-key");

  const out: Partial<ConnectionOptions> = {};
  if (s.natsUser !== undefined) Object.assign(out, { user: s.natsUser, pass: password });
  if (token !== undefined) out.token = token;
  if (s.natsNkey !== undefined) {
    const seed = readSecretFile("natsNkey", s.natsNkey).trim();
    if (!/^S[A-Z2-7]{57}$/.test(seed)) throw new ConnectionSettingsError(`the file of --nats-nkey '${s.natsNkey}' does not hold an nkey seed (one line starting with 'S')`);
    out.authenticator = nkeyAuthenticator(new TextEncoder().encode(seed));
  }
  if (s.natsCreds !== undefined) {
    const creds = readSecretFile("natsCreds", s.natsCreds);
    if (!/-----BEGIN NATS USER JWT-----/.test(creds) || !/-----BEGIN USER NKEY SEED-----/.test(creds)) {
      throw new ConnectionSettingsError(`the file of --nats-creds '${s.natsCreds}' is not a NATS credentials file (a user JWT and an nkey seed, as 'nsc generate creds' writes)`);
    }
    out.authenticator = credsAuthenticator(new TextEncoder().encode(creds));
  }
  if (s.natsTlsCa !== undefined || s.natsTlsCert !== undefined || s.natsTlsFirst === true) {
    out.tls = {
      ...(s.natsTlsCa !== undefined ? { ca: readSecretFile("natsTlsCa", s.natsTlsCa) } : {}),
      ...(s.natsTlsCert !== undefined ? { cert: readSecretFile("natsTlsCert", s.natsTlsCert), key: readSecretFile("natsTlsKey", s.natsTlsKey!) } : {}),
      ...(s.natsTlsFirst === true ? { handshakeFirst: true } : {}),
    };
  }
  return out;
}

/** Which credentials the settings use, for an error message (never the secret itself). */
export function describeNatsCredentials(given: NatsAuthSettings, env: NodeJS.ProcessEnv = process.env): string {
  const s = withEnvAuth(given, env);
  if (s.natsCreds !== undefined) return `credentials file ${s.natsCreds}`;
  if (s.natsNkey !== undefined) return `nkey seed file ${s.natsNkey}`;
  if (s.natsUser !== undefined) return `user '${s.natsUser}'`;
  if (s.natsTokenFile !== undefined) return `token file ${s.natsTokenFile}`;
  if (env[NATS_TOKEN_ENV]) return `token from ${NATS_TOKEN_ENV}`;
  return "no credentials";
}
