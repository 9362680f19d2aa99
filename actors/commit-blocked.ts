/**
 * `natslake_commit_blocked{table, reason}`: 1 while the table's leader refuses to commit because a file of the table
 * it must build on is damaged or missing (src/table/damaged-file.ts) — `reason` says which kind, e.g.
 * `damaged-snapshot`, `missing-manifest-list` — and 0 for that reason once a round commits again. Commit rounds keep
 * failing meanwhile (natslake_commit_failures_total); this gauge says the failure will not go away by itself.
 */
import type { Meter, ObservableResult } from "@opentelemetry/api";
import { damagedFileOf } from "../src/table/damaged-file.ts";
import { METRICS } from "./metrics.ts";

/** The metric's `reason` of an error, or null when the error is not about a damaged or missing file. */
export function blockedReasonOf(e: unknown): string | null {
  const d = damagedFileOf(e);
  return d === null ? null : `${d.problem}-${d.kind}`;
}

export class CommitBlockedGauge {
  /**
   * Each reason reported so far: 1 while it blocks, 0 after (a series that vanished would not show the recovery). A
   * leader that was never blocked shows reason `none` at 0: the series is there from the start, for dashboards.
   */
  private readonly reasons = new Map<string, 0 | 1>([["none", 0]]);
  private readonly gauge;
  private readonly observe = (r: ObservableResult<{ table: string; reason: string }>): void => {
    for (const [reason, v] of this.reasons) r.observe(v, { table: this.table, reason });
  };

  constructor(
    meter: Meter,
    private readonly table: string,
  ) {
    this.gauge = METRICS.commitBlocked.create(meter);
    this.gauge.addCallback(this.observe);
  }

  /** A round (or a leadership's setup) failed with `e`: blocked by it when it names a damaged or missing file. */
  failed(e: unknown): string | null {
    const reason = blockedReasonOf(e);
    if (reason !== null) {
      for (const k of this.reasons.keys()) this.reasons.set(k, 0);
      this.reasons.set(reason, 1);
    }
    return reason;
  }

  /** A round committed (or decided) without error: nothing blocks. */
  cleared(): void {
    for (const k of this.reasons.keys()) this.reasons.set(k, 0);
  }

  close(): void {
    this.gauge.removeCallback(this.observe);
  }
}
