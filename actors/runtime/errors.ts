/**
 * The one error type of the actor runtime, classified by what the caller can do about it (convention 4).
 *
 * - `MailboxFull`: a bounded mailbox refused a message; the producer should slow down and retry later.
 * - `AskTimeout`: no reply within the deadline. The request may or may not have been handled: settle the outcome by
 *   reading state, do not blindly resend under a new identity (convention 5).
 * - `Stopped`: the target actor (or the system) is stopped or stopping; its messages are dead letters.
 * - `NameTaken`: an actor with that name is alive (or still stopping).
 * - `InvalidArgument`: a bad name, delay, capacity or supervision option: a bug at the call site.
 *
 * `MailboxFullError` and `AskTimeoutError` are subclasses so producers can `instanceof` the two cases they are
 * expected to handle; everything else is a plain `ActorError` with a `kind`.
 */
export const ActorErrorKind = {
  MailboxFull: "MailboxFull",
  AskTimeout: "AskTimeout",
  Stopped: "Stopped",
  NameTaken: "NameTaken",
  InvalidArgument: "InvalidArgument",
} as const;
export type ActorErrorKind = (typeof ActorErrorKind)[keyof typeof ActorErrorKind];

export interface ActorErrorOptions {
  context?: Record<string, unknown>;
  retryable?: boolean;
  cause?: unknown;
}

export class ActorError extends Error {
  override readonly name: string = "ActorError";
  readonly kind: ActorErrorKind;
  readonly context: Record<string, unknown>;
  readonly retryable: boolean;

  constructor(kind: ActorErrorKind, message: string, opts: ActorErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.kind = kind;
    this.context = opts.context ?? {};
    this.retryable = opts.retryable ?? kind === ActorErrorKind.MailboxFull;
  }
}

/** Thrown by `tell` on a full bounded mailbox; the message was not enqueued. */
export class MailboxFullError extends ActorError {
  override readonly name: string = "MailboxFullError";
  readonly actor: string;
  readonly capacity: number;

  constructor(actor: string, capacity: number) {
    super(ActorErrorKind.MailboxFull, `mailbox of actor '${actor}' is full (capacity ${capacity})`, {
      context: { actor, capacity },
      retryable: true,
    });
    this.actor = actor;
    this.capacity = capacity;
  }
}

/** Rejects an `ask` whose reply did not arrive in time; the request's outcome is unknown. */
export class AskTimeoutError extends ActorError {
  override readonly name: string = "AskTimeoutError";
  readonly actor: string;
  readonly timeoutMs: number;

  constructor(actor: string, timeoutMs: number) {
    super(ActorErrorKind.AskTimeout, `actor '${actor}' did not reply within ${timeoutMs} ms`, {
      context: { actor, timeoutMs },
      retryable: false,
    });
    this.actor = actor;
    this.timeoutMs = timeoutMs;
  }
}

export const isActorError = (e: unknown, kind?: ActorErrorKind): e is ActorError =>
  e instanceof ActorError && (kind === undefined || e.kind === kind);

export const invalidArgument = (message: string, context?: Record<string, unknown>): ActorError =>
  new ActorError(ActorErrorKind.InvalidArgument, message, { context });
