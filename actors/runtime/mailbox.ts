/**
 * Mailbox: a FIFO of messages with an optional capacity, and the loop that hands them to one handler one at a time.
 *
 * Guarantees:
 * - Messages reach the handler in enqueue order, and the handler is never re-entered: the next message is taken
 *   only after the previous call returned or its promise settled, even when the handler is async.
 * - The handler never runs inside `enqueue`'s call stack (processing starts on a microtask), so a sender is not
 *   re-entered by the receiver.
 * - Bounded: `enqueue` throws `MailboxFullError` when `capacity` messages are queued (the one being handled does
 *   not count). `force` bypasses the bound; it is for deliveries the owner already bounds itself (a timer's single
 *   pending tick, the result of work the actor started), which must not be lost to backpressure.
 * - `suspend` stops taking messages after the one in progress; queued messages stay. `close` is final.
 * - After `throughput` messages in a row the loop yields to the event loop, so a busy actor cannot starve timers,
 *   I/O callbacks and lock renewal of the whole process.
 *
 * Only the owning cell calls these methods; the handler must not throw (a throw is reported through `onError` and
 * the loop goes on).
 */
import { ensureError } from "../../src/errors.ts";
import { ActorError, ActorErrorKind, invalidArgument, MailboxFullError } from "./errors.ts";

export interface MailboxOptions {
  /** Owner name, for error messages. */
  owner: string;
  /** Maximum queued messages accepted from `enqueue` without `force`; absent = unbounded. */
  capacity?: number;
  /** Messages handled before yielding to the event loop (default 64). */
  throughput?: number;
  /** Start suspended (a cell resumes after `preStart`). */
  suspended?: boolean;
  /** Reports a handler that threw despite its contract. */
  onError: (error: Error) => void;
}

export interface EnqueueOptions {
  /** Accept even when the bounded mailbox is full. */
  force?: boolean;
  /**
   * Asked when the message reaches the head of the queue; `false` discards it without handling (the tick of a
   * cancelled timer, the result of work whose instance is gone). Also the moment a timer learns its tick left the
   * queue.
   */
  admit?: () => boolean;
}

interface Envelope<M> {
  readonly msg: M;
  readonly admit: (() => boolean) | undefined;
}

const DEFAULT_THROUGHPUT = 64;

/**
 * An array-backed queue with O(1) amortised shift. A taken slot is cleared at once: a consumed message must not
 * stay reachable until the next compaction (a writer's mailbox carries decoded column batches, and keeping up to a
 * thousand consumed ones alive held ~130 MB after a catch-up).
 */
export class Fifo<T> {
  private items: Array<T | undefined> = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined;
    this.head++;
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      // Compact once the consumed prefix dominates, so the array's length follows the live length.
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): number {
    const n = this.length;
    this.items = [];
    this.head = 0;
    return n;
  }
}

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class Mailbox<M> {
  private readonly queue = new Fifo<Envelope<M>>();
  private readonly owner: string;
  private readonly throughput: number;
  private readonly onError: (error: Error) => void;
  /** True from the moment a loop is scheduled until it has exited. */
  private processing = false;
  private suspended: boolean;
  private closed = false;
  private idleWaiters: Array<() => void> = [];
  readonly capacity: number | undefined;

  constructor(
    private readonly handler: (msg: M) => void | Promise<void>,
    opts: MailboxOptions,
  ) {
    if (opts.capacity !== undefined && !(Number.isInteger(opts.capacity) && opts.capacity > 0)) {
      throw invalidArgument(`mailbox capacity of '${opts.owner}' must be a positive integer, got ${opts.capacity}`);
    }
    const throughput = opts.throughput ?? DEFAULT_THROUGHPUT;
    if (!(Number.isInteger(throughput) && throughput > 0)) {
      throw invalidArgument(`mailbox throughput of '${opts.owner}' must be a positive integer, got ${throughput}`);
    }
    this.owner = opts.owner;
    this.capacity = opts.capacity;
    this.throughput = throughput;
    this.suspended = opts.suspended ?? false;
    this.onError = opts.onError;
  }

  /** Queued messages, not counting the one being handled. */
  get size(): number {
    return this.queue.length;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get isSuspended(): boolean {
    return this.suspended;
  }

  /** Throws `MailboxFullError` when full (unless `force`), `ActorError(Stopped)` when closed. */
  enqueue(msg: M, opts: EnqueueOptions = {}): void {
    if (this.closed) {
      throw new ActorError(ActorErrorKind.Stopped, `mailbox of actor '${this.owner}' is closed`, { context: { actor: this.owner } });
    }
    if (opts.force !== true && this.capacity !== undefined && this.queue.length >= this.capacity) {
      throw new MailboxFullError(this.owner, this.capacity);
    }
    this.queue.push({ msg, admit: opts.admit });
    this.kick();
  }

  /** Stops taking messages once the one in progress is done; queued messages stay. */
  suspend(): void {
    this.suspended = true;
  }

  resume(): void {
    if (this.closed) return;
    this.suspended = false;
    this.kick();
  }

  /** Drops every queued message; returns how many. */
  clear(): number {
    return this.queue.clear();
  }

  /** Final: drops the queue and refuses every later message. The message in progress still completes. */
  close(): number {
    this.closed = true;
    this.suspended = true;
    return this.queue.clear();
  }

  /** Resolves once no handler call is in progress (and none is about to start). */
  whenIdle(): Promise<void> {
    if (!this.processing) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private kick(): void {
    if (this.processing || this.suspended || this.closed || this.queue.length === 0) return;
    this.processing = true;
    queueMicrotask(() => void this.run());
  }

  private async run(): Promise<void> {
    let handled = 0;
    try {
      while (!this.suspended && !this.closed) {
        const env = this.queue.shift();
        if (env === undefined) break;
        if (env.admit !== undefined && !env.admit()) continue;
        try {
          await this.handler(env.msg);
        } catch (e) {
          this.onError(ensureError(e));
        }
        if (++handled >= this.throughput) {
          handled = 0;
          await yieldToEventLoop();
        }
      }
    } finally {
      this.processing = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
      // A resume() that raced the loop's exit found `processing` still set; pick its messages up now.
      this.kick();
    }
  }
}
