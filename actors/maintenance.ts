/**
 * MaintenanceActor: the leader's table maintenance — scheduled snapshot expiration, partition expiration and
 * orphan-file cleanup, and the jobs the CLI asks the leader for (compact, expire, remove orphans: requests on
 * `<p>.ctl.maint.<db>.<table>`). One per table, spawned and stopped with the leadership, as the coordinator and the
 * router are, so exactly one process maintains a table at a time and a paused ex-leader's jobs end with its actors.
 *
 * Everything runs off the commit path, one job at a time — never a scheduled task beside a requested one, never
 * two of either — so an `expire-snapshots` from the CLI and the scheduled one cannot interleave their deletes.
 * Requests go first (someone waits for them), in arrival order; then the most overdue scheduled task. A failure is
 * logged and the task tried again at its next due time; a request's failure is its answer. A job's work is
 * idempotent and crash-safe by itself (src/maintenance/), so a leader that dies mid-job leaves it for the next one.
 */
import type { CommitTurns } from "./commit-turns.ts";
import type { Meter } from "@opentelemetry/api";
import { METRICS } from "./metrics.ts";
import { ensureError, ErrorKind, LakeError } from "../src/errors.ts";
import type { Table } from "../src/table/table.ts";
import type { Actor, ActorContext, Cancellable } from "./runtime/index.ts";
import type { Clock, MaintenanceResponder } from "./ports.ts";
import { runMaintenanceJob, type MaintenanceJob } from "./maintenance-jobs.ts";
import { expirationCounters, type MaintenanceTask } from "./maintenance-tasks.ts";
import type { ExpireResult } from "../src/maintenance/expire-snapshots.ts";

export type { MaintenanceTask } from "./maintenance-tasks.ts";

export type MaintenanceMsg =
  | { type: "tick" }
  /** The leader's committer landed a snapshot (see `MaintenanceTask.runOnCommit`). */
  | { type: "committed"; snapshotId: number }
  /** A run-on-commit task's gap has ended (see `MaintenanceTask.onCommitGapMs`). */
  | { type: "gap-ended" }
  | { type: "done"; task: string; counts: Record<string, number> }
  | { type: "failed"; task: string; error: Error }
  /** A job asked for over NATS; its answers go to `responder`. */
  | { type: "request"; job: MaintenanceJob; responder: MaintenanceResponder }
  | { type: "request-ended"; task: string; ok: boolean; ms: number; error?: Error };

export interface MaintenanceDeps {
  table: Table;
  tasks: readonly MaintenanceTask[];
  clock: Clock;
  meter: Meter;
  /** The node running it (logs). */
  nodeId?: string;
  /** Whether this node still holds the table's lease; checked before each requested job (a paused ex-leader's). */
  stillLeader?: () => boolean;
  /**
   * Whether this leadership's committer has decided everything that was in the commit stream when it took the lead
   * (default: yes). Orphan cleanup waits for it (see ORPHAN_TASKS).
   */
  backlogDecided?: () => boolean;
  /** How often due times are checked (default 1 s). */
  tickMs?: number;
  /**
   * The table's commit turn, shared with its committer: a requested job's commit that keeps losing races to the
   * commit rounds takes it (CommitRequest.exclusive), so a restore or compaction lands under any ingest rate.
   */
  turns?: CommitTurns;
  /** Runs a requested job (tests replace it); default runMaintenanceJob. */
  runJob?: (table: Table, job: MaintenanceJob, onProgress: (p: { done: number; total: number; files?: number }) => void) => Promise<unknown>;
}

/**
 * Jobs that wait until the leader has decided its commit-stream backlog. Orphan cleanup protects the data files of
 * committables not yet decided by their age alone (`natslake.orphan-older-than`). After a gap with no leader longer
 * than that bound (Redis down, every committer stopped), the stream holds committables whose files are older than it:
 * a cleanup running beside the new leader's first round would delete files that round is about to reference — a
 * snapshot pointing at missing files. Once the backlog is decided, its files are referenced (read after the listing)
 * or rejected (orphans indeed), and every file still in flight is seconds old.
 */
export const ORPHAN_TASKS: ReadonlySet<string> = new Set(["remove-orphans"]);

/** Requests waiting beyond the running job; more are refused (the CLI says the leader is busy). */
export const MAX_QUEUED_REQUESTS = 16;

