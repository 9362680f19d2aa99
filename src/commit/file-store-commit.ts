/**
 * FileStoreCommit: turns commit messages into manifests, manifest lists and `snapshot-N`, atomically.
 *
 * One attempt: read the latest snapshot → run the caller's precondition against it (leader fencing, offset chain,
 * overwrite conflicts; every file the commit DELETEs — compaction inputs — still live, else a Conflict) → check that
 * every manifest of it decodes (a damaged or missing one is an error naming it: nothing is built on a snapshot that
 * cannot be read) → write the delta manifest, the base list (merged per `manifest.merge-min-count`) and the
 * delta list → create `snapshot-N` exclusively. When another committer created `snapshot-N` first, the attempt's
 * manifests are removed and the commit retries on top of the winner, after checking that the same commit
 * (commitUser + commitIdentifier) did not land already. Data files are never deleted here: if the outcome is unknown
 * they may be referenced; orphan cleanup removes the unreferenced ones later.
 *
 * Crash safety: everything before the `link()` of `snapshot-N` writes only new, unreferenced files; a crash before it
 * leaves the table at its previous snapshot. A crash after it leaves a complete snapshot.
 */
import { randomUUID } from "node:crypto";
import { ErrorKind, LakeError } from "../errors.ts";
import { failpoint } from "../failpoints.ts";
import { BATCH_COMMIT_IDENTIFIER, CommitKind, type Snapshot } from "../format/snapshot.ts";
import { FileKind, fileIdentifier, type ManifestEntry, type ManifestFileMeta } from "../format/manifest.ts";
import type { Table } from "../table/table.ts";
import type { CommitMessage } from "./commit-message.ts";
import { ManifestStore } from "../table/manifest-store.ts";

/**
 * Takes the table's commit turn from the other committers of this process (the cluster's leader pauses its commit
 * rounds) and resolves once they have stopped; the function it resolves to gives the turn back.
 */
export type ExclusiveCommitTurn = () => Promise<() => void>;

/** After this many lost races in a row a commit with `exclusive` takes the turn for its remaining attempts. */
export const EXCLUSIVE_AFTER_LOST_RACES = 2;

export interface CommitRequest {
  commitUser: string;
  /**
   * A commit that competes with a frequent committer (a maintenance job on the cluster's leader, beside its commit
   * rounds every few hundred milliseconds) can lose every race: a large commit takes longer to prepare than the
   * interval between the others'. With this, after EXCLUSIVE_AFTER_LOST_RACES lost races it takes the turn and keeps
   * it until it lands or fails.
   */
  exclusive?: ExclusiveCommitTurn;
  commitIdentifier?: bigint;
  kind?: CommitKind;
  messages: CommitMessage[];
  /**
   * INSERT OVERWRITE: every live file whose partition matches is deleted in the same snapshot. `readSnapshotId` is
   * the snapshot the overwrite was planned against: a commit after it that touched a matching partition is a
   * conflict (the overwrite would silently drop rows it never saw).
   */
  overwrite?: {
    matches: (partition: Uint8Array) => boolean;
    readSnapshotId: number | null;
    /**
     * Paimon's `dropPartitions` (partition expiration): delete whatever is live in the matching partitions at commit
     * time, files that landed after planning included, without the conflict check (there is nothing to replace).
     */
    atCommitTime?: boolean;
  };
  /**
   * Runs against the snapshot this attempt builds on, before anything is written, and decides what this attempt
   * commits: the new snapshot's properties and, when given, the messages and commit identifier (replacing those of
   * the request). Throws (Fenced, Conflict, DataInvalid) to abort. Called again on every retry, so decisions that
   * depend on the base (the offset chain, the leader's epoch) are always made against the snapshot `link()` protects.
   */
  prepare?: (base: Snapshot | null) => Promise<PrepareResult> | PrepareResult;
  /**
   * A retry after an unknown outcome: this commit (same commitUser + commitIdentifier + kind) may already have
   * landed as a snapshot with an id ≥ this. It is looked for before anything is written, and never applied twice.
   */
  recoverFrom?: number;
  /** Skip a commit with no files (default true, as Paimon does), unless properties must be recorded. */
  skipEmpty?: boolean;
}

