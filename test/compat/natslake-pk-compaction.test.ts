/**
 * Primary-key tables compacted by natslake (src/lsm/compact-bucket.ts through `compactTable`) read identically by
 * natslake, pypaimon and Java Paimon 1.4.2, and equal to a model of the changes — with files at several levels at
 * once (level 0, levels between, the top), files upgraded in place and rewrites rolled at the target size. Partitioned,
 * two buckets, a string key with characters whose UTF-16 and UTF-8 orders differ, BIGINT keys beyond 2^53, upserts,
 * deletes by key and whole rows, -U/+U pairs, changelog-producer = input; a second table orders versions by
 * sequence.field, which compaction must keep. Every live file keeps Paimon's layout: rows in key order, one per key,
 * min/max key, sequence range and delete count as its rows say, COMPACT for rewrites, no retraction at the top level,
 * every level >= 1 a sorted run. Java's own writer continues natslake-compacted buckets (its restore validates the
 * levels) and compacts them; natslake continues Java's.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { Catalog, parseIdentifier, parseColumnList } from "../../src/index.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { compactTable } from "../../src/maintenance/compact.ts";
import { ManifestStore } from "../../src/table/manifest-store.ts";
import { readLsmCompactionOptions } from "../../src/lsm/compaction-options.ts";
import { framedKeyComparator } from "../../src/lsm/compact-bucket.ts";
import { Levels } from "../../src/lsm/levels.ts";
import { FileSource } from "../../src/format/manifest.ts";
import { liveBuckets } from "../../src/maintenance/live-buckets.ts";
import type { CompactSummary } from "../../src/maintenance/compact-summary.ts";
import type { Table } from "../../src/table/table.ts";
import { paimonRead } from "../helpers/python.ts";
import { checkKeyValueFile } from "../helpers/pk-layout.ts";
import { javaPaimonRead, javaRows } from "../helpers/java.ts";
import { javaPkWrite } from "../helpers/java-pk.ts";
import { readJson, reopen, sortRows, tempDir } from "../helpers/tables.ts";

const wh = tempDir();
after(() => wh.cleanup());

type R = Record<string, unknown>;

/** A small deterministic generator (mulberry32), so a failure replays. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every live file of every bucket in Paimon's layout, and every bucket a valid LSM tree; the levels seen. */
async function checkLayout(t: Table): Promise<Set<number>> {
  const latest = (await t.snapshots.latest())!;
  const options = readLsmCompactionOptions(t.options);
  const levels = new Set<number>();
  for (const bucket of await liveBuckets(t, latest, {}, new ManifestStore(t))) {
    const tree = new Levels(bucket.files, options.numLevels, framedKeyComparator(t));
    for (const f of bucket.files) {
      levels.add(f.level);
      const rows = await checkKeyValueFile(t, { kind: 0, partition: bucket.partition, bucket: bucket.bucket, totalBuckets: bucket.totalBuckets, file: f });
      if (f.level === 0) assert.equal(f.fileSource, FileSource.APPEND, "level 0 holds flushes only");
      if (f.level === tree.maxLevel) assert.equal(f.deleteRowCount, 0, `${f.fileName} at the top level holds retractions (${rows.length} rows)`);
    }
  }
  return levels;
}

/** natslake, pypaimon and Java read `expected`. */
async function allRead(t: Table, expected: R[], normalize: (rows: R[]) => R[]): Promise<void> {
  const fresh = await reopen(wh.path, t.name);
  assert.deepEqual(normalize(await readJson(fresh)), expected, "natslake");
  assert.deepEqual(normalize(await paimonRead(wh.path, t.name)), expected, "pypaimon");
  const [java] = await javaPaimonRead(wh.path, [fresh], [{ table: t.name }]);
  assert.deepEqual(normalize(javaRows(java)), expected, "Java Paimon 1.4.2");
}

