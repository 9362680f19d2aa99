/**
 * ManifestStore owns `manifest/`: reads manifest lists and manifests (cached: they never change once written),
 * materialises a snapshot's live file set (ADD/DELETE merge, as Java's FileEntry.mergeEntries), writes new
 * manifests and lists, and merges small manifests so the list does not grow by one per commit.
 */
import type { Snapshot } from "../format/snapshot.ts";
import { EMPTY_STATS, EntryMerger, FileKind, fileIdentifier, type ManifestEntry, type ManifestFileMeta, mergeEntries, type SimpleStats } from "../format/manifest.ts";
import { decodeManifest, decodeManifestList, encodeManifest, encodeManifestList } from "../format/wire/manifest-avro.ts";
import { deserializeBinaryRow, serializeBinaryRow } from "../format/binary-row.ts";
import { compareValues } from "../codec/stats.ts";
import type { Value } from "../format/values.ts";
import type { Table } from "./table.ts";
import { readTableFile } from "./damaged-file.ts";

/** Manifests at or above this size are "full" and left alone by the small-manifest merge. */
const DEFAULT_TARGET_SIZE = 8 * 1024 * 1024;

/**
 * Decoded manifests and manifest lists of one table, by file name (they never change once written), bounded: what
 * ManifestStores given the same cache decode once between them.
 */
export class ManifestCache {
  readonly lists = new Map<string, ManifestFileMeta[]>();
  readonly manifests = new Map<string, ManifestEntry[]>();
}

const sharedCaches = new WeakMap<Table, ManifestCache>();

/**
 * The decode cache shared by the ManifestStores of `table` (this table object) that ask for it. A node's services of
 * a table — its committers, its buckets' compactors, snapshot expiration and the table's gauges — each read every new
 * snapshot's lists and manifests; with a cache each, the leader's node decoded each file once per reader (with
 * maintenance on at 10k rows/s, ~1 CPU s a minute: its compactors' share, as much as the other node's all), and
 * the committers decoded what the other had written.
 * Their live-file states stay their own (each reads its own chain of snapshots: see `readLiveEntries`).
 */
export function sharedManifestCache(table: Table): ManifestCache {
  let cache = sharedCaches.get(table);
  if (cache === undefined) sharedCaches.set(table, (cache = new ManifestCache()));
  return cache;
}

export class ManifestStore {
  private readonly listCache: Map<string, ManifestFileMeta[]>;
  private readonly manifestCache: Map<string, ManifestEntry[]>;

  /** `cache`: decoded files shared with other stores of the table (default: this store's own). */
  constructor(
    readonly table: Table,
    cache: ManifestCache = new ManifestCache(),
  ) {
    this.listCache = cache.lists;
    this.manifestCache = cache.manifests;
  }

  async readManifestList(name: string): Promise<ManifestFileMeta[]> {
    const hit = recall(this.listCache, name);
    if (hit) return hit;
    const metas = await this.readMetadataFile("manifest-list", name, decodeManifestList);
    remember(this.listCache, name, metas);
    return metas;
  }

  async readManifest(name: string): Promise<ManifestEntry[]> {
    const hit = recall(this.manifestCache, name);
    if (hit) return hit;
    const entries = await this.readMetadataFile("manifest", name, decodeManifest);
    remember(this.manifestCache, name, entries);
    return entries;
  }

  /** A manifest or list, decoded; one that is missing or does not decode is an error naming it (damaged-file.ts). */
  private readMetadataFile<T>(kind: "manifest" | "manifest-list", name: string, decode: (bytes: Uint8Array) => T): Promise<T> {
    const path = this.table.paths.manifestPath(name);
    const remedy = `restore the file from a backup, or roll ${this.table.name} back to a snapshot that does not use it (natslake doctor ${this.table.name} lists the snapshots that do)`;
    return readTableFile(kind, path, () => this.table.io.readFile(path, { metadata: true }), (bytes) => decode(bytes as Uint8Array), remedy, this.table.io.uriOf(path));
  }

  /** The manifests of the snapshot `checkReadable` checked last: known to decode. */
  private checkedManifests = new Set<string>();

  /**
   * Decodes every manifest of a snapshot that the snapshot checked before did not have (the next snapshot's are the
   * same but for its delta and merged ones, mostly this store's own, cached): throws the error of the first that is
   * missing or damaged. A committer checks the snapshot it builds on with it — carrying an unreadable manifest into
   * the next snapshot's base list would make that one unreadable too.
   */
  async checkReadable(s: Snapshot): Promise<void> {
    const metas = await this.allManifests(s);
    await this.readEntries(metas.filter((m) => !this.checkedManifests.has(m.fileName)));
    this.checkedManifests = new Set(metas.map((m) => m.fileName));
  }

