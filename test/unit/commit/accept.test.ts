import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { decideCommittables, type BucketCommitState, type OffsetClaim } from "../../../src/commit/accept.ts";

const base = (entries: Array<[number, number, number]>): Map<number, BucketCommitState> => new Map(entries.map(([b, offset, ownerEpoch]) => [b, { offset, ownerEpoch }]));
const c = (bucket: number, ownerEpoch: number, prevOffset: number, lastOffset: number): OffsetClaim => ({ bucket, ownerEpoch, prevOffset, lastOffset });

test("accept - a chain of committables in one commit is accepted in order", () => {
  const out = decideCommittables(base([[0, 10, 1]]), () => 1, [c(0, 1, 10, 14), c(0, 1, 14, 30), c(1, 1, 0, 3)]);
  assert.deepEqual(out.verdicts.map((v) => v.kind), ["accepted", "accepted", "accepted"]);
  assert.deepEqual(out.next.get(0), { offset: 30, ownerEpoch: 1 });
  assert.deepEqual(out.next.get(1), { offset: 3, ownerEpoch: 1 });
  assert.equal(out.progressed, true);
});

test("accept - a stale owner epoch is rejected with the committed offset to resume from", () => {
  const out = decideCommittables(base([[0, 10, 2]]), () => 3, [c(0, 2, 10, 20)]);
  assert.deepEqual(out.verdicts[0], { kind: "rejected", committable: c(0, 2, 10, 20), reason: "stale-owner-epoch", committedOffset: 10 });
  assert.equal(out.progressed, false);
});

test("accept - a broken prevOffset chain is rejected; a later correct link still lands", () => {
  const out = decideCommittables(base([[0, 10, 1]]), () => 1, [c(0, 1, 12, 20), c(0, 1, 10, 15)]);
  assert.deepEqual(out.verdicts.map((v) => v.kind), ["rejected", "accepted"]);
  assert.equal(out.next.get(0)!.offset, 15);
});

test("accept - a committable already committed (or a republished copy) is a duplicate, never applied twice", () => {
  const out = decideCommittables(base([[0, 20, 1]]), () => 1, [c(0, 1, 10, 20), c(0, 1, 20, 25), c(0, 1, 20, 25)]);
  assert.deepEqual(out.verdicts.map((v) => v.kind), ["duplicate", "accepted", "duplicate"]);
});

test("accept - without a known assignment the owner epoch may grow but not go back", () => {
  const out = decideCommittables(base([[0, 5, 4]]), () => undefined, [c(0, 3, 5, 9), c(0, 5, 5, 9)]);
  assert.deepEqual(out.verdicts.map((v) => v.kind), ["rejected", "accepted"]);
  assert.equal(out.next.get(0)!.ownerEpoch, 5);
});

test("accept - property: accepted committables form gap-free chains and offsets only grow", () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ bucket: fc.integer({ min: 0, max: 2 }), ownerEpoch: fc.integer({ min: 1, max: 2 }), prevOffset: fc.integer({ min: 0, max: 40 }), len: fc.integer({ min: 1, max: 10 }) }), { maxLength: 40 }),
      (raw) => {
        const cs = raw.map((r) => c(r.bucket, r.ownerEpoch, r.prevOffset, r.prevOffset + r.len));
        const start = base([[0, 0, 1], [1, 0, 1], [2, 0, 1]]);
        const out = decideCommittables(start, () => 1, cs);
        for (const b of [0, 1, 2]) {
          let off = 0;
          for (const a of out.accepted.filter((x) => x.bucket === b)) {
            assert.equal(a.prevOffset, off);
            assert.ok(a.lastOffset > off);
            off = a.lastOffset;
          }
          assert.equal(out.next.get(b)!.offset, off);
        }
      },
    ),
  );
});

test("accept - a committable read from another stream is rejected, never taken for a duplicate of the old stream's offsets", () => {
  // The stream was re-created: its sequences start again at 1, far below the committed offset 500. Judged by offsets
  // alone this committable looks committed already and would be dropped silently with its rows.
  const fresh = { ...c(0, 1, 0, 40), stream: "S#new" };
  const out = decideCommittables(base([[0, 500, 1]]), () => 1, [fresh], "S#old");
  assert.deepEqual(out.verdicts, [{ kind: "rejected", committable: fresh, reason: "stream-mismatch", committedOffset: 500 }]);
  assert.equal(out.stream, "S#old", "the recorded stream stays");
  assert.equal(out.progressed, false);
  // A committable that names no stream (an older writer) cannot prove it read the recorded one.
  assert.equal(decideCommittables(base([[0, 10, 1]]), () => 1, [c(0, 1, 10, 20)], "S#old").verdicts[0]!.kind, "rejected");
});

test("accept - the first committable's stream is recorded when none is yet; later ones must match it", () => {
  const a = { ...c(0, 1, 0, 10), stream: "S#a" };
  const b = { ...c(1, 1, 0, 12), stream: "S#b" };
  const out = decideCommittables(base([]), () => 1, [a, b]);
  assert.deepEqual(out.verdicts.map((v) => v.kind), ["accepted", "rejected"]);
  assert.equal(out.stream, "S#a");
  assert.equal(decideCommittables(base([]), () => 1, [{ ...c(0, 1, 0, 10), stream: "S#a" }], "S#a").verdicts[0]!.kind, "accepted");
});

test("accept - primary-key tables: a flush's sequence numbers must start above the bucket's committed one; the running number advances with each accepted flush", () => {
  const c = (prev: number, last: number, first: bigint, lastSeq: bigint) => ({ bucket: 0, ownerEpoch: 1, prevOffset: prev, lastOffset: last, seq: { first, last: lastSeq } });
  const base = new Map([[0, { offset: 10, ownerEpoch: 1, seq: 99n }]]);
  const out = decideCommittables(base, () => 1, [c(10, 20, 100n, 149n), c(20, 30, 150n, 149n) /* took none */, c(30, 40, 140n, 160n) /* overlaps 140..149 */, c(30, 40, 150n, 170n)]);
  assert.deepEqual(out.verdicts.map((v) => v.kind), ["accepted", "accepted", "rejected", "accepted"]);
  const rejected = out.verdicts[2]!;
  assert.ok(rejected.kind === "rejected" && rejected.reason === "broken-sequence-chain" && rejected.committedOffset === 30 && rejected.committedSeq === 149n, "the writer resumes after offset 30 and sequence 149");
  assert.deepEqual(out.next.get(0), { offset: 40, ownerEpoch: 1, seq: 170n });
  // Other rejections name the committed sequence too, so the writer's next flush continues after it.
  const stale = decideCommittables(base, () => 2, [c(10, 20, 100n, 110n)]).verdicts[0]!;
  assert.ok(stale.kind === "rejected" && stale.committedSeq === 99n);
  // Append tables carry no sequence range: nothing changes for them.
  assert.deepEqual(decideCommittables(new Map([[0, { offset: 0, ownerEpoch: 1 }]]), () => 1, [{ bucket: 0, ownerEpoch: 1, prevOffset: 0, lastOffset: 5 }]).next.get(0), { offset: 5, ownerEpoch: 1 });
});
