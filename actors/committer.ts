/**
 * CommitterActor: one per (node, table) on committer-capable nodes; only the holder of the table's lease is active.
 *
 * Standby: every `acquireIntervalMs` it tries the lease. Leader: it takes the fencing epoch
 * `max(lease INCR, newest snapshot epoch + 1, stored assignment epoch + 1)` (Redis may have lost its counter), reads
 * every committable still in the commit stream, and every commit interval folds the pending ones into one snapshot
 * (src/commit/stream-commit.ts: acceptance rule against the exact base snapshot, fenced by the chain's epochs and the
 * lease deadline). After a snapshot lands it tells writers about rejections, publishes the notification, purges committed input per bucket
 * and the decided committables. It steps down when the lease is lost, the deadline passes, or a snapshot with a
 * higher epoch appears — and never commits after that.
 *
 * Crash safety: committables live in JetStream until decided; a new leader re-reads them all; the acceptance rule
 * drops those already committed (duplicates) — nothing is applied twice, nothing decided is lost.
 *
 * Notifications have no gap: a leader that dies (or is drained) after linking a snapshot and before announcing it
 * leaves that snapshot unannounced. So the leader knows the last id announced (from KV at the start of its
 * leadership) and, before announcing a snapshot, first announces every id between (rebuilt from the snapshot
 * files, at most the newest CATCH_UP_MAX); its first round does so even when nothing is pending, so an idle table's
 * last snapshot is announced too (read-your-writes waits on it).
 */
import type { CommitTurns } from "./commit-turns.ts";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Meter, type Span, type Tracer } from "@opentelemetry/api";
import { ensureError, ErrorKind, isLakeError, LakeError } from "../src/errors.ts";
import { natslakeStateAsOf, StreamCommitter } from "../src/commit/stream-commit.ts";
import { failpoint, failpointAsync } from "../src/failpoints.ts";
import type { Table } from "../src/table/table.ts";
import { ManifestStore, sharedManifestCache } from "../src/table/manifest-store.ts";
import type { CommitEntry, Committable, CommittableRef, CompactionEntry, SnapshotNotification } from "./wire/messages.ts";
import { StreamCompactionCommitter, type PendingCompaction } from "../src/commit/compaction-commit.ts";
import { natslakeState, type Snapshot } from "../src/format/snapshot.ts";
import { CommittableStore } from "./committable-store.ts";
import type { Actor, ActorContext, Cancellable } from "./runtime/index.ts";
import type { Bus, Clock, CommitLog, CommitReader, IngestLog, Lease, LeaseGrant } from "./ports.ts";
import type { LeaseKeeperLike } from "./lease-keeper.ts";
import { METRICS } from "./metrics.ts";
import { CommitBlockedGauge } from "./commit-blocked.ts";
import { TraceLinks, traceparentOf } from "./wire/trace-context.ts";
import { SpacedTasks } from "./spaced-tasks.ts";
import { BeatGather, gatherWindowMs, type GatherEntry } from "./beat-gather.ts";

/** Purges of one target (the commit stream, an ingest bucket) start at least this far apart: see SpacedTasks. */
export const PURGE_SPACING_MS = 1000;

/**
 * An append table's COMPACT snapshots start at least this far apart: compactions that arrive sooner after the last
 * one are held (read, not decided, not purged from the commit stream) and land together when it has passed. Each
 * snapshot costs the leader a commit (manifests, list, snapshot file, syncs) and every node's compactors a decode of
 * it; at 250 ms commits the writers' compactions made a COMPACT snapshot nearly every round (245 a minute beside 265
 * APPEND ones in issue 28's run). A compaction changes no rows, so landing it up to a second later only keeps its
 * inputs live (and out of its writer's planning) that much longer. Primary-key tables land theirs at once: their
 * writers stop on sorted runs, which a compaction waiting here would keep counting.
 */
export const COMPACT_COMMIT_SPACING_MS = 500;

export type CommitterMsg =
  | { type: "tick" }
  | { type: "acquired"; grant: LeaseGrant | null; epoch: number; reader: CommitReader | null }
  | { type: "acquire-failed"; error: Error }
  | { type: "commit" }
  | { type: "round-done"; ok: boolean; error?: Error }
  | { type: "lease-lost"; reason: string };

export interface AssignmentView {
  /** The coordinator's current owner epoch for a bucket (undefined when not known yet). */
  ownerEpochOf(table: string, bucket: number): number | undefined;
  /** The leader epoch of the table's stored assignment (0 when none): a new leader takes a higher one. */
  storedLeaderEpoch(table: string): Promise<number>;
}

