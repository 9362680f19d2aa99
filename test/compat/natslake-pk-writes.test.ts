/**
 * Primary-key tables written by natslake's library (TableWrite: upserts, deletes, -U/+U, re-inserts over several
 * commits), read back identically by natslake, pypaimon and Java Paimon 1.4.2, and equal to a model of the changes:
 * per key the last change, a key whose last change retracts it is gone. Partitioned, several buckets, a string key
 * with characters whose UTF-16 and UTF-8 orders differ (Paimon sorts by UTF-8 bytes; a wrong order breaks Java's
 * merge), a BIGINT key beyond 2^53. The files carry Paimon's layout: _KEY_ columns, sequence numbers, value kinds,
 * min/max keys, and every level-0 file is sorted by key.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { Catalog, parseIdentifier, parseColumnList } from "../../src/index.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { sharedParquetPool } from "../../src/codec/parquet-pool.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { readParquet } from "../../src/codec/parquet.ts";
import { recordBatchToRows } from "../../src/codec/columns/batch-to-rows.ts";
import { keyValueFields } from "../../src/lsm/key-value-fields.ts";
import { paimonRead } from "../helpers/python.ts";
import { checkKeyValueFile } from "../helpers/pk-layout.ts";
import { javaPaimonRead } from "../helpers/java.ts";
import { readJson, reopen, sortRows, tempDir } from "../helpers/tables.ts";
import type { Table } from "../../src/table/table.ts";

const wh = tempDir();
after(() => wh.cleanup());

type R = Record<string, unknown>;

/** The model: per key its last change, in write order; deletes remove the key. */
function applyModel(model: Map<string, R>, keyOf: (r: R) => string, change: R): void {
  const kind = (change["_row_kind"] as string | undefined) ?? "+I";
  const { _row_kind: _k, ...row } = change;
  if (kind === "-D" || kind === "-U") model.delete(keyOf(row));
  else model.set(keyOf(row), row);
}

async function writeHistory(t: Table, history: R[][]): Promise<number[]> {
  const ids: number[] = [];
  for (const batch of history) {
    const w = await BatchWriter.open(t);
    await w.write(batch);
    const res = await w.commit();
    ids.push(res.snapshot!.id);
  }
  return ids;
}

/** Every live data file of the table in Paimon's layout (test/helpers/pk-layout.ts), at level 0. */
async function checkFileLayout(t: Table): Promise<void> {
  const latest = await t.snapshots.latest();
  for (const e of await new ManifestStore(t).readLiveEntries(latest!)) {
    await checkKeyValueFile(t, e);
    assert.equal(e.file.level, 0);
  }
}

test("natslake PK writes → natslake, pypaimon and Java read the model's rows: upserts, deletes, -U/+U, re-inserts; partitions; buckets; UTF-8 key order", { timeout: 300_000 }, async () => {
  const name = "pk.users";
  const t = await new Catalog(wh.path).createTable(parseIdentifier(name), {
    columns: parseColumnList("region STRING NOT NULL, name STRING NOT NULL, uid BIGINT NOT NULL, score INT, note STRING"),
    partitionKeys: ["region"],
    primaryKeys: ["region", "name", "uid"],
    options: { bucket: "3" },
  });
  // Names whose UTF-16 order differs from their UTF-8 byte order (a supplementary character vs U+FF5E).
  const names = ["alice", "\u{1F600}smile", "\uFF5Ewave", "Zoë", "b", ""];
  const regions = ["eu", "us"];
  const big = 2n ** 60n;
  const keyOf = (r: R): string => `${String(r["region"])}/${String(r["name"])}/${String(r["uid"])}`;
  const history: R[][] = [];
  let n = 0;
  // Snapshot 1: inserts. 2: updates of some. 3: deletes (whole rows and by key), a -U/+U pair. 4: re-inserts and
  // updates of the same key twice in one commit (the later wins). 5: a -U with no +U (the key is retracted).
  history.push(regions.flatMap((region) => names.flatMap((nm, i) => [0n, big + BigInt(i)].map((uid) => ({ region, name: nm, uid, score: n++, note: `v1 ${nm}` })))));
  history.push(names.slice(0, 3).map((nm, i) => ({ region: "eu", name: nm, uid: 0n, score: 1000 + i, note: "v2" })));
  history.push([
    { _row_kind: "-D", region: "eu", name: "alice", uid: 0n },
    { _row_kind: "-D", region: "us", name: "b", uid: big + 4n, score: 0, note: "whole row" },
    { _row_kind: "-U", region: "us", name: "Zoë", uid: 0n, score: 0, note: "before" },
    { _row_kind: "+U", region: "us", name: "Zoë", uid: 0n, score: 77, note: "after" },
  ]);
  history.push([
    { region: "eu", name: "alice", uid: 0n, score: 1, note: "back" },
    { _row_kind: "+U", region: "eu", name: "", uid: 0n, score: 2, note: "first" },
    { _row_kind: "+U", region: "eu", name: "", uid: 0n, score: 3, note: "second" },
  ]);
  history.push([{ _row_kind: "-U", region: "us", name: "\uFF5Ewave", uid: big + 2n }]);
  const snapshots = await writeHistory(t, history);
  assert.deepEqual(snapshots, [1, 2, 3, 4, 5]);

  const model = new Map<string, R>();
  for (const batch of history) for (const c of batch) applyModel(model, keyOf, c);
  const reopened = await reopen(wh.path, name);
  const expected = sortRows([...model.values()].map((r) => ({ ...r, uid: String(r["uid"]), score: r["score"] ?? null, note: r["note"] ?? null })));
  const normalize = (rows: R[]): R[] => sortRows(rows.map((r) => ({ ...r, uid: String(r["uid"]) })));

  const ours = await readJson(reopened);
  assert.deepEqual(normalize(ours), expected, "natslake's read equals the model");
  assert.deepEqual(normalize(await paimonRead(wh.path, name)), expected, "pypaimon's read equals the model");
  const [java] = await javaPaimonRead(wh.path, [reopened], [{ table: name }]);
  assert.ok(java!.rows !== undefined, java!.error);
  assert.deepEqual(normalize(java!.rows), expected, "Java Paimon's read equals the model");
  await checkFileLayout(reopened);
});