  /** All manifests of a snapshot: base then delta, in that order (order matters for ADD/DELETE merging). */
  async allManifests(s: Snapshot): Promise<ManifestFileMeta[]> {
    return [...(await this.readManifestList(s.baseManifestList)), ...(await this.readManifestList(s.deltaManifestList))];
  }

  async readEntries(metas: ManifestFileMeta[]): Promise<ManifestEntry[]> {
    const lists = await Promise.all(metas.map((m) => this.readManifest(m.fileName)));
    return lists.flat();
  }

  /**
   * The merge of the manifests materialised last, to go on from (see `readLiveEntries`); null while none, or while
   * a step of it failed.
   */
  private lastLive: { manifests: readonly string[]; merger: EntryMerger; entries: readonly ManifestEntry[] } | null = null;

  /** How `readLiveEntries` answered: from the last state as it was, going on from it, or merging every manifest. */
  readonly liveReads = { same: 0, incremental: 0, full: 0 };

  /**
   * Live (ADD) entries of a snapshot (the same array to every caller of one snapshot: do not change it).
   *
   * Incremental: a snapshot's manifests (base list, then delta list) are the previous snapshot's followed by its new
   * delta manifest, except when the commit merged manifests. So when the manifests materialised last are a prefix of
   * this snapshot's, only the rest is read and merged into that state — at 10 commits a second, a writer's bucket
   * compactors (each planning every commit interval) and the committer (checking a compaction's inputs are live)
   * identified every entry of the table's manifests at every call: ~8 % of a writer node's main thread in issue 11's
   * profile. Manifests never change once written, so a prefix by name is a prefix by content.
   */
  async readLiveEntries(s: Snapshot): Promise<readonly ManifestEntry[]> {
    const metas = await this.allManifests(s);
    const names = metas.map((m) => m.fileName);
    for (let attempt = 0; ; attempt++) {
      const last = this.lastLive;
      const from = last !== null && isPrefix(last.manifests, names) ? last.manifests.length : 0;
      if (from === names.length && last !== null) {
        this.liveReads.same++;
        return last.entries;
      }
      const more = await this.readEntries(metas.slice(from));
      // Another call moved the state on while this one read: start again (its reads are cached now), or after a few
      // tries (calls for different snapshots interleaving) merge on its own.
      if (this.lastLive !== last && attempt < 3) continue;
      if (this.lastLive !== last) {
        this.liveReads.full++;
        return mergeEntries(await this.readEntries(metas));
      }
      const merger = from > 0 ? last!.merger : new EntryMerger();
      this.liveReads[from > 0 ? "incremental" : "full"]++;
      this.lastLive = null; // a step that throws leaves the merger half-applied
      merger.apply(more);
      const entries = merger.live();
      this.lastLive = { manifests: names, merger, entries };
      return entries;
    }
  }

  /** The entries a snapshot added or deleted (its delta manifest list). */
  async readDeltaEntries(s: Snapshot): Promise<ManifestEntry[]> {
    return this.readEntries(await this.readManifestList(s.deltaManifestList));
  }

  /** Writes one manifest of these entries (`encoded`: their bytes, when already encoded). */
  /** The changelog files a snapshot added (primary-key tables with a changelog producer); [] when it has none. */
  async readChangelogEntries(s: Snapshot): Promise<ManifestEntry[]> {
    if (s.changelogManifestList === null) return [];
    return this.readEntries(await this.readManifestList(s.changelogManifestList));
  }

  async writeManifest(entries: ManifestEntry[], written: string[], encoded?: Uint8Array): Promise<ManifestFileMeta> {
    const name = this.table.paths.newManifestName();
    const bytes = encoded ?? encodeManifest(entries);
    // The directory is synced once by the commit, before the snapshot that names these files.
    await this.table.io.writeFile(this.table.paths.manifestPath(name), bytes, { syncDir: false });
    written.push(name);
    remember(this.manifestCache, name, entries);
    let added = 0;
    let deleted = 0;
    let minBucket = Infinity;
    let maxBucket = -Infinity;
    let minLevel = Infinity;
    let maxLevel = -Infinity;
    for (const e of entries) {
      if (e.kind === FileKind.ADD) added++;
      else deleted++;
      minBucket = Math.min(minBucket, e.bucket);
      maxBucket = Math.max(maxBucket, e.bucket);
      minLevel = Math.min(minLevel, e.file.level);
      maxLevel = Math.max(maxLevel, e.file.level);
    }
    return {
      fileName: name,
      fileSize: bytes.length,
      numAddedFiles: added,
      numDeletedFiles: deleted,
      partitionStats: this.partitionStats(entries),
      schemaId: this.table.schema.id,
      minBucket: entries.length ? minBucket : null,
      maxBucket: entries.length ? maxBucket : null,
      minLevel: entries.length ? minLevel : null,
      maxLevel: entries.length ? maxLevel : null,
      minRowId: null,
      maxRowId: null,
    };
  }

