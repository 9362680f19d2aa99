/**
 * PoisonGuard: how a bucket's writer finds a poison message — one that makes every attempt to read, decode or write it
 * fail, by an error (a row the encoder throws on), by a stall (a decode or an encode that never returns: the node stops
 * the worker thread running it at its `decodeDeadline`, which fails that read like an error — BucketStallError) or by
 * the death of the writer's process (a crash in a decoder, a row that exhausts memory, or a stall on the node's main
 * thread, where its stall watch kills the process at the same deadline: cluster/stall-watch.ts) — and dead-letters it after a
 * bounded number of attempts, so that the bucket moves on.
 *
 * The attempt counts live in KV (BucketAttempts, via the AttemptLog port), because a message that kills the process
 * leaves nothing else behind: the writer that starts next, on this node or another, reads the record.
 *
 * - Counting. Each generation of the bucket's writer that starts from the committed offset and reads a message past
 *   it counts one attempt (one KV read and write per generation, none per message). The count belongs to that
 *   committed offset: once a snapshot moves it, the next generation counts from 1 again. A healthy bucket's
 *   generations end by hand-offs, which commit first, so they rarely count twice in a row at one offset.
 * - Isolating. The generation that finds POISON_ATTEMPTS (the table's `natslake.writer.max-attempts`) attempts at its offset already made isolates: up to `until`
 *   (the stream's last sequence then — every failed attempt read at most that far), it reads one message at a time,
 *   records that message as `probing` in KV before it decodes it, flushes it alone, and clears `probing` once its
 *   committable is sent. It decodes and encodes on a worker thread of its own meanwhile (actors/ingest/bucket-buffers.ts,
 *   `ownThread`): a stall stopped there fails no other bucket's session — on a shared thread it would fail the
 *   message another bucket was trying alone, and count a failure against that innocent message. A stall of the
 *   shared threads (batches: no message is tried alone) counts an attempt for each bucket whose session it ended,
 *   and the bucket whose own decode or encode stalled isolates at its next read without waiting for the attempts
 *   (`begin`'s `isolateNow`): a stall is never real work — the deadline is far above any — and each attempt would
 *   cost a whole deadline, several in a row when commits of what was read before the stalling batch move the
 *   committed offset between attempts and so start the count again (seen under load: one deadline per few messages). A generation that starts and finds a message still `probing` knows its predecessor died or
 *   failed on that message alone, and counts one failure against it (against it only: messages before it that are
 *   read again were passed). A process hosts many buckets, and its death ends them all: so that a death is laid
 *   only on the message that caused it, one bucket of a node probes at a time (ProbeGate) — a bucket that is not
 *   probing leaves no `probing` mark behind, and only counts an attempt.
 * - Dead-lettering. A message with POISON_FAILURES failures is not decoded again: the whole message goes to the
 *   dead-letter subject (its payload in base64, the counts and the last error in the reason), a committable with no
 *   files covers its offset, and the bucket moves on. Once past `until` the record is deleted and the writer reads
 *   batches again.
 *
 * A fault that is not the message's (a full disk, an unreachable store) fails every message alike: isolation then
 * finds the first message it tries failing, and dead-letters it after POISON_FAILURES failures — the price of a bound.
 * The first failure's cause is in the reason, and `natslake dlq replay` publishes such a message again.
 */
import type { BucketAttempts } from "./wire/messages.ts";
import type { AttemptLog } from "./ports.ts";
import { CompactionSlots } from "./compaction-slots.ts";

/** Generations from one committed offset before the writer isolates messages (the table's `natslake.writer.max-attempts`). */
export const POISON_ATTEMPTS = 3;
/** Failures of one message tried alone before it is dead-lettered (at most; fewer when the attempts are fewer). */
export const POISON_FAILURES = 2;

/** The bounds of a table whose `natslake.writer.max-attempts` is `attempts`. */
export function poisonLimits(attempts: number): { attempts: number; failures: number } {
  // Refused below 1 at create time (src/options.ts); a table made otherwise gets the default.
  const n = Number.isSafeInteger(attempts) && attempts >= 1 ? attempts : POISON_ATTEMPTS;
  return { attempts: n, failures: Math.min(POISON_FAILURES, n) };
}

