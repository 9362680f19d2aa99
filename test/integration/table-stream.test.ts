/**
 * TableStream: each scan mode against a table that is being written, compared with pypaimon's batch reads of the same
 * snapshots (a full item = pypaimon's read of that snapshot; a delta = the rows of snapshot s that snapshot s−1 has
 * not); COMPACT snapshots passed over; consumer progress (ack, resume, ignore-progress); an expired start refused
 * naming the earliest snapshot.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { createTable, readJson, reopen, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { compactTable } from "../../src/maintenance/compact.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { parseScanMode, TableStream, type ScanMode, type StreamItem } from "../../src/scan/table-stream.ts";
import { getConsumer, writeConsumer } from "../../src/table/consumers.ts";
import type { Table } from "../../src/table/table.ts";

const wh = tempDir();
after(() => wh.cleanup());
const key = (r: Record<string, unknown>): string => JSON.stringify(r);

/** pypaimon's batch read of a snapshot, once per (table, snapshot): each read starts a Python process. */
const pyReads = new Map<string, Promise<Array<Record<string, unknown>>>>();
function pyAt(name: string, s: number): Promise<Array<Record<string, unknown>>> {
  const k = `${name}@${s}`;
  if (!pyReads.has(k)) pyReads.set(k, paimonRead(wh.path, name, { snapshot: s }));
  return pyReads.get(k)!;
}

/** The rows pypaimon reads at `s` that it does not read at `s − 1`: what snapshot s added (append tables). */
async function addedBy(name: string, s: number): Promise<Array<Record<string, unknown>>> {
  const now = await pyAt(name, s);
  if (s === 1) return now;
  const before = new Map<string, number>();
  for (const r of await pyAt(name, s - 1)) before.set(key(r), (before.get(key(r)) ?? 0) + 1);
  return now.filter((r) => {
    const n = before.get(key(r)) ?? 0;
    if (n > 0) before.set(key(r), n - 1);
    return n === 0;
  });
}

/** Items from the stream until `count` were delivered (bounded by time). */
async function take(stream: TableStream, count: number, timeoutMs = 30_000): Promise<StreamItem[]> {
  const out: StreamItem[] = [];
  const deadline = Date.now() + timeoutMs;
  while (out.length < count) {
    if (Date.now() > deadline) throw new Error(`only ${out.length} of ${count} items within ${timeoutMs} ms`);
    const item = await stream.next();
    if (item === null) break;
    out.push(item);
  }
  return out;
}

async function commitRound(t: Table, round: number): Promise<number> {
  return (await writeRows(t, Array.from({ length: 5 }, (_, k) => ({ id: round * 100 + k, n: round }))))!;
}