  async writeManifestList(metas: ManifestFileMeta[], written: string[]): Promise<{ name: string; size: number }> {
    const name = this.table.paths.newManifestListName();
    const bytes = encodeManifestList(metas);
    await this.table.io.writeFile(this.table.paths.manifestPath(name), bytes, { syncDir: false });
    written.push(name);
    remember(this.listCache, name, metas);
    return { name, size: bytes.length };
  }

  /**
   * Merges a snapshot's manifests (base + delta) into the next base list, as Paimon's ManifestFileMerger: a full
   * compaction when it is due (`tryFullCompaction`), else a merge of small manifests once at least
   * `manifest.merge-min-count` of them exist: their entries are merged (ADD/DELETE pairs cancel) and rewritten into
   * as few manifests as the target size allows. Full manifests are kept as they are, ahead of the merged ones, so
   * entry order (older first) is preserved for the DELETEs they hold.
   */
  async maybeMerge(metas: ManifestFileMeta[], written: string[]): Promise<ManifestFileMeta[]> {
    const minCount = this.table.options.manifestMergeMinCount;
    const target = this.table.options.memory("manifest.target-file-size") || DEFAULT_TARGET_SIZE;
    const full = await this.tryFullCompaction(metas, target, written);
    if (full !== null) return full;
    const small = metas.filter((m) => m.fileSize < target);
    if (small.length < minCount) return metas;
    // Merging only a suffix of small manifests keeps order: every manifest before the first merged one stays first.
    const firstSmall = metas.findIndex((m) => m.fileSize < target);
    const keep = metas.slice(0, firstSmall);
    const toMerge = metas.slice(firstSmall);
    const live = mergeEntries(await this.readEntries(toMerge), { keepUnmatchedDeletes: true });
    if (live.length === 0) return keep;
    return [...keep, ...(await this.writeRolled(live, target, written))];
  }

  /**
   * Entries written, in order, into manifests that reach `target` bytes (all but the last), as Paimon's rolling
   * writer does: a manifest below the target counts as small, and small ones are merged again and again. An entry's
   * encoded size varies a lot (deflate folds similar entries to ~30 bytes; names and statistics make hundreds), so
   * each manifest's entry count is estimated from the bytes of the previous encoding and corrected at most 3 times.
   */
  private async writeRolled(entries: ManifestEntry[], target: number, written: string[]): Promise<ManifestFileMeta[]> {
    const out: ManifestFileMeta[] = [];
    let perEntry = 400;
    for (let i = 0; i < entries.length; ) {
      let n = Math.min(entries.length - i, Math.max(1, Math.ceil(target / perEntry)));
      let bytes = encodeManifest(entries.slice(i, i + n));
      for (let k = 0; k < 3 && bytes.length < target && i + n < entries.length; k++) {
        perEntry = bytes.length / n;
        n = Math.min(entries.length - i, Math.max(n + 1, Math.ceil((target / perEntry) * 1.05)));
        bytes = encodeManifest(entries.slice(i, i + n));
      }
      perEntry = bytes.length / n;
      out.push(await this.writeManifest(entries.slice(i, i + n), written, bytes));
      i += n;
    }
    return out;
  }

  /**
   * Paimon's manifest full compaction (ManifestFileMerger.tryFullCompaction): once the manifests that must change —
   * those holding DELETE entries, and small ones (below `manifest.target-file-size`) — add up to
   * `manifest.full-compaction-threshold-size`, every DELETE is folded away with the ADD it cancels. Manifests that
   * hold neither a DELETE nor a deleted file (large ones of untouched partitions, told by their partition statistics
   * without reading them) are kept as they are; the rest are rewritten with only their surviving ADDs. The result
   * holds no DELETE at all, so planning a scan reads the live files only, however old the table. Null: not due.
   */
  private async tryFullCompaction(metas: ManifestFileMeta[], target: number, written: string[]): Promise<ManifestFileMeta[] | null> {
    const threshold = this.table.options.memory("manifest.full-compaction-threshold-size");
    if (!(threshold > 0)) return null;
    const mustChange = (m: ManifestFileMeta): boolean => m.numDeletedFiles > 0 || m.fileSize < target;
    let deltaSize = 0;
    for (const m of metas) if (mustChange(m)) deltaSize += m.fileSize;
    if (deltaSize < threshold) return null;

    const deleted = new Set<string>();
    const deletedPartitions = new Map<string, Uint8Array>();
    for (const m of metas) {
      if (m.numDeletedFiles === 0) continue;
      for (const e of await this.readManifest(m.fileName)) {
        if (e.kind !== FileKind.DELETE) continue;
        deleted.add(fileIdentifier(e));
        deletedPartitions.set(Buffer.from(e.partition).toString("hex"), e.partition);
      }
    }
    const kept: ManifestFileMeta[] = [];
    const toMerge: ManifestFileMeta[] = [];
    for (const m of metas) {
      if (!mustChange(m) && !this.mayHoldPartition(m, [...deletedPartitions.values()])) kept.push(m);
      else toMerge.push(m);
    }
    if (toMerge.length <= 1) return null;
    const rewritten: ManifestEntry[] = [];
    for (const m of toMerge) {
      const entries = await this.readManifest(m.fileName);
      const adds = entries.filter((e) => e.kind === FileKind.ADD && !deleted.has(fileIdentifier(e)));
      if (!mustChange(m) && adds.length === entries.length) kept.push(m);
      else rewritten.push(...adds);
    }
    return [...kept, ...(await this.writeRolled(rewritten, target, written))];
  }

