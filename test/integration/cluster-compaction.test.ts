/**
 * Writer-side compaction in the cluster: each bucket's writer rewrites its small files and the leader lands the
 * change as a COMPACT snapshot, while rows keep arriving in small commits and a writer node is killed and restarted.
 * Every acknowledged row is read exactly once, in bucket order, by natslake and by pypaimon; the live files per
 * bucket stay few; an unaware-bucket table (`bucket = -1`) is compacted too; a `write-only` table is never compacted.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { idsOnceInBucketOrder } from "../helpers/tables.ts";
import { threadNice, threadNices } from "../helpers/threads.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readRows } from "../../src/scan/read.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { CommitKind } from "../../src/format/snapshot.ts";
import type { Table } from "../../src/table/table.ts";
import { paimonRead } from "../helpers/python.ts";

const ROUNDS = 60;
const PER_ROUND = 40;

async function liveFilesPerBucket(t: Table): Promise<Map<number, number>> {
  const latest = await t.snapshots.latest();
  const out = new Map<number, number>();
  if (latest === null) return out;
  for (const e of await new ManifestStore(t).readLiveEntries(latest)) out.set(e.bucket, (out.get(e.bucket) ?? 0) + 1);
  return out;
}

test("cluster compaction - writers compact their buckets and the leader expires snapshots under load and a writer kill; rows exactly once, in bucket order; every retained snapshot whole; pypaimon agrees", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 2, commitInterval: "100ms", env: { NATSLAKE_COMPACTION_INTERVAL: "400ms" } });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      const id = parseIdentifier("it.compacted");
      await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: {
          bucket: "2",
          "bucket-key": "id",
          "compaction.min.file-num": "4",
          // Expiration on too, aggressively: the leader deletes what compaction replaced while rows keep landing.
          "snapshot.num-retained.min": "5",
          "snapshot.num-retained.max": "30",
          "snapshot.time-retained": "1 s",
        } });
      const quiet = parseIdentifier("it.writeonly");
      await catalog.createTable(quiet, { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "1", "bucket-key": "id", "write-only": "true" } });
      const unaware = parseIdentifier("it.unaware");
      await catalog.createTable(unaware, { columns: parseColumnList("id BIGINT NOT NULL"), options: { bucket: "-1", "compaction.min.file-num": "4" } });
      const producer = await producerWhenRegistered(c.nc, "it.compacted");
      const unawareProducer = await producerWhenRegistered(c.nc, "it.unaware");
      const quietProducer = await producerWhenRegistered(c.nc, "it.writeonly");
      let next = 0;
      const acked: Array<Promise<{ status: string }>> = [];
      for (let round = 0; round < ROUNDS; round++) {
        for (let k = 0; k < PER_ROUND; k++, next++) acked.push(producer.write({ id: next, s: `row-${next}` }));
        void quietProducer.write({ id: round });
        for (let k = 0; k < 5; k++) acked.push(unawareProducer.write({ id: round * 5 + k }));
        await producer.flush();
        await quietProducer.flush();
        await unawareProducer.flush();
        // A writer node dies in the middle of the run (a compaction of its may be in flight) and comes back.
        if (round === ROUNDS / 3) c.signal("n2", "SIGKILL");
        if (round === ROUNDS / 3 + 5) c.startNode("n2");
        await new Promise((r) => setTimeout(r, 110));
      }
      const outcomes = await Promise.all(acked);
      assert.equal(outcomes.filter((o) => o.status !== "ok").length, 0, "every row acknowledged");
      await producer.waitVisible(producer.token(), 60_000);
      await quietProducer.waitVisible(quietProducer.token(), 60_000);
      await unawareProducer.waitVisible(unawareProducer.token(), 60_000);
      await producer.close();
      await quietProducer.close();
      await unawareProducer.close();

      // Compaction catches up once the small commits stop: few files per bucket.
      const files = await waitFor("each bucket compacted to a few files", async () => {
        const per = await liveFilesPerBucket(await catalog.getTable(id));
        return per.size === 2 && [...per.values()].every((n) => n <= 6) ? per : undefined;
      }, 60_000, 300);
      const t = await catalog.getTable(id);
      // Reads below hold a snapshot for a while; with 1 s retention a compaction still landing would let expiration
      // delete what they read (as in Paimon, a reader's snapshot is not protected without a consumer). So wait until
      // compaction and expiration are done: the earliest and latest snapshot ids unchanged for 3 s.
      await waitUntilQuiet(t);
      const ids = await t.snapshots.listIds();
      const kinds = await Promise.all(ids.map(async (s) => (await t.snapshots.snapshot(s)).commitKind));
      assert.ok(kinds.includes(CommitKind.COMPACT), `COMPACT snapshots were committed: ${kinds.join(",")}`);
      // The rewrites ran in the nodes' compaction workers, whose threads run at the lower CPU priority (nice 10 by
      // default) while the nodes' main threads keep theirs.
      for (const n of c.nodes.values()) {
        const pid = n.proc.pid!;
        const nices = threadNices(pid);
        assert.ok(nices.filter((x) => x === 10).length >= 1, `node ${n.id}: a compaction worker thread at nice 10 (threads' nice values: ${nices.join(",")})`);
        assert.equal(threadNice(pid, pid), 0, `node ${n.id}: its main thread at nice 0`);
      }
      const latest = (await t.snapshots.latest())!;
      assert.equal(latest.totalRecordCount, next, "a compaction neither adds nor drops rows");
      assert.ok([...files.values()].reduce((a, b) => a + b, 0) < (ROUNDS * 2) / 3, `far fewer files than commits: ${JSON.stringify([...files])}`);
      // Expiration ran beside compaction: old snapshots (and the files only they held) are gone, the rest read whole.
      assert.ok(((await t.snapshots.earliestId()) ?? 1) > 1, "snapshots were expired");
      assert.ok(ids.length <= 40, `retention bounds the snapshots: ${ids.length}`);
      await assertEverySnapshotReadable(t);

      // Exactly once, and per bucket the ids (published in increasing order) come back increasing.
      const seen = await idsOnceInBucketOrder(t);
      assert.equal(seen.size, next, "every acknowledged row");
      const theirs = await paimonRead(c.warehouse, "it.compacted", { columns: ["id"] });
      assert.deepEqual(theirs.map((r) => Number(r["id"])).sort((a, b) => a - b), [...seen].sort((a, b) => a - b), "pypaimon reads the same rows");

      // bucket = -1: compacted too (any order is allowed there), every row once.
      const u = await waitFor("the unaware table compacted", async () => {
        const t2 = await catalog.getTable(unaware);
        return ((await liveFilesPerBucket(t2)).get(0) ?? 0) <= 6 ? t2 : undefined;
      }, 60_000, 300);
      const uKinds = await Promise.all((await u.snapshots.listIds()).map(async (s) => (await u.snapshots.snapshot(s)).commitKind));
      assert.ok(uKinds.includes(CommitKind.COMPACT), "the unaware table got COMPACT snapshots");
      const uIds: number[] = [];
      for await (const r of readRows(u)) uIds.push(Number(r["id"]));
      assert.deepEqual(uIds.sort((a, b) => a - b), Array.from({ length: ROUNDS * 5 }, (_, i) => i), "every row of the unaware table once");
      assert.equal((await paimonRead(c.warehouse, "it.unaware")).length, ROUNDS * 5, "pypaimon reads them all");

      // write-only: never compacted, one file per commit stays.
      const q = await catalog.getTable(quiet);
      const qKinds = await Promise.all((await q.snapshots.listIds()).map(async (s) => (await q.snapshots.snapshot(s)).commitKind));
      assert.ok(!qKinds.includes(CommitKind.COMPACT), "a write-only table is not compacted");
      assert.ok(((await liveFilesPerBucket(q)).get(0) ?? 0) >= 10, "its small files stay");
    }, 80);
  } finally {
    await c.stop();
  }
});

/** Waits until the table's earliest and latest snapshot ids stay unchanged for 3 s (nothing commits, nothing expires). */
async function waitUntilQuiet(t: Table): Promise<void> {
  let last = "";
  let since = Date.now();
  await waitFor("compaction and expiration to settle", async () => {
    const now = `${(await t.snapshots.earliestId()) ?? 0}..${(await t.snapshots.latestId()) ?? 0}`;
    if (now !== last) {
      last = now;
      since = Date.now();
      return undefined;
    }
    return Date.now() - since >= 3_000 ? true : undefined;
  }, 60_000, 250);
}

