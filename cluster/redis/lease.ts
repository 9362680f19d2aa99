/**
 * The committer's leadership lease on Redis (design.md §5, reliability.md R2): `SET key token NX PX ttl` with a
 * fencing epoch from `INCR <key>:epoch`, compare-and-renew and compare-and-delete by Lua script.
 *
 * Redis is a liveness aid here, never the safety mechanism: the epoch it hands out restarts at 1 when Redis loses its
 * data (restart without persistence, failover to a replica that missed the write), so the caller must take
 * `max(fencingEpoch, latest snapshot's natslake.epoch + 1)`, and the snapshot chain (created exclusively) is what
 * fences a paused ex-leader.
 *
 * Timing rules:
 * - `validUntil()` is measured on the monotonic clock from the *start* of the last successful acquire/renew request
 *   (+ ttl − safety margin). The server starts the key's ttl at some point after that start, so the believed deadline
 *   is never later than the real expiry, however long the reply takes.
 * - Every Redis call is bounded (`commandTimeoutMs`, enforced here even if the client has no `commandTimeout`); a
 *   timeout or error is "lost/unknown": `tryAcquire` returns null, `renew` returns false and the deadline is voided.
 *   Never "held".
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { Redis, type RedisOptions } from "ioredis";
import type { Lease, LeaseGrant } from "../../actors/lease-port.ts";
import { explainRedisRefusal } from "./connect-options.ts";
import { withTimeout } from "../../src/timeout.ts";

/**
 * Takes the lock and, only if it was taken, increments the epoch counter, atomically (one script): there is no
 * moment where this process holds the key without an epoch. Returns the new epoch, or 0 when the key is held.
 * KEYS: lease key, epoch key. ARGV: token, ttl ms.
 */
