/**
 * The actor contract: what an actor implements and what the runtime hands it.
 *
 * Guarantees the runtime gives every actor (implemented in cell.ts):
 * - `receive` is called for one message at a time, in mailbox order; the next call starts only after the previous
 *   one returned or its promise settled, so an actor's own fields need no locking even across `await`s.
 * - `preStart` completes before the first `receive`; messages sent meanwhile wait in the mailbox.
 * - `postStop` runs once for every instance whose `preStart` completed: when the actor stops, and when a failed
 *   instance is discarded before a restart. By then the context's `signal` is aborted, the instance's timers are
 *   cancelled and its children are stopped.
 * - A throw (or a rejected promise) from `receive` or `preStart` is the actor's failure: the supervisor
 *   (supervisor.ts) discards the instance and, after a back-off, builds a fresh one from the factory.
 *
 * Who may call what: anyone holding an `ActorRef` may `tell`; only the actor's own code (inside `preStart`,
 * `receive`, `postStop`, or callbacks they set up) uses its `ActorContext`. A context belongs to one instance: once
 * that instance is discarded, its timers and `pipeToSelf` results are dropped, so a stale callback of an old
 * instance cannot reach a fresh one.
 *
 * Messages are a union with a string `type`, handled by an exhaustive switch (convention 7).
 */
import type { SupervisionOptions } from "./supervisor.ts";

/** A small structured-logging port; the node injects pino, tests a recorder. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** A handle on something scheduled. `cancel` is idempotent and safe to call after it fired. */
export interface Cancellable {
  cancel(): void;
}

/** The only way to reach an actor from outside. */
export interface ActorRef<M> {
  /** The unique name in its system; a child is named `<parent>/<child>`. */
  readonly name: string;
  /** True from the moment the actor began stopping: from then on, `tell` drops messages (dead letters). */
  readonly stopped: boolean;
  /**
   * Enqueues `msg` and returns at once; the actor handles it later. Throws `MailboxFullError` when the mailbox is
   * bounded and full (the message was not enqueued): the producer's signal to back off.
   */
  tell(msg: M): void;
}

export interface StopOptions {
  /**
   * Handle the messages already queued (and the `pipeToSelf` results already under way) before stopping, instead of
   * dropping them. New messages from outside are refused as soon as stopping begins either way, and timers are
   * cancelled at once (a cancelled timer's queued tick is never delivered).
   */
  drain?: boolean;
}

export interface SpawnOptions {
  supervision?: SupervisionOptions;
  /** Bounds the messages producers may queue; absent means unbounded. */
  mailboxCapacity?: number;
}

/** What the runtime hands an actor instance: its identity, its logger, and the capabilities it may use. */
export interface ActorContext<M> {
  readonly self: ActorRef<M>;
  readonly name: string;
  /** Carries `{ actor: name }` on every line. */
  readonly log: Logger;
  /** Aborted when this instance is discarded (stop or restart): long-running work started by it should end. */
  readonly signal: AbortSignal;

  /** Delivers `msg` to this actor after `delayMs`, unless cancelled first (then it is never delivered). */
  scheduleOnce(delayMs: number, msg: M): Cancellable;
  /**
   * Delivers `msg` every `intervalMs` (first after `initialDelayMs`, default `intervalMs`). At most one tick is ever
   * pending: when the previous tick is still in the mailbox, the next one is skipped rather than piled up.
   */
  scheduleRepeatedly(intervalMs: number, msg: M, opts?: { initialDelayMs?: number }): Cancellable;
  /** Starts a child actor, named `<this name>/<name>`, stopped before this actor (and when this instance restarts). */
  spawn<C>(name: string, factory: () => Actor<C>, opts?: SpawnOptions): ActorRef<C>;
  /** Stops this actor once the current message is handled; returns at once (never await your own stop). */
  stop(opts?: StopOptions): void;
  /**
   * Lets async work run without holding the mailbox: its outcome comes back later as a message built by `onOk` or
   * `onErr` (which receives the rejection normalised to an Error). A throw from `onOk`/`onErr` is this actor's
   * failure. Self-delivered messages bypass the mailbox capacity, so an actor never loses the answer to work it
   * started.
   */
  pipeToSelf<T>(work: Promise<T>, onOk: (value: T) => M, onErr: (error: Error) => M): void;
}

/** An actor: one instance per incarnation, built by the factory given to `spawn`. */
export interface Actor<M> {
  receive(msg: M, ctx: ActorContext<M>): void | Promise<void>;
  preStart?(ctx: ActorContext<M>): void | Promise<void>;
  postStop?(ctx: ActorContext<M>): void | Promise<void>;
}