export interface CommitterDeps {
  table: Table;
  nodeId: string;
  lease: Lease;
  keeper: (lease: Lease, grant: LeaseGrant, onLost: (reason: string) => void) => LeaseKeeperLike;
  commitLog: CommitLog;
  ingestLog: IngestLog;
  bus: Bus;
  assignments: AssignmentView;
  clock: Clock;
  meter: Meter;
  commitIntervalMs: number;
  acquireIntervalMs: number;
  /** A commit round running this long is reported, with its stage (default ROUND_STALL_MS). */
  stallReportMs?: number;
  /** Called when this node becomes (true) or stops being (false) the table's leader, with the epoch. */
  onLeadership?: (leader: boolean, epoch: number) => void;
  /**
   * Called once per leadership, after the first round that read the commit stream to its end and decided all of it:
   * whatever a previous leader left there is committed or rejected by then (orphan cleanup waits for it).
   */
  onBacklogDecided?: (epoch: number) => void;
  /**
   * A snapshot landed (appended or compacted), after its notification: the leader's maintenance expires snapshots
   * right after commits, as Paimon's committer does, instead of on a timer the commit rate outruns.
   */
  onCommitted?: (snapshotId: number) => void;
  /** Commit and notify spans (default: the global API's tracer, recording nothing until tracing is registered). */
  tracer?: Tracer;
  /** The table's commit turn, shared with its maintenance jobs: no round starts while a job's commit holds it. */
  turns?: CommitTurns;
  /** COMPACT snapshots at least this many ms apart (default: COMPACT_COMMIT_SPACING_MS for append tables, else 0). */
  compactCommitSpacingMs?: number;
}

interface Leadership {
  grant: LeaseGrant;
  epoch: number;
  keeper: LeaseKeeperLike;
  reader: CommitReader;
  committer: StreamCommitter<Committable>;
  /** Lands the writers' compactions (a COMPACT snapshot after the round's APPEND one). */
  compactor: StreamCompactionCommitter<CompactionEntry>;
  /** Read, not decided yet. A committable sent by reference is replaced by its body once loaded (`ref` kept). */
  pending: Array<{ seq: number; committable: CommitEntry; ref?: CommittableRef }>;
  /**
   * Compactions read and held until the spacing since the last COMPACT snapshot has passed (in stream order): not
   * decided, so the commit stream is purged only below the first of them (a new leader reads them again).
   */
  held: PendingCompaction<CompactionEntry>[];
  /** When (monotonic ms) this leadership's last compaction round ran; -Infinity before the first. */
  lastCompactAt: number;
  /** The highest commit-stream seq read so far (all of it decided but `held`). */
  readThrough: number;
  timer: Cancellable;
  /** The last snapshot id announced; null until this leadership read it (its first round). */
  notified: number | null;
  /** A round has read the commit stream to its end and decided everything in it (see `onBacklogDecided`). */
  backlogDecided: boolean;
  /** Which buckets flushed on which beat: what a round waits for before it commits (actors/beat-gather.ts). */
  beats: BeatGather;
}

function gatherEntryOf(e: CommitEntry): GatherEntry {
  return e.type === "compaction" ? { bucket: e.bucket, compaction: true } : { bucket: e.bucket, compaction: false, beatMillis: e.beatMillis };
}

/** A leadership that could not start after the lease was won (reading the chain or opening the commit stream failed). */
class LeadSetupFailed extends Error {
  override readonly name = "LeadSetupFailed";
  constructor(cause: Error) {
    super(cause.message, { cause });
  }
}

/** The most commit-stream entries one read takes (a round reads on while reads come back full). */
const READ_MAX = 2000;

/** At most this many missed notifications are published when a leader catches up (older ones: the KV has the last). */
export const CATCH_UP_MAX = 100;

/** A commit round running this long is reported (with its stage). */
const ROUND_STALL_MS = 15_000;

/**
 * How long an idle leader's round waits in the commit stream for a first committable. The leader is event-driven: a
 * round that decided its committables starts the next one at once, and that round waits in the stream's reader,
 * woken by the first committable that arrives — so a flush is committed as soon as it lands, not at the next tick
 * (a 62 ms tick with a 20 ms wait added up to ~40 ms to every row's publish → visible). What arrives while a round
 * commits is folded into the next one, so snapshots follow the writers' flushes (one per flush burst), never more.
 * The same value paces the backstop timer that restarts the loop after a failed round.
 */
export const commitCheckMs = (commitIntervalMs: number): number => Math.max(10, Math.floor(commitIntervalMs / 4));

export class CommitterActor implements Actor<CommitterMsg> {
  private leader: Leadership | null = null;
  /** Purges by target (the commit stream, each ingest bucket), spaced; see `inBackground`. */
  private readonly purges = new SpacedTasks(PURGE_SPACING_MS);
  /** Bodies of committables sent by reference, decided for good: removed once the commit stream is purged past them. */
  private removable: Array<{ seq: number; ref: CommittableRef }> = [];
  private readonly store: CommittableStore;
  private busy = false;
  /** The round in flight: when it started (monotonic ms), where it is, and whether it was reported as slow. */
  private roundAt = { started: 0, stage: "idle", reported: false };
  private tickTimer: Cancellable | null = null;
  private readonly commits;
  private readonly commitLatency;
  private readonly rejected;
  private readonly leaderChanges;
  private readonly visibleLatency;
  private readonly streamMismatches;
  private readonly compactions;
  private readonly commitFailures;
  private readonly blocked: CommitBlockedGauge;
  private readonly tracer: Tracer;

