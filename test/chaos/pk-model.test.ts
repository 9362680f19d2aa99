/**
 * The primary-key workload's judges without a cluster, each shown failing on what it must catch:
 * - the model of acknowledged changes applied in stream order (test/helpers/pk-model.ts) passes a table that applied
 *   them so — or that holds an unacknowledged change last — and names a table that lost a change, applied one twice
 *   or applied two out of stream order; every other wrong state is a finding of its kind;
 * - the level check (test/helpers/pk-snapshots.ts) passes non-overlapping levels and names a bucket whose level ≥ 1
 *   files overlap; the sequence chain names a flush committed twice;
 * - the look inside the flushed files (chaos/pk-flushes.ts) names a change flushed twice, one outside its snapshot's
 *   offsets, a refused one and one never published.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { judgePkRows, pkRow, publishOrderBreaks, type ChangeOp, type PkChangeOutcome } from "../helpers/pk-model.ts";
import type { RowOutcome } from "../helpers/load.ts";
import { levelsOfEntries, SequenceChain } from "../helpers/pk-snapshots.ts";
import { compareIntKeys, lsmFile, type FileSpec } from "../helpers/lsm-files.ts";
import { judgeFlushedChanges } from "../../chaos/pk-flushes.ts";
import type { AddedFile, FileCheck, SnapInfo } from "../../chaos/snapshot-chain.ts";
import { FileKind, type ManifestEntry } from "../../src/format/manifest.ts";
import { CommitKind } from "../../src/format/snapshot.ts";

let nextV = 1;
let nextSeq = 1;
/**
 * A change of `key` (versions increase in call order, as the load's do; producer = key % 2, bucket = key % 4); an
 * acknowledged one is stored in a message of its own unless `seq` names the message it shares.
 */
const ch = (key: number, op: ChangeOp, status: RowOutcome = "ok", seq?: number): PkChangeOutcome => ({
  key,
  v: nextV++,
  op,
  producer: key % 2,
  status,
  bucket: key % 4,
  at: 0,
  ...(status === "ok" || status === "duplicate" ? { seq: seq ?? nextSeq++ } : {}),
});
const row = (c: PkChangeOutcome): Record<string, unknown> => pkRow(c);
const leavesRow = (c: PkChangeOutcome): boolean => c.op === "+I" || c.op === "+U";

/** The table after applying `order` one change after the other, as a deduplicating merge does: the last wins. */
function applied(order: readonly PkChangeOutcome[]): Array<Record<string, unknown>> {
  const t = new Map<number, Record<string, unknown>>();
  for (const c of order) {
    if (leavesRow(c)) t.set(c.key, row(c));
    else t.delete(c.key);
  }
  return [...t.values()];
}

/** The acknowledged changes of `all` in stream order, as the writers must apply them. */
const streamOrder = (all: readonly PkChangeOutcome[]): PkChangeOutcome[] => all.filter((c) => c.seq !== undefined).sort((a, b) => a.seq! - b.seq! || a.v - b.v);

test("pk model - the state after each key's last acknowledged change passes; unacknowledged changes may or may not be there", () => {
  const k1 = [ch(1, "+I"), ch(1, "+I"), ch(1, "-D"), ch(1, "+I")];
  const k2 = [ch(2, "+I"), ch(2, "-D")];
  const k3 = [ch(3, "+I"), ch(3, "-U"), ch(3, "+U")];
  const k4 = [ch(4, "+I"), ch(4, "+I", "unknown")];
  const k5 = [ch(5, "+I", "unknown")];
  const k6 = [ch(6, "+I"), ch(6, "+I", "failed")];
  const k7 = [ch(7, "+I"), ch(7, "-D", "unknown"), ch(7, "+I")];
  const all = [...k1, ...k2, ...k3, ...k4, ...k5, ...k6, ...k7];
  const model = [row(k1[3]!), row(k3[2]!), row(k4[0]!), row(k6[0]!), row(k7[2]!)];
  assert.deepEqual(applied(streamOrder(all)).map((r) => r["id"]).sort(), model.map((r) => r["id"]).sort(), "the model is the acknowledged changes applied");
  const j = judgePkRows(all, model);
  assert.equal(j.findings, 0, j.describe());
  assert.deepEqual({ keys: j.keys, expectedRows: j.expectedRows, ambiguous: j.ambiguous, rowsRead: j.rowsRead }, { keys: 7, expectedRows: 5, ambiguous: 0, rowsRead: 5 });
  assert.deepEqual(j.changes, { published: 17, acknowledged: 13, unknown: 3, failed: 1 });
  // The unknown changes stored: key 4 at its unknown version, key 5 present, key 7's unknown delete stored last
  // (a delayed attempt after the later acknowledged upsert).
  const stored = [row(k1[3]!), row(k3[2]!), row(k4[1]!), row(k5[0]!), row(k6[0]!)];
  const j2 = judgePkRows(all, stored);
  assert.equal(j2.findings, 0, j2.describe());
  assert.equal(j2.ambiguous, 3);
  // BIGINTs as bigint (natslake's reader) read the same.
  assert.equal(judgePkRows(all, model.map((r) => ({ ...r, id: BigInt(r["id"] as number), v: BigInt(r["v"] as number) }))).findings, 0);
  assert.deepEqual(publishOrderBreaks(all), [], "every key's changes are in the stream in publish order");
  assert.throws(() => judgePkRows([{ ...k1[0]!, seq: undefined }], []), /acknowledged without a stream sequence/);
});

