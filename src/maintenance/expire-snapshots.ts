/**
 * Snapshot expiration, by the rules of Paimon's ExpireSnapshotsImpl (see ../shared/paimon-format.md §9.3).
 *
 * Which snapshots: keep at least `snapshot.num-retained.min`, at most `snapshot.num-retained.max`; a snapshot younger
 * than `snapshot.time-retained` and every one after it is kept; at most `snapshot.expire.limit` go per run; nothing at
 * or after `protectFrom` or the smallest `nextSnapshot` of the table's consumers (src/table/consumers.ts;
 * consumers idle for `consumer.expiration-time` are removed first, in a run that has something to expire) goes, nor
 * the newest snapshot that carries natslake's stream offsets (see below). The expired range is [earliest, end).
 *
 * What goes with them:
 * 1. data files DELETEd by the delta of a snapshot in (earliest, end] and not ADDed by that same delta — no snapshot
 *    from `end` on holds them — unless a tag holds them. A file DELETEd and ADDed by one delta was moved to another
 *    level by a primary-key compaction (an upgrade: the same file, DELETE at its old level, ADD at the new): it is
 *    still live (Java's FileDeletionBase.getDataFileToDelete, read per snapshot, does the same). Other than that a
 *    file name is never added twice (a restore brings files back under new names);
 * 2. the changelog files (`changelog-producer = input`) the expired snapshots [earliest, end) added, as Java does
 *    when changelog shares the snapshots' lifecycle — except those a tag holds (a tag keeps the tagged snapshot's
 *    changelog manifest list, its manifests and their files readable; Java deletes them with the snapshot and leaves
 *    the tag naming a missing list). A table whose `changelog.num-retained.*` / `changelog.time-retained` outlive
 *    the snapshots (Paimon's decoupled changelog, kept in `changelog/` files natslake does not write) is refused:
 *    expiring it as if coupled would delete changelog Paimon keeps, and natslake cannot keep it;
 * 3. manifests and manifest lists (base, delta and changelog) of the expired snapshots that neither snapshot `end`
 *    nor a tag uses;
 * 4. the snapshot files, oldest first, then the `EARLIEST` hint = end.
 *
 * A damaged snapshot file in the expired range (one that exists but does not parse) counts as old and goes like the
 * others; what only it referenced cannot be known and is left to orphan cleanup (which reads every snapshot, so it
 * can run again once the damaged one is gone). A damaged snapshot `end` itself stops the run with its error.
 *
 * Crash safety: in this order, a run killed at any point leaves every retained snapshot (≥ end) whole — they never
 * reference what is deleted — and the snapshots of the expired range still on disk; the next run computes the same
 * range from the same earliest snapshot and finishes it (deleting a file already gone is not an error). Only a
 * time-travel read of a snapshot in the range being expired can meet a missing file, as with Paimon.
 */
import { ErrorKind, ifPresent, LakeError } from "../errors.ts";
import { failpoint } from "../failpoints.ts";
import { FileKind } from "../format/manifest.ts";
import { natslakeState, type Snapshot } from "../format/snapshot.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { changelogDecoupling } from "../options.ts";
import { listTags } from "../table/tags.ts";
import { consumerProtection } from "../table/consumers.ts";
import { changelogFilesOf, dataFilePath, fileKey, manifestListsOf } from "../table/file-refs.ts";

export interface ExpireOptions {
  /** Now, in epoch ms (tests pass their own clock). */
  now?: number;
  /** Snapshots from this id on are never expired (a consumer's next snapshot). */
  protectFrom?: number;
  /** Compute and report what would go, delete nothing. */
  dryRun?: boolean;
  /** Overrides of the table's options (e.g. from the CLI). */
  retainMin?: number;
  retainMax?: number;
  timeRetainedMs?: number;
  limit?: number;
  /**
   * Manifests read through this store (default: a new one). The leader's scheduled expiration runs after every commit
   * and passes one store to all its runs: what a run reads as the retained snapshot's lists, the next reads as the
   * expired one's, and manifests never change once written.
   */
  store?: ManifestStore;
}

export interface ExpireResult {
  /** The expired range [from, to); empty when from === to. */
  from: number;
  to: number;
  snapshotsDeleted: number;
  /** Expired snapshots whose files were damaged (what only they referenced is left to orphan cleanup). */
  damagedSnapshots: number[];
  dataFilesDeleted: number;
  /** Changelog files of the expired snapshots (primary-key tables with `changelog-producer = input`). */
  changelogFilesDeleted: number;
  manifestsDeleted: number;
  dryRun: boolean;
}

interface RetentionPolicy {
  retainMin: number;
  retainMax: number;
  timeRetainedMs: number;
  limit: number;
}

