/**
 * Rollback to a snapshot or a tag, by the rules of Paimon's `rollback_to` (Java `RollbackHelper.cleanLargerThan`,
 * `FileStoreTable.rollbackTo`; pypaimon `table/rollback_helper.py`):
 *
 * - rolling back to snapshot N deletes the snapshots after N, the tags on snapshots after N, and the data files and
 *   manifests those added that neither N nor a remaining tag uses; the `LATEST` hint becomes N;
 * - rolling back to a tag whose snapshot was expired first re-creates `snapshot-N` from the tag (and `EARLIEST`
 *   becomes N); `--to-snapshot N` of an expired N uses a tag on N when there is one, as Paimon does.
 *
 * What goes, precisely: every file any deleted snapshot references is either live in the first deleted snapshot or
 * added by the delta of a later one (history is linear), so those — plus what the deleted tags hold — minus what N
 * and the remaining tags hold are the data files to delete. Java deletes only the deltas' additions; a rollback to a
 * tag whose later snapshots were partly expired would leave the files the expired ones added behind. The changelog
 * files (primary-key tables, `changelog-producer = input`) the deleted snapshots and tags added go too: each belongs
 * to the one snapshot that added it, so those of N and of the remaining tags stay. A file a primary-key compaction
 * moved to another level after N is one file, live in N at its old level: it stays.
 *
 * Crash safety. The plan is computed first and written as a journal, `<table>/natslake-rollback` (created
 * exclusively: two rollbacks of one table cannot both run), before anything changes. Then, in this order:
 * 1. `snapshot-N` re-created from the tag when it is missing (an older snapshot: the latest is unchanged);
 * 2. the tag files of the tags after N (tags are not what readers of the latest see);
 * 3. the snapshot files after N, oldest first and the latest last: until the latest's file goes, the table reads
 *    exactly as before (the latest and everything it references are untouched); once it goes, the table is at N;
 * 4. the `LATEST` (and `EARLIEST`) hints; the data files, then the manifests of the plan — nothing N or a remaining
 *    tag references, so the table stays readable at N throughout;
 * 5. the journal.
 * A kill at any point leaves the table readable at its original latest snapshot (steps 1–3) or at N (3–5), never in
 * between, and the next run finds the journal and finishes exactly that plan (deleting what is already gone is not an
 * error), even though the snapshots that told which files to delete are gone by then. A run for another target is
 * refused while a journal is there. Java deletes the snapshot files newest first, then the files: a kill there
 * leaves the table at a snapshot between N and the latest, and the files of the snapshots already deleted behind.
 *
 * Damaged snapshots after N (files that exist but do not parse as snapshots: a damaged disk, a hand edit) are
 * deleted like the others; the files only they added cannot be known and are left to orphan cleanup. A damaged latest
 * snapshot hides who committed it, so such a rollback needs `force` (the table's cluster, if one runs, is stuck on it
 * anyway: its commits fail until the table is rolled back).
 *
 * A running cluster: snapshot N's `natslake.*` properties (the stream offsets) become the latest again, so the
 * cluster resumes from them and re-ingests every row committed after N that its stream still holds — and a committer
 * committing while this runs would build on a snapshot being deleted. The library cannot see a cluster; it refuses
 * when the latest snapshot was committed by one (the committer's commit user, `natslake-<db.table>` in
 * actors/committer.ts, or `natslake-reset-…` of `table reset-offsets`) less than `guardMs` ago, unless forced.
 */
import { join } from "node:path";
import { ErrorKind, ifPresent, isLakeError, LakeError } from "../errors.ts";
import { failpoint } from "../failpoints.ts";
import { FileKind, type ManifestEntry } from "../format/manifest.ts";
import { snapshotFromJson, snapshotToJson, type Snapshot } from "../format/snapshot.ts";
import { parseJson, stringifyJson } from "../format/wire/json.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { getTagOrThrow, listTags } from "../table/tags.ts";
import { changelogFilesOf, dataFilePath, fileKey, manifestListsOf } from "../table/file-refs.ts";

/** The prefix of the commit users of the cluster's committer (actors/committer.ts) and offset resets. */
export const CLUSTER_COMMIT_USER_PREFIX = "natslake-";
export const DEFAULT_ROLLBACK_GUARD_MS = 60_000;
const JOURNAL = "natslake-rollback";

