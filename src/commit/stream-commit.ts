/**
 * StreamCommitter: commits committables of a stream-fed table (natslake's cluster) as one snapshot per round.
 *
 * Each round builds on the latest snapshot (re-read on every attempt by FileStoreCommit) and, against exactly that
 * base:
 * - fences: if the base carries a higher `natslake.epoch` than ours, a newer leader exists → Fenced (step down);
 *   `stillLeader()` is asked right before the snapshot is written, so a leader whose lease ran out never commits;
 * - decides every committable with the acceptance rule (accept.ts): owner epoch + prevOffset chain;
 * - writes the accepted files and the carried-forward properties (epoch, per-bucket offset and owner epoch).
 * The snapshot chain is the fence: `snapshot-N` is created once, so epochs along the chain never decrease.
 *
 * The base's natslake state comes from the newest snapshot natslake committed: a snapshot committed by another
 * engine carries no natslake properties, so the chain is walked back to the newest one that does.
 */
import { ErrorKind, LakeError } from "../errors.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import { natslakeProperties, natslakeState, type NatslakeState, type Snapshot } from "../format/snapshot.ts";
import type { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { decideCommittables, type BucketCommitState, type SequenceRange, type Verdict } from "./accept.ts";
import type { CommitMessage } from "./commit-message.ts";
import { FileStoreCommit } from "./file-store-commit.ts";

export interface StreamCommittable {
  /** The stream the offsets were read from (src/commit/stream-identity.ts). */
  stream?: string;
  bucket: number;
  ownerEpoch: number;
  prevOffset: number;
  lastOffset: number;
  /** Primary-key tables: the sequence numbers the flush took (see accept.ts). */
  seq?: SequenceRange;
  /** `changelog`: a primary-key table's changelog file (changelog-producer = input), not a data file. */
  files: Array<{ partition: Uint8Array; totalBuckets: number; meta: DataFileMeta; changelog?: boolean }>;
}

export interface RoundResult<C extends StreamCommittable> {
  snapshot: Snapshot | null;
  linkedAt: number;
  verdicts: Verdict<C>[];
  /** Committed state after the round (bucket → offset, owner epoch). */
  state: Map<number, BucketCommitState>;
  /** The stream the committed offsets belong to (undefined while none is recorded). */
  stream: string | undefined;
}

export interface StreamCommitterOptions {
  commitUser: string;
  epoch: number;
  /** Asked before anything is written and again right before the snapshot's link: false → Fenced. */
  stillLeader: () => boolean;
  /** The coordinator's owner epoch of a bucket (undefined when unknown). */
  ownerEpochOf: (bucket: number) => number | undefined;
  /** The manifests to read and write through (e.g. shared with the table's compaction committer); default its own. */
  manifests?: ManifestStore;
}

/** natslake's state as of `s`: its own, or that of the newest earlier snapshot natslake committed. */
export async function natslakeStateAsOf(table: Table, s: Snapshot | null): Promise<NatslakeState | null> {
  for (let cur = s; cur !== null; ) {
    const st = natslakeState(cur);
    if (st !== null) return st;
    if (cur.id <= 1 || !(await table.snapshots.snapshotExists(cur.id - 1))) return null;
    cur = await table.snapshots.snapshot(cur.id - 1);
  }
  return null;
}

export class StreamCommitter<C extends StreamCommittable> {
  private readonly fileCommit: FileStoreCommit;

  constructor(
    private readonly table: Table,
    private readonly opts: StreamCommitterOptions,
  ) {
    this.fileCommit = new FileStoreCommit(table, opts.manifests);
  }

  get epoch(): number {
    return this.opts.epoch;
  }

  async commitRound(pending: readonly C[]): Promise<RoundResult<C>> {
    let verdicts: Verdict<C>[] = [];
    let state = new Map<number, BucketCommitState>();
    let stream: string | undefined;
    const fenced = (why: string): LakeError => new LakeError(ErrorKind.Fenced, `${this.table.name}: ${why}; stepping down`, { retryable: false });
    const res = await this.fileCommit.commit({
      commitUser: this.opts.commitUser,
      messages: [],
      prepare: async (base) => {
        if (!this.opts.stillLeader()) throw fenced("the leader lease may have expired");
        const st = await natslakeStateAsOf(this.table, base);
        if (st !== null && st.epoch > this.opts.epoch) throw fenced(`snapshot ${base?.id} carries epoch ${st.epoch} > ours ${this.opts.epoch}`);
        const baseState = new Map<number, BucketCommitState>();
        for (const [b, p] of st?.buckets ?? []) baseState.set(b, { offset: Number(p.offset), ownerEpoch: p.ownerEpoch, ...(p.seq !== undefined ? { seq: p.seq } : {}) });
        const out = decideCommittables(baseState, this.opts.ownerEpochOf, pending, st?.stream);
        verdicts = out.verdicts;
        state = out.next;
        stream = out.stream;
        const buckets = new Map([...out.next].map(([b, s]) => [b, { offset: BigInt(s.offset), ownerEpoch: s.ownerEpoch, ...(s.seq !== undefined ? { seq: s.seq } : {}) }]));
        const epochChanged = st === null || st.epoch !== this.opts.epoch;
        // The last check before link(): a leader that lost its lease in the meantime must not land a snapshot.
        if (!this.opts.stillLeader()) throw fenced("the leader lease may have expired");
        return {
          properties: natslakeProperties({ epoch: this.opts.epoch, buckets, ...streamOf(out.stream, st) }, base?.properties ?? null),
          messages: toMessages(out.accepted),
          commitIdentifier: BigInt((base?.id ?? 0) + 1),
          commitEmpty: out.progressed || (epochChanged && out.accepted.length > 0),
        };
      },
    });
    return { snapshot: res.snapshot, linkedAt: res.linkedAt, verdicts, state, stream };
  }
}

/**
 * The fields a snapshot carries forward besides epoch and offsets: the stream decided for it, the base's offset
 * epoch and the base's compaction watermark.
 */
function streamOf(stream: string | undefined, base: NatslakeState | null): Pick<NatslakeState, "stream" | "offsetEpoch" | "compactionsDecided"> {
  const out: Pick<NatslakeState, "stream" | "offsetEpoch" | "compactionsDecided"> = {};
  if (stream !== undefined) out.stream = stream;
  if (base?.offsetEpoch !== undefined) out.offsetEpoch = base.offsetEpoch;
  if (base?.compactionsDecided !== undefined) out.compactionsDecided = base.compactionsDecided;
  return out;
}

function toMessages(accepted: readonly StreamCommittable[]): CommitMessage[] {
  const byKey = new Map<string, CommitMessage>();
  for (const c of accepted) {
    for (const f of c.files) {
      const key = `${Buffer.from(f.partition).toString("hex")}/${c.bucket}`;
      let m = byKey.get(key);
      if (!m) {
        m = { partition: f.partition, bucket: c.bucket, totalBuckets: f.totalBuckets, newFiles: [], deletedFiles: [], changelogFiles: [] };
        byKey.set(key, m);
      }
      if (f.changelog === true) m.changelogFiles!.push(f.meta);
      else m.newFiles.push(f.meta);
    }
  }
  return [...byKey.values()];
}

export interface OffsetReset {
  /** The identity of the live stream the table moves onto. */
  stream: string;
  /** Where each bucket resumes in that stream: after this sequence. */
  offsetOf: (bucket: number) => number;
  /** The buckets of the table (those already on the chain are reset too). */
  buckets: readonly number[];
  commitUser: string;
}

/**
 * Moves the table's offsets onto another stream: one snapshot (no data files) that records the new stream, a new
 * offset for every bucket and an offset epoch one higher — the explicit, recorded recovery after a stream was
 * deleted and re-created or its store lost. It keeps the leader's epoch and the owner epochs, so the running leader
 * and writers are not fenced: the leader's next round builds on it (committables of the old stream are then rejected
 * as `stream-mismatch`) and writers that refused the live stream find their offsets in it.
 *
 * Refused when the offsets already belong to the live stream: resetting them would read committed rows again.
 * `check` is called with the natslake state of the base snapshot (and again on a retry after a lost race).
 */
export async function resetStreamOffsets(
  table: Table,
  reset: OffsetReset,
  check: (base: NatslakeState | null) => void,
): Promise<Snapshot> {
  const commit = new FileStoreCommit(table);
  let decided: NatslakeState | null = null;
  const res = await commit.commit({
    commitUser: reset.commitUser,
    messages: [],
    prepare: async (base) => {
      const st = await natslakeStateAsOf(table, base);
      check(st);
      const buckets = new Map<number, { offset: bigint; ownerEpoch: number; seq?: bigint }>();
      // Sequence numbers are the bucket's own, not the stream's: they carry over the reset unchanged.
      for (const b of new Set([...reset.buckets, ...(st?.buckets.keys() ?? [])])) {
        const seq = st?.buckets.get(b)?.seq;
        buckets.set(b, { offset: BigInt(reset.offsetOf(b)), ownerEpoch: st?.buckets.get(b)?.ownerEpoch ?? 0, ...(seq !== undefined ? { seq } : {}) });
      }
      decided = { epoch: st?.epoch ?? 0, buckets, stream: reset.stream, offsetEpoch: (st?.offsetEpoch ?? 0) + 1, ...(st?.compactionsDecided !== undefined ? { compactionsDecided: st.compactionsDecided } : {}) };
      return { properties: natslakeProperties(decided, base?.properties ?? null), messages: [], commitIdentifier: BigInt((base?.id ?? 0) + 1), commitEmpty: true };
    },
  });
  if (res.snapshot === null || decided === null) throw new LakeError(ErrorKind.Unexpected, `${table.name}: the offset reset committed no snapshot`);
  return res.snapshot;
}
