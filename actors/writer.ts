/**
 * BucketWriterActor: owns one bucket of one table for one owner epoch (a fresh actor per assignment).
 *
 * It reads the bucket's ingest subject from the committed offset + 1 (no acks: progress lives in snapshots), hands each
 * fetch to the bucket's session in a bucket-buffer worker, which decodes it into Arrow columns and keeps them (a
 * partitioned table's rows are routed here instead; bad rows go to the dead-letter subject with the reason, the rest of
 * the batch lands), and every commit interval — or when the buffer is full — writes Parquet files and sends one
 * committable per flush carrying `prevOffset` (where this flush's input starts) and `lastOffset` (the last stream
 * sequence it covers). Flushes are serialised, so committables form a chain. When the committer rejects one of its
 * committables, the actor drops everything buffered or in flight and resumes from the committed offset the rejection
 * names (its rejected files become orphans). When the committer rejects one of its compactions, the compactor stops
 * counting that job (and, for a primary-key bucket, the jobs planned on it) and plans the bucket again at once. On
 * revoke it flushes, sends its last committable, and reports the bucket released with the last offset it covered.
 */
import { SpanStatusCode, trace, type Meter, type Tracer } from "@opentelemetry/api";
import { ensureError, ErrorKind, LakeError } from "../src/errors.ts";
import { failpoint, failpointArmed, failpointAsync, failpointOnData } from "../src/failpoints.ts";
import { natslakeStateAsOf } from "../src/commit/stream-commit.ts";
import type { Table } from "../src/table/table.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Snapshot } from "../src/format/snapshot.ts";
import { TableWrite } from "../src/write/table-write.ts";
import type { WriteBudget } from "../src/write/write-budget.ts";
import type { CommitMessage } from "../src/commit/commit-message.ts";
import type { AppendResult } from "./ingest/bucket-buffer.ts";
import { BucketStallError, type BucketBuffers, type BucketSession } from "./ingest/bucket-buffers.ts";
import type { Committable, CompactionRejection, DeadLetter, Rejection } from "./wire/messages.ts";
import { decodeRows, oversized, type RejectedRow } from "./ingest/decode.ts";
import type { Actor, ActorContext, ActorRef, Cancellable } from "./runtime/index.ts";
import type { AttemptLog, BucketReader, Bus, Clock, CommitLog, IngestLog, IngestMessage } from "./ports.ts";
import { PoisonGuard, poisonLimits, type ProbeGate } from "./poison-guard.ts";
import { checkTableStream, STREAM_RECHECK_MS } from "./stream-check.ts";
import { METRICS } from "./metrics.ts";
import { failIfSchemaMovedOn } from "./schema-check.ts";
import { CommittableStore, toCommitEntry } from "./committable-store.ts";
import { payloadLimit } from "./wire/limits.ts";
import { TraceLinks, traceparentOf } from "./wire/trace-context.ts";
import { BucketCompactor, compactionStrategyFor, type CompactionJobResult, type CompactionLane } from "./bucket-compactor.ts";
import type { ParquetEncoderPool } from "../src/codec/parquet-pool.ts";
import type { CompactionSlots } from "./compaction-slots.ts";
import type { BucketShape } from "./compaction-strategy.ts";
import type { LsmRewriter } from "./lsm-rewriter.ts";
import { observeWriterBucket } from "./writer-gauges.ts";

export type WriterMsg =
  | { type: "opened"; generation: number; reader: BucketReader; offset: number; stream: string; seq: bigint | null }
  /** The table's offsets belong to another stream than the live one: nothing is read until they are reset. */
  | { type: "stream-mismatch"; generation: number; reason: string }
  | { type: "open-failed"; generation: number; error: Error }
  | { type: "pull" }
  | { type: "fetched"; generation: number; messages: IngestMessage[] }
  | { type: "fetch-failed"; generation: number; error: Error }
  | { type: "decode-failed"; generation: number; error: Error }
  | { type: "appended"; generation: number; lastSeq: number; firstPublishedAt: number; result: AppendResult }
  /** Isolating (actors/poison-guard.ts): `message` is recorded as the one tried alone, or `poison` says why it goes to the DLQ. */
  | { type: "probed"; generation: number; message: IngestMessage; poison: string | null }
  | { type: "flush-tick" }
  /** The node's write budget is full and this writer holds the largest buffer: flush it now. */
  | { type: "preempted" }
  | { type: "flushed"; generation: number; prevOffset: number; lastOffset: number; level0Files: ReadonlyMap<string, number> }
  | { type: "flush-failed"; generation: number; error: Error }
  | { type: "rejected"; rejection: Rejection }
  /** The leader did not land one of this writer's compactions. */
  | { type: "compaction-rejected"; rejection: CompactionRejection }
  | { type: "compacted"; lane: CompactionLane; result: CompactionJobResult }
  | { type: "compaction-failed"; lane: CompactionLane; error: Error }
  /** The bucket's shape as the latest snapshot and the flushes in flight show it (see BucketCompactor.observe). */
  | { type: "observed"; shape: BucketShape }
  | { type: "observe-failed"; error: Error }
  | { type: "revoke"; reply: (lastOffset: number) => void }
  /**
   * Re-open the bucket: from the committed offset (after a failed flush, whose committable may or may not have
   * landed), or after the last committable sent (the reader failed: what was flushed is in the commit stream, so
   * reading again from the committed offset would only make an overlapping committable to be rejected).
   */
  | { type: "reopen"; generation: number; from: "committed" | "sent" };

export interface WriterDeps {
  table: Table;
  bucket: number;
  ownerEpoch: number;
  writerId: string;
  ingestLog: IngestLog;
  commitLog: CommitLog;
  bus: Bus;
  clock: Clock;
  meter: Meter;
  commitIntervalMs: number;
  /** Flush early when this many rows are buffered. */
  maxBufferedRows: number;
  /** Messages per fetch. */
  fetchBatch: number;
  /**
   * The node's memory budget for write buffers, shared by its bucket writers: over it, a writer holding memory stops
   * reading until some is freed, and the largest buffer is flushed early. Absent: only `maxBufferedRows` bounds.
   */
  budget?: WriteBudget;
  /**
   * Where an unpartitioned table's rows are decoded and wait for their flush, which encodes them there (worker
   * threads on a node): those rows never reach this thread. A partitioned table's rows are routed here instead.
   */
  buffers: BucketBuffers;
  /**
   * Writer-side compaction of the bucket (actors/bucket-compactor.ts: an append bucket's small files, a primary-key
   * bucket's LSM tree): a job at most every `checkIntervalMs`, under the node's `slots`; append rewrites decode and
   * encode in `pool`, primary-key rewrites run in `rewriter` (default: this thread, with `pool`). Absent, or the
   * table's `write-only = true`: none — and a primary-key bucket then never stops reading for its sorted runs.
   */
  compaction?: { slots: CompactionSlots; checkIntervalMs: number; pool?: ParquetEncoderPool; rewriter?: LsmRewriter };
  /**
   * Where the bucket's read attempts are kept across processes (actors/poison-guard.ts): a message that fails every
   * read, or kills the writer, is dead-lettered after a bounded number of attempts. Absent: it is retried without end.
   */
  attempts?: { log: AttemptLog; gate: ProbeGate };
  /** Fetched messages no flush has covered for this long are reported (see `checkStall`; default STALL_REPORT_MS). */
  stallReportMs?: number;
  /** Flush spans (default: the global API's tracer, which records nothing until a process registers tracing). */
  tracer?: Tracer;
}

