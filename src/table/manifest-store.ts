/**
 * ManifestStore owns `manifest/`: reads manifest lists and manifests (cached: they never change once written),
 * materialises a snapshot's live file set (ADD/DELETE merge, as Java's FileEntry.mergeEntries), writes new
 * manifests and lists, and merges small manifests so the list does not grow by one per commit.
 */
import type { Snapshot } from "../spec/snapshot.ts";
import { EMPTY_STATS, FileKind, type ManifestEntry, type ManifestFileMeta, mergeEntries, type SimpleStats } from "../spec/manifest.ts";
import { decodeManifest, decodeManifestList, encodeManifest, encodeManifestList } from "../spec/wire/manifest-avro.ts";
import { deserializeBinaryRow, serializeBinaryRow } from "../spec/binary-row.ts";
import { compareValues } from "../codec/stats.ts";
import type { Value } from "../spec/values.ts";
import type { Table } from "./table.ts";

/** Manifests at or above this size are "full" and left alone by the small-manifest merge. */
const DEFAULT_TARGET_SIZE = 8 * 1024 * 1024;

export class ManifestStore {
  private readonly listCache = new Map<string, ManifestFileMeta[]>();
  private readonly manifestCache = new Map<string, ManifestEntry[]>();

  constructor(private readonly table: Table) {}

  async readManifestList(name: string): Promise<ManifestFileMeta[]> {
    const hit = this.listCache.get(name);
    if (hit) return hit;
    const metas = decodeManifestList(await this.table.io.readFile(this.table.paths.manifestPath(name)));
    this.rememberList(name, metas);
    return metas;
  }

  async readManifest(name: string): Promise<ManifestEntry[]> {
    const hit = this.manifestCache.get(name);
    if (hit) return hit;
    const entries = decodeManifest(await this.table.io.readFile(this.table.paths.manifestPath(name)));
    // Bound the cache: a long-running committer reads many manifests, most only once.
    if (this.manifestCache.size > 256) this.manifestCache.clear();
    this.manifestCache.set(name, entries);
    return entries;
  }

  /** Caches a manifest list; bounded, because every commit writes two new ones. */
  private rememberList(name: string, metas: ManifestFileMeta[]): void {
    if (this.listCache.size >= 256) this.listCache.delete(this.listCache.keys().next().value!);
    this.listCache.set(name, metas);
  }

  /** All manifests of a snapshot: base then delta, in that order (order matters for ADD/DELETE merging). */
  async allManifests(s: Snapshot): Promise<ManifestFileMeta[]> {
    return [...(await this.readManifestList(s.baseManifestList)), ...(await this.readManifestList(s.deltaManifestList))];
  }

  async readEntries(metas: ManifestFileMeta[]): Promise<ManifestEntry[]> {
    const lists = await Promise.all(metas.map((m) => this.readManifest(m.fileName)));
    return lists.flat();
  }

  /** Live (ADD) entries of a snapshot. */
  async readLiveEntries(s: Snapshot): Promise<ManifestEntry[]> {
    return mergeEntries(await this.readEntries(await this.allManifests(s)));
  }

  /** The entries a snapshot added or deleted (its delta manifest list). */
  async readDeltaEntries(s: Snapshot): Promise<ManifestEntry[]> {
    return this.readEntries(await this.readManifestList(s.deltaManifestList));
  }

  async writeManifest(entries: ManifestEntry[], written: string[]): Promise<ManifestFileMeta> {
    const name = this.table.paths.newManifestName();
    const bytes = encodeManifest(entries);
    // The directory is synced once by the commit, before the snapshot that names these files.
    await this.table.io.writeFile(this.table.paths.manifestPath(name), bytes, { syncDir: false });
    written.push(name);
    this.manifestCache.set(name, entries);
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
    this.rememberList(name, metas);
    return { name, size: bytes.length };
  }

  /**
   * Merges small manifests once at least `manifest.merge-min-count` of them exist: their entries are merged
   * (ADD/DELETE pairs cancel) and rewritten into as few manifests as the target size allows. Full manifests are
   * kept as they are, ahead of the merged ones, so entry order (older first) is preserved for the DELETEs they hold.
   */
  async maybeMerge(metas: ManifestFileMeta[], written: string[]): Promise<ManifestFileMeta[]> {
    const minCount = this.table.options.manifestMergeMinCount;
    const target = this.table.options.memory("manifest.target-file-size") || DEFAULT_TARGET_SIZE;
    const small = metas.filter((m) => m.fileSize < target);
    if (small.length < minCount) return metas;
    // Merging only a suffix of small manifests keeps order: every manifest before the first merged one stays first.
    const firstSmall = metas.findIndex((m) => m.fileSize < target);
    const keep = metas.slice(0, firstSmall);
    const toMerge = metas.slice(firstSmall);
    const live = mergeEntries(await this.readEntries(toMerge), { keepUnmatchedDeletes: true });
    if (live.length === 0) return keep;
    const out = [...keep];
    // Roll by entry count as a proxy for size: an append entry encodes to roughly 200-400 bytes.
    const perFile = Math.max(1000, Math.floor(target / 400));
    for (let i = 0; i < live.length; i += perFile) out.push(await this.writeManifest(live.slice(i, i + perFile), written));
    return out;
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