export class MaintenanceActor implements Actor<MaintenanceMsg> {
  private timer: Cancellable | null = null;
  private running: string | null = null;
  private readonly queue: Array<{ job: MaintenanceJob; responder: MaintenanceResponder }> = [];
  /** Monotonic time each task last started (absent: never in this leadership — due at once). */
  private readonly lastRun = new Map<string, number>();
  /** Run-on-commit tasks with a snapshot landed since they last started. */
  private readonly committedSince = new Set<string>();
  /** A wake-up is scheduled for a run-on-commit task waiting out its gap. */
  private gapWakeUp: Cancellable | null = null;
  private readonly removed;
  private readonly failures;
  private readonly requests;
  private readonly recordExpiration: (table: string, r: ExpireResult) => void;

  constructor(private readonly d: MaintenanceDeps) {
    this.removed = METRICS.maintenanceRemoved.create(d.meter);
    this.failures = METRICS.maintenanceFailures.create(d.meter);
    this.requests = METRICS.maintenanceRequests.create(d.meter);
    this.recordExpiration = expirationCounters(d.meter);
  }

  preStart(ctx: ActorContext<MaintenanceMsg>): void {
    this.timer = ctx.scheduleRepeatedly(this.d.tickMs ?? 1000, { type: "tick" });
  }

  postStop(): void {
    this.timer?.cancel();
    this.gapWakeUp?.cancel();
    // The leadership ended: what was queued never ran. (A running job goes on and answers for itself.)
    for (const q of this.queue.splice(0)) q.responder.failed(new LakeError(ErrorKind.Fenced, `${this.d.table.name}: this node stopped leading the table before the job ran; nothing was done (run it again)`));
  }

  receive(msg: MaintenanceMsg, ctx: ActorContext<MaintenanceMsg>): void {
    const table = this.d.table.name;
    switch (msg.type) {
      case "tick":
        this.next(ctx);
        return;
      case "committed": {
        let wait = 0;
        const now = this.d.clock.monotonic();
        for (const t of this.d.tasks) {
          if (t.runOnCommit !== true) continue;
          this.committedSince.add(t.name);
          const last = this.lastRun.get(t.name);
          if (last !== undefined) wait = Math.max(wait, last + (t.onCommitGapMs ?? 0) - now);
        }
        // A task still in its gap is due when the gap ends: wake up then rather than at the next tick.
        if (wait > 0) this.wakeAfterGap(wait, ctx);
        this.next(ctx);
        return;
      }
      case "gap-ended":
        this.gapWakeUp = null;
        this.next(ctx);
        return;
      case "request": {
        if (this.d.stillLeader?.() === false) {
          msg.responder.failed(new LakeError(ErrorKind.Fenced, `${table}: this node no longer leads the table`));
          return;
        }
        if (this.queue.length >= MAX_QUEUED_REQUESTS) {
          msg.responder.failed(new LakeError(ErrorKind.Unexpected, `${table}: the leader has ${this.queue.length} maintenance requests waiting already; try again later`));
          return;
        }
        this.queue.push({ job: msg.job, responder: msg.responder });
        msg.responder.accepted(this.queue.length - 1 + (this.running !== null ? 1 : 0));
        this.next(ctx);
        return;
      }
      case "done":
        this.running = null;
        for (const [kind, n] of Object.entries(msg.counts)) if (n > 0) this.removed.add(n, { table, task: msg.task, kind });
        if (!this.d.tasks.find((t) => t.name === msg.task)?.quiet && Object.values(msg.counts).some((n) => n > 0)) ctx.log.info("maintenance done", { table, task: msg.task, ...msg.counts });
        this.next(ctx);
        return;
      case "failed":
        this.running = null;
        this.failures.add(1, { table, task: msg.task });
        ctx.log.warn("maintenance failed; trying again at its next due time", { table, task: msg.task, error: msg.error.message });
        this.next(ctx);
        return;
      case "request-ended":
        this.running = null;
        this.requests.add(1, { table, task: msg.task, outcome: msg.ok ? "ok" : "failed" });
        if (msg.ok) ctx.log.info("maintenance request done", { table, task: msg.task, node: this.d.nodeId, ms: msg.ms });
        else ctx.log.warn("maintenance request failed", { table, task: msg.task, node: this.d.nodeId, ms: msg.ms, error: msg.error?.message });
        this.next(ctx);
        return;
    }
  }

