/**
 * Which committables a leader's round waits for before it commits: the rest of a beat.
 *
 * Writers flush on the beat (the multiples of the commit interval on the wall clock, actors/writer.ts), so every
 * bucket's committable of one beat reaches the leader within a few tens of milliseconds of the others. A leader that
 * commits as soon as the first one lands makes a snapshot of it alone and folds the others into a second one — and
 * the beat's last bucket waits for both. Measured in issue 10's run (250 ms commits, 6 buckets, 2 writer nodes):
 * 2 APPEND snapshots a beat, the first holding one committable and taking 15 ms (p99 56 ms) that the other five
 * waited through.
 *
 * So a round that read an append committable cut on beat B waits (at most `gatherWindowMs`) until every bucket that
 * flushed on the beat before (B − interval) has one of B or later pending: one APPEND snapshot a beat, which the
 * beat's last bucket reaches a round earlier. A bucket that did not flush on the previous beat is not waited for (an
 * idle bucket that starts again joins the next round), so a bucket that goes idle costs one window once. Early
 * flushes (a full buffer, a hand-off) carry no beat and are never waited for.
 *
 * A round that read only compactions waits the same window for more of them, or for the beat's appends (then it
 * waits as above): the writers' compactions of one beat end a few milliseconds apart, and each alone made its own
 * COMPACT snapshot (about one and a half a beat in the same run).
 */

/** The longest a round waits for the rest of a beat: a fifth of the commit interval, at least 5 ms. */
export function gatherWindowMs(commitIntervalMs: number): number {
  return Math.max(5, Math.floor(commitIntervalMs / 5));
}

/** What a pending commit-stream entry tells the gather: its bucket, its beat, and whether it is a compaction. */
export interface GatherEntry {
  bucket: number;
  compaction: boolean;
  beatMillis?: number | undefined;
}

export class BeatGather {
  /** Per bucket, the newest beat a committable of it was decided on. */
  private readonly lastBeat = new Map<number, number>();

  constructor(private readonly commitIntervalMs: number) {}

  /**
   * The buckets the round still waits for, given what it holds: empty when it holds no append cut on a beat, or when
   * every bucket that flushed on the beat before the newest one has a committable of that beat (or later) pending.
   */
  awaited(pending: readonly GatherEntry[]): number[] {
    let beat = -Infinity;
    const newestOf = new Map<number, number>();
    for (const e of pending) {
      if (e.compaction || e.beatMillis === undefined) continue;
      beat = Math.max(beat, e.beatMillis);
      newestOf.set(e.bucket, Math.max(newestOf.get(e.bucket) ?? -Infinity, e.beatMillis));
    }
    if (beat === -Infinity) return [];
    const previous = beat - this.commitIntervalMs;
    const out: number[] = [];
    for (const [bucket, last] of this.lastBeat) if (last === previous && (newestOf.get(bucket) ?? -Infinity) < beat) out.push(bucket);
    return out.sort((a, b) => a - b);
  }

  /** Whether the round holds only compactions (it then waits for more of them, or for appends). */
  static onlyCompactions(pending: readonly GatherEntry[]): boolean {
    return pending.length > 0 && pending.every((e) => e.compaction);
  }

  /** The round decided these: their beats are their buckets' last. */
  decided(entries: readonly GatherEntry[]): void {
    for (const e of entries) {
      if (e.compaction || e.beatMillis === undefined) continue;
      if ((this.lastBeat.get(e.bucket) ?? -Infinity) < e.beatMillis) this.lastBeat.set(e.bucket, e.beatMillis);
    }
  }
}
