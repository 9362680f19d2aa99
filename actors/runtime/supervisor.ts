/**
 * Supervision: the policy that decides, after an actor instance failed, whether to build a fresh one and when.
 *
 * Restart with exponential back-off: the n-th consecutive restart waits `min(maxBackoffMs, minBackoffMs * 2^n)`,
 * scaled by a random factor in `[1 - jitter, 1 + jitter]` so that actors failing together (a lost connection) do not
 * retry in lock-step. The count of consecutive restarts goes back to zero once an instance has run without failing
 * for `resetAfterMs`. When `maxRestarts` restarts already happened within the last `withinMs`, the next failure is
 * escalated instead: the actor is stopped and `onEscalate` is called (without it, a child's escalation fails its
 * parent, and a top-level actor's goes to the system's `onEscalate`).
 *
 * `Supervisor` holds that state for one actor and is driven only by its cell (cell.ts); it reads time and
 * randomness from what it is given, so its decisions are deterministic under a fake clock.
 */
import { invalidArgument } from "./errors.ts";

/** Where a failure happened. `child` = a child escalated to this actor. */
export type FailurePhase = "create" | "preStart" | "receive" | "pipeToSelf" | "child";

export interface ActorFailure {
  readonly actor: string;
  readonly error: Error;
  readonly phase: FailurePhase;
  /** The message whose handling failed (phase `receive`); it is dropped, not retried. */
  readonly message?: unknown;
  /** The child whose escalation this is (phase `child`). */
  readonly child?: string;
}

export interface SupervisionOptions {
  /** First back-off (default 100 ms). */
  minBackoffMs?: number;
  /** Largest back-off before jitter (default 30 s). */
  maxBackoffMs?: number;
  /** Relative jitter, 0 ≤ jitter < 1 (default 0.2, i.e. ±20%). */
  jitter?: number;
  /** A run this long without failure resets the back-off (default 30 s). */
  resetAfterMs?: number;
  /** Restarts allowed within `withinMs` before the failure is escalated (default 10; 0 = never restart). */
  maxRestarts?: number;
  /** The sliding window for `maxRestarts` (default 60 s). */
  withinMs?: number;
  /** Called for every failure, after it is logged; a throw from it is logged and ignored. */
  onFailure?: (failure: ActorFailure) => void;
  /** Called once the actor was stopped after too many restarts; a throw from it is logged and ignored. */
  onEscalate?: (error: Error, failure: ActorFailure) => void;
}

export interface SupervisionStrategy {
  readonly minBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly jitter: number;
  readonly resetAfterMs: number;
  readonly maxRestarts: number;
  readonly withinMs: number;
}

export const DEFAULT_SUPERVISION: SupervisionStrategy = Object.freeze({
  minBackoffMs: 100,
  maxBackoffMs: 30_000,
  jitter: 0.2,
  resetAfterMs: 30_000,
  maxRestarts: 10,
  withinMs: 60_000,
});

const BACKOFF_FACTOR = 2;

export type SupervisorDecision =
  | { readonly action: "restart"; readonly delayMs: number; readonly attempt: number }
  | { readonly action: "escalate"; readonly restarts: number };

/** Validates options and fills defaults; throws `ActorError(InvalidArgument)` on nonsense. */
export function resolveSupervision(opts: SupervisionOptions = {}): SupervisionStrategy {
  const s: SupervisionStrategy = {
    minBackoffMs: opts.minBackoffMs ?? DEFAULT_SUPERVISION.minBackoffMs,
    maxBackoffMs: opts.maxBackoffMs ?? DEFAULT_SUPERVISION.maxBackoffMs,
    jitter: opts.jitter ?? DEFAULT_SUPERVISION.jitter,
    resetAfterMs: opts.resetAfterMs ?? DEFAULT_SUPERVISION.resetAfterMs,
    maxRestarts: opts.maxRestarts ?? DEFAULT_SUPERVISION.maxRestarts,
    withinMs: opts.withinMs ?? DEFAULT_SUPERVISION.withinMs,
  };
  const nonNegative = (key: keyof SupervisionStrategy): void => {
    const v = s[key];
    if (!(Number.isFinite(v) && v >= 0)) throw invalidArgument(`supervision ${key} must be a finite number ≥ 0, got ${v}`);
  };
  for (const key of ["minBackoffMs", "maxBackoffMs", "resetAfterMs", "withinMs", "maxRestarts"] as const) nonNegative(key);
  if (!Number.isInteger(s.maxRestarts)) throw invalidArgument(`supervision maxRestarts must be an integer, got ${s.maxRestarts}`);
  if (s.minBackoffMs > s.maxBackoffMs) {
    throw invalidArgument(`supervision minBackoffMs (${s.minBackoffMs}) exceeds maxBackoffMs (${s.maxBackoffMs})`);
  }
  if (!(s.jitter >= 0 && s.jitter < 1)) throw invalidArgument(`supervision jitter must be in [0, 1), got ${s.jitter}`);
  return s;
}

export class Supervisor {
  /** Consecutive restarts since the last healthy run; the back-off exponent. */
  private attempt = 0;
  /** When the current instance started handling messages; undefined while none runs. */
  private runningSince: number | undefined;
  /** Times of the restarts inside the window, oldest first. */
  private restarts: number[] = [];

  constructor(
    readonly strategy: SupervisionStrategy,
    private readonly random: () => number,
  ) {}

  /** The cell calls this when an instance finished `preStart` and starts taking messages. */
  running(now: number): void {
    this.runningSince = now;
  }

  /** The cell calls this once per failure; a `restart` decision is recorded as a restart. */
  decide(now: number): SupervisorDecision {
    const s = this.strategy;
    if (this.runningSince !== undefined && now - this.runningSince >= s.resetAfterMs) this.attempt = 0;
    this.runningSince = undefined;
    this.restarts = this.restarts.filter((t) => now - t < s.withinMs);
    if (this.restarts.length >= s.maxRestarts) return { action: "escalate", restarts: this.restarts.length };
    this.restarts.push(now);
    const base = Math.min(s.maxBackoffMs, s.minBackoffMs * BACKOFF_FACTOR ** this.attempt);
    const factor = 1 + s.jitter * (2 * this.random() - 1);
    const attempt = ++this.attempt;
    return { action: "restart", delayMs: Math.max(0, Math.round(base * factor)), attempt };
  }
}
