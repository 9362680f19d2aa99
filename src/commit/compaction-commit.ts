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
 * at its old level, and after, at the new one: it is still live). Accepted changes are netted per bucket
 * (`netChanges`): a primary-key writer may compact its previous compaction's output before that lands, and when both
 * are decided in one round the intermediate file is referenced by no snapshot and deleted once the round's lands.
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
  /** Changelog files the compaction wrote (`changelog-producer = lookup`): committed with it, deleted with a rejected one. */
  changelog?: DataFileMeta[];
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
  /** The manifests to read and write through (e.g. shared with the table's append committer); default its own. */
  manifests?: ManifestStore;
}

/** `<commit stream>/<seq>` → its parts (undefined when absent or not of that form). */
export function parseWatermark(w: string | undefined): { stream: string; seq: number } | undefined {
  if (w === undefined) return undefined;
  const at = w.lastIndexOf("/");
  const seq = Number(w.slice(at + 1));
  if (at <= 0 || !Number.isSafeInteger(seq)) return undefined;
  return { stream: w.slice(0, at), seq };
}

const entriesOf = (c: CompactionClaim, pick: "before" | "after" | "changelog"): ManifestEntry[] =>
  c.changes.flatMap((ch) => (ch[pick] ?? []).map((file) => ({ kind: FileKind.ADD, partition: ch.partition, bucket: c.bucket, totalBuckets: ch.totalBuckets, file })));

/**
 * The files of each (partition, bucket) a primary-key table's changes touch, from the base's live entries, with the
 * changes accepted so far applied: what the next change's inputs must be in, and what the LSM conflict check
 * validates it against. A writer plans its next compaction on its own last one before that lands (as Java's writer
 * updates its levels when a compaction completes, before the commit), so a change's inputs may be the outputs of one
 * accepted before it in the same round.
 */
class BucketTrees {
  private readonly files = new Map<string, DataFileMeta[]>();

  constructor(
    private readonly entries: readonly ManifestEntry[],
    private readonly check: LsmConflictCheck,
  ) {}