  constructor(private readonly d: CommitterDeps) {
    this.tracer = d.tracer ?? trace.getTracer("natslake");
    this.commits = METRICS.commits.create(d.meter);
    this.commitLatency = METRICS.commitDuration.create(d.meter);
    this.rejected = METRICS.committablesRejected.create(d.meter);
    this.leaderChanges = METRICS.leaderChanges.create(d.meter);
    this.streamMismatches = METRICS.streamMismatches.create(d.meter);
    this.commitFailures = METRICS.commitFailures.create(d.meter);
    // The series exists from the start at 0, so Prometheus sees the first failure as an increase.
    this.commitFailures.add(0, { table: d.table.name });
    this.blocked = new CommitBlockedGauge(d.meter, d.table.name);
    // Rejections and stream mismatches are rare and serious: from 0 too, so their first one shows as an increase.
    this.rejected.add(0, { table: d.table.name });
    this.streamMismatches.add(0, { table: d.table.name, component: "committer" });
    this.compactions = METRICS.compactions.create(d.meter);
    this.store = new CommittableStore(d.table);
    this.visibleLatency = METRICS.publishToVisible.create(d.meter);
  }

  preStart(ctx: ActorContext<CommitterMsg>): void {
    this.tickTimer = ctx.scheduleRepeatedly(this.d.acquireIntervalMs, { type: "tick" }, { initialDelayMs: 0 });
  }

  async postStop(ctx: ActorContext<CommitterMsg>): Promise<void> {
    this.tickTimer?.cancel();
    this.purges.stop();
    this.blocked.close();
    await this.stepDown(ctx, "stopped");
  }

  async receive(msg: CommitterMsg, ctx: ActorContext<CommitterMsg>): Promise<void> {
    switch (msg.type) {
      case "tick":
        if (this.leader === null && !this.busy) {
          this.busy = true;
          ctx.pipeToSelf(
            this.tryLead(),
            (r) => ({ type: "acquired", ...r }),
            (e) => ({ type: "acquire-failed", error: ensureError(e) }),
          );
        }
        return;
      case "acquire-failed":
        this.busy = false;
        if (msg.error instanceof LeadSetupFailed) {
          // The lease was won but the table could not be read (a damaged snapshot, the warehouse gone): nothing can
          // commit, which the operators' P0 alert must see as much as a failed round.
          this.commitFailures.add(1, { table: this.d.table.name });
          const blocked = this.blocked.failed(msg.error);
          ctx.log.error(blocked !== null ? "won the lease but the table is damaged: refusing to commit until it is repaired (natslake doctor)" : "won the lease but cannot start committing; released it, trying again", { table: this.d.table.name, error: msg.error.message, ...(blocked !== null ? { blocked } : {}) });
        } else ctx.log.warn("lease acquisition failed", { table: this.d.table.name, error: msg.error.message });
        return;
      case "acquired": {
        this.busy = false;
        if (msg.grant === null || msg.reader === null) return;
        const grant = msg.grant;
        const keeper = this.d.keeper(this.d.lease, grant, (reason) => ctx.self.tell({ type: "lease-lost", reason }));
        // One store for both: a round's compaction commit builds on the snapshot its appends just wrote (their
        // manifests in its cache, its live files one step on), and the other services of the table on this node
        // decode what the committers write from the shared cache.
        const manifests = new ManifestStore(this.d.table, sharedManifestCache(this.d.table));
        const committer = new StreamCommitter<Committable>(this.d.table, {
          commitUser: `natslake-${this.d.table.name}`,
          epoch: msg.epoch,
          stillLeader: () => keeper.isValid(),
          ownerEpochOf: (b) => this.d.assignments.ownerEpochOf(this.d.table.name, b),
          manifests,
        });
        const compactor = new StreamCompactionCommitter<CompactionEntry>(this.d.table, {
          commitUser: `natslake-${this.d.table.name}`,
          epoch: msg.epoch,
          commitStream: msg.reader.streamId,
          stillLeader: () => keeper.isValid(),
          ownerEpochOf: (b) => this.d.assignments.ownerEpochOf(this.d.table.name, b),
          manifests,
        });
        this.leader = { grant, epoch: msg.epoch, keeper, reader: msg.reader, committer, compactor, pending: [], held: [], lastCompactAt: -Infinity, readThrough: 0, timer: ctx.scheduleRepeatedly(commitCheckMs(this.d.commitIntervalMs), { type: "commit" }), notified: null, backlogDecided: false, beats: new BeatGather(this.d.commitIntervalMs) };
        this.leaderChanges.add(1, { table: this.d.table.name });
        ctx.log.info("became leader", { table: this.d.table.name, epoch: msg.epoch, node: this.d.nodeId });
        this.d.onLeadership?.(true, msg.epoch);
        return;
      }
      case "commit":
        if (this.leader !== null && this.busy) this.checkRoundStall(ctx);
        if (this.leader !== null && !this.busy && (this.d.turns?.tryStartRound() ?? true)) {
          this.busy = true;
          this.roundAt = { started: this.d.clock.monotonic(), stage: "start", reported: false };
          const l = this.leader;
          ctx.pipeToSelf(
            this.round(l, ctx),
            () => ({ type: "round-done", ok: true }),
            (e) => ({ type: "round-done", ok: false, error: ensureError(e) }),
          );
        }
        return;
      case "round-done":
        this.busy = false;
        this.d.turns?.endRound();
        if (this.roundAt.reported) ctx.log.info("slow commit round ended", { table: this.d.table.name, ok: msg.ok, seconds: Math.round((this.d.clock.monotonic() - this.roundAt.started) / 1000) });
        this.roundAt = { started: 0, stage: "idle", reported: false };
        // Back into the stream at once (see commitCheckMs); a failed round waits for the timer instead of spinning.
        if (msg.ok) this.blocked.cleared();
        if (msg.ok && this.leader !== null) ctx.self.tell({ type: "commit" });
        if (!msg.ok && msg.error) {
          if (isLakeError(msg.error, ErrorKind.Fenced)) {
            ctx.log.warn("fenced", { table: this.d.table.name, error: msg.error.message });
            await this.stepDown(ctx, msg.error.message);
          } else {
            // An unknown outcome: the next round re-reads the chain; committed committables then count as duplicates.
            this.commitFailures.add(1, { table: this.d.table.name });
            const blocked = this.blocked.failed(msg.error);
            if (blocked !== null) ctx.log.error("commit round refused: the table is damaged; retrying next interval, nothing commits until it is repaired (natslake doctor)", { table: this.d.table.name, error: msg.error.message, blocked });
            else ctx.log.error("commit round failed; retrying next interval", { table: this.d.table.name, error: msg.error.message });
          }
        }
        return;
      case "lease-lost":
        if (this.leader !== null) {
          ctx.log.warn("lease lost", { table: this.d.table.name, reason: msg.reason });
          await this.stepDown(ctx, msg.reason);
        }
        return;
    }
  }

