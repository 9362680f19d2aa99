/**
 * Which stream a table's committed offsets belong to, and whether a live stream is that one.
 *
 * A stream sequence means something only in the stream that assigned it. A stream deleted and re-created under the
 * same name (or a JetStream store that was lost and started afresh) numbers its messages from 1 again, so resuming
 * "after the committed offset" would silently skip every new message numbered at or below it — acknowledged rows
 * lost, and a publisher's read-your-writes answered falsely because the old offsets already cover the new sequences.
 * So every snapshot natslake commits records the identity of its stream (`natslake.stream`): the stream's name and a
 * marker unique to that incarnation of it (the cluster writes one into every new stream), which a re-created stream
 * cannot share. Whoever is about to act on the
 * offsets (a writer opening a bucket, the leader accepting a committable or purging, the router resuming) checks the
 * live stream against it and refuses on a mismatch; the way out is an explicit, recorded reset
 * (`natslake table reset-offsets`), never a silent skip.
 *
 * Knows nothing of NATS: the identity is a string the cluster's adapter builds.
 */

/** What the cluster knows of a live stream. */
export interface LiveStream {
  /** `formatStreamIdentity(name, created)` of the live stream. */
  identity: string;
  /** The stream's first and last sequence now (0 and 0 for an empty stream that never stored anything). */
  firstSeq: number;
  lastSeq: number;
}

/** `<name>#<marker>`: the stream's name and the marker of this incarnation of it. */
export function formatStreamIdentity(name: string, marker: string): string {
  return `${name}#${marker}`;
}

export type StreamCheck = { ok: true } | { ok: false; reason: string };

/**
 * Whether offsets recorded against `recorded` may be used on `live`.
 *
 * - No natslake state yet (`recorded` and `maxOffset` absent): any stream is fine — it becomes the table's.
 * - A recorded identity: the live one must be the same.
 * - Offsets without an identity (snapshots of natslake before identities were recorded): the live stream is taken
 *   to be theirs only if it has reached every committed offset; a stream whose last sequence is below one cannot be
 *   the stream that offset was read from (it was re-created, or its store started afresh).
 */
export function checkStream(recorded: string | undefined, maxOffset: number, live: LiveStream): StreamCheck {
  if (recorded !== undefined) {
    if (recorded === live.identity) return { ok: true };
    return { ok: false, reason: `the table's offsets belong to stream ${recorded}, but the live stream is ${live.identity} (deleted and re-created, or a new JetStream store)` };
  }
  if (maxOffset > live.lastSeq)
    return {
      ok: false,
      reason: `the table's committed offsets reach sequence ${maxOffset}, but the live stream ${live.identity} ends at ${live.lastSeq} (deleted and re-created, or a new JetStream store)`,
    };
  return { ok: true };
}

/** The help every refusal ends with. */
export function resetHint(table: string): string {
  return `nothing is read from this stream until an operator runs \`natslake table reset-offsets ${table}\` (see docs/operations/runbook.md: A bucket stalled after rejections)`;
}
