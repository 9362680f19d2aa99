/**
 * The merge engines' models of the primary-key chaos workload (test/helpers/pk-engines.ts) without a cluster: each
 * engine's fold of a hand-made history equals what its semantics give (worked out here column by column), a table
 * holding it passes, and each judge names what it must catch — an acknowledged change lost, one applied twice, two
 * applied out of stream order, a refused change stored, a key twice —, while unacknowledged changes may or may not be
 * there (enumerated for aggregation, up to a bound past which the key is counted unverifiable).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { ENGINE_WORKLOADS, foldRows, judgeEngineRows, MAX_ENUMERATED_UNKNOWNS, mayHold, mix } from "../helpers/pk-engines.ts";
import type { RowOutcome } from "../helpers/load.ts";
import type { PkChangeOutcome } from "../helpers/pk-model.ts";

const partial = ENGINE_WORKLOADS["partial-update"];
const aggregation = ENGINE_WORKLOADS.aggregation;
const firstRow = ENGINE_WORKLOADS["first-row"];

let nextSeq = 1;
/** A change of `key` at version `v` (stream order = call order for acknowledged ones, each in its own message). */
const ch = (key: number, v: number, status: RowOutcome = "ok"): PkChangeOutcome => ({
  key,
  v,
  op: "+I",
  producer: key % 2,
  status,
  bucket: key % 4,
  at: 0,
  ...(status === "ok" || status === "duplicate" ? { seq: nextSeq++ } : {}),
});

/** The first version ≥ `from` whose partial row sets exactly the columns of `parts` (bit 1 a, 2 b, 4 c). */
function versionSetting(parts: number, from: number): number {
  for (let v = from; ; v++) if (1 + (mix(v) % 7) === parts) return v;
}

test("pk engines - a change's row follows from its version: partial rows set v and a non-empty subset, aggregation rows a signed total", () => {
  const seen = new Set<number>();
  for (let v = 1; v <= 500; v++) {
    const r = partial.row({ key: 7, v, op: "+I", producer: 1 });
    assert.equal(r["v"], v);
    const set = ["a", "b", "c"].filter((n) => r[n] !== undefined);
    assert.ok(set.length > 0, `version ${v} sets none of a, b, c`);
    seen.add(set.length);
    assert.deepEqual(partial.row({ key: 7, v, op: "+I", producer: 1 }), r, "the same version gives the same row");
  }
  assert.deepEqual([...seen].sort(), [1, 2, 3], "rows set one, two or three of the columns");
  const totals = Array.from({ length: 500 }, (_, i) => aggregation.row({ key: 1, v: i + 1, op: "+I", producer: 1 })["total"] as number);
  assert.ok(totals.some((t) => t < 0) && totals.some((t) => t > 0), "totals of both signs");
});

test("pk engines - partial-update: each column the last non-null value in stream order; a lost or reordered part is stale", () => {
  const va = versionSetting(1, 1); // a only
  const vbc = versionSetting(6, va + 1); // b and c
  const va2 = versionSetting(1, vbc + 1); // a again
  const k = [ch(1, va), ch(1, vbc), ch(1, va2)];
  const want = { id: 1, v: va2, a: `p1.${va2}`, b: vbc % 100_000, c: vbc * 3 };
  assert.deepEqual(foldRows(partial, k), want);
  const j = judgeEngineRows(partial, k, [{ ...want, id: 1n, v: BigInt(va2), c: BigInt(vbc * 3) }]);
  assert.equal(j.findings, 0, j.describe());
  // The second change lost: b and c null.
  const lost = judgeEngineRows(partial, k, [{ ...want, b: null, c: null }]);
  assert.deepEqual(lost.stale, [1], lost.describe());
  // The first two applied after the third (out of stream order): a is the first one's.
  const reordered = judgeEngineRows(partial, k, [{ ...want, v: vbc, a: `p1.${va}` }]);
  assert.deepEqual(reordered.stale, [1], reordered.describe());
  // Nothing of the key: missing.
  assert.deepEqual(judgeEngineRows(partial, k, []).missing, [1]);
});

test("pk engines - aggregation: total summed, hi the maximum, v and note the last non-null; a change applied twice or lost puts the sum off", () => {
  const k = [ch(2, 10), ch(2, 11), ch(2, 12), ch(2, 13)];
  const rows = k.map((c) => aggregation.row(c));
  const total = (rows[0]!["total"] as number) + (rows[1]!["total"] as number) + (rows[2]!["total"] as number) + (rows[3]!["total"] as number);
  const hi = Math.max(rows[0]!["hi"] as number, rows[1]!["hi"] as number, rows[2]!["hi"] as number, rows[3]!["hi"] as number);
  const note = [...rows].reverse().find((r) => r["note"] !== null)?.["note"] ?? null;
  const want = { id: 2, v: 13, total, hi, note };
  assert.deepEqual(foldRows(aggregation, k), want);
  assert.equal(judgeEngineRows(aggregation, k, [want]).findings, 0);
  const twice = judgeEngineRows(aggregation, k, [{ ...want, total: total + (rows[1]!["total"] as number) }]);
  assert.deepEqual(twice.stale, [2], "change 11 applied twice");
  const lost = judgeEngineRows(aggregation, k, [{ ...want, v: 12, total: total - (rows[3]!["total"] as number) }]);
  assert.deepEqual(lost.stale, [2], "change 13 lost");
  // A note kept from an older change when the newer ones have none.
  const noted = versionSetting(1, 1);
  let silent = noted + 1;
  while (mix(silent) % 3 === 0) silent++;
  const withNote = [ch(3, mix(noted) % 3 === 0 ? noted : noted * 3), ch(3, silent)];
  const n = aggregation.row(withNote[0]!)["note"];
  assert.equal(foldRows(aggregation, withNote)?.["note"], n, "an older non-null note stays");
});