  /** Takes the lease if free and prepares leadership (epoch, reader); releases it again on any failure. */
  private async tryLead(): Promise<{ grant: LeaseGrant | null; epoch: number; reader: CommitReader | null }> {
    const grant = await this.d.lease.tryAcquire();
    if (grant === null) return { grant: null, epoch: 0, reader: null };
    try {
      const latest = await this.d.table.snapshots.latest();
      // A leader that cannot read the snapshot it would build on does not lead (natslake_commit_blocked says why),
      // whether or not rows are waiting: the writers cannot open its buckets either.
      if (latest !== null) await new ManifestStore(this.d.table).checkReadable(latest);
      const st = await natslakeStateAsOf(this.d.table, latest);
      // Above every epoch a previous leader may have used: Redis's counter (lost when Redis restarts), the newest
      // snapshot's and the stored assignment's (a leader that committed nothing still wrote an assignment, and its
      // successor's assignments must not be fenced by it).
      const epoch = Math.max(grant.fencingEpoch, (st?.epoch ?? 0) + 1, (await this.d.assignments.storedLeaderEpoch(this.d.table.name)) + 1);
      const reader = await this.d.commitLog.open(this.d.table.name);
      return { grant, epoch, reader };
    } catch (e) {
      await this.d.lease.release(grant).catch(() => undefined);
      throw new LeadSetupFailed(ensureError(e));
    }
  }

