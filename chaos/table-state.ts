/**
 * What scenarios look at in the warehouse while the cluster runs (read-only, except `plantOrphans`): whether the
 * writers' own compactions have landed, snapshots on disk that read a missing file (a snapshot expiration killed
 * midway leaves some behind until the next run removes them) and orphan files planted for the leader's orphan-file
 * cleanup. The cluster commits and expires meanwhile, so a snapshot or manifest that vanishes while being read was
 * expired, not broken.
 */
import { copyFileSync, existsSync, statSync, utimesSync } from "node:fs";
import { dirname, join } from "node:path";
import { randomUUID } from "node:crypto";
import { Catalog, parseIdentifier } from "../src/table/catalog.ts";
import { ManifestStore } from "../src/table/manifest-store.ts";
import type { Table } from "../src/table/table.ts";
import { CommitKind } from "../src/format/snapshot.ts";

async function openTable(warehouse: string, table: string): Promise<Table> {
  return new Catalog(warehouse).getTable(parseIdentifier(table));
}

/** A snapshot on disk and what it reads that is gone. */
export interface BrokenSnapshot {
  id: number;
  missing: string;
}

/**
 * Snapshots on disk (oldest first) whose manifest list, manifest or data file is missing — each with the first thing
 * found missing. A snapshot that is gone by the time it is re-checked was expired meanwhile and is not listed.
 */
export async function snapshotsMissingFiles(warehouse: string, table: string): Promise<{ ids: number[]; broken: BrokenSnapshot[] }> {
  const t = await openTable(warehouse, table);
  const store = new ManifestStore(t);
  const ids = await t.snapshots.listIds();
  const broken: BrokenSnapshot[] = [];
  for (const id of ids) {
    let missing: string | null = null;
    try {
      const s = await t.snapshots.snapshot(id);
      for (const e of await store.readLiveEntries(s)) {
        const path = t.paths.dataFilePath("", e.bucket, e.file.fileName, e.file.externalPath);
        if (!existsSync(path)) {
          missing = `data file ${e.file.fileName} (bucket ${e.bucket})`;
          break;
        }
      }
    } catch (e) {
      missing = (e as Error).message.split("\n")[0] ?? "unreadable";
    }
    // Still on disk: really broken (not expired while we looked).
    if (missing !== null && existsSync(t.paths.snapshotPath(id))) broken.push({ id, missing });
  }
  return { ids, broken };
}

/**
 * Plants `count` orphan data files — copies of a live data file of the latest snapshot under fresh names in its bucket
 * directory, as a crashed write leaves them — with an mtime `ageMs` in the past, so the next orphan-file cleanup
 * takes them whatever its bound. Returns their paths (empty when the table has no live file yet).
 */
export async function plantOrphans(warehouse: string, table: string, count: number, ageMs: number): Promise<string[]> {
  const t = await openTable(warehouse, table);
  const latest = await t.snapshots.latest();
  if (latest === null) return [];
  const live = await new ManifestStore(t).readLiveEntries(latest);
  const out: string[] = [];
  const when = new Date(Date.now() - ageMs);
  for (let i = 0; i < count && live.length > 0; i++) {
    const e = live[i % live.length]!;
    const src = t.paths.dataFilePath("", e.bucket, e.file.fileName, e.file.externalPath);
    const dst = join(dirname(src), `data-${randomUUID()}-0.parquet`);
    try {
      copyFileSync(src, dst);
    } catch {
      continue; // compacted and expired meanwhile: take the next one
    }
    utimesSync(dst, when, when);
    out.push(dst);
  }
  return out;
}

/** The paths of `paths` that still exist. */
export function stillThere(paths: readonly string[]): string[] {
  return paths.filter((p) => {
    try {
      return statSync(p).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * Whether the writers compact the table's buckets: a COMPACT snapshot among the newest `look` on disk that the leader's
 * committer linked (commit user `natslake-<table>`: writers' compactions reach it through the commit stream), not one
 * a maintenance job linked (`natslake compact` and the leader's compaction requests commit under a user of their own).
 * A scenario arms a writer's mid-compaction failpoints only once they do (an armed point a writer never reaches would
 * never fire).
 */
export async function writerCompactionSeen(warehouse: string, table: string, look = 50): Promise<boolean> {
  const t = await openTable(warehouse, table);
  const committer = `natslake-${t.name}`;
  const ids = await t.snapshots.listIds();
  for (const id of ids.slice(-look).reverse()) {
    const s = await t.snapshots.snapshot(id).catch(() => null);
    if (s?.commitKind === CommitKind.COMPACT && s.commitUser === committer) return true;
  }
  return false;
}

/**
 * Live files at level 0 in the latest snapshot (0 without one). A first-row table's batch reads skip them (Paimon's
 * `batchScanSkipLevel0`), so its rows are all readable once the writers' compactions have moved them up.
 */
export async function level0Files(warehouse: string, table: string): Promise<number> {
  const t = await openTable(warehouse, table);
  const latest = await t.snapshots.latest();
  if (latest === null) return 0;
  return (await new ManifestStore(t).readLiveEntries(latest)).filter((e) => e.file.level === 0).length;
}