test("table stream - every scan mode against a table being written: full items equal pypaimon's read of the snapshot, deltas the rows it added; COMPACT passed over", { timeout: 180_000 }, async () => {
  const name = "stream.modes";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, n INT", { options: { bucket: "2", "bucket-key": "id" } });
  for (let r = 1; r <= 4; r++) await commitRound(t, r); // snapshots 1..4
  const t4 = await reopen(wh.path, name);
  const tsAfter2 = (await t4.snapshots.snapshot(2)).timeMillis;
  await compactTable(t4, { rules: { minFileNum: 2 } }); // snapshot 5: COMPACT
  const modes: Array<[string, ScanMode, Array<["full" | "delta", number]>]> = [
    ["latest", { mode: "latest" }, [["delta", 6], ["delta", 7]]],
    ["latest-full", parseScanMode("full"), [["full", 5], ["delta", 6], ["delta", 7]]],
    ["from-snapshot 3", parseScanMode("snapshot:3"), [["delta", 3], ["delta", 4], ["delta", 6], ["delta", 7]]],
    ["from-snapshot-full 2", parseScanMode("snapshot-full:2"), [["full", 2], ["delta", 3], ["delta", 4], ["delta", 6], ["delta", 7]]],
    ["from-timestamp (snapshot 2's time)", { mode: "from-timestamp", timestampMillis: tsAfter2 }, [["delta", 3], ["delta", 4], ["delta", 6], ["delta", 7]]],
  ];
  const streams = modes.map(([, mode]) => new TableStream(t4, { mode, pollMs: 50 }));
  // Every stream starts now (its position is taken at its first next()), and the table moves on while they read.
  const firstItems = Promise.all(streams.map((s) => s.next()));
  const writer = (async () => {
    await new Promise((r) => setTimeout(r, 100));
    await commitRound(t4, 6); // snapshot 6
    await new Promise((r) => setTimeout(r, 100));
    await commitRound(t4, 7); // snapshot 7
  })();
  const first = await firstItems;
  const all = await Promise.all(streams.map(async (s, i) => [first[i]!, ...(await take(s, modes[i]![2].length - 1))]));
  await writer;
  for (const [i, [label, , want]] of modes.entries()) {
    const items = all[i]!;
    assert.deepEqual(items.map((it) => [it.kind, it.snapshotId]), want, `${label}: items`);
    for (const it of items) {
      const ours = sortRows(await readJson(t4, it.read));
      const theirs = sortRows(it.kind === "full" ? await pyAt(name, it.snapshotId) : await addedBy(name, it.snapshotId));
      assert.deepEqual(ours, theirs, `${label}: ${it.kind} ${it.snapshotId} reads what pypaimon reads`);
      assert.ok(ours.length > 0, `${label}: ${it.kind} ${it.snapshotId} has rows`);
    }
  }
  for (const s of streams) s.close();
});

test("table stream - wake() ends the wait at once; close() ends next() with null", { timeout: 30_000 }, async () => {
  const name = "stream.wake";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, n INT", { options: { bucket: "1", "bucket-key": "id" } });
  const stream = new TableStream(t, { mode: { mode: "latest" }, pollMs: 60_000 });
  const pending = stream.next();
  await new Promise((r) => setTimeout(r, 50));
  await commitRound(t, 1);
  const started = performance.now();
  stream.wake();
  const item = await pending;
  assert.equal(item?.snapshotId, 1);
  assert.ok(performance.now() - started < 5_000, "woken, not polled (poll interval 60 s)");
  const waiting = stream.next();
  stream.close();
  assert.equal(await waiting, null);
});

test("table stream - wake(id) looks at the chain only for an announced snapshot it waits for; a lost notification is caught by the poll", { timeout: 30_000 }, async () => {
  const name = "stream.announced";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, n INT", { options: { bucket: "1", "bucket-key": "id" } });
  await commitRound(t, 1);
  const stream = new TableStream(t, { mode: { mode: "latest" }, pollMs: 60_000 });
  await stream.prepare(); // waits for snapshot 2
  stream.wake(1); // the announcement of the snapshot it already has
  let settled = false;
  const pending = stream.next().then((item) => {
    settled = true;
    return item;
  });
  await new Promise((r) => setTimeout(r, 100));
  await commitRound(t, 2); // snapshot 2 is on the chain, but no wake-up said so yet
  stream.wake(1); // a late, stale announcement: the stream waiting for 2 does not look
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(settled, false, "a wake-up announcing an older snapshot does not make the stream look");
  stream.wake(2);
  assert.equal((await pending)?.snapshotId, 2, "the announcement of the snapshot it waits for delivers it");

  // A notification that never comes: the poll looks anyway.
  const polled = new TableStream(t, { mode: { mode: "from-snapshot", snapshotId: 3 }, pollMs: 200 });
  polled.wake(2);
  const waiting = polled.next();
  await new Promise((r) => setTimeout(r, 50));
  await commitRound(t, 3);
  const started = performance.now();
  assert.equal((await waiting)?.snapshotId, 3);
  assert.ok(performance.now() - started < 5_000, "caught up by the poll");
  stream.close();
  polled.close();
});