export interface RollbackOptions {
  toSnapshot?: number;
  toTag?: string;
  /** Compute and report, change nothing. */
  dryRun?: boolean;
  /** Roll back even when the latest snapshot was committed by a cluster within `guardMs`. */
  force?: boolean;
  guardMs?: number;
  /** Now, epoch ms (tests). */
  now?: number;
}

export interface RollbackResult {
  /** The snapshot the table is at afterwards. */
  target: number;
  /** The latest snapshot before the rollback. */
  fromLatest: number;
  snapshotsDeleted: number[];
  /** Snapshots deleted that could not be read (damaged): the files only they added are left to orphan cleanup. */
  damagedSnapshots: number[];
  tagsDeleted: string[];
  dataFilesDeleted: number;
  /** Changelog files the deleted snapshots and tags added. */
  changelogFilesDeleted: number;
  manifestsDeleted: number;
  /** `snapshot-N` was written back from the tag. */
  recreatedSnapshot: boolean;
  /** This run finished a rollback an earlier, interrupted run had started. */
  resumed: boolean;
  dryRun: boolean;
}

/** The journal: the whole plan, written before anything changes. */
interface Plan {
  target: number;
  latest: number;
  /** The target snapshot's JSON when `snapshot-N` must be written back from a tag. */
  recreate: Record<string, unknown> | null;
  snapshots: number[];
  /** Of `snapshots`, those that could not be read. */
  damaged?: number[];
  tags: string[];
  dataFiles: string[];
  /** Paths of changelog files to delete (absent in journals of older versions). */
  changelogFiles?: string[];
  manifests: string[];
}

const journalPath = (table: Table): string => join(table.root, JOURNAL);

/** Snapshot `id`, or null when its file is damaged; other errors pass. */
const readable = (table: Table, id: number): Promise<Snapshot | null> => table.snapshots.snapshotOrDamaged(id);

export async function rollback(table: Table, o: RollbackOptions): Promise<RollbackResult> {
  if ((o.toSnapshot === undefined) === (o.toTag === undefined)) throw new LakeError(ErrorKind.DataInvalid, "roll back to either a snapshot or a tag");
  const pending = await readJournal(table);
  if (pending !== null) {
    const target = await resolveRollbackTarget(table, o).catch(() => null);
    if (target === null || target.id !== pending.target) {
      throw new LakeError(
        ErrorKind.Conflict,
        `${table.name}: an interrupted rollback to snapshot ${pending.target} is unfinished (${journalPath(table)}); run it again (the same target) to finish it first`,
      );
    }
    return o.dryRun === true ? resultOf(pending, true, true) : execute(table, pending, true);
  }
  const target = await resolveRollbackTarget(table, o);
  const latestId = await table.snapshots.latestId();
  if (latestId === null) throw new LakeError(ErrorKind.NotFound, `${table.name} has no snapshots`);
  if (target.id > latestId) throw new LakeError(ErrorKind.DataInvalid, `${table.name}: snapshot ${target.id} is after the latest snapshot ${latestId}`);
  if (target.id === latestId) return resultOf({ target: latestId, latest: latestId, recreate: null, snapshots: [], tags: [], dataFiles: [], manifests: [] }, false, o.dryRun === true);
  const latest = await readable(table, latestId);
  if (latest === null) {
    if (o.force !== true)
      throw new LakeError(
        ErrorKind.Conflict,
        `${table.name}: the latest snapshot ${latestId} is damaged, so who committed it cannot be checked: pass --force to roll back to ${target.id} (a cluster running on the table cannot commit until then; it then resumes from snapshot ${target.id}'s offsets)`,
      );
  } else guard(table, latest, o);
  const plan = await planRollback(table, target, latestId);
  if (o.dryRun === true) return resultOf(plan, false, true);
  if (!(await table.io.createExclusive(journalPath(table), stringifyJson(plan)))) {
    throw new LakeError(ErrorKind.Conflict, `${table.name}: another rollback started at the same time (${journalPath(table)})`);
  }
  return execute(table, plan, false);
}

