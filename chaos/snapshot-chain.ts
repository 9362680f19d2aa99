/**
 * The verifier's walk of a table's snapshot chain (invariant I3), whatever the workload wrote: snapshot ids
 * contiguous from the earliest one on disk, every snapshot parses and carries natslake's state, `natslake.epoch`
 * non-decreasing, per bucket the offset and owner epoch never going back; every retained snapshot reads whole — its
 * manifest lists, manifests and every data file it reads (also those added by snapshots expired since) exist, each
 * data file read back with pyarrow (chaos/py/check_files.py, not natslake's Parquet code) with the size and row
 * count its manifest entry declares, and the values of one column the workload's own checks look at.
 *
 * Snapshots below the retained ones — the range an expiration killed by the final stop was removing — may read
 * deleted files: reported, not failed.
 */
import { statSync } from "node:fs";
import { FileKind } from "../src/format/manifest.ts";
import { CommitKind, natslakeState, type Snapshot } from "../src/format/snapshot.ts";
import { expirableRange } from "../src/maintenance/expire-snapshots.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import { runPython } from "../test/helpers/python.ts";
import type { InvariantResult } from "./types.ts";

const CHECK_FILES_PY = new URL("./py/check_files.py", import.meta.url).pathname;
const SAMPLE = 10;

/** Appends `v` while `arr` holds fewer than SAMPLE items: the verifier's examples. */
export function pushSample<T>(arr: T[], v: T): void {
  if (arr.length < SAMPLE) arr.push(v);
}

export interface SnapInfo {
  id: number;
  /**
   * When the snapshot was linked: its file's mtime (the kernel's clock, which a clock-skew nemesis does not shift);
   * the snapshot's own `timeMillis` (the committing leader's wall clock, skewed or not) when the file cannot be stat'ed.
   */
  timeMillis: number;
  epoch: number;
  offsets: Map<number, number>;
}

/** A data file as a snapshot added it; `compacted`: added by a COMPACT snapshot (rows of earlier snapshots). */
export interface AddedFile {
  snap: number;
  bucket: number;
  path: string;
  rowCount: number;
  fileSize: number;
  compacted: boolean;
}

/** pyarrow's reading of a data file: footer row count, size and the values of the column asked for. */
export type FileCheck = { ok: true; rows: number; size: number; ids: Array<number | string> } | { ok: false; error: string };

export interface ChainWalk {
  /** Snapshot ids on disk, oldest first. */
  ids: number[];
  /** The earliest snapshot on disk (1 when none). */
  first: number;
  /** The first snapshot the retention options keep at the stop: from it on, every snapshot must read whole. */
  retainedFrom: number;
  latest: Snapshot | null;
  snaps: SnapInfo[];
  added: AddedFile[];
  /** Files retained snapshots read that no snapshot on disk added (added by snapshots expired since). */
  inherited: Array<[string, { newest: number; rowCount: number; fileSize: number }]>;
  /** Every data file a snapshot on disk reads, and the newest snapshot reading it. */
  readBy: Map<string, { newest: number; rowCount: number; fileSize: number }>;
  referencedManifests: Set<string>;
  /** Every file added or read, as pyarrow read it. */
  files: Map<string, FileCheck>;
  /** What breaks I3 so far (a workload's own checks add theirs); at most a few examples per kind. */
  problems: string[];
  /** Snapshots below the retained ones that read a missing file or manifest: tolerated, reported. */
  expiring: Set<number>;
  /** Records a missing manifest or file read by snapshot `sid`: tolerated below the retained ones, else a problem. */
  missing(sid: number, problem: string): void;
}