export interface PrepareResult {
  properties: Record<string, string> | null;
  messages?: CommitMessage[];
  commitIdentifier?: bigint;
  /** Commit even without files (the properties carry progress, e.g. offsets of rows that all went to the DLQ). */
  commitEmpty?: boolean;
}

export interface CommitResult {
  snapshot: Snapshot | null;
  /** The commit had landed already (same commitUser + commitIdentifier found on the chain). */
  alreadyCommitted: boolean;
  attempts: number;
  /** Wall-clock ms after the `link()` that created the snapshot returned (for notification latency). */
  linkedAt: number;
}

export class FileStoreCommit {
  private readonly manifests: ManifestStore;

  /** `manifests`: a store to share (and its cache) with the caller, e.g. a precondition that reads live files. */
  constructor(
    private readonly table: Table,
    manifests?: ManifestStore,
  ) {
    this.manifests = manifests ?? new ManifestStore(table);
  }

  async commit(req: CommitRequest): Promise<CommitResult> {
    let giveBack: (() => void) | null = null;
    const takeTurn = async (lostRaces: number): Promise<void> => {
      if (req.exclusive !== undefined && giveBack === null && lostRaces >= EXCLUSIVE_AFTER_LOST_RACES) giveBack = await req.exclusive();
    };
    try {
      return await this.attempts(req, takeTurn);
    } finally {
      (giveBack as (() => void) | null)?.();
    }
  }

