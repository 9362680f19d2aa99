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
import type { DataFileMeta } from "../spec/manifest.ts";
import { natslakeProperties, natslakeState, type NatslakeState, type Snapshot } from "../spec/snapshot.ts";
import type { Table } from "../table/table.ts";
import { decideCommittables, type BucketCommitState, type Verdict } from "./accept.ts";
import type { CommitMessage } from "./commit-message.ts";
import { FileStoreCommit } from "./file-store-commit.ts";

export interface StreamCommittable {
  bucket: number;
  ownerEpoch: number;
  prevOffset: number;
  lastOffset: number;
  files: Array<{ partition: Uint8Array; totalBuckets: number; meta: DataFileMeta }>;
}

export interface RoundResult<C extends StreamCommittable> {
  snapshot: Snapshot | null;
  linkedAt: number;
  verdicts: Verdict<C>[];
  /** Committed state after the round (bucket → offset, owner epoch). */
  state: Map<number, BucketCommitState>;
}

export interface StreamCommitterOptions {
  commitUser: string;
  epoch: number;
  /** Asked before anything is written and again right before the snapshot's link: false → Fenced. */
  stillLeader: () => boolean;
  /** The coordinator's owner epoch of a bucket (undefined when unknown). */
  ownerEpochOf: (bucket: number) => number | undefined;
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
    this.fileCommit = new FileStoreCommit(table);
  }

  get epoch(): number {
    return this.opts.epoch;
  }

  async commitRound(pending: readonly C[]): Promise<RoundResult<C>> {
    let verdicts: Verdict<C>[] = [];
    let state = new Map<number, BucketCommitState>();
    const fenced = (why: string): LakeError => new LakeError(ErrorKind.Fenced, `${this.table.name}: ${why}; stepping down`, { retryable: false });
    const res = await this.fileCommit.commit({
      commitUser: this.opts.commitUser,
      messages: [],
      prepare: async (base) => {
        if (!this.opts.stillLeader()) throw fenced("the leader lease may have expired");
        const st = await natslakeStateAsOf(this.table, base);
        if (st !== null && st.epoch > this.opts.epoch) throw fenced(`snapshot ${base?.id} carries epoch ${st.epoch} > ours ${this.opts.epoch}`);
        const baseState = new Map<number, BucketCommitState>();
        for (const [b, p] of st?.buckets ?? []) baseState.set(b, { offset: Number(p.offset), ownerEpoch: p.ownerEpoch });
        const out = decideCommittables(baseState, this.opts.ownerEpochOf, pending);
        verdicts = out.verdicts;
        state = out.next;
        const buckets = new Map([...out.next].map(([b, s]) => [b, { offset: BigInt(s.offset), ownerEpoch: s.ownerEpoch }]));
        const epochChanged = st === null || st.epoch !== this.opts.epoch;
        // The last check before link(): a leader that lost its lease in the meantime must not land a snapshot.
        if (!this.opts.stillLeader()) throw fenced("the leader lease may have expired");
        return {
          properties: natslakeProperties({ epoch: this.opts.epoch, buckets }, base?.properties ?? null),
          messages: toMessages(out.accepted),
          commitIdentifier: BigInt((base?.id ?? 0) + 1),
          commitEmpty: out.progressed || (epochChanged && out.accepted.length > 0),
        };
      },
    });
    return { snapshot: res.snapshot, linkedAt: res.linkedAt, verdicts, state };
  }
}

function toMessages(accepted: readonly StreamCommittable[]): CommitMessage[] {
  const byKey = new Map<string, CommitMessage>();
  for (const c of accepted) {
    for (const f of c.files) {
      const key = `${Buffer.from(f.partition).toString("hex")}/${c.bucket}`;
      let m = byKey.get(key);
      if (!m) {
        m = { partition: f.partition, bucket: c.bucket, totalBuckets: f.totalBuckets, newFiles: [], deletedFiles: [] };
        byKey.set(key, m);
      }
      m.newFiles.push(f.meta);
    }
  }
  return [...byKey.values()];
}
