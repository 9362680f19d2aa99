/**
 * The reader's fan-out pieces, on real tables in a temporary warehouse (no NATS needed: they know none):
 * - ChunkPacker: batches packed into IPC streams within the payload limit, large batches cut, rows and order kept;
 * - a session's own read (readMessages): the decoders' record batch messages forwarded as they are where a file's
 *   columns are the target's, Arrow batches where not (another column order, a column added later); either way the
 *   rows of natslake's scan, packed within the limit;
 * - DeltaFeed: a snapshot read once for any number of sessions, equal to natslake's incremental read of it; released
 *   once every session moved past it; the bytes it holds capped (the oldest go); a session alone behind the head
 *   reads for itself, several behind it share one read again; a snapshot too large to hold is not held; a notified
 *   snapshot is read before a session asks when one waits at the head for it, and not for sessions behind the head;
 *   files announced before their snapshot links (writers' committables) are decoded once, ahead, and taken by the load.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import * as arrow from "apache-arrow";
import { ChunkPacker, packBatches } from "../../../actors/consume-chunks.ts";
import { DeltaFeed, type AnnouncedFile, type FeedEntry } from "../../../actors/consume-feed.ts";
import { sharedParquetPool } from "../../../src/codec/parquet-pool.ts";
import { ManifestStore } from "../../../src/table/manifest-store.ts";
import { readBatches, readMessages, type FileRows } from "../../../src/scan/read.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import type { Snapshot } from "../../../src/format/snapshot.ts";
import type { Table } from "../../../src/table/table.ts";
import { createTable, tempDir, writeRows } from "../../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

const LIMIT = 64 * 1024;
const rowsOf = (bodies: readonly Uint8Array[]): Array<Record<string, unknown>> => bodies.flatMap((b) => arrow.tableFromIPC(b).toArray().map((r) => ({ ...(r as object) })));
const idsOf = (bodies: readonly Uint8Array[]): number[] => rowsOf(bodies).map((r) => Number(r["id"]));

/** The snapshot object of `id` (what a session hands the feed). */
const snap = (t: Table, id: number): Promise<Snapshot> => t.snapshots.snapshot(id);

async function batchesOf(t: Table, spec: Parameters<typeof readBatches>[1]): Promise<arrow.RecordBatch[]> {
  const out: arrow.RecordBatch[] = [];
  for await (const b of readBatches(t, spec)) out.push(b);
  return out;
}

/** Commits `rounds` snapshots of `perRound` rows with `pad`-character strings; ids continue from `from`. */
async function commitRounds(t: Table, rounds: number, perRound: number, from = 0, pad = 20): Promise<number[]> {
  const ids: number[] = [];
  let next = from;
  for (let r = 0; r < rounds; r++) {
    const rows = Array.from({ length: perRound }, () => ({ id: next, s: `${next++}`.padEnd(pad, "x") }));
    ids.push((await writeRows(t, rows))!);
  }
  return ids;
}

test("chunk packer - small batches packed into one IPC stream, large ones cut within the limit; rows and their order kept", async () => {
  const t = await createTable(wh.path, "fan.pack", "id BIGINT NOT NULL, s STRING", { options: { bucket: "1", "bucket-key": "id" } });
  await commitRounds(t, 3, 50); // three small files
  await commitRounds(t, 1, 6000, 150, 60); // one file well above the limit
  const small = await batchesOf(t, { incremental: { from: 0, to: 3 } });
  assert.ok(small.length >= 3);
  const packed = packBatches(small, LIMIT);
  assert.equal(packed.length, 1, "three small batches make one message");
  assert.deepEqual(idsOf(packed), Array.from({ length: 150 }, (_, i) => i));
  const large = await batchesOf(t, { snapshotId: 4 });
  const bodies = packBatches(large, LIMIT);
  assert.ok(bodies.length > 5, `a ${large.reduce((n, b) => n + b.numRows, 0)}-row read is cut into several chunks (${bodies.length})`);
  for (const b of bodies) assert.ok(b.length <= LIMIT, `a chunk of ${b.length} bytes is within the ${LIMIT}-byte limit`);
  assert.deepEqual(idsOf(bodies), Array.from({ length: 6150 }, (_, i) => i), "every row once, in order");
  // add() hands out what is complete as it goes; flush() the rest.
  const packer = new ChunkPacker(LIMIT);
  const streamed = [...large.flatMap((b) => packer.add(b)), ...packer.flush()];
  assert.deepEqual(idsOf(streamed), idsOf(bodies));
  assert.deepEqual(packBatches([], LIMIT), []);
});