test("pk model - the table is judged by stream order, a message's changes in version order", () => {
  // Key 20's second upsert is stored before its first (another message, an earlier sequence); key 21's two changes
  // share a message, the delete after the upsert.
  const a = ch(20, "+I", "ok", 1000);
  const b = ch(20, "+I", "ok", 999);
  const c = ch(21, "+I", "ok", 1001);
  const d = ch(21, "-D", "ok", 1001);
  const all = [a, b, c, d];
  assert.deepEqual(publishOrderBreaks(all), [20], "the producer's order broke for key 20");
  assert.equal(judgePkRows(all, [row(a)]).findings, 0, "the version stored last in the stream is the model's");
  const byPublish = judgePkRows(all, [row(b)]);
  assert.deepEqual(byPublish.stale, [20], "the version published last is not, when the stream holds it earlier");
  assert.deepEqual(judgePkRows(all, [row(a), row(c)]).resurrected, [21], "the message's delete comes after its upsert");
});

test("pk model - a table that lost a change, applied one twice or applied two out of order is judged wrong", () => {
  const k1 = [ch(31, "+I"), ch(31, "+I"), ch(31, "+I")];
  const k2 = [ch(32, "+I"), ch(32, "+I"), ch(32, "-D")];
  const k3 = [ch(33, "+I")];
  const k4 = [ch(34, "+I"), ch(34, "-U"), ch(34, "+U")];
  const all = [...k1, ...k2, ...k3, ...k4];
  const stream = streamOrder(all);
  const without = (c: PkChangeOutcome): PkChangeOutcome[] => stream.filter((x) => x !== c);
  assert.equal(judgePkRows(all, applied(stream)).findings, 0, "applied once each, in stream order");

  // Lost: the last upsert of 31 (an older version shows), the delete of 32 (the key comes back), the only upsert of 33.
  assert.deepEqual(judgePkRows(all, applied(without(k1[2]!))).stale, [31]);
  assert.deepEqual(judgePkRows(all, applied(without(k2[2]!))).resurrected, [32]);
  assert.deepEqual(judgePkRows(all, applied(without(k3[0]!))).missing, [33]);
  assert.deepEqual(judgePkRows(all, applied(without(k4[2]!))).missing, [34], "the +U after its -U lost");

  // Applied twice: an earlier change again after the later ones (a flush committed again, messages consumed again).
  assert.deepEqual(judgePkRows(all, applied([...stream, k1[1]!])).stale, [31]);
  assert.deepEqual(judgePkRows(all, applied([...stream, k2[0]!])).resurrected, [32]);
  assert.deepEqual(judgePkRows(all, applied([...stream, ...k4.slice(0, 1)])).stale, [34]);

  // Out of order: two changes of a key swapped.
  const swapped = (x: PkChangeOutcome, y: PkChangeOutcome): PkChangeOutcome[] => stream.map((c) => (c === x ? y : c === y ? x : c));
  assert.deepEqual(judgePkRows(all, applied(swapped(k1[1]!, k1[2]!))).stale, [31]);
  assert.deepEqual(judgePkRows(all, applied(swapped(k2[1]!, k2[2]!))).resurrected, [32]);
  const j = judgePkRows(all, applied(swapped(k4[1]!, k4[2]!)));
  assert.deepEqual(j.missing, [34], "the -U applied after its +U");
  assert.match(j.describe(), /1 missing/);
});

