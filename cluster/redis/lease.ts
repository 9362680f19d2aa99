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
const RELEASE_LUA = `
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
  }

  async tryAcquire(): Promise<LeaseGrant | null> {
    const token = `${this.holderId}:${randomUUID()}`;
    const seq = ++this.seq;
    const start = this.now();
    let reply: unknown;
    try {
      reply = await this.bounded("acquire", this.redis.eval(ACQUIRE_LUA, 2, this.key, this.epochKey, token, this.ttlMs));
    } catch (e) {
      this.fail(e);
      // Unknown outcome: the SET may have landed. Delete our token (if it is there) so that nobody waits out a ttl
      // for a lease nobody believes it holds.
      void this.deleteIfOwned(token).catch(() => undefined);
      return null;
    }
    if (reply === 0) return null;
    if (typeof reply !== "number" || !Number.isSafeInteger(reply) || reply < 1) {
      this.fail(new Error(`redis lease acquire: unexpected reply ${String(reply)}`));
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
      this.fail(e);
      this.voidDeadline(grant.token, seq);
      return false;
    }
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
      this.fail(e);
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

  private fail(e: unknown): void {
    this.lastErr = e instanceof Error ? e : new Error(String(e));
  }

  private async bounded<T>(op: string, p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new LeaseTimeoutError(op, this.commandTimeoutMs)), this.commandTimeoutMs);
    });
    try {
      return await Promise.race([p, timeout]);
    } finally {
      clearTimeout(timer);
    }
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
 * Opens a lease connection (see `leaseRedisOptions`) and waits until it is ready. Connection errors while it
 * reconnects go to `onError` (default: ignored, since the lease reports them as lost/unknown and in `lastError()`).
 */
export async function connectLeaseRedis(
  url: string,
  opts: { commandTimeoutMs?: number; onError?: (e: Error) => void } = {},
): Promise<Redis> {
  const redis = new Redis(url, leaseRedisOptions(opts.commandTimeoutMs ?? 500));
  redis.on("error", opts.onError ?? (() => undefined));
  try {
    await redis.connect();
  } catch (e) {
    redis.disconnect();
    throw e;
  }
  return redis;
}

// ---------------------------------------------------------------------------------------------------------------

export interface LeaseKeeperOptions {
  /** Time between renewals (default ttl/4). Must leave room for a renewal inside ttl − safety margin. */
  intervalMs?: number;
  now?: () => number;
}

export interface LeaseKeeperStats {
  /** How late a renewal started relative to when its timer was due (event-loop stalls, GC, SIGSTOP). */
  renewLagMsMax: number;
  renewLagMsLast: number;
  /** Round trip of the renew request (start to reply). */
  renewRttMsMax: number;
  renewRttMsLast: number;
  renewals: number;
  failures: number;
}

/** `renew-failed`: Redis said no, or did not answer in time; `deadline-passed`: the renewal came back too late. */
export type LeaseLostReason = "renew-failed" | "deadline-passed";

/**
 * Keeps a granted lease alive: renews every `intervalMs` (fixed delay after the previous renewal started, never
 * overlapping), and reports the loss once through `onLost` when a renewal fails, or when it succeeds too late to
 * leave a valid deadline (the round trip ate the whole budget). After a loss it stops; it never re-acquires.
 */
export class LeaseKeeper {
  readonly intervalMs: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  /** Fires at the lease deadline unless a renewal moved it: reports a loss even while a renewal is stuck. */
  private watchdog: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private running = false;
  private lostReason: LeaseLostReason | undefined;
  private readonly lostCallbacks: ((reason: LeaseLostReason) => void)[] = [];
  private readonly st: LeaseKeeperStats = {
    renewLagMsMax: 0,
    renewLagMsLast: 0,
    renewRttMsMax: 0,
    renewRttMsLast: 0,
    renewals: 0,
    failures: 0,
  };

  constructor(
    private readonly lease: Lease,
    readonly grant: LeaseGrant,
    opts: LeaseKeeperOptions = {},
  ) {
    this.intervalMs = opts.intervalMs ?? Math.max(1, Math.floor(lease.ttlMs / 4));
    if (!(this.intervalMs > 0 && this.intervalMs < lease.ttlMs)) {
      throw new RangeError(`intervalMs must be in (0, ttl ${lease.ttlMs}), got ${this.intervalMs}`);
    }
    this.now = opts.now ?? (() => performance.now());
  }

  /** Starts renewing; the first renewal is due one interval after the grant was requested. */
  start(): this {
    if (this.running || this.lostReason) return this;
    this.running = true;
    this.armWatchdog();
    this.arm(this.grant.acquiredAtMono + this.intervalMs);
    return this;
  }

  /** Called once, when the lease is lost. A callback registered after the loss is called at once. */
  onLost(callback: (reason: LeaseLostReason) => void): void {
    if (this.lostReason) callback(this.lostReason);
    else this.lostCallbacks.push(callback);
  }

  /** True while the monotonic clock is before the lease's deadline (and no loss was reported). */
  isValid(): boolean {
    return this.lostReason === undefined && this.now() < this.lease.validUntil();
  }

  stats(): LeaseKeeperStats {
    return { ...this.st };
  }

  /** Stops renewing and waits for a renewal in flight; `release` also deletes the key if it is still ours. */
  async stop(opts: { release?: boolean } = {}): Promise<void> {
    this.running = false;
    this.clearTimers();
    await this.inFlight;
    if (opts.release) await this.lease.release(this.grant);
  }

  private arm(dueAt: number): void {
    if (!this.running) return;
    const delay = Math.max(0, dueAt - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.inFlight = this.renewOnce(dueAt).finally(() => {
        this.inFlight = undefined;
      });
    }, delay);
  }

  private armWatchdog(): void {
    clearTimeout(this.watchdog);
    const check = (): void => {
      this.watchdog = undefined;
      if (!this.running) return;
      const left = this.lease.validUntil() - this.now();
      if (left <= 0) this.declareLost("deadline-passed");
      else this.watchdog = setTimeout(check, Math.ceil(left));
    };
    this.watchdog = setTimeout(check, Math.max(0, Math.ceil(this.lease.validUntil() - this.now())));
  }

  private clearTimers(): void {
    clearTimeout(this.timer);
    clearTimeout(this.watchdog);
    this.timer = undefined;
    this.watchdog = undefined;
  }

  private async renewOnce(dueAt: number): Promise<void> {
    if (!this.running) return;
    const start = this.now();
    const lag = Math.max(0, start - dueAt);
    this.st.renewLagMsLast = lag;
    this.st.renewLagMsMax = Math.max(this.st.renewLagMsMax, lag);
    let ok: boolean;
    try {
      ok = await this.lease.renew(this.grant);
    } catch {
      ok = false; // the port promises not to throw; any other Lease that does has not proved it still holds
    }
    const end = this.now();
    const rtt = end - start;
    this.st.renewRttMsLast = rtt;
    this.st.renewRttMsMax = Math.max(this.st.renewRttMsMax, rtt);
    if (!this.running) return;
    if (!ok) {
      this.st.failures++;
      this.declareLost("renew-failed");
      return;
    }
    this.st.renewals++;
    if (end >= this.lease.validUntil()) {
      this.declareLost("deadline-passed");
      return;
    }
    this.armWatchdog();
    // Next renewal one interval after this one started, but never before this one's reply: no overlap, and the lag
    // measured next time is timer/event-loop delay only.
    this.arm(Math.max(start + this.intervalMs, end));
  }

  private declareLost(reason: LeaseLostReason): void {
    if (this.lostReason) return;
    this.lostReason = reason;
    this.running = false;
    this.clearTimers();
    for (const cb of this.lostCallbacks.splice(0)) {
      try {
        cb(reason);
      } catch (e) {
        // Every listener hears about the loss; a listener's own error is rethrown, not swallowed.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }
}