test("natslake-compacted PK table at several levels: natslake, pypaimon and Java read the model's rows; Paimon's layout in every file", { timeout: 600_000 }, async () => {
  const name = "pkc.users";
  const t = await new Catalog(wh.path).createTable(parseIdentifier(name), {
    columns: parseColumnList("region STRING NOT NULL, name STRING NOT NULL, uid BIGINT NOT NULL, score INT, note STRING"),
    partitionKeys: ["region"],
    primaryKeys: ["region", "name", "uid"],
    options: { bucket: "2", "changelog-producer": "input", "num-sorted-run.compaction-trigger": "3", "num-levels": "5", "target-file-size": "6 kb", "file.compression": "none" },
  });
  const names = ["alice", "\u{1F600}smile", "\uFF5Ewave", "Zoë", "b", "", "bob", "carol"];
  const regions = ["eu", "us"];
  const big = 2n ** 60n;
  const keyOf = (r: R): string => `${String(r["region"])}/${String(r["name"])}/${String(r["uid"])}`;
  const model = new Map<string, R>();
  const random = rng(20261204);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const row = (n: number): R => ({ region: pick(regions), name: pick(names), uid: random() < 0.5 ? BigInt(Math.floor(random() * 12)) : big + BigInt(Math.floor(random() * 12)), score: n, note: `note ${n} `.padEnd(30 + (n % 17), String.fromCharCode(97 + (n % 26))) });
  // Deletes and updates pick among eu and us keys: the apac partition (below) keeps its one large file per bucket.
  const changeable = (): R[] => [...model.values()].filter((r) => r["region"] !== "apac");
  let n = 0;
  const summaries: CompactSummary[] = [];
  for (let round = 0; round < 14; round++) {
    const w = await BatchWriter.open(t);
    const changes: R[] = [];
    const size = round % 5 === 0 ? 200 : 4 + Math.floor(random() * 8);
    for (let i = 0; i < size; i++) {
      const r = row(n++);
      const dice = random();
      if (dice < 0.15 && changeable().length > 0) {
        const victim = pick(changeable());
        changes.push(random() < 0.5 ? { _row_kind: "-D", region: victim["region"], name: victim["name"], uid: victim["uid"] } : { _row_kind: "-D", ...victim });
      } else if (dice < 0.25 && changeable().length > 0) {
        const old = pick(changeable());
        changes.push({ _row_kind: "-U", ...old }, { _row_kind: "+U", ...old, score: n, note: `updated ${n}` });
      } else changes.push(r);
    }
    // Once, a partition of its own with many rows: files nothing else overlaps, large enough to be upgraded in place.
    if (round === 3) for (let i = 0; i < 240; i++) changes.push({ region: "apac", name: names[i % names.length]!, uid: BigInt(i), score: i, note: `apac ${i} `.padEnd(40, "q") });
    await w.write(changes);
    await w.commit();
    for (const c of changes) {
      const kind = (c["_row_kind"] as string | undefined) ?? "+I";
      const { _row_kind: _k, ...values } = c;
      if (kind === "-D" || kind === "-U") model.delete(keyOf(values));
      else model.set(keyOf(values), values);
    }
    if (round % 2 === 1) summaries.push(await compactTable(t));
  }
  const levels = await checkLayout(await reopen(wh.path, name));
  assert.ok(levels.has(0) && [1, 2, 3].some((l) => levels.has(l)) && levels.has(4), `files at level 0, a middle level and the top at once (levels ${[...levels].join(", ")})`);
  assert.ok(summaries.some((s) => (s.primaryKey?.buckets ?? []).some((b) => b.outputFiles > 1)), "some rewrite rolled into several files");
  const normalize = (rows: R[]): R[] => sortRows(rows.map((r) => ({ ...r, uid: String(r["uid"]) })));
  const expected = normalize([...model.values()].map((r) => ({ ...r, score: r["score"] ?? null, note: r["note"] ?? null })));
  await allRead(t, expected, normalize);

  // Then everything to the top level: one sorted run per bucket, no retraction left.
  const full = await compactTable(await reopen(wh.path, name), { full: true });
  assert.ok(full.snapshotId !== null);
  assert.ok([...summaries, full].some((s) => (s.primaryKey?.upgradedFiles ?? 0) > 0), "some files were upgraded in place");
  const after = await checkLayout(await reopen(wh.path, name));
  assert.deepEqual([...after], [4]);
  await allRead(t, expected, normalize);
});

test("natslake-compacted PK table with a sequence.field: compaction keeps the version the field orders last; all three read it", { timeout: 300_000 }, async () => {
  const name = "pkc.events";
  const t = await new Catalog(wh.path).createTable(parseIdentifier(name), {
    columns: parseColumnList("id INT NOT NULL, v STRING, ts BIGINT"),
    primaryKeys: ["id"],
    options: { bucket: "1", "sequence.field": "ts", "num-sorted-run.compaction-trigger": "2" },
  });
  const commit = async (rows: R[]): Promise<void> => {
    const w = await BatchWriter.open(t);
    await w.write(rows);
    await w.commit();
  };
  // Later writes with earlier ts lose, also across files and levels once compacted.
  await commit([{ id: 1, v: "ts 20", ts: 20 }, { id: 2, v: "ts 5", ts: 5 }, { id: 3, v: "x", ts: 1 }]);
  await commit([{ id: 1, v: "ts 10", ts: 10 }, { id: 2, v: "ts 6", ts: 6 }, { _row_kind: "-D", id: 3, ts: 0 }]);
  assert.ok((await compactTable(t)).snapshotId !== null);
  await commit([{ id: 1, v: "ts 15", ts: 15 }, { _row_kind: "-D", id: 2, ts: 7 }]);
  await compactTable(t, { full: true });
  await checkLayout(await reopen(wh.path, name));
  await allRead(t, [{ id: 1, v: "ts 20", ts: 20 }, { id: 3, v: "x", ts: 1 }], (rows) => sortRows(rows));
});

