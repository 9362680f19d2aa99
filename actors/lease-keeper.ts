/**
 * Keeping a granted lease alive, over the Lease port (any implementation: cluster/redis/lease.ts is the Redis one).
 *
 * An active leader needs from its keeper: whether it may still act (monotonic deadline not passed), a way to stop
 * renewing, and renewal statistics — renew lag must stay well below the TTL, or work on the event loop is starving
 * the timers (CPU-heavy encoding belongs in worker threads).
 */
import type { Lease, LeaseGrant } from "./lease-port.ts";

/** What the committer needs from a keeper (the node wraps a LeaseKeeper in it). */
export interface LeaseKeeperLike {
  isValid(): boolean;
  stop(): void | Promise<void>;
  stats(): { renewLagMsMax: number; renewLagMsLast: number; renewals: number; failures: number };
}

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

/**
 * `renew-failed`: Redis said no, or did not answer in time. `deadline-passed`: the monotonic deadline went by before
 * a renewal could move it (the event loop stalled, or a renewal's round trip ate the whole budget).
 */
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
