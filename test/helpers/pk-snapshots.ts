/**
 * Checks of a primary-key table's snapshots, every one on disk (the retained ones), independent of how the files
 * came to be — shared by the chaos suite's `pk-upserts` verifier and the cluster's primary-key fault tests:
 *
 * - levels: at every snapshot, each bucket's live files form Paimon's LSM levels (src/lsm/levels.ts `Levels`, which
 *   throws when two files of one level ≥ 1 overlap in key range — Java refuses such a bucket). While the writers
 *   only flush, every file is at level 0 and this holds trivially; once compactions put files above level 0, it is
 *   judged at every snapshot, COMPACT ones and the APPEND ones between them;
 * - sequence chain: per bucket, the level-0 files each APPEND snapshot added take sequence numbers above every
 *   earlier APPEND snapshot's (no flush committed twice, none out of order), and within the highest sequence number
 *   the snapshot records for the bucket (`natslake.seq.<b>`), which never goes back.
 */
import { FileKind, type ManifestEntry } from "../../src/format/manifest.ts";
import { CommitKind, natslakeState } from "../../src/format/snapshot.ts";
import { readLsmCompactionOptions } from "../../src/lsm/compaction-options.ts";
import { framedKeyComparator } from "../../src/lsm/compact-bucket.ts";
import { Levels, type FramedKeyComparator } from "../../src/lsm/levels.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import type { Table } from "../../src/table/table.ts";

/** What the level check of one snapshot's files found. */
export interface BucketLevels {
  /** (partition, bucket) trees built. */
  trees: number;
  /** Trees with a file at level ≥ 1. */
  withUpperLevels: number;
  maxLevel: number;
  /** One line per tree that is not a valid LSM tree (what `Levels` said). */
  problems: string[];
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

/** Builds the LSM levels of every (partition, bucket) of `entries` (live files of one snapshot). Pure. */
export function levelsOfEntries(entries: readonly ManifestEntry[], numLevels: number, compareKeys: FramedKeyComparator): BucketLevels {
  const groups = new Map<string, { bucket: number; files: ManifestEntry["file"][] }>();
  for (const e of entries) {
    const k = `${hex(e.partition)}/${e.bucket}`;
    let g = groups.get(k);
    if (g === undefined) groups.set(k, (g = { bucket: e.bucket, files: [] }));
    g.files.push(e.file);
  }
  const out: BucketLevels = { trees: 0, withUpperLevels: 0, maxLevel: 0, problems: [] };
  for (const g of groups.values()) {
    out.trees++;
    const top = Math.max(...g.files.map((f) => f.level));
    if (top >= 1) out.withUpperLevels++;
    out.maxLevel = Math.max(out.maxLevel, top);
    try {
      new Levels(g.files, numLevels, compareKeys);
    } catch (e) {
      out.problems.push(`bucket ${g.bucket}: ${(e as Error).message}`);
    }
  }
  return out;
}

export interface PkSnapshotReport {
  /** Snapshot ids checked (every one on disk, oldest first). */
  snapshots: number[];
  levels: { trees: number; withUpperLevels: number; maxLevel: number; compactSnapshots: number };
  /** Snapshots whose levels are broken: `snapshot N: bucket B: …`. */
  levelProblems: string[];
  /** Breaks of the sequence chain. */
  sequenceProblems: string[];
  /** Snapshots that could not be read (a manifest gone: expired meanwhile, or broken — the caller judges). */
  unreadable: string[];
}

/** The levels and the sequence chain of every snapshot of `table` on disk from `from` on (default: all). */
export async function checkPkSnapshots(table: Table, opts: { from?: number } = {}): Promise<PkSnapshotReport> {
  const compare = framedKeyComparator(table);
  const numLevels = readLsmCompactionOptions(table.options).numLevels;
  const store = new ManifestStore(table);
  const ids = (await table.snapshots.listIds()).filter((id) => id >= (opts.from ?? 0));
  const report: PkSnapshotReport = { snapshots: ids, levels: { trees: 0, withUpperLevels: 0, maxLevel: 0, compactSnapshots: 0 }, levelProblems: [], sequenceProblems: [], unreadable: [] };
  const chain = new SequenceChain();
  for (const id of ids) {
    let live: readonly ManifestEntry[];
    let delta: ManifestEntry[];
    const s = await table.snapshots.snapshot(id).catch((e: unknown) => e as Error);
    if (s instanceof Error) {
      report.unreadable.push(`snapshot ${id}: ${s.message}`);
      continue;
    }
    try {
      live = await store.readLiveEntries(s);
      delta = s.commitKind === CommitKind.APPEND ? await store.readDeltaEntries(s) : [];
    } catch (e) {
      report.unreadable.push(`snapshot ${id}: ${(e as Error).message}`);
      continue;
    }
    if (s.commitKind === CommitKind.COMPACT) report.levels.compactSnapshots++;
    const lv = levelsOfEntries(live, numLevels, compare);
    report.levels.trees += lv.trees;
    report.levels.withUpperLevels += lv.withUpperLevels;
    report.levels.maxLevel = Math.max(report.levels.maxLevel, lv.maxLevel);
    for (const p of lv.problems) report.levelProblems.push(`snapshot ${id} (${s.commitKind}): ${p}`);

    report.sequenceProblems.push(...chain.add(id, s.commitKind, natslakeState(s)?.buckets ?? new Map(), delta));
  }
  return report;
}

/**
 * The sequence chain, fed one snapshot at a time in id order: per bucket, the level-0 files an APPEND snapshot adds
 * (its flushes) take sequence numbers above every earlier APPEND snapshot's — a flush committed twice, or two
 * committed out of order, overlap — and at most the highest number the snapshot records for the bucket
 * (`natslake.seq.<b>`), which never goes back. COMPACT snapshots add nothing to it (their outputs hold old numbers).
 */
export class SequenceChain {
  /** Per (partition, bucket): the highest sequence number the APPEND snapshots added so far, and which one. */
  private readonly appended = new Map<string, { snapshot: number; max: bigint }>();
  private readonly recorded = new Map<number, bigint>();