function policyOf(table: Table, o: ExpireOptions): RetentionPolicy {
  const p: RetentionPolicy = {
    retainMin: o.retainMin ?? table.options.int("snapshot.num-retained.min"),
    retainMax: o.retainMax ?? table.options.int("snapshot.num-retained.max"),
    timeRetainedMs: o.timeRetainedMs ?? table.options.duration("snapshot.time-retained"),
    limit: o.limit ?? table.options.int("snapshot.expire.limit"),
  };
  // Paimon's own checks: at least one snapshot is always retained, and min may not exceed max.
  if (!(p.retainMin >= 1)) throw new LakeError(ErrorKind.DataInvalid, `snapshot.num-retained.min must be at least 1, got ${p.retainMin}`);
  if (p.retainMax < p.retainMin) throw new LakeError(ErrorKind.DataInvalid, `snapshot.num-retained.min (${p.retainMin}) must not exceed snapshot.num-retained.max (${p.retainMax})`);
  if (!(p.limit >= 1)) throw new LakeError(ErrorKind.DataInvalid, `snapshot.expire.limit must be at least 1, got ${p.limit}`);
  refuseDecoupledChangelog(table, p);
  return p;
}

/**
 * Paimon decouples changelog from snapshots when `changelog.num-retained.max` / `.min` or `changelog.time-retained`
 * retain more than their snapshot counterparts (Java's ExpireConfig.isChangelogDecoupled): expired snapshots then
 * live on as `changelog/changelog-N` files that keep their changelog — and, without a changelog producer, their
 * level-0 data files — until ExpireChangelogImpl expires them. natslake writes no such files, so it refuses to
 * expire such a table rather than delete what Paimon would keep. Options that retain no more than the snapshots are
 * the coupled default and change nothing.
 */
function refuseDecoupledChangelog(table: Table, p: RetentionPolicy): void {
  const reasons = changelogDecoupling(table.options, p);
  if (reasons.length === 0) return;
  throw new LakeError(
    ErrorKind.Unsupported,
    `${table.name} keeps its changelog longer than its snapshots (${reasons.join("; ")}): Paimon then keeps expired snapshots' changelog in changelog/ files, which natslake does not write; expire this table with Paimon, or set the changelog.* retention no longer than the snapshots'`,
  );
}

/** The range [earliest, end) the policy expires now (end === earliest: nothing). */
export async function expirableRange(table: Table, o: ExpireOptions = {}): Promise<{ earliest: number; end: number }> {
  const p = policyOf(table, o);
  const latest = await table.snapshots.latestId();
  const earliest = await table.snapshots.earliestId();
  if (latest === null || earliest === null) return { earliest: 0, end: 0 };
  let maxExclusive = Math.min(latest - p.retainMin + 1, earliest + p.limit);
  if (o.protectFrom !== undefined) maxExclusive = Math.min(maxExclusive, o.protectFrom);
  const end = await endByAge(table, p, earliest, latest, maxExclusive, o.now ?? Date.now());
  // What the retention options leave nothing to expire: done, without listing the consumers (the leader runs this
  // after every commit; on an object store that listing is a LIST request). The bounds below only lower `end`.
  if (end <= earliest) return { earliest, end: earliest };
  let bound = end;
  // Consumers keep every snapshot from their next one on; idle ones (consumer.expiration-time) are removed first.
  const consumers = await consumerProtection(table, o.now ?? Date.now(), { dryRun: o.dryRun === true });
  if (consumers.minNextSnapshot !== null) bound = Math.min(bound, consumers.minNextSnapshot);
  // The newest snapshot that carries natslake's offsets must stay: commits by other engines do not carry them
  // forward, and a cluster that finds no offsets on the chain would read its streams again from the start.
  const carrier = await newestNatslakeSnapshot(table, latest, earliest);
  if (carrier !== null) bound = Math.min(bound, carrier);
  return { earliest, end: Math.max(earliest, bound) };
}

/**
 * Where the age rule ends the range below `maxExclusive`: snapshots beyond num-retained.max go whatever their age;
 * from there, the first one young enough stops the range.
 */
async function endByAge(table: Table, p: RetentionPolicy, earliest: number, latest: number, maxExclusive: number, now: number): Promise<number> {
  if (maxExclusive <= earliest) return earliest;
  const cutoff = now - p.timeRetainedMs;
  for (let id = Math.max(latest - p.retainMax + 1, earliest); id < maxExclusive; id++) {
    if (!(await table.snapshots.snapshotExists(id))) continue;
    const s = await table.snapshots.snapshotOrDamaged(id);
    // A damaged snapshot's age cannot be read: it counts as old (nothing can be read from it anyway).
    if (s !== null && s.timeMillis >= cutoff) return id;
  }
  return maxExclusive;
}

