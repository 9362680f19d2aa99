/**
 * The leader lands an append table's compactions as COMPACT snapshots at most one per COMPACT_COMMIT_SPACING_MS:
 * one that arrives sooner after the last is held — the round's appends still commit at once, the commit stream is
 * purged only below it — and lands with whatever else arrived when the spacing has passed, in one snapshot.
 *
 * Real table files in a temporary warehouse (the compactions' outputs are real copies of their inputs); the
 * NATS/Redis ports are in-process fakes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync } from "node:fs";
import { ActorSystem, noopLogger } from "../../../actors/runtime/index.ts";
import { COMPACT_COMMIT_SPACING_MS } from "../../../actors/committer.ts";
import type { CompactionEntry } from "../../../actors/wire/messages.ts";
import type { ManifestEntry } from "../../../src/format/manifest.ts";
import { CommitKind } from "../../../src/format/snapshot.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../../../src/table/catalog.ts";
import { dataFilePath } from "../../../src/table/file-refs.ts";
import { ManifestStore } from "../../../src/table/manifest-store.ts";
import type { Table } from "../../../src/table/table.ts";
import { createTable, tempDir, writeRows } from "../../helpers/tables.ts";
import { committable, startCommitter, until } from "../../helpers/committer-harness.ts";

/** A compaction of `input` into a byte-for-byte copy of it under a new name (the copy exists, as a writer's output). */
function copyCompaction(table: Table, input: ManifestEntry, id: string): CompactionEntry {
  const output = { ...input.file, fileName: `compacted-${id}-${input.file.fileName}` };
  copyFileSync(dataFilePath(table, input), dataFilePath(table, { ...input, file: output }));
  return { type: "compaction", v: 1, table: table.name, bucket: input.bucket, ownerEpoch: 1, writerId: "w1", compactionId: id, planSnapshotId: 1, changes: [{ partition: input.partition, totalBuckets: input.totalBuckets, before: [input.file], after: [output] }] };
}

test("committer - compactions arriving within the spacing of the last COMPACT snapshot are held (appends commit meanwhile, the stream is purged below them) and land together in one", async () => {
  const dir = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(dir.path, "t.events", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
    for (let i = 0; i < 3; i++) await writeRows(table, [{ id: i }]);
    const inputs = [...(await new ManifestStore(table).readLiveEntries((await table.snapshots.latest())!))];
    assert.equal(inputs.length, 3);
    // A spacing wider than the default, so that the third compaction surely arrives while the second is held even on
    // a loaded machine (at 500 ms, a slow round let the second land alone before the third was read).
    const spacingMs = 3 * COMPACT_COMMIT_SPACING_MS;
    const state = startCommitter(system, table, { lastNotified: 3, compactCommitSpacingMs: spacingMs });
    const { published, queue } = state;
    // The first round announces snapshot 3 again (the last recorded as announced): only this leader's count.
    const kinds = (): CommitKind[] => published.filter((n) => n.snapshotId > 3).map((n) => n.kind as CommitKind);

    // The first compaction of the leadership lands at once.
    queue.push({ seq: 1, committable: copyCompaction(table, inputs[0]!, "c1") });
    await until("the first COMPACT snapshot", () => kinds().includes(CommitKind.COMPACT));
    const firstAt = performance.now();
    assert.equal(kinds().length, 1);

    // The next one, soon after, is held; an append behind it commits at once.
    queue.push({ seq: 2, committable: copyCompaction(table, inputs[1]!, "c2") });
    await new Promise((r) => setTimeout(r, 100));
    queue.push({ seq: 3, committable: committable(0, 10) });
    await until("the append's snapshot", () => kinds().includes(CommitKind.APPEND));
    assert.deepEqual(kinds(), [CommitKind.COMPACT, CommitKind.APPEND], "no COMPACT snapshot while the second compaction is held");
    await until("the stream purged through the first compaction", () => state.purgedThrough >= 1);
    assert.equal(state.purgedThrough, 1, "purged only below the held compaction (the append behind it stays until it lands)");

    // A third arrives while the second is held: both land in one snapshot once the spacing has passed.
    queue.push({ seq: 4, committable: copyCompaction(table, inputs[2]!, "c3") });
    await until("the second COMPACT snapshot", () => kinds().filter((k) => k === CommitKind.COMPACT).length === 2);
    assert.ok(performance.now() - firstAt >= spacingMs - 50, `landed ${Math.round(performance.now() - firstAt)} ms after the first`);
    assert.deepEqual(kinds(), [CommitKind.COMPACT, CommitKind.APPEND, CommitKind.COMPACT]);
    const live = await new ManifestStore(table).readLiveEntries((await table.snapshots.latest())!);
    assert.deepEqual(
      live.map((e) => e.file.fileName).sort(),
      inputs.map((e, i) => `compacted-c${i + 1}-${e.file.fileName}`).sort(),
      "every compaction's output replaced its input",
    );
    await until("the stream purged through everything", () => state.purgedThrough === 4, 5_000);
  } finally {
    await system.shutdown();
    dir.cleanup();
  }
});

