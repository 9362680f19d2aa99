/**
 * Committing the compactions of a stream-fed table's writers (natslake's cluster): each writer rewrites small files
 * of its own bucket and sends the change (files before → files after) through the commit stream; the leader decides
 * every pending change against the snapshot it builds on and lands the accepted ones as one COMPACT snapshot, after
 * the round's APPEND snapshot, as Paimon's committer does when a commit carries both.
 *
 * A change is, against the base snapshot:
 * - a **duplicate** when its commit-stream position is at or below the base's watermark `natslake.compactions-decided`
 *   (`<commit stream>/<seq>`, written by every COMPACT snapshot and carried forward by every natslake snapshot):
 *   it landed already, and a leader that died before purging it read it again. Its outputs are live — or were
 *   compacted away since, and then older snapshots still hold them: they must never be deleted here;
 * - **rejected (stale owner)** when the writer no longer owns the bucket at that owner epoch;
 * - **rejected (inputs gone)** when an input is no longer live (an overwrite or partition expiration replaced it, or
 *   another change accepted earlier — in this round or before — took it): committing it would add rows twice;
 * - **rejected (outputs missing)** when an output file does not exist (it was discarded after an earlier rejection:
 *   a change is never accepted after its outputs were removed);
 * - otherwise **accepted**.
 * A rejected change's outputs are referenced by no snapshot (not accepted, not a duplicate), so they are deleted —
 * the files it wrote, never a file it only moved to another level (a primary-key upgrade lists the same file before,
 * at its old level, and after, at the new one: it is still live).
 *
 * The COMPACT snapshot keeps the base's offsets, stream and owner epochs; it records the leader's epoch (fencing as
 * for APPEND rounds) and the new watermark. Rows are unchanged, so readers see the same table before and after.
 */
import { ErrorKind, LakeError } from "../errors.ts";
import { FileKind, fileIdentifier, type DataFileMeta, type ManifestEntry } from "../format/manifest.ts";
import { CommitKind, natslakeProperties, type NatslakeState, type Snapshot } from "../format/snapshot.ts";
import { dataFilePath } from "../table/file-refs.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import type { CommitMessage } from "./commit-message.ts";
import { FileStoreCommit } from "./file-store-commit.ts";
import { natslakeStateAsOf } from "./stream-commit.ts";

/** The files one compaction replaced in one partition of its bucket. */
export interface CompactionChangeFiles {
  partition: Uint8Array;
  totalBuckets: number;
  before: DataFileMeta[];
  after: DataFileMeta[];
}

/** What the decision reads of a writer's compaction. */
export interface CompactionClaim {
  bucket: number;
  ownerEpoch: number;
  changes: CompactionChangeFiles[];
}

/** A compaction read from the commit stream at `seq`. */
export interface PendingCompaction<C extends CompactionClaim> {
  seq: number;
  compaction: C;
}

export type CompactionRejectReason = "stale-owner-epoch" | "inputs-gone" | "outputs-missing";

export type CompactionVerdict<C extends CompactionClaim> =
  | { kind: "accepted" | "duplicate"; seq: number; compaction: C }
  | { kind: "rejected"; seq: number; compaction: C; reason: CompactionRejectReason; detail: string };

export interface CompactionRoundResult<C extends CompactionClaim> {
  /** The COMPACT snapshot (null: nothing accepted). */
  snapshot: Snapshot | null;
  linkedAt: number;
  verdicts: CompactionVerdict<C>[];
}

export interface CompactionCommitterOptions {
  commitUser: string;
  epoch: number;
  /** Identity of the commit stream the sequences count in (a re-created stream starts again at 1). */
  commitStream: string;
  stillLeader: () => boolean;
  ownerEpochOf: (bucket: number) => number | undefined;
}

/** `<commit stream>/<seq>` → its parts (undefined when absent or not of that form). */
export function parseWatermark(w: string | undefined): { stream: string; seq: number } | undefined {
  if (w === undefined) return undefined;
  const at = w.lastIndexOf("/");
  const seq = Number(w.slice(at + 1));
  if (at <= 0 || !Number.isSafeInteger(seq)) return undefined;
  return { stream: w.slice(0, at), seq };
}

const entriesOf = (c: CompactionClaim, pick: "before" | "after"): ManifestEntry[] =>
  c.changes.flatMap((ch) => ch[pick].map((file) => ({ kind: FileKind.ADD, partition: ch.partition, bucket: c.bucket, totalBuckets: ch.totalBuckets, file })));

/**
 * Decides `pending` (in commit-stream order) against a base: its natslake state and its live file identities.
 * `missingOutputs` names, per pending seq, an output that does not exist. Pure.
 */
