/**
 * Orphan-file cleanup, as Paimon's `remove_orphan_files` (OrphanFilesClean, ../shared/paimon-format.md §9.4): files
 * under the table directory that nothing references and that are older than a bound are deleted.
 *
 * Referenced: by any snapshot on disk (every snapshot from EARLIEST to LATEST, so also every snapshot a consumer
 * still needs — `consumer/consumer-<id>` only says "from snapshot N on", and those are all read), by any tag
 * (`tag/tag-*`), by any branch's snapshots and tags (`branch/branch-*`: their data files and manifests live in the
 * shared table directories), by decoupled changelogs (`changelog/changelog-*`), or by an in-flight committable (the
 * caller says which files: `inFlightFiles`). What a snapshot references: its manifest lists, their manifests, every
 * data file those list (ADD and DELETE entries alike) with its extra files, its index manifest and the index files it
 * lists (deletion vectors, a hash index; under `index/` or, with `index-file-in-data-file-dir`, beside the data
 * files: those are candidates like data files, and kept while referenced) — its changelog
 * manifest list included: the changelog files (`changelog-producer = input`) of every snapshot and tag on disk are
 * referenced. A changelog list that is gone is not damage (Java's expiration deletes a tagged snapshot's changelog).
 *
 * Candidates — what may be deleted when unreferenced and older than the bound:
 * - `data`: files in the bucket directories (`…/bucket-N/`, `bucket-postpone/`) of the data tree (everything under
 *   the root that is not a metadata directory): files of rejected, aborted or crashed writes;
 * - `manifest`: `manifest-*`, `manifest-list-*` and `index-manifest-*` under `manifest/`;
 * - `committable`: bodies under `natslake-committables/` (the cluster removes a body once its committable is decided;
 *   those of rejected committables, or of a writer that died before sending the reference, stay behind);
 * - `temp`: hidden temp files of interrupted atomic writes (`.<name>.<uuid>.tmp`, src/io/local.ts) in those
 *   directories and in `snapshot/`.
 * Never candidates: `schema/`, `snapshot-N` and the `LATEST`/`EARLIEST` hints, `tag/`, `consumer/`, `branch/`,
 * `changelog/`, `index/` and `statistics/` (natslake's expiration deletes no index file either: both leave Java's
 * index files to Java), files at the root or between partition directories, symbolic links, and any
 * file name in `manifest/` it does not recognise. Nothing younger than the bound is deleted, whatever the bound.
 *
 * Race safety (a cluster committing and expiration running meanwhile): the directories are listed FIRST, and the
 * snapshots are read after that, until a re-listing of `snapshot/` shows no new one — so "referenced" means
 * referenced by a snapshot that exists at the end of the scan. A commit landing during the scan adds only files
 * written by its in-flight writes, which are younger than the bound (the bound must exceed the longest write → commit
 * time; that is the one assumption) and kept by age whether or not the listing saw them; the older files it
 * references (its base manifests, the data files they list) were referenced by its parent snapshot too, which was
 * read. Expiration may delete snapshots and their manifests mid-scan: a snapshot that vanishes while being read is
 * skipped, and so is a missing manifest of a snapshot other than the latest (expiration deletes manifests before the
 * snapshot files). Their files are then either referenced by a later snapshot, which is read, or expired — deleting
 * one again is harmless. A missing manifest of the latest snapshot, of a tag or of a branch is not explained by
 * expiration: the run stops before deleting anything.
 *
 * Crash safety: deleting unreferenced files cannot break any snapshot, in whatever order or however far the run got;
 * deletion is idempotent (a file already gone is not an error), so a run killed midway (failpoint
 * `orphans.after-delete`) is finished by the next one.
 *
 * One more guard: every data file the latest snapshot holds must be where this module computes its path; if one is
 * not, the table's layout is one natslake does not understand (e.g. `data-file.path-directory`) and nothing is
 * deleted.
 */
