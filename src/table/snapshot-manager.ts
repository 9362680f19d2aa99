/**
 * SnapshotManager owns `snapshot/`: finds the latest and earliest snapshots (hints checked against the directory,
 * as Java's HintFileUtils does), reads snapshots by id or time, and creates `snapshot-N` exactly once.
 */
import { ErrorKind, isLakeError, LakeError } from "../errors.ts";
import { failpoint } from "../failpoints.ts";
import type { FileIO } from "../io/file-io.ts";
import type { PathFactory } from "../io/paths.ts";
import { type Snapshot, snapshotFromJson, snapshotToJson } from "../format/snapshot.ts";
import { parseJson, stringifyJson } from "../format/wire/json.ts";
import { damagedFile } from "./damaged-file.ts";

const SNAPSHOT_NAME = /^snapshot-(\d+)$/;
/** How far a stale LATEST hint is followed forward before the snapshot directory is listed instead. */
const HINT_WALK_LIMIT = 16;

/**
 * A snapshot file that exists but cannot be read as one (a damaged disk, a hand edit): a DataInvalid error that says
 * so and how to recover, with `context.damaged` set (rollback skips such snapshots after its target).
 */
function damagedSnapshot(path: string, id: number | undefined, why: string, cause: unknown, uri: string): LakeError {
  const hint = id !== undefined ? `roll the table back to the last good snapshot (natslake rollback <table> --to-snapshot ${id - 1} --force)` : "delete it if it is a tag";
  return damagedFile("snapshot", path, why, `restore the file from a backup, or ${hint}`, { cause, uri, ...(id !== undefined ? { context: { snapshot: id } } : {}) });
}

/**
 * Parses a snapshot-shaped file (`snapshot-N`, a tag); a file that does not parse is a damaged-snapshot error naming
 * it as `uri` (FileIO.uriOf, default `path`).
 */
export function parseSnapshotFile(path: string, text: string, id?: number, uri = path): Snapshot {
  let s: Snapshot;
  try {
    s = snapshotFromJson(parseJson(text));
  } catch (e) {
    throw damagedSnapshot(path, id, e instanceof Error ? e.message : String(e), e, uri);
  }
  if (id !== undefined && s.id !== id) throw damagedSnapshot(path, id, `it holds snapshot id ${s.id}`, undefined, uri);
  return s;
}

/** Whether `e` is the error of a damaged snapshot file (see damagedSnapshot). */
export const isDamagedSnapshot = (e: unknown): boolean => isLakeError(e, ErrorKind.DataInvalid) && e.context["damaged"] === true && e.context["file"] === "snapshot";

export class SnapshotManager {
  /** Snapshots never change once created, so a cache by id is always valid (expiration only removes). */
  private readonly cache = new Map<number, Snapshot>();
  /** Reads in flight, by id: concurrent readers of one new snapshot (a reader's consume sessions) read it once. */
  private readonly reading = new Map<number, Promise<Snapshot>>();
  /** The newest snapshot this handle committed or found as the latest: where `latestId` looks first. */
  private knownLatest: number | null = null;

  constructor(
    private readonly io: FileIO,
    private readonly paths: PathFactory,
  ) {}

  async snapshotExists(id: number): Promise<boolean> {
    return this.cache.has(id) || (await this.io.isFile(this.paths.snapshotPath(id)));
  }

  async snapshot(id: number): Promise<Snapshot> {
    const hit = this.cache.get(id);
    if (hit) return hit;
    let pending = this.reading.get(id);
    if (pending === undefined) {
      pending = this.read(id).finally(() => this.reading.delete(id));
      this.reading.set(id, pending);
    }
    return pending;
  }

  private async read(id: number): Promise<Snapshot> {
    let text: string;
    try {
      text = await this.io.readText(this.paths.snapshotPath(id), { metadata: true });
    } catch (e) {
      if (isLakeError(e, ErrorKind.NotFound)) throw new LakeError(ErrorKind.NotFound, `snapshot ${id} does not exist`, { cause: e });
      throw e;
    }
    const path = this.paths.snapshotPath(id);
    const s = parseSnapshotFile(path, text, id, this.io.uriOf(path));
    this.remember(s);
    return s;
  }

  /** Snapshot `id`, or null when its file is damaged (see parseSnapshotFile); a missing one is NotFound as in `snapshot`. */
  async snapshotOrDamaged(id: number): Promise<Snapshot | null> {
    try {
      return await this.snapshot(id);
    } catch (e) {
      if (isDamagedSnapshot(e)) return null;
      throw e;
    }
  }

  /** Ids of all snapshots on disk, ascending. */
  async listIds(): Promise<number[]> {
    const ids: number[] = [];
    for (const name of await this.io.list(this.paths.snapshotDir)) {
      const m = SNAPSHOT_NAME.exec(name);
      if (m) ids.push(Number(m[1]));
    }
    return ids.sort((a, b) => a - b);
  }