/** Every retained snapshot reads whole: as many rows as it records, no file missing. */
async function assertEverySnapshotReadable(t: Table): Promise<void> {
  for (const sid of await t.snapshots.listIds()) {
    const s = await t.snapshots.snapshot(sid);
    let n = 0;
    for await (const _ of readRows(t, { snapshotId: sid, projection: ["id"] })) n++;
    assert.equal(n, s.totalRecordCount, `snapshot ${sid} (${s.commitKind}) reads ${n} of its ${s.totalRecordCount} rows`);
  }
}

/** Publishes `rounds` small batches (each its own commit), returns the number of rows acknowledged. */
async function trickle(c: Awaited<ReturnType<typeof startCluster>>, table: string, rounds: number, from = 0): Promise<number> {
  const producer = await producerWhenRegistered(c.nc, table);
  let next = from;
  const acked: Array<Promise<{ status: string }>> = [];
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < 20; k++, next++) acked.push(producer.write({ id: next, s: `row-${next}` }));
    await producer.flush();
    await new Promise((r) => setTimeout(r, 110));
  }
  const outcomes = await Promise.all(acked);
  assert.equal(outcomes.filter((o) => o.status !== "ok").length, 0, "every row acknowledged");
  await producer.waitVisible(producer.token(), 60_000);
  await producer.close();
  return next;
}

