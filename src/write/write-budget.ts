/**
 * WriteBudget: one memory budget for the write buffers of every bucket writer in a process, in the spirit of
 * Paimon's shared write-buffer pool (`MemoryPoolFactory`), where writers of one task share `write-buffer-size` and
 * the one holding the most memory is made to flush when another needs room.
 *
 * Why a budget in bytes across writers and not a row count per writer: decoding is several times faster than
 * Parquet encoding, so a writer catching up on a backlog decodes far ahead of its flushes. With only a per-bucket
 * row bound, a node owning six buckets held ~85 MB of decoded batches at once during a 1M-row catch-up (heap
 * snapshot), and peaked ~390 MB RSS. Holding decoded data the encoder cannot take yet buys no throughput.
 *
 * Each holder reports what it buffers (decoded, not yet cut for a flush) and what its flush in flight still holds.
 * When the total reaches the capacity:
 * - the holder with the largest buffer that is not flushing is asked to flush now (`preempt`);
 * - holders stop reading (`admits` is false for anyone already holding memory) until memory is released, and are
 *   woken then (`whenFreed`). A holder that holds nothing is always admitted, so none starves.
 *
 * Pure bookkeeping: no timers, no I/O; callbacks run synchronously from `update`/`release`.
 */
import { ErrorKind, LakeError } from "../errors.ts";

export interface BudgetHolder {
  /** Asked to flush its buffer early (it holds the largest buffer that is not being flushed). */
  preempt(): void;
}

interface Usage {
  holder: BudgetHolder;
  /** Decoded and not yet cut for a flush: what a preemption frees. */
  buffered: number;
  /** Cut for the flush in flight; freed when the flush ends. */
  flushing: number;
}

export class WriteBudget {
  private readonly usage = new Map<string, Usage>();
  private readonly waiters = new Map<string, () => void>();
  private total = 0;

  constructor(readonly capacityBytes: number) {
    if (!(Number.isFinite(capacityBytes) && capacityBytes > 0)) {
      throw new LakeError(ErrorKind.DataInvalid, `a write budget needs a positive size in bytes, got ${capacityBytes}`);
    }
  }

  /** Bytes held by every holder. */
  get usedBytes(): number {
    return this.total;
  }

  get exhausted(): boolean {
    return this.total >= this.capacityBytes;
  }

  /** Whether `id` may read more now: always while it holds nothing, else only under the capacity. */
  admits(id: string): boolean {
    const u = this.usage.get(id);
    return !this.exhausted || u === undefined || u.buffered + u.flushing === 0;
  }

  /**
   * Records what `id` holds now. Over capacity, the largest buffer not being flushed is preempted (at most once per
   * call; the holder decides whether it can flush). Less than before wakes the waiters.
   */
  update(id: string, holder: BudgetHolder, buffered: number, flushing: number): void {
    const prev = this.usage.get(id);
    const before = prev === undefined ? 0 : prev.buffered + prev.flushing;
    const now = Math.max(0, buffered) + Math.max(0, flushing);
    if (prev === undefined) this.usage.set(id, { holder, buffered: Math.max(0, buffered), flushing: Math.max(0, flushing) });
    else {
      prev.holder = holder;
      prev.buffered = Math.max(0, buffered);
      prev.flushing = Math.max(0, flushing);
    }
    this.total += now - before;
    if (this.exhausted) this.largestBuffer()?.preempt();
    if (now < before) this.wake();
  }

  /** Forgets `id` (its writer stopped): what it held is free. */
  release(id: string): void {
    const u = this.usage.get(id);
    this.waiters.delete(id);
    if (u === undefined) return;
    this.usage.delete(id);
    this.total -= u.buffered + u.flushing;
    this.wake();
  }

  /** Calls `wake` once, the next time memory is released (replacing an earlier registration of `id`). */
  whenFreed(id: string, wake: () => void): void {
    this.waiters.set(id, wake);
  }

  private largestBuffer(): BudgetHolder | null {
    let best: Usage | null = null;
    for (const u of this.usage.values()) if (u.buffered > 0 && (best === null || u.buffered > best.buffered)) best = u;
    return best?.holder ?? null;
  }

  private wake(): void {
    if (this.waiters.size === 0 || this.exhausted) return;
    const waiting = [...this.waiters.values()];
    this.waiters.clear();
    for (const w of waiting) w();
  }
}
