/**
 * CompactionSlots: how many compactions run at once on a node, shared by its bucket writers. A compaction holds the
 * rows of its inputs in memory while it rewrites them; a node with many buckets must not rewrite them all at once.
 * Waiters are served in arrival order.
 */
export class CompactionSlots {
  private free: number;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly size: number) {
    if (!(Number.isInteger(size) && size >= 1)) throw new Error(`compaction slots must be a positive integer, got ${size}`);
    this.free = size;
  }

  /** Resolves with the release function of a slot, once one is free. */
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiters.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next !== undefined) next();
      else this.free++;
    };
  }

  /** Slots in use (for tests and metrics). */
  get inUse(): number {
    return this.size - this.free;
  }
}
