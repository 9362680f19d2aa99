/**
 * ActorCell: the runtime's private home of one actor — its ref, mailbox, supervisor, current instance
 * ("incarnation"), timers, `pipeToSelf` work and children. Only the system (system.ts) creates cells; actors see
 * them only through `ActorRef` and `ActorContext` (actor.ts), whose guarantees are implemented here.
 *
 * Lifecycle: starting (preStart) → running → [failure → restarting (back-off) → starting …] → stopping → stopped.
 * Every lifecycle step that awaits (preStart, discarding an instance, restarting, stopping) runs on one promise
 * chain, so two steps never interleave; the synchronous part of a failure or a stop (suspend the mailbox, retire the
 * instance, refuse messages) happens at once, before any await.
 *
 * An incarnation is retired the moment it failed or its stop began: its signal is aborted, its timers cancelled and
 * its context turns inert (timers no-op, `pipeToSelf` results dropped, `spawn` throws), so nothing an old instance
 * left running can reach the next one. It is discarded (children stopped, `postStop`) on the chain afterwards.
 */
import { ensureError } from "../../src/errors.ts";
import type { Actor, ActorContext, ActorRef, Cancellable, Logger, SpawnOptions, StopOptions } from "./actor.ts";
import type { RuntimeClock } from "./clock.ts";
import { ActorError, ActorErrorKind, invalidArgument } from "./errors.ts";
import { withFields } from "./logger.ts";
import { Mailbox } from "./mailbox.ts";
import { type ActorFailure, type FailurePhase, resolveSupervision, type SupervisionOptions, Supervisor } from "./supervisor.ts";

/** What a cell needs from its system. */
export interface CellHost {
  readonly log: Logger;
  readonly clock: RuntimeClock;
  readonly random: () => number;
  /** Creates, starts and registers a cell (a child when `parent` is given); throws like `ActorSystem.spawn`. */
  spawn<C>(name: string, factory: () => Actor<C>, opts: SpawnOptions, parent: CellHandle | undefined): ActorRef<C>;
  /** Called once a cell has fully stopped; frees its name. */
  unregister(cell: CellHandle): void;
  /** A top-level actor gave up and has no `onEscalate` hook. */
  escalated(failure: ActorFailure): void;
}

/** The type-erased view of a cell used by its system, its parent and its children. */
export interface CellHandle {
  readonly name: string;
  readonly ref: ActorRef<unknown>;
  readonly parent: CellHandle | undefined;
  stop(opts?: StopOptions): Promise<void>;
  adoptChild(child: CellHandle): void;
  childStopped(child: CellHandle): void;
  childEscalated(failure: ActorFailure): void;
  /** The message being handled now and since when (the clock's monotonic ms); null while idle. */
  handling(): { since: number; message: string } | null;
}

type Phase = "starting" | "running" | "restarting" | "stopping" | "stopped";

/** A message's `type` when it has one (every actor protocol here is a union tagged by `type`), else its kind. */
function messageLabel(msg: unknown): string {
  if (typeof msg === "object" && msg !== null && typeof (msg as { type?: unknown }).type === "string") return (msg as { type: string }).type;
  return typeof msg;
}

/** Names are path segments: a child is `<parent>/<child>`, so `/` is reserved. */
export function validateActorName(name: string): void {
  // eslint-disable-next-line no-control-regex
  if (name.length === 0 || name.trim() !== name || name.includes("/") || /[\u0000-\u001f\u007f]/.test(name)) {
    throw invalidArgument(`invalid actor name '${name}': it must be non-empty, without '/', control characters or surrounding spaces`);
  }
}

function validateDelay(what: string, ms: number, allowZero: boolean): void {
  if (!Number.isFinite(ms) || ms < 0 || (!allowZero && ms === 0)) {
    throw invalidArgument(`${what} must be a finite number ${allowZero ? "≥ 0" : "> 0"}, got ${ms}`);
  }
}

/** For logs: a message's `type` (convention 7) rather than its possibly huge payload. */
function messageType(msg: unknown): string | undefined {
  if (typeof msg === "object" && msg !== null && "type" in msg && typeof msg.type === "string") return msg.type;
  return undefined;
}

