/**
 * Who commits a table on its leader: the committer's rounds, or — for a while — a maintenance job's commit.
 *
 * The committer lands a snapshot every commit interval (100–250 ms). A maintenance job on the same node (a restore,
 * a compaction, a partition drop asked of the leader) commits through the same chain and can lose every race to
 * those rounds: its commit takes longer to prepare than the interval between theirs. Once it has lost a few
 * (EXCLUSIVE_AFTER_LOST_RACES), the job takes the table's turn: the committer starts no round while the job holds
 * it, and the job's commit waits for the round in progress to end. The turn is given back when the commit lands or
 * fails, and at the latest after `maxHoldMs` — ingest never stops for longer than that.
 */
export class CommitTurns {
  private roundRunning = false;
  /** A job holds the turn (and since when, monotonic ms); `hold` numbers the holds. */
  private heldSince: number | null = null;
  private hold = 0;
  /** Jobs waiting for the turn, in order. */
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly d: {
      /** Monotonic ms. */
      now: () => number;
      /** The longest a job may hold the turn; then it is taken back (the job's commit goes on, racing again). */
      maxHoldMs: number;
      /** Called when a job's hold ran out (a log line). */
      onHoldExpired?: (heldMs: number) => void;
    },
  ) {}

  /** The committer asks before a round: false while a job holds the turn or waits for it (the round is skipped). */
  tryStartRound(): boolean {
    this.handOver(); // a hold that ran out passes the turn on
    if (this.heldSince !== null || this.waiting.length > 0) return false;
    this.roundRunning = true;
    return true;
  }

  /** The committer's round ended: a job waiting for the turn gets it. */
  endRound(): void {
    this.roundRunning = false;
    this.handOver();
  }

  /**
   * A job's commit takes the turn once no round runs; the function it resolves to gives it back (idempotent). A turn
   * not granted within `maxHoldMs` (a round that never ends) resolves anyway, holding nothing: the job races on.
   */
  take(): Promise<() => void> {
    return new Promise((resolve) => {
      const grant = (): void => {
        clearTimeout(timer);
        this.heldSince = this.d.now();
        const mine = ++this.hold;
        let given = false;
        resolve(() => {
          if (given) return;
          given = true;
          if (this.hold === mine && this.heldSince !== null) this.heldSince = null;
          this.handOver();
        });
      };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(grant);
        if (i < 0) return;
        this.waiting.splice(i, 1);
        resolve(() => undefined);
      }, this.d.maxHoldMs);
      timer.unref?.();
      this.waiting.push(grant);
      this.handOver();
    });
  }

  /** Whether a job holds the turn now (metrics, tests). */
  get held(): boolean {
    this.expireHold();
    return this.heldSince !== null;
  }

  private handOver(): void {
    this.expireHold();
    if (this.roundRunning || this.heldSince !== null) return;
    this.waiting.shift()?.();
  }

  private expireHold(): void {
    if (this.heldSince === null) return;
    const heldMs = this.d.now() - this.heldSince;
    if (heldMs < this.d.maxHoldMs) return;
    this.heldSince = null;
    this.d.onHoldExpired?.(heldMs);
  }
}
