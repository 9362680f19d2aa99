/**
 * Paimon's alternative for object stores that do not enforce conditional puts: a lock around "is `snapshot-N` there?
 * no: write it". Paimon takes a catalog lock (Hive metastore, JDBC) when `lock.enabled` is set; natslake takes a
 * lock in Redis, which its cluster already runs, when the warehouse URI says so explicitly
 * (`s3://bucket/prefix?commit-lock=redis`) — never on its own: a store that ignores `If-None-Match: *` is refused
 * unless the user opted in (s3.ts, its start-up probe).
 *
 * The library knows no Redis: a lock is anything implementing `CommitLock`, and a process that can provide one
 * registers a provider by kind (cluster/redis/commit-lock.ts registers "redis" for the CLI and the nodes). A
 * warehouse asking for a kind nobody registered fails when it is opened, naming what is missing.
 *
 * What a lock can and cannot promise (as Paimon's): it serialises creators that respect it while it is held. A
 * holder that stalls past the lock's lease could write after another took it over, which a conditional put rules
 * out; the holder therefore checks, right before its write, that its lease has time left, and reads the object back
 * after the write (S3 reads after writes consistently): the content tells whose object it is.
 */
import { ErrorKind, LakeError } from "../errors.ts";

export interface CommitLock {
  /**
   * Runs `fn` while holding the lock `name` (one name per directory of exclusively created files), waiting for it as
   * long as the lock allows. `fn` gets `timeLeft()`: milliseconds of the lease that remain (≤ 0: lost).
   */
  withLock<T>(name: string, fn: (timeLeft: () => Promise<number>) => Promise<T>): Promise<T>;
  /** Checks the lock's service is reachable (at start, for a clear error before the first commit). */
  check(): Promise<void>;
  /** Releases connections. */
  close(): Promise<void>;
}

/** The kinds of lock a warehouse URI may name (`commit-lock=<kind>`). */
export const COMMIT_LOCK_KINDS = ["redis"] as const;
export type CommitLockKind = (typeof COMMIT_LOCK_KINDS)[number];

const providers = new Map<CommitLockKind, () => CommitLock>();

/** A process that can provide locks of `kind` registers how to make one (called once per opened warehouse). */
export function registerCommitLockProvider(kind: CommitLockKind, make: () => CommitLock): void {
  providers.set(kind, make);
}

/** The lock a warehouse asked for, or a clear error when this process cannot provide one. */
export function commitLockOf(kind: CommitLockKind, warehouse: string): CommitLock {
  const make = providers.get(kind);
  if (make === undefined) {
    throw new LakeError(
      ErrorKind.Unsupported,
      `warehouse ${warehouse} asks for commit-lock=${kind}, but this process has no ${kind} to lock with: set NATSLAKE_REDIS (or the node's --redis) to the Redis the cluster uses`,
      { retryable: false },
    );
  }
  return make();
}