/** Reads every data file with pyarrow: footer row count, size and the values of `column`. */
async function checkFiles(paths: string[], column: string): Promise<Map<string, FileCheck>> {
  const out = new Map<string, FileCheck>();
  for (let i = 0; i < paths.length; i += 2000) {
    const chunk = paths.slice(i, i + 2000);
    const text = await runPython(CHECK_FILES_PY, [], { input: JSON.stringify(chunk.map((path) => ({ path, column }))), timeoutMs: 300_000 });
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      const r = JSON.parse(line) as { path: string; ok: boolean; rows?: number; size?: number; ids?: Array<number | string>; error?: string };
      out.set(r.path, r.ok ? { ok: true, rows: r.rows!, size: r.size!, ids: r.ids! } : { ok: false, error: r.error ?? "unreadable" });
    }
  }
  return out;
}

/**
 * Walks every snapshot of `table` on disk and reads every data file they add or read with pyarrow (the values of
 * `column` come back in `files`). `stoppedAt`: when every node was stopped, where the retention options put the
 * retained snapshots.
 */
export async function walkSnapshotChain(table: Table, opts: { stoppedAt?: number; column: string }): Promise<ChainWalk> {
  const store = new ManifestStore(table);
  const problems: string[] = [];
  const ids = await table.snapshots.listIds();
  /**
   * Snapshot expiration deletes an expired range's data files, then its manifests, then its snapshot files (Paimon's
   * order): a leader killed midway — by a fault, or by the final stop of every node — leaves snapshots of that range
   * on disk that read deleted files, until the next run removes them. Those are the oldest snapshots, below the first
   * one the retention options keep at the stop (the range can only grow with time and commits); a snapshot from that
   * one on — a retained snapshot — must read whole.
   */
  const retainedFrom = (await expirableRange(table, { now: opts.stoppedAt ?? Date.now(), dryRun: true })).end;
  const expiring = new Set<number>();
  const missing = (sid: number, problem: string): void => {
    if (sid < retainedFrom) expiring.add(sid);
    else pushSample(problems, problem);
  };
  const snaps: SnapInfo[] = [];
  const added: AddedFile[] = [];
  const referencedManifests = new Set<string>();
  const readBy = new Map<string, { newest: number; rowCount: number; fileSize: number }>();
  let latest: Snapshot | null = null;
  // Contiguous from the earliest snapshot on disk: the leader expires old snapshots (a long soak outlives the
  // cluster tables' retention), and expiration removes them oldest first.
  const first = ids[0] ?? 1;
  ids.forEach((x, i) => {
    if (x !== first + i) pushSample(problems, `snapshot ids are not contiguous from ${first}: ${ids.slice(Math.max(0, i - 1), i + 2).join(", ")}`);
  });
  let prevEpoch = 0;
  const prevOffsets = new Map<number, number>();
  const prevOwners = new Map<number, number>();
  for (const sid of ids) {
    let s: Snapshot;
    try {
      s = await table.snapshots.snapshot(sid);
    } catch (e) {
      pushSample(problems, `snapshot ${sid} does not parse: ${(e as Error).message}`);
      continue;
    }
    latest = s;
    const st = natslakeState(s);
    if (st === null) {
      pushSample(problems, `snapshot ${sid} carries no natslake state`);
      continue;
    }
    if (st.epoch < prevEpoch) pushSample(problems, `snapshot ${sid}: epoch ${st.epoch} after ${prevEpoch}`);
    prevEpoch = st.epoch;
    const offsets = new Map<number, number>();
    for (const [b, p] of st.buckets) {
      const off = Number(p.offset);
      if (off < (prevOffsets.get(b) ?? 0)) pushSample(problems, `snapshot ${sid} bucket ${b}: offset ${off} after ${prevOffsets.get(b)}`);
      if (p.ownerEpoch < (prevOwners.get(b) ?? 0)) pushSample(problems, `snapshot ${sid} bucket ${b}: owner epoch ${p.ownerEpoch} after ${prevOwners.get(b)}`);
      prevOwners.set(b, p.ownerEpoch);
      offsets.set(b, off);
    }
    let linkedAt = s.timeMillis;
    try {
      linkedAt = statSync(table.paths.snapshotPath(sid)).mtimeMs;
    } catch {
      // keep the snapshot's own time
    }
    snaps.push({ id: sid, timeMillis: linkedAt, epoch: st.epoch, offsets });
    for (const [b, off] of offsets) prevOffsets.set(b, off);
    try {
      referencedManifests.add(s.baseManifestList);
      referencedManifests.add(s.deltaManifestList);
      const metas = await store.allManifests(s);
      for (const m of metas) referencedManifests.add(m.fileName);
      for (const e of await store.readLiveEntries(s)) {
        const path = table.paths.dataFilePath("", e.bucket, e.file.fileName, e.file.externalPath);
        readBy.set(path, { newest: sid, rowCount: e.file.rowCount, fileSize: e.file.fileSize });
      }
      for (const e of await store.readDeltaEntries(s)) {
        if (e.kind !== FileKind.ADD) continue;
        added.push({ snap: sid, bucket: e.bucket, path: table.paths.dataFilePath("", e.bucket, e.file.fileName, e.file.externalPath), rowCount: e.file.rowCount, fileSize: e.file.fileSize, compacted: s.commitKind === CommitKind.COMPACT });
      }
    } catch (e) {
      missing(sid, `snapshot ${sid}: a manifest list or manifest is missing or unreadable: ${(e as Error).message}`);
    }
  }
  const addedPaths = new Set(added.map((a) => a.path));
  const inherited = [...readBy].filter(([path]) => !addedPaths.has(path));
  const files = await checkFiles([...addedPaths, ...inherited.map(([path]) => path)], opts.column);
  for (const [path, r] of inherited) {
    const f = files.get(path);
    if (!f || !f.ok) missing(r.newest, `snapshot ${r.newest} reads ${path} (added by an expired snapshot): ${f && !f.ok ? f.error : "not checked"}`);
    else if (f.rows !== r.rowCount || f.size !== r.fileSize) pushSample(problems, `${path}: ${f.rows} rows and ${f.size} bytes, the manifest says ${r.rowCount} and ${r.fileSize}`);
  }
  for (const a of added) {
    const f = files.get(a.path);
    if (!f || !f.ok) {
      // Gone: fine only when no snapshot from the retained ones on reads it (a compaction's input, expired).
      missing(readBy.get(a.path)?.newest ?? a.snap, `snapshot ${a.snap} references ${a.path}: ${f && !f.ok ? f.error : "not checked"}`);
      continue;
    }
    if (f.rows !== a.rowCount) pushSample(problems, `${a.path}: ${f.rows} rows, the manifest says ${a.rowCount}`);
    if (f.size !== a.fileSize) pushSample(problems, `${a.path}: ${f.size} bytes, the manifest says ${a.fileSize}`);
  }
  return { ids, first, retainedFrom, latest, snaps, added, inherited, readBy, referencedManifests, files, problems, expiring, missing };
}

/** I3 from the walk and the workload's own checks (already in `problems`); `alsoChecked` ends the passing detail. */
export function chainInvariant(w: ChainWalk, alsoChecked: string): InvariantResult {
  const expiringNote =
    w.expiring.size === 0
      ? ""
      : `; ${w.expiring.size} snapshots below the retained ones (${Math.min(...w.expiring)}..${Math.max(...w.expiring)} of ${w.first}..${w.retainedFrom - 1}) read deleted files: an expiration interrupted by the stop, which the next run finishes`;
  return {
    ok: w.problems.length === 0,
    detail:
      w.problems.length === 0
        ? `${w.ids.length} snapshots contiguous, epochs and offsets monotonic; every retained one (from ${Math.max(w.first, w.retainedFrom)}) reads whole: manifest lists, manifests and ${w.added.length + w.inherited.length} data files present with their declared size and rows${w.inherited.length > 0 ? ` (${w.inherited.length} of them added by expired snapshots)` : ""}${alsoChecked}${expiringNote}`
        : w.problems.join("; ") + expiringNote,
  };
}