  /**
   * Starts the next job when none runs: the oldest request, else the most overdue scheduled task. An orphan cleanup
   * waits until the backlog is decided (a request stays at the head of the queue, scheduled tasks run meanwhile; the
   * next tick looks again).
   */
  private next(ctx: ActorContext<MaintenanceMsg>): void {
    if (this.running !== null) return;
    const waiting = this.d.backlogDecided?.() === false;
    const head = this.queue[0];
    if (head !== undefined && !(waiting && ORPHAN_TASKS.has(head.job.task))) {
      this.queue.shift();
      return this.startRequest(head.job, head.responder, ctx);
    }
    const now = this.d.clock.monotonic();
    let due: MaintenanceTask | undefined;
    let dueBy = -Infinity;
    for (const t of this.d.tasks) {
      const every = t.intervalMs(this.d.table);
      if (every === null || (waiting && ORPHAN_TASKS.has(t.name))) continue;
      const last = this.lastRun.get(t.name);
      // Overdue by how much: a task never run in this leadership is the most overdue; ties keep the list's order,
      // and a task due every second cannot starve the hourly ones. A run-on-commit task with a snapshot landed is
      // overdue by the time since it last started: due at once, yet an hourly task overdue for longer goes first,
      // so one running after every commit cannot starve it either.
      const by = last === undefined ? Infinity : this.committedSince.has(t.name) ? now - last - (t.onCommitGapMs ?? 0) : now - last - every;
      if (by >= 0 && by > dueBy) {
        due = t;
        dueBy = by;
      }
    }
    if (due === undefined) {
      // A commit waits for its task's gap to end. A timer can fire a little before the monotonic clock says the gap
      // ended (its loop time is read in whole milliseconds): wake up again for what is left, or the commit's run
      // would wait for the next tick.
      let left = Infinity;
      for (const t of this.d.tasks) {
        const last = this.lastRun.get(t.name);
        if (t.runOnCommit === true && this.committedSince.has(t.name) && last !== undefined) left = Math.min(left, last + (t.onCommitGapMs ?? 0) - now);
      }
      if (left > 0 && left < Infinity) this.wakeAfterGap(left, ctx);
      return;
    }
    const task = due;
    this.running = task.name;
    this.lastRun.set(task.name, now);
    this.committedSince.delete(task.name);
    ctx.pipeToSelf(
      task.run(this.d.table),
      (counts) => ({ type: "done", task: task.name, counts }),
      (e) => ({ type: "failed", task: task.name, error: ensureError(e) }),
    );
  }

  /** Wakes the actor in `ms` (at least 1) for a gap's end, unless a wake-up is already set. */
  private wakeAfterGap(ms: number, ctx: ActorContext<MaintenanceMsg>): void {
    if (this.gapWakeUp === null) this.gapWakeUp = ctx.scheduleOnce(Math.max(1, Math.ceil(ms)), { type: "gap-ended" });
  }

  private startRequest(job: MaintenanceJob, responder: MaintenanceResponder, ctx: ActorContext<MaintenanceMsg>): void {
    const table = this.d.table.name;
    if (this.d.stillLeader?.() === false) {
      responder.failed(new LakeError(ErrorKind.Fenced, `${table}: this node stopped leading the table before the job ran; nothing was done (run it again)`));
      return this.next(ctx);
    }
    this.running = `request:${job.task}`;
    const started = this.d.clock.monotonic();
    ctx.log.info("maintenance request started", { table, task: job.task, node: this.d.nodeId, options: job.options });
    const turns = this.d.turns;
    const run = this.d.runJob ?? ((t, j, onProgress) => runMaintenanceJob(t, j, { onProgress, ...(turns !== undefined ? { exclusive: () => turns.take() } : {}) }));
    const work = run(this.d.table, job, (p) => responder.progress(p)).then((result) => {
      if (job.task === "expire-snapshots") this.recordExpiration(table, result as ExpireResult);
      return result;
    });
    // Answered from the job itself, not through the mailbox: a job that outlives this actor (the leadership moved
    // while it ran) still tells its caller how it ended.
    work.then(
      (result) => responder.done(result),
      (e: unknown) => responder.failed(ensureError(e)),
    );
    ctx.pipeToSelf(
      work,
      () => ({ type: "request-ended", task: job.task, ok: true, ms: Math.round(this.d.clock.monotonic() - started) }),
      (error) => ({ type: "request-ended", task: job.task, ok: false, ms: Math.round(this.d.clock.monotonic() - started), error }),
    );
  }
}