let nextBudgetId = 0;

/**
 * Fetched payload bytes a bucket holds waiting for the decode in flight, beyond which it reads no more: with a server
 * whose max_payload is large, `fetchBatch` messages alone could be gigabytes.
 */
const MAX_STASH_BYTES = 16 * 1024 * 1024;

/** A bucket whose fetched messages no flush covered for this long (and 20 commit intervals) is reported. */
const STALL_REPORT_MS = 15_000;
const STALL_INTERVALS = 20;

/**
 * Milliseconds from `nowMs` (wall clock) to the next flush: the next multiple of `intervalMs`, at least a quarter
 * interval away (a timer that fired a little early or late never makes two flushes back to back).
 */
export function nextFlushDelay(nowMs: number, intervalMs: number): number {
  const delay = intervalMs - (nowMs % intervalMs);
  return delay < intervalMs / 4 ? delay + intervalMs : delay;
}

/**
 * The beat a flush tick firing at `nowMs` stands for: the nearest multiple of `intervalMs` (a timer fires a little
 * late, sometimes a millisecond early), the same instant on every node whose clock is within half an interval.
 */
export function flushBeat(nowMs: number, intervalMs: number): number {
  return Math.round(nowMs / intervalMs) * intervalMs;
}

export class BucketWriterActor implements Actor<WriterMsg> {
  private generation = 0;
  private reader: BucketReader | null = null;
  private write: TableWrite | null = null;
  /** Where the next committable's input starts (the previous committable's lastOffset, or the committed offset). */
  private prevOffset = 0;
  /** Identity of the live stream this generation reads (checked against the table's snapshots at open). */
  private stream = "";
  /**
   * Primary-key tables: the bucket's next sequence number. Every row a flush cuts takes one, in stream order; it
   * starts where the committed flushes stopped — taken from the same snapshot or rejection as the offset — and
   * carries over a re-open after the last committable sent (those numbers are in flight). Null for append tables.
   */
  private seq: { next: bigint } | null = null;
  private readonly keyed: boolean;
  /** The last stream sequence appended to the buffer. */
  private lastSeq = 0;
  /** The last stream sequence fetched (appended, being decoded, or waiting in `stash`). */
  private fetchedSeq = 0;
  /** Fetched messages waiting for the decode in flight to finish (one decode at a time keeps stream order). */
  private stash: IngestMessage[] = [];
  private decoding = false;
  /** The bucket's rows kept by `buffers` (this generation's session), and what it holds since the last flush. */
  private session: BucketSession | null = null;
  private sessionRows = 0;
  private sessionBytes = 0;
  /**
   * A flush asked for while an append was in flight, with the beat a flush tick cut it on (see `flush`): it starts
   * once that append's dead letters are out. Null when none waits.
   */
  private flushWaiting: { beat: number | undefined } | null = null;
  private firstArrival = 0;
  /** Monotonic ms of the last flush that ended, or of the open (see `checkStall`). */
  private lastFlushedAt = 0;
  /** Monotonic ms at which a message no flush covers was first fetched after none was (an idle bucket waits for nothing). */
  private uncoveredSince = 0;
  /** The stall was reported (once per stall: a flush that ends clears it). */
  private stallReported = false;
  /** Trace contexts of the batches appended since the last flush cut: the next flush span links to them. */
  private traceLinks = new TraceLinks();
  private readonly tracer: Tracer;
  private pulling = false;
  private flushing = false;
  /** Bytes of the buffer cut for the flush in flight (still held until the flush ends). */
  private flushingBytes = 0;
  private flushId = 0;
  /** This instance's key in the write budget (a restarted actor is a new holder). */
  private readonly budgetId = `w${++nextBudgetId}`;
  /** Consecutive failed flushes (back-off). */
  private failures = 0;
  /** prevOffsets of committables sent in this generation: a rejection of anything else is stale. */
  private readonly sent = new Set<number>();
  private revoking: ((lastOffset: number) => void) | null = null;
  /** Poison messages (see actors/poison-guard.ts); null without an AttemptLog. */
  private readonly guard: PoisonGuard | null;
  /** This generation started from the committed offset and has not counted its attempt yet (it does at its first read). */
  private attemptUncounted = false;
  /** The offset this generation opened at. */
  private openedOffset = 0;
  /** Isolating: messages up to this stream sequence are read and flushed one at a time. Null: batches. */
  private isolateUntil: number | null = null;
  /** A batch of this bucket stalled its decode or encode: the next generation isolates at once (see PoisonGuard). */
  private stalledBatch = false;
  /** Lets the node's next probe in (see ProbeGate); held from a message's probe until its flush ended. */
  private probeRelease: { generation: number; release: () => void } | null = null;
  /** postStop ran: a probe that gets the gate now lets it go at once. */
  private closed = false;
  private readonly poisonMessages;
  private readonly stalls;
  /** The table's `natslake.ingest.max-message-rows`. */
  private readonly maxMessageRows: number;
  private tick: Cancellable | null = null;
  private readonly rowsIn;
  private readonly deadLetters;
  private readonly filesOut;
  private readonly bytesOut;
  private readonly preemptions;
  private readonly streamMismatches;
  /** The table's `write-buffer-size`: one bucket's buffer in bytes at most. */
  private readonly writeBufferBytes: number;
  /** Where committables too large for one message go (sent by reference). */
  private readonly store: CommittableStore;
  private readonly compactor: BucketCompactor | null;
  /** The lanes with a compaction job running (at most one job per lane: see CompactionLane). */
  private readonly compacting = new Set<CompactionLane>();
  /** Monotonic ms before which no compaction job starts. */
  private nextCompactionAt = 0;
  /** The compactionId of the last job the leader rejected, until the next job is sent. */
  private replannedAfter: string | null = null;
  /** The bucket's shape at the last observation (null before the first), and one observation at a time. */
  private shape: BucketShape | null = null;
  private observing = false;
  /** An observation failed and was reported (once until one succeeds). */
  private observeFailing = false;
  /**
   * Back-pressure: since when (monotonic ms) the bucket does not read because its sorted runs reached the stop
   * trigger, and up to when that time was counted in `stoppedMs`. Null while it reads.
   */
  private stopped: { since: number; counted: number } | null = null;
  private readonly stoppedMs;
  private readonly compactionBytes;
  private unobserveGauges: (() => void) | null = null;
  private readonly compactionJobs;
  private readonly compactionFiles;
  private readonly compactionRows;
  private readonly compactionSeconds;