export function decideCompactions<C extends CompactionClaim>(
  pending: readonly PendingCompaction<C>[],
  base: { state: NatslakeState | null; live: ReadonlySet<string> },
  o: { commitStream: string; ownerEpochOf: (bucket: number) => number | undefined; missingOutputs: ReadonlyMap<number, string> },
): { verdicts: CompactionVerdict<C>[]; accepted: C[]; watermark: number | undefined } {
  const mark = parseWatermark(base.state?.compactionsDecided);
  const decidedThrough = mark !== undefined && mark.stream === o.commitStream ? mark.seq : 0;
  const taken = new Set<string>();
  const verdicts: CompactionVerdict<C>[] = [];
  const accepted: C[] = [];
  let watermark: number | undefined;
  for (const { seq, compaction: c } of pending) {
    if (seq <= decidedThrough) {
      verdicts.push({ kind: "duplicate", seq, compaction: c });
      continue;
    }
    watermark = Math.max(watermark ?? 0, seq);
    const current = o.ownerEpochOf(c.bucket) ?? base.state?.buckets.get(c.bucket)?.ownerEpoch;
    if (current !== undefined && c.ownerEpoch !== current) {
      verdicts.push({ kind: "rejected", seq, compaction: c, reason: "stale-owner-epoch", detail: `owner epoch ${c.ownerEpoch}, the bucket's is ${current}` });
      continue;
    }
    const inputs = entriesOf(c, "before").map(fileIdentifier);
    const gone = entriesOf(c, "before").find((_, i) => !base.live.has(inputs[i]!) || taken.has(inputs[i]!));
    if (gone !== undefined) {
      verdicts.push({ kind: "rejected", seq, compaction: c, reason: "inputs-gone", detail: `input ${gone.file.fileName} is no longer live` });
      continue;
    }
    const missing = o.missingOutputs.get(seq);
    if (missing !== undefined) {
      verdicts.push({ kind: "rejected", seq, compaction: c, reason: "outputs-missing", detail: `output ${missing} does not exist` });
      continue;
    }
    for (const id of inputs) taken.add(id);
    verdicts.push({ kind: "accepted", seq, compaction: c });
    accepted.push(c);
  }
  return { verdicts, accepted, watermark };
}

/**
 * The files a change wrote: its `after` files but those it lists `before` too (a primary-key compaction's upgrade —
 * the same file at another level, still live). What a rejected change leaves to delete.
 */
export function writtenOutputs(c: CompactionClaim): ManifestEntry[] {
  return c.changes.flatMap((ch) => {
    const moved = new Set(ch.before.map((f) => f.fileName));
    return ch.after.filter((f) => !moved.has(f.fileName)).map((file) => ({ kind: FileKind.ADD, partition: ch.partition, bucket: c.bucket, totalBuckets: ch.totalBuckets, file }));
  });
}

function toMessages(accepted: readonly CompactionClaim[]): CommitMessage[] {
  return accepted.flatMap((c) => c.changes.map((ch) => ({ partition: ch.partition, bucket: c.bucket, totalBuckets: ch.totalBuckets, newFiles: ch.after, deletedFiles: ch.before })));
}

export class StreamCompactionCommitter<C extends CompactionClaim> {
  private readonly manifests: ManifestStore;
  private readonly fileCommit: FileStoreCommit;

  constructor(
    private readonly table: Table,
    private readonly opts: CompactionCommitterOptions,
  ) {
    this.manifests = new ManifestStore(table);
    this.fileCommit = new FileStoreCommit(table, this.manifests);
  }

  /** Decides and commits `pending` as one COMPACT snapshot; deletes the outputs of rejected changes. */
  async commit(pending: readonly PendingCompaction<C>[]): Promise<CompactionRoundResult<C>> {
    const missingOutputs = new Map<number, string>();
    for (const p of pending) {
      for (const e of entriesOf(p.compaction, "after")) {
        if (!(await this.table.io.isFile(dataFilePath(this.table, e)))) {
          missingOutputs.set(p.seq, e.file.fileName);
          break;
        }
      }
    }
    const fenced = (why: string): LakeError => new LakeError(ErrorKind.Fenced, `${this.table.name}: ${why}; stepping down`, { retryable: false });
    let verdicts: CompactionVerdict<C>[] = [];
    const res = await this.fileCommit.commit({
      commitUser: this.opts.commitUser,
      kind: CommitKind.COMPACT,
      messages: [],
      prepare: async (base) => {
        if (!this.opts.stillLeader()) throw fenced("the leader lease may have expired");
        const st = await natslakeStateAsOf(this.table, base);
        if (st !== null && st.epoch > this.opts.epoch) throw fenced(`snapshot ${base?.id} carries epoch ${st.epoch} > ours ${this.opts.epoch}`);
        const live = new Set(base === null ? [] : (await this.manifests.readLiveEntries(base)).map(fileIdentifier));
        const out = decideCompactions(pending, { state: st, live }, { commitStream: this.opts.commitStream, ownerEpochOf: this.opts.ownerEpochOf, missingOutputs });
        verdicts = out.verdicts;
        if (!this.opts.stillLeader()) throw fenced("the leader lease may have expired");
        const state: NatslakeState = { ...(st ?? { buckets: new Map() }), epoch: this.opts.epoch };
        if (out.watermark !== undefined) state.compactionsDecided = `${this.opts.commitStream}/${out.watermark}`;
        return {
          properties: natslakeProperties(state, base?.properties ?? null),
          messages: toMessages(out.accepted),
          commitIdentifier: BigInt((base?.id ?? 0) + 1),
        };
      },
    });
    await Promise.all(
      verdicts
        .filter((v) => v.kind === "rejected")
        .flatMap((v) => writtenOutputs(v.compaction))
        .map((e) => this.table.io.delete(dataFilePath(this.table, e))),
    );
    return { snapshot: res.snapshot, linkedAt: res.linkedAt, verdicts };
  }
}
