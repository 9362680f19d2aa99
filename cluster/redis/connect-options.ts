/**
 * How a process authenticates to Redis and encrypts its connection (the committer lease, the commit lock): an ACL user
 * and its password, and TLS (`rediss://`, a CA, a client certificate), from flags > NATSLAKE_REDIS_* environment > the
 * node's config file. As for NATS (../nats/connect-options.ts), secrets come from files or the environment, never
 * from a flag's value; a password in the URL still works (and is never printed: redactRedisUrl).
 */
import type { RedisOptions } from "ioredis";
import { ConnectionSettingsError, readSettingFile } from "../nats/connect-options.ts";

export interface RedisAuthSettings {
  /** ACL user name (Redis 6+); its password from NATSLAKE_REDIS_PASSWORD or `redisPasswordFile`. */
  redisUser?: string | undefined;
  redisPasswordFile?: string | undefined;
  /** PEM CA file that signed the server's certificate; any TLS setting (or a `rediss://` URL) turns TLS on. */
  redisTlsCa?: string | undefined;
  redisTlsCert?: string | undefined;
  redisTlsKey?: string | undefined;
}

type RedisAuthKey = keyof RedisAuthSettings;

export const REDIS_AUTH_ENV: Readonly<Record<RedisAuthKey, string>> = {
  redisUser: "NATSLAKE_REDIS_USER",
  redisPasswordFile: "NATSLAKE_REDIS_PASSWORD_FILE",
  redisTlsCa: "NATSLAKE_REDIS_TLS_CA",
  redisTlsCert: "NATSLAKE_REDIS_TLS_CERT",
  redisTlsKey: "NATSLAKE_REDIS_TLS_KEY",
};

/** The password by value, in the environment only (a user without one, or the `default` user's password). */
export const REDIS_PASSWORD_ENV = "NATSLAKE_REDIS_PASSWORD";

const readFileOf = (key: RedisAuthKey, path: string): string => readSettingFile(key, REDIS_AUTH_ENV[key], path);

/** `given` over the NATSLAKE_REDIS_* environment. */
function withEnv(given: RedisAuthSettings, env: NodeJS.ProcessEnv): RedisAuthSettings {
  const out: RedisAuthSettings = {};
  for (const [key, name] of Object.entries(REDIS_AUTH_ENV) as [RedisAuthKey, string][]) {
    const v = given[key] ?? (env[name] === "" ? undefined : env[name]);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/**
 * The ioredis options the settings make (username, password, tls). Throws ConnectionSettingsError (bad input) naming a
 * setting that cannot be used.
 */
export function redisConnectionOptions(given: RedisAuthSettings, env: NodeJS.ProcessEnv = process.env): RedisOptions {
  const s = withEnv(given, env);
  let password: string | undefined;
  if (s.redisPasswordFile !== undefined) {
    password = readFileOf("redisPasswordFile", s.redisPasswordFile).replace(/\r?\n$/, "");
    if (password === "") throw new ConnectionSettingsError(`the file of --redis-password-file '${s.redisPasswordFile}' is empty`);
  } else if (env[REDIS_PASSWORD_ENV]) password = env[REDIS_PASSWORD_ENV];
  if (s.redisUser !== undefined && password === undefined) throw new ConnectionSettingsError(`Redis user '${s.redisUser}' needs a password: --redis-password-file <file> or ${REDIS_PASSWORD_ENV}`);
  if ((s.redisTlsCert === undefined) !== (s.redisTlsKey === undefined)) throw new ConnectionSettingsError("a Redis client certificate needs both --redis-tls-cert and --redis-tls-key");
  const out: RedisOptions = {};
  if (s.redisUser !== undefined) out.username = s.redisUser;
  if (password !== undefined) out.password = password;
  if (s.redisTlsCa !== undefined || s.redisTlsCert !== undefined) {
    out.tls = {
      ...(s.redisTlsCa !== undefined ? { ca: readFileOf("redisTlsCa", s.redisTlsCa) } : {}),
      ...(s.redisTlsCert !== undefined ? { cert: readFileOf("redisTlsCert", s.redisTlsCert), key: readFileOf("redisTlsKey", s.redisTlsKey!) } : {}),
    };
  }
  return out;
}

/** Why Redis refused a connection, in words that name the setting, or undefined when it is not a refusal. */
export function explainRedisRefusal(e: unknown): string | undefined {
  const text = e instanceof Error ? e.message : String(e);
  const code = e instanceof Error ? (e as NodeJS.ErrnoException).code : undefined;
  if (/WRONGPASS|invalid username-password/i.test(text)) return "Redis refused the credentials (WRONGPASS: wrong user or password)";
  if (/NOAUTH|Authentication required/i.test(text)) return `Redis requires authentication and none was given: --redis-user with ${REDIS_PASSWORD_ENV} or --redis-password-file`;
  if (/NOPERM/i.test(text)) return `Redis refused a command to this user (NOPERM: its ACL does not allow it): ${text}`;
  if (code !== undefined && /CERT|SIGNATURE|ISSUER/.test(code)) return `the Redis server's TLS certificate is not trusted (${code}): give the CA that signed it with --redis-tls-ca <file> (NATSLAKE_REDIS_TLS_CA)`;
  return undefined;
}
