/**
 * `chaos run --auth`: the run's servers require users, as production does, and every process connects as its role.
 *
 * - NATS: one user per natslake role (cluster/nats/permissions.ts `ROLE_GRANTS`, every table), plus the harness's own
 *   user (`HARNESS_USER`, below); each password random per run, written into no file and no command line: the
 *   servers' `authorization` block refers to `$NATSLAKE_NATS_PASSWORD_<USER>` and gets the value through its
 *   environment (as compose/nats/permissions.conf does), a process through NATSLAKE_NATS_USER /
 *   NATSLAKE_NATS_PASSWORD with NATSLAKE_INBOX_PREFIX=_INBOX.<user> (cluster/nats/connect-options.ts, inbox.ts).
 *   With `nkeysDir` (`chaos run --auth --tls`) each user is an nkey instead: its seed in a file of the run directory
 *   (mode 0600) given to its processes as NATSLAKE_NATS_NKEY, the servers' block holding its public key only.
 * - Redis: the default user off, and the committers' ACL user (cluster/redis/acl.ts); redis-server is given the
 *   password's SHA-256 only (`#<hash>`), the committer nodes the password through NATSLAKE_REDIS_USER /
 *   NATSLAKE_REDIS_PASSWORD.
 *
 * Who connects as whom: writer, committer and reader nodes as their role (the chaos topology gives each node one
 * role), the load generators as producer, the snapshot subscriber as consumer, the runner's own connection (table
 * creation, maintenance requests, the topology's KV reads, the verifier) as operator.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createUser } from "@nats-io/nkeys";
import type { ConnectionOptions } from "@nats-io/transport-node";
import { authorizationBlock, ROLES, type ExplicitUserSpec, type Role, type UserSpec } from "../cluster/nats/permissions.ts";
import { clientInboxPrefix, INBOX_PREFIX_ENV } from "../cluster/nats/inbox.ts";
import { NATS_AUTH_ENV, NATS_PASSWORD_ENV, natsConnectionOptions } from "../cluster/nats/connect-options.ts";
import { REDIS_AUTH_ENV, REDIS_PASSWORD_ENV } from "../cluster/redis/connect-options.ts";
import { committerAclRules } from "../cluster/redis/acl.ts";
import { Subjects } from "../cluster/nats/subjects.ts";
import { READY_STREAM } from "../test/helpers/nats-cluster.ts";

/** The Redis ACL user of the committers. */
const REDIS_COMMITTER = "committer";

/**
 * The harness's user: JetStream calls no natslake process makes, so no role has them — the nats cluster's readiness
 * probe (an R3 stream created and deleted, test/helpers/nats-cluster.ts) and the nats-kill nemesis's look at which
 * server hosts the table's consumers (a consumer listing, chaos/faults.ts `natsNodeKill`). Nothing natslake does runs
 * as this user.
 */
export const HARNESS_USER = "chaos-harness";

function harnessUser(password: UserSpec["password"]): ExplicitUserSpec {
  return {
    user: HARNESS_USER,
    password,
    what: "the chaos harness: readiness probe streams, consumer listings",
    permissions: {
      publish: { allow: ["$JS.API.INFO", `$JS.API.STREAM.CREATE.${READY_STREAM}`, `$JS.API.STREAM.DELETE.${READY_STREAM}`, "$JS.API.CONSUMER.LIST.*"], deny: [] },
      subscribe: { allow: [`${clientInboxPrefix(HARNESS_USER)}.>`], deny: [] },
    },
  };
}