test("pk engines - aggregation with unacknowledged changes: any subset of them may be in the sum; too many to enumerate is unverifiable", () => {
  const acked = [ch(4, 20), ch(4, 21)];
  const u1 = ch(4, 22, "unknown");
  const u2 = ch(4, 23, "unknown");
  const all = [...acked, u1, u2];
  const base = foldRows(aggregation, acked)!;
  const t = (c: PkChangeOutcome): number => aggregation.row(c)["total"] as number;
  const withU2 = foldRows(aggregation, [...acked, u2])!;
  assert.equal(judgeEngineRows(aggregation, all, [base]).findings, 0, "neither stored");
  const j = judgeEngineRows(aggregation, all, [withU2]);
  assert.equal(j.findings, 0, j.describe());
  assert.equal(j.ambiguous, 1);
  // u2 stored before the acknowledged ones: the sum includes it, the last values are the acknowledged ones' (its note
  // only when theirs are all null).
  const before = { ...base, total: (base["total"] as number) + t(u2), hi: withU2["hi"], note: base["note"] ?? withU2["note"] };
  assert.equal(judgeEngineRows(aggregation, all, [before]).findings, 0);
  // A sum no subset gives: u1 twice.
  const off = judgeEngineRows(aggregation, all, [{ ...base, total: (base["total"] as number) + 2 * t(u1) }]);
  assert.deepEqual(off.stale, [4], off.describe());
  // A refused change in the sum is a stale key too (its version is not the row's).
  assert.equal(mayHold(aggregation, acked, [u1], { ...base, total: (base["total"] as number) + t(u1) + 1 }), false);
  const many = Array.from({ length: MAX_ENUMERATED_UNKNOWNS + 1 }, (_, i) => ch(4, 30 + i, "unknown"));
  const u = judgeEngineRows(aggregation, [...acked, ...many], [{ ...base, total: -1 }]);
  assert.deepEqual(u.unverifiable, [4]);
  assert.equal(u.findings, 0, "an unverifiable key is counted apart, not judged");
  assert.match(u.describe(), /1 keys unverifiable/);
});

test("pk engines - first-row: the first acknowledged change in stream order stays; a later one winning is stale, an unknown one may have come first", () => {
  const k = [ch(5, 40), ch(5, 41), ch(5, 42)];
  const first = { id: 5, v: 40, src: "p1", n: 40 };
  assert.deepEqual(foldRows(firstRow, k), first);
  assert.equal(judgeEngineRows(firstRow, k, [first]).findings, 0);
  assert.deepEqual(judgeEngineRows(firstRow, k, [{ id: 5, v: 42, src: "p1", n: 42 }]).stale, [5], "a later version replaced the first");
  const u = ch(5, 39, "unknown");
  const j = judgeEngineRows(firstRow, [u, ...k], [{ id: 5, v: 39, src: "p1", n: 39 }]);
  assert.equal(j.findings, 0, j.describe());
  assert.equal(j.ambiguous, 1);
  // Only unknown changes: a row or none.
  const only = [ch(6, 50, "unknown")];
  assert.equal(judgeEngineRows(firstRow, only, []).findings, 0);
  assert.equal(judgeEngineRows(firstRow, only, [{ id: 6, v: 50, src: "p0", n: 50 }]).findings, 0);
});

test("pk engines - a refused change stored, a key no change wrote and a key read twice are findings of every engine", () => {
  for (const w of [partial, aggregation, firstRow]) {
    const k = [ch(7, 60), ch(7, 61, "failed")];
    const model = foldRows(w, [k[0]!])!;
    const failed = judgeEngineRows(w, k, [foldRows(w, [k[1]!])!]);
    assert.deepEqual(failed.failedLanded, [7], `${w.engine}: ${failed.describe()}`);
    assert.deepEqual(failed.unexpected, [7]);
    const stray = judgeEngineRows(w, k, [model, { ...model, id: 99 }]);
    assert.deepEqual(stray.unexpected, [99], `${w.engine}: ${stray.describe()}`);
    const twice = judgeEngineRows(w, k, [model, model]);
    assert.deepEqual(twice.duplicateKeys, [7], `${w.engine}: ${twice.describe()}`);
  }
  assert.throws(() => judgeEngineRows(ENGINE_WORKLOADS.deduplicate, [], []), /judgePkRows/);
});
