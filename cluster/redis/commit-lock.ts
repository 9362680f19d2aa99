/**
 * The commit lock in Redis (src/io/commit-lock.ts): for a warehouse on an object store without conditional puts
 * whose URI opted in with `commit-lock=redis`. `SET <key> <token> NX PX <lease>` takes it, the lease's
 * compare-and-delete script releases it; a holder learns its lease's time left from its own monotonic clock (measured
 * from the start of the SET that took it, so never later than Redis's expiry) after checking the key still holds its
 * token.
 *
 * A connection is opened while locks are in use and closed when the last is released: a CLI command must be able to
 * exit, and commits under this lock are an opt-in fallback where one loopback connect per commit does not matter.
 * Every process that writes such a warehouse must use the same Redis (NATSLAKE_REDIS, or the node's --redis).
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { Redis, type RedisOptions } from "ioredis";
import { explainRedisRefusal, redisConnectionOptions } from "./connect-options.ts";
import { ErrorKind, LakeError } from "../../src/errors.ts";
import { registerCommitLockProvider, type CommitLock } from "../../src/io/commit-lock.ts";
import { withTimeout } from "../../src/timeout.ts";
import { redactRedisUrl, RELEASE_LUA } from "./lease.ts";


/** The default prefix of the commit locks' keys. */
export const COMMIT_LOCK_KEY_PREFIX = "natslake:commit-lock:";

export interface RedisCommitLockOptions {
  /** The lock's lease: a holder that dies leaves it for at most this long (default 30 s). */
  leaseMs?: number;
  /** How long a creator waits for a lock another holds (default 60 s). */
  waitMs?: number;
  /** Each Redis command's bound (default 5 s). */
  commandTimeoutMs?: number;
  /** Key prefix (default `natslake:commit-lock:`). */
  prefix?: string;
  /** ACL user, password and TLS (redisConnectionOptions); default: from the NATSLAKE_REDIS_* environment. */
  auth?: RedisOptions;
}

export class RedisCommitLock implements CommitLock {
  private readonly leaseMs: number;
  private readonly waitMs: number;
  private readonly commandTimeoutMs: number;
  private readonly prefix: string;
  private client: Redis | null = null;
  /** The connection's last error: a command that fails on a connection that never opened only says it gave up. */
  private lastConnectionError: Error | undefined;
  private users = 0;
  private readonly auth: RedisOptions | undefined;

  constructor(private readonly url: string | undefined, opts: RedisCommitLockOptions = {}) {
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.waitMs = opts.waitMs ?? 60_000;
    this.commandTimeoutMs = opts.commandTimeoutMs ?? 5_000;
    this.prefix = opts.prefix ?? COMMIT_LOCK_KEY_PREFIX;
    this.auth = opts.auth;
  }

  async withLock<T>(name: string, fn: (timeLeft: () => Promise<number>) => Promise<T>): Promise<T> {
    const redis = this.acquireClient();
    try {
      const key = this.prefix + name;
      const token = randomUUID();
      const validUntil = await this.take(redis, key, token, name);
      const timeLeft = async (): Promise<number> => ((await this.call(redis.get(key), "GET")) === token ? validUntil - performance.now() : 0);
      try {
        return await fn(timeLeft);
      } finally {
        // A release that fails leaves the key to expire with its lease: slower for the next creator, never unsafe.
        await this.call(redis.eval(RELEASE_LUA, 1, key, token), "release").catch(() => undefined);
      }
    } finally {
      this.releaseClient();
    }
  }

  async check(): Promise<void> {
    const redis = this.acquireClient();
    try {
      await this.call(redis.ping(), "PING");
    } finally {
      this.releaseClient();
    }
  }

  async close(): Promise<void> {
    this.client?.disconnect();
    this.client = null;
    this.users = 0;
  }

  /** Takes the lock, waiting with back-off while another holds it; returns the lease's end on this clock. */
  private async take(redis: Redis, key: string, token: string, name: string): Promise<number> {
    const giveUp = performance.now() + this.waitMs;
    for (let attempt = 0; ; attempt++) {
      const start = performance.now();
      if ((await this.call(redis.set(key, token, "PX", this.leaseMs, "NX"), "SET NX")) === "OK") return start + this.leaseMs;
      if (performance.now() > giveUp) {
        throw new LakeError(ErrorKind.Io, `commit lock ${name}: held by another writer for ${this.waitMs} ms`, { retryable: true, context: { lock: name } });
      }
      await new Promise((r) => setTimeout(r, Math.min(500, 10 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random() / 2)));
    }
  }

  private acquireClient(): Redis {
    if (this.url === undefined || this.url === "") {
      throw new LakeError(ErrorKind.Unsupported, "the warehouse asks for commit-lock=redis, but no Redis is configured: set NATSLAKE_REDIS (or the node's --redis)", { retryable: false });
    }
    this.users++;
    if (this.client === null) {
      // Read when first used: a credential file that cannot be read fails the commit that needs the lock, naming it.
      const auth = this.auth ?? redisConnectionOptions({}, process.env);
      this.client = new Redis(this.url, { ...auth, maxRetriesPerRequest: 1, connectTimeout: this.commandTimeoutMs });
      // Connection errors surface through the commands (bounded below), explained by the last one (an untrusted
      // certificate, a refused connection); no unhandled 'error' events.
      this.lastConnectionError = undefined;
      this.client.on("error", (e: Error) => (this.lastConnectionError = e));
      this.client.on("ready", () => (this.lastConnectionError = undefined));
    }
    return this.client;
  }

  private releaseClient(): void {
    this.users--;
    if (this.users === 0 && this.client !== null) {
      this.client.disconnect();
      this.client = null;
    }
  }

  /** One Redis command, bounded: a timeout or an error is a retryable Io error naming the Redis (redacted). */
  private async call<T>(work: Promise<T>, what: string): Promise<T> {
    try {
      return await withTimeout(work, this.commandTimeoutMs, () => {
        throw new Error(`no answer within ${this.commandTimeoutMs} ms`);
      });
    } catch (e) {
      // "Reached the max retries per request limit" says nothing: the connection's own error says why.
      const why = explainRedisRefusal(e) === undefined && this.lastConnectionError !== undefined ? this.lastConnectionError : e;
      const reason = explainRedisRefusal(why) ?? (why instanceof Error ? why.message : String(why));
      throw new LakeError(ErrorKind.Io, `commit lock: redis at ${redactRedisUrl(this.url ?? "")}: ${what} failed: ${reason}`, { retryable: true, cause: e });
    }
  }
}

/**
 * Lets warehouses of this process that say `commit-lock=redis` lock in the Redis at `url` (default NATSLAKE_REDIS,
 * read when a warehouse is opened).
 */
export function installRedisCommitLock(url?: string, opts: RedisCommitLockOptions = {}): void {
  registerCommitLockProvider("redis", () => new RedisCommitLock(url ?? process.env["NATSLAKE_REDIS"], opts));
}