test("committer - a primary-key table's compactions are not held", async () => {
  const dir = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await new Catalog(dir.path).createTable(parseIdentifier("t.events"), { columns: parseColumnList("id BIGINT NOT NULL"), partitionKeys: [], primaryKeys: ["id"], options: { bucket: "1" } });
    const state = startCommitter(system, table);
    // Rejected (a stale owner epoch) within a round each: not held for the spacing first.
    const stale = (id: string, seq: number): { seq: number; committable: CompactionEntry } => ({ seq, committable: { type: "compaction", v: 1, table: table.name, bucket: 0, ownerEpoch: 99, writerId: "w1", compactionId: id, planSnapshotId: 1, changes: [{ partition: new Uint8Array(4), totalBuckets: 1, before: [], after: [] }] } });
    state.queue.push(stale("c1", 1));
    await until("the first rejected", () => state.compactionRejections.length === 1);
    const at = performance.now();
    state.queue.push(stale("c2", 2));
    await until("the second rejected", () => state.compactionRejections.length === 2);
    assert.ok(performance.now() - at < COMPACT_COMMIT_SPACING_MS / 2, `decided ${Math.round(performance.now() - at)} ms after it arrived`);
  } finally {
    await system.shutdown();
    dir.cleanup();
  }
});

test("committer - an idle leader waits in the commit stream a commit check at a time, with and without compactions landed before", async () => {
  const dir = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(dir.path, "t.events", "id BIGINT NOT NULL", { options: { bucket: "1", "bucket-key": "id" } });
    await writeRows(table, [{ id: 1 }]);
    const [input] = await new ManifestStore(table).readLiveEntries((await table.snapshots.latest())!);
    // commitIntervalMs 40: a commit check of 10 ms, so about 100 reads a second while idle (the fake waits ≤ 20 ms).
    const state = startCommitter(system, table, { commitIntervalMs: 40 });
    const idleReads = async (): Promise<number> => {
      const from = state.fetches;
      await new Promise((r) => setTimeout(r, 500));
      return state.fetches - from;
    };
    await until("leading", () => state.published.length > 0);
    const before = await idleReads();
    state.queue.push({ seq: 1, committable: copyCompaction(table, input!, "c1") });
    await until("the COMPACT snapshot", () => state.published.some((n) => n.kind === CommitKind.COMPACT));
    await new Promise((r) => setTimeout(r, COMPACT_COMMIT_SPACING_MS));
    const after = await idleReads();
    for (const reads of [before, after]) assert.ok(reads <= 75, `${reads} reads of the stream in 500 ms idle (a spinning leader reads hundreds)`);
  } finally {
    await system.shutdown();
    dir.cleanup();
  }
});
