/**
 * The leader maintains the tables it commits to: snapshot expiration after commits (cluster tables' retention) and
 * partition expiration on `partition.expiration-check-interval`, while rows keep landing exactly once. A leader
 * SIGKILLed in the middle of a snapshot expiration (failpoints `expire.after-data-file`, then
 * `expire.before-snapshots` on the next leader) or of an orphan-file cleanup (`orphans.after-delete`): every retained
 * snapshot still reads whole (natslake and pypaimon), and the next leader's scheduled run finishes the job.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { randomUUID } from "node:crypto";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure, type TestCluster } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readRows } from "../../src/scan/read.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import type { Table } from "../../src/table/table.ts";
import { paimonRead } from "../helpers/python.ts";

const day = (offset: number): string => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

test("cluster maintenance - the leader expires old partitions and old snapshots while rows land exactly once", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 2, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "it.maint";
      const id = parseIdentifier(name);
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(id, {
        columns: parseColumnList("id BIGINT NOT NULL, dt STRING NOT NULL"),
        partitionKeys: ["dt"],
        options: {
          bucket: "2",
          "bucket-key": "id",
          "partition.expiration-time": "7 d",
          "partition.expiration-check-interval": "1 s",
          "partition.timestamp-formatter": "yyyy-MM-dd",
          "snapshot.num-retained.min": "5",
          "snapshot.num-retained.max": "20",
          "snapshot.time-retained": "1 s",
        },
      });
      const producer = await producerWhenRegistered(c.nc, name);
      // Old partitions first (they expire), then rows of recent days in many small commits (snapshots expire).
      for (const d of [-10, -9]) await Promise.all(Array.from({ length: 50 }, (_, i) => producer.write({ id: 1000 * (d + 20) + i, dt: day(d) })));
      await producer.flush();
      await producer.waitVisible(producer.token(), 30_000);
      const kept: number[] = [];
      for (let round = 0; round < 30; round++) {
        for (const d of [-1, 0]) {
          const rowId = 1_000_000 + round * 10 + (d + 1);
          kept.push(rowId);
          void producer.write({ id: rowId, dt: day(d) });
        }
        await producer.flush();
        await new Promise((r) => setTimeout(r, 120));
      }
      await producer.waitVisible(producer.token(), 30_000);
      await producer.close();
      // The old partitions go (one OVERWRITE snapshot), the recent ones stay whole.
      const rowsNow = async (): Promise<number[]> => {
        const out: number[] = [];
        for await (const r of readRows(await catalog.getTable(id))) out.push(Number(r["id"]));
        return out.sort((a, b) => a - b);
      };
      const after = await waitFor("the old partitions expired", async () => {
        const ids = await rowsNow();
        return ids.every((x) => x >= 1_000_000) ? ids : undefined;
      }, 60_000, 500);
      assert.deepEqual(after, [...kept].sort((a, b) => a - b), "every recent row exactly once");
      const t = await catalog.getTable(id);
      // Snapshot expiration keeps the chain within num-retained.max: it runs after commits, at most once a second, so
      // a few committed since its last run may be on top — and on a loaded machine a run may come late, so this waits
      // for the bound rather than timing it (the last listing is in the message when it never comes).
      let last = "";
      await waitFor("old snapshots expired", async () => ((await t.snapshots.earliestId())! > 1 ? true : undefined), 30_000, 200);
      await waitFor("retention bounds the snapshots", async () => {
        const snapshots = await t.snapshots.listIds();
        const kinds = await Promise.all(snapshots.map(async (s) => (await t.snapshots.snapshot(s).catch(() => null))?.commitKind ?? "expired"));
        last = `${snapshots.length} snapshots retained (max 20, plus those committed within the second since the last run): ${kinds.join(",")}`;
        return snapshots.length <= 25 ? true : undefined;
      }, 30_000, 250).catch((e: unknown) => assert.fail(`${String(e)}; ${last}`));
      // The old days' rows land over several commits, so one run may drop the two partitions as they stand and a later
      // run what landed in them after it: what counts is that the leader's runs dropped all 100 old rows, only from
      // those two partitions.
      const runs = (c.logs("n1") + c.logs("n2")).split("\n").filter((l) => l.includes('"task":"expire-partitions"') && l.includes('"msg":"maintenance done"'));
      const field = (l: string, key: string): number => Number(new RegExp(`"${key}":(\\d+)`).exec(l)?.[1] ?? NaN);
      const runsSeen = `their log lines: ${runs.join(" | ") || "none"}`;
      assert.equal(runs.reduce((sum, l) => sum + field(l, "rows"), 0), 100, `the leader's scheduled runs dropped the 100 rows of the two old days; ${runsSeen}`);
      assert.ok(runs.every((l) => field(l, "partitions") <= 2), `no run dropped more than the two old partitions; ${runsSeen}`);
      // pypaimon agrees.
      const py = (await paimonRead(c.warehouse, name)).map((r) => Number(r["id"])).sort((a, b) => a - b);
      assert.deepEqual(py, after);
    }, 80);
  } finally {
    await c.stop();
  }
});

/** Snapshots on disk that do not read whole (a file or manifest missing, or fewer rows than they record). */
async function brokenSnapshots(t: Table): Promise<{ ids: number[]; broken: number[] }> {
  const ids = await t.snapshots.listIds();
  const broken: number[] = [];
  for (const sid of ids) {
    try {
      const s = await t.snapshots.snapshot(sid);
      let n = 0;
      for await (const _ of readRows(t, { snapshotId: sid, projection: ["id"] })) n++;
      if (n !== s.totalRecordCount) broken.push(sid);
    } catch {
      broken.push(sid);
    }
  }
  return { ids, broken };
}