  private async round(l: Leadership, ctx: ActorContext<CommitterMsg>): Promise<void> {
    if (l.notified === null) {
      // Tests: a slow first round (a large backlog) — what orphan cleanup must wait for.
      await failpointAsync("committer.first-round");
      this.roundAt.stage = "announce-earlier";
      // First round of this leadership: announce what an earlier leader linked but never announced — and the last
      // one it recorded as announced, again: the record (KV) is written before the notification is published (see
      // publishSnapshot), so a leader that died or closed its connection between the two left that id recorded and
      // never sent (a chaos run under load saw the gap). Subscribers drop an id they have had (snapshots-client.ts);
      // a consume session's wake-up is idempotent.
      const last = await this.d.bus.lastSnapshotNotified(this.d.table.name);
      l.notified = Math.max(0, last - 1);
      const latest = (await this.d.table.snapshots.latestId()) ?? 0;
      if (latest > last) ctx.log.info("announcing snapshots an earlier leader did not", { table: this.d.table.name, from: last + 1, to: latest });
      await this.announceThrough(l, latest);
    }
    this.roundAt.stage = "read";
    // An idle round waits in the stream, but no longer than until held compactions are due.
    const idleWaitMs = l.held.length === 0 ? commitCheckMs(this.d.commitIntervalMs) : Math.max(1, Math.min(commitCheckMs(this.d.commitIntervalMs), this.untilCompactionsDue(l)));
    while ((await this.readMore(l, ctx, l.pending.length === 0 ? idleWaitMs : 1)) === READ_MAX);
    const compactNow = this.untilCompactionsDue(l) <= 0;
    if (l.pending.length === 0 && !(compactNow && l.held.length > 0)) return this.backlogDecidedUnlessHeld(l);
    // Compactions alone that are not due yet are held without waiting for more (they would only be held too).
    if (l.pending.length > 0 && (compactNow || !BeatGather.onlyCompactions(l.pending.map((p) => gatherEntryOf(p.committable))))) {
      this.roundAt.stage = "gather";
      await this.gatherBeat(l, ctx);
    }
    if (!l.keeper.isValid()) throw new LakeError(ErrorKind.Fenced, "lease deadline passed");
    const decided = l.pending;
    l.beats.decided(decided.map((p) => gatherEntryOf(p.committable)));
    const arrived: PendingCompaction<CompactionEntry>[] = [];
    for (const p of decided) if (p.committable.type === "compaction") arrived.push({ seq: p.seq, compaction: p.committable });
    this.roundAt.stage = "append";
    if (arrived.length < decided.length) await this.appendRound(l, ctx);
    // Compactions only after the round's appends are decided and announced, so a failed compaction commit never
    // holds rows back; until it succeeds they stay held (and unpurged) for the next round.
    l.pending = [];
    l.held.push(...arrived);
    if (l.held.length > 0 && this.untilCompactionsDue(l) <= 0) {
      this.roundAt.stage = "compaction";
      l.lastCompactAt = this.d.clock.monotonic();
      await this.compactionRound(l, l.held, ctx);
      l.held = [];
    }
    this.backlogDecidedUnlessHeld(l);
    // Every committable read so far is decided (accepted, duplicate or rejected) but the held compactions: drop them
    // from the stream, up to the first held one.
    const table = this.d.table.name;
    const through = l.held.length > 0 ? l.held[0]!.seq - 1 : l.readThrough;
    if (through <= 0) return;
    this.inBackground(
      "commits",
      async () => {
        await this.d.commitLog.purge(table, through);
        await this.removeBodies(through);
      },
      (e) => ctx.log.warn("commit stream purge failed", { table, error: e.message }),
    );
  }

  /** Ms until held compactions may land (≤ 0: now): COMPACT snapshots are spaced (COMPACT_COMMIT_SPACING_MS). */
  private untilCompactionsDue(l: Leadership): number {
    const spacing = this.d.compactCommitSpacingMs ?? (this.d.table.isPrimaryKeyTable ? 0 : COMPACT_COMMIT_SPACING_MS);
    return l.lastCompactAt + spacing - this.d.clock.monotonic();
  }

  /** Held compactions are read but not decided: the backlog counts as decided only without them. */
  private backlogDecidedUnlessHeld(l: Leadership): void {
    if (l.held.length === 0) this.backlogDecided(l);
  }

  /**
   * Reads what the commit stream holds into `pending` (at most READ_MAX), waiting at most `waitMs` for the first
   * entry; returns how many it read.
   */
  private async readMore(l: Leadership, ctx: ActorContext<CommitterMsg>, waitMs: number): Promise<number> {
    let got;
    try {
      got = await l.reader.fetch(READ_MAX, waitMs);
    } catch (e) {
      // The commit stream's consumer is gone (its NATS server died): read the stream again with a new one. What was
      // read but not decided is read again; what was decided and not purged yet comes back as duplicates.
      await l.reader.close().catch(() => undefined);
      l.pending = [];
      l.held = [];
      ctx.log.warn("commit stream reader failed; re-opening it", { table: this.d.table.name, error: ensureError(e).message });
      l.reader = await this.d.commitLog.open(this.d.table.name);
      throw e;
    }
    l.pending.push(...got);
    for (const p of got) l.readThrough = Math.max(l.readThrough, p.seq);
    return got.length;
  }