/** The snapshot a rollback or a restore goes back to: a snapshot, an expired one a tag holds, or a tag's. */
export async function resolveRollbackTarget(table: Table, o: { toSnapshot?: number; toTag?: string }): Promise<Snapshot> {
  if (o.toTag !== undefined) return (await getTagOrThrow(table, o.toTag)).snapshot;
  const id = o.toSnapshot!;
  if (await table.snapshots.snapshotExists(id)) return table.snapshots.snapshot(id);
  // An expired snapshot a tag still holds (Paimon's rollback_to does the same).
  const tagged = (await listTags(table)).find((t) => t.snapshot.id === id);
  if (tagged !== undefined) return tagged.snapshot;
  const ids = await table.snapshots.listIds();
  const range = ids.length ? `snapshots ${ids[0]}..${ids[ids.length - 1]} exist` : "the table has no snapshots";
  throw new LakeError(ErrorKind.NotFound, `snapshot ${id} of ${table.name} does not exist and no tag holds it (${range})`);
}

function guard(table: Table, latest: Snapshot, o: RollbackOptions): void {
  if (o.force === true || !latest.commitUser.startsWith(CLUSTER_COMMIT_USER_PREFIX)) return;
  const guardMs = o.guardMs ?? DEFAULT_ROLLBACK_GUARD_MS;
  const age = (o.now ?? Date.now()) - latest.timeMillis;
  if (age >= guardMs) return;
  throw new LakeError(
    ErrorKind.Conflict,
    `${table.name}: the latest snapshot ${latest.id} was committed by a natslake cluster (${latest.commitUser}) ${Math.max(0, Math.round(age / 1000))} s ago: ` +
      `roll back through the cluster (--nats URL: its leader restores the snapshot's content as a new snapshot) or with --keep-history, stop the cluster first, or pass --force (the cluster would resume from the rolled-back snapshot's offsets and re-ingest the rows committed after it that its stream still holds)`,
  );
}

async function planRollback(table: Table, target: Snapshot, latestId: number): Promise<Plan> {
  const store = new ManifestStore(table);
  const N = target.id;
  const snapshots = (await table.snapshots.listIds()).filter((id) => id > N && id <= latestId);
  const allTags = await listTags(table);
  const laterTags = allTags.filter((t) => t.snapshot.id > N);
  const kept = [target, ...allTags.filter((t) => t.snapshot.id <= N).map((t) => t.snapshot)];

  const keepFiles = new Set<string>();
  const keepChangelog = new Set<string>();
  const keepManifests = new Set<string>();
  for (const s of kept) {
    for (const e of await store.readLiveEntries(s)) keepFiles.add(fileKey(e));
    for (const e of await changelogFilesOf(store, s)) keepChangelog.add(fileKey(e));
    for (const list of manifestListsOf(s)) {
      keepManifests.add(list);
      // A tag's changelog list may be gone: Java's expiration deletes it with the tagged snapshot.
      for (const m of await ifPresent(store.readManifestList(list), [])) keepManifests.add(m.fileName);
    }
  }
  const changelogFiles = new Map<string, string>();
  const considerChangelog = async (s: Snapshot): Promise<void> => {
    for (const e of await changelogFilesOf(store, s)) if (!keepChangelog.has(fileKey(e))) changelogFiles.set(fileKey(e), dataFilePath(table, e));
  };

  const dataFiles = new Map<string, string>();
  const consider = (entries: readonly ManifestEntry[]): void => {
    for (const e of entries) if (e.kind === FileKind.ADD && !keepFiles.has(fileKey(e))) dataFiles.set(fileKey(e), dataFilePath(table, e));
  };
  const manifests = new Set<string>();
  const considerManifests = async (s: Snapshot): Promise<void> => {
    for (const list of manifestListsOf(s)) {
      if (!keepManifests.has(list)) manifests.add(list);
      for (const m of await ifPresent(store.readManifestList(list), [])) if (!keepManifests.has(m.fileName)) manifests.add(m.fileName);
    }
  };
  const damaged: number[] = [];
  let first = true;
  for (const id of snapshots) {
    const s = await readable(table, id);
    if (s === null) {
      damaged.push(id);
      continue;
    }
    // The first readable one: its live files (a damaged one before it added files the next base lists too).
    consider(first ? await store.readLiveEntries(s) : await store.readDeltaEntries(s));
    first = false;
    await considerChangelog(s);
    await considerManifests(s);
  }
  for (const t of laterTags) {
    consider(await store.readLiveEntries(t.snapshot));
    await considerChangelog(t.snapshot);
    await considerManifests(t.snapshot);
  }
  const recreate = (await table.snapshots.snapshotExists(N)) ? null : snapshotToJson(target);
  return { target: N, latest: latestId, recreate, snapshots, ...(damaged.length > 0 ? { damaged } : {}), tags: laterTags.map((t) => t.name), dataFiles: [...dataFiles.values()].sort(), changelogFiles: [...changelogFiles.values()].sort(), manifests: [...manifests].sort() };
}