  constructor(private readonly d: WriterDeps) {
    this.keyed = d.table.isPrimaryKeyTable;
    this.writeBufferBytes = d.table.options.writeBufferSize;
    this.tracer = d.tracer ?? trace.getTracer("natslake");
    this.store = new CommittableStore(d.table);
    this.rowsIn = METRICS.rowsIn.create(d.meter);
    this.deadLetters = METRICS.deadLetters.create(d.meter);
    this.filesOut = METRICS.filesWritten.create(d.meter);
    this.bytesOut = METRICS.bytesWritten.create(d.meter);
    this.streamMismatches = METRICS.streamMismatches.create(d.meter);
    this.poisonMessages = METRICS.poisonMessages.create(d.meter);
    this.stalls = METRICS.bucketStalls.create(d.meter);
    this.maxMessageRows = d.table.options.int("natslake.ingest.max-message-rows");
    this.guard = d.attempts === undefined ? null : new PoisonGuard(d.attempts.log, d.table.name, d.bucket, poisonLimits(d.table.options.int("natslake.writer.max-attempts")));
    // Append buckets merge small files, primary-key buckets compact their LSM trees: the strategy says which.
    const now = (): number => d.clock.monotonic();
    this.compactor =
      d.compaction !== undefined && !d.table.options.bool("write-only")
        ? new BucketCompactor({
            table: d.table,
            bucket: d.bucket,
            ownerEpoch: d.ownerEpoch,
            writerId: d.writerId,
            commitLog: d.commitLog,
            slots: d.compaction.slots,
            strategy: compactionStrategyFor(d.table, { bucket: d.bucket, now, pool: d.compaction.pool, rewriter: d.compaction.rewriter }),
            now,
          })
        : null;
    this.compactionJobs = METRICS.compactionJobs.create(d.meter);
    this.compactionFiles = METRICS.compactionFiles.create(d.meter);
    this.compactionRows = METRICS.compactionRows.create(d.meter);
    // Where a bucket's compaction time goes: waiting for the node's slot (other buckets' rewrites) or rewriting.
    this.compactionSeconds = METRICS.compactionSeconds.create(d.meter);
    this.compactionBytes = METRICS.compactionBytes.create(d.meter);
    this.preemptions = METRICS.preemptedFlushes.create(d.meter);
    // From 0, so a dashboard's rate() shows the first early flush (they are rare while the budget suffices).
    this.preemptions.add(0, this.labels);
    this.stoppedMs = METRICS.bucketStoppedMs.create(d.meter);
    // From 0 too: the first stop of a bucket is an increase. Append buckets never stop, and show 0: the dashboard's
    // and the alert's query then finds the series on every writer, whatever its tables are.
    this.stoppedMs.add(0, this.labels);
    // From 0: the first poison message is an increase (the alert's increase() sees it), and the series is there to plot.
    this.poisonMessages.add(0, this.labels);
  }

  private get labels(): { table: string; bucket: number } {
    return { table: this.d.table.name, bucket: this.d.bucket };
  }

  preStart(ctx: ActorContext<WriterMsg>): void {
    this.open(ctx, null);
    this.scheduleFlushTick(ctx);
    const labels = this.labels;
    this.unobserveGauges = observeWriterBucket(this.d.meter, { labels, shape: () => this.shape });
  }

  /**
   * The next flush at the next multiple of the commit interval on the wall clock, so every bucket of the table — on
   * every node — flushes at the same instants, as Paimon's writers all prepare their commit at the same checkpoint:
   * the leader, woken by the first committable, folds the others into the next round, about one snapshot per
   * interval instead of one per bucket flush at scattered phases (fewer snapshot, manifest and notification
   * writes; consumers get the interval's rows together).
   */
  private scheduleFlushTick(ctx: ActorContext<WriterMsg>): void {
    this.tick = ctx.scheduleOnce(nextFlushDelay(this.d.clock.now(), this.d.commitIntervalMs), { type: "flush-tick" });
  }

  async postStop(): Promise<void> {
    this.tick?.cancel();
    this.compactor?.stop();
    this.countStopped();
    this.unobserveGauges?.();
    this.unobserveGauges = null;
    this.d.budget?.release(this.budgetId);
    this.closed = true;
    this.endProbe();
    this.session?.close();
    this.session = null;
    const r = this.reader;
    this.reader = null;
    await r?.close().catch(() => undefined);
  }

  /**
   * (Re)starts reading from `from` (a rejection's committed offset, or after the last committable sent) or from the
   * latest snapshot's offset. `keepSent`: committables sent before stay ours, so a rejection of one still re-opens.
   */
  private open(ctx: ActorContext<WriterMsg>, from: number | null, opts: { keepSent?: boolean; committedSeq?: bigint } = {}): void {
    const generation = ++this.generation;
    const old = this.reader;
    this.reader = null;
    this.write = null;
    this.pulling = false;
    this.flushing = false;
    this.flushingBytes = 0;
    this.decoding = false;
    this.stash = [];
    this.session?.close();
    this.session = null;
    this.sessionRows = 0;
    this.sessionBytes = 0;
    this.flushWaiting = null;
    this.endProbe();
    this.lastFlushedAt = this.d.clock.monotonic();
    this.stallReported = false;
    this.d.budget?.release(this.budgetId);
    this.firstArrival = 0;
    this.traceLinks = new TraceLinks();
    if (opts.keepSent !== true) {
      // Read again from the committed offset: an attempt, counted once it reads something (actors/poison-guard.ts).
      this.attemptUncounted = this.guard !== null;
      this.isolateUntil = null;
      this.sent.clear();
      // Flushes sent and not committed will not be (they are read again): they no longer count as sorted runs.
      this.compactor?.flushesDropped();
    }
    ctx.pipeToSelf(
      (async (): Promise<WriterMsg> => {
        await old?.close().catch(() => undefined);
        // Offsets are sequences of one stream: read nothing from a stream the table's snapshots do not belong to.
        const latest = await this.d.table.snapshots.latest();
        const st = await natslakeStateAsOf(this.d.table, latest);
        const live = await this.d.ingestLog.liveStream(this.d.table.name);
        const check = checkTableStream(this.d.table.name, st, live);
        if (!check.ok) return { type: "stream-mismatch", generation, reason: check.reason };
        // An offset kept across a reopen (and the flushes sent after it) counts in the stream it was read from. The
        // table may have moved onto another since (a re-created stream, then `table reset-offsets`, between the
        // failed fetch and this reopen — the stream-reset test caught a writer resuming a new stream at the old
        // stream's offset, skipping its first rows): open again from the committed offset instead.
        if (opts.keepSent === true && this.stream !== "" && this.stream !== live.identity) return { type: "reopen", generation, from: "committed" };
        const offset = from ?? Number(st?.buckets.get(this.d.bucket)?.offset ?? 0n);
        // Sequence numbers from the same source as the offset (see `seq`); after the last one sent: as they are.
        const seq = !this.keyed ? null : opts.keepSent === true && this.seq !== null ? this.seq.next : await this.startSequence(latest, st?.buckets.get(this.d.bucket)?.seq, opts.committedSeq);
        const reader = await this.d.ingestLog.openBucket(this.d.table.name, this.d.bucket, offset);
        return { type: "opened", generation, reader, offset, stream: live.identity, seq };
      })(),
      (m) => m,
      (e) => ({ type: "open-failed", generation, error: ensureError(e) }),
    );
  }

  /**
   * A primary-key bucket's first sequence number: one past the highest committed — the rejection's when it names
   * one, else the snapshot's record and its live files of this bucket (files another engine wrote count too).
   */
  private async startSequence(latest: Snapshot | null, recorded: bigint | undefined, committedSeq: bigint | undefined): Promise<bigint> {
    let max = committedSeq ?? recorded ?? -1n;
    if (committedSeq === undefined && latest !== null) {
      for (const e of await new ManifestStore(this.d.table).readLiveEntries(latest)) {
        if (e.bucket === this.d.bucket && e.file.maxSequenceNumber > max) max = e.file.maxSequenceNumber;
      }
    }
    return max + 1n;
  }

