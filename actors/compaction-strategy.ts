/**
 * What differs between compacting an append bucket and a primary-key (LSM) bucket, behind one interface: the
 * writer's BucketCompactor (bucket-compactor.ts) plans a job through its strategy, rewrites it under the node's
 * compaction slot when the job asks for one, sends the changes as one CompactionEntry and tells the strategy what
 * was sent. Everything else of a writer is the same for both kinds of table.
 *
 * - append-compaction.ts: runs of small files of the bucket merged into target-size files (src/maintenance/compact.ts),
 *   in two lanes;
 * - lsm-compaction.ts: the bucket's LSM tree compacted as Paimon's writer does (src/lsm/), one job at a time, and the
 *   bucket's sorted runs reported so the writer stops reading at `num-sorted-run.stop-trigger`.
 */
import type { CompactionChange } from "./wire/messages.ts";

/**
 * Which jobs a run may start. `any`: whatever the plan picks, under the node's compaction slot. `small`: a small job
 * beside the bucket's `any` job, without a slot (append tables only: see append-compaction.ts).
 */
export type CompactionLane = "any" | "small";

/** What a compaction took and made: the counts of a job's parts and of the job. */
export interface CompactionCounts {
  /** Input files (rewritten or only moved to another level) and the files after (moved files included). */
  inputFiles: number;
  outputFiles: number;
  /** Bytes of the files read and rewritten, and of the files written (a moved file counts in neither). */
  bytesRead: number;
  bytesWritten: number;
  /** Rows of the rewritten inputs, and of them those whose row groups were copied byte for byte. */
  rows: number;
  rowsCopied: number;
}

/** One partition's part of a job, rewritten and not sent yet. */
export interface RewrittenPart extends CompactionCounts {
  change: CompactionChange;
  /** Removes the files this part wrote (never a file it only moved: that one is live). */
  abort(): Promise<void>;
}

/** A job planned against a snapshot: rewrite it, then say which of its parts were sent. */
export interface PlannedJob {
  readonly planSnapshotId: number;
  /** Whether the rewrite holds one of the node's compaction slots (its inputs' rows are in memory meanwhile). */
  readonly needsSlot: boolean;
  /**
   * Rewrites the job, part after part, until done or `stopped()`. On failure it removes what it wrote and throws;
   * when stopped, the parts done are returned (the caller removes them).
   */
  rewrite(stopped: () => boolean): Promise<RewrittenPart[]>;
  /**
   * The job ended: `sent` went into the commit stream (maybe none: nothing fitted, stopped, or it failed) as the
   * entry `compactionId` (null when nothing was sent).
   */
  settle(sent: readonly RewrittenPart[], compactionId: string | null): void;
}

/** What a writer shows of its bucket: the gauges, and whether it stops reading (back-pressure). */
export interface BucketShape {
  /** Live data files of the bucket in the latest snapshot the writer saw (every partition). */
  liveFiles: number;
  /**
   * Primary-key buckets: the sorted runs of the bucket's fullest LSM tree (one per partition) — level-0 files and
   * non-empty levels of the snapshot, plus the level-0 files of flushes sent and not committed yet. Null otherwise.
   */
  sortedRuns: number | null;
  /** The writer stops reading from its stream while this is true (`num-sorted-run.stop-trigger` reached). */
  stop: boolean;
}

export interface CompactionStrategy {
  /** The lanes it plans jobs in (a writer runs at most one job per lane at once). */
  readonly lanes: readonly CompactionLane[];
  /**
   * Whether the next job is planned as soon as one is sent (and the bucket's shape read again), not at the next check:
   * primary-key buckets, whose back-pressure waits on compaction.
   */
  readonly chains: boolean;
  /** Plans a job of `lane` now (monotonic `now`, ms); null when there is nothing to do for this lane. */
  plan(lane: CompactionLane, now: number): Promise<PlannedJob | null>;
  /** The bucket as the latest snapshot (and the flushes in flight) show it. */
  observe(): Promise<BucketShape>;
  /**
   * A flush's committable is in the commit stream: `level0Files` data files per partition (hex of the framed
   * partition row), committed once the bucket's offset reaches `lastOffset`.
   */
  flushSent(lastOffset: number, level0Files: ReadonlyMap<string, number>): void;
  /** The writer re-reads its bucket from the committed offset: flushes sent and not committed will not be. */
  flushesDropped(): void;
  /**
   * The leader rejected the job sent as `compactionId` (its outputs are deleted): it will not land, and the next plan
   * must not count on it. False when no job sent under that id is still counted (it was given up already).
   */
  compactionRejected(compactionId: string): boolean;
}