  /**
   * The hint, checked: `snapshot-<hint>` exists and `snapshot-<hint+1>` does not. A hint a few snapshots behind (its
   * best-effort write lost, or read before the committer rewrote it) is walked forward one existence check at a
   * time; only a missing or far-off hint costs a listing — so committers never list `snapshot/` (on an object store
   * a LIST per commit would grow with the table).
   */
  async latestId(): Promise<number | null> {
    const found = await this.findLatestId();
    if (found !== null) this.knownLatest = found;
    return found;
  }

  private async findLatestId(): Promise<number | null> {
    // The snapshot this handle knows as the latest (a committer's own last commit, most often), when no next one
    // exists: one existence check instead of reading the hint and two — the leader asks before every commit, and on
    // a busy node every file-system call waits for a thread-pool turn. (Snapshots are never removed from the top:
    // expiration keeps the newest, and a rollback through the cluster is a new snapshot.) Otherwise the hint.
    const known = this.knownLatest;
    if (known !== null && this.cache.has(known) && !(await this.snapshotExists(known + 1))) return known;
    const hint = await this.readHint("LATEST");
    // The hinted snapshot and the next one are checked at once (one round trip on an object store): the usual answer.
    const [here, next] = hint === null ? [false, true] : await Promise.all([this.snapshotExists(hint), this.snapshotExists(hint + 1)]);
    if (hint !== null && here) {
      if (!next) return hint;
      for (let id = hint + 1, steps = 1; steps < HINT_WALK_LIMIT; id++, steps++) {
        if (!(await this.snapshotExists(id + 1))) return id;
      }
    }
    const ids = await this.listIds();
    return ids.length === 0 ? null : ids[ids.length - 1]!;
  }

  async earliestId(): Promise<number | null> {
    const hint = await this.readHint("EARLIEST");
    if (hint !== null && (await this.snapshotExists(hint)) && !(await this.snapshotExists(hint - 1))) return hint;
    // Ids start at 1, so while snapshot-1 is there it is the earliest: a table nothing was expired from has no
    // EARLIEST hint, and the leader's expiration asks after every commit — one existence check instead of a listing
    // that grows with the table. (Not the cache: a snapshot expired by this process may still be in it.)
    if (await this.io.isFile(this.paths.snapshotPath(1))) return 1;
    const ids = await this.listIds();
    return ids.length === 0 ? null : ids[0]!;
  }

  async latest(): Promise<Snapshot | null> {
    const id = await this.latestId();
    return id === null ? null : this.snapshot(id);
  }

  /** The newest snapshot committed at or before `timeMillis`, or null when every snapshot is newer. */
  async atOrBefore(timeMillis: number): Promise<Snapshot | null> {
    const ids = await this.listIds();
    let lo = 0;
    let hi = ids.length - 1;
    let found: Snapshot | null = null;
    // Commit times grow with ids (each commit reads the previous snapshot first), so binary search is valid.
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = await this.snapshot(ids[mid]!);
      if (s.timeMillis <= timeMillis) {
        found = s;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /**
   * Creates `snapshot-N` if and only if it does not exist yet. Returns false when another committer created it
   * first. The LATEST hint is written afterwards and is best-effort: readers verify it.
   */
  async tryCommit(snapshot: Snapshot): Promise<boolean> {
    const path = this.paths.snapshotPath(snapshot.id);
    failpoint("commit.before-snapshot");
    const created = await this.io.createExclusive(path, stringifyJson(snapshotToJson(snapshot)));
    if (!created) return false;
    this.remember(snapshot);
    this.knownLatest = Math.max(this.knownLatest ?? 0, snapshot.id);
    failpoint("commit.after-snapshot");
    try {
      // A hint: readers check it against the directory, so it needs no fsync.
      await this.io.writeFile(`${this.paths.snapshotDir}/LATEST`, String(snapshot.id), { durable: false, syncDir: false });
    } catch {
      // A stale hint is corrected by readers (they check snapshot-(N+1)); the commit itself has succeeded.
    }
    return true;
  }

  /** Forgets what this handle knew of snapshots after `id` (a rollback removed them). */
  forgetAfter(id: number): void {
    for (const k of [...this.cache.keys()]) if (k > id) this.cache.delete(k);
    if (this.knownLatest !== null && this.knownLatest > id) this.knownLatest = null;
  }

  /** Forgets what this handle knew of snapshots before `id` (expiration removed them). */
  forgetBefore(id: number): void {
    for (const k of [...this.cache.keys()]) if (k < id) this.cache.delete(k);
  }

  /** Caches a snapshot; bounded, because a long-running committer sees every snapshot of the table. */
  private remember(s: Snapshot): void {
    if (this.cache.size >= 1024) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(s.id, s);
  }

  async writeEarliestHint(id: number): Promise<void> {
    await this.io.writeFile(`${this.paths.snapshotDir}/EARLIEST`, String(id));
  }

  private async readHint(name: "LATEST" | "EARLIEST"): Promise<number | null> {
    try {
      const text = (await this.io.readText(`${this.paths.snapshotDir}/${name}`, { metadata: true })).trim();
      return /^\d+$/.test(text) ? Number(text) : null;
    } catch {
      return null;
    }
  }
}
