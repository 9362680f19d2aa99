/**
 * The Redis ACL of natslake's committers: the only Redis user natslake needs. It may touch the committer leases of
 * its prefix and the warehouse commit locks (keys), with the commands the lease and the lock send (cluster/redis/
 * lease.ts: scripts of SET NX PX, INCR, GET, PEXPIRE, DEL; commit-lock.ts: SET NX PX, GET, PING and a script) —
 * nothing else: no other key, no admin command, no pub/sub channel. Redis's default user should be off.
 */
import { leaseKeyPattern } from "./lease.ts";
import { COMMIT_LOCK_KEY_PREFIX } from "./commit-lock.ts";

/** The key patterns a committer of `prefix` uses. */
export function committerKeyPatterns(prefix: string): string[] {
  return [leaseKeyPattern(prefix), `${COMMIT_LOCK_KEY_PREFIX}*`];
}

/**
 * The ACL rules (after `user <name> on >password`) of a committer: as words of an ACL file line or of
 * `redis-server --user …` arguments. `+info`: ioredis's ready check asks INFO on connect.
 */
export function committerAclRules(prefix: string): string[] {
  return ["resetkeys", ...committerKeyPatterns(prefix).map((k) => `~${k}`), "resetchannels", "-@all", "+@connection", "+info", "+get", "+set", "+incr", "+pexpire", "+del", "+eval", "+evalsha"];
}