  async receive(msg: WriterMsg, ctx: ActorContext<WriterMsg>): Promise<void> {
    switch (msg.type) {
      case "opened":
        if (msg.generation !== this.generation) {
          await msg.reader.close().catch(() => undefined);
          return;
        }
        this.reader = msg.reader;
        this.stream = msg.stream;
        this.prevOffset = msg.offset;
        this.openedOffset = msg.offset;
        this.lastSeq = msg.offset;
        this.fetchedSeq = msg.offset;
        this.seq = msg.seq === null ? null : { next: msg.seq };
        this.write = new TableWrite(this.d.table, { bucket: this.d.bucket, ...(this.seq !== null ? { sequence: this.seq } : {}) });
        this.openSession();
        ctx.log.info("bucket opened", { ...this.labels, epoch: this.d.ownerEpoch, from: msg.offset });
        ctx.self.tell({ type: "pull" });
        return;
      case "open-failed":
        if (msg.generation !== this.generation) return;
        // Supervision restarts the actor with back-off; a fresh actor re-reads the committed offset.
        throw msg.error;
      case "stream-mismatch":
        if (msg.generation !== this.generation) return;
        this.streamMismatches.add(1, { table: this.d.table.name, component: "writer" });
        ctx.log.error("not reading the bucket: the table's offsets belong to another stream", { ...this.labels, reason: msg.reason });
        if (this.revoking) {
          this.finishRevoke(ctx);
          return;
        }
        ctx.scheduleOnce(STREAM_RECHECK_MS, { type: "reopen", generation: this.generation, from: "committed" });
        return;
      case "pull":
        this.pull(ctx);
        return;
      case "fetched":
        if (msg.generation !== this.generation) return;
        this.pulling = false;
        if (this.fetchedSeq <= this.prevOffset && msg.messages.length > 0) this.uncoveredSince = this.d.clock.monotonic();
        if (this.attemptUncounted && msg.messages.some((m) => m.seq > this.fetchedSeq)) await this.countAttempt(ctx);
        for (const m of msg.messages) {
          // At most once per sequence, whatever the reader redelivers.
          if (m.seq <= this.fetchedSeq) continue;
          this.fetchedSeq = m.seq;
          this.stash.push(m);
        }
        await this.takeStash(ctx);
        this.pull(ctx);
        return;
      case "appended": {
        if (msg.generation !== this.generation || this.write === null) return;
        this.decoding = false;
        const r = msg.result;
        this.sessionRows = r.bufferedRows;
        this.sessionBytes = r.bufferedBytes;
        this.reportMemory(ctx);
        if (this.firstArrival === 0) this.firstArrival = msg.firstPublishedAt || this.d.clock.now();
        this.lastSeq = msg.lastSeq;
        if (r.rows > 0) this.rowsIn.add(r.rows, this.labels);
        // Tests: `sleep(ms)` holds this message's handling (the node's stuck-actor report).
        if (failpointArmed("writer.appended")) await failpointAsync("writer.appended");
        // Dead letters are out before any committable covers their messages.
        await this.publishRejected(r.rejected);
        if (this.flushWaiting !== null || this.bufferFull() || this.isolateUntil !== null) {
          const beat = this.flushWaiting?.beat;
          this.flushWaiting = null;
          this.flush(ctx, beat);
        }
        if (this.revoking && !this.flushPending()) {
          this.finishRevoke(ctx);
          return;
        }
        await this.takeStash(ctx);
        this.pull(ctx);
        return;
      }
      case "probed": {
        if (msg.generation !== this.generation || this.write === null) {
          // Its generation ended: the node's next probe may start.
          this.endProbe(msg.generation);
          return;
        }
        this.decoding = false;
        // Handing the bucket off: the message was not tried (its mark goes), and the next owner reads it.
        if (this.revoking) {
          await this.probePassed(ctx);
          this.flush(ctx);
          if (!this.flushPending()) this.finishRevoke(ctx);
          return;
        }
        const m = msg.message;
        if (msg.poison !== null) {
          await this.deadLetterPoison(ctx, m, msg.poison);
          if (this.firstArrival === 0) this.firstArrival = m.publishedAt || this.d.clock.now();
          // A committable without files covers it: the bucket moves on.
          this.lastSeq = m.seq;
          this.flush(ctx);
        } else if (this.session !== null) this.appendToSession(ctx, [m]);
        else {
          await this.appendRows([m]);
          this.reportMemory(ctx);
          this.flush(ctx);
        }
        return;
      }
      case "decode-failed":
        if (msg.generation !== this.generation) return;
        ctx.log.warn("decoding failed; reopening the bucket from the committed offset", { ...this.labels, error: msg.error.message });
        this.countStall(msg.error);
        await this.recordFailure(ctx, msg.error);
        this.endProbe();
        this.open(ctx, null);
        return;
      case "fetch-failed":
        if (msg.generation !== this.generation) return;
        this.pulling = false;
        void this.reader?.close().catch(() => undefined);
        this.reader = null;
        if (this.revoking) {
          // Handing the bucket off: nothing more is read; the flush in flight (if any) still completes the revoke.
          if (!this.flushPending()) this.finishRevoke(ctx);
          return;
        }
        ctx.log.warn("fetch failed; reopening the bucket after its last committable", { ...this.labels, prevOffset: this.prevOffset, error: msg.error.message });
        ctx.scheduleOnce(500, { type: "reopen", generation: this.generation, from: "sent" });
        return;
      case "reopen":
        // Not while handing the bucket off: re-opening would drop the revoke's flush.
        if (msg.generation !== this.generation || this.revoking) return;
        if (msg.from === "sent") {
          // A flush in flight decides where "after the last committable" is: wait for it.
          if (this.flushPending()) ctx.scheduleOnce(50, msg);
          else this.open(ctx, this.prevOffset, { keepSent: true });
        } else this.open(ctx, null);
        return;
      case "flush-tick":
        this.scheduleFlushTick(ctx);
        this.checkStall(ctx);
        this.flush(ctx, flushBeat(this.d.clock.now(), this.d.commitIntervalMs));
        this.maybeCompact(ctx);
        this.observe(ctx);
        this.countStopped();
        return;
      case "observed":
        this.observing = false;
        if (this.observeFailing) ctx.log.info("bucket observed again", this.labels);
        this.observeFailing = false;
        this.applyShape(msg.shape, ctx);
        return;
      case "observe-failed":
        this.observing = false;
        if (!this.observeFailing) ctx.log.warn("could not read the bucket's files from the latest snapshot; trying again every commit interval", { ...this.labels, error: msg.error.message });
        this.observeFailing = true;
        return;
      case "compacted": {
        this.compacting.delete(msg.lane);
        const r = msg.result;
        this.compactionJobs.add(1, { ...this.labels, result: r.entry === null ? "idle" : "sent" });
        if (r.entry !== null) {
          this.compactionFiles.add(r.inputFiles, { ...this.labels, role: "input" });
          this.compactionFiles.add(r.outputFiles, { ...this.labels, role: "output" });
          this.compactionRows.add(r.rowsCopied, { ...this.labels, how: "copied" });
          this.compactionRows.add(r.rows - r.rowsCopied, { ...this.labels, how: "reencoded" });
          this.compactionBytes.add(r.bytesRead, { ...this.labels, role: "read" });
          this.compactionBytes.add(r.bytesWritten, { ...this.labels, role: "written" });
          this.compactionSeconds.record(r.slotWaitMs / 1000, { table: this.d.table.name, stage: "slot-wait" });
          this.compactionSeconds.record(r.rewriteMs / 1000, { table: this.d.table.name, stage: "rewrite" });
          const sent = { ...this.labels, lane: msg.lane, compactionId: r.entry.compactionId, planSnapshotId: r.entry.planSnapshotId, inputs: r.inputFiles, outputs: r.outputFiles, bytesRead: r.bytesRead, bytesWritten: r.bytesWritten, rows: r.rows, rowsCopied: r.rowsCopied, slotWaitMs: Math.round(r.slotWaitMs), rewriteMs: Math.round(r.rewriteMs) };
          if (this.replannedAfter === null) ctx.log.debug("compaction sent", sent);
          else ctx.log.info("compaction sent, planned again after a rejection", { ...sent, rejected: this.replannedAfter });
          this.replannedAfter = null;
          if (this.compactor?.chains === true) {
            // As Java's writer does after a compaction: count the runs again now (a stopped bucket reads again at
            // once, not a commit interval later) and plan the next job on the levels this one leaves — at 250 ms
            // commits a bucket makes four runs a second, and waiting for the next beat cost a run per job.
            this.nextCompactionAt = 0;
            this.maybeCompact(ctx);
            this.observe(ctx);
          }
        }
        return;
      }
      case "compaction-failed":
        this.compacting.delete(msg.lane);
        this.compactionJobs.add(1, { ...this.labels, result: "failed" });
        // Ingest goes on; the next job plans afresh after a pause (a full disk must not become a retry loop).
        this.nextCompactionAt = this.d.clock.monotonic() + Math.max(10_000, this.d.compaction?.checkIntervalMs ?? 0);
        ctx.log.warn("compaction failed; ingest continues, trying again later", { ...this.labels, error: msg.error.message });
        return;
      case "preempted":
        if (this.flushPending() || this.write === null || this.bufferedRows() === 0) return;
        this.preemptions.add(1, this.labels);
        this.flush(ctx);
        return;
      case "flushed":
        if (msg.generation !== this.generation) return;
        this.compactor?.flushSent(msg.lastOffset, msg.level0Files);
        this.flushing = false;
        this.flushingBytes = 0;
        this.lastFlushedAt = this.d.clock.monotonic();
        if (this.stallReported) ctx.log.info("bucket flushing again", { ...this.labels, lastOffset: msg.lastOffset });
        this.stallReported = false;
        this.reportMemory(ctx);
        this.failures = 0;
        this.prevOffset = msg.lastOffset;
        if (this.probeRelease !== null) await this.probePassed(ctx);
        if (this.isolateUntil !== null && (await this.isolationCovered(ctx, msg.lastOffset))) {
          this.isolateUntil = null;
          // Batches again, on the node's shared workers: the bucket's own thread ends.
          this.openSession();
        }
        if (this.revoking) this.finishRevoke(ctx);
        else {
          // Isolating, the next message waited for this flush.
          await this.takeStash(ctx);
          this.pull(ctx);
        }
        return;
      case "flush-failed":
        if (msg.generation !== this.generation) return;
        this.flushingBytes = 0;
        this.reportMemory(ctx);
        ctx.log.error("flush failed; resuming from the committed offset", { ...this.labels, error: msg.error.message });
        this.countStall(msg.error);
        await this.recordFailure(ctx, msg.error);
        this.endProbe();
        void this.reader?.close().catch(() => undefined);
        this.reader = null;
        // First retry at once, then back off (a full disk must not turn into a retry storm).
        ctx.scheduleOnce(Math.min(5000, this.failures === 0 ? 0 : 100 * 2 ** this.failures), { type: "reopen", generation: this.generation, from: "committed" });
        this.failures++;
        return;
      case "rejected": {
        const r = msg.rejection;
        if (r.ownerEpoch !== this.d.ownerEpoch || !this.sent.has(r.prevOffset)) return;
        ctx.log.warn("committable rejected; resuming from the committed offset", { ...this.labels, reason: r.reason, committedOffset: r.committedOffset, ...(r.committedSeq !== undefined ? { committedSeq: String(r.committedSeq) } : {}) });
        this.open(ctx, r.committedOffset, r.committedSeq !== undefined ? { committedSeq: r.committedSeq } : {});
        return;
      }
      case "compaction-rejected": {
        const r = msg.rejection;
        if (r.ownerEpoch !== this.d.ownerEpoch || this.compactor === null) return;
        // False when the bucket's snapshot already showed the job's inputs gone (it was dropped then).
        const stillCounted = this.compactor.compactionRejected(r.compactionId);
        ctx.log.info("compaction rejected by the leader; planning the bucket again from the committed snapshot", { ...this.labels, compactionId: r.compactionId, reason: r.reason, detail: r.detail, stillCounted });
        // At once, not at the next check: the bucket's runs are more than the job counted on (back-pressure), and
        // what it was to compact still is. The next job sent says so at info (how long the bucket went without).
        this.replannedAfter = r.compactionId;
        this.nextCompactionAt = 0;
        this.maybeCompact(ctx);
        this.observe(ctx);
        return;
      }
      case "revoke":
        this.revoking = msg.reply;
        if (!this.flushing) this.flush(ctx);
        if (!this.flushPending()) this.finishRevoke(ctx);
        return;
    }
  }