/** Expires snapshots by the table's retention options; see the module comment for what goes and in which order. */
export async function expireSnapshots(table: Table, o: ExpireOptions = {}): Promise<ExpireResult> {
  const { earliest, end } = await expirableRange(table, o);
  const result: ExpireResult = { from: earliest, to: end, snapshotsDeleted: 0, damagedSnapshots: [], dataFilesDeleted: 0, changelogFilesDeleted: 0, manifestsDeleted: 0, dryRun: o.dryRun === true };
  if (end <= earliest) return result;
  const store = o.store ?? new ManifestStore(table);
  const retained = await table.snapshots.snapshot(end);
  const tagged = await listTags(table);

  // What the retained snapshot `end` and the tags still use.
  const keepManifests = new Set<string>();
  const keepFiles = new Set<string>();
  const keepChangelog = new Set<string>();
  for (const s of [retained, ...tagged.map((t) => t.snapshot)]) {
    for (const list of manifestListsOf(s)) {
      keepManifests.add(list);
      // A tag's changelog list may be gone: Java's expiration deletes it with the tagged snapshot.
      for (const m of await ifPresent(store.readManifestList(list), [])) keepManifests.add(m.fileName);
    }
  }
  for (const t of tagged) {
    for (const e of await store.readLiveEntries(t.snapshot)) keepFiles.add(fileKey(e));
    for (const e of await changelogFilesOf(store, t.snapshot)) keepChangelog.add(fileKey(e));
  }

  // 1. Data files deleted by the deltas of (earliest, end], each delta on its own: what it ADDs again (an upgrade to
  // another level) stays. A manifest of an expired snapshot that is gone was deleted by an earlier run killed before
  // it deleted the snapshot files; that run had deleted every data file first (the order above), so what the
  // manifest listed is handled.
  const dataFiles = new Map<string, string>();
  const damaged = new Set<number>();
  for (let id = earliest + 1; id <= end; id++) {
    const s = await snapshotIfExists(table, id, damaged);
    if (s === null) continue;
    const entries = await ifPresent(store.readDeltaEntries(s), []);
    const readded = new Set(entries.filter((e) => e.kind === FileKind.ADD).map(fileKey));
    for (const e of entries) {
      if (e.kind !== FileKind.DELETE || readded.has(fileKey(e)) || keepFiles.has(fileKey(e))) continue;
      dataFiles.set(fileKey(e), dataFilePath(table, e));
    }
  }
  // 2. Changelog files the expired snapshots added, and 3. their manifests and manifest lists.
  const changelogFiles = new Map<string, string>();
  const manifests = new Set<string>();
  for (let id = earliest; id < end; id++) {
    const s = await snapshotIfExists(table, id, damaged);
    if (s === null) continue;
    for (const e of await changelogFilesOf(store, s)) if (!keepChangelog.has(fileKey(e))) changelogFiles.set(fileKey(e), dataFilePath(table, e));
    for (const list of manifestListsOf(s)) {
      if (!keepManifests.has(list)) manifests.add(list);
      for (const m of await ifPresent(store.readManifestList(list), [])) if (!keepManifests.has(m.fileName)) manifests.add(m.fileName);
    }
  }
  result.dataFilesDeleted = dataFiles.size;
  result.changelogFilesDeleted = changelogFiles.size;
  result.manifestsDeleted = manifests.size;
  result.snapshotsDeleted = end - earliest;
  result.damagedSnapshots = [...damaged].filter((id) => id < end).sort((a, b) => a - b);
  if (o.dryRun === true) return result;

  for (const path of [...dataFiles.values(), ...changelogFiles.values()]) {
    await table.io.delete(path);
    failpoint("expire.after-data-file");
  }
  for (const name of manifests) await table.io.delete(table.paths.manifestPath(name));
  failpoint("expire.before-snapshots");
  for (let id = earliest; id < end; id++) {
    await table.io.delete(table.paths.snapshotPath(id));
    failpoint("expire.after-snapshot");
  }
  // This handle must not say they exist any more (a tag deleted next would keep files only it held).
  table.snapshots.forgetBefore(end);
  await table.snapshots.writeEarliestHint(end);
  return result;
}


async function newestNatslakeSnapshot(table: Table, latest: number, earliest: number): Promise<number | null> {
  for (let id = latest; id >= earliest; id--) {
    const s = await snapshotIfExists(table, id, new Set());
    if (s !== null && natslakeState(s) !== null) return id;
  }
  return null;
}


/** Snapshot `id`, or null when it is gone — or damaged, when `damaged` is given to collect it (else its error). */
async function snapshotIfExists(table: Table, id: number, damaged?: Set<number>): Promise<Snapshot | null> {
  if (!(await table.snapshots.snapshotExists(id))) return null;
  if (damaged === undefined) return table.snapshots.snapshot(id);
  const s = await table.snapshots.snapshotOrDamaged(id);
  if (s === null) damaged.add(id);
  return s;
}


