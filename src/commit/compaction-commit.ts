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
 * - **rejected (LSM conflict)**, primary-key tables only, when the bucket's files with the change applied — on top of
 *   the base and the changes accepted before it — are not a valid LSM tree: a level ≥ 1 whose files overlap (Java's
 *   PrimaryKeyConflictDetection). Something else (the leader's own compaction, another change of the round) moved
 *   files of the bucket into the output's level since the writer planned;
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
import { filesAfterCompaction, framedKeyComparator, levelsConflict } from "../lsm/compact-bucket.ts";
import { readLsmCompactionOptions } from "../lsm/compaction-options.ts";
import type { FramedKeyComparator } from "../lsm/levels.ts";
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

export type CompactionRejectReason = "stale-owner-epoch" | "inputs-gone" | "outputs-missing" | "lsm-conflict";

/** Primary-key tables: how the LSM conflict check compares keys, and the table's `num-levels`. */
export interface LsmConflictCheck {
  compareKeys: FramedKeyComparator;
  numLevels: number;
}

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
 * The files of each (partition, bucket) a primary-key table's changes touch, from the base's live entries, with the
 * changes accepted so far applied: what the LSM conflict check validates the next change against.
 */
class BucketTrees {
  private readonly files = new Map<string, DataFileMeta[]>();

  constructor(
    private readonly entries: readonly ManifestEntry[],
    private readonly check: LsmConflictCheck,
  ) {}

  /** Applies `c` when every bucket it changes stays a valid LSM tree; else returns why not and changes nothing. */
  tryApply(c: CompactionClaim): string | null {
    const next = new Map<string, DataFileMeta[]>();
    for (const ch of c.changes) {
      const key = `${Buffer.from(ch.partition).toString("hex")}/${c.bucket}`;
      const live = next.get(key) ?? this.filesOf(key, ch.partition, c.bucket);
      // Inputs are live (checked before): null cannot happen here, but would mean the same.
      const after = filesAfterCompaction(live, { deletedFiles: ch.before, newFiles: ch.after });
      if (after === null) return "an input is no longer at its level";
      const conflict = levelsConflict(after, this.check.numLevels, this.check.compareKeys);
      if (conflict !== null) return conflict;
      next.set(key, after);
    }
    for (const [key, files] of next) this.files.set(key, files);
    return null;
  }

  private filesOf(key: string, partition: Uint8Array, bucket: number): DataFileMeta[] {
    let files = this.files.get(key);
    if (files === undefined) {
      const hex = Buffer.from(partition).toString("hex");
      files = this.entries.filter((e) => e.bucket === bucket && Buffer.from(e.partition).toString("hex") === hex).map((e) => e.file);
      this.files.set(key, files);
    }
    return files;
  }
}

/**
 * Decides `pending` (in commit-stream order) against a base: its natslake state, its live file identities and — for
 * the LSM conflict check of a primary-key table (`o.lsm`) — its live entries. `missingOutputs` names, per pending
 * seq, an output that does not exist. Pure.
 */
export function decideCompactions<C extends CompactionClaim>(
  pending: readonly PendingCompaction<C>[],
  base: { state: NatslakeState | null; live: ReadonlySet<string>; entries?: readonly ManifestEntry[] },
  o: { commitStream: string; ownerEpochOf: (bucket: number) => number | undefined; missingOutputs: ReadonlyMap<number, string>; lsm?: LsmConflictCheck },
): { verdicts: CompactionVerdict<C>[]; accepted: C[]; watermark: number | undefined } {
  const trees = o.lsm === undefined ? null : new BucketTrees(base.entries ?? [], o.lsm);
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
    const conflict = trees?.tryApply(c) ?? null;
    if (conflict !== null) {
      verdicts.push({ kind: "rejected", seq, compaction: c, reason: "lsm-conflict", detail: `the bucket's levels would not be valid: ${conflict}` });
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
  /** Primary-key tables: the LSM conflict check (null for append tables). */
  private readonly lsm: LsmConflictCheck | null;

  constructor(
    private readonly table: Table,
    private readonly opts: CompactionCommitterOptions,
  ) {
    this.manifests = new ManifestStore(table);
    this.fileCommit = new FileStoreCommit(table, this.manifests);
    this.lsm = table.isPrimaryKeyTable ? { compareKeys: framedKeyComparator(table), numLevels: readLsmCompactionOptions(table.options).numLevels } : null;
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
        const entries = base === null ? [] : await this.manifests.readLiveEntries(base);
        const live = new Set(entries.map(fileIdentifier));
        const out = decideCompactions(pending, { state: st, live, entries }, { commitStream: this.opts.commitStream, ownerEpochOf: this.opts.ownerEpochOf, missingOutputs, ...(this.lsm !== null ? { lsm: this.lsm } : {}) });
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
