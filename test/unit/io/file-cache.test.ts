/**
 * The lookup disk cache (src/io/file-cache.ts) in front of a real local FileIO standing for the store, its reads
 * counted: which files are cached, that a cached file is fetched once (concurrent misses too), read whole and by
 * range from the local copy, dropped least recently read first beyond its bytes and after its retention, and fetched
 * again when its copy disappeared.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { DiskCachedFileIO, isImmutableTableFile } from "../../../src/io/file-cache.ts";
import { LocalFileIO } from "../../../src/io/local.ts";

const root = mkdtempSync(join(tmpdir(), "file-cache-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** The store: a local FileIO whose whole-file reads are counted per path. */
class CountingStore extends LocalFileIO {
  readonly reads = new Map<string, number>();
  override async readFile(path: string): Promise<Uint8Array> {
    this.reads.set(path, (this.reads.get(path) ?? 0) + 1);
    return super.readFile(path);
  }
}

/** Byte equality, whatever Uint8Array subclass each side is. */
const same = (a: Uint8Array, b: Uint8Array, message?: string): void => assert.ok(Buffer.from(a).equals(Buffer.from(b)), message);

let n = 0;
function setup(maxBytes: number, retentionMs = 3_600_000): { store: CountingStore; cache: DiskCachedFileIO; dir: string; file: (name: string, bytes: number) => string; clock: { now: number } } {
  const base = join(root, `case-${n++}`);
  const tableDir = join(base, "db.db", "t", "bucket-0");
  mkdirSync(tableDir, { recursive: true });
  const store = new CountingStore({ fsync: false });
  const clock = { now: 1_000 };
  const dir = join(base, "cache");
  const cache = new DiskCachedFileIO(store, { dir, maxBytes, retentionMs, now: () => clock.now });
  const file = (name: string, bytes: number): string => {
    const path = join(tableDir, name);
    writeFileSync(path, Buffer.from(Array.from({ length: bytes }, (_, i) => (i * 7 + name.length) % 251)));
    return path;
  };
  return { store, cache, dir, file, clock };
}

test("file cache - immutable table files only: data, changelog, index files and manifests; never snapshots, hints or schemas", () => {
  for (const p of ["/w/db.db/t/bucket-0/data-1a-0.parquet", "/w/db.db/t/bucket-0/changelog-2b-1.parquet", "/w/db.db/t/index/index-3c-0", "/w/db.db/t/manifest/manifest-4d-0", "/w/db.db/t/manifest/manifest-list-5e-1", "/w/db.db/t/manifest/index-manifest-6f-0"]) assert.ok(isImmutableTableFile(p), p);
  for (const p of ["/w/db.db/t/snapshot/snapshot-3", "/w/db.db/t/snapshot/LATEST", "/w/db.db/t/schema/schema-0", "/w/db.db/t/consumer/consumer-x", "/w/db.db/t/tag/tag-a"]) assert.ok(!isImmutableTableFile(p), p);
});

test("file cache - a file is fetched once, then read whole and by range from the local copy; other files go to the store every time", async () => {
  const { store, cache, dir, file } = setup(1 << 20);
  const data = file("data-a-0.parquet", 5000);
  const snapshot = file("snapshot-1", 10);
  const whole = await cache.readFile(data);
  assert.equal(whole.byteLength, 5000);
  same(await cache.readFile(data), whole);
  same(await cache.readRange(data, 100, 50), whole.subarray(100, 150));
  same(await cache.readRange(data, 4990, 50), whole.subarray(4990), "a range past the end is cut at the end");
  assert.equal(store.reads.get(data), 1);
  assert.equal(readdirSync(dir).length, 1, "one cached copy, no temporary file left");
  await cache.readFile(snapshot);
  await cache.readFile(snapshot);
  assert.equal(store.reads.get(snapshot), 2);
  assert.deepEqual(cache.snapshot(), { hits: 3, misses: 1, evictions: 0, bytes: 5000, files: 1 });
  assert.equal(cache.prefersRangedReads, false);
});

test("file cache - reads of one file that miss together share one fetch", async () => {
  const { store, cache, file } = setup(1 << 20);
  const data = file("data-b-0.parquet", 20_000);
  const got = await Promise.all([cache.readFile(data), cache.readRange(data, 0, 10), cache.readFile(data), cache.readRange(data, 19_990, 10)]);
  assert.equal(store.reads.get(data), 1);
  same(got[1]!, got[0]!.subarray(0, 10));
  same(got[3]!, got[0]!.subarray(19_990));
});

test("file cache - beyond its bytes the least recently read file goes; a file not read for the retention goes", async () => {
  const { store, cache, dir, file, clock } = setup(2500, 60_000);
  const [a, b, c] = ["data-1.parquet", "data-2.parquet", "data-3.parquet"].map((name) => file(name, 1000)) as [string, string, string];
  await cache.readFile(a);
  clock.now += 10;
  await cache.readFile(b);
  clock.now += 10;
  await cache.readFile(a); // a is now the most recently read
  clock.now += 10;
  await cache.readFile(c); // 3000 > 2500: b goes
  assert.equal(cache.snapshot().bytes, 2000);
  assert.equal(cache.snapshot().evictions, 1);
  await cache.readFile(a);
  await cache.readFile(b);
  assert.deepEqual([store.reads.get(a), store.reads.get(b), store.reads.get(c)], [1, 2, 1], "b was fetched again, a was kept");
  // Nothing is read for the retention: a and b expire at the next read, which fetches b again.
  clock.now += 60_001;
  await cache.readFile(b);
  assert.deepEqual([store.reads.get(b), cache.snapshot().files], [3, 1], "every file expired; b fetched again and kept alone");
  // The names of evicted copies are removed (asynchronously).
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(readdirSync(dir).filter((f) => !f.endsWith(".tmp")).length, 1);
});

test("file cache - a copy removed behind the cache's back is fetched again; the directory is emptied at start", async () => {
  const { store, cache, dir, file } = setup(1 << 20);
  const data = file("data-c-0.parquet", 300);
  const first = await cache.readFile(data);
  for (const f of readdirSync(dir)) rmSync(join(dir, f));
  same(await cache.readRange(data, 10, 20), first.subarray(10, 30));
  assert.equal(store.reads.get(data), 2);
  writeFileSync(join(dir, "stale"), "x");
  const again = new DiskCachedFileIO(store, { dir, maxBytes: 1000, retentionMs: 1000 });
  assert.deepEqual(readdirSync(dir), []);
  assert.throws(() => new DiskCachedFileIO(store, { dir, maxBytes: 0, retentionMs: 1000 }), /maxBytes must be positive/);
  again.close();
});