  /** Takes snapshot `id`: its kind, the sequence numbers it records per bucket and its delta; returns what breaks. */
  add(id: number, kind: string, buckets: ReadonlyMap<number, { seq?: bigint }>, delta: readonly ManifestEntry[]): string[] {
    const problems: string[] = [];
    for (const [b, p] of buckets) {
      if (p.seq === undefined) continue;
      const before = this.recorded.get(b);
      if (before !== undefined && p.seq < before) problems.push(`snapshot ${id} records bucket ${b}'s sequence number ${p.seq} after ${before}`);
      this.recorded.set(b, p.seq);
    }
    if (kind !== CommitKind.APPEND) return problems;
    const ranges = new Map<string, { bucket: number; min: bigint; max: bigint }>();
    for (const e of delta) {
      if (e.kind !== FileKind.ADD || e.file.level !== 0) continue;
      const k = `${hex(e.partition)}/${e.bucket}`;
      const r = ranges.get(k);
      if (r === undefined) ranges.set(k, { bucket: e.bucket, min: e.file.minSequenceNumber, max: e.file.maxSequenceNumber });
      else {
        if (e.file.minSequenceNumber < r.min) r.min = e.file.minSequenceNumber;
        if (e.file.maxSequenceNumber > r.max) r.max = e.file.maxSequenceNumber;
      }
    }
    for (const [k, r] of ranges) {
      const prev = this.appended.get(k);
      if (prev !== undefined && r.min <= prev.max) problems.push(`snapshot ${id} bucket ${r.bucket}: a flush's sequence numbers ${r.min}..${r.max} do not start above snapshot ${prev.snapshot}'s ${prev.max}`);
      const rec = buckets.get(r.bucket)?.seq;
      if (rec !== undefined && r.max > rec) problems.push(`snapshot ${id} bucket ${r.bucket}: a file holds sequence number ${r.max}, above the ${rec} the snapshot records`);
      this.appended.set(k, { snapshot: id, max: prev !== undefined && prev.max > r.max ? prev.max : r.max });
    }
    return problems;
  }
}