  /**
   * Waits, at most a gather window, for the rest of the beat the pending committables were cut on (or, when only
   * compactions are pending, for more compactions or the beat's appends): one snapshot a beat instead of one for
   * the first committable and one for the others (actors/beat-gather.ts).
   */
  private async gatherBeat(l: Leadership, ctx: ActorContext<CommitterMsg>): Promise<void> {
    const windowMs = gatherWindowMs(this.d.commitIntervalMs);
    const clock = this.d.clock;
    let compactionsOnly: boolean | undefined;
    let deadline = clock.monotonic() + windowMs;
    for (;;) {
      const entries = l.pending.map((p) => gatherEntryOf(p.committable));
      compactionsOnly ??= BeatGather.onlyCompactions(entries);
      if (compactionsOnly && !BeatGather.onlyCompactions(entries)) {
        // The beat's appends began to arrive: wait for the rest of them with a window of their own.
        compactionsOnly = false;
        deadline = clock.monotonic() + windowMs;
      }
      if (!compactionsOnly && l.beats.awaited(entries).length === 0) return;
      const left = deadline - clock.monotonic();
      if (left <= 0) return;
      await this.readMore(l, ctx, left);
    }
  }

  /**
   * Reports, once per round, a round running for `stallReportMs` or more, with the stage it is in: while it runs the
   * table commits nothing, and a round awaiting something that never settles would otherwise stall it silently.
   */
  private checkRoundStall(ctx: ActorContext<CommitterMsg>): void {
    const ms = this.d.clock.monotonic() - this.roundAt.started;
    if (this.roundAt.reported || this.roundAt.stage === "idle" || ms < (this.d.stallReportMs ?? ROUND_STALL_MS)) return;
    this.roundAt.reported = true;
    ctx.log.warn("commit round running for long: nothing commits meanwhile", { table: this.d.table.name, stage: this.roundAt.stage, seconds: Math.round(ms / 1000), pending: this.leader?.pending.length ?? 0 });
  }

  /** The first round that decided everything it read (it read the stream to its end) tells the node, once. */
  private backlogDecided(l: Leadership): void {
    if (l.backlogDecided) return;
    l.backlogDecided = true;
    this.d.onBacklogDecided?.(l.epoch);
  }

  /**
   * Lands the writers' compactions as one COMPACT snapshot (src/commit/compaction-commit.ts) and announces it. The
   * outputs of rejected ones are deleted by then; their writers plan again from a later snapshot.
   */
  private async compactionRound(l: Leadership, pending: PendingCompaction<CompactionEntry>[], ctx: ActorContext<CommitterMsg>): Promise<void> {
    const table = this.d.table.name;
    const res = await l.compactor.commit(pending);
    if (res.snapshot) failpoint("committer.after-compact-snapshot");
    for (const v of res.verdicts) {
      const c = v.compaction;
      this.compactions.add(1, { table, result: v.kind, ...(v.kind === "rejected" ? { reason: v.reason } : {}) });
      if (v.kind === "rejected") {
        ctx.log.warn("compaction rejected; its outputs were deleted", { table, bucket: c.bucket, compactionId: c.compactionId, writer: c.writerId, reason: v.reason, detail: v.detail });
        // Its writer plans the bucket again at once instead of counting the job for its in-flight time (it would plan
        // on outputs that no longer exist). Sent after the round's snapshot is linked: what the writer reads next
        // includes it. Lost (core NATS), the writer's in-flight timeout still ends the job.
        this.d.bus.publishRejection(c.writerId, { type: "compaction-rejection", table, bucket: c.bucket, ownerEpoch: c.ownerEpoch, compactionId: c.compactionId, reason: v.reason, detail: v.detail });
      }
      // Only after a leader change (it landed, the stream was not purged yet): worth a line.
      if (v.kind === "duplicate") ctx.log.info("compaction read again after it landed: a duplicate, its outputs kept", { table, bucket: c.bucket, compactionId: c.compactionId, writer: c.writerId });
    }
    if (res.snapshot === null) return;
    this.commits.add(1, { table });
    await this.announceThrough(l, res.snapshot.id - 1);
    await this.d.bus.publishSnapshot(this.notificationOf(res.snapshot, res.linkedAt));
    l.notified = res.snapshot.id;
    this.d.onCommitted?.(res.snapshot.id);
  }

  /** The notification of a snapshot, rebuilt from it and natslake's state as of it (its own properties by default). */
  private notificationOf(s: Snapshot, linkedAtMillis: number, st = natslakeState(s)): SnapshotNotification {
    const offsets: Record<string, number> = {};
    for (const [b, p] of st?.buckets ?? []) offsets[String(b)] = Number(p.offset);
    return {
      type: "snapshot",
      table: this.d.table.name,
      snapshotId: s.id,
      kind: s.commitKind,
      timeMillis: s.timeMillis,
      linkedAtMillis,
      totalRecordCount: s.totalRecordCount,
      deltaRecordCount: s.deltaRecordCount,
      epoch: st?.epoch ?? 0,
      offsets,
      ...(st?.stream !== undefined ? { stream: st.stream } : {}),
    };
  }