async function assertExactlyOnce(c: Awaited<ReturnType<typeof startCluster>>, t: Table, rows: number): Promise<void> {
  const ids: number[] = [];
  for await (const r of readRows(t, { projection: ["id"] })) ids.push(Number(r["id"]));
  assert.equal(ids.length, rows, "no row twice, none lost");
  assert.equal(new Set(ids).size, rows);
  const theirs = await paimonRead(c.warehouse, t.name, { columns: ["id"] });
  assert.equal(theirs.length, rows, "pypaimon reads every row once");
}

test("cluster compaction - a leader killed right after landing a COMPACT snapshot: its successor counts the compaction as a duplicate and deletes none of its outputs", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      const id = parseIdentifier("it.leaderkill");
      await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "1", "bucket-key": "id", "compaction.min.file-num": "3" } });
      // n1 starts alone, so it leads; its first COMPACT snapshot kills it before the commit stream is purged.
      c.startNode("n1", [], { FAILPOINTS: "committer.after-compact-snapshot:kill", NATSLAKE_COMPACTION_INTERVAL: "300ms" });
      await waitFor("n1 leads", async () => (/"msg":"became leader"/.test(c.logs("n1")) ? true : undefined), 60_000, 100);
      c.startNode("n2", [], { NATSLAKE_COMPACTION_INTERVAL: "300ms" });
      const killed = c.waitExit("n1", 120_000);
      const rows = await trickle(c, "it.leaderkill", 30);
      assert.equal(await killed, null, "n1 died at the failpoint (SIGKILL)");
      await waitFor("n2 leads", async () => (/"msg":"became leader"/.test(c.logs("n2")) ? true : undefined), 60_000, 100);
      // n2 re-reads the compaction n1 committed: a duplicate, so its outputs (live now) stay.
      const more = await trickle(c, "it.leaderkill", 10, rows);
      const t = await catalog.getTable(id);
      // The successor read the compaction n1 landed again and counted it a duplicate (refusing it would delete live
      // files). It may rightly refuse another one n1's writer sent before dying (stale owner: never committed).
      assert.match(c.logs("n2"), /"msg":"compaction read again after it landed: a duplicate, its outputs kept"/);
      assert.doesNotMatch(c.logs("n2"), /"reason":"(inputs-gone|outputs-missing)"[^\n]*compaction rejected/, "no compaction refused for its inputs or outputs");
      await assertEverySnapshotReadable(t);
      await assertExactlyOnce(c, t, more);
    }, 80);
  } finally {
    await c.stop();
  }
});

test("cluster compaction - a writer killed after rewriting, before sending: the table is untouched, the next owner compacts the bucket", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      const id = parseIdentifier("it.writerkill");
      await catalog.createTable(id, { columns: parseColumnList("id BIGINT NOT NULL, s STRING"), options: { bucket: "1", "bucket-key": "id", "compaction.min.file-num": "3" } });
      // The only writer dies with a compaction rewritten and unsent; a second node (writer too) takes the bucket over.
      c.startNode("n1", [], { FAILPOINTS: "writer.compaction-before-send:kill", NATSLAKE_COMPACTION_INTERVAL: "300ms" });
      await waitFor("n1 leads", async () => (/"msg":"became leader"/.test(c.logs("n1")) ? true : undefined), 60_000, 100);
      c.startNode("n2", [], { NATSLAKE_COMPACTION_INTERVAL: "300ms" });
      const killed = c.waitExit("n1", 120_000);
      const rows = await trickle(c, "it.writerkill", 30);
      assert.equal(await killed, null, "n1 died at the failpoint (SIGKILL)");
      const compacted = await waitFor("n2 compacts the bucket", async () => {
        const t = await catalog.getTable(id);
        const kinds = await Promise.all((await t.snapshots.listIds()).map(async (s) => (await t.snapshots.snapshot(s)).commitKind));
        return kinds.includes(CommitKind.COMPACT) && ((await liveFilesPerBucket(t)).get(0) ?? 99) <= 4 ? t : undefined;
      }, 60_000, 300);
      await assertEverySnapshotReadable(compacted);
      await assertExactlyOnce(c, compacted, rows);
    }, 80);
  } finally {
    await c.stop();
  }
});
