/**
 * ManifestStore merges: merged manifests reach manifest.target-file-size by their encoded bytes (so they are not
 * "small" and merged again at the next commit), and a full compaction folds every ADD/DELETE pair away.
 */
import { after, test } from "node:test";
import { randomUUID } from "node:crypto";
import assert from "node:assert/strict";
import { createTable, tempDir } from "../../helpers/tables.ts";
import { ManifestStore } from "../../../src/table/manifest-store.ts";
import { EMPTY_STATS, FileKind, mergeEntries, type DataFileMeta, type ManifestEntry, type ManifestFileMeta } from "../../../src/format/manifest.ts";

const wh = tempDir();
after(() => wh.cleanup());

function entry(kind: FileKind, fileName = `data-${randomUUID()}-0.parquet`): ManifestEntry {
  const file: DataFileMeta = {
    fileName, fileSize: 1000, rowCount: 10, minKey: EMPTY_STATS.minValues, maxKey: EMPTY_STATS.maxValues, keyStats: EMPTY_STATS, valueStats: EMPTY_STATS,
    minSequenceNumber: 0n, maxSequenceNumber: 9n, schemaId: 0, level: 0, extraFiles: [], creationTimeMillis: 0, deleteRowCount: 0,
    embeddedIndex: null, fileSource: 0, valueStatsCols: null, externalPath: null, firstRowId: null, writeCols: null,
  };
  return { kind, partition: new Uint8Array(12), bucket: 0, totalBuckets: 1, file };
}

test("manifest merge - merged manifests reach the target size by their bytes (all but the last)", async () => {
  const t = await createTable(wh.path, "m.roll", "id BIGINT NOT NULL", { options: { "manifest.target-file-size": "64kb", "manifest.merge-min-count": "30", "manifest.full-compaction-threshold-size": "1 gb" } });
  const store = new ManifestStore(t);
  const written: string[] = [];
  const metas: ManifestFileMeta[] = [];
  for (let m = 0; m < 40; m++) metas.push(await store.writeManifest(Array.from({ length: 100 }, () => entry(FileKind.ADD)), written));
  const merged = await store.maybeMerge(metas, written);
  assert.ok(merged.length >= 2 && merged.length < 40, `merged into ${merged.length}`);
  for (const m of merged.slice(0, -1)) assert.ok(m.fileSize >= 64 * 1024, `a merged manifest of ${m.fileSize} bytes is below the target`);
  assert.equal((await store.readEntries(merged)).length, 4000);
  // Merged again at once: nothing is small but the last, so the list stays as it is.
  assert.deepEqual(await store.maybeMerge(merged, written), merged);
});

test("manifest merge - full compaction: past the threshold every DELETE and its ADD are gone", async () => {
  const t = await createTable(wh.path, "m.full", "id BIGINT NOT NULL", { options: { "manifest.target-file-size": "4kb", "manifest.merge-min-count": "1000", "manifest.full-compaction-threshold-size": "8kb" } });
  const store = new ManifestStore(t);
  const written: string[] = [];
  const adds = Array.from({ length: 600 }, () => entry(FileKind.ADD));
  const metas = [await store.writeManifest(adds, written)];
  // Later manifests delete half of them, a few at a time, and add some.
  for (let m = 0; m < 30; m++) {
    const dels = adds.slice(m * 10, m * 10 + 10).map((e) => ({ ...e, kind: FileKind.DELETE }));
    metas.push(await store.writeManifest([...dels, entry(FileKind.ADD)], written));
  }
  const live = mergeEntries(await store.readEntries(metas)).map((e) => e.file.fileName).sort();
  const out = await store.maybeMerge(metas, written);
  const entries = await store.readEntries(out);
  assert.equal(entries.filter((e) => e.kind === FileKind.DELETE).length, 0, "no DELETE is left");
  assert.deepEqual(entries.map((e) => e.file.fileName).sort(), live, "exactly the live files");
  assert.equal(live.length, 600 - 300 + 30);
});

test("manifest store - readLiveEntries goes on from the snapshot it materialised last and equals a fresh merge at every snapshot: appends, compactions, manifest merges, an overwrite; older snapshots and concurrent calls too", { timeout: 120_000 }, async () => {
  const { writeRows } = await import("../../helpers/tables.ts");
  const { compactTable } = await import("../../../src/maintenance/compact.ts");
  const t = await createTable(wh.path, "m.incremental", "id BIGINT NOT NULL, p STRING", {
    partitionKeys: ["p"],
    // Small manifests merge every 4 commits and a full compaction comes round: the prefix breaks at those.
    options: { bucket: "2", "bucket-key": "id", "manifest.merge-min-count": "4", "manifest.target-file-size": "8kb", "manifest.full-compaction-threshold-size": "24kb", "compaction.min.file-num": "3" },
  });
  const store = new ManifestStore(t);
  const fresh = async (id: number): Promise<string[]> => {
    const s = await t.snapshots.snapshot(id);
    const other = new ManifestStore(t);
    return mergeEntries(await other.readEntries(await other.allManifests(s))).map((e) => `${e.bucket}/${e.file.fileName}`);
  };
  const live = async (id: number): Promise<string[]> => (await store.readLiveEntries(await t.snapshots.snapshot(id))).map((e) => `${e.bucket}/${e.file.fileName}`);
  let next = 0;
  const kinds = new Set<string>();
  for (let round = 0; round < 30; round++) {
    if (round % 7 === 6) await compactTable(t, {});
    else if (round === 19) await writeRows(t, [{ id: next++, p: "b" }], { partition: ["b"] });
    else await writeRows(t, Array.from({ length: 6 }, (_, k) => ({ id: next++, p: k % 2 === 0 ? "a" : "b" })));
    const latest = (await t.snapshots.latest())!;
    kinds.add(latest.commitKind);
    assert.deepEqual(await live(latest.id), await fresh(latest.id), `snapshot ${latest.id} (${latest.commitKind})`);
    assert.equal(await store.readLiveEntries(latest), await store.readLiveEntries(latest), "the same snapshot again: the same answer");
    // An older snapshot between two newer ones, and the same snapshot twice at once.
    if (round % 5 === 4) {
      assert.deepEqual(await live(latest.id - 3), await fresh(latest.id - 3), `older snapshot ${latest.id - 3}`);
      const [x, y] = await Promise.all([live(latest.id), live(latest.id - 1)]);
      assert.deepEqual([x, y], [await fresh(latest.id), await fresh(latest.id - 1)], "two snapshots at once");
    }
  }
  assert.deepEqual([...kinds].sort(), ["APPEND", "COMPACT", "OVERWRITE"], "every kind of commit was covered");
  const merges = (await store.readManifestList((await t.snapshots.latest())!.baseManifestList)).length;
  assert.ok(merges < 30, `manifests were merged along the way (base list of ${merges})`);
  const r = store.liveReads;
  // Every latest snapshot after an append goes on from the one before; merges, older snapshots and the concurrent
  // pairs start over.
  assert.ok(r.same >= 30 && r.incremental >= 15 && r.full > 0, `reads went on from the last state where they could: ${JSON.stringify(r)}`);
});
