/**
 * Request/response over `tell`: the request message carries a `reply` callback, built by the caller's `build`
 * function, so a request type and its reply type sit side by side in the actor's message union (convention 7).
 *
 * Guarantees: the promise settles exactly once — with the first reply, with `AskTimeoutError` after `timeoutMs`,
 * or with the error `tell` threw (`MailboxFullError`); later replies are ignored. Asking a stopped actor rejects at
 * once with `ActorError(Stopped)`. A timeout says nothing about whether the request was handled.
 */
import { ensureError } from "../../src/errors.ts";
import type { ActorRef } from "./actor.ts";
import { realClock, type RuntimeClock } from "./clock.ts";
import { ActorError, ActorErrorKind, AskTimeoutError, invalidArgument } from "./errors.ts";

export function ask<M, R>(
  ref: ActorRef<M>,
  build: (reply: (r: R) => void) => M,
  timeoutMs: number,
  clock: RuntimeClock = realClock,
): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      reject(invalidArgument(`ask timeoutMs must be a finite number > 0, got ${timeoutMs}`));
      return;
    }
    if (ref.stopped) {
      reject(new ActorError(ActorErrorKind.Stopped, `cannot ask actor '${ref.name}': it is stopped`, { context: { actor: ref.name } }));
      return;
    }
    let settled = false;
    const timer = clock.setTimer(() => {
      if (settled) return;
      settled = true;
      reject(new AskTimeoutError(ref.name, timeoutMs));
    }, timeoutMs);
    const reply = (r: R): void => {
      if (settled) return;
      settled = true;
      timer.cancel();
      resolve(r);
    };
    try {
      ref.tell(build(reply));
    } catch (e) {
      if (settled) return;
      settled = true;
      timer.cancel();
      reject(ensureError(e));
    }
  });
}