async function filesOf(t: Table, spec: Parameters<typeof readMessages>[1]): Promise<FileRows[]> {
  const out: FileRows[] = [];
  for await (const f of readMessages(t, spec)) out.push(f);
  return out;
}

/** Bodies of a session's own read: each file's messages or batches through one packer, in order. */
function packFiles(files: readonly FileRows[], limit: number): Uint8Array[] {
  const packer = new ChunkPacker(limit);
  const bodies = files.flatMap((f) => packer.addFile(f));
  return [...bodies, ...packer.flush()];
}

const plainRows = (batches: readonly arrow.RecordBatch[]): Array<Record<string, unknown>> => batches.flatMap((b) => b.toArray().map((r) => ({ ...(r as object) })));

test("own read - decoder messages forwarded where the file's columns are the target's, batches where not; the rows of natslake's scan either way", { timeout: 60_000 }, async () => {
  const t0 = await createTable(wh.path, "fan.msgs", "id BIGINT NOT NULL, s STRING", { options: { bucket: "2", "bucket-key": "id" } });
  await commitRounds(t0, 3, 300, 0, 30);
  await commitRounds(t0, 1, 132_000, 900, 8); // a file above 131,072 rows: two row groups, decoded by two workers
  const kinds = (files: readonly FileRows[]): string[] => [...new Set(files.map((f) => f.kind))];
  const all = await filesOf(t0, { messageBytes: 16 * 1024 });
  assert.deepEqual(kinds(all), ["messages"], "every file's columns are the table's: forwarded");
  const want = plainRows(await batchesOf(t0, {}));
  assert.deepEqual(rowsOf(packFiles(all, 256 * 1024)), want, "the rows of the scan, in its order");
  // Message sizes follow `messageBytes` once the reader has seen the bytes per row of a file.
  const sizes = all.slice(1).flatMap((f) => (f.kind === "messages" ? f.messages.map((m) => m.bytes.byteLength) : []));
  assert.ok(Math.max(...sizes) < 64 * 1024, `messages of ~16 KiB (largest ${Math.max(...sizes)} bytes)`);
  // A projection in the files' column order is forwarded; in another order it is mapped.
  const idOnly = await filesOf(t0, { projection: ["id"], messageBytes: 64 * 1024 });
  assert.deepEqual(kinds(idOnly), ["messages"]);
  assert.deepEqual(rowsOf(packFiles(idOnly, 256 * 1024)), plainRows(await batchesOf(t0, { projection: ["id"] })));
  const reversed = await filesOf(t0, { projection: ["s", "id"], messageBytes: 64 * 1024 });
  assert.deepEqual(kinds(reversed), ["batches"]);
  assert.deepEqual(rowsOf(packFiles(reversed, 256 * 1024)), plainRows(await batchesOf(t0, { projection: ["s", "id"] })));
  // Messages larger than a body may be are cut by rows; every body within the limit, every row once, in order.
  const small = packFiles(await filesOf(t0, { messageBytes: 64 * 1024 }), 8 * 1024);
  for (const b of small) assert.ok(b.length <= 8 * 1024, `a ${b.length}-byte chunk within 8 KiB`);
  assert.deepEqual(rowsOf(small), want);
  // A column added later: the older files read it as nulls (mapped), the newer ones are the target's (forwarded).
  const catalog = new Catalog(wh.path);
  const t1 = await catalog.addColumns(parseIdentifier("fan.msgs"), parseColumnList("note STRING"));
  await writeRows(t1, [{ id: 200_000, s: "new", note: "n" }]);
  const evolved = await filesOf(t1, { messageBytes: 64 * 1024 });
  assert.deepEqual(evolved.map((f) => f.kind).sort().at(-1), "messages");
  assert.ok(evolved.some((f) => f.kind === "batches"), "the files of the first schema are mapped");
  assert.deepEqual(rowsOf(packFiles(evolved, 256 * 1024)), plainRows(await batchesOf(t1, {})));
});

