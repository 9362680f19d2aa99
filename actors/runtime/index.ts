/**
 * The actor runtime's public surface, for actors/ and cluster/. Modules inside actors/runtime/ import each other
 * directly, never this file.
 */
export type { Actor, ActorContext, ActorRef, Cancellable, Logger, SpawnOptions, StopOptions } from "./actor.ts";
export { ask } from "./ask.ts";
export { realClock, type RuntimeClock } from "./clock.ts";
export {
  ActorError,
  ActorErrorKind,
  type ActorErrorOptions,
  AskTimeoutError,
  isActorError,
  MailboxFullError,
} from "./errors.ts";
export { consoleLogger, LogLevel, noopLogger, withFields } from "./logger.ts";
export { type EnqueueOptions, Mailbox, type MailboxOptions } from "./mailbox.ts";
export {
  type ActorFailure,
  DEFAULT_SUPERVISION,
  type FailurePhase,
  resolveSupervision,
  type SupervisionOptions,
  type SupervisionStrategy,
  Supervisor,
  type SupervisorDecision,
} from "./supervisor.ts";
export { ActorSystem, type ActorSystemOptions } from "./system.ts";
