import { test } from "node:test";
import assert from "node:assert/strict";
import { combineEnv, makeNemesis, targetLabel } from "../../../chaos/nemesis/index.ts";

test("nemesis index - target labels", () => {
  assert.equal(targetLabel({ kind: "node", id: "n1" }), "node:n1");
  assert.equal(targetLabel({ kind: "nats", index: 2 }), "nats:2");
  assert.equal(targetLabel({ kind: "redis" }), "redis");
  assert.equal(targetLabel({ kind: "load" }), "load");
  assert.equal(targetLabel("warehouse"), "warehouse");
});

test("nemesis index - makeNemesis records timestamps and detail, and bounds inject/heal in time", async () => {
  const n = makeNemesis("demo", { kind: "node", id: "a" }, { inject: () => Promise.resolve({ x: 1 }), heal: () => Promise.resolve({ y: 2 }) });
  const t0 = Date.now();
  const rec = await n.inject();
  assert.equal(rec.name, "demo");
  assert.equal(rec.target, "node:a");
  assert.ok(rec.injectedAt >= t0 && rec.injectedAt <= Date.now());
  assert.equal(rec.healedAt, undefined);
  await n.heal(rec);
  assert.ok(rec.healedAt !== undefined && rec.healedAt >= rec.injectedAt);
  assert.deepEqual(rec.detail, { x: 1, y: 2 });

  const stuck = makeNemesis("stuck", "t", { inject: () => new Promise(() => undefined), heal: () => new Promise(() => undefined) }, 100);
  await assert.rejects(stuck.inject(), /stuck inject on t did not finish within 100 ms/);
  await assert.rejects(stuck.heal({ name: "stuck", target: "t", injectedAt: 0 }), /stuck heal on t did not finish/);
});

test("nemesis index - combineEnv joins LD_PRELOAD lists and lets later keys win", () => {
  assert.deepEqual(combineEnv({ LD_PRELOAD: "/a.so", A: "1" }, { LD_PRELOAD: "/b.so:/a.so", A: "2", B: undefined }), { LD_PRELOAD: "/a.so:/b.so", A: "2" });
});
