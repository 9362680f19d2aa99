/**
 * The cluster's writers compact their primary-key buckets (actors/lsm-compaction.ts): upserts and deletes flow into
 * an unpartitioned table (2 buckets) and a partitioned one, with a low compaction trigger and a small target file
 * size (so compactions move files up as well as rewrite them, and outputs roll over several files); the writers'
 * COMPACT snapshots land after the APPEND ones; in every snapshot every level >= 1 of every bucket is a sorted run and
 * the top level holds no delete; the rows equal the model — read by natslake, pypaimon and Java Paimon 1.4.2.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { readJson, sortRows } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";
import { javaPkRead } from "../helpers/java-pk.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { CommitKind, natslakeState } from "../../src/format/snapshot.ts";
import { readLsmCompactionOptions } from "../../src/lsm/compaction-options.ts";
import { framedKeyComparator } from "../../src/lsm/compact-bucket.ts";
import { Levels } from "../../src/lsm/levels.ts";
import { liveBuckets } from "../../src/maintenance/live-buckets.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import type { Producer } from "../../cluster/producer.ts";
import type { Table } from "../../src/table/table.ts";

type R = Record<string, unknown>;

/** What the snapshots of a table show of its LSM trees, checked snapshot by snapshot. */
interface TreeHistory {
  compactSnapshots: number;
  /** Files written by compactions (file source COMPACT) at level >= 1, and files moved up unchanged. */
  rewrittenUp: number;
  movedUp: number;
  maxSortedRuns: number;
}

/**
 * Every retained snapshot: every (partition, bucket) a valid LSM tree (Levels validates each level >= 1 as a sorted
 * run), no delete at the top level, sequence numbers below the bucket's recorded next one.
 */
async function checkEverySnapshot(t: Table): Promise<TreeHistory> {
  const numLevels = readLsmCompactionOptions(t.options).numLevels;
  const cmp = framedKeyComparator(t);
  const store = new ManifestStore(t);
  const h: TreeHistory = { compactSnapshots: 0, rewrittenUp: 0, movedUp: 0, maxSortedRuns: 0 };
  const earliest = (await t.snapshots.earliestId()) ?? 1;
  const latest = (await t.snapshots.latestId()) ?? 0;
  const seenAt = new Map<string, number>();
  for (let id = earliest; id <= latest; id++) {
    const s = await t.snapshots.snapshot(id);
    if (s.commitKind === CommitKind.COMPACT) h.compactSnapshots++;
    const st = natslakeState(s);
    for (const b of await liveBuckets(t, s, {}, store)) {
      const where = `snapshot ${id} bucket ${b.bucket} partition ${JSON.stringify(b.partitionValues)}`;
      let levels: Levels;
      try {
        levels = new Levels(b.files, numLevels, cmp);
      } catch (e) {
        throw new Error(`${where}: not a valid LSM tree: ${(e as Error).message}`);
      }
      h.maxSortedRuns = Math.max(h.maxSortedRuns, levels.numberOfSortedRuns());
      for (const f of levels.runOfLevel(levels.maxLevel)) assert.equal(f.deleteRowCount, 0, `${where}: ${f.fileName} at the top level holds deletes`);
      const recorded = st?.buckets.get(b.bucket)?.seq;
      for (const f of b.files) {
        if (recorded !== undefined) assert.ok(f.maxSequenceNumber <= recorded, `${where}: ${f.fileName}'s sequence numbers run past the bucket's recorded ${recorded}`);
        const key = `${b.bucket}/${f.fileName}`;
        const level = seenAt.get(key);
        if (f.level > 0 && level === undefined && f.fileSource === 1) h.rewrittenUp++;
        if (level !== undefined && level < f.level) h.movedUp++;
        seenAt.set(key, f.level);
      }
    }
  }
  return h;
}

/**
 * `rounds` rounds of 40 upserts and 4 deletes, each visible before the next, applied to the model: over 150 random
 * keys, or (`ascending`) mostly new keys above the earlier rounds' and no deletes but every fifth round — files whose
 * key ranges do not overlap, which compaction moves up without rewriting them once they are large enough.
 */
