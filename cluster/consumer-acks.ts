/**
 * A consumer's acks on their way to a reader (cluster/consumer.ts; protocol step 4 of actors/wire/consume.ts): one at
 * a time, in the caller's order, each sent on the session current at that moment — and sent again on the next session
 * when that one goes away before answering. An ack is idempotent (its snapshot id says what is acknowledged: every
 * snapshot up to it), so a reader that died with an ack in flight, whether or not it recorded it first, costs the
 * caller a wait for the next session, never an error, and never moves the progress back (an ack already covered by a
 * later confirmed one is not sent at all).
 *
 * What rejects an ack, always with a LakeError: the consumer was closed or failed before the ack was confirmed (the
 * snapshot may not be recorded: it comes again after a restart), the reader refused it (it could not write the
 * progress), or a reader that still sends heartbeats left it unanswered ACK_ATTEMPTS times.
 */
import { RequestError, TimeoutError, type NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, LakeError } from "../src/errors.ts";
import type { ConsumeControl } from "../actors/wire/consume.ts";

/** How long one ack waits for the reader's answer on one session (writing the consumer file is a few ms). */
export const ACK_TIMEOUT_MS = 10_000;
/** Unanswered acks on a session whose reader stays alive, before ack() gives up. */
export const ACK_ATTEMPTS = 3;
/** Between two sends after an error of the connection (a reconnect in progress). */
const RETRY_PAUSE_MS = 500;

/** The consumer's sessions, as the acks see them. */
export interface AckSessions {
  /** The current session (waits while a new one is being opened): its number, control subject and reader. */
  currentSession(): Promise<{ n: number; subject: string; reader: string }>;
  /**
   * Calls `then` once session `n` is no longer the current one, or the consumer was closed or failed (at once if it
   * is so already); the function returned cancels that.
   */
  whenLeft(n: number, then: () => void): () => void;
  /** Session `n` is gone from the server (nobody listens on its control subject): open another. */
  lost(n: number, why: string): void;
  /** Why nothing can be acknowledged any more (the consumer was closed or failed), else null. */
  stopped(): Error | null;
}

/** How one send of an ack ended. */
type Sent = { kind: "confirmed" } | { kind: "refused"; error: string } | { kind: "no-session" } | { kind: "unanswered" } | { kind: "left" } | { kind: "failed"; error: Error };

const enc = new TextEncoder();
const dec = new TextDecoder();

export class AckSender {
  /** Every snapshot up to this one is acknowledged (a reader confirmed it). */
  private confirmedThrough = 0;
  /** The acks in the caller's order: the next one starts when the one before settled. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly nc: NatsConnection,
    private readonly sessions: AckSessions,
    private readonly timeoutMs = ACK_TIMEOUT_MS,
  ) {}

  /** Resolves once a reader recorded that every snapshot up to `snapshotId` was processed. */
  ack(snapshotId: number): Promise<void> {
    const run = this.queue.then(() => this.deliver(snapshotId));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async deliver(snapshotId: number): Promise<void> {
    let unanswered = 0;
    let session = 0;
    for (;;) {
      if (this.confirmedThrough >= snapshotId) return; // a later ack, confirmed, covers it
      this.throwIfStopped(snapshotId);
      const s = await this.sessions.currentSession();
      this.throwIfStopped(snapshotId);
      if (s.n !== session) unanswered = 0; // counted per session: a new reader gets its own tries
      session = s.n;
      const sent = await this.sendWhileCurrent(s.n, s.subject, snapshotId);
      switch (sent.kind) {
        case "confirmed":
          this.confirmedThrough = Math.max(this.confirmedThrough, snapshotId);
          return;
        case "refused":
          throw new LakeError(ErrorKind.Io, `reader ${s.reader} could not record the progress through snapshot ${snapshotId}: ${sent.error}`);
        case "left":
          continue; // a new session (or the consumer stopped): sent again there
        case "no-session":
          // The reader died or dropped the session: the consumer moves on to a new one, and the ack with it.
          this.sessions.lost(s.n, `the ack of snapshot ${snapshotId} found no reader on the session`);
          continue;
        case "unanswered":
          if (++unanswered < ACK_ATTEMPTS) continue;
          throw new LakeError(ErrorKind.Io, `reader ${s.reader} did not answer the ack of snapshot ${snapshotId} ${ACK_ATTEMPTS} times in ${(ACK_ATTEMPTS * this.timeoutMs) / 1000} s while it stayed alive (a slow warehouse?); the progress may not be recorded`);
        case "failed":
          this.throwIfStopped(snapshotId);
          if (this.nc.isClosed()) throw new LakeError(ErrorKind.Io, `snapshot ${snapshotId} was not acknowledged: the NATS connection was closed`, { cause: sent.error });
          if (++unanswered >= ACK_ATTEMPTS) throw new LakeError(ErrorKind.Io, `snapshot ${snapshotId} was not acknowledged: ${sent.error.message}`, { cause: sent.error });
          await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS)); // e.g. disconnected, reconnecting
          continue;
      }
    }
  }

  private throwIfStopped(snapshotId: number): void {
    const why = this.sessions.stopped();
    if (why !== null) throw new LakeError(ErrorKind.Io, `snapshot ${snapshotId} was not acknowledged (it comes again after a restart): ${why.message}`, { cause: why });
  }

  /** Sends the ack on session `n`; ends as "left" when the session changes before the answer (the send is abandoned). */
  private sendWhileCurrent(n: number, subject: string, snapshotId: number): Promise<Sent> {
    let cancel = (): void => undefined;
    const left = new Promise<Sent>((resolve) => (cancel = this.sessions.whenLeft(n, () => resolve({ kind: "left" }))));
    return Promise.race([this.send(subject, snapshotId), left]).finally(cancel);
  }

  private async send(subject: string, snapshotId: number): Promise<Sent> {
    try {
      const m = await this.nc.request(subject, enc.encode(JSON.stringify({ type: "ack", snapshotId } satisfies ConsumeControl)), { timeout: this.timeoutMs });
      const r = JSON.parse(dec.decode(m.data)) as { ok: boolean; error?: string };
      return r.ok ? { kind: "confirmed" } : { kind: "refused", error: r.error ?? "no reason given" };
    } catch (e) {
      if (e instanceof RequestError && e.isNoResponders()) return { kind: "no-session" };
      if (e instanceof TimeoutError) return { kind: "unanswered" };
      return { kind: "failed", error: e instanceof Error ? e : new Error(String(e)) };
    }
  }
}
