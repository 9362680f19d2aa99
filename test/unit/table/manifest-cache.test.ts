/**
 * ManifestStores given a table's shared cache decode each manifest once between them (a file gone from disk after
 * one read it is still read by the others, not by a store with a cache of its own), and the cache drops the least
 * recently used file first: one read again stays while newer files come in.
 */
import { after, test } from "node:test";
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import assert from "node:assert/strict";
import { createTable, tempDir } from "../../helpers/tables.ts";
import { ManifestStore, sharedManifestCache } from "../../../src/table/manifest-store.ts";
import { EMPTY_STATS, FileKind, type ManifestEntry } from "../../../src/format/manifest.ts";

const wh = tempDir();
after(() => wh.cleanup());

function entry(): ManifestEntry {
  return {
    kind: FileKind.ADD,
    partition: new Uint8Array(12),
    bucket: 0,
    totalBuckets: 1,
    file: {
      fileName: `data-${randomUUID()}-0.parquet`, fileSize: 1000, rowCount: 10, minKey: EMPTY_STATS.minValues, maxKey: EMPTY_STATS.maxValues, keyStats: EMPTY_STATS, valueStats: EMPTY_STATS,
      minSequenceNumber: 0n, maxSequenceNumber: 9n, schemaId: 0, level: 0, extraFiles: [], creationTimeMillis: 0, deleteRowCount: 0,
      embeddedIndex: null, fileSource: 0, valueStatsCols: null, externalPath: null, firstRowId: null, writeCols: null,
    },
  };
}

test("manifest cache - stores sharing a table's cache decode a manifest once; a store of its own reads the file", async () => {
  const t = await createTable(wh.path, "mc.shared", "id BIGINT NOT NULL");
  const written: string[] = [];
  const meta = await new ManifestStore(t).writeManifest([entry(), entry()], written);
  // Read by one store of the shared cache, then gone from disk.
  assert.equal((await new ManifestStore(t, sharedManifestCache(t)).readManifest(meta.fileName)).length, 2);
  rmSync(t.paths.manifestPath(meta.fileName));
  assert.equal((await new ManifestStore(t, sharedManifestCache(t)).readManifest(meta.fileName)).length, 2, "another store of the shared cache");
  await assert.rejects(new ManifestStore(t).readManifest(meta.fileName), "a store with a cache of its own reads the file");
  const other = await createTable(wh.path, "mc.other", "id BIGINT NOT NULL");
  assert.notEqual(sharedManifestCache(other), sharedManifestCache(t), "one cache per table");
});

test("manifest cache - the least recently used file goes first: one read again outlives newer ones", async () => {
  const t = await createTable(wh.path, "mc.lru", "id BIGINT NOT NULL");
  const store = new ManifestStore(t, sharedManifestCache(t));
  const written: string[] = [];
  const kept = await store.writeManifest([entry()], written);
  const dropped = await store.writeManifest([entry()], written);
  rmSync(t.paths.manifestPath(kept.fileName));
  rmSync(t.paths.manifestPath(dropped.fileName));
  // 200 newer files, then the first read again, then 100 more: 302 written, the cache holds 256.
  for (let i = 0; i < 200; i++) await store.writeManifest([entry()], written);
  assert.equal((await store.readManifest(kept.fileName)).length, 1);
  for (let i = 0; i < 100; i++) await store.writeManifest([entry()], written);
  assert.equal((await store.readManifest(kept.fileName)).length, 1, "read again: still cached");
  await assert.rejects(store.readManifest(dropped.fileName), "never read again: dropped, and its file is gone");
});
