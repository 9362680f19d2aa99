/**
 * Background upkeep by key (the committer's stream purges): at most one run per key at a time, runs of a key started
 * at least `spacingMs` apart. What is asked meanwhile is kept — the latest ask wins, because each covers the ones
 * before it (a purge "through" a later sequence) — and runs as soon as the spacing allows, so the last ask is never
 * lost, only delayed.
 *
 * Why spaced: the leader committed up to 10 snapshots a second at 100 ms commits and purged every bucket it touched
 * after each one (a stream-identity read and a purge request per bucket, plus the commit stream's purge): ~130
 * JetStream API requests a second on the leader's event loop and nats-server's, for retention that nobody needs
 * sooner than a second.
 */
import { ensureError } from "../src/errors.ts";

interface Ask {
  task: () => Promise<void>;
  onError: (e: Error) => void;
}

interface KeyState {
  running: boolean;
  lastStart: number;
  next: Ask | null;
  timer: ReturnType<typeof setTimeout> | null;
}

export class SpacedTasks {
  private readonly keys = new Map<string, KeyState>();
  private stopped = false;

  constructor(
    private readonly spacingMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Runs `task` for `key` now, or once the key's run in flight and its spacing allow (replacing an earlier ask). */
  run(key: string, task: () => Promise<void>, onError: (e: Error) => void): void {
    if (this.stopped) return;
    let k = this.keys.get(key);
    if (k === undefined) {
      k = { running: false, lastStart: -Infinity, next: null, timer: null };
      this.keys.set(key, k);
    }
    k.next = { task, onError };
    this.pump(k);
  }

  /** Asks waiting for their turn (for tests and logs). */
  get waiting(): number {
    let n = 0;
    for (const k of this.keys.values()) if (k.next !== null) n++;
    return n;
  }

  /** Drops what waits; runs in flight finish. Nothing runs after this. */
  stop(): void {
    this.stopped = true;
    for (const k of this.keys.values()) {
      if (k.timer !== null) clearTimeout(k.timer);
      k.timer = null;
      k.next = null;
    }
  }

  private pump(k: KeyState): void {
    if (this.stopped || k.running || k.timer !== null || k.next === null) return;
    const wait = k.lastStart + this.spacingMs - this.now();
    if (wait > 0) {
      k.timer = setTimeout(() => {
        k.timer = null;
        this.pump(k);
      }, wait);
      k.timer.unref?.();
      return;
    }
    const { task, onError } = k.next;
    k.next = null;
    k.running = true;
    k.lastStart = this.now();
    void task()
      .catch((e: unknown) => onError(ensureError(e)))
      .finally(() => {
        k.running = false;
        this.pump(k);
      });
  }
}