  /** Decides the pending committables (not compactions) as one APPEND snapshot; tells writers about rejections. */
  private async appendRound(l: Leadership, ctx: ActorContext<CommitterMsg>): Promise<void> {
    // The commit span links to the flush spans of the committables it decides (many flushes, one commit).
    const span = this.tracer.startSpan("natslake.commit", { root: true, attributes: { "natslake.table": this.d.table.name, "natslake.epoch": l.epoch } });
    try {
      await this.decideAppends(l, ctx, span);
      span.end();
    } catch (e) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: ensureError(e).message });
      span.end();
      throw e;
    }
  }

  private async decideAppends(l: Leadership, ctx: ActorContext<CommitterMsg>, span: Span): Promise<void> {
    const started = this.d.clock.monotonic();
    const loaded = await this.loadBodies(l, ctx);
    if (span.isRecording()) {
      const links = new TraceLinks();
      for (const p of loaded) links.add(p.committable.traceparent);
      span.addLinks(links.links());
      span.setAttributes({ "natslake.committables": loaded.length, "natslake.traced_flushes": links.total });
    }
    const refOf = new Map<Committable, CommittableRef>();
    for (const p of loaded) if (p.ref !== undefined) refOf.set(p.committable, p.ref);
    const res = await l.committer.commitRound(loaded.map((p) => p.committable));
    // Chaos: the snapshot is linked; rejections, the notification and the purges have not happened yet.
    if (res.snapshot) failpoint("committer.after-snapshot");
    const table = this.d.table.name;
    this.commitLatency.record(this.d.clock.monotonic() - started, { table });
    const fromOtherStreams = res.verdicts.filter((v) => v.kind === "rejected" && v.reason === "stream-mismatch");
    if (fromOtherStreams.length > 0) {
      this.streamMismatches.add(fromOtherStreams.length, { table, component: "committer" });
      const streams = [...new Set(fromOtherStreams.map((v) => v.committable.stream ?? "(none)"))];
      ctx.log.error("committables read from another stream than the table's offsets belong to were rejected", { table, tableStream: res.stream, committableStreams: streams, count: fromOtherStreams.length });
    }
    for (const v of res.verdicts) {
      if (v.kind !== "rejected") continue;
      this.rejected.add(1, { table, reason: v.reason });
      const c = v.committable;
      this.d.bus.publishRejection(c.writerId, { type: "rejection", table, bucket: c.bucket, ownerEpoch: c.ownerEpoch, prevOffset: c.prevOffset, committedOffset: v.committedOffset, ...(v.committedSeq !== undefined ? { committedSeq: v.committedSeq } : {}), reason: v.reason });
    }
    if (res.snapshot) {
      this.commits.add(1, { table });
      const s = res.snapshot;
      // The snapshot's own natslake properties are what this round decided (epoch, offsets, stream).
      const n = this.notificationOf(s, res.linkedAt);
      span.setAttributes({ "natslake.snapshot_id": s.id, "natslake.rows": s.deltaRecordCount });
      // Snapshots linked since the last announcement (by a leader that died or was drained right after linking).
      await this.announceThrough(l, s.id - 1);
      // The notification carries the notify span's context (a child of the commit span): subscribers continue it.
      const notify = this.tracer.startSpan("natslake.notify", { kind: SpanKind.PRODUCER, attributes: { "natslake.table": table, "natslake.snapshot_id": s.id } }, trace.setSpan(ROOT_CONTEXT, span));
      const traceparent = traceparentOf(notify);
      if (traceparent !== undefined) n.traceparent = traceparent;
      try {
        await this.d.bus.publishSnapshot(n);
      } finally {
        notify.end();
      }
      l.notified = s.id;
      this.d.onCommitted?.(s.id);
      for (const v of res.verdicts) {
        if (v.kind === "accepted" && v.committable.firstArrivalMillis > 0) this.visibleLatency.record(res.linkedAt - v.committable.firstArrivalMillis, { table });
      }
      // Retention: committed rows leave the ingest stream (keeps everything after the committed offset).
      const touched = new Set(res.verdicts.filter((v) => v.kind === "accepted").map((v) => v.committable.bucket));
      for (const b of touched) {
        const through = res.state.get(b)!.offset;
        this.inBackground(`bucket-${b}`, () => this.d.ingestLog.purgeBucket(table, b, through, res.stream), (e) => ctx.log.warn("purge failed", { table, bucket: b, error: e.message }));
      }
    }
    // Bodies sent by reference that nothing will apply again: accepted ones (the snapshot landed) and duplicates.
    // Rejected ones stay (orphans) — a reader that took them before the purge may still look at them.
    const seqOf = new Map(loaded.map((p) => [p.committable, p.seq]));
    for (const v of res.verdicts) {
      const ref = refOf.get(v.committable);
      if (ref !== undefined && (v.kind === "duplicate" || (v.kind === "accepted" && res.snapshot))) this.removable.push({ seq: seqOf.get(v.committable)!, ref });
    }
  }

  /**
   * The pending committables with the bodies of those sent by reference loaded (each loaded once: a failed round
   * keeps them). A body that is gone was removed after its committable was decided for good — or lost, or is
   * unreadable: a duplicate is dropped, anything else is refused (`body-missing`, its writer resumes from the committed offset and sends
   * again); it is never applied without its files.
   */
  private async loadBodies(l: Leadership, ctx: ActorContext<CommitterMsg>): Promise<Array<{ seq: number; committable: Committable; ref?: CommittableRef }>> {
    const out: Array<{ seq: number; committable: Committable; ref?: CommittableRef }> = [];
    let committed: Awaited<ReturnType<typeof natslakeStateAsOf>> | undefined;
    for (const p of l.pending) {
      const e = p.committable;
      if (e.type === "compaction") continue;
      if (e.type === "committable") {
        out.push(p.ref !== undefined ? { seq: p.seq, committable: e, ref: p.ref } : { seq: p.seq, committable: e });
        continue;
      }
      let body: Committable | null;
      try {
        body = await this.store.load(e);
      } catch (err) {
        // A body that is not the committable its reference describes (corrupted, another table's): refused like a
        // missing one — failing the round instead would stall the table for good. IO errors fail the round (retried).
        if (!isLakeError(err, ErrorKind.DataInvalid)) throw err;
        ctx.log.error("committable body unreadable", { table: this.d.table.name, bucket: e.bucket, path: e.path, error: ensureError(err).message });
        body = null;
      }
      if (body !== null) {
        p.committable = body;
        p.ref = e;
        out.push({ seq: p.seq, committable: body, ref: e });
        continue;
      }
      committed ??= await natslakeStateAsOf(this.d.table, await this.d.table.snapshots.latest());
      const offset = Number(committed?.buckets.get(e.bucket)?.offset ?? 0n);
      const table = this.d.table.name;
      if (e.lastOffset <= offset && committed?.stream === e.stream) {
        ctx.log.info("committable body gone, its committable committed already: dropped as a duplicate", { table, bucket: e.bucket, path: e.path });
        continue;
      }
      ctx.log.error("committable body missing; refusing it", { table, bucket: e.bucket, path: e.path, prevOffset: e.prevOffset, lastOffset: e.lastOffset });
      this.rejected.add(1, { table, reason: "body-missing" });
      const committedSeq = committed?.buckets.get(e.bucket)?.seq;
      this.d.bus.publishRejection(e.writerId, { type: "rejection", table, bucket: e.bucket, ownerEpoch: e.ownerEpoch, prevOffset: e.prevOffset, committedOffset: offset, ...(committedSeq !== undefined ? { committedSeq } : {}), reason: "body-missing" });
    }
    return out;
  }

  /** Removes the bodies of decided committables at or below `throughSeq` (purged from the commit stream). */
  private async removeBodies(throughSeq: number): Promise<void> {
    const now = this.removable.filter((r) => r.seq <= throughSeq);
    this.removable = this.removable.filter((r) => r.seq > throughSeq);
    for (const r of now) await this.store.remove(r.ref).catch(() => false);
  }

  /**
   * Runs a purge without holding up the commit loop (when JetStream elects leaders a purge can time out after
   * seconds; a round waiting for it delayed every commit — chaos: nats-node-kill). At most one purge per target is in
   * flight, and they start PURGE_SPACING_MS apart: one asked meanwhile replaces the one waiting (purges are
   * "everything through seq", so monotone) and runs when its turn comes.
   */
  private inBackground(key: string, purge: () => Promise<void>, onError: (e: Error) => void): void {
    this.purges.run(key, purge, onError);
  }

  /** Publishes the notifications of snapshots after `l.notified` up to `id`, rebuilt from the snapshot files. */
  private async announceThrough(l: Leadership, id: number): Promise<void> {
    let from = Math.max((l.notified ?? 0) + 1, id - CATCH_UP_MAX + 1);
    if (from > id) return;
    // Snapshots expired meanwhile are not announced late (their successors' notifications cover their offsets).
    from = Math.max(from, (await this.d.table.snapshots.earliestId()) ?? 1);
    for (let k = from; k <= id; k++) {
      const s = await this.d.table.snapshots.snapshot(k);
      await this.d.bus.publishSnapshot(this.notificationOf(s, s.timeMillis, await natslakeStateAsOf(this.d.table, s)));
      l.notified = k;
    }
  }

  private async stepDown(ctx: ActorContext<CommitterMsg>, reason: string): Promise<void> {
    const l = this.leader;
    if (l === null) return;
    this.leader = null;
    l.timer.cancel();
    await l.keeper.stop();
    await l.reader.close().catch(() => undefined);
    // Release is compare-and-delete on our token: it frees the lease at once for a standby, and is a no-op when
    // another node holds it already.
    await this.d.lease.release(l.grant).catch(() => undefined);
    ctx.log.info("stepped down", { table: this.d.table.name, reason, epoch: l.epoch });
    this.d.onLeadership?.(false, l.epoch);
  }
}