test("delta feed - one read per snapshot for every session; each entry equals natslake's incremental read; released once all moved on", async () => {
  const t = await createTable(wh.path, "fan.once", "id BIGINT NOT NULL, s STRING, p STRING", { partitionKeys: ["p"], options: { bucket: "2", "bucket-key": "id" } });
  const feed = new DeltaFeed({ table: t, payloadLimit: LIMIT, projection: ["s", "id"], partition: ["a"] });
  const cursors = Array.from({ length: 5 }, () => feed.attach());
  let next = 0;
  for (let round = 1; round <= 4; round++) {
    const rows = Array.from({ length: 40 }, (_, k) => ({ id: next++, s: `r${round}-${k}`, p: k % 2 === 0 ? "a" : "b" }));
    const id = (await writeRows(t, rows))!;
    // All five ask at once: one read between them, the same entry for all.
    const s = await snap(t, id);
    const entries = await Promise.all(cursors.map((c) => c.get(s)));
    assert.ok(entries.every((e) => e !== null && e === entries[0]), "the same shared entry");
    const want = (await batchesOf(t, { incremental: { from: id - 1, to: id }, projection: ["s", "id"], partition: ["a"] })).flatMap((b) => b.toArray().map((r) => ({ ...(r as object) })));
    assert.deepEqual(rowsOf(entries[0]!.bodies), want, `snapshot ${id}: the projected rows of partition a that it added`);
    assert.equal(entries[0]!.rows, 20);
    assert.deepEqual(Object.keys(rowsOf(entries[0]!.bodies)[0]!), ["s", "id"], "in the projection's order");
    for (const c of cursors.slice(0, 4)) c.need(id + 1);
    assert.ok(feed.bytes > 0, "held while one session still needs it");
    cursors[4]!.need(id + 1);
    assert.equal(feed.bytes, 0, "released once every session moved past it");
  }
  assert.equal(feed.stats.reads, 4, "four snapshots, four reads — not twenty");
  assert.equal(feed.stats.served, 20);
  assert.equal(feed.stats.forwarded, 0, "a projection in another order than the files' columns is mapped, not forwarded");
  for (const c of cursors) c.detach();
  assert.equal(feed.sessions, 0);
});