const CANCELLED: Cancellable = Object.freeze({ cancel: () => {} });

class TimerEntry implements Cancellable {
  cancelled = false;
  handle: Cancellable | undefined;

  constructor(private readonly owner: Set<TimerEntry>) {
    owner.add(this);
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.handle?.cancel();
    this.owner.delete(this);
  }

  /** A one-shot timer fired: it no longer needs cancelling on stop (its queued tick still obeys `cancelled`). */
  fired(): void {
    this.owner.delete(this);
  }
}

class Incarnation<M> {
  readonly abort = new AbortController();
  readonly timers = new Set<TimerEntry>();
  /** `pipeToSelf` work in flight; each promise settles after its result was delivered (never rejects). */
  readonly pipes = new Set<Promise<void>>();
  /** False once retired: its context is inert and what it scheduled no longer reaches the cell. */
  live = true;
  /** `preStart` completed, so `postStop` is owed. */
  started = false;
  discarded = false;
  readonly ctx: ActorContext<M>;

  constructor(
    readonly id: number,
    readonly actor: Actor<M>,
    makeContext: (inc: Incarnation<M>) => ActorContext<M>,
  ) {
    this.ctx = makeContext(this);
  }
}

export class ActorCell<M> implements CellHandle {
  readonly ref: ActorRef<M>;
  private readonly log: Logger;
  private readonly mailbox: Mailbox<M>;
  private readonly supervisor: Supervisor;
  private readonly hooks: Pick<SupervisionOptions, "onFailure" | "onEscalate">;
  /** Insertion order is spawn order; stopped in reverse. */
  private readonly children = new Map<string, CellHandle>();
  private phase: Phase = "starting";
  private current: Incarnation<M> | undefined;
  /** The message `handle` is in and since when (see `handling`): kept as they are, labelled only when asked. */
  private inReceive: unknown = null;
  private inReceiveSince = 0;
  private incarnations = 0;
  /** The lifecycle chain; every step catches its own errors, so it never rejects. */
  private lifecycle: Promise<void> = Promise.resolve();
  private restartTimer: Cancellable | undefined;
  private stopping: Promise<void> | undefined;
  private draining = false;

  constructor(
    readonly name: string,
    private readonly factory: () => Actor<M>,
    opts: SpawnOptions,
    private readonly host: CellHost,
    readonly parent: CellHandle | undefined,
  ) {
    this.supervisor = new Supervisor(resolveSupervision(opts.supervision), host.random);
    this.hooks = { onFailure: opts.supervision?.onFailure, onEscalate: opts.supervision?.onEscalate };
    this.log = withFields(host.log, { actor: name });
    this.mailbox = new Mailbox<M>((msg) => this.handle(msg), {
      owner: name,
      capacity: opts.mailboxCapacity,
      suspended: true,
      onError: (error) => this.log.error("mailbox handler threw (runtime bug)", { err: error }),
    });
    const isStopped = (): boolean => this.phase === "stopping" || this.phase === "stopped";
    this.ref = Object.freeze({
      name,
      get stopped(): boolean {
        return isStopped();
      },
      tell: (msg: M): void => this.tell(msg),
      toString: (): string => `ActorRef(${name})`,
    });
  }

  /** Builds the first instance now, so a throwing factory fails `spawn` itself; `preStart` runs asynchronously. */
  start(): void {
    const inc = this.incarnate(this.factory());
    void this.enqueueLifecycle(() => this.runPreStart(inc));
  }

  stop(opts: StopOptions = {}): Promise<void> {
    if (this.stopping !== undefined) return this.stopping;
    this.phase = "stopping";
    this.restartTimer?.cancel();
    this.restartTimer = undefined;
    const inc = this.current;
    const drain = opts.drain === true && inc !== undefined && inc.live;
    if (opts.drain === true && !drain) {
      this.log.warn("stop with drain while no instance is live (restarting): queued messages are dropped", { queued: this.mailbox.size });
    }
    this.draining = drain;
    if (drain) {
      // No new ticks while draining; `pipeToSelf` results of the live instance are still accepted.
      for (const t of [...inc.timers]) t.cancel();
    } else {
      const dropped = this.mailbox.clear();
      if (dropped > 0) this.log.debug("stop: queued messages dropped", { dropped });
      if (inc !== undefined) this.retire(inc);
    }
    this.stopping = this.enqueueLifecycle(() => this.finishStop(drain));
    return this.stopping;
  }

