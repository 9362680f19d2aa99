/**
 * The commit beat with real processes: the writers of a table's buckets flush at the same instants — the multiples
 * of the commit interval on the clock — even on a node that joined later (its writers start at some other moment),
 * and the leader gathers what lands on one beat into one snapshot: snapshots hold the buckets' files together, not
 * one snapshot per flush. Every row exactly once.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import assert from "node:assert/strict";
import { producerWhenRegistered, startCluster } from "../helpers/cluster.ts";
import { idsOnceInBucketOrder } from "../helpers/tables.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { planSnapshotDelta } from "../../src/scan/read.ts";
import { CommitKind } from "../../src/format/snapshot.ts";

const BUCKETS = 4;
const ROWS_PER_SECOND = 2_000;
const SECONDS = 8;
const INTERVAL_MS = 500;

test("commit beat - writers flush on the interval's beat, a node that joined late too, and the leader folds their files into shared snapshots", { timeout: 180_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: `${INTERVAL_MS}ms` });
  try {
    const catalog = new Catalog(c.warehouse);
    await catalog.createTable(parseIdentifier("it.beat"), {
      columns: parseColumnList("id BIGINT NOT NULL, n INT"),
      // write-only: no COMPACT snapshots, so every snapshot is a beat's flushes.
      options: { bucket: String(BUCKETS), "bucket-key": "id", "write-only": "true" },
    });
    const producer = await producerWhenRegistered(c.nc, "it.beat", 60_000);
    const pending: Array<Promise<{ status: string }>> = [];
    let id = 0;
    let joined = 0;
    for (let s = 0; s < SECONDS * 10; s++) {
      for (let k = 0; k < ROWS_PER_SECOND / 10; k++, id++) pending.push(producer.write({ id, n: s }));
      await new Promise((r) => setTimeout(r, 100));
      if (s === 15) {
        // A second node joins between two beats: the buckets it takes over get writers started off the beat.
        while (Date.now() % INTERVAL_MS < INTERVAL_MS / 3 || Date.now() % INTERVAL_MS > INTERVAL_MS / 2) await new Promise((r) => setTimeout(r, 5));
        c.startNode("n2");
        joined = Date.now();
      }
    }
    await producer.flush();
    assert.equal((await Promise.all(pending)).filter((o) => o.status !== "ok").length, 0, "every batch acknowledged");
    await producer.waitVisible(producer.token(), 60_000);
    await producer.close();

    const t = await catalog.getTable(parseIdentifier("it.beat"));
    let snapshots = 0;
    let files = 0;
    /** Per data file flushed after the second node took its buckets: ms after the last beat when it was written. */
    const phases: number[] = [];
    for (const sid of await t.snapshots.listIds()) {
      const s = await t.snapshots.snapshot(sid);
      if (s.commitKind !== CommitKind.APPEND) continue;
      const splits = (await planSnapshotDelta(t, s)).splits;
      const n = splits.reduce((k, sp) => k + sp.files.length, 0);
      for (const sp of splits) {
        for (const f of sp.files) {
          const written = statSync(join(t.root, `bucket-${sp.bucket}`, f.fileName)).mtimeMs;
          if (written > joined + 3000) phases.push(written % INTERVAL_MS);
        }
      }
      if (n === 0) continue;
      snapshots++;
      files += n;
    }
    // Each bucket flushes once per beat while rows arrive; scattered flushes committed on arrival would make about
    // one snapshot per file (a ratio near 1). On the beat, a round committing on the first arrival held the first
    // flushes and the next round the rest (1.83 files a snapshot when tried); the leader now gathers the beat's
    // buckets into one round (actors/beat-gather.ts: 3.13 of at most 4 — the join and the first beats break some).
    assert.ok(files >= BUCKETS * SECONDS, `${files} files flushed`);
    // Most files written within a quarter interval after a beat (a flush encodes a few hundred rows), the joined
    // node's too; a writer flushing on its own start's phase lands anywhere in the interval (~400 ms after it here).
    // A file's mtime comes from the kernel's coarse clock, a few ms behind Date.now(): a flush right on a beat can
    // carry an mtime just before it (a phase of 499.9 ms), so up to 20 ms before a beat counts as on it. Without the
    // beat this fails whenever the joined writers start 125-480 ms into an interval (most runs; 1 of 2 when tried).
    const late = phases.filter((p) => p > INTERVAL_MS / 4 && p < INTERVAL_MS - 20);
    assert.ok(phases.length >= BUCKETS * 4, `${phases.length} files flushed after the join`);
    assert.ok(late.length <= phases.length / 5, `files written off the beat (ms after it): ${late.map(Math.round).join(", ")} of ${phases.length}: ${phases.map(Math.round).join(",")}`);
    assert.ok(files / snapshots >= 2.6, `${files} files in ${snapshots} APPEND snapshots: ${(files / snapshots).toFixed(2)} per snapshot`);
    const seen = await idsOnceInBucketOrder(t);
    assert.equal(seen.size, id, "every row once");
  } finally {
    await c.stop();
  }
});
