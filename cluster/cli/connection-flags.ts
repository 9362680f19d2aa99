/**
 * The credential and TLS flags of every command that talks to NATS (`--nats`) or Redis (`--redis`): added to each such
 * command of the program in one place (program.ts), so no command can be left without them. Each flag names a FILE
 * (or is a user name or a switch): secrets never go on a command line, where `ps` and shell history show them.
 */
import { Option, type Command } from "commander";
import { NATS_AUTH_ENV, NATS_PASSWORD_ENV, NATS_TOKEN_ENV, type NatsAuthSettings } from "../nats/connect-options.ts";
import { REDIS_AUTH_ENV, REDIS_PASSWORD_ENV, type RedisAuthSettings } from "../redis/connect-options.ts";

const NATS_FLAGS: readonly [flag: string, key: keyof NatsAuthSettings, help: string][] = [
  ["--nats-creds <file>", "natsCreds", "NATS credentials file (user JWT + nkey seed, as `nsc generate creds` writes it)"],
  ["--nats-nkey <file>", "natsNkey", "NATS nkey seed file"],
  ["--nats-user <name>", "natsUser", `NATS user; its password from ${NATS_PASSWORD_ENV} or --nats-password-file`],
  ["--nats-password-file <file>", "natsPasswordFile", "file holding the NATS user's password"],
  ["--nats-token-file <file>", "natsTokenFile", `file holding a NATS token (or ${NATS_TOKEN_ENV})`],
  ["--nats-tls-ca <file>", "natsTlsCa", "PEM CA file that signed the NATS server's certificate (turns TLS on)"],
  ["--nats-tls-cert <file>", "natsTlsCert", "PEM client certificate for NATS (mutual TLS; with --nats-tls-key)"],
  ["--nats-tls-key <file>", "natsTlsKey", "PEM key of the NATS client certificate"],
  ["--nats-tls-first", "natsTlsFirst", "TLS handshake first (the server's handshake_first)"],
];

const REDIS_FLAGS: readonly [flag: string, key: keyof RedisAuthSettings, help: string][] = [
  ["--redis-user <name>", "redisUser", `Redis ACL user; its password from ${REDIS_PASSWORD_ENV} or --redis-password-file`],
  ["--redis-password-file <file>", "redisPasswordFile", "file holding the Redis password"],
  ["--redis-tls-ca <file>", "redisTlsCa", "PEM CA file that signed the Redis server's certificate (turns TLS on, as rediss:// does)"],
  ["--redis-tls-cert <file>", "redisTlsCert", "PEM client certificate for Redis (with --redis-tls-key)"],
  ["--redis-tls-key <file>", "redisTlsKey", "PEM key of the Redis client certificate"],
];

function hasOption(cmd: Command, long: string): boolean {
  return cmd.options.some((o) => o.long === long);
}

/** Adds the NATS flags to every command (at any depth) with `--nats`, and the Redis flags to those with `--redis`. */
export function addConnectionFlags(cmd: Command): void {
  if (hasOption(cmd, "--nats")) {
    for (const [flag, key, help] of NATS_FLAGS) cmd.addOption(new Option(flag, `${help} (${NATS_AUTH_ENV[key]})`));
  }
  if (hasOption(cmd, "--redis")) {
    for (const [flag, key, help] of REDIS_FLAGS) cmd.addOption(new Option(flag, `${help} (${REDIS_AUTH_ENV[key]})`));
  }
  for (const sub of cmd.commands) addConnectionFlags(sub);
}

/** The NATS settings among a command's parsed options. */
export function natsAuthFlags(o: object): NatsAuthSettings {
  const r = o as Record<string, unknown>;
  return Object.fromEntries(NATS_FLAGS.map(([, key]) => [key, r[key]]).filter(([, v]) => v !== undefined)) as NatsAuthSettings;
}

/** The Redis settings among a command's parsed options. */
export function redisAuthFlags(o: object): RedisAuthSettings {
  const r = o as Record<string, unknown>;
  return Object.fromEntries(REDIS_FLAGS.map(([, key]) => [key, r[key]]).filter(([, v]) => v !== undefined)) as RedisAuthSettings;
}

/** The flags back as command-line arguments (for a child process such as `up`'s nodes): file names, never secrets. */
export function connectionArgs(s: NatsAuthSettings & RedisAuthSettings): string[] {
  const out: string[] = [];
  for (const [flag, key] of [...NATS_FLAGS, ...REDIS_FLAGS]) {
    const v = (s as Record<string, unknown>)[key];
    if (v === undefined || v === false) continue;
    const name = flag.split(" ")[0]!;
    out.push(...(v === true ? [name] : [name, String(v)]));
  }
  return out;
}