test("pk model - every wrong state is a finding of its kind", () => {
  const k1 = [ch(11, "+I"), ch(11, "+I")];
  const k2 = [ch(12, "+I"), ch(12, "-D")];
  const k3 = [ch(13, "+I"), ch(13, "+U")];
  const k4 = [ch(14, "+I"), ch(14, "+I", "failed")];
  const k5 = [ch(15, "+I")];
  const k6 = [ch(16, "+I")];
  const k7 = [ch(17, "+I"), ch(17, "-U"), ch(17, "+U", "failed")];
  const all = [...k1, ...k2, ...k3, ...k4, ...k5, ...k6, ...k7];
  const rows = [
    // 11 missing: its last acknowledged change is an upsert
    row(k2[0]!), // 12 resurrected: deleted by its last acknowledged change
    row(k3[0]!), // 13 stale: an older acknowledged version
    row(k4[1]!), // 14 the failed upsert landed
    { ...row(k5[0]!), n: 999 }, // 15 other values than published
    row(k6[0]!),
    row(k6[0]!), // 16 read twice
    { id: 99, v: 1, src: "p1", n: 1 }, // 99 never touched
    row(k7[2]!), // 17 the failed +U after an acknowledged -U
  ];
  const j = judgePkRows(all, rows);
  assert.deepEqual(j.missing, [11]);
  assert.deepEqual(j.resurrected, [12]);
  assert.deepEqual(j.stale, [13]);
  assert.deepEqual(j.failedLanded.sort(), [14, 17]);
  assert.deepEqual(j.unexpected.sort((a, b) => a - b), [14, 15, 17, 99]);
  assert.deepEqual(j.duplicateKeys, [16]);
  assert.equal(j.findings, 8);
  for (const word of ["missing", "resurrected", "stale", "unexpected", "duplicate keys"]) assert.match(j.describe(), new RegExp(word));
});

const entry = (bucket: number, f: FileSpec): ManifestEntry => ({ kind: FileKind.ADD, partition: new Uint8Array(0), bucket, totalBuckets: 2, file: lsmFile(f) });