  adoptChild(child: CellHandle): void {
    this.children.set(child.name, child);
  }

  childStopped(child: CellHandle): void {
    if (this.children.get(child.name) === child) this.children.delete(child.name);
  }

  childEscalated(failure: ActorFailure): void {
    this.fail(failure.error, "child", undefined, failure.actor);
  }

  private tell(msg: M): void {
    if (this.phase === "stopping" || this.phase === "stopped") {
      this.deadLetter(msg, "actor is stopping");
      return;
    }
    this.mailbox.enqueue(msg);
  }

  /** Timer ticks and `pipeToSelf` results: exempt from the capacity, accepted while draining. Never throws. */
  private deliverSelf(msg: M, admit: () => boolean): void {
    if (this.mailbox.isClosed || this.phase === "stopped" || (this.phase === "stopping" && !this.draining)) {
      this.deadLetter(msg, "actor is stopping");
      return;
    }
    this.mailbox.enqueue(msg, { force: true, admit });
  }

  private deadLetter(msg: M, why: string): void {
    this.log.debug("dead letter", { why, messageType: messageType(msg) });
  }

  private enqueueLifecycle(step: () => Promise<void>): Promise<void> {
    const next = this.lifecycle.then(step).catch((e: unknown) => {
      this.log.error("lifecycle step failed (runtime bug)", { err: ensureError(e) });
    });
    this.lifecycle = next;
    return next;
  }

  private incarnate(actor: Actor<M>): Incarnation<M> {
    const inc = new Incarnation<M>(++this.incarnations, actor, (i) => this.makeContext(i));
    this.current = inc;
    this.phase = "starting";
    return inc;
  }

  private async runPreStart(inc: Incarnation<M>): Promise<void> {
    // Stopped before it ever started: no preStart, hence no postStop.
    if (!inc.live) return;
    try {
      if (inc.actor.preStart !== undefined) await inc.actor.preStart(inc.ctx);
    } catch (e) {
      this.fail(ensureError(e), "preStart");
      return;
    }
    inc.started = true;
    // A stop or a failure that arrived during preStart has already taken over.
    if (this.phase !== "starting" || !inc.live) return;
    this.phase = "running";
    this.supervisor.running(this.host.clock.now());
    if (inc.id > 1) this.log.info("restarted", { incarnation: inc.id });
    this.mailbox.resume();
  }

  private async handle(msg: M): Promise<void> {
    const inc = this.current;
    if (inc === undefined || !inc.live) {
      this.deadLetter(msg, "no live instance");
      return;
    }
    // Recorded for the system's stuck-handler check: a receive that awaits something that never settles holds the
    // whole mailbox (timers included) and would otherwise stall the actor without a word.
    this.inReceive = msg;
    this.inReceiveSince = this.host.clock.now();
    try {
      await inc.actor.receive(msg, inc.ctx);
    } catch (e) {
      this.fail(ensureError(e), "receive", msg);
    } finally {
      this.inReceive = null;
    }
  }

  handling(): { since: number; message: string } | null {
    return this.inReceive === null ? null : { since: this.inReceiveSince, message: messageLabel(this.inReceive) };
  }