  /**
   * Starts a compaction job when one is due, in the first of the strategy's lanes with no job running (append buckets:
   * of any size, else a small one beside it on the files flushed since the running job's inputs; primary-key buckets:
   * one at a time). It never waits for, or holds up, ingest.
   */
  private maybeCompact(ctx: ActorContext<WriterMsg>): void {
    const c = this.compactor;
    if (c === null || this.revoking) return;
    const lane = c.lanes.find((l) => !this.compacting.has(l));
    if (lane === undefined) return;
    const now = this.d.clock.monotonic();
    if (now < this.nextCompactionAt) return;
    this.nextCompactionAt = now + (this.d.compaction?.checkIntervalMs ?? 0);
    this.compacting.add(lane);
    ctx.pipeToSelf(
      c.runOnce(lane),
      (result) => ({ type: "compacted", lane, result }),
      (e) => ({ type: "compaction-failed", lane, error: ensureError(e) }),
    );
  }

  /** Reads the bucket's shape (the compactor's view of the latest snapshot and the flushes in flight), one at a time. */
  private observe(ctx: ActorContext<WriterMsg>): void {
    const c = this.compactor;
    if (c === null || this.observing) return;
    this.observing = true;
    ctx.pipeToSelf(
      c.observe(),
      (shape) => ({ type: "observed", shape }),
      (e) => ({ type: "observe-failed", error: ensureError(e) }),
    );
  }

