import { after, test } from "node:test";
import assert from "node:assert/strict";
import { FileStoreCommit } from "../../../src/commit/file-store-commit.ts";
import { TableWrite } from "../../../src/write/table-write.ts";
import { BatchWriter } from "../../../src/write/batch-writer.ts";
import { ManifestStore } from "../../../src/table/manifest-store.ts";
import { isLakeError } from "../../../src/errors.ts";
import { createTable, readJson, reopen, tempDir, writeRows } from "../../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

test("commit - concurrent committers in one process: contiguous snapshots, every row once", async () => {
  const t = await createTable(wh.path, "c.race", "id BIGINT NOT NULL", { options: { bucket: "2", "bucket-key": "id" } });
  await Promise.all(Array.from({ length: 10 }, (_, k) => writeRows(t, Array.from({ length: 10 }, (_, i) => ({ id: k * 100 + i })))));
  assert.deepEqual(await t.snapshots.listIds(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const ids = (await readJson(t)).map((r) => Number(r["id"])).sort((a, b) => a - b);
  assert.equal(ids.length, 100);
  assert.equal(new Set(ids).size, 100);
  assert.equal((await t.snapshots.latest())?.totalRecordCount, 100);
});

test("commit - a retry after an unknown outcome finds the landed snapshot and does not apply it twice", async () => {
  const t = await createTable(wh.path, "c.retry", "id BIGINT NOT NULL");
  const w = new TableWrite(t);
  w.writeRows([{ id: 1 }, { id: 2 }]);
  const messages = await w.prepareCommit();
  const commit = new FileStoreCommit(t);
  const first = await commit.commit({ commitUser: "u", commitIdentifier: 42n, messages });
  assert.equal(first.snapshot?.id, 1);
  const again = await commit.commit({ commitUser: "u", commitIdentifier: 42n, messages, recoverFrom: 1 });
  assert.equal(again.alreadyCommitted, true);
  assert.equal(again.snapshot?.id, 1);
  assert.deepEqual(await t.snapshots.listIds(), [1]);
  // A different identifier is a new commit.
  const third = await commit.commit({ commitUser: "u", commitIdentifier: 43n, messages: [], skipEmpty: false });
  assert.equal(third.snapshot?.id, 2);
  assert.equal((await readJson(t)).length, 2);
});

test("commit - an overwrite racing a write to the same partition is a conflict, not a silent merge", async () => {
  const t = await createTable(wh.path, "c.ow", "id INT, dt STRING", { partitionKeys: ["dt"] });
  await writeRows(t, [{ id: 1, dt: "a" }, { id: 2, dt: "b" }]);
  const ow = await BatchWriter.open(t, { overwrite: { partition: ["a"] } });
  await ow.write([{ id: 10, dt: "a" }]);
  await writeRows(t, [{ id: 3, dt: "a" }]); // lands between the overwrite's start and its commit
  await assert.rejects(ow.commit(), (e: unknown) => isLakeError(e, "Conflict") && /changed the same partition/.test((e as Error).message));
  assert.deepEqual((await readJson(t)).map((r) => r["id"]).sort(), [1, 2, 3], "nothing replaced");
  // A write to another partition does not conflict.
  const ow2 = await BatchWriter.open(t, { overwrite: { partition: ["a"] } });
  await ow2.write([{ id: 20, dt: "a" }]);
  await writeRows(t, [{ id: 4, dt: "b" }]);
  const res = await ow2.commit();
  assert.equal(res.replacedFiles, 2);
  assert.deepEqual((await readJson(t)).map((r) => r["id"]).sort(), [2, 20, 4].sort());
});

test("commit - rows outside the overwritten partition are rejected before anything is written", async () => {
  const t = await createTable(wh.path, "c.ow2", "id INT, dt STRING", { partitionKeys: ["dt"] });
  const ow = await BatchWriter.open(t, { overwrite: { partition: ["a"] } });
  await assert.rejects(ow.write([{ id: 1, dt: "b" }]), /belongs to partition dt=b, but this write overwrites only dt=a/);
});

test("commit - manifests are merged per manifest.merge-min-count, so the list stays short", async () => {
  const t = await createTable(wh.path, "c.merge", "id BIGINT NOT NULL", { options: { "manifest.merge-min-count": "4" } });
  for (let i = 0; i < 15; i++) await writeRows(t, [{ id: i }]);
  const t2 = await reopen(wh.path, "c.merge");
  const latest = (await t2.snapshots.latest())!;
  const metas = await new ManifestStore(t2).allManifests(latest);
  assert.ok(metas.length <= 5, `manifest count ${metas.length} should stay below merge-min-count + 1`);
  assert.equal((await readJson(t2)).length, 15);
  assert.deepEqual((await readJson(t2)).map((r) => r["id"]), Array.from({ length: 15 }, (_, i) => i), "write order kept across merges");
});

test("commit - sequence numbers continue across writes, so a bucket's files order by write (append queue)", async () => {
  const cases: Array<[string, { partitionKeys?: string[]; options: Record<string, string> }]> = [
    ["c.seq_unpart", { options: { bucket: "2", "bucket-key": "id" } }],
    ["c.seq_part", { partitionKeys: ["dt"], options: { bucket: "2", "bucket-key": "id" } }],
  ];
  for (const [name, opts] of cases) {
    const t = await createTable(wh.path, name, "id BIGINT NOT NULL, dt STRING", opts);
    await writeRows(t, [{ id: 1, dt: "a" }, { id: 2, dt: "a" }, { id: 3, dt: "a" }]);
    await writeRows(t, [{ id: 1, dt: "a" }, { id: 2, dt: "a" }, { id: 3, dt: "a" }]);
    const t2 = await reopen(wh.path, name);
    const entries = await new ManifestStore(t2).readLiveEntries((await t2.snapshots.latest())!);
    const byBucket = new Map<number, Array<[bigint, bigint]>>();
    for (const e of entries) byBucket.set(e.bucket, [...(byBucket.get(e.bucket) ?? []), [e.file.minSequenceNumber, e.file.maxSequenceNumber]]);
    for (const [b, ranges] of byBucket) {
      assert.equal(ranges.length, 2, `bucket ${b} has a file per write`);
      const [first, second] = ranges.sort((x, y) => (x[0] < y[0] ? -1 : 1));
      assert.ok(second![0] > first![1], `${name} bucket ${b}: the second write's sequence numbers continue after the first's (${first} then ${second})`);
    }
  }
});

test("commit - a commit that keeps losing races takes the caller's exclusive turn after two and lands; without it, it gives up", async () => {
  const t = await createTable(wh.path, "c.turn", "id BIGINT NOT NULL", { options: { "commit.max-retries": "5", "commit.min-retry-wait": "1 ms", "commit.max-retry-wait": "2 ms" } });
  // A rival that lands a snapshot inside each of our attempts (between reading the base and linking), as the
  // cluster's commit rounds do to a slow maintenance commit — unless it is paused.
  let paused = false;
  let rivals = 0;
  const rival = async (): Promise<void> => {
    if (paused) return;
    rivals++;
    await writeRows(t, [{ id: 1000 + rivals }]);
  };
  const w = new TableWrite(t);
  w.writeRows([{ id: 1 }]);
  const messages = await w.prepareCommit();
  let takes = 0;
  let givenBack = 0;
  const res = await new FileStoreCommit(t).commit({
    commitUser: "maintenance",
    messages,
    prepare: async (base) => {
      await rival();
      return { properties: base?.properties ?? null };
    },
    exclusive: async () => {
      takes++;
      paused = true;
      return () => {
        givenBack++;
        paused = false;
      };
    },
  });
  assert.equal(res.attempts, 3, "two races lost, then the turn, then it lands");
  assert.equal(rivals, 2);
  assert.deepEqual([takes, givenBack], [1, 1], "the turn taken once, given back once");
  assert.equal((await readJson(t)).length, 3);

  // The same without a turn to take: every attempt loses, and the commit gives up after commit.max-retries.
  const w2 = new TableWrite(t);
  w2.writeRows([{ id: 2 }]);
  const messages2 = await w2.prepareCommit();
  await assert.rejects(
    new FileStoreCommit(t).commit({ commitUser: "maintenance-2", messages: messages2, prepare: async (base) => (await rival(), { properties: base?.properties ?? null }) }),
    (e: unknown) => isLakeError(e, "CommitRace") && /lost 5 races in a row/.test((e as Error).message),
  );
});