/**
 * Publishes rounds of 20 rows (a commit each, about) until `until()` says stop or `maxRounds` passed; returns the ids
 * JetStream acknowledged — the cluster must land each exactly once, whichever node is up.
 */
async function publishRounds(c: TestCluster, table: string, from: number, maxRounds: number, until: () => boolean = () => false): Promise<number[]> {
  const producer = await producerWhenRegistered(c.nc, table);
  const sent: Array<Promise<{ status: string }>> = [];
  const ids: number[] = [];
  let next = from;
  for (let round = 0; round < maxRounds && !until(); round++) {
    for (let k = 0; k < 20; k++, next++) {
      ids.push(next);
      sent.push(producer.write({ id: next, s: `row-${next}` }));
    }
    await producer.flush();
    await new Promise((r) => setTimeout(r, 110));
  }
  const outcomes = await Promise.all(sent);
  assert.equal(outcomes.filter((o) => o.status !== "ok").length, 0, "every row acknowledged by JetStream");
  await producer.close();
  return ids;
}

/** Every acknowledged row exactly once in the latest snapshot, for natslake and pypaimon; every snapshot reads whole. */
async function assertLandedOnce(c: TestCluster, name: string, ids: number[]): Promise<void> {
  const catalog = new Catalog(c.warehouse);
  const want = [...ids].sort((a, b) => a - b);
  const mine = await waitFor("every acknowledged row visible", async () => {
    const out: number[] = [];
    for await (const r of readRows(await catalog.getTable(parseIdentifier(name)), { projection: ["id"] })) out.push(Number(r["id"]));
    return out.length >= want.length ? out.sort((a, b) => a - b) : undefined;
  }, 60_000, 300);
  assert.deepEqual(mine, want, "natslake reads every acknowledged row exactly once");
  const theirs = (await paimonRead(c.warehouse, name, { columns: ["id"] })).map((r) => Number(r["id"])).sort((a, b) => a - b);
  assert.deepEqual(theirs, want, "pypaimon reads the same rows");
  const { broken } = await brokenSnapshots(await catalog.getTable(parseIdentifier(name)));
  assert.deepEqual(broken, [], "every snapshot on disk reads whole");
}

test("cluster maintenance - the leader SIGKILLed mid-expiration twice: retained snapshots read whole, the next leader finishes the expiration", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "it.expirekill";
      const id = parseIdentifier(name);
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(id, {
        columns: parseColumnList("id BIGINT NOT NULL, s STRING"),
        // Writers compact from 3 small files on, so expiration deletes data files (the inputs COMPACT snapshots replaced).
        options: { bucket: "1", "bucket-key": "id", "compaction.min.file-num": "3", "snapshot.num-retained.min": "3", "snapshot.num-retained.max": "10", "snapshot.time-retained": "1 s" },
      });
      const env = { NATSLAKE_COMPACTION_INTERVAL: "300ms" };
      // n1 runs alone (it leads and writes) and dies after deleting the second data file of an expired range.
      c.startNode("n1", [], { ...env, FAILPOINTS: "expire.after-data-file:kill@2" });
      let n1Exit: number | null | undefined;
      void c.waitExit("n1", 200_000).then((code) => (n1Exit = code), () => undefined);
      const ids = await publishRounds(c, name, 0, 400, () => n1Exit !== undefined);
      assert.equal(await c.waitExit("n1", 60_000), null, "n1 died at expire.after-data-file (SIGKILL)");
      // Nobody runs now: the table is as the kill left it. The snapshots of the range it was expiring read deleted
      // files; every later one — the retained snapshots — reads whole.
      let t = await catalog.getTable(id);
      const first = await brokenSnapshots(t);
      assert.ok(first.broken.length > 0, `the kill left snapshots of the expired range reading deleted files (snapshots ${first.ids.join(",")})`);
      assert.deepEqual(first.broken, first.ids.slice(0, first.broken.length), `only the oldest snapshots are broken: ${first.broken.join(",")} of ${first.ids.join(",")}`);

      // n2 takes over, runs the same expiration again and dies before deleting the snapshot files (manifests gone).
      c.startNode("n2", [], { ...env, FAILPOINTS: "expire.before-snapshots:kill@1" });
      assert.equal(await c.waitExit("n2", 120_000), null, "n2 died at expire.before-snapshots (SIGKILL)");
      t = await catalog.getTable(id);
      const second = await brokenSnapshots(t);
      assert.ok(second.broken.length >= first.broken.length, `the range is still on disk, its manifests gone: ${second.broken.join(",")}`);
      assert.deepEqual(second.broken, second.ids.slice(0, second.broken.length), "only the oldest snapshots are broken");
      assert.equal(second.ids[0], first.ids[0], "no snapshot file was deleted yet");

      // n3 (no failpoint) leads and finishes: the broken snapshots go, and everything keeps landing exactly once.
      c.startNode("n3", [], env);
      const newest = Math.max(...second.broken);
      await waitFor("n3's expiration removed the broken range", async () => {
        const now = await brokenSnapshots(await catalog.getTable(id));
        return now.broken.length === 0 && (now.ids[0] ?? 0) > newest ? true : undefined;
      }, 90_000, 500);
      const more = await publishRounds(c, name, 100_000, 10);
      await assertLandedOnce(c, name, [...ids, ...more]);
      assert.match(c.logs("n3"), /"msg":"became leader"/);
    }, 80);
  } finally {
    await c.stop();
  }
});