import { join, relative, sep } from "node:path";
import { ErrorKind, isLakeError, LakeError } from "../errors.ts";
import { failpoint } from "../failpoints.ts";
import type { FileStatus } from "../io/file-io.ts";
import { deserializeBinaryRow } from "../format/binary-row.ts";
import type { ManifestEntry } from "../format/manifest.ts";
import { partitionPath } from "../format/partition.ts";
import type { Snapshot } from "../format/snapshot.ts";
import { parseSnapshotFile } from "../table/snapshot-manager.ts";
import { indexFilePath, readIndexManifest } from "../table/deletion-vectors.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { listTags } from "../table/tags.ts";

/** Where the cluster writes committables too large for one NATS message (actors/committable-store.ts). */
export const COMMITTABLE_BODIES_DIR = "natslake-committables";

export type OrphanKind = "data" | "manifest" | "committable" | "temp";
export const ORPHAN_KINDS: readonly OrphanKind[] = ["data", "manifest", "committable", "temp"];

export interface OrphanFile {
  /** Path relative to the table root. */
  path: string;
  kind: OrphanKind;
  size: number;
  mtime: number;
}

export interface RemoveOrphansOptions {
  /** Now, in epoch ms (tests pass their own clock). */
  now?: number;
  /** The age bound in ms; default: the table's `natslake.orphan-older-than` (1 day). */
  olderThanMs?: number;
  /** Report what would be deleted, delete nothing. */
  dryRun?: boolean;
  /**
   * Absolute paths of files that in-flight committables reference (asked once, at the end of the scan). The leader
   * passes the files of the committables it holds; the CLI those of the young committable bodies on disk.
   */
  inFlightFiles?: () => Promise<Iterable<string>>;
  /** Progress of the delete phase (the CLI draws a bar on a TTY). */
  onProgress?: (done: number, total: number) => void;
}

export interface RemoveOrphansResult {
  olderThanMs: number;
  /** Files modified before this (epoch ms) were old enough. */
  cutoff: number;
  dryRun: boolean;
  /** The orphans deleted by this run (or, in a dry run, that would be), sorted by path. */
  files: OrphanFile[];
  byKind: Record<OrphanKind, { files: number; bytes: number }>;
  totalFiles: number;
  totalBytes: number;
  /** Unreferenced files kept because they are younger than the bound. */
  youngKept: number;
  /** Empty partition and bucket directories removed (or that would be), relative to the root. */
  dirsRemoved: string[];
  /** Snapshots and tags whose references were read. */
  snapshotsRead: number;
  tagsRead: number;
}

/** Top-level entries of the table root that are never scanned for orphans (besides hidden ones). */
const PROTECTED_ROOT = new Set(["schema", "tag", "consumer", "branch", "changelog", "index", "statistics"]);
const TEMP_NAME = /^\..+\.tmp$/;
const MANIFEST_NAME = /^(manifest-|manifest-list-|index-manifest-)/;
const BUCKET_DIR = /^bucket-(\d+|postpone)$/;
const SNAPSHOT_NAME = /^snapshot-(\d+)$/;
/** Only these directories are removed when empty: `bucket-N`, `bucket-postpone` and partition `key=value`. */
const PARTITION_OR_BUCKET = /^(bucket-(\d+|postpone)|[^=]+=.*)$/;

