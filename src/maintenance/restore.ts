/**
 * Restore: the table's content brought back to a snapshot or a tag by ONE new snapshot — a rollback that keeps the
 * history (as Delta Lake's RESTORE does), where Paimon's `rollback_to` (./rollback.ts) deletes the later snapshots.
 *
 * The new snapshot (kind OVERWRITE, built on the latest snapshot when it commits) DELETEs every file live there that
 * the target does not hold, and ADDs the target's files that are no longer live — under NEW names, hard links (or
 * server-side copies) of the originals: Paimon's expiration deletes a data file by name once a snapshot DELETEd it,
 * so a name, once deleted from a table, must never be added back. The files that stay live in both are untouched,
 * and every data file keeps its sequence numbers, so each bucket reads back in the target's order and later appends
 * follow it.
 *
 * A file is live "in both" only at the same level. A primary-key file a compaction moved to another level since (an
 * upgrade) is, for the restore, deleted at the level it has and brought back under a new name at the target's: every
 * bucket's levels are then the target's exactly (kept where they were, a level ≥ 1 would mix files the target had at
 * different levels, which may overlap), and no (file, level) is added again after its deletion — pypaimon drops an
 * ADD whose file and level were ever DELETEd, and Paimon's manifests assume each is added once.
 *
 * Why the cluster rolls back this way (`natslake rollback --nats`, run by the table's leader):
 * - snapshot ids never repeat. After Paimon's rollback the next commit re-uses id N+1 with other content: every
 *   process that cached the old N+1 (any reader, a writer planning a compaction), every subscriber that saw the old
 *   ids and every consumer whose progress points past N would read, skip or announce the wrong snapshot;
 * - it is atomic: one `link()` of `snapshot-<latest+1>`; a crash before it leaves the table as it was (the links
 *   made so far are orphans for orphan cleanup), and nothing needs a journal;
 * - the base's properties — the cluster's stream offsets, owner and leader epochs — are carried forward unchanged,
 *   so the cluster goes on from where it was: rows committed after the target are gone from the table for good and
 *   never ingested again, rows not committed yet land after the restore;
 * - it is an ordinary commit on the chain: a concurrent commit makes it retry on top (re-deciding what to delete
 *   and to bring back against exactly the snapshot `link()` protects), and a writer's compaction whose inputs it
 *   deleted is refused as `inputs-gone`.
 * Streaming readers pass OVERWRITE snapshots over (Paimon's rule), so consumers do not receive the target's rows a
 * second time; the rows they received after the target are not taken back from them.
 */
import { randomUUID } from "node:crypto";
import { ErrorKind, LakeError } from "../errors.ts";
import type { CommitMessage } from "../commit/commit-message.ts";
import { FileStoreCommit, type ExclusiveCommitTurn } from "../commit/file-store-commit.ts";
import { CommitKind, type Snapshot } from "../format/snapshot.ts";
import type { DataFileMeta, ManifestEntry } from "../format/manifest.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { dataFilePath, fileKey } from "../table/file-refs.ts";
import { failpoint } from "../failpoints.ts";
import { resolveRollbackTarget } from "./rollback.ts";

export interface RestoreOptions {
  toSnapshot?: number;
  toTag?: string;
  /** Compute and report, change nothing. */
  dryRun?: boolean;
  /** The new snapshot's commit user (default: a fresh one, so a second restore is never taken for a retry). */
  commitUser?: string;
  /** The commit takes the table's turn after losing races (see CommitRequest.exclusive). */
  exclusive?: ExclusiveCommitTurn;
}

export interface RestoreResult {
  table: string;
  /** The snapshot whose content the table has afterwards. */
  target: number;
  /** The latest snapshot the restore was built on. */
  fromLatest: number;
  /** The new snapshot (null: a dry run, or nothing differed). */
  snapshot: number | null;
  /** Files live in the latest snapshot that the target does not hold (deleted by the new snapshot). */
  filesRemoved: number;
  /** The target's files brought back under new names. */
  filesRestored: number;
  rowsBefore: number;
  rowsAfter: number;
  dryRun: boolean;
}

/** What one attempt would change, decided against `base`. */
interface RestorePlan {
  removed: ManifestEntry[];
  restored: ManifestEntry[];
}