  /** The attempts of `commit`; `beforeRetry(lostRaces)` runs before each retry after a lost race. */
  private async attempts(req: CommitRequest, beforeRetry: (lostRaces: number) => Promise<void>): Promise<CommitResult> {
    const identifier = req.commitIdentifier ?? BATCH_COMMIT_IDENTIFIER;
    const kind = req.kind ?? (req.overwrite ? CommitKind.OVERWRITE : CommitKind.APPEND);
    const maxRetries = this.table.options.commitMaxRetries;
    const minWait = this.table.options.duration("commit.min-retry-wait");
    const maxWait = this.table.options.duration("commit.max-retry-wait");
    let lastTriedId: number | null = req.recoverFrom ?? null;

    for (let attempt = 1; ; attempt++) {
      const latest = await this.table.snapshots.latest();
      if (lastTriedId !== null) {
        // We lost a race (or do not know whether we won): the winner may be ourselves.
        const landed = await this.findCommitted(req.commitUser, identifier, kind, lastTriedId, latest);
        if (landed) return { snapshot: landed, alreadyCommitted: true, attempts: attempt, linkedAt: Date.now() };
      }
      if (req.overwrite && req.overwrite.atCommitTime !== true) await this.checkOverwriteConflict(req.overwrite, latest);
      const prepared: PrepareResult = req.prepare ? await req.prepare(latest) : { properties: latest?.properties ?? null };
      const messages = prepared.messages ?? req.messages;
      const commitIdentifier = prepared.commitIdentifier ?? identifier;
      const hasFiles = messages.some((m) => m.newFiles.length > 0 || m.deletedFiles.length > 0 || (m.changelogFiles?.length ?? 0) > 0);
      if (!hasFiles && !req.overwrite && (req.skipEmpty ?? true) && !prepared.commitEmpty) {
        return { snapshot: null, alreadyCommitted: false, attempts: attempt, linkedAt: Date.now() };
      }
      await this.checkDeletesLive(messages, latest, kind);
      // Never a snapshot on one that cannot be read: its manifests would be the new one's base (damaged-file.ts).
      if (latest !== null) await this.manifests.checkReadable(latest);

      const written: string[] = [];
      const delta = await this.deltaEntries(messages, req.overwrite, latest);
      const changelog = changelogEntries(messages);
      const snapshot = await this.buildSnapshot(latest, delta, changelog, req.commitUser, commitIdentifier, kind, prepared.properties, written);
      const ok = await this.table.snapshots.tryCommit(snapshot);
      if (ok) return { snapshot, alreadyCommitted: false, attempts: attempt, linkedAt: Date.now() };

      // Lost the race: our manifests are unreferenced, remove them and retry on top of the winner.
      await Promise.all(written.map((name) => this.table.io.delete(this.table.paths.manifestPath(name))));
      lastTriedId = snapshot.id;
      if (attempt >= maxRetries) {
        throw new LakeError(ErrorKind.CommitRace, `commit to ${this.table.name} lost ${attempt} races in a row; giving up`, {
          retryable: true,
          context: { snapshotId: snapshot.id },
        });
      }
      const wait = Math.min(maxWait, minWait * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
      await new Promise((r) => setTimeout(r, wait));
      await beforeRetry(attempt);
    }
  }

  /** Looks for a snapshot after `afterId` with this commit's identity. */
  private async findCommitted(user: string, identifier: bigint, kind: CommitKind, afterId: number, latest: Snapshot | null): Promise<Snapshot | null> {
    if (latest === null) return null;
    for (let id = latest.id; id >= afterId; id--) {
      const s = await this.table.snapshots.snapshot(id);
      if (s.commitUser === user && s.commitIdentifier === identifier && s.commitKind === kind) return s;
    }
    return null;
  }

  /**
   * Every file a commit DELETEs (compaction inputs) must still be live in the snapshot it builds on (Paimon's
   * `checkDeleteInEntries`): a file an overwrite replaced or another compaction took since is a Conflict, not retried —
   * committing anyway would add its rows a second time (the outputs) or delete a file that is gone.
   */
  private async checkDeletesLive(messages: CommitMessage[], latest: Snapshot | null, kind: CommitKind): Promise<void> {
    const deletes: ManifestEntry[] = [];
    for (const m of messages) for (const f of m.deletedFiles) deletes.push({ kind: FileKind.DELETE, partition: m.partition, bucket: m.bucket, totalBuckets: m.totalBuckets, file: f });
    if (deletes.length === 0) return;
    const live = new Set(latest === null ? [] : (await this.manifests.readLiveEntries(latest)).map(fileIdentifier));
    const gone = deletes.find((e) => !live.has(fileIdentifier(e)));
    if (gone === undefined) return;
    throw new LakeError(
      ErrorKind.Conflict,
      `${kind} commit to ${this.table.name} conflicts with snapshot ${latest?.id ?? "(none)"}: file ${gone.file.fileName} (bucket ${gone.bucket}) it would delete is no longer live (an overwrite replaced it or another compaction took it); nothing was committed`,
      { context: { snapshotId: latest?.id ?? null, fileName: gone.file.fileName }, retryable: false },
    );
  }

  private async checkOverwriteConflict(ow: NonNullable<CommitRequest["overwrite"]>, latest: Snapshot | null): Promise<void> {
    if (latest === null) return;
    const from = (ow.readSnapshotId ?? 0) + 1;
    for (let id = from; id <= latest.id; id++) {
      const s = await this.table.snapshots.snapshot(id);
      // A compaction only rewrites rows into other files: the overwrite deletes what is live at its commit, outputs
      // included, and drops no row it never saw.
      if (s.commitKind === CommitKind.COMPACT) continue;
      const entries = await this.manifests.readDeltaEntries(s);
      const hit = entries.find((e) => ow.matches(e.partition));
      if (hit) {
        throw new LakeError(
          ErrorKind.Conflict,
          `overwrite of ${this.table.name} conflicts with snapshot ${id} (${s.commitKind} by ${s.commitUser}), which changed the same partition after the overwrite started; nothing was replaced`,
          { context: { snapshotId: id }, retryable: false },
        );
      }
    }
  }

  private async deltaEntries(messages: CommitMessage[], overwrite: CommitRequest["overwrite"], latest: Snapshot | null): Promise<ManifestEntry[]> {
    const entries: ManifestEntry[] = [];
    if (overwrite && latest !== null) {
      for (const e of await this.manifests.readLiveEntries(latest)) {
        if (overwrite.matches(e.partition)) entries.push({ ...e, kind: FileKind.DELETE });
      }
    }
    for (const m of messages) {
      for (const f of m.deletedFiles) entries.push({ kind: FileKind.DELETE, partition: m.partition, bucket: m.bucket, totalBuckets: m.totalBuckets, file: f });
      for (const f of m.newFiles) entries.push({ kind: FileKind.ADD, partition: m.partition, bucket: m.bucket, totalBuckets: m.totalBuckets, file: f });
    }
    return entries;
  }

  private async buildSnapshot(
    latest: Snapshot | null,
    delta: ManifestEntry[],
    changelog: ManifestEntry[],
    commitUser: string,
    commitIdentifier: bigint,
    commitKind: CommitKind,
    properties: Record<string, string> | null,
    written: string[],
  ): Promise<Snapshot> {
    const baseMetas: ManifestFileMeta[] = latest === null ? [] : await this.manifests.allManifests(latest);
    const mergedBase = await this.manifests.maybeMerge(baseMetas, written);
    const deltaMetas = delta.length === 0 ? [] : [await this.manifests.writeManifest(delta, written)];
    // A primary-key table's changelog files (changelog-producer = input) go to a list of their own, as Java's do.
    const changelogMetas = changelog.length === 0 ? null : [await this.manifests.writeManifest(changelog, written)];
    failpoint("commit.after-manifests");
    // Independent files, named by nothing until the snapshot: written at once (one round trip on an object store).
    const [base, deltaList, changelogList] = await Promise.all([
      this.manifests.writeManifestList(mergedBase, written),
      this.manifests.writeManifestList(deltaMetas, written),
      changelogMetas === null ? null : this.manifests.writeManifestList(changelogMetas, written),
    ]);
    // One directory sync makes every manifest name of this attempt durable before a snapshot can name them.
    await this.table.io.syncDir(this.table.paths.manifestDir);
    failpoint("commit.after-manifest-lists");
    let deltaRecordCount = 0;
    for (const e of delta) deltaRecordCount += e.kind === FileKind.ADD ? e.file.rowCount : -e.file.rowCount;
    return {
      version: 3,
      id: (latest?.id ?? 0) + 1,
      schemaId: this.table.schema.id,
      baseManifestList: base.name,
      baseManifestListSize: base.size,
      deltaManifestList: deltaList.name,
      deltaManifestListSize: deltaList.size,
      changelogManifestList: changelogList?.name ?? null,
      changelogManifestListSize: changelogList?.size ?? null,
      indexManifest: latest?.indexManifest ?? null,
      commitUser,
      commitIdentifier,
      commitKind,
      timeMillis: Math.max(Date.now(), latest?.timeMillis ?? 0),
      totalRecordCount: (latest?.totalRecordCount ?? 0) + deltaRecordCount,
      deltaRecordCount,
      changelogRecordCount: changelog.length === 0 ? null : changelog.reduce((n, e) => n + e.file.rowCount, 0),
      watermark: latest?.watermark ?? null,
      statistics: latest?.statistics ?? null,
      properties,
      nextRowId: latest?.nextRowId ?? 0,
      uuid: randomUUID(),
      operation: null,
    };
  }
}

/** The changelog files of a commit's messages as ADD entries of its changelog manifest. */
function changelogEntries(messages: readonly CommitMessage[]): ManifestEntry[] {
  const out: ManifestEntry[] = [];
  for (const m of messages) for (const f of m.changelogFiles ?? []) out.push({ kind: FileKind.ADD, partition: m.partition, bucket: m.bucket, totalBuckets: m.totalBuckets, file: f });
  return out;
}
