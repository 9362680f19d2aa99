/**
 * The Redis ACL of the compose deployment, made from the committers' rules in cluster/redis/acl.ts: redis-server's
 * arguments that turn the default user off and create the one user natslake needs, `committer`. Its password is not
 * in the file: docker-compose.yml writes `${NATSLAKE_REDIS_PASSWORD_COMMITTER:?…}`, which compose takes from
 * compose/.env (compose/new-secrets.sh makes a random one).
 *
 *   node --import tsx scripts/compose-redis-acl.ts       (npm run compose-redis-acl)
 *
 * rewrites the `command:` line of the redis service in compose/docker-compose.yml. test/integration/compose-config.test.ts
 * fails when that service runs anything else, and compose-topology.test.ts runs its redis-server with these arguments.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { committerAclRules } from "../cluster/redis/acl.ts";
import { DEFAULT_PREFIX } from "../cluster/nats/subjects.ts";

export const COMPOSE_FILE = fileURLToPath(new URL("../compose/docker-compose.yml", import.meta.url));

/** The Redis user of the compose committers, and the variable of compose/.env that holds its password. */
export const COMPOSE_REDIS_USER = "committer";
export const COMPOSE_REDIS_PASSWORD_ENV = "NATSLAKE_REDIS_PASSWORD_COMMITTER";

/** No persistence: the lease and the fencing counter may be lost (the epoch also lives in every snapshot). */
const NO_PERSISTENCE = ["--save", "", "--appendonly", "no"];

/** redis-server's ACL arguments: the default user off, the committers' user with `password` and exactly their rules. */
export function composeRedisAclArgs(password: string): string[] {
  return ["--user", "default", "off", "--user", COMPOSE_REDIS_USER, "on", `>${password}`, ...committerAclRules(DEFAULT_PREFIX)];
}

/** The redis service's command, as the container runs it once compose has put in the password. */
export function composeRedisCommand(password: string): string[] {
  return ["redis-server", ...NO_PERSISTENCE, ...composeRedisAclArgs(password)];
}

/** What docker-compose.yml reads in place of the password: compose/.env's variable, or a clear error without it. */
export function composeSecretRef(name: string): string {
  return `\${${name}:?${name} is not set; compose/.env sets it, compose/new-secrets.sh writes a random one}`;
}

/** The redis service's `command:` line of docker-compose.yml (its indentation included). */
export function composeRedisCommandLine(): string {
  return `    command: [${composeRedisCommand(composeSecretRef(COMPOSE_REDIS_PASSWORD_ENV)).map((a) => JSON.stringify(a)).join(", ")}]`;
}

/** The compose file with its redis service's command line replaced (the first `command: ["redis-server", …]`). */
export function withRedisCommandLine(composeText: string): string {
  const line = /^ {4}command: \["redis-server".*$/m;
  if (!line.test(composeText)) throw new Error(`${COMPOSE_FILE}: no redis service line \`    command: ["redis-server", …]\` to replace`);
  return composeText.replace(line, () => composeRedisCommandLine());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(COMPOSE_FILE, withRedisCommandLine(readFileSync(COMPOSE_FILE, "utf8")));
  console.log(`compose-redis-acl: wrote the redis command of ${COMPOSE_FILE}`);
}