export class PoisonGuard {
  private record: BucketAttempts | null = null;

  constructor(
    private readonly log: AttemptLog,
    private readonly table: string,
    private readonly bucket: number,
    private readonly limits = poisonLimits(POISON_ATTEMPTS),
  ) {}

  /**
   * A generation reading after `committed` in `stream` read its first message: counts the attempt, and returns the
   * last stream sequence to read one message at a time (null: read normally). `streamLastSeq` is asked only when
   * isolation starts. `isolateNow`: the last generation's own read stalled — isolate whatever the count.
   */
  async begin(stream: string, committed: number, streamLastSeq: () => Promise<number>, opts: { isolateNow?: boolean } = {}): Promise<number | null> {
    const r = await this.log.read(this.table, this.bucket);
    let next: BucketAttempts;
    if (r !== null && r.stream === stream && r.until !== undefined && committed < r.until) {
      // Isolating still: the message it was on when the last generation ended failed (alone) once more.
      const failures: Record<string, number> = {};
      for (const [seq, n] of Object.entries(r.failures ?? {})) if (Number(seq) > committed) failures[seq] = n;
      if (r.probing !== undefined && r.probing > committed) failures[String(r.probing)] = (failures[String(r.probing)] ?? 0) + 1;
      next = { ...withoutProbe(r), attempts: r.attempts + 1, failures };
    } else {
      next = r !== null && r.stream === stream && r.until === undefined && r.from === committed ? { ...r, attempts: r.attempts + 1 } : { v: 1, stream, from: committed, attempts: 1 };
      if (next.attempts > this.limits.attempts || opts.isolateNow === true) next = { ...next, until: Math.max(committed + 1, await streamLastSeq()), failures: {} };
    }
    await this.log.write(this.table, this.bucket, next);
    this.record = next;
    return next.until ?? null;
  }

  /**
   * Isolating: the next message to try alone. Returns the reason to dead-letter it (it failed POISON_FAILURES times
   * alone), or null after recording it as the one being tried.
   */
  async probe(seq: number): Promise<string | null> {
    const r = this.record;
    if (r === null) return null;
    const failed = r.failures?.[String(seq)] ?? 0;
    if (failed >= this.limits.failures) return poisonReason(r, failed);
    const next = { ...r, probing: seq };
    await this.log.write(this.table, this.bucket, next);
    this.record = next;
    return null;
  }

  /** The message tried alone was written (its committable sent): a death from now on is not its. */
  async passed(): Promise<void> {
    const r = this.record;
    if (r?.probing === undefined) return;
    const next = withoutProbe(r);
    await this.log.write(this.table, this.bucket, next);
    this.record = next;
  }

  /** An error ended this generation (best effort: the next generation counts the failure either way). */
  async failed(error: string): Promise<void> {
    const r = this.record;
    if (r === null) return;
    const next = { ...r, lastError: (r.probing !== undefined ? `(message ${r.probing}) ${error}` : error).slice(0, 500) };
    this.record = next;
    await this.log.write(this.table, this.bucket, next);
  }

  /** The flushes cover `lastOffset`: past `until`, isolation is over and the record goes. True when it ended. */
  async covered(lastOffset: number): Promise<boolean> {
    const r = this.record;
    if (r?.until === undefined || lastOffset < r.until) return false;
    this.record = null;
    await this.log.write(this.table, this.bucket, null);
    return true;
  }
}

/**
 * One probe at a time on a node (shared by all its bucket writers): from recording a message as `probing` to clearing
 * it, no other bucket of the process tries a message alone, so a death during a probe is that message's.
 */
export class ProbeGate extends CompactionSlots {
  constructor() {
    // A semaphore of one: the compaction slots' (acquire resolves with an idempotent release).
    super(1);
  }
}

function withoutProbe(r: BucketAttempts): BucketAttempts {
  const { probing: _probing, ...rest } = r;
  return rest;
}

/** What a poison message's dead letter says. */
function poisonReason(r: BucketAttempts, failures: number): string {
  const cause = r.lastError !== undefined ? `last error: ${r.lastError}` : "no error was seen: the writer's process died (or was killed) while reading or writing it";
  return `poison message: reading the bucket after offset ${r.from} failed ${r.attempts} times; this message alone failed ${failures} times (${cause})`;
}