test("pk levels - overlapping level-0 files are fine, level ≥ 1 files must not overlap in key range", () => {
  const sound = [
    entry(0, { name: "a", level: 0, min: 0, max: 50, maxSeq: 9 }),
    entry(0, { name: "b", level: 0, min: 10, max: 60, maxSeq: 8 }),
    entry(0, { name: "c", level: 3, min: 0, max: 20 }),
    entry(0, { name: "d", level: 3, min: 21, max: 90 }),
    entry(1, { name: "e", level: 1, min: 5, max: 9 }),
    entry(1, { name: "f", level: 2, min: 0, max: 100 }),
  ];
  const ok = levelsOfEntries(sound, 5, compareIntKeys);
  assert.deepEqual(ok, { trees: 2, withUpperLevels: 2, maxLevel: 3, problems: [] });
  const flushesOnly = levelsOfEntries(sound.filter((e) => e.file.level === 0), 5, compareIntKeys);
  assert.deepEqual(flushesOnly, { trees: 1, withUpperLevels: 0, maxLevel: 0, problems: [] });

  const broken = levelsOfEntries([...sound, entry(1, { name: "g", level: 2, min: 100, max: 120 })], 5, compareIntKeys);
  assert.equal(broken.problems.length, 1);
  assert.match(broken.problems[0]!, /^bucket 1: level 2 is not a sorted run: the key range of g starts at or before the end of f's/);
});

test("pk sequence chain - flushes take increasing sequence numbers; one committed twice or behind the recorded number is named", () => {
  const flush = (bucket: number, name: string, minSeq: number, maxSeq: number): ManifestEntry => entry(bucket, { name, level: 0, min: 0, max: 10, minSeq, maxSeq });
  const rec = (seqs: Record<number, number>): Map<number, { seq?: bigint }> => new Map(Object.entries(seqs).map(([b, s]) => [Number(b), { seq: BigInt(s) }]));
  const sound = new SequenceChain();
  assert.deepEqual(sound.add(1, CommitKind.APPEND, rec({ 0: 9, 1: 4 }), [flush(0, "a", 0, 9), flush(1, "b", 0, 4)]), []);
  assert.deepEqual(sound.add(2, CommitKind.COMPACT, rec({ 0: 9, 1: 4 }), [entry(0, { name: "c", level: 5, minSeq: 0, maxSeq: 9 })]), [], "a compaction's outputs hold old numbers");
  assert.deepEqual(sound.add(3, CommitKind.APPEND, rec({ 0: 19, 1: 4 }), [flush(0, "d", 10, 14), flush(0, "e", 15, 19)]), []);

  const twice = new SequenceChain();
  twice.add(1, CommitKind.APPEND, rec({ 0: 9 }), [flush(0, "a", 0, 9)]);
  twice.add(2, CommitKind.APPEND, rec({ 0: 19 }), [flush(0, "b", 10, 19)]);
  const again = twice.add(3, CommitKind.APPEND, rec({ 0: 19 }), [flush(0, "b2", 10, 19)]);
  assert.equal(again.length, 1);
  assert.match(again[0]!, /snapshot 3 bucket 0: a flush's sequence numbers 10\.\.19 do not start above snapshot 2's 19/);

  const behind = new SequenceChain();
  behind.add(1, CommitKind.APPEND, rec({ 0: 9 }), [flush(0, "a", 0, 9)]);
  const back = behind.add(2, CommitKind.APPEND, rec({ 0: 8 }), [flush(0, "b", 10, 12)]);
  assert.deepEqual(back.length, 2);
  assert.match(back.join("\n"), /records bucket 0's sequence number 8 after 9/);
  assert.match(back.join("\n"), /a file holds sequence number 12, above the 8 the snapshot records/);
});

test("pk flushed files - each change flushed once, within its snapshot's offsets; refused and unknown versions are named", () => {
  // Bucket 1: snapshot 1 covers stream sequences (0, 10], snapshot 2 (10, 20], snapshot 3 is a compaction.
  const c1 = ch(41, "+I", "ok", 5); // v in snapshot 1
  const c2 = ch(45, "-D", "ok", 15); // a delete that carries its row, in snapshot 2
  const c3 = ch(49, "+I", "unknown"); // stored after all (no sequence known)
  const c4 = ch(53, "+I", "failed");
  const changes = [c1, c2, c3, c4];
  const snaps: SnapInfo[] = [1, 2, 3].map((id) => ({ id, timeMillis: 0, epoch: 1, offsets: new Map([[1, id === 1 ? 10 : 20]]) }));
  const file = (snap: number, path: string, versions: number[], compacted = false): [AddedFile, [string, FileCheck]] => [
    { snap, bucket: 1, path, rowCount: versions.length, fileSize: 1, compacted },
    [path, { ok: true, rows: versions.length, size: 1, ids: versions }],
  ];
  const judge = (files: Array<[AddedFile, [string, FileCheck]]>) => judgeFlushedChanges(files.map((f) => f[0]), new Map(files.map((f) => f[1])), snaps, changes);

  const sound = judge([file(1, "f1", [c1.v, 0]), file(2, "f2", [c2.v, c3.v]), file(3, "f3", [c1.v, c2.v, c3.v], true)]);
  assert.deepEqual(sound, { files: 2, changes: 3, problems: 0, samples: [] }, "retractions by key (0) and compaction outputs are not flushes");

  const twice = judge([file(1, "f1", [c1.v]), file(2, "f2", [c2.v, c1.v])]);
  assert.equal(twice.problems, 2);
  assert.match(twice.samples.join("\n"), new RegExp(`change v${c1.v} \\(key 41\\) flushed twice: in files of snapshots 1 and 2`));
  assert.match(twice.samples.join("\n"), new RegExp(`seq 5\\) is in snapshot 2's flush of bucket 1, which covers \\(10, 20\\]`));

  const ahead = judge([file(1, "f1", [c1.v, c2.v])]);
  assert.match(ahead.samples.join("\n"), /seq 15\) is in snapshot 1's flush of bucket 1, which covers \(0, 10\]/);

  const bad = judge([file(2, "f2", [c4.v, 999_999])]);
  assert.equal(bad.problems, 2);
  assert.match(bad.samples.join("\n"), /was refused, yet snapshot 2 flushed it/);
  assert.match(bad.samples.join("\n"), /version 999999, which was never published/);
});
