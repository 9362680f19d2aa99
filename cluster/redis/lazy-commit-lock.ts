/**
 * The CLI's "redis" commit-lock provider without Redis's client loaded up front: the lock (and ioredis) is imported
 * the first time a warehouse with `commit-lock=redis` takes it. Most commands never do, and loading ioredis costs
 * every start of the CLI a sixth of a second.
 */
import { registerCommitLockProvider, type CommitLock } from "../../src/io/commit-lock.ts";

class LazyRedisCommitLock implements CommitLock {
  private lock: Promise<CommitLock> | undefined;
  // NATSLAKE_REDIS as it was when the warehouse was opened, as the eager provider reads it.
  private readonly url = process.env["NATSLAKE_REDIS"];

  private loaded(): Promise<CommitLock> {
    this.lock ??= import("./commit-lock.ts").then(({ RedisCommitLock }) => new RedisCommitLock(this.url));
    return this.lock;
  }

  async withLock<T>(name: string, fn: (timeLeft: () => Promise<number>) => Promise<T>): Promise<T> {
    return (await this.loaded()).withLock(name, fn);
  }

  async check(): Promise<void> {
    await (await this.loaded()).check();
  }

  async close(): Promise<void> {
    // A lock never used has no connection to close.
    if (this.lock !== undefined) await (await this.lock).close();
  }
}

/** Registers the "redis" provider for this process (the CLI's; a node registers the eager one with its --redis). */
export function installLazyRedisCommitLock(): void {
  registerCommitLockProvider("redis", () => new LazyRedisCommitLock());
}