export async function restoreTable(table: Table, o: RestoreOptions): Promise<RestoreResult> {
  if ((o.toSnapshot === undefined) === (o.toTag === undefined)) throw new LakeError(ErrorKind.DataInvalid, "restore either a snapshot or a tag");
  const target = await resolveRollbackTarget(table, o);
  const store = new ManifestStore(table);
  const targetLive = await store.readLiveEntries(target);
  // The same file at the same level (see the module comment).
  const at = (e: ManifestEntry): string => `${fileKey(e)}@${e.file.level}`;
  const targetKeys = new Set(targetLive.map(at));
  const planAgainst = async (base: Snapshot): Promise<RestorePlan> => {
    if ((base.indexManifest ?? null) !== (target.indexManifest ?? null))
      throw new LakeError(ErrorKind.Unsupported, `${table.name}: snapshot ${target.id} and the latest ${base.id} have different index manifests (deletion vectors or a bucket index); natslake cannot restore such a table`);
    const baseLive = await store.readLiveEntries(base);
    const baseKeys = new Set(baseLive.map(at));
    return { removed: baseLive.filter((e) => !targetKeys.has(at(e))), restored: targetLive.filter((e) => !baseKeys.has(at(e))) };
  };

  const latest = await table.snapshots.latest();
  if (latest === null) throw new LakeError(ErrorKind.NotFound, `${table.name} has no snapshots`);
  if (o.dryRun === true) {
    const p = await planAgainst(latest);
    return resultOf(table, target, latest, null, p, true);
  }

  // Links made in an attempt that lost a race are re-used by the next one (same file → same new name).
  const copies = new Map<string, DataFileMeta>();
  const bringBack = async (e: ManifestEntry): Promise<DataFileMeta> => {
    const key = fileKey(e);
    const done = copies.get(key);
    if (done !== undefined) return done;
    for (const x of e.file.extraFiles) if (x.length > 0) throw new LakeError(ErrorKind.Unsupported, `${table.name}: data file ${e.file.fileName} has extra files (${x}); natslake cannot restore it`);
    const ext = /\.([^.]+)$/.exec(e.file.fileName)?.[1] ?? "parquet";
    const meta: DataFileMeta = { ...e.file, fileName: table.paths.newDataFileName(table.options.get("data-file.prefix") ?? "data-", ext), externalPath: null };
    await table.io.copyFile(dataFilePath(table, e), dataFilePath(table, { ...e, file: meta }));
    copies.set(key, meta);
    return meta;
  };

  let plan: RestorePlan = { removed: [], restored: [] };
  let base: Snapshot = latest;
  const commit = new FileStoreCommit(table, store);
  const res = await commit.commit({
    commitUser: o.commitUser ?? randomUUID(),
    kind: CommitKind.OVERWRITE,
    messages: [],
    ...(o.exclusive !== undefined ? { exclusive: o.exclusive } : {}),
    prepare: async (b) => {
      if (b === null) throw new LakeError(ErrorKind.NotFound, `${table.name} has no snapshots`);
      base = b;
      plan = await planAgainst(b);
      const byBucket = new Map<string, CommitMessage>();
      const messageOf = (e: ManifestEntry): CommitMessage => {
        const k = `${Buffer.from(e.partition).toString("hex")}/${e.bucket}`;
        let m = byBucket.get(k);
        if (m === undefined) {
          m = { partition: e.partition, bucket: e.bucket, totalBuckets: e.totalBuckets, newFiles: [], deletedFiles: [] };
          byBucket.set(k, m);
        }
        return m;
      };
      for (const e of plan.removed) messageOf(e).deletedFiles.push(e.file);
      for (const e of plan.restored) messageOf(e).newFiles.push(await bringBack(e));
      failpoint("restore.after-links");
      // The base's properties (the cluster's offsets and epochs) go forward unchanged.
      return { properties: b.properties, messages: [...byBucket.values()] };
    },
  });
  return resultOf(table, target, base, res.snapshot?.id ?? null, plan, false);
}

function resultOf(table: Table, target: Snapshot, base: Snapshot, snapshot: number | null, p: RestorePlan, dryRun: boolean): RestoreResult {
  return {
    table: table.name,
    target: target.id,
    fromLatest: base.id,
    snapshot,
    filesRemoved: p.removed.length,
    filesRestored: p.restored.length,
    rowsBefore: base.totalRecordCount,
    rowsAfter: target.totalRecordCount,
    dryRun,
  };
}