  /**
   * Back-pressure (primary-key buckets): at the stop trigger the bucket stops reading from its stream — the messages
   * wait in JetStream, nothing else waits — and reads again once a compaction brought its sorted runs below it. The
   * rows already read still flush (one more level-0 run at most).
   */
  private applyShape(shape: BucketShape, ctx: ActorContext<WriterMsg>): void {
    this.shape = shape;
    if (shape.stop && this.stopped === null) {
      const now = this.d.clock.monotonic();
      this.stopped = { since: now, counted: now };
      ctx.log.info("bucket stopped reading: its sorted runs reached num-sorted-run.stop-trigger; reading again once compaction lands", { ...this.labels, sortedRuns: shape.sortedRuns });
    } else if (!shape.stop && this.stopped !== null) {
      this.countStopped();
      ctx.log.info("bucket reading again after compaction", { ...this.labels, sortedRuns: shape.sortedRuns, stoppedMs: Math.round(this.d.clock.monotonic() - this.stopped.since) });
      this.stopped = null;
      this.pull(ctx);
    }
  }

  /** Adds the time stopped since it was last counted to `natslake_bucket_stopped_ms_total` (so it grows during a stop). */
  private countStopped(): void {
    const s = this.stopped;
    if (s === null) return;
    const now = this.d.clock.monotonic();
    this.stoppedMs.add(now - s.counted, this.labels);
    s.counted = now;
  }

  /**
   * Reports, once, a bucket holding fetched messages that no flush has covered for `stallReportMs` (and at least
   * STALL_INTERVALS commit intervals): they cannot become visible, and without this a stall says nothing. The state
   * logged is what decides the next step (a decode or a flush that never ended, a flush waiting for one).
   */
  private checkStall(ctx: ActorContext<WriterMsg>): void {
    if (this.stallReported || this.fetchedSeq <= this.prevOffset) return;
    const waitedMs = this.d.clock.monotonic() - Math.max(this.lastFlushedAt, this.uncoveredSince);
    if (waitedMs < Math.max(this.d.stallReportMs ?? STALL_REPORT_MS, STALL_INTERVALS * this.d.commitIntervalMs)) return;
    this.stallReported = true;
    ctx.log.warn("bucket has not flushed what it read for long", {
      ...this.labels,
      seconds: Math.round(waitedMs / 1000),
      prevOffset: this.prevOffset,
      lastSeq: this.lastSeq,
      fetchedSeq: this.fetchedSeq,
      stash: this.stash.length,
      pulling: this.pulling,
      decoding: this.decoding,
      flushing: this.flushing,
      flushWaiting: this.flushWaiting !== null,
      reader: this.reader !== null,
      revoking: this.revoking !== null,
    });
  }

  private finishRevoke(ctx: ActorContext<WriterMsg>): void {
    const reply = this.revoking;
    this.revoking = null;
    reply?.(this.prevOffset);
    ctx.stop();
  }

  private pull(ctx: ActorContext<WriterMsg>): void {
    if (this.pulling || this.reader === null || this.revoking) return;
    if (this.stopped !== null) return; // back-pressure: a landing compaction resumes (applyShape)
    if (this.bufferFull()) return; // wait for the flush
    if (this.stash.length >= this.d.fetchBatch || this.stashBytes() >= MAX_STASH_BYTES) return; // wait for the decode in flight
    const budget = this.d.budget;
    if (budget !== undefined && !budget.admits(this.budgetId)) {
      // The node's write buffers are full: read again once a flush (this one's or another bucket's) frees memory.
      const self = ctx.self;
      budget.whenFreed(this.budgetId, () => tellQuietly(self, { type: "pull" }));
      return;
    }
    this.pulling = true;
    const generation = this.generation;
    ctx.pipeToSelf(
      this.reader.fetch(this.d.fetchBatch, 200),
      (messages) => ({ type: "fetched", generation, messages }),
      (e) => ({ type: "fetch-failed", generation, error: ensureError(e) }),
    );
  }

  /**
   * Hands on what is stashed: while isolating, one message alone (`probeNext`); else all of it, to the bucket's
   * session — or, for a partitioned table, routed row by row on this thread.
   */
  private async takeStash(ctx: ActorContext<WriterMsg>): Promise<void> {
    if (this.isolateUntil !== null) this.probeNext(ctx);
    else if (this.session !== null) this.decodeStash(ctx);
    else if (this.stash.length > 0 && this.write !== null && !this.decoding) {
      await this.appendRows(this.stash.splice(0));
      this.reportMemory(ctx);
      if (this.bufferFull()) this.flush(ctx);
    }
  }

  private stashBytes(): number {
    let n = 0;
    for (const m of this.stash) n += m.data.byteLength;
    return n;
  }

  /** Hands the stashed messages to the bucket's session (one append at a time, so rows land in stream order). */
  private decodeStash(ctx: ActorContext<WriterMsg>): void {
    // A waiting flush goes first: appends posted after it belong to the next flush.
    if (this.decoding || this.flushWaiting !== null || this.stash.length === 0 || this.session === null) return;
    this.appendToSession(ctx, this.stash.splice(0));
  }

  private appendToSession(ctx: ActorContext<WriterMsg>, messages: IngestMessage[]): void {
    if (this.session === null) return;
    for (const m of messages) this.traceLinks.add(m.traceparent);
    this.decoding = true;
    const generation = this.generation;
    const lastSeq = messages[messages.length - 1]!.seq;
    const firstPublishedAt = messages[0]!.publishedAt;
    const session = this.session;
    ctx.pipeToSelf(
      // Tests: `sleep(ms)` holds a decode (the bucket's stall report, test/integration/stall-reports.test.ts).
      failpointArmed("writer.before-append") ? failpointAsync("writer.before-append").then(() => session.append(messages)) : session.append(messages),
      (result) => ({ type: "appended", generation, lastSeq, firstPublishedAt, result }),
      (e) => ({ type: "decode-failed", generation, error: ensureError(e) }),
    );
  }

  /**
   * Isolating (actors/poison-guard.ts): the next stashed message is recorded in KV as the one tried alone — or found
   * to have failed alone too often — before anything decodes it; it is then decoded and flushed by itself.
   */
  private probeNext(ctx: ActorContext<WriterMsg>): void {
    const guard = this.guard;
    const gate = this.d.attempts?.gate;
    if (guard === null || gate === undefined || this.decoding || this.flushPending() || this.stash.length === 0 || this.write === null || this.revoking) return;
    const message = this.stash.shift()!;
    this.decoding = true;
    const generation = this.generation;
    ctx.pipeToSelf(
      (async () => {
        const release = await gate.acquire();
        // Kept here, not in the answer: a stopped actor drops its messages, and the gate must still open (postStop).
        if (this.closed) {
          release();
          throw new LakeError(ErrorKind.Unexpected, "the bucket writer stopped");
        }
        this.probeRelease = { generation, release };
        return guard.probe(message.seq);
      })(),
      (poison) => ({ type: "probed", generation, message, poison }),
      (e) => ({ type: "decode-failed", generation, error: ensureError(e) }),
    );
  }

  /** The probed message was written: its mark is cleared, then the node's next probe may start. */
  private async probePassed(ctx: ActorContext<WriterMsg>): Promise<void> {
    try {
      await this.guard?.passed();
    } catch (e) {
      // The mark stays: a death before the next probe would count against this message (it needs several).
      ctx.log.warn("could not clear the probed message's mark", { ...this.labels, error: ensureError(e).message });
    }
    this.endProbe();
  }