test("delta feed - the bytes held are capped (the oldest go); a session alone behind the head reads for itself, several behind it share a read again", async () => {
  const t = await createTable(wh.path, "fan.cap", "id BIGINT NOT NULL, s STRING", { options: { bucket: "1", "bucket-key": "id" } });
  const snaps = await commitRounds(t, 12, 200, 0, 100);
  const one = await new DeltaFeed({ table: t, payloadLimit: LIMIT }).attach().get(await snap(t, snaps[0]!));
  const entryBytes = one!.bytes;
  const feed = new DeltaFeed({ table: t, payloadLimit: LIMIT, maxBytes: Math.floor(entryBytes * 4.5) });
  const fast = feed.attach();
  const stalled = feed.attach();
  const stalledToo = feed.attach();
  // The stalled sessions took snapshot 1 and stopped; the fast one goes through all twelve.
  for (const c of [fast, stalled, stalledToo]) await c.get(await snap(t, snaps[0]!));
  stalled.need(snaps[0]! + 1);
  stalledToo.need(snaps[0]! + 1);
  const got: FeedEntry[] = [];
  for (const id of snaps) {
    const e = await fast.get(await snap(t, id));
    assert.ok(e !== null, `the fast session is served snapshot ${id} from the feed`);
    got.push(e);
    fast.need(id + 1);
    assert.ok(feed.bytes <= Math.floor(entryBytes * 4.5) + 2048, `held ${feed.bytes} bytes, capped at ${Math.floor(entryBytes * 4.5)}`);
  }
  assert.ok(feed.stats.evicted >= 6, `the oldest entries went (${feed.stats.evicted} evicted)`);
  // Snapshot 2 went: two sessions need it, so it is read once more for both.
  const second = await snap(t, snaps[1]!);
  const [a, b] = await Promise.all([stalled.get(second), stalledToo.get(second)]);
  assert.ok(a !== null && a === b, "read again once, for both");
  assert.deepEqual(idsOf(a.bodies), idsOf(got[1]!.bodies));
  stalledToo.detach();
  stalled.need(snaps[2]!);
  // Alone behind the head now: it reads for itself (null), and the feed holds nothing for it.
  const before = feed.stats.reads;
  assert.equal(await stalled.get(await snap(t, snaps[2]!)), null);
  assert.equal(feed.stats.reads, before);
  // Still held entries are served to it once it reaches them.
  assert.ok((await stalled.get(await snap(t, snaps[11]!))) !== null);
});

test("delta feed - a snapshot whose files are too large to hold is not held: every session reads it itself", async () => {
  const t = await createTable(wh.path, "fan.large", "id BIGINT NOT NULL, s STRING", { options: { bucket: "1", "bucket-key": "id" } });
  const small = (await commitRounds(t, 1, 10))[0];
  // Rows that do not compress: 5000 × 150 random bytes make a data file well above 64 KiB.
  const large = await writeRows(t, Array.from({ length: 5000 }, (_, i) => ({ id: 10 + i, s: randomBytes(150).toString("base64") })));
  const feed = new DeltaFeed({ table: t, payloadLimit: LIMIT, maxEntryFileBytes: 64 * 1024 });
  const c = feed.attach();
  const d = feed.attach();
  assert.ok((await c.get(await snap(t, small!))) !== null);
  c.need(small! + 1);
  d.need(small! + 1);
  assert.equal(await c.get(await snap(t, large!)), null, "too large: read it yourself");
  assert.equal(await d.get(await snap(t, large!)), null);
  assert.equal(feed.stats.reads, 1);
  // Encoded rows beyond half of what the feed may hold are given up too (compressed files hide their size).
  const tight = new DeltaFeed({ table: t, payloadLimit: LIMIT, maxBytes: 256 * 1024 });
  assert.equal(await tight.attach().get(await snap(t, large!)), null);
  assert.equal(tight.bytes, 1024, "only the marker is held");
});