async function rounds(p: Producer, model: Map<string, R>, rounds: number, keyOf: (i: number) => R, ascending = false): Promise<void> {
  let x = 11;
  const rnd = (m: number): number => ((x = (x * 1103515245 + 12345) % 2 ** 31), x % m);
  const id = (k: R): string => JSON.stringify(k);
  for (let round = 0; round < rounds; round++) {
    const key = (i: number): number => (ascending ? (round % 5 === 4 ? rnd(round * 40) : round * 40 + i) : rnd(150));
    const upserts: R[] = Array.from({ length: 40 }, (_, i) => ({ ...keyOf(key(i)), name: `r${round}-${i}-${"x".repeat(rnd(40))}`, n: round * 100 + i }));
    void p.upsert(upserts);
    for (const u of upserts) model.set(id(keyOf(Number(u["id"]))), u);
    // Ascending rounds delete only in their random rounds: a file holding a delete is never moved into the top level
    // (its deletes must be dropped there), and how often a pick's output is the top level depends on how fast the
    // writer compacts — one that compacts each new run at once (trigger 2) always picks into it.
    const deletes = ascending && round % 5 !== 4 ? [] : Array.from({ length: 4 }, () => keyOf(ascending ? rnd((round + 1) * 40) : rnd(150)));
    if (deletes.length > 0) void p.delete(deletes);
    for (const d of deletes) model.delete(id(d));
    await p.flush();
    await p.waitVisible(p.token(), 30_000);
  }
}

/** Waits until no snapshot was added for `quietMs` (the writers' compactions have caught up). */
async function untilQuiet(t: Table, quietMs: number): Promise<void> {
  let last = -1;
  let since = Date.now();
  await waitFor(
    `${t.name} quiet for ${quietMs} ms`,
    async () => {
      const id = (await t.snapshots.latestId()) ?? 0;
      if (id !== last) {
        last = id;
        since = Date.now();
      }
      return Date.now() - since >= quietMs ? true : undefined;
    },
    90_000,
    200,
  );
}

test("cluster PK writer compaction - writers compact their buckets as COMPACT snapshots; every level >= 1 a sorted run in every snapshot; natslake, pypaimon and Java read the model", { timeout: 400_000 }, async () => {
  const c = await startCluster({ nodes: 2, commitInterval: "200ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const catalog = new Catalog(c.warehouse);
      const lsm = { "num-sorted-run.compaction-trigger": "3", "target-file-size": "2 kb", "snapshot.num-retained.min": "10000", "snapshot.num-retained.max": "10000" };
      await catalog.createTable(parseIdentifier("pkw.flat"), { columns: parseColumnList("id BIGINT NOT NULL, name STRING, n INT NOT NULL"), primaryKeys: ["id"], options: { bucket: "2", ...lsm } });
      await catalog.createTable(parseIdentifier("pkw.parted"), {
        columns: parseColumnList("dt STRING NOT NULL, id BIGINT NOT NULL, name STRING, n INT NOT NULL"),
        primaryKeys: ["dt", "id"],
        partitionKeys: ["dt"],
        options: { bucket: "1", ...lsm, "num-sorted-run.compaction-trigger": "2", "target-file-size": "1 kb" },
      });
      const flat = await producerWhenRegistered(c.nc, "pkw.flat");
      const parted = await producerWhenRegistered(c.nc, "pkw.parted");
      const flatModel = new Map<string, R>();
      const partedModel = new Map<string, R>();
      await Promise.all([rounds(flat, flatModel, 30, (i) => ({ id: i })), rounds(parted, partedModel, 20, (i) => ({ dt: i % 3 === 0 ? "2026-12-01" : "2026-12-02", id: i }), true)]);
      await flat.close();
      await parted.close();

      for (const [name, model] of [["pkw.flat", flatModel], ["pkw.parted", partedModel]] as const) {
        const t = await catalog.getTable(parseIdentifier(name));
        await untilQuiet(t, 3000);
        const h = await checkEverySnapshot(t);
        assert.ok(h.compactSnapshots >= 3, `${name}: the writers' compactions landed as COMPACT snapshots (${JSON.stringify(h)})`);
        assert.ok(h.rewrittenUp > 0, `${name}: compactions wrote files into levels >= 1 (${JSON.stringify(h)})`);
        // Ascending keys: files that overlap nothing, at least 70 % of the target size, move up unchanged.
        if (name === "pkw.parted") assert.ok(h.movedUp > 0, `${name}: compactions moved files up without rewriting them (${JSON.stringify(h)})`);
        const expected = sortRows([...model.values()]);
        const norm = (rows: R[]): R[] => sortRows(rows.map((x) => ({ ...x, id: Number(x["id"]) })));
        assert.deepEqual(norm(await readJson(t)), expected, `${name}: natslake`);
        assert.deepEqual(norm(await paimonRead(c.warehouse, name)), expected, `${name}: pypaimon`);
        const [java] = await javaPkRead(c.warehouse, t, [{}]);
        assert.ok(java?.rows !== undefined, `${name}: Java read it (${java?.error})`);
        assert.deepEqual(norm(java.rows), expected, `${name}: Java Paimon`);
      }
    });
  } finally {
    await c.stop();
  }
});