test("Java Paimon 1.4.2 continues natslake-compacted buckets (restores their levels, writes, compacts them), and natslake continues Java's", { timeout: 900_000 }, async () => {
  const name = "pkc.continued";
  const t = await new Catalog(wh.path).createTable(parseIdentifier(name), {
    columns: parseColumnList("p INT NOT NULL, id INT NOT NULL, v STRING, n BIGINT"),
    partitionKeys: ["p"],
    primaryKeys: ["p", "id"],
    options: { bucket: "2", "num-sorted-run.compaction-trigger": "3", "num-levels": "4", "target-file-size": "4 kb", "file.compression": "none" },
  });
  const keyOf = (r: R): string => `${String(r["p"])}/${String(r["id"])}`;
  const model = new Map<string, R>();
  const apply = (changes: readonly R[]): void => {
    for (const c of changes) {
      const kind = (c["_row_kind"] as string | undefined) ?? "+I";
      const { _row_kind: _k, ...values } = c;
      if (kind === "-D" || kind === "-U") model.delete(keyOf(values));
      else model.set(keyOf(values), { p: values["p"], id: values["id"], v: values["v"] ?? null, n: values["n"] ?? null });
    }
  };
  const random = rng(7);
  let n = 0;
  const changesOf = (size: number): R[] =>
    Array.from({ length: size }, () => {
      const key = { p: Math.floor(random() * 2), id: Math.floor(random() * 120) };
      n++;
      return random() < 0.15 ? { _row_kind: "-D", ...key } : { ...key, v: `v${n} `.padEnd(36, "w"), n: BigInt(n) };
    });
  const natslakeCommit = async (changes: R[]): Promise<void> => {
    const w = await BatchWriter.open(t);
    await w.write(changes);
    await w.commit();
    apply(changes);
  };
  // natslake: a bulk load, rounds of small changes with universal compactions — files at several levels.
  await natslakeCommit(changesOf(300));
  await compactTable(t, { full: true });
  for (let round = 0; round < 6; round++) {
    await natslakeCommit(changesOf(12));
    if (round % 2 === 1) await compactTable(t);
  }
  const levels = await checkLayout(await reopen(wh.path, name));
  assert.ok(levels.size >= 2 && levels.has(3), `natslake left files at several levels (${[...levels].join(", ")})`);

  // Java restores each bucket from natslake's files (validating every level), writes two commits — its writer may
  // compact at a commit — then compacts every bucket fully.
  const javaBatches = [changesOf(20), changesOf(20)];
  const res = await javaPkWrite(wh.path, await reopen(wh.path, name), javaBatches, { compact: true });
  assert.equal(res.error, undefined, res.error);
  for (const b of javaBatches) apply(b);
  assert.deepEqual(res.commits.map((c) => c.batch), [0, 1, "compact"]);
  const normalize = (rows: R[]): R[] => sortRows(rows.map((r) => ({ ...r, n: r["n"] === null ? null : String(r["n"]) })));
  const expected = (): R[] => normalize([...model.values()]);
  await allRead(t, expected(), normalize);

  // natslake continues Java's buckets: writes, compacts (a pick, then fully), and Java reads on.
  await natslakeCommit(changesOf(15));
  await natslakeCommit(changesOf(15));
  await natslakeCommit(changesOf(15));
  await compactTable(await reopen(wh.path, name));
  await natslakeCommit(changesOf(15));
  await compactTable(await reopen(wh.path, name), { full: true });
  await checkLayout(await reopen(wh.path, name));
  await allRead(t, expected(), normalize);
  // And Java once more on top (its restore validates natslake's latest levels).
  const last = [changesOf(10)];
  const again = await javaPkWrite(wh.path, await reopen(wh.path, name), last);
  assert.equal(again.error, undefined, again.error);
  apply(last[0]!);
  await allRead(t, expected(), normalize);
});