const ACQUIRE_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0`;

/** Compare-and-PEXPIRE. Returns 1 when the token matched and the ttl was reset, else 0. KEYS: key. ARGV: token, ttl. */
const RENEW_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;

/** Compare-and-DEL. Returns 1 when this token's key was deleted, else 0. KEYS: key. ARGV: token. */
export const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

export class LeaseTimeoutError extends Error {
  constructor(op: string, ms: number) {
    super(`redis lease ${op}: no reply within ${ms} ms (outcome unknown)`);
    this.name = "LeaseTimeoutError";
  }
}

export interface RedisLeaseOptions {
  ttlMs: number;
  /** Subtracted from the ttl for `validUntil()`: covers clock-rate drift between this host and Redis. */
  safetyMarginMs: number;
  /**
   * Upper bound on each Redis call (default min(1000, ttl/4)). Enforced here; also give the client the same
   * `commandTimeout` (see `leaseRedisOptions`) so the command itself is abandoned.
   */
  commandTimeoutMs?: number;
  /** Readable prefix of the random token (shows who holds the lease in `redis-cli GET`). */
  holderId?: string;
  /** Monotonic clock in ms; `performance.now()` unless a test injects one. */
  now?: () => number;
  /** The Redis URL, for messages (default: the client's host and port). */
  url?: string;
  /**
   * Hears about Redis failures (each an Error reading `redis at <url>: <reason>`) and the recovery, so the node's
   * log names Redis when it is down. One reporter may serve every lease of a node (it rate-limits across them).
   */
  reporter?: RedisErrorReporter;
}

/** The committer lease of one table (`db.table`) of a cluster with this prefix. */
export function leaseKey(prefix: string, table: string): string {
  return `natslake:${prefix}:lease:${table}`;
}

/** Every lease key of the prefix (a Redis key pattern: the committers' ACL, cluster/redis/acl.ts). */
export function leaseKeyPattern(prefix: string): string {
  return leaseKey(prefix, "*");
}

export class RedisLease implements Lease {
  readonly ttlMs: number;
  readonly safetyMarginMs: number;
  readonly commandTimeoutMs: number;
  readonly epochKey: string;
  private readonly holderId: string;
  private readonly now: () => number;
  /** Token of the grant `validUntil()` describes. */
  private heldToken: string | undefined;
  private deadline = Number.NEGATIVE_INFINITY;
  /**
   * Request sequence numbers: a success for a token that started before that token's deadline was voided (by a
   * failed renew or a release) must not revive it.
   */
  private seq = 0;
  private voidedToken: string | undefined;
  private voidedAtSeq = 0;
  private lastErr: Error | undefined;
  readonly url: string;
  private readonly reporter: RedisErrorReporter | undefined;

  constructor(
    private readonly redis: Redis,
    readonly key: string,
    opts: RedisLeaseOptions,
  ) {
    const { ttlMs, safetyMarginMs } = opts;
    if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) throw new RangeError(`ttlMs must be a positive integer, got ${ttlMs}`);
    if (!(safetyMarginMs >= 0 && safetyMarginMs < ttlMs)) {
      throw new RangeError(`safetyMarginMs must be in [0, ttlMs), got ${safetyMarginMs} (ttl ${ttlMs})`);
    }
    this.ttlMs = ttlMs;
    this.safetyMarginMs = safetyMarginMs;
    this.commandTimeoutMs = opts.commandTimeoutMs ?? Math.max(1, Math.min(1000, Math.floor(ttlMs / 4)));
    if (!(this.commandTimeoutMs > 0)) throw new RangeError(`commandTimeoutMs must be positive, got ${this.commandTimeoutMs}`);
    this.epochKey = `${key}:epoch`;
    this.holderId = opts.holderId ?? "natslake";
    this.now = opts.now ?? (() => performance.now());
    this.url = opts.url ?? clientUrl(redis);
    this.reporter = opts.reporter;
  }

  async tryAcquire(): Promise<LeaseGrant | null> {
    const token = `${this.holderId}:${randomUUID()}`;
    const seq = ++this.seq;
    const start = this.now();
    let reply: unknown;
    try {
      reply = await this.bounded("acquire", this.redis.eval(ACQUIRE_LUA, 2, this.key, this.epochKey, token, this.ttlMs));
    } catch (e) {
      this.fail("acquire", e);
      // Unknown outcome: the SET may have landed. Delete our token (if it is there) so that nobody waits out a ttl
      // for a lease nobody believes it holds.
      void this.deleteIfOwned(token).catch(() => undefined);
      return null;
    }
    this.reporter?.ok(this.url);
    if (reply === 0) return null;
    if (typeof reply !== "number" || !Number.isSafeInteger(reply) || reply < 1) {
      this.fail("acquire", new Error(`unexpected reply ${String(reply)}`));
      void this.deleteIfOwned(token).catch(() => undefined);
      return null;
    }
    this.extend(token, seq, start);
    return { token, fencingEpoch: reply, acquiredAtMono: start };
  }

  async renew(grant: LeaseGrant): Promise<boolean> {
    const seq = ++this.seq;
    const start = this.now();
    let reply: unknown;
    try {
      reply = await this.bounded("renew", this.redis.eval(RENEW_LUA, 1, this.key, grant.token, this.ttlMs));
    } catch (e) {
      this.fail("renew", e);
      this.voidDeadline(grant.token, seq);
      return false;
    }
    this.reporter?.ok(this.url);
    if (reply !== 1) {
      // Definitely not ours any more (expired, taken over, or Redis lost it).
      this.voidDeadline(grant.token, seq);
      return false;
    }
    this.extend(grant.token, seq, start);
    return true;
  }

  /** Best effort: a failure is recorded in `lastError()` and the key simply expires after its ttl. */
  async release(grant: LeaseGrant): Promise<void> {
    const seq = ++this.seq;
    this.voidDeadline(grant.token, seq);
    try {
      await this.deleteIfOwned(grant.token);
    } catch (e) {
      this.fail("release", e);
    }
  }

  validUntil(): number {
    return this.deadline;
  }

  /** The last Redis error or timeout (diagnostics only; the lease API never throws for them). */
  lastError(): Error | undefined {
    return this.lastErr;
  }

  private async deleteIfOwned(token: string): Promise<boolean> {
    const reply = await this.bounded("release", this.redis.eval(RELEASE_LUA, 1, this.key, token));
    return reply === 1;
  }

  /** A successful acquire/renew of `token` whose request started at `start`. */
  private extend(token: string, seq: number, start: number): void {
    if (token === this.voidedToken && seq < this.voidedAtSeq) return;
    const until = start + this.ttlMs - this.safetyMarginMs;
    this.deadline = token === this.heldToken ? Math.max(this.deadline, until) : until;
    this.heldToken = token;
  }

  /** `token` may no longer be held: its deadline (if it is the current one) is gone. */
  private voidDeadline(token: string, seq: number): void {
    if (token !== this.voidedToken || seq > this.voidedAtSeq) {
      this.voidedToken = token;
      this.voidedAtSeq = seq;
    }
    if (token === this.heldToken) {
      this.deadline = Number.NEGATIVE_INFINITY;
      this.heldToken = undefined;
    }
  }

  /** Records (and reports) a failed Redis call as `redis at <url>: lease <op> of <key>: <reason>`. */
  private fail(op: string, e: unknown): void {
    this.lastErr = redisError(this.url, e, `lease ${op} of ${this.key}`);
    this.reporter?.report(this.lastErr);
  }

  private bounded<T>(op: string, p: Promise<T>): Promise<T> {
    return withTimeout(p, this.commandTimeoutMs, () => {
      throw new LeaseTimeoutError(op, this.commandTimeoutMs);
    });
  }
}

/** A Redis URL without its password, for messages and logs. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString().replace(/\/$/, "");
  } catch {
    return url;
  }
}

function clientUrl(redis: Redis): string {
  const o = (redis as { options?: { host?: string; port?: number; path?: string } }).options;
  if (o?.path) return `unix:${o.path}`;
  return `redis://${o?.host ?? "localhost"}:${o?.port ?? 6379}`;
}