async function execute(table: Table, plan: Plan, resumed: boolean): Promise<RollbackResult> {
  const io = table.io;
  // A commit on top of the latest since the plan was made would reference what is about to go.
  const newer = (await table.snapshots.listIds()).filter((id) => id > plan.latest);
  if (newer.length > 0) {
    throw new LakeError(
      ErrorKind.Conflict,
      `${table.name}: snapshot ${newer[0]} was committed during the rollback to ${plan.target} (is a cluster or writer still running?); stop it, then run the rollback again`,
    );
  }
  // 1. The target snapshot, back from its tag.
  if (plan.recreate !== null) {
    await io.createExclusive(table.paths.snapshotPath(plan.target), stringifyJson(plan.recreate));
    failpoint("rollback.after-recreate");
  }
  // 2. Tags after the target.
  for (const name of plan.tags) {
    await io.delete(join(table.root, "tag", `tag-${name}`));
    failpoint("rollback.after-tag");
  }
  // 3. Snapshots after the target, oldest first: the latest (and so what readers see) changes only with the last one.
  for (const id of plan.snapshots) {
    await io.delete(table.paths.snapshotPath(id));
    failpoint("rollback.after-snapshot");
  }
  // This handle's cache must not answer for the snapshots just removed (its latest, its existence checks).
  table.snapshots.forgetAfter(plan.target);
  // 4. Hints, then the files nothing retained references.
  try {
    await io.writeFile(`${table.paths.snapshotDir}/LATEST`, String(plan.target), { durable: false });
  } catch {
    // A hint: readers check it against the directory.
  }
  const earliest = await table.snapshots.earliestId();
  if (earliest === null || earliest >= plan.target) await table.snapshots.writeEarliestHint(plan.target);
  for (const path of [...plan.dataFiles, ...(plan.changelogFiles ?? [])]) {
    await io.delete(path);
    failpoint("rollback.after-data-file");
  }
  for (const name of plan.manifests) await io.delete(table.paths.manifestPath(name));
  // 5. Done.
  await io.delete(journalPath(table));
  return resultOf(plan, resumed, false);
}

function resultOf(plan: Plan, resumed: boolean, dryRun: boolean): RollbackResult {
  return {
    target: plan.target,
    fromLatest: plan.latest,
    snapshotsDeleted: plan.snapshots,
    damagedSnapshots: plan.damaged ?? [],
    tagsDeleted: plan.tags,
    dataFilesDeleted: plan.dataFiles.length,
    changelogFilesDeleted: plan.changelogFiles?.length ?? 0,
    manifestsDeleted: plan.manifests.length,
    recreatedSnapshot: plan.recreate !== null,
    resumed,
    dryRun,
  };
}

async function readJournal(table: Table): Promise<Plan | null> {
  let text: string;
  try {
    text = await table.io.readText(journalPath(table));
  } catch (e) {
    if (isLakeError(e, ErrorKind.NotFound)) return null;
    throw e;
  }
  const j = parseJson(text) as Record<string, unknown>;
  const nums = (v: unknown): number[] => (Array.isArray(v) ? v.map((x) => Number(x)) : []);
  const strs = (v: unknown): string[] => (Array.isArray(v) ? v.map((x) => String(x)) : []);
  const recreate = j["recreate"];
  if (recreate !== null && recreate !== undefined) snapshotFromJson(recreate); // must be a valid snapshot
  return {
    target: Number(j["target"]),
    latest: Number(j["latest"]),
    recreate: recreate === null || recreate === undefined ? null : (recreate as Record<string, unknown>),
    snapshots: nums(j["snapshots"]),
    ...(Array.isArray(j["damaged"]) ? { damaged: nums(j["damaged"]) } : {}),
    tags: strs(j["tags"]),
    dataFiles: strs(j["dataFiles"]),
    ...(Array.isArray(j["changelogFiles"]) ? { changelogFiles: strs(j["changelogFiles"]) } : {}),
    manifests: strs(j["manifests"]),
  };
}

