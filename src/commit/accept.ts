/**
 * The acceptance rule of natslake's commit protocol (design §5, rule R3), as a pure function.
 *
 * For each bucket, the snapshot being built on records the committed stream offset and owner epoch, and for the table
 * the stream those offsets belong to. A committable for bucket b is, in stream order:
 * - **rejected (stream mismatch)** when it was read from another stream than the recorded one (the stream was deleted
 *   and re-created, or its store lost): its sequence numbers cannot be compared with the committed offsets at all —
 *   judged by them it could pass for a duplicate and be dropped silently. Checked first for that reason;
 * - a **duplicate** when its `lastOffset` is at or below b's running offset (it, or a retry of it, landed already):
 *   dropped silently — never applied twice;
 * - **rejected (stale owner)** when its owner epoch is not b's current owner epoch (the coordinator moved the bucket);
 * - **rejected (broken chain)** when its `prevOffset` is not b's running offset (the committed offset, or the
 *   `lastOffset` of a committable accepted earlier in this same commit) — rows would be skipped or doubled;
 * - **rejected (broken sequence chain)**, for primary-key tables, when the sequence numbers its flush took do not
 *   start above b's running sequence number (the highest one committed): versions of a key would merge out of
 *   stream order. The writer resumes from the committed offset and sequence number the rejection names;
 * - otherwise **accepted**, and b's running offset becomes its `lastOffset` (and its sequence number the last one
 *   the flush took).
 * Buckets interleave in one stream, so a bucket's sequences are not contiguous numbers: only the chain matters.
 */
export interface OffsetClaim {
  /** Identity of the stream the offsets were read from (src/commit/stream-identity.ts); absent from older writers. */
  stream?: string;
  bucket: number;
  ownerEpoch: number;
  prevOffset: number;
  lastOffset: number;
  /**
   * Primary-key tables: the sequence numbers the flush took, `first` … `last` (last = first − 1 when it took none).
   */
  seq?: SequenceRange;
}

export interface SequenceRange {
  first: bigint;
  last: bigint;
}

export interface BucketCommitState {
  offset: number;
  ownerEpoch: number;
  /** Primary-key tables: the highest sequence number committed (undefined before the first). */
  seq?: bigint;
}

export type RejectionReason = "stale-owner-epoch" | "broken-offset-chain" | "stream-mismatch" | "broken-sequence-chain";

export type Verdict<C> =
  | { kind: "accepted"; committable: C }
  | { kind: "duplicate"; committable: C }
  | { kind: "rejected"; committable: C; reason: RejectionReason; committedOffset: number; committedSeq?: bigint };

export interface AcceptOutcome<C> {
  verdicts: Verdict<C>[];
  accepted: C[];
  /** Per bucket, the state after the accepted committables. */
  next: Map<number, BucketCommitState>;
  /** Whether any bucket's offset or owner epoch changed (a snapshot must record it even without files). */
  progressed: boolean;
  /** The stream the next snapshot records: the base's, or (none recorded yet) that of the first accepted committable. */
  stream: string | undefined;
}

/**
 * Decides every committable against `base` (the committed state of the snapshot being built on) and
 * `currentOwnerEpoch` (the coordinator's assignment: bucket → owner epoch; undefined means "no assignment known",
 * in which case the owner epoch must not go backwards).
 */
export function decideCommittables<C extends OffsetClaim>(
  base: ReadonlyMap<number, BucketCommitState>,
  currentOwnerEpoch: (bucket: number) => number | undefined,
  committables: readonly C[],
  baseStream?: string,
): AcceptOutcome<C> {
  const next = new Map<number, BucketCommitState>();
  for (const [b, s] of base) next.set(b, { ...s });
  const verdicts: Verdict<C>[] = [];
  const accepted: C[] = [];
  let progressed = false;
  let stream = baseStream;
  for (const c of committables) {
    const running: BucketCommitState = next.get(c.bucket) ?? { offset: 0, ownerEpoch: 0 };
    const committedSeq = running.seq !== undefined ? { committedSeq: running.seq } : {};
    // Once a stream is recorded (or adopted earlier in this round), every committable must come from it.
    if (stream !== undefined && c.stream !== stream) {
      verdicts.push({ kind: "rejected", committable: c, reason: "stream-mismatch", committedOffset: running.offset, ...committedSeq });
      continue;
    }
    if (c.lastOffset <= running.offset) {
      verdicts.push({ kind: "duplicate", committable: c });
      continue;
    }
    const current = currentOwnerEpoch(c.bucket);
    const epochOk = current === undefined ? c.ownerEpoch >= running.ownerEpoch : c.ownerEpoch === current;
    if (!epochOk) {
      verdicts.push({ kind: "rejected", committable: c, reason: "stale-owner-epoch", committedOffset: running.offset, ...committedSeq });
      continue;
    }
    if (c.prevOffset !== running.offset) {
      verdicts.push({ kind: "rejected", committable: c, reason: "broken-offset-chain", committedOffset: running.offset, ...committedSeq });
      continue;
    }
    if (c.seq !== undefined && running.seq !== undefined && c.seq.first <= running.seq) {
      verdicts.push({ kind: "rejected", committable: c, reason: "broken-sequence-chain", committedOffset: running.offset, committedSeq: running.seq });
      continue;
    }
    const after: BucketCommitState = { offset: c.lastOffset, ownerEpoch: c.ownerEpoch };
    const seq = c.seq !== undefined && c.seq.last >= c.seq.first ? c.seq.last : running.seq;
    if (seq !== undefined) after.seq = seq;
    next.set(c.bucket, after);
    verdicts.push({ kind: "accepted", committable: c });
    accepted.push(c);
    progressed = true;
    if (stream === undefined && c.stream !== undefined) {
      stream = c.stream;
      progressed = true;
    }
  }
  return { verdicts, accepted, next, progressed, stream };
}