test("cluster maintenance - the leader SIGKILLed mid orphan-file cleanup: nothing referenced is touched, the next leader deletes the rest", { timeout: 240_000 }, async () => {
  const c = await startCluster({ nodes: 0, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "it.orphankill";
      const id = parseIdentifier(name);
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(id, {
        columns: parseColumnList("id BIGINT NOT NULL, s STRING"),
        options: { bucket: "2", "bucket-key": "id", "natslake.orphan-older-than": "10 min", "natslake.orphan-check-interval": "1 s" },
      });
      // n1 leads and writes; its scheduled cleanup finds nothing old enough until orphans are planted.
      c.startNode("n1", [], { FAILPOINTS: "orphans.after-delete:kill@3" });
      const ids = await publishRounds(c, name, 0, 15);
      await assertLandedOnce(c, name, ids);
      const t = await catalog.getTable(id);
      // Orphans as crashed writes and commits leave them: one young data file the bound protects, and, aged an hour,
      // data files in both buckets (copies of live ones), manifests, a temp file.
      const live = await new ManifestStore(t).readLiveEntries((await t.snapshots.latest())!);
      const livePath = (i: number): string => {
        const e = live[i % live.length]!;
        return t.paths.dataFilePath("", e.bucket, e.file.fileName, e.file.externalPath);
      };
      const young = join(dirname(livePath(0)), `data-${randomUUID()}-0.parquet`);
      copyFileSync(livePath(0), young);
      const aged: string[] = [];
      for (let i = 0; i < 8; i++) {
        const dst = join(dirname(livePath(i)), `data-${randomUUID()}-0.parquet`);
        copyFileSync(livePath(i), dst);
        aged.push(dst);
      }
      for (const n of [`manifest-${randomUUID()}-0`, `manifest-list-${randomUUID()}-0`]) {
        writeFileSync(join(t.paths.manifestDir, n), "not referenced");
        aged.push(join(t.paths.manifestDir, n));
      }
      mkdirSync(join(t.root, "bucket-0"), { recursive: true });
      aged.push(join(t.root, "bucket-0", `.data-${randomUUID()}-0.parquet.${randomUUID()}.tmp`));
      writeFileSync(aged[aged.length - 1]!, "half written");
      // Aged last: the cleanup running every second may take them from now on.
      const hourAgo = new Date(Date.now() - 3_600_000);
      for (const p of aged) utimesSync(p, hourAgo, hourAgo);
      const stillThere = (): string[] => aged.filter((p) => existsSync(p));

      assert.equal(await c.waitExit("n1", 60_000), null, "n1 died at orphans.after-delete (SIGKILL)");
      assert.equal(stillThere().length, aged.length - 3, "the killed run deleted three orphans, the rest are still there");
      assert.deepEqual((await brokenSnapshots(await catalog.getTable(id))).broken, [], "every snapshot reads whole after the kill");

      // n2 leads; its first scheduled cleanup deletes the rest; the young orphan stays; rows keep landing once.
      c.startNode("n2");
      await waitFor("n2's cleanup deleted the remaining orphans", () => (stillThere().length === 0 ? true : undefined), 90_000, 300);
      assert.ok(existsSync(young), "an orphan younger than the bound is kept");
      const more = await publishRounds(c, name, 100_000, 10);
      await assertLandedOnce(c, name, [...ids, ...more]);
    }, 80);
  } finally {
    await c.stop();
  }
});
