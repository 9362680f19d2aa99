// WriteBudget: the bookkeeping shared by a node's bucket writers — admission, preemption of the largest buffer,
// and waking the writers that waited for memory.
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { WriteBudget } from "../../../src/write/write-budget.ts";

function holder(log: string[], name: string): { preempt(): void } {
  return { preempt: () => void log.push(name) };
}

test("write budget - under capacity every holder is admitted and nobody is preempted", () => {
  const b = new WriteBudget(100);
  const log: string[] = [];
  b.update("a", holder(log, "a"), 40, 0);
  b.update("b", holder(log, "b"), 30, 20);
  assert.equal(b.usedBytes, 90);
  assert.equal(b.exhausted, false);
  assert.ok(b.admits("a") && b.admits("b"));
  assert.deepEqual(log, []);
});

test("write budget - at capacity the largest unflushed buffer is preempted and holders of memory stop reading", () => {
  const b = new WriteBudget(100);
  const log: string[] = [];
  b.update("a", holder(log, "a"), 30, 0);
  b.update("b", holder(log, "b"), 10, 50); // most memory, but most of it is already being flushed
  b.update("c", holder(log, "c"), 15, 0);
  assert.equal(b.exhausted, true);
  assert.deepEqual(log, ["a"], "the largest buffer not being flushed");
  assert.equal(b.admits("a"), false);
  assert.equal(b.admits("b"), false);
  assert.equal(b.admits("idle"), true, "a holder of nothing is always admitted, so none starves");
});

test("write budget - releasing memory wakes the waiters once, and only below capacity", () => {
  const b = new WriteBudget(100);
  const log: string[] = [];
  let woken = 0;
  b.update("a", holder(log, "a"), 60, 0);
  b.update("b", holder(log, "b"), 50, 0);
  b.whenFreed("b", () => woken++);
  b.whenFreed("b", () => woken++); // replaces the first registration
  b.update("a", holder(log, "a"), 0, 55); // cut for a flush: still held, still over capacity
  assert.equal(woken, 0);
  b.update("a", holder(log, "a"), 0, 0); // the flush ended
  assert.equal(woken, 1);
  assert.equal(b.usedBytes, 50);
  b.update("a", holder(log, "a"), 10, 0);
  b.update("a", holder(log, "a"), 0, 0);
  assert.equal(woken, 1, "a waiter is woken once per registration");
});

test("write budget - release forgets a stopped holder and its waiter", () => {
  const b = new WriteBudget(10);
  const log: string[] = [];
  let woken = 0;
  b.update("a", holder(log, "a"), 8, 4);
  b.whenFreed("a", () => woken++);
  b.release("a");
  b.release("a");
  assert.equal(b.usedBytes, 0);
  assert.equal(woken, 0, "a released holder's own waiter is dropped");
  assert.throws(() => new WriteBudget(0), /positive size/);
});

test("write budget - the total always equals the sum of what holders last reported", () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ id: fc.constantFrom("a", "b", "c", "d"), buffered: fc.integer({ min: -5, max: 500 }), flushing: fc.integer({ min: 0, max: 500 }), release: fc.boolean() }), { maxLength: 60 }),
      (steps) => {
        const b = new WriteBudget(600);
        const last = new Map<string, number>();
        for (const s of steps) {
          if (s.release) {
            b.release(s.id);
            last.delete(s.id);
          } else {
            b.update(s.id, { preempt() {} }, s.buffered, s.flushing);
            last.set(s.id, Math.max(0, s.buffered) + s.flushing);
          }
          const sum = [...last.values()].reduce((x, y) => x + y, 0);
          assert.equal(b.usedBytes, sum);
          assert.equal(b.exhausted, sum >= 600);
        }
      },
    ),
  );
});
