/**
 * BucketCompactor: the compaction of one bucket by the writer that owns it (as Paimon's writers compact their own
 * buckets), off the writer's ingest path — the writer starts a job and goes on reading and flushing; a job that takes
 * long only delays the next job. The same for append and primary-key buckets: what differs — how a job is planned
 * and rewritten, and whether the bucket's shape asks the writer to stop reading — is the table's CompactionStrategy
 * (compaction-strategy.ts: append-compaction.ts, lsm-compaction.ts).
 *
 * A job: the strategy plans it against the latest snapshot (manifests read through one cache per table on the node),
 * it is rewritten — under a node-wide CompactionSlots permit when it asks for one, which bounds memory — and its
 * changes go into the commit stream as one CompactionEntry (as many as fit in one message; the others' outputs are
 * removed). The leader lands it as a COMPACT snapshot or rejects it, deletes its outputs
 * (src/commit/compaction-commit.ts) and tells the writer (`compactionRejected`). Nothing here is durable: a writer
 * that dies forgets its jobs; the leader still decides what reached the commit stream, and outputs never sent become
 * orphans for orphan-file cleanup.
 */
import { randomUUID } from "node:crypto";
import { failpointAsync } from "../src/failpoints.ts";
import { ManifestStore, sharedManifestCache } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import { encodeMsg } from "./wire/codec.ts";
import { payloadLimit } from "./wire/limits.ts";
import type { CompactionEntry } from "./wire/messages.ts";
import type { CommitLog } from "./ports.ts";
import type { CompactionSlots } from "./compaction-slots.ts";
import type { BucketShape, CompactionCounts, CompactionLane, CompactionStrategy, RewrittenPart } from "./compaction-strategy.ts";
import { sharedParquetPool, type ParquetEncoderPool } from "../src/codec/parquet-pool.ts";
import { AppendCompaction } from "./append-compaction.ts";
import { LsmCompaction } from "./lsm-compaction.ts";
import { inlineLsmRewriter, type LsmRewriter } from "./lsm-rewriter.ts";

export type { CompactionLane } from "./compaction-strategy.ts";
// The append rules' figures, where bench/ and tests have always found them.
export { SMALL_LANE_BYTES, WRITER_SIZE_RATIO, smallTask, writerSizeRatio } from "./append-compaction.ts";

/**
 * One manifest cache per table object, i.e. per table on a node, shared by the compactors of all its buckets there:
 * each plans against the latest snapshot every few commits, and with a cache each a new manifest was fetched once per
 * bucket (on an object store, most of a cluster's GETs per commit).
 */
const sharedManifests = new WeakMap<Table, ManifestStore>();

/** The manifest cache of `table` on this node. */
export function sharedManifestStore(table: Table): ManifestStore {
  let store = sharedManifests.get(table);
  if (store === undefined) sharedManifests.set(table, (store = new ManifestStore(table, sharedManifestCache(table))));
  return store;
}

/**
 * How often a writer plans its bucket when the node sets no `compactionInterval`: every commit interval, at least
 * 250 ms. A bucket keeps the files of the older levels plus what flushed since its last plan and the running job's
 * landing: planning every 2 flushes let a bucket reach 10–11 live files at one sample of 60 in 10-minute runs at
 * 250 ms commits (five older levels beside five or six fresh flushes), every flush 9 at most, 6–8 otherwise, with
 * publish → visible p99 312 ms and planning's CPU flat (the same run). Planning reads only the manifests new since
 * the last plan (a shared cache), and an idle plan rewrites nothing.
 */
export function defaultCompactionInterval(commitIntervalMs: number): number {
  return Math.max(250, commitIntervalMs);
}

/**
 * The strategy of `table`'s buckets: primary-key tables compact their LSM trees, append tables their small files.
 * `pool`: the Parquet workers of append rewrites (default the process's); `rewriter`: where primary-key rewrites run
 * (default the calling thread, decoding and encoding in `pool`).
 */
export function compactionStrategyFor(table: Table, d: { bucket: number; now: () => number; pool?: ParquetEncoderPool | undefined; rewriter?: LsmRewriter | undefined }): CompactionStrategy {
  const manifests = sharedManifestStore(table);
  if (table.isPrimaryKeyTable) return new LsmCompaction({ table, bucket: d.bucket, manifests, rewriter: d.rewriter ?? inlineLsmRewriter(d.pool ?? sharedParquetPool()), now: d.now });
  return new AppendCompaction({ table, bucket: d.bucket, manifests, pool: d.pool, now: d.now });
}

export interface BucketCompactorDeps {
  table: Table;
  bucket: number;
  ownerEpoch: number;
  writerId: string;
  commitLog: CommitLog;
  slots: CompactionSlots;
  /** How jobs are planned and rewritten: append-compaction.ts or lsm-compaction.ts. */
  strategy: CompactionStrategy;
  /** Monotonic ms. */
  now: () => number;
}

/** A job's outcome: the counts of the parts it sent (row groups copied byte for byte: src/maintenance/compact-copy.ts). */
export interface CompactionJobResult extends CompactionCounts {
  /** The entry sent (null: nothing worth compacting). */
  entry: CompactionEntry | null;
  /** Milliseconds waiting for the node's compaction slot, and rewriting under it (0 when nothing was rewritten). */
  slotWaitMs: number;
  rewriteMs: number;
}