test("table stream - a consumer resumes at its first unacknowledged snapshot; an acknowledged one never comes again; ignore-progress starts by the mode", { timeout: 60_000 }, async () => {
  const name = "stream.consumer";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, n INT", { options: { bucket: "1", "bucket-key": "id" } });
  for (let r = 1; r <= 5; r++) await commitRound(t, r);
  const a = new TableStream(t, { mode: { mode: "from-snapshot", snapshotId: 1 }, consumerId: "c1", pollMs: 50 });
  const got = await take(a, 3);
  assert.deepEqual(got.map((i) => i.snapshotId), [1, 2, 3]);
  await a.ack(2); // 3 was delivered but not acknowledged (in flight at a crash)
  a.close();
  assert.equal((await getConsumer(t, "c1"))?.nextSnapshot, 3, "Paimon's format: the first snapshot not processed");
  // Restarted with the same id and another mode: the progress wins.
  const b = new TableStream(await reopen(wh.path, name), { mode: { mode: "latest" }, consumerId: "c1", pollMs: 50 });
  assert.deepEqual((await take(b, 3)).map((i) => i.snapshotId), [3, 4, 5], "the one in flight comes again, none skipped");
  assert.equal(b.startedBy, "consumer");
  b.close();
  const c = new TableStream(await reopen(wh.path, name), { mode: { mode: "latest-full" }, consumerId: "c1", ignoreProgress: true, pollMs: 50 });
  assert.deepEqual((await take(c, 1)).map((i) => [i.kind, i.snapshotId]), [["full", 5]]);
  c.close();
});

test("table stream - a start that was expired is refused naming the earliest snapshot, not an empty stream; bad modes are refused", { timeout: 60_000 }, async () => {
  const name = "stream.expired";
  const t = await createTable(wh.path, name, "id BIGINT NOT NULL, n INT", { options: { bucket: "1", "bucket-key": "id", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2", "snapshot.time-retained": "1 ms" } });
  for (let r = 1; r <= 5; r++) await commitRound(t, r);
  await expireSnapshots(await reopen(wh.path, name));
  const earliest = (await (await reopen(wh.path, name)).snapshots.earliestId())!;
  assert.ok(earliest > 2, `snapshots expired (earliest ${earliest})`);
  const fresh = await reopen(wh.path, name);
  await assert.rejects(new TableStream(fresh, { mode: { mode: "from-snapshot", snapshotId: 1 } }).next(), new RegExp(`snapshot 1 of ${name} was expired: the earliest snapshot retained is ${earliest}`));
  await assert.rejects(new TableStream(fresh, { mode: { mode: "from-snapshot-full", snapshotId: 1 } }).next(), /was expired: the earliest snapshot retained is/);
  await assert.rejects(new TableStream(fresh, { mode: { mode: "from-snapshot-full", snapshotId: 99 } }).next(), /snapshot 99 of stream.expired does not exist \(latest: 5\)/);
  assert.throws(() => parseScanMode("sometimes"), /unknown scan mode 'sometimes'/);
  assert.throws(() => parseScanMode("time:yesterday"), /'yesterday' is not a timestamp/);
  assert.throws(() => new TableStream(fresh, { mode: { mode: "latest" }, consumerId: "a/b" }), /invalid consumer id 'a\/b': path separators are not allowed/);
  // A new consumer takes a new name's rules; one that exists (made by an older version, or by Java) resumes.
  await assert.rejects(new TableStream(fresh, { mode: { mode: "latest" }, consumerId: "audit team" }).next(), /invalid consumer id 'audit team': whitespace is not allowed/);
  await writeConsumer(fresh, "audit team", earliest);
  const resumed = new TableStream(fresh, { mode: { mode: "latest" }, consumerId: "audit team" });
  await resumed.prepare();
  assert.equal(resumed.nextSnapshotId, earliest);
});