  /**
   * An instance failed. Always reported; acted on only while starting or running (a failure during a restart or a
   * stop is already being dealt with). Synchronously suspends the mailbox and retires the instance, so the next
   * message cannot reach it.
   */
  private fail(error: Error, phase: FailurePhase, message?: unknown, child?: string): void {
    const failure: ActorFailure = {
      actor: this.name,
      error,
      phase,
      ...(message === undefined ? {} : { message }),
      ...(child === undefined ? {} : { child }),
    };
    this.log.error(`actor failed in ${phase}`, {
      err: error,
      phase,
      ...(message === undefined ? {} : { messageType: messageType(message) }),
      ...(child === undefined ? {} : { child }),
      incarnation: this.current?.id,
    });
    this.callHook("onFailure", () => this.hooks.onFailure?.(failure));
    if (this.phase !== "starting" && this.phase !== "running") return;

    const inc = this.current;
    this.mailbox.suspend();
    if (inc !== undefined) this.retire(inc);
    const decision = this.supervisor.decide(this.host.clock.now());
    if (decision.action === "escalate") {
      const s = this.supervisor.strategy;
      this.log.error("too many restarts: stopping and escalating", { restarts: decision.restarts, maxRestarts: s.maxRestarts, withinMs: s.withinMs });
      void this.stop().then(() => this.escalate(failure));
      return;
    }
    this.phase = "restarting";
    this.log.warn("restarting after back-off", { delayMs: decision.delayMs, attempt: decision.attempt });
    void this.enqueueLifecycle(async () => {
      await this.discard(inc);
      if (this.phase !== "restarting") return;
      this.restartTimer = this.host.clock.setTimer(() => {
        this.restartTimer = undefined;
        void this.enqueueLifecycle(() => this.restart());
      }, decision.delayMs);
    });
  }

  private async restart(): Promise<void> {
    if (this.phase !== "restarting") return;
    let actor: Actor<M>;
    try {
      actor = this.factory();
    } catch (e) {
      this.phase = "starting";
      this.fail(ensureError(e), "create");
      return;
    }
    await this.runPreStart(this.incarnate(actor));
  }

  private escalate(failure: ActorFailure): void {
    const hook = this.hooks.onEscalate;
    if (hook !== undefined) this.callHook("onEscalate", () => hook(failure.error, failure));
    else if (this.parent !== undefined) this.parent.childEscalated(failure);
    else this.callHook("onEscalate", () => this.host.escalated(failure));
  }

  private callHook(name: string, call: () => void): void {
    try {
      call();
    } catch (e) {
      this.log.error(`${name} hook threw`, { err: ensureError(e) });
    }
  }

  /** Makes an incarnation inert at once: signal aborted, timers cancelled, context calls ignored. */
  private retire(inc: Incarnation<M>): void {
    if (!inc.live) return;
    inc.live = false;
    inc.abort.abort(new ActorError(ActorErrorKind.Stopped, `instance ${inc.id} of actor '${this.name}' was discarded`));
    for (const t of [...inc.timers]) t.cancel();
  }

  /** Retires the instance, waits for its message in progress, stops its children, runs its `postStop`. */
  private async discard(inc: Incarnation<M> | undefined): Promise<void> {
    if (inc === undefined || inc.discarded) return;
    inc.discarded = true;
    this.retire(inc);
    if (this.current === inc) this.current = undefined;
    await this.mailbox.whenIdle();
    await this.stopChildren();
    if (inc.started && inc.actor.postStop !== undefined) {
      try {
        await inc.actor.postStop(inc.ctx);
      } catch (e) {
        this.log.error("postStop failed", { err: ensureError(e), incarnation: inc.id });
      }
    }
  }

  private async stopChildren(): Promise<void> {
    for (const child of [...this.children.values()].reverse()) await child.stop();
  }

  private async finishStop(drain: boolean): Promise<void> {
    const inc = this.current;
    if (drain && inc !== undefined && inc.live && inc.started) await this.drainAll(inc);
    const dropped = this.mailbox.close();
    if (dropped > 0) this.log.debug("stop: queued messages dropped", { dropped });
    await this.mailbox.whenIdle();
    await this.discard(inc);
    await this.stopChildren();
    this.phase = "stopped";
    this.host.unregister(this);
    this.parent?.childStopped(this);
    this.log.debug("stopped");
  }

  /** Until the queue is empty and no `pipeToSelf` result of this instance is still to come. */
  private async drainAll(inc: Incarnation<M>): Promise<void> {
    while (true) {
      if (this.mailbox.size > 0) this.mailbox.resume();
      await this.mailbox.whenIdle();
      if (this.mailbox.size > 0) continue;
      if (inc.pipes.size === 0 || !inc.live) return;
      await Promise.all([...inc.pipes]);
    }
  }