  /**
   * Lets the node's next probe in (only `generation`'s, when given: a late answer of an ended generation must not let
   * a newer probe's gate go); a mark left in KV (a failed probe) counts against its message at the next read. */
  private endProbe(generation?: number): void {
    const held = this.probeRelease;
    if (held === null || (generation !== undefined && held.generation !== generation)) return;
    this.probeRelease = null;
    held.release();
  }

  /** This generation's first read after the committed offset: one attempt (actors/poison-guard.ts). */
  private async countAttempt(ctx: ActorContext<WriterMsg>): Promise<void> {
    this.attemptUncounted = false;
    if (this.guard === null) return;
    const table = this.d.table.name;
    try {
      this.isolateUntil = await this.guard.begin(this.stream, this.openedOffset, async () => (await this.d.ingestLog.liveStream(table)).lastSeq, { isolateNow: this.stalledBatch });
      this.stalledBatch = false;
    } catch (e) {
      // Reading goes on: a poison message is then retried until KV answers again.
      ctx.log.warn("could not record the bucket's read attempt; reading on without it", { ...this.labels, error: ensureError(e).message });
      return;
    }
    if (this.isolateUntil === null) return;
    ctx.log.warn("reading after the committed offset failed repeatedly: reading one message at a time to find the poison one", { ...this.labels, from: this.openedOffset, until: this.isolateUntil });
    // Nothing of this generation is appended yet (this is its first read): its session moves to a thread of its own.
    this.openSession();
  }

  /**
   * This generation's session, opened afresh (only where it holds nothing: at the open, before the first append of a
   * generation, right after a flush): on a thread of its own while isolating — a message that stalls it, stopped at the
   * node's deadline, then stops no other bucket's session, which would count a failure against the innocent message
   * that bucket was trying alone — and on the node's shared workers otherwise. Partitioned tables have none.
   */
  private openSession(): void {
    this.session?.close();
    this.session = null;
    this.sessionRows = 0;
    this.sessionBytes = 0;
    if (this.write === null || !this.write.writesOneBucket) return;
    this.session = this.d.buffers.open({ ...this.write.bufferSpec, maxMessageRows: this.maxMessageRows }, { ownThread: this.isolateUntil !== null });
  }

  /**
   * A decode or an encode of this bucket that ran past the deadline and was stopped (the error says so; the failure is
   * recorded as any other). Reading batches, the bucket isolates at its next read; isolating, the message tried alone
   * is the one that stalled, and the failure counts against it.
   */
  private countStall(error: Error): void {
    if (!(error instanceof BucketStallError)) return;
    this.stalls.add(1, { ...this.labels, stage: error.stage });
    if (this.isolateUntil === null) this.stalledBatch = true;
  }

  /** A failure ended the generation: its error goes with the attempts (the dead letter's reason names it). */
  private async recordFailure(ctx: ActorContext<WriterMsg>, error: Error): Promise<void> {
    try {
      await this.guard?.failed(error.message);
    } catch (e) {
      ctx.log.warn("could not record the bucket's failure", { ...this.labels, error: ensureError(e).message });
    }
  }

  /** Isolating: true once the flushes cover the isolated range (the attempts record is gone). */
  private async isolationCovered(ctx: ActorContext<WriterMsg>, lastOffset: number): Promise<boolean> {
    try {
      if (!(await this.guard!.covered(lastOffset))) return false;
    } catch (e) {
      ctx.log.warn("could not clear the bucket's read attempts; isolating on", { ...this.labels, error: ensureError(e).message });
      return false;
    }
    ctx.log.info("the isolated messages are written: reading batches again", { ...this.labels, lastOffset });
    return true;
  }

  /** A poison message goes to the dead-letter subject whole (its payload in base64), with the reason. */
  private async deadLetterPoison(ctx: ActorContext<WriterMsg>, m: IngestMessage, reason: string): Promise<void> {
    const stored = await this.d.bus.publishDeadLetters(this.d.table.name, [this.letter(m.seq, -1, reason, Buffer.from(m.data).toString("base64"))]);
    this.deadLetters.add(stored, { ...this.labels, stage: "writer" });
    this.poisonMessages.add(1, this.labels);
    ctx.log.error("poison message dead-lettered; the bucket moves on", { ...this.labels, streamSeq: m.seq, reason });
  }

  /** Partitioned tables: decodes and routes every row here; rows that do not fit the schema become dead letters. */
  private async appendRows(messages: IngestMessage[]): Promise<void> {
    const w = this.write;
    if (w === null || messages.length === 0) return;
    const last = messages[messages.length - 1]!;
    if (failpointArmed("ingest.message")) for (const m of messages) failpointOnData("ingest.message", m.data);
    // A hang here blocks the node's main thread: its stall watch (cluster/stall-watch.ts) kills the process.
    if (failpointArmed("ingest.stall")) for (const m of messages) failpointOnData("ingest.stall", m.data);
    this.lastSeq = last.seq;
    for (const m of messages) this.traceLinks.add(m.traceparent);
    if (this.firstArrival === 0) this.firstArrival = messages[0]!.publishedAt || this.d.clock.now();
    // A primary-key table's rows go through their kinds (`_row_kind`): TableWrite converts and checks them.
    const tooLarge: RejectedRow[] = [];
    const kept = messages.filter((m) => {
      const over = oversized(m.seq, m.data, this.maxMessageRows);
      if (over !== null) tooLarge.push(over);
      return over === null;
    });
    const out = decodeRows(this.d.table.schema.fields, kept, (row) => w.writeRow(row), this.keyed ? (input) => w.writeInput(input) : undefined);
    if (out.rows > 0) this.rowsIn.add(out.rows, this.labels);
    await this.publishRejected([...tooLarge, ...out.rejected]);
  }

  private async publishRejected(rejected: readonly RejectedRow[]): Promise<void> {
    if (rejected.length === 0) return;
    await failIfSchemaMovedOn(this.d.table, rejected.map((r) => r.reason));
    // Counted as the dead-letter stream stored them: a batch read again after a restart publishes its letters again,
    // and the stream's de-duplication (by message id) stores them once — so counts them once.
    const stored = await this.d.bus.publishDeadLetters(
      this.d.table.name,
      rejected.map((r) => this.letter(r.seq, r.rowIndex, r.reason, r.original)),
    );
    this.deadLetters.add(stored, { ...this.labels, stage: "writer" });
  }

  private letter(seq: number, rowIndex: number, reason: string, original: unknown): DeadLetter {
    return { type: "dead-letter", table: this.d.table.name, stage: "writer", reason, streamSeq: seq, rowIndex, original, at: this.d.clock.now() };
  }

  /** The bucket's own bound: `maxBufferedRows`, or the table's `write-buffer-size` in bytes. */
  private bufferFull(): boolean {
    return this.write !== null && (this.bufferedRows() >= this.d.maxBufferedRows || this.bufferedBytes() >= this.writeBufferBytes);
  }

  /** Rows held for the next flush (by the session, or in the TableWrite). */
  private bufferedRows(): number {
    return this.session !== null ? this.sessionRows : (this.write?.bufferedRows ?? 0);
  }

  private bufferedBytes(): number {
    return this.session !== null ? this.sessionBytes : (this.write?.bufferedBytes ?? 0);
  }

  /** A flush in flight, or one waiting for the append in flight. */
  private flushPending(): boolean {
    return this.flushing || this.flushWaiting !== null;
  }