  /** Whether a manifest's partition statistics admit any of these partitions (always true when unpartitioned). */
  private mayHoldPartition(m: ManifestFileMeta, partitions: Uint8Array[]): boolean {
    if (partitions.length === 0) return false;
    const types = this.table.partitionTypes;
    if (types.length === 0) return true;
    const stats = m.partitionStats;
    let min: Value[];
    let max: Value[];
    try {
      min = deserializeBinaryRow(types, stats.minValues);
      max = deserializeBinaryRow(types, stats.maxValues);
    } catch {
      return true;
    }
    return partitions.some((p) => {
      const values = deserializeBinaryRow(types, p);
      return values.every((v, i) => {
        if (v === null) return (stats.nullCounts[i] ?? 1n) !== 0n;
        const lo = min[i] ?? null;
        const hi = max[i] ?? null;
        if (lo === null || hi === null) return true;
        return compareValues(types[i]!, v, lo) >= 0 && compareValues(types[i]!, v, hi) <= 0;
      });
    });
  }

  /** min/max/null counts over the partition fields of the entries (Java's `_PARTITION_STATS`). */
  private partitionStats(entries: ManifestEntry[]): SimpleStats {
    const types = this.table.partitionTypes;
    if (types.length === 0 || entries.length === 0) return EMPTY_STATS;
    const min: Value[] = new Array<Value>(types.length).fill(null);
    const max: Value[] = new Array<Value>(types.length).fill(null);
    const nulls = new Array<number>(types.length).fill(0);
    const seen = new Set<string>();
    for (const e of entries) {
      const key = Buffer.from(e.partition).toString("hex");
      const values = deserializeBinaryRow(types, e.partition);
      values.forEach((v, i) => {
        if (v === null) nulls[i]!++;
      });
      // Min/max only change with a new partition value; entries of one partition repeat it.
      if (seen.has(key)) continue;
      seen.add(key);
      values.forEach((v, i) => {
        if (v === null) return;
        const t = types[i]!;
        if (min[i] === null || compareValues(t, v, min[i]!) < 0) min[i] = v;
        if (max[i] === null || compareValues(t, v, max[i]!) > 0) max[i] = v;
      });
    }
    return {
      minValues: serializeBinaryRow(types, min),
      maxValues: serializeBinaryRow(types, max),
      nullCounts: nulls.map((n) => BigInt(n)),
    };
  }
}

/**
 * Caches a manifest or a list, bounded, the least recently used going first: a long-running committer reads many
 * manifests, most only once, and every commit writes two new lists; a shared cache also sees snapshot expiration's
 * reads of old snapshots, which must not push out the manifests every new snapshot still names. The manifest cache
 * used to be cleared whole at 256 — every 25 s at 10 commits a second, and the next plan of every process decoded the
 * table's base manifests again.
 */
function remember<T>(cache: Map<string, T>, name: string, value: T): void {
  if (cache.size >= CACHED_FILES) cache.delete(cache.keys().next().value!);
  cache.set(name, value);
}

/** A cached file, marked as used now (moved to the end of the eviction order). */
function recall<T>(cache: Map<string, T>, name: string): T | undefined {
  const hit = cache.get(name);
  if (hit === undefined) return undefined;
  cache.delete(name);
  cache.set(name, hit);
  return hit;
}

const CACHED_FILES = 256;

/** Whether `prefix` begins `names`. */
function isPrefix(prefix: readonly string[], names: readonly string[]): boolean {
  if (prefix.length > names.length) return false;
  for (let i = 0; i < prefix.length; i++) if (prefix[i] !== names[i]) return false;
  return true;
}