  /** Applies `c` when its inputs are in their trees and every tree stays valid; else why not (nothing changes). */
  tryApply(c: CompactionClaim): { reason: "inputs-gone" | "lsm-conflict"; detail: string } | null {
    const next = new Map<string, DataFileMeta[]>();
    for (const ch of c.changes) {
      const key = `${Buffer.from(ch.partition).toString("hex")}/${c.bucket}`;
      const live = next.get(key) ?? this.filesOf(key, ch.partition, c.bucket);
      const after = filesAfterCompaction(live, { deletedFiles: ch.before, newFiles: ch.after });
      if (after === null) {
        const gone = ch.before.find((f) => !live.some((l) => l.level === f.level && l.fileName === f.fileName))!;
        return { reason: "inputs-gone", detail: `input ${gone.fileName} is no longer live at level ${gone.level}` };
      }
      const conflict = levelsConflict(after, this.check.numLevels, this.check.compareKeys);
      if (conflict !== null) return { reason: "lsm-conflict", detail: `the bucket's levels would not be valid: ${conflict}` };
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
    // Append tables: inputs live in the base and not taken by an earlier change. Primary-key tables: in the bucket's
    // tree as the changes accepted before left it (BucketTrees, below).
    const inputs = entriesOf(c, "before").map(fileIdentifier);
    const gone = trees !== null ? undefined : entriesOf(c, "before").find((_, i) => !base.live.has(inputs[i]!) || taken.has(inputs[i]!));
    if (gone !== undefined) {
      verdicts.push({ kind: "rejected", seq, compaction: c, reason: "inputs-gone", detail: `input ${gone.file.fileName} is no longer live` });
      continue;
    }
    const missing = o.missingOutputs.get(seq);
    if (missing !== undefined) {
      verdicts.push({ kind: "rejected", seq, compaction: c, reason: "outputs-missing", detail: `output ${missing} does not exist` });
      continue;
    }
    const refused = trees?.tryApply(c) ?? null;
    if (refused !== null) {
      verdicts.push({ kind: "rejected", seq, compaction: c, ...refused });
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
    return [...ch.after.filter((f) => !moved.has(f.fileName)), ...(ch.changelog ?? [])].map((file) => ({ kind: FileKind.ADD, partition: ch.partition, bucket: c.bucket, totalBuckets: ch.totalBuckets, file }));
  });
}

/**
 * The accepted changes as one commit's messages, one per (partition, bucket), netted in order: a file a change adds
 * and a later one deletes (a primary-key writer's compaction of its own previous compaction's output, both decided
 * in this round) is in neither list — the snapshot never references it, and it is returned as an `intermediate` to
 * delete once the snapshot landed, when a change of this round wrote it (a file only moved up is some older
 * snapshot's and stays).
 */
export function netChanges(accepted: readonly CompactionClaim[]): { messages: CommitMessage[]; intermediates: ManifestEntry[] } {
  const at = (f: DataFileMeta): string => `${f.level}/${f.fileName}`;
  const buckets = new Map<string, { message: CommitMessage; added: Map<string, DataFileMeta> }>();
  const written = new Map<string, ManifestEntry>();
  for (const c of accepted) {
    for (const ch of c.changes) {
      const key = `${Buffer.from(ch.partition).toString("hex")}/${c.bucket}`;
      let b = buckets.get(key);
      if (b === undefined) buckets.set(key, (b = { message: { partition: ch.partition, bucket: c.bucket, totalBuckets: ch.totalBuckets, newFiles: [], deletedFiles: [], changelogFiles: [] }, added: new Map() }));
      // Changelog is never netted: each change's rows were changes at their compaction.
      b.message.changelogFiles!.push(...(ch.changelog ?? []));
      for (const f of ch.before) if (!b.added.delete(at(f))) b.message.deletedFiles.push(f);
      const moved = new Set(ch.before.map((f) => f.fileName));
      for (const f of ch.after) {
        b.added.set(at(f), f);
        if (!moved.has(f.fileName)) written.set(`${key}/${f.fileName}`, { kind: FileKind.ADD, partition: ch.partition, bucket: c.bucket, totalBuckets: ch.totalBuckets, file: f });
      }
    }
  }
  const kept = new Set<string>();
  const messages = [...buckets].map(([key, b]) => {
    b.message.newFiles = [...b.added.values()];
    for (const f of b.message.newFiles) kept.add(`${key}/${f.fileName}`);
    return b.message;
  });
  return { messages, intermediates: [...written].filter(([k]) => !kept.has(k)).map(([, e]) => e) };
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
    this.manifests = opts.manifests ?? new ManifestStore(table);
    this.fileCommit = new FileStoreCommit(table, this.manifests);
    this.lsm = table.isPrimaryKeyTable ? { compareKeys: framedKeyComparator(table), numLevels: readLsmCompactionOptions(table.options).numLevels } : null;
  }

  /** Decides and commits `pending` as one COMPACT snapshot; deletes the outputs of rejected changes. */
  async commit(pending: readonly PendingCompaction<C>[]): Promise<CompactionRoundResult<C>> {
    const missingOutputs = new Map<number, string>();
    for (const p of pending) {
      for (const e of [...entriesOf(p.compaction, "after"), ...entriesOf(p.compaction, "changelog")]) {
        if (!(await this.table.io.isFile(dataFilePath(this.table, e)))) {
          missingOutputs.set(p.seq, e.file.fileName);
          break;
        }
      }
    }
    const fenced = (why: string): LakeError => new LakeError(ErrorKind.Fenced, `${this.table.name}: ${why}; stepping down`, { retryable: false });
    let verdicts: CompactionVerdict<C>[] = [];
    let intermediates: ManifestEntry[] = [];
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
        const net = netChanges(out.accepted);
        intermediates = net.intermediates;
        return {
          properties: natslakeProperties(state, base?.properties ?? null),
          messages: net.messages,
          commitIdentifier: BigInt((base?.id ?? 0) + 1),
        };
      },
    });
    await Promise.all(
      [...verdicts.filter((v) => v.kind === "rejected").flatMap((v) => writtenOutputs(v.compaction)), ...(res.snapshot !== null ? intermediates : [])].map((e) =>
        this.table.io.delete(dataFilePath(this.table, e)),
      ),
    );
    return { snapshot: res.snapshot, linkedAt: res.linkedAt, verdicts };
  }
}
