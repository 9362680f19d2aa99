/**
 * The time port of the runtime: timers, supervision back-off and ask deadlines all go through it, so tests can
 * drive time with a fake and the node can substitute its own. `setTimer` callbacks run on the event loop, never
 * synchronously inside `setTimer`.
 */
import type { Cancellable } from "./actor.ts";

export interface RuntimeClock {
  /** Milliseconds; only differences are used (restart windows, back-off reset). */
  now(): number;
  /** Calls `fn` once after `delayMs`, unless cancelled. */
  setTimer(fn: () => void, delayMs: number): Cancellable;
}

/** Real time: `performance.now()` (monotonic, immune to wall-clock steps) and `setTimeout`. */
export const realClock: RuntimeClock = Object.freeze({
  now: () => performance.now(),
  setTimer(fn: () => void, delayMs: number): Cancellable {
    const handle = setTimeout(fn, delayMs);
    return { cancel: () => clearTimeout(handle) };
  },
});