  private makeContext(inc: Incarnation<M>): ActorContext<M> {
    return {
      self: this.ref,
      name: this.name,
      log: this.log,
      signal: inc.abort.signal,
      scheduleOnce: (delayMs: number, msg: M): Cancellable => this.scheduleOnce(inc, delayMs, msg),
      scheduleRepeatedly: (intervalMs: number, msg: M, opts?: { initialDelayMs?: number }): Cancellable =>
        this.scheduleRepeatedly(inc, intervalMs, msg, opts?.initialDelayMs),
      spawn: <C>(name: string, factory: () => Actor<C>, opts?: SpawnOptions): ActorRef<C> => this.spawnChild(inc, name, factory, opts),
      stop: (opts?: StopOptions): void => {
        if (!inc.live) return;
        void this.stop(opts);
      },
      pipeToSelf: <T>(work: Promise<T>, onOk: (value: T) => M, onErr: (error: Error) => M): void =>
        this.pipeToSelf(inc, work, onOk, onErr),
    };
  }

  private canSchedule(inc: Incarnation<M>): boolean {
    return inc.live && this.phase !== "stopping" && this.phase !== "stopped";
  }

  private scheduleOnce(inc: Incarnation<M>, delayMs: number, msg: M): Cancellable {
    validateDelay("scheduleOnce delayMs", delayMs, true);
    if (!this.canSchedule(inc)) return CANCELLED;
    const entry = new TimerEntry(inc.timers);
    entry.handle = this.host.clock.setTimer(() => {
      entry.fired();
      if (entry.cancelled) return;
      this.deliverSelf(msg, () => !entry.cancelled && inc.live);
    }, delayMs);
    return entry;
  }

  private scheduleRepeatedly(inc: Incarnation<M>, intervalMs: number, msg: M, initialDelayMs: number | undefined): Cancellable {
    validateDelay("scheduleRepeatedly intervalMs", intervalMs, false);
    if (initialDelayMs !== undefined) validateDelay("scheduleRepeatedly initialDelayMs", initialDelayMs, true);
    if (!this.canSchedule(inc)) return CANCELLED;
    const entry = new TimerEntry(inc.timers);
    // True from enqueue until the tick is taken off the queue: the "at most one pending tick" rule.
    let pending = false;
    const fire = (): void => {
      if (entry.cancelled) return;
      if (pending) {
        this.log.debug("timer tick skipped: the previous one is still queued", { messageType: messageType(msg) });
      } else {
        pending = true;
        this.deliverSelf(msg, () => {
          pending = false;
          return !entry.cancelled && inc.live;
        });
      }
      entry.handle = this.host.clock.setTimer(fire, intervalMs);
    };
    entry.handle = this.host.clock.setTimer(fire, initialDelayMs ?? intervalMs);
    return entry;
  }

  private spawnChild<C>(inc: Incarnation<M>, name: string, factory: () => Actor<C>, opts: SpawnOptions = {}): ActorRef<C> {
    if (!inc.live || this.phase === "stopping" || this.phase === "stopped") {
      throw new ActorError(ActorErrorKind.Stopped, `actor '${this.name}' cannot spawn '${name}': this instance is stopping or discarded`, {
        context: { actor: this.name, child: name },
      });
    }
    validateActorName(name);
    return this.host.spawn(`${this.name}/${name}`, factory, opts, this);
  }

  private pipeToSelf<T>(inc: Incarnation<M>, work: Promise<T>, onOk: (value: T) => M, onErr: (error: Error) => M): void {
    if (!inc.live) {
      // Still observe the outcome: an unobserved rejection would crash the process.
      void work.then(
        () => this.log.debug("pipeToSelf result of a discarded instance dropped"),
        () => this.log.debug("pipeToSelf failure of a discarded instance dropped"),
      );
      return;
    }
    const tracked = work
      .then(
        (value) => onOk(value),
        (e: unknown) => onErr(ensureError(e)),
      )
      .then(
        (msg) => {
          if (inc.live) this.deliverSelf(msg, () => inc.live);
          else this.log.debug("pipeToSelf result of a discarded instance dropped", { messageType: messageType(msg) });
        },
        (e: unknown) => {
          if (inc.live) this.fail(ensureError(e), "pipeToSelf");
          else this.log.error("pipeToSelf mapping of a discarded instance threw", { err: ensureError(e) });
        },
      );
    inc.pipes.add(tracked);
    void tracked.finally(() => inc.pipes.delete(tracked));
  }
}