/** A job that sent nothing (nothing worth compacting, stopped, or nothing fitted a message). */
const NOTHING_SENT: Readonly<CompactionJobResult> = Object.freeze({ entry: null, inputFiles: 0, outputFiles: 0, bytesRead: 0, bytesWritten: 0, rows: 0, rowsCopied: 0, slotWaitMs: 0, rewriteMs: 0 });

export class BucketCompactor {
  private stopped = false;
  /** The compactionId of the entry being appended to the commit stream, and whether its rejection came meanwhile. */
  private sending: { compactionId: string; rejected: boolean } | null = null;

  constructor(private readonly d: BucketCompactorDeps) {}

  /** Jobs in progress finish without sending (their outputs are removed). */
  stop(): void {
    this.stopped = true;
  }

  /** The lanes its jobs run in (see CompactionStrategy.lanes). */
  get lanes(): readonly CompactionLane[] {
    return this.d.strategy.lanes;
  }

  /** See CompactionStrategy.chains. */
  get chains(): boolean {
    return this.d.strategy.chains;
  }

  /** The bucket's shape (gauges and back-pressure), see CompactionStrategy.observe. */
  observe(): Promise<BucketShape> {
    return this.d.strategy.observe();
  }

  /** See CompactionStrategy.flushSent. */
  flushSent(lastOffset: number, level0Files: ReadonlyMap<string, number>): void {
    this.d.strategy.flushSent(lastOffset, level0Files);
  }

  /** See CompactionStrategy.flushesDropped. */
  flushesDropped(): void {
    this.d.strategy.flushesDropped();
  }

  /**
   * The leader rejected the entry `compactionId` (see CompactionStrategy.compactionRejected). One that arrives while
   * its append is still being acknowledged (the leader may read the entry first) is passed on once the job settled.
   */
  compactionRejected(compactionId: string): boolean {
    if (this.sending?.compactionId === compactionId) {
      this.sending.rejected = true;
      return true;
    }
    return this.d.strategy.compactionRejected(compactionId);
  }

  /**
   * Plans, rewrites and sends one job of the lane. Throws on failure (outputs written by it are removed unless sent).
   */
  async runOnce(lane: CompactionLane = "any"): Promise<CompactionJobResult> {
    const job = await this.d.strategy.plan(lane, this.d.now());
    if (job === null) return NOTHING_SENT;
    let sent: RewrittenPart[] = [];
    let sentAs: string | null = null;
    try {
      if (this.stopped) return NOTHING_SENT;
      const waitFrom = this.d.now();
      const release = job.needsSlot ? await this.d.slots.acquire() : () => undefined;
      const rewriteFrom = this.d.now();
      let parts: RewrittenPart[];
      try {
        parts = await job.rewrite(() => this.stopped);
      } finally {
        release();
      }
      const rewriteMs = this.d.now() - rewriteFrom;
      if (this.stopped || parts.length === 0) {
        await Promise.all(parts.map((p) => p.abort()));
        return NOTHING_SENT;
      }
      const entry = this.fitting(parts, job.planSnapshotId);
      const fitted = parts.slice(0, entry.changes.length);
      await Promise.all(parts.slice(entry.changes.length).map((p) => p.abort()));
      if (fitted.length === 0) return NOTHING_SENT;
      await failpointAsync("writer.compaction-before-send");
      // From here the outcome may be unknown (the append can fail after the server stored it): the outputs stay —
      // the leader decides them, or orphan-file cleanup removes them — and the strategy treats the job as sent.
      sent = fitted;
      sentAs = entry.compactionId;
      this.sending = { compactionId: entry.compactionId, rejected: false };
      await this.d.commitLog.append(entry, `compaction-${entry.compactionId}`);
      return {
        entry,
        inputFiles: sum(sent, (p) => p.inputFiles),
        outputFiles: sum(sent, (p) => p.outputFiles),
        bytesRead: sum(sent, (p) => p.bytesRead),
        bytesWritten: sum(sent, (p) => p.bytesWritten),
        rows: sum(sent, (p) => p.rows),
        rowsCopied: sum(sent, (p) => p.rowsCopied),
        slotWaitMs: rewriteFrom - waitFrom,
        rewriteMs,
      };
    } finally {
      job.settle(sent, sentAs);
      const early = this.sending;
      this.sending = null;
      if (early?.rejected === true) this.d.strategy.compactionRejected(early.compactionId);
    }
  }

  /** The entry for the longest prefix of `parts` whose encoding fits in one message (maybe none). */
  private fitting(parts: readonly RewrittenPart[], planSnapshotId: number): CompactionEntry {
    const limit = payloadLimit(this.d.commitLog.maxPayload);
    const entryOf = (ps: readonly RewrittenPart[]): CompactionEntry => ({
      type: "compaction",
      v: 1,
      table: this.d.table.name,
      bucket: this.d.bucket,
      ownerEpoch: this.d.ownerEpoch,
      writerId: this.d.writerId,
      compactionId: randomUUID(),
      planSnapshotId,
      changes: ps.map((p) => p.change),
    });
    for (let n = parts.length; n > 0; n--) {
      const e = entryOf(parts.slice(0, n));
      if (encodeMsg(e).length <= limit) return e;
    }
    return entryOf([]);
  }
}

const sum = <T>(xs: readonly T[], f: (x: T) => number): number => xs.reduce((n, x) => n + f(x), 0);
