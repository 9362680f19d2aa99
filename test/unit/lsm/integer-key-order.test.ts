/**
 * The radix sort of a flush's integer keys (src/lsm/integer-key-order.ts) against a comparison sort: by key, equal
 * keys in index order, over ranges that take one word or both and skip digits or not; keys spanning 2^53 or more are
 * refused (null), and the key column is read from Arrow's buffers at any offset.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import * as arrow from "apache-arrow";
import { integerKeyColumn, integerKeyOrder } from "../../../src/lsm/integer-key-order.ts";

const reference = (keys: Float64Array): number[] => [...keys.keys()].sort((a, b) => keys[a]! - keys[b]! || a - b);

test("integer key order - by key, then by index, whatever the range", () => {
  const ranges = [0, 1, 2047, 2048, 2 ** 22, 2 ** 32 - 1, 2 ** 32, 2 ** 40, 2 ** 53 - 1];
  fc.assert(
    fc.property(fc.constantFrom(...ranges), fc.integer({ min: -(2 ** 52), max: 2 ** 52 }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 300 }), (range, lowest, fractions) => {
      const low = Math.min(lowest, Number.MAX_SAFE_INTEGER - range); // every key a safe integer
      // Few distinct values (repeats) as well as spread ones.
      const keys = Float64Array.from(fractions, (f, i) => low + (i % 3 === 0 ? 0 : Math.floor(f * range)));
      assert.deepEqual([...integerKeyOrder(keys)!], reference(keys));
    }),
    { numRuns: 300 },
  );
  assert.deepEqual([...integerKeyOrder(new Float64Array([5, 5, 5]))!], [0, 1, 2]);
  assert.deepEqual([...integerKeyOrder(new Float64Array(0))!], []);
});

test("integer key order - keys spanning 2^53 or more are left to the comparator", () => {
  assert.equal(integerKeyOrder(new Float64Array([-(2 ** 52), 2 ** 52])), null);
  assert.notEqual(integerKeyOrder(new Float64Array([-(2 ** 52), 2 ** 52 - 1])), null);
});

test("integer key column - BIGINT, INT and narrower columns at an offset; null for nulls, |v| ≥ 2^53 and other types", () => {
  const big = arrow.makeData({ type: new arrow.Int64(), length: 4, data: new BigInt64Array([7n, -(2n ** 52n), 2n ** 53n - 1n, 3n]) }).slice(1, 2);
  const small = arrow.makeData({ type: new arrow.Int16(), length: 3, data: new Int16Array([1, -2, 3]) }).slice(1, 2);
  assert.deepEqual([...integerKeyColumn([big, small], 4)!], [-(2 ** 52), 2 ** 53 - 1, -2, 3]);
  const tooBig = arrow.makeData({ type: new arrow.Int64(), length: 1, data: new BigInt64Array([2n ** 53n]) });
  assert.equal(integerKeyColumn([tooBig], 1), null);
  const withNull = arrow.makeData({ type: new arrow.Int32(), length: 2, nullCount: 1, nullBitmap: new Uint8Array([1]), data: new Int32Array([1, 0]) });
  assert.equal(integerKeyColumn([withNull], 2), null);
  const text = arrow.makeData({ type: new arrow.Utf8(), length: 1, valueOffsets: new Int32Array([0, 1]), data: new Uint8Array([65]) });
  assert.equal(integerKeyColumn([text], 1), null);
});