/**
 * The one form every Redis failure takes in natslake's messages and logs: `redis at <url>: <reason>` (the
 * connection refused, a timeout …), so an operator reading a node's log sees at once that Redis is the problem.
 */
export function redisError(url: string, e: unknown, what?: string): Error {
  const reason = explainRedisRefusal(e) ?? (e instanceof Error ? e.message || e.name : String(e));
  const err = new Error(`redis at ${redactRedisUrl(url)}: ${what ? `${what}: ` : ""}${reason}`, { cause: e });
  err.name = "RedisError";
  return err;
}

/**
 * Rate-limits Redis failure reports: the first failure at once, then a changed reason at once, the same reason at
 * most every `repeatMs` (Redis down means a failure per lease call, several a second); one report when Redis answers
 * again after failing.
 */
export class RedisErrorReporter {
  private failing = false;
  private lastMessage = "";
  private lastAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly sink: (e: Error, ok: boolean) => void,
    private readonly now: () => number = () => performance.now(),
    private readonly repeatMs = 10_000,
  ) {}

  report(e: Error): void {
    const t = this.now();
    // Lease ops differ by op and key; the underlying reason is what changes when Redis' state does.
    const reason = e.cause instanceof Error ? e.cause.message : e.message;
    if (this.failing && reason === this.lastMessage && t - this.lastAt < this.repeatMs) return;
    this.failing = true;
    this.lastMessage = reason;
    this.lastAt = t;
    this.sink(e, false);
  }

  ok(url: string): void {
    if (!this.failing) return;
    this.failing = false;
    this.lastMessage = "";
    this.sink(new Error(`redis at ${redactRedisUrl(url)}: answering again`), true);
  }
}

/**
 * ioredis options for the lease's own connection: every command bounded by `commandTimeout`, and nothing queued or
 * re-sent across a reconnect (a SET NX or PEXPIRE that lands seconds after it was given up would only confuse
 * liveness): while disconnected, commands fail at once.
 */
export function leaseRedisOptions(commandTimeoutMs: number): RedisOptions {
  return {
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(1000, commandTimeoutMs),
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (times: number) => Math.min(50 * times, 1000),
    lazyConnect: true,
  };
}

/**
 * Opens a lease connection (see `leaseRedisOptions`) and waits until it is ready; a failure to connect throws
 * `redis at <url>: cannot connect: <reason>`. Connection errors while it reconnects go to `onError` in the same form
 * (default: ignored, since the lease reports them as lost/unknown, in `lastError()` and to `onRedisError`).
 */
export async function connectLeaseRedis(
  url: string,
  opts: { commandTimeoutMs?: number; onError?: (e: Error) => void; auth?: RedisOptions } = {},
): Promise<Redis> {
  const redis = new Redis(url, { ...opts.auth, ...leaseRedisOptions(opts.commandTimeoutMs ?? 500) });
  const onError = opts.onError;
  let lastSocketError: Error | undefined; // connect() itself only says "Connection is closed."
  redis.on("error", (e: Error) => {
    lastSocketError = e;
    onError?.(redisError(url, e));
  });
  try {
    await redis.connect();
  } catch (e) {
    redis.disconnect();
    throw redisError(url, lastSocketError ?? e, "cannot connect");
  }
  return redis;
}
