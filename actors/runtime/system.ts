/**
 * ActorSystem: the registry of one node's actors — spawn by unique name, look up, stop, orderly shutdown, ask.
 *
 * Who calls it: the node (cluster/node.ts) and tests. Actors do not hold the system; they spawn children through
 * their context and reach each other through refs the node hands them.
 *
 * Guarantees:
 * - A name belongs to at most one actor until that actor has fully stopped (children are `<parent>/<child>`).
 * - `stop` stops the actor's children first (newest first), then runs its `postStop`; its timers are cancelled and
 *   its queued messages dropped, or handled first with `{ drain: true }`. Stopping twice returns the same promise.
 * - `shutdown` stops every top-level actor newest first, each after its own children, and refuses new spawns from
 *   the moment it is called.
 * - Time (timers, back-off, ask deadlines), randomness (back-off jitter) and logging are ports given at
 *   construction; the system holds no global state, so several systems can share a process (tests do).
 */
import type { Actor, ActorRef, Logger, SpawnOptions, StopOptions } from "./actor.ts";
import { ask } from "./ask.ts";
import { ActorCell, type CellHandle, type CellHost, validateActorName } from "./cell.ts";
import { realClock, type RuntimeClock } from "./clock.ts";
import { ActorError, ActorErrorKind, invalidArgument } from "./errors.ts";
import { consoleLogger } from "./logger.ts";
import type { ActorFailure } from "./supervisor.ts";

export interface ActorSystemOptions {
  /** Default: JSON lines on stderr from level `info`. */
  log?: Logger;
  clock?: RuntimeClock;
  /** Uniform in [0, 1); back-off jitter. Default `Math.random`. */
  random?: () => number;
  /** A top-level actor gave up after too many restarts and has no `onEscalate` hook of its own. */
  onEscalate?: (failure: ActorFailure) => void;
}

export class ActorSystem {
  readonly log: Logger;
  readonly clock: RuntimeClock;
  /** Every live or stopping actor by full name; insertion order is spawn order. */
  private readonly cells = new Map<string, CellHandle>();
  private readonly host: CellHost;
  private shuttingDown: Promise<void> | undefined;

  constructor(opts: ActorSystemOptions = {}) {
    this.log = opts.log ?? consoleLogger("info");
    this.clock = opts.clock ?? realClock;
    const random = opts.random ?? Math.random;
    const onEscalate = opts.onEscalate;
    this.host = {
      log: this.log,
      clock: this.clock,
      random,
      spawn: <C>(name: string, factory: () => Actor<C>, spawnOpts: SpawnOptions, parent: CellHandle | undefined): ActorRef<C> =>
        this.create(name, factory, spawnOpts, parent),
      unregister: (cell: CellHandle): void => {
        if (this.cells.get(cell.name) === cell) this.cells.delete(cell.name);
      },
      escalated: (failure: ActorFailure): void => onEscalate?.(failure),
    };
  }

  /**
   * Starts a top-level actor. The factory is called now (a throw propagates); `preStart` runs asynchronously and
   * messages told before it completes wait in the mailbox. Throws `ActorError` `NameTaken`, `InvalidArgument`, or
   * `Stopped` after `shutdown`.
   */
  spawn<M>(name: string, factory: () => Actor<M>, opts: SpawnOptions = {}): ActorRef<M> {
    validateActorName(name);
    return this.create(name, factory, opts, undefined);
  }

  /** The live (or stopping) actor with that full name. The type argument is the caller's assertion. */
  lookup<M = unknown>(name: string): ActorRef<M> | undefined {
    return this.cells.get(name)?.ref as ActorRef<M> | undefined;
  }

  /** Names of the live or stopping actors, in spawn order. */
  names(): string[] {
    return [...this.cells.keys()];
  }

  /**
   * The actors handling one message for at least `thresholdMs` now (an await inside `receive` that does not settle
   * holds the actor's whole mailbox, its timers included): name, message type, since when (the clock's ms) and for
   * how long. Oldest first.
   */
  busyHandlers(thresholdMs: number): Array<{ actor: string; message: string; since: number; ms: number }> {
    const now = this.clock.now();
    const out: Array<{ actor: string; message: string; since: number; ms: number }> = [];
    for (const cell of this.cells.values()) {
      const h = cell.handling();
      if (h !== null && now - h.since >= thresholdMs) out.push({ actor: cell.name, message: h.message, since: h.since, ms: now - h.since });
    }
    return out.sort((a, b) => b.ms - a.ms);
  }

  /** Stops an actor of this system (see the module header); resolves once it has fully stopped. */
  async stop(ref: ActorRef<unknown>, opts: StopOptions = {}): Promise<void> {
    const cell = this.cells.get(ref.name);
    if (cell === undefined || cell.ref !== ref) {
      if (ref.stopped) return; // already stopped: stopping is idempotent
      throw invalidArgument(`actor '${ref.name}' does not belong to this system`);
    }
    await cell.stop(opts);
  }

  /** Stops every actor, children before parents, newest top-level actor first. Idempotent. */
  shutdown(opts: StopOptions = {}): Promise<void> {
    if (this.shuttingDown === undefined) this.shuttingDown = this.stopAll(opts);
    return this.shuttingDown;
  }

  ask<M, R>(ref: ActorRef<M>, build: (reply: (r: R) => void) => M, timeoutMs: number): Promise<R> {
    return ask(ref, build, timeoutMs, this.clock);
  }

  private async stopAll(opts: StopOptions): Promise<void> {
    const topLevel = [...this.cells.values()].filter((c) => c.parent === undefined).reverse();
    for (const cell of topLevel) await cell.stop(opts);
  }

  private create<M>(name: string, factory: () => Actor<M>, opts: SpawnOptions, parent: CellHandle | undefined): ActorRef<M> {
    if (this.shuttingDown !== undefined && parent === undefined) {
      throw new ActorError(ActorErrorKind.Stopped, `cannot spawn '${name}': the actor system is shutting down`, { context: { actor: name } });
    }
    const existing = this.cells.get(name);
    if (existing !== undefined) {
      throw new ActorError(
        ActorErrorKind.NameTaken,
        `an actor named '${name}' already exists${existing.ref.stopped ? " (it is still stopping; await its stop first)" : ""}`,
        { context: { actor: name } },
      );
    }
    const cell = new ActorCell<M>(name, factory, opts, this.host, parent);
    cell.start();
    this.cells.set(name, cell);
    parent?.adoptChild(cell);
    return cell.ref;
  }
}
