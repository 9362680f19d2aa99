/**
 * MaintenanceActor: the leader's scheduled table maintenance other than snapshot expiration (which the committer
 * runs after commits) — partition expiration, orphan-file cleanup. One per table, spawned and stopped with the
 * leadership, as the coordinator and the router are, so exactly one process maintains a table at a time and a
 * paused ex-leader's jobs end with its actors.
 *
 * Each task says when it is due (from the table's options) and runs off the commit path: one task at a time, never
 * twice at once, a failure logged and tried again at its next due time. A task's work is idempotent and crash-safe
 * by itself (src/maintenance/), so a leader that dies mid-task leaves it for the next leader.
 */
import type { Meter } from "@opentelemetry/api";
import { ensureError } from "../src/errors.ts";
import type { Table } from "../src/table/table.ts";
import type { Actor, ActorContext, Cancellable } from "./runtime/index.ts";
import type { Clock } from "./ports.ts";

export interface MaintenanceTask {
  /** A short name for logs and metrics (`expire-partitions`, `remove-orphans`). */
  name: string;
  /** Milliseconds between runs for this table, or null when the table's options turn the task off. */
  intervalMs(table: Table): number | null;
  /** Runs it once; resolves with counts to log and to add to `natslake_maintenance_removed_total{task,kind}`. */
  run(table: Table): Promise<Record<string, number>>;
}

export type MaintenanceMsg = { type: "tick" } | { type: "done"; task: string; counts: Record<string, number> } | { type: "failed"; task: string; error: Error };

export interface MaintenanceDeps {
  table: Table;
  tasks: readonly MaintenanceTask[];
  clock: Clock;
  meter: Meter;
  /** How often due times are checked (default 1 s). */
  tickMs?: number;
}

export class MaintenanceActor implements Actor<MaintenanceMsg> {
  private timer: Cancellable | null = null;
  private running: string | null = null;
  /** Monotonic time each task last started (absent: never in this leadership — due at once). */
  private readonly lastRun = new Map<string, number>();
  private readonly removed;
  private readonly failures;

  constructor(private readonly d: MaintenanceDeps) {
    this.removed = d.meter.createCounter("natslake_maintenance_removed_total", { description: "what scheduled maintenance removed (partitions, files), by task and kind" });
    this.failures = d.meter.createCounter("natslake_maintenance_failures_total", { description: "scheduled maintenance runs that failed" });
  }

  preStart(ctx: ActorContext<MaintenanceMsg>): void {
    this.timer = ctx.scheduleRepeatedly(this.d.tickMs ?? 1000, { type: "tick" });
  }

  postStop(): void {
    this.timer?.cancel();
  }

  receive(msg: MaintenanceMsg, ctx: ActorContext<MaintenanceMsg>): void {
    const table = this.d.table.name;
    switch (msg.type) {
      case "tick": {
        if (this.running !== null) return;
        const now = this.d.clock.monotonic();
        const due = this.d.tasks.find((t) => {
          const every = t.intervalMs(this.d.table);
          const last = this.lastRun.get(t.name);
          return every !== null && (last === undefined || now - last >= every);
        });
        if (due === undefined) return;
        this.running = due.name;
        this.lastRun.set(due.name, now);
        ctx.pipeToSelf(
          due.run(this.d.table),
          (counts) => ({ type: "done", task: due.name, counts }),
          (e) => ({ type: "failed", task: due.name, error: ensureError(e) }),
        );
        return;
      }
      case "done":
        this.running = null;
        for (const [kind, n] of Object.entries(msg.counts)) if (n > 0) this.removed.add(n, { table, task: msg.task, kind });
        if (Object.values(msg.counts).some((n) => n > 0)) ctx.log.info("maintenance done", { table, task: msg.task, ...msg.counts });
        return;
      case "failed":
        this.running = null;
        this.failures.add(1, { table, task: msg.task });
        ctx.log.warn("maintenance failed; trying again at its next due time", { table, task: msg.task, error: msg.error.message });
        return;
    }
  }
}