test("natslake PK writes - changelog-producer = input: each commit's changelog file holds every change with its kind, unfolded; sequence.field orders versions", { timeout: 300_000 }, async () => {
  const name = "pk.events";
  const t = await new Catalog(wh.path).createTable(parseIdentifier(name), {
    columns: parseColumnList("id INT NOT NULL, v STRING, ts BIGINT"),
    primaryKeys: ["id"],
    options: { bucket: "2", "changelog-producer": "input", "sequence.field": "ts" },
  });
  // ts orders versions: the version with the larger ts wins even when written first.
  await writeHistory(t, [
    [
      { id: 1, v: "new", ts: 20 },
      { id: 1, v: "old", ts: 10 },
      { id: 2, v: "a", ts: 1 },
    ],
    // A delete orders by its sequence field too: id 2's carries a later ts and deletes it; id 3's by key alone has a
    // null ts, which orders before every value (nulls first), so the insert stays — as Java reads it.
    [{ _row_kind: "-D", id: 2, ts: 2 }, { id: 3, v: "c", ts: 5 }, { _row_kind: "-D", id: 3 }],
  ]);
  const reopened = await reopen(wh.path, name);
  const rows = sortRows(await readJson(reopened));
  assert.deepEqual(rows, [
    { id: 1, v: "new", ts: 20 },
    { id: 3, v: "c", ts: 5 },
  ]);
  const [java] = await javaPaimonRead(wh.path, [reopened], [{ table: name }]);
  assert.ok(java!.rows !== undefined, java!.error);
  assert.deepEqual(sortRows(java!.rows), rows);
  // The changelog: every written row, its kind kept.
  const store = new ManifestStore(reopened);
  const kinds: string[] = [];
  for (const id of [1, 2]) {
    const s = await reopened.snapshots.snapshot(id);
    assert.ok(s.changelogManifestList !== null, `snapshot ${id} lists its changelog`);
    const entries = await store.readChangelogEntries(s);
    let count = 0;
    for (const e of entries) {
      count += e.file.rowCount;
      assert.ok(e.file.fileName.startsWith("changelog-"), e.file.fileName);
      const bytes = await reopened.io.readFile(reopened.paths.dataFilePath("", e.bucket, e.file.fileName));
      for (const r of recordBatchToRows(keyValueFields(reopened.schema), readParquet(bytes))) kinds.push(`${String(r["id"])}:${String(r["_VALUE_KIND"])}`);
    }
    assert.equal(count, s.changelogRecordCount);
  }
  assert.deepEqual(kinds.sort(), ["1:0", "1:0", "2:0", "2:3", "3:0", "3:3"]);
});

test("natslake PK writes - a large upsert, its buckets flushed in the Parquet pool's workers, reads back the same in natslake, pypaimon and Java; files in Paimon's layout", { timeout: 300_000 }, async () => {
  const name = "pk.large";
  const t = await new Catalog(wh.path).createTable(parseIdentifier(name), {
    columns: parseColumnList("id BIGINT NOT NULL, ts TIMESTAMP(3), user STRING, amount DOUBLE, qty INT"),
    primaryKeys: ["id"],
    options: { bucket: "2" },
  });
  // 30k rows over 27k keys (every tenth row updates an earlier key), nulls here and there: each bucket holds far
  // more rows than the pool's threshold, so both flush in a worker.
  const keyOf = (i: number): number => (i % 10 === 9 ? (i * 7919) % i : i);
  const rowsOf = (version: number): R[] =>
    Array.from({ length: 30_000 }, (_, i) => ({ id: keyOf(i), ts: 1_700_000_000_000 + i, user: (i + version) % 13 === 0 ? null : `user-${version}-${i % 997}`, amount: (i % 1000) * 0.25 + version, qty: (i + version) % 100 }));
  const pool = sharedParquetPool();
  const flushedBefore = pool?.completed["flush-keyed"] ?? 0;
  // Two commits: the second write's builders take the buffers the first one's gave back (buffer-recycler.ts).
  const model = new Map<string, R>();
  for (const version of [1, 2]) {
    const rows = rowsOf(version);
    const w = await BatchWriter.open(t);
    await w.upsert(rows);
    await w.commit();
    for (const r of rows) model.set(String(r["id"]), r);
  }
  if (pool !== null) assert.equal(pool.completed["flush-keyed"] - flushedBefore, 4, "every bucket flushed in the pool");
  const reopened = await reopen(wh.path, name);
  const normalize = (list: R[]): string[] => list.map((r) => JSON.stringify([String(r["id"]), r["user"] ?? null, r["amount"], r["qty"]])).sort();
  const expected = normalize([...model.values()]);
  assert.deepEqual(normalize(await readJson(reopened)), expected, "natslake's read equals the model");
  assert.deepEqual(normalize(await paimonRead(wh.path, name)), expected, "pypaimon's read equals the model");
  const [java] = await javaPaimonRead(wh.path, [reopened], [{ table: name }]);
  assert.ok(java!.rows !== undefined, java!.error);
  assert.deepEqual(normalize(java!.rows), expected, "Java Paimon's read equals the model");
  await checkFileLayout(reopened);
});