test("delta feed - a notified snapshot is read before any session asks when a session waits at the head for it; sessions behind the head start nothing", async () => {
  const t = await createTable(wh.path, "fan.prefetch", "id BIGINT NOT NULL, s STRING", { options: { bucket: "2", "bucket-key": "id" } });
  const [first] = await commitRounds(t, 1, 30);
  const feed = new DeltaFeed({ table: t, payloadLimit: LIMIT });
  const live = feed.attach();
  live.need(first! + 1); // took the first snapshot: waits for the next
  const [second] = await commitRounds(t, 1, 30, 30);
  feed.prefetch(second!);
  feed.prefetch(second!); // a repeated notification starts no second read
  // The read runs without the session: wait for it by the feed's own count (bounded).
  for (let i = 0; i < 200 && feed.stats.reads === 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(feed.stats.reads, 1, "read on the notification, once");
  assert.ok(feed.bytes > 0, "held for the session waiting for it");
  const e = await live.get(await snap(t, second!));
  assert.ok(e !== null);
  assert.deepEqual(idsOf(e.bodies).sort((a, b) => a - b), Array.from({ length: 30 }, (_, i) => 30 + i), "the rows the snapshot added");
  assert.equal(feed.stats.reads, 1, "the session was handed the read made before it asked");
  live.need(second! + 1);
  assert.equal(feed.bytes, 0, "released once the session moved past it");
  // A session that stops at the head (stalled while taking the second snapshot): the next snapshot notified is read
  // for it (it may be just slow), none after that.
  live.detach();
  const stalled = feed.attach();
  stalled.need(second!);
  const [third, fourth] = await commitRounds(t, 2, 30, 60);
  feed.prefetch(third!);
  for (let i = 0; i < 200 && feed.stats.reads === 1; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(feed.stats.reads, 2, "one snapshot read ahead of a session at the head");
  feed.prefetch(fourth!);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(feed.stats.reads, 2, "nothing read for a session behind the head");
  stalled.detach();
  assert.equal(feed.bytes, 0, "released with the last session");
});

test("delta feed - files announced before their snapshot links are decoded once, ahead, and the load takes them; none without a session at the head; stale ones dropped", async () => {
  const t = await createTable(wh.path, "fan.early", "id BIGINT NOT NULL, s STRING", { options: { bucket: "2", "bucket-key": "id" } });
  const store = new ManifestStore(t);
  const announced = async (id: number): Promise<AnnouncedFile[]> =>
    (await store.readDeltaEntries(await snap(t, id))).map((e) => ({ partition: e.partition, bucket: e.bucket, meta: e.file }));
  let clock = 0;
  const feed = new DeltaFeed({ table: t, payloadLimit: LIMIT, now: () => clock });
  const [first] = await commitRounds(t, 1, 40);
  feed.announce(await announced(first!));
  assert.equal(feed.earlyFiles, 0, "no session: nothing decoded ahead");

  const live = feed.attach();
  live.need(first! + 1); // waits for the next snapshot
  const [second] = await commitRounds(t, 1, 40, 40);
  const files = await announced(second!);
  assert.equal(files.length, 2, "one file per bucket");
  const pool = sharedParquetPool()!;
  const decodesBefore = pool.completed.decode;
  feed.announce(files);
  feed.announce(files); // a committable read again (a leader change) decodes nothing twice
  assert.equal(feed.earlyFiles, 2);
  const e = await live.get(await snap(t, second!));
  assert.ok(e !== null);
  assert.deepEqual(idsOf(e.bodies).sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => 40 + i), "the rows the snapshot added");
  assert.deepEqual([feed.stats.early, feed.stats.earlyTaken, feed.earlyFiles], [2, 2, 0], "the load took both files decoded ahead");
  assert.equal(pool.completed.decode - decodesBefore, 2, "each file decoded once");
  assert.equal(feed.stats.forwarded, 2, "both files' decoder messages forwarded as they were (the feed's columns are the files')");
  // The entry equals natslake's incremental read of the snapshot, batch for batch.
  const want = await batchesOf(t, { incremental: { from: second! - 1, to: second! } });
  assert.deepEqual(idsOf(e.bodies), idsOf(packBatches(want, LIMIT)));

  // Announced, never linked (a rejected committable): dropped once stale, at the next announcement.
  live.need(second! + 1);
  const [third, fourth] = await commitRounds(t, 2, 10, 80);
  feed.announce(await announced(third!));
  assert.equal(feed.earlyFiles, 2);
  clock += 11_000;
  feed.announce(await announced(fourth!));
  assert.equal(feed.earlyFiles, 2, "the stale ones went, the new ones wait");
  live.detach();
  assert.equal(feed.earlyFiles, 0, "released with the last session");
});
