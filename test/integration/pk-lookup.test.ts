/**
 * Point lookups by key (src/scan/lookup.ts) on primary-key tables natslake's library writes: every answer equals the
 * row a full read of the same snapshot has for the key — at every snapshot of a history whose keys live in several
 * sorted runs and levels across partitions and buckets, projected, with a sequence.field and with ignore-delete;
 * only the files whose key range holds a key are decoded, once per call (or once per cache); bad keys, tables a
 * lookup cannot serve and unknown snapshots are refused by name. The same answers against Java Paimon's and
 * pypaimon's reads: test/compat/pk-lookup-oracles.test.ts.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { Catalog, isLakeError, parseColumnList, parseIdentifier } from "../../src/index.ts";
import { ErrorKind } from "../../src/errors.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { planScan } from "../../src/scan/plan.ts";
import { KeyLookup, LruDecodedFileCache, lookupKeys } from "../../src/scan/lookup.ts";
import { createLookupTable, expectLookupsEqualRead, writeLookupHistory } from "../helpers/pk-lookup.ts";
import { createTable, readJson, tempDir, writeRows } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

test("lookup: every key at every snapshot of a compacted history equals the full read's row (partitions, buckets, levels, projection)", { timeout: 300_000 }, async () => {
  const t = await createLookupTable(wh.path, "lk.history", {});
  const history = await writeLookupHistory(t);
  const latest = await planScan(t);
  const levels = new Set(latest.splits.flatMap((s) => s.files.map((f) => f.level)));
  assert.ok(levels.has(0) && levels.size >= 3, `files at level 0, a middle level and the top at once (levels ${[...levels].join(", ")})`);
  assert.ok(latest.splits.some((s) => s.files.filter((f) => f.level === 4).length >= 2), "some bucket's top level is a sorted run of several files");
  for (const snapshotId of history.snapshots) await expectLookupsEqualRead(t, history.keys, { snapshotId });
  const { lookup } = await expectLookupsEqualRead(t, history.keys);
  // Each file decoded at most once in a call, however many keys it serves.
  const files = latest.splits.reduce((n, s) => n + s.files.length, 0);
  assert.ok(lookup.stats.filesDecoded <= files, `${lookup.stats.filesDecoded} decodes of ${files} files`);
  // A few keys: their buckets' files outside their key ranges are passed over.
  const few = await expectLookupsEqualRead(t, [...history.keys.slice(0, 3), history.keys.at(-1)!]);
  assert.ok(few.lookup.stats.filesPruned > 0 && few.lookup.stats.filesDecoded < files, `key ranges pruned files (${JSON.stringify(few.lookup.stats)})`);
  await expectLookupsEqualRead(t, history.keys, { columns: ["v", "id"] });
  await expectLookupsEqualRead(t, history.keys, { snapshotId: history.snapshots[4]!, columns: ["ts"] });
});

test("lookup: a sequence.field table keeps the version the field orders last, an ignore-delete table its last addition — as the full read does", { timeout: 300_000 }, async () => {
  for (const [name, options] of [
    ["lk.sequenced", { "sequence.field": "ts" }],
    ["lk.sequenced_desc", { "sequence.field": "ts", "sequence.field.sort-order": "descending" }],
    ["lk.ignoring", { "ignore-delete": "true" }],
  ] as const) {
    const t = await createLookupTable(wh.path, name, options);
    const history = await writeLookupHistory(t, { rounds: 8, seed: name.length });
    await expectLookupsEqualRead(t, history.keys);
    await expectLookupsEqualRead(t, history.keys, { snapshotId: history.snapshots[3]! });
  }
});

test("lookup: one key decodes only the file whose key range holds it; a cache shared by lookups decodes it once", { timeout: 120_000 }, async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("lk.files"), {
    columns: parseColumnList("id INT NOT NULL, v STRING"),
    primaryKeys: ["id"],
    options: { bucket: "1" },
  });
  // Ten commits of disjoint key ranges, never compacted: ten level-0 files of one bucket.
  for (let c = 0; c < 10; c++) {
    const w = await BatchWriter.open(t);
    await w.upsert(Array.from({ length: 50 }, (_, i) => ({ id: c * 100 + i * 2, v: `c${c} i${i}` })));
    await w.commit();
  }
  assert.equal((await planScan(t)).splits[0]!.files.length, 10);

  const one = await KeyLookup.open(t, { decoderPool: null });
  assert.deepEqual(await one.get([{ id: 504 }]), [{ id: 504, v: "c5 i2" }]);
  assert.deepEqual(one.stats, { filesDecoded: 1, filesFromCache: 0, filesPruned: 9, valuesDecoded: 1 });
  // In a file's range but not in it (odd ids), and beyond every file: nothing decoded for the latter two, and of the
  // first only its key columns (the key is not there: no value column is needed).
  const misses = await KeyLookup.open(t, { decoderPool: null });
  assert.deepEqual(await misses.get([{ id: 505 }, { id: 5000 }, { id: -3 }]), [null, null, null]);
  assert.deepEqual(misses.stats, { filesDecoded: 1, filesFromCache: 0, filesPruned: 9, valuesDecoded: 0 });
  // Three keys of two files, one key asked twice: two decodes, answers in the order asked.
  const batch = await KeyLookup.open(t, { decoderPool: null });
  assert.deepEqual(await batch.get([{ id: 302 }, { id: 0 }, { id: 300 }, { id: 0 }]), [{ id: 302, v: "c3 i1" }, { id: 0, v: "c0 i0" }, { id: 300, v: "c3 i0" }, { id: 0, v: "c0 i0" }]);
  assert.equal(batch.stats.filesDecoded, 2);
  // Concurrent calls of one lookup share a decode under way.
  const shared = await KeyLookup.open(t, { decoderPool: null });
  await Promise.all([shared.get([{ id: 702 }]), shared.get([{ id: 704 }])]);
  assert.equal(shared.stats.filesDecoded, 1);
  assert.equal(shared.stats.valuesDecoded, 1);

  const cache = new LruDecodedFileCache(64 * 1024 * 1024);
  const first = await KeyLookup.open(t, { cache, decoderPool: null });
  // A key the file does not hold: its key columns are cached; a key it holds adds its value columns, counted anew.
  assert.deepEqual(await first.get([{ id: 903 }]), [null]);
  const keyColumnsOnly = cache.bytes;
  assert.ok(keyColumnsOnly > 0);
  await first.get([{ id: 902 }]);
  assert.ok(cache.bytes > keyColumnsOnly, `${cache.bytes} bytes cached after the value columns, ${keyColumnsOnly} before`);
  assert.deepEqual(first.stats, { filesDecoded: 1, filesFromCache: 1, filesPruned: 18, valuesDecoded: 1 });
  const second = await KeyLookup.open(t, { cache, decoderPool: null });
  assert.deepEqual(await second.get([{ id: 904 }]), [{ id: 904, v: "c9 i2" }]);
  assert.deepEqual(second.stats, { filesDecoded: 0, filesFromCache: 1, filesPruned: 9, valuesDecoded: 0 });
  assert.ok(cache.bytes > 0);
  // A projection decodes other columns: not the same cache entry.
  const projected = await KeyLookup.open(t, { cache, decoderPool: null, columns: ["v"] });
  assert.deepEqual(await projected.get([{ id: 904 }]), [{ v: "c9 i2" }]);
  assert.equal(projected.stats.filesDecoded, 1);
  // A cache too small for a file keeps nothing.
  const tiny = new LruDecodedFileCache(16);
  await (await KeyLookup.open(t, { cache: tiny })).get([{ id: 2 }]);
  assert.equal(tiny.bytes, 0);
});

test("lookup: a key of a bucket holds only that bucket's files (the writer's bucket function), with the default pool", { timeout: 120_000 }, async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("lk.buckets"), {
    columns: parseColumnList("k STRING NOT NULL, n BIGINT NOT NULL, v INT"),
    primaryKeys: ["k", "n"],
    options: { bucket: "4" },
  });
  const rows = Array.from({ length: 400 }, (_, i) => ({ k: `key-${i % 37}`, n: i, v: i * 10 }));
  for (let c = 0; c < 3; c++) await writeRows(t, rows.slice(c * 130, (c + 1) * 130));
  const files = (await planScan(t)).splits.reduce((sum, s) => sum + s.files.length, 0);
  const lookup = await KeyLookup.open(t);
  assert.deepEqual(await lookup.get([{ k: "key-5", n: 5 }]), [{ k: "key-5", n: 5n, v: 50 }]);
  // The key's bucket's files only: decoded or pruned, three at most (one per commit); no other bucket's.
  const seen = lookup.stats.filesDecoded + lookup.stats.filesPruned;
  assert.ok(seen >= 1 && seen <= 3 && files > 3, `${seen} of ${files} files looked at`);
  assert.deepEqual(await lookupKeys(t, [{ k: "key-5", n: 6 }, { k: "key-6", n: 6 }]), [null, { k: "key-6", n: 6n, v: 60 }]);
});

test("lookup: bad keys are DataInvalid naming the field; append tables, unknown columns and snapshots are refused; an empty table answers null", { timeout: 60_000 }, async () => {
  const t = await createLookupTable(wh.path, "lk.errors", {});
  await writeRows(t, [{ region: "eu", id: 1, v: "one", n: 1, ts: 1 }]);
  const lookup = await KeyLookup.open(t);
  const refuses = async (key: unknown, message: RegExp): Promise<void> => {
    await assert.rejects(lookup.get([{ region: "eu", id: 1 }, key as Record<string, unknown>]), (e: unknown) => {
      assert.ok(isLakeError(e, ErrorKind.DataInvalid), String(e));
      assert.match(e.message, message);
      assert.equal(e.context["key"], 1);
      return true;
    });
  };
  await refuses({ region: "eu" }, /lk\.errors: key 2 lacks primary-key field 'id' \(primary key: region, id\)/);
  await refuses({ region: "eu", id: 1, v: "x" }, /key 2 has field 'v', which is not in the primary key/);
  await refuses({ region: "eu", id: "one" }, /key 2 is not valid: column id: expected a 64-bit integer/);
  await refuses({ region: 5, id: 1 }, /key 2 is not valid: column region: expected a string/);
  await refuses({ region: null, id: 1 }, /column region is NOT NULL/);
  await refuses([1, 2], /key 2 must be an object of the primary-key fields/);
  assert.deepEqual(await lookup.get([{ region: "eu", id: "1" }]), [{ region: "eu", id: 1n, v: "one", n: 1, ts: 1n }], "a key's values in any form the column's writes take");

  const append = await createTable(wh.path, "lk.append", "id INT, v STRING");
  await assert.rejects(KeyLookup.open(append), /lk\.append has no primary key: get needs a primary key/);
  await assert.rejects(KeyLookup.open(t, { columns: ["nope"] }), (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /no column 'nope'/.test(e.message));
  await assert.rejects(KeyLookup.open(t, { snapshotId: 99 }), (e: unknown) => isLakeError(e, ErrorKind.NotFound) && /snapshot 99 of lk\.errors does not exist/.test(e.message));
  await assert.rejects(KeyLookup.open(t, { tag: "nope" }), (e: unknown) => isLakeError(e, ErrorKind.NotFound));

  const empty = await createLookupTable(wh.path, "lk.empty", {});
  const none = await KeyLookup.open(empty);
  assert.equal(none.snapshotId, null);
  assert.deepEqual(await none.get([{ region: "eu", id: 1 }]), [null]);
  assert.deepEqual(await readJson(empty), []);
});