  /** Tells the write budget what this writer holds now (buffered, and cut for the flush in flight). */
  private reportMemory(ctx: ActorContext<WriterMsg>): void {
    const budget = this.d.budget;
    if (budget === undefined) return;
    const self = ctx.self;
    budget.update(this.budgetId, { preempt: () => tellQuietly(self, { type: "preempted" }) }, this.bufferedBytes(), this.flushingBytes);
  }

  /**
   * Writes the buffer as files and sends its committable; one flush at a time keeps the offset chain. `beat` is the
   * commit-interval instant a flush tick cut it on (absent for early flushes: a full buffer, a preemption, a revoke);
   * the committable carries it so the leader can wait for the beat's other buckets (actors/beat-gather.ts).
   */
  private flush(ctx: ActorContext<WriterMsg>, beat?: number): void {
    const w = this.write;
    if (this.flushing || w === null) return;
    // The session answers in posting order, so a flush posted now would also cover the append in flight — whose
    // dead letters are not out yet and whose last sequence this writer has not recorded: flush after it instead.
    if (this.session !== null && this.decoding) {
      this.flushWaiting = { beat };
      return;
    }
    // A flush asked for while a message was being probed (isolating) is this one: it covers everything read.
    if (this.flushWaiting !== null) {
      beat ??= this.flushWaiting.beat;
      this.flushWaiting = null;
    }
    if (this.lastSeq <= this.prevOffset) return;
    this.flushing = true;
    const generation = this.generation;
    const prevOffset = this.prevOffset;
    const lastOffset = this.lastSeq;
    const firstArrival = this.firstArrival;
    this.firstArrival = 0;
    const flushId = ++this.flushId;
    const stream = this.stream;
    this.sent.add(prevOffset);
    // One span per flush, linked to the spans of the batches it covers (a flush covers many batches, so not a child).
    const traced = this.traceLinks;
    this.traceLinks = new TraceLinks();
    const span = this.tracer.startSpan("natslake.flush", {
      root: true,
      links: traced.links(),
      attributes: { "natslake.table": this.d.table.name, "natslake.bucket": this.d.bucket, "natslake.owner_epoch": this.d.ownerEpoch, "natslake.prev_offset": prevOffset, "natslake.last_offset": lastOffset, "natslake.traced_batches": traced.total },
    });
    // prepareCommit cuts the buffer synchronously: rows appended from now on belong to the next flush. A primary-key
    // bucket's rows take their sequence numbers at the cut, so the committable can say which it took.
    const cutBytes = this.bufferedBytes();
    const session = this.session;
    const firstSeq = this.seq?.next;
    let filesPromise: Promise<CommitMessage[]>;
    if (session !== null) {
      const cutRows = this.sessionRows;
      if (this.seq !== null) this.seq.next += BigInt(cutRows);
      this.sessionRows = 0;
      this.sessionBytes = 0;
      filesPromise = session.flush(firstSeq).then((encoded) => {
        if (encoded.kind === "keyed" && encoded.rows !== cutRows) throw new LakeError(ErrorKind.Unexpected, `${this.d.table.name} bucket ${this.d.bucket}: the flush held ${encoded.rows} rows, the writer counted ${cutRows}`);
        return w.commitEncoded(encoded);
      });
    } else filesPromise = w.prepareCommit();
    const seqRange = firstSeq === undefined || this.seq === null ? undefined : { first: firstSeq, last: this.seq.next - 1n };
    this.flushingBytes = cutBytes;
    this.reportMemory(ctx);
    ctx.pipeToSelf(
      (async () => {
        const messages = await filesPromise;
        const files = messages.flatMap((m) => [
          ...m.newFiles.map((meta) => ({ partition: m.partition, totalBuckets: m.totalBuckets, meta })),
          ...(m.changelogFiles ?? []).map((meta) => ({ partition: m.partition, totalBuckets: m.totalBuckets, meta, changelog: true as const })),
        ]);
        // The files hold messages read since the open; if the live stream is still the one checked then, every one
        // of them came from it (a stream replaced in between has another identity now, and stays replaced).
        const live = await this.d.ingestLog.streamIdentity(this.d.table.name);
        if (live !== stream) throw new LakeError(ErrorKind.Conflict, `${this.d.table.name}: the ingest stream changed under the writer (read ${stream}, now ${live})`);
        const c: Committable = {
          type: "committable",
          v: 1,
          table: this.d.table.name,
          stream,
          bucket: this.d.bucket,
          ownerEpoch: this.d.ownerEpoch,
          writerId: this.d.writerId,
          prevOffset,
          lastOffset,
          rowCount: messages.reduce((n, m) => n + m.newFiles.reduce((k, f) => k + f.rowCount, 0), 0),
          files,
          flushId,
          firstArrivalMillis: firstArrival,
          ...(beat !== undefined ? { beatMillis: beat } : {}),
          ...(seqRange !== undefined ? { seq: seqRange } : {}),
        };
        const traceparent = traceparentOf(span);
        if (traceparent !== undefined) c.traceparent = traceparent;
        span.setAttributes({ "natslake.rows": c.rowCount, "natslake.files": files.length });
        // Too large for one message (many files, large statistics): sent by reference to a durable body.
        const entry = await toCommitEntry(c, payloadLimit(this.d.commitLog.maxPayload), this.store);
        if (entry.type === "committable-ref") ctx.log.info("committable sent by reference", { ...this.labels, files: files.length, bytes: entry.size, path: entry.path });
        // The message id makes a retried append idempotent in the commit stream. It names the stream: after an offset
        // reset the same writer starts again at offset 0, and without it JetStream would drop that committable as a
        // duplicate of the old stream's first one (within its duplicate window).
        await this.d.commitLog.append(entry, `${this.d.writerId}-${this.d.table.name}-${this.d.bucket}-${this.d.ownerEpoch}-${stream}-${prevOffset}`);
        failpoint("writer.after-committable");
        this.filesOut.add(files.length, this.labels);
        this.bytesOut.add(files.reduce((n, f) => n + f.meta.fileSize, 0), this.labels);
        return level0FilesOf(files);
      })().then(
        (level0Files) => {
          span.end();
          return level0Files;
        },
        (e: unknown) => {
          span.setStatus({ code: SpanStatusCode.ERROR, message: ensureError(e).message });
          span.end();
          throw e;
        },
      ),
      (level0Files) => ({ type: "flushed", generation, prevOffset, lastOffset, level0Files }),
      (e) => ({ type: "flush-failed", generation, error: ensureError(e) }),
    );
  }
}

/** The level-0 data files of a flush, per partition (hex of its framed row): the sorted runs it adds to each tree. */
function level0FilesOf(files: ReadonlyArray<{ partition: Uint8Array; meta: { level: number }; changelog?: true }>): Map<string, number> {
  const out = new Map<string, number>();
  for (const f of files) {
    if (f.changelog === true || f.meta.level !== 0) continue;
    const key = Buffer.from(f.partition).toString("hex");
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

/** A budget callback may run after this writer stopped: a message to a stopped actor is dropped, not an error. */
function tellQuietly(ref: ActorRef<WriterMsg>, msg: WriterMsg): void {
  try {
    ref.tell(msg);
  } catch {
    // stopped or stopping
  }
}