/** Deletes (or, with `dryRun`, lists) the table's orphan files; see the module comment. */
export async function removeOrphans(table: Table, o: RemoveOrphansOptions = {}): Promise<RemoveOrphansResult> {
  const olderThanMs = o.olderThanMs ?? table.options.duration("natslake.orphan-older-than");
  if (!Number.isFinite(olderThanMs) || olderThanMs < 0) throw new LakeError(ErrorKind.DataInvalid, `the orphan age bound must be a non-negative duration, got ${olderThanMs} ms`);
  const cutoff = (o.now ?? Date.now()) - olderThanMs;

  // 1. List first (see the module comment for why this order is safe).
  const listed = await listCandidates(table);

  // 2. Then everything that references files.
  const refs = await collectReferences(table);
  for (const p of (await o.inFlightFiles?.()) ?? []) refs.paths.add(relative(table.root, p));
  await checkLayout(table, refs, listed.files);

  const result: RemoveOrphansResult = {
    olderThanMs,
    cutoff,
    dryRun: o.dryRun === true,
    files: [],
    byKind: { data: { files: 0, bytes: 0 }, manifest: { files: 0, bytes: 0 }, committable: { files: 0, bytes: 0 }, temp: { files: 0, bytes: 0 } },
    totalFiles: 0,
    totalBytes: 0,
    youngKept: 0,
    dirsRemoved: [],
    snapshotsRead: refs.snapshotsRead,
    tagsRead: refs.tagsRead,
  };
  const orphans: OrphanFile[] = [];
  for (const f of listed.files) {
    if (refs.paths.has(f.path)) continue;
    if (f.mtime >= cutoff) result.youngKept++;
    else orphans.push(f);
  }

  // 3. Delete. Data files first, then manifests, bodies and temp files (any order is safe: none is referenced). A
  // file gone already (deleted by a concurrent expiration, or by another cleanup) is not counted.
  orphans.sort((a, b) => ORPHAN_KINDS.indexOf(a.kind) - ORPHAN_KINDS.indexOf(b.kind) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const touchedDirs = new Set<string>(listed.emptyDirs);
  const orphansIn = new Map<string, number>();
  let done = 0;
  for (const f of orphans) {
    o.onProgress?.(++done, orphans.length);
    const dir = parentOf(f.path);
    if (listed.dataDirs.has(dir)) {
      touchedDirs.add(dir);
      orphansIn.set(dir, (orphansIn.get(dir) ?? 0) + 1);
    }
    if (!result.dryRun) {
      const deleted = await table.io.delete(join(table.root, f.path));
      failpoint("orphans.after-delete");
      if (!deleted) continue;
    }
    result.files.push(f);
    result.byKind[f.kind].files++;
    result.byKind[f.kind].bytes += f.size;
    result.totalFiles++;
    result.totalBytes += f.size;
  }
  result.files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  // 4. Empty bucket and partition directories left behind, deepest first, never the root or a metadata directory.
  result.dirsRemoved = await removeEmptyDirs(table, touchedDirs, listed, orphansIn, result.dryRun);
  return result;
}

/**
 * The absolute path of a data file of `bucket` in the partition whose BinaryRow is `partition` — for callers that
 * pass the files of in-flight committables as `inFlightFiles`.
 */
export function dataFilePathOf(table: Table, partition: Uint8Array, bucket: number, fileName: string, externalPath: string | null = null): string {
  const ppath = partitionPath(table.partitionKeys, table.partitionTypes, deserializeBinaryRow(table.partitionTypes, partition), {
    defaultName: table.options.partitionDefaultName,
    legacyName: table.options.partitionLegacyName,
  });
  return table.paths.dataFilePath(ppath, bucket, fileName, externalPath);
}

// ---------------------------------------------------------------------------------------------------------------
// Listing

interface Listing {
  files: OrphanFile[];
  /** Directories of the data tree (relative), with how many entries each had when listed. */
  dataDirs: Map<string, number>;
  /** Data-tree directories that were empty when listed. */
  emptyDirs: string[];
}

async function listCandidates(table: Table): Promise<Listing> {
  const out: Listing = { files: [], dataDirs: new Map(), emptyDirs: [] };
  const add = (dir: string, s: FileStatus, kind: OrphanKind): void => {
    out.files.push({ path: dir === "" ? s.name : `${dir}/${s.name}`, kind, size: s.size, mtime: s.mtime });
  };
  for (const s of await table.io.listStatus(join(table.root, "snapshot"))) {
    if (s.kind === "file" && TEMP_NAME.test(s.name)) add("snapshot", s, "temp");
  }
  for (const s of await table.io.listStatus(table.paths.manifestDir)) {
    if (s.kind !== "file") continue;
    if (TEMP_NAME.test(s.name)) add("manifest", s, "temp");
    else if (MANIFEST_NAME.test(s.name)) add("manifest", s, "manifest");
  }
  for (const s of await table.io.listStatus(join(table.root, COMMITTABLE_BODIES_DIR))) {
    if (s.kind === "file") add(COMMITTABLE_BODIES_DIR, s, TEMP_NAME.test(s.name) ? "temp" : "committable");
  }
  // The data tree: partition directories down to bucket directories (or bucket directories at the root).
  const walk = async (dir: string, depth: number): Promise<void> => {
    const entries = await table.io.listStatus(dir === "" ? table.root : join(table.root, dir));
    if (dir !== "") {
      out.dataDirs.set(dir, entries.length);
      if (entries.length === 0) out.emptyDirs.push(dir);
    }
    const inBucket = dir !== "" && BUCKET_DIR.test(baseOf(dir));
    for (const s of entries) {
      if (s.kind === "directory") {
        if (depth === 0 && (PROTECTED_ROOT.has(s.name) || s.name === "snapshot" || s.name === "manifest" || s.name === COMMITTABLE_BODIES_DIR)) continue;
        if (s.name.startsWith(".")) continue;
        await walk(dir === "" ? s.name : `${dir}/${s.name}`, depth + 1);
      } else if (s.kind === "file" && inBucket) {
        add(dir, s, TEMP_NAME.test(s.name) ? "temp" : "data");
      }
    }
  };
  await walk("", 0);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// References

interface References {
  /** Referenced files, relative to the table root. */
  paths: Set<string>;
  /** The latest snapshot, for the layout check. */
  latest: Snapshot | null;
  snapshotsRead: number;
  tagsRead: number;
}

async function collectReferences(table: Table): Promise<References> {
  const store = new ManifestStore(table);
  const refs: References = { paths: new Set(), latest: null, snapshotsRead: 0, tagsRead: 0 };
  const manifestsDone = new Set<string>();
  const partitionDirs = new Map<string, string>();

  const addEntry = (e: ManifestEntry): void => {
    if (e.file.externalPath) return; // outside the table directory: never listed, never deleted
    for (const p of entryPaths(e)) refs.paths.add(p);
  };
  const entryPaths = (e: ManifestEntry): string[] => {
    const hex = Buffer.from(e.partition).toString("hex");
    let ppath = partitionDirs.get(hex);
    if (ppath === undefined) {
      ppath = partitionPath(table.partitionKeys, table.partitionTypes, deserializeBinaryRow(table.partitionTypes, e.partition), {
        defaultName: table.options.partitionDefaultName,
        legacyName: table.options.partitionLegacyName,
      });
      partitionDirs.set(hex, ppath);
    }
    const dir = relative(table.root, table.paths.bucketDir(ppath, e.bucket)).split(sep).join("/");
    return [`${dir}/${e.file.fileName}`, ...e.file.extraFiles.map((x) => `${dir}/${x}`)];
  };

  /**
   * The files one snapshot (or tag, changelog) references. `strict`: a missing manifest is an error (the latest
   * snapshot, tags, branches); otherwise it is what a concurrent or interrupted expiration leaves, and skipped.
   */
  const addSnapshot = async (s: Snapshot, what: string, strict: boolean): Promise<void> => {
    // A changelog list may be missing whatever holds it: Java's expiration deletes a snapshot's changelog with it,
    // also when a tag holds the snapshot (the tag then names a list that is gone).
    const lists: Array<[string, boolean]> = [
      [s.baseManifestList, strict],
      [s.deltaManifestList, strict],
    ];
    if (s.changelogManifestList) lists.push([s.changelogManifestList, false]);
    if (s.indexManifest) {
      refs.paths.add(`manifest/${s.indexManifest}`);
      if (!manifestsDone.has(s.indexManifest)) {
        manifestsDone.add(s.indexManifest);
        const entries = await readOrMissing(readIndexManifest(table, s), `${what}: index manifest ${s.indexManifest}`, strict);
        for (const e of entries ?? []) if (e.indexFile.externalPath === null) refs.paths.add(relative(table.root, indexFilePath(table, e)).split(sep).join("/"));
      }
    }
    for (const [list, mustExist] of lists) {
      refs.paths.add(`manifest/${list}`);
      if (manifestsDone.has(list)) continue;
      manifestsDone.add(list);
      const metas = await readOrMissing(store.readManifestList(list), `${what}: manifest list ${list}`, mustExist);
      for (const m of metas ?? []) {
        refs.paths.add(`manifest/${m.fileName}`);
        if (manifestsDone.has(m.fileName)) continue;
        manifestsDone.add(m.fileName);
        const entries = await readOrMissing(store.readManifest(m.fileName), `${what}: manifest ${m.fileName}`, mustExist);
        for (const e of entries ?? []) addEntry(e);
      }
    }
  };

  // Main branch: every snapshot on disk, until a re-listing shows none that was not read.
  await readSnapshots(table.io, join(table.root, "snapshot"), async (s, isLatest) => {
    refs.snapshotsRead++;
    if (isLatest) refs.latest = s;
    await addSnapshot(s, `snapshot ${s.id}`, isLatest);
  });
  for (const t of await listTags(table)) {
    refs.tagsRead++;
    await addSnapshot(t.snapshot, `tag ${t.name}`, true);
  }
  // Decoupled changelogs name manifest lists as snapshots do.
  for (const s of await table.io.listStatus(join(table.root, "changelog"))) {
    if (s.kind !== "file" || !/^changelog-\d+$/.test(s.name)) continue;
    const c = await readJsonSnapshot(table.io, join(table.root, "changelog", s.name));
    if (c !== null) await addSnapshot(c, `changelog ${s.name}`, false);
  }
  // Branches: their own snapshot/ and tag/, over the shared manifests and data files.
  for (const b of await table.io.listStatus(join(table.root, "branch"))) {
    if (b.kind !== "directory" || !b.name.startsWith("branch-")) continue;
    const root = join(table.root, "branch", b.name);
    await readSnapshots(table.io, join(root, "snapshot"), async (s) => {
      refs.snapshotsRead++;
      await addSnapshot(s, `${b.name} snapshot ${s.id}`, true);
    });
    for (const t of await table.io.listStatus(join(root, "tag"))) {
      if (t.kind !== "file" || !t.name.startsWith("tag-")) continue;
      const s = await readJsonSnapshot(table.io, join(root, "tag", t.name));
      if (s === null) continue;
      refs.tagsRead++;
      await addSnapshot(s, `${b.name} tag ${t.name}`, true);
    }
  }
  return refs;
}

/**
 * Reads every `snapshot-N` of a snapshot directory, then lists the directory again and reads the ones that appeared
 * meanwhile, until none did. A snapshot that disappears before it is read (expiration) is skipped. `isLatest` is
 * true for the newest snapshot of the final listing. Returns that id (null: no snapshot).
 */
async function readSnapshots(io: Table["io"], dir: string, visit: (s: Snapshot, isLatest: boolean) => Promise<void>): Promise<number | null> {
  const done = new Set<number>();
  for (;;) {
    const ids = (await io.list(dir)).flatMap((n) => {
      const m = SNAPSHOT_NAME.exec(n);
      return m ? [Number(m[1])] : [];
    });
    const fresh = ids.filter((id) => !done.has(id)).sort((a, b) => a - b);
    if (fresh.length === 0) return ids.length === 0 ? null : Math.max(...ids);
    const newest = Math.max(...ids);
    for (const id of fresh) {
      done.add(id);
      const s = await readJsonSnapshot(io, join(dir, `snapshot-${id}`));
      if (s !== null) await visit(s, id === newest);
    }
  }
}

/** A snapshot-shaped JSON file (snapshot, tag, changelog), or null when it is gone. */
async function readJsonSnapshot(io: Table["io"], path: string): Promise<Snapshot | null> {
  let text: string;
  try {
    text = await io.readText(path);
  } catch (e) {
    if (isLakeError(e, ErrorKind.NotFound)) return null;
    throw e;
  }
  const m = /snapshot-(\d+)$/.exec(path);
  return parseSnapshotFile(path, text, m !== null ? Number(m[1]) : undefined, io.uriOf(path));
}

async function readOrMissing<T>(read: Promise<T>, what: string, strict: boolean): Promise<T | null> {
  try {
    return await read;
  } catch (e) {
    if (!isLakeError(e, ErrorKind.NotFound)) throw e;
    if (strict) throw new LakeError(ErrorKind.DataInvalid, `${what} is missing: the table is damaged; remove-orphans deleted nothing`, { cause: e });
    return null;
  }
}

/** Every live data file of the latest snapshot must be where its path was computed (listed, or written since). */
async function checkLayout(table: Table, refs: References, listed: OrphanFile[]): Promise<void> {
  if (refs.latest === null) return;
  const seen = new Set(listed.map((f) => f.path));
  for (const e of await new ManifestStore(table).readLiveEntries(refs.latest)) {
    if (e.file.externalPath) continue;
    const p = relative(table.root, dataFilePathOf(table, e.partition, e.bucket, e.file.fileName)).split(sep).join("/");
    if (seen.has(p) || (await table.io.isFile(join(table.root, p)))) continue;
    throw new LakeError(
      ErrorKind.DataInvalid,
      `the latest snapshot's data file ${p} is not where natslake expects it (a table layout natslake does not understand, or a damaged table); remove-orphans deleted nothing`,
    );
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Empty directories

/**
 * Removes the data-tree directories among `dirs` that are empty, then their parents when that leaves them empty. A
 * dry run counts instead: a directory would be empty when every entry listed in it is an orphan or a directory that
 * would go. Removing only empty directories is safe beside a writer: one that just made a bucket directory and
 * finds it gone makes it again (LocalFileIO retries the create after `mkdirs`).
 */
async function removeEmptyDirs(table: Table, dirs: Set<string>, listed: Listing, orphansIn: Map<string, number>, dryRun: boolean): Promise<string[]> {
  const removed: string[] = [];
  const gone = new Set<string>();
  const goneIn = new Map<string, number>();
  const deepestFirst = (a: string, b: string): number => b.split("/").length - a.split("/").length || (a < b ? -1 : a > b ? 1 : 0);
  const queue = [...dirs].sort(deepestFirst);
  while (queue.length > 0) {
    const dir = queue.shift()!;
    if (dir === "" || gone.has(dir) || !listed.dataDirs.has(dir) || !PARTITION_OR_BUCKET.test(baseOf(dir))) continue;
    const empty = dryRun ? listed.dataDirs.get(dir)! <= (orphansIn.get(dir) ?? 0) + (goneIn.get(dir) ?? 0) : await table.io.deleteEmptyDir(join(table.root, dir));
    if (!empty) continue;
    gone.add(dir);
    removed.push(dir);
    const parent = parentOf(dir);
    if (parent === "") continue;
    goneIn.set(parent, (goneIn.get(parent) ?? 0) + 1);
    queue.push(parent);
    queue.sort(deepestFirst);
  }
  return removed.sort();
}

const parentOf = (p: string): string => (p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "");
const baseOf = (p: string): string => (p.includes("/") ? p.slice(p.lastIndexOf("/") + 1) : p);