/** The environment variable of the nats-servers that holds `user`'s password. */
function serverPasswordEnv(user: string): string {
  return `NATSLAKE_NATS_PASSWORD_${user.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

/**
 * A password nats-server reads whole from its environment: it parses the variable's value as a config value, so the
 * password starts with a letter (a bare `2e05…` is refused as a malformed number) and holds no punctuation.
 */
const newPassword = (): string => `pw${randomBytes(24).toString("hex")}`;

export interface ChaosAuth {
  /** How the NATS users sign in: a password each, or an nkey each (`chaos run --auth --tls`). */
  readonly natsCredentials: "password" | "nkey";
  /** The `authorization` block of every nats-server (passwords as `$NAME` references, or nkeys' public keys). */
  readonly natsConfig: string;
  /** The nats-servers' environment: every user's password (nothing with nkeys: the servers hold public keys only). */
  readonly natsServerEnv: Record<string, string>;
  /** redis-server's arguments: the default user off, the committers' ACL user (its password's hash only). */
  readonly redisArgs: string[];
  /** How redis-server's start-up check authenticates (it asks INFO, which the committers' ACL allows). */
  readonly redisProbe: { user: string; password: string };
  /**
   * The environment of a process that connects as `user`: a natslake node or client as its role, or the harness's
   * own connections (HARNESS_USER) — all through cluster/nats/connect.ts, which reads it.
   */
  envFor(user: Role | typeof HARNESS_USER): Record<string, string>;
  /** nats.js options of a connection opened as `user` (a role, or HARNESS_USER): what `envFor` makes of them. */
  connectOptions(user: Role | typeof HARNESS_USER): Partial<ConnectionOptions>;
}

export interface ChaosAuthOptions {
  /** The subjects' prefix (default `lake`). */
  prefix?: string;
  /**
   * The NATS users sign in with nkeys instead of passwords: each user's seed in a file of its own in this directory
   * (mode 0600), given to its processes as NATSLAKE_NATS_NKEY; the servers' config holds the public keys only.
   */
  nkeysDir?: string;
}

/** Writes a new user nkey's seed to `<dir>/<user>.nk` (readable by this user only); its public key and the file. */
function newNkeyFile(dir: string, user: string): { publicKey: string; file: string } {
  const kp = createUser();
  const file = join(dir, `${user}.nk`);
  writeFileSync(file, `${new TextDecoder().decode(kp.getSeed())}\n`, { mode: 0o600 });
  return { publicKey: kp.getPublicKey(), file };
}

/**
 * New users for one run: a user per role of the table (every table), and the harness's — with a password each, or
 * (`nkeysDir`) an nkey each; and the committers' Redis ACL user with a password.
 */
export function newChaosAuth(opts: ChaosAuthOptions = {}): ChaosAuth {
  const prefix = opts.prefix ?? "lake";
  const names = [...ROLES, HARNESS_USER];
  const nkeysDir = opts.nkeysDir;
  if (nkeysDir !== undefined) mkdirSync(nkeysDir, { recursive: true, mode: 0o700 });
  const nkeys = new Map(nkeysDir === undefined ? [] : names.map((u) => [u, newNkeyFile(nkeysDir, u)] as const));
  const passwords = new Map<string, string>(nkeysDir === undefined ? names.map((u) => [u, newPassword()]) : []);
  const credential = (user: string): UserSpec["password"] => (nkeysDir === undefined ? { env: serverPasswordEnv(user) } : { nkey: nkeys.get(user)!.publicKey });
  const redisPassword = newPassword();
  const users: Array<UserSpec | ExplicitUserSpec> = ROLES.map((role) => ({ user: role, password: credential(role), roles: [role], tables: "*" }));
  users.push(harnessUser(credential(HARNESS_USER)));
  const redisHash = createHash("sha256").update(redisPassword).digest("hex");
  const envFor = (user: Role | typeof HARNESS_USER): Record<string, string> => ({
    ...(nkeysDir === undefined ? { [NATS_AUTH_ENV.natsUser]: user, [NATS_PASSWORD_ENV]: passwords.get(user)! } : { [NATS_AUTH_ENV.natsNkey]: nkeys.get(user)!.file }),
    [INBOX_PREFIX_ENV]: clientInboxPrefix(user),
    ...(user === "committer" ? { [REDIS_AUTH_ENV.redisUser]: REDIS_COMMITTER, [REDIS_PASSWORD_ENV]: redisPassword } : {}),
  });
  return {
    natsCredentials: nkeysDir === undefined ? "password" : "nkey",
    natsConfig: authorizationBlock(users, new Subjects(prefix)),
    natsServerEnv: Object.fromEntries([...passwords].map(([u, p]) => [serverPasswordEnv(u), p])),
    redisArgs: ["--user", "default", "off", "--user", REDIS_COMMITTER, "on", `#${redisHash}`, ...committerAclRules(prefix)],
    redisProbe: { user: REDIS_COMMITTER, password: redisPassword },
    envFor,
    connectOptions: (user) => ({ ...natsConnectionOptions({}, envFor(user)), inboxPrefix: clientInboxPrefix(user) }),
  };
}
