import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { planAllocation } from "../../../actors/allocation.ts";

test("allocation - unowned buckets are spread evenly", () => {
  const p = planAllocation({ buckets: 8, nodes: ["a", "b", "c"], owners: new Map(), maxMovesPerRound: 2 });
  const counts = ["a", "b", "c"].map((n) => [...p.assign.values()].filter((x) => x === n).length);
  assert.deepEqual(counts.sort(), [2, 3, 3]);
  assert.equal(p.move.size, 0);
});

test("allocation - a node that left: its buckets go to the others; a joining node takes buckets gradually", () => {
  const owners = new Map([[0, "a"], [1, "b"], [2, "gone"], [3, "a"]]);
  const p = planAllocation({ buckets: 4, nodes: ["a", "b"], owners, maxMovesPerRound: 1 });
  assert.deepEqual([...p.assign.entries()], [[2, "b"]]);
  const q = planAllocation({ buckets: 4, nodes: ["a", "b", "c"], owners: new Map([[0, "a"], [1, "a"], [2, "b"], [3, "b"]]), maxMovesPerRound: 1 });
  assert.equal(q.move.size, 1);
  assert.equal([...q.move.values()][0], "c");
});

test("allocation - buckets held by a draining owner are not reassigned on the spot (it hands them off by revoke)", () => {
  const owners = new Map([[0, "a"], [1, "b"], [3, "a"]]);
  // b is alive but draining (not in nodes): bucket 1 is held; bucket 2 (unowned) is assigned.
  const p = planAllocation({ buckets: 4, nodes: ["a", "c"], owners, held: new Set([1]), maxMovesPerRound: 2 });
  assert.equal(p.assign.has(1), false);
  assert.equal(p.assign.get(2), "c");
  const q = planAllocation({ buckets: 4, nodes: ["a", "c"], owners, maxMovesPerRound: 2 });
  assert.equal(q.assign.has(1), true, "without `held` an owner outside `nodes` counts as gone");
});

test("allocation - property: after repeated rounds every bucket is owned and loads differ by at most one", () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 32 }), fc.integer({ min: 1, max: 6 }), fc.array(fc.integer({ min: 0, max: 8 }), { maxLength: 32 }), (buckets, k, initial) => {
      const nodes = Array.from({ length: k }, (_, i) => `n${i}`);
      const owners = new Map<number, string>();
      initial.slice(0, buckets).forEach((o, b) => owners.set(b, `n${o}`));
      for (let round = 0; round < 40; round++) {
        const p = planAllocation({ buckets, nodes, owners, maxMovesPerRound: 2 });
        for (const [b, n] of p.assign) owners.set(b, n);
        for (const [b, n] of p.move) owners.set(b, n);
        if (p.assign.size === 0 && p.move.size === 0) break;
      }
      for (let b = 0; b < buckets; b++) assert.ok(nodes.includes(owners.get(b)!));
      const loads = nodes.map((n) => [...owners.values()].filter((x) => x === n).length);
      assert.ok(Math.max(...loads) - Math.min(...loads) <= 1);
    }),
  );
});
