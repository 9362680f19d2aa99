/**
 * What a reader keeps per table for lookups (cluster/lookup-table.ts), on a local table written by the library (no
 * cluster, so no notifications): a request for a newer snapshot is answered once the warehouse has it (the reader
 * looks while it waits — a notification core NATS dropped costs a poll, not the answer); one that does not come is
 * refused not-visible; read-your-writes waits for committed offsets; a snapshot that does not exist, or was expired,
 * is refused by name; a file unchanged between snapshots is a cache hit.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { unlinkSync } from "node:fs";
import { Catalog, parseColumnList, parseIdentifier } from "../../../src/index.ts";
import { BatchWriter } from "../../../src/write/batch-writer.ts";
import type { Table } from "../../../src/table/table.ts";
import { LookupRefusal, TableLookups } from "../../../cluster/lookup-table.ts";
import { tempDir } from "../../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

async function commit(t: Table, rows: Array<Record<string, unknown>>): Promise<void> {
  const w = await BatchWriter.open(t);
  await w.upsert(rows);
  await w.commit();
}

async function refused(p: Promise<unknown>): Promise<LookupRefusal> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  assert.ok(e instanceof LookupRefusal, `refused with a code, not ${String(e)}`);
  return e;
}

test("lookup table - waits for the snapshot asked for (found in the warehouse), refuses one that does not come, and follows committed offsets", async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("lt.users"), { columns: parseColumnList("id BIGINT NOT NULL, name STRING"), primaryKeys: ["id"], options: { bucket: "1" } });
  const lookups = new TableLookups(t);
  await lookups.refresh();
  const empty = await lookups.get([{ id: 1 }], undefined, { waitMs: 0 });
  assert.deepEqual([empty.snapshotId, empty.rows], [null, [null]], "no snapshot yet: every key is absent");

  await commit(t, [{ id: 1, name: "one" }]);
  // Snapshot 2 is asked for before it exists: answered once it is committed, with no notification.
  const waiting = lookups.get([{ id: 1 }, { id: 2 }], undefined, { minSnapshot: 2, waitMs: 5000 });
  await new Promise((r) => setTimeout(r, 100));
  await commit(t, [{ id: 2, name: "two" }]);
  const answered = await waiting;
  assert.equal(answered.snapshotId, 2);
  assert.deepEqual(answered.rows, [
    { id: 1n, name: "one" },
    { id: 2n, name: "two" },
  ]);
  const hits = lookups.cache.hits;
  await lookups.get([{ id: 1 }], undefined, { waitMs: 0 });
  assert.equal(lookups.cache.hits, hits + 1, "snapshot 1's file, unchanged in snapshot 2, came from the cache");

  const late = await refused(lookups.get([{ id: 1 }], undefined, { minSnapshot: 9, waitMs: 300 }));
  assert.equal(late.code, "not-visible");
  assert.match(late.message, /no snapshot with snapshot 9 or newer within 300 ms \(the newest is 2\)/);

  // Read-your-writes: a snapshot whose committed offsets reach the token's (as a notification carries them).
  const followed = new TableLookups(t);
  void followed.noteSnapshot(1, { "0": 5 });
  assert.equal((await followed.get([{ id: 1 }], undefined, { visibleAfter: { "0": 5 }, waitMs: 0 })).snapshotId, 1);
  const behind = followed.get([{ id: 2 }], undefined, { visibleAfter: { "0": 6 }, waitMs: 5000 });
  void followed.noteSnapshot(2, { "0": 6 });
  assert.deepEqual((await behind).rows, [{ id: 2n, name: "two" }]);
  assert.equal((await refused(followed.get([{ id: 2 }], undefined, { visibleAfter: { "0": 7 }, waitMs: 200 }))).code, "not-visible");
  lookups.stop();
  followed.stop();
});

test("lookup table - a snapshot asked for that does not exist yet, or was expired, is refused by name", async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("lt.expiring"), { columns: parseColumnList("id INT NOT NULL, v STRING"), primaryKeys: ["id"], options: { bucket: "1" } });
  for (let i = 0; i < 3; i++) await commit(t, [{ id: i, v: `v${i}` }]);
  const lookups = new TableLookups(t);
  await lookups.refresh();
  assert.deepEqual((await lookups.get([{ id: 0 }], ["v"], { snapshot: 1, waitMs: 0 })).rows, [{ v: "v0" }]);
  const missing = await refused(lookups.get([{ id: 0 }], undefined, { snapshot: 7, waitMs: 0 }));
  assert.deepEqual([missing.code, missing.message], ["snapshot-not-found", "snapshot 7 of lt.expiring does not exist (the latest is 3)"]);
  // Expired: its file gone, the earliest hint moved on (as expiration leaves them).
  unlinkSync(t.paths.snapshotPath(1));
  await t.snapshots.writeEarliestHint(2);
  const expired = await refused(lookups.get([{ id: 0 }], undefined, { snapshot: 1, waitMs: 0 }));
  assert.deepEqual([expired.code, expired.details.earliest], ["snapshot-expired", 2]);
  lookups.stop();
});

test("lookup table - a notified snapshot answers once the files it adds are decoded; a request that needs it waits for that", async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier("lt.warmed"), { columns: parseColumnList("id BIGINT NOT NULL, name STRING"), primaryKeys: ["id"], options: { bucket: "2" } });
  await commit(t, [
    { id: 1, name: "one" },
    { id: 2, name: "two" },
  ]);
  const lookups = new TableLookups(t);
  // The first snapshot a reader learns of answers at once: its files decode as lookups need them.
  await lookups.noteSnapshot(1, { "0": 1, "1": 1 });
  assert.equal(lookups.newestId, 1);
  assert.deepEqual((await lookups.get([{ id: 1 }, { id: 2 }], undefined, { waitMs: 0 })).rows, [
    { id: 1n, name: "one" },
    { id: 2n, name: "two" },
  ]);

  await commit(t, [
    { id: 1, name: "uno" },
    { id: 3, name: "tres" },
  ]);
  const promoted = lookups.noteSnapshot(2, { "0": 2, "1": 2 });
  // Until its new files are decoded, lookups answer from snapshot 1 (and say so).
  const meanwhile = lookups.get([{ id: 1 }], undefined, { waitMs: 0 });
  assert.deepEqual(await meanwhile.then((a) => [a.snapshotId, a.rows]), [1, [{ id: 1n, name: "one" }]]);
  await promoted;
  assert.equal(lookups.newestId, 2);
  // Snapshot 2's files were decoded before it answered: its lookups decode nothing.
  const misses = lookups.cache.misses;
  assert.deepEqual((await lookups.get([{ id: 1 }, { id: 2 }, { id: 3 }], undefined, { waitMs: 0 })).rows, [
    { id: 1n, name: "uno" },
    { id: 2n, name: "two" },
    { id: 3n, name: "tres" },
  ]);
  assert.equal(lookups.cache.misses, misses, "no file of snapshot 2 was decoded by a lookup");

  // A request that needs the warming snapshot waits for it, however short its own wait.
  await commit(t, [{ id: 4, name: "cuatro" }]);
  const third = lookups.noteSnapshot(3, { "0": 3, "1": 3 });
  const needing = lookups.get([{ id: 1 }, { id: 4 }], undefined, { minSnapshot: 3, waitMs: 0 });
  const ryw = lookups.get([{ id: 4 }], undefined, { visibleAfter: { "1": 3 }, waitMs: 0 });
  assert.deepEqual(await needing.then((a) => [a.snapshotId, a.rows]), [3, [{ id: 1n, name: "uno" }, { id: 4n, name: "cuatro" }]]);
  assert.deepEqual(await ryw.then((a) => [a.snapshotId, a.rows]), [3, [{ id: 4n, name: "cuatro" }]]);
  await third;
  lookups.stop();
});
