/**
 * Paimon's key order (src/lsm/key-comparator.ts): strings by unsigned UTF-8 bytes (not JS UTF-16 order), nulls first,
 * numbers and timestamps by value, keys field by field; framed keys decoded as DataFileMeta stores them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { serializeBinaryRow } from "../../../src/format/binary-row.ts";
import { parseSqlType } from "../../../src/format/data-types.ts";
import { keyComparator, SerializedKeys } from "../../../src/lsm/key-comparator.ts";

const STRING = parseSqlType("STRING");
const INT = parseSqlType("INT");
const BIGINT = parseSqlType("BIGINT");

const utf8Compare = (a: string, b: string): number => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

test("key comparator - strings order as unsigned UTF-8 bytes, where UTF-16 order differs", () => {
  const cmp = keyComparator([STRING]);
  // U+FF5E (one UTF-16 unit, 3 UTF-8 bytes EF BD 9E) vs U+1F600 (a surrogate pair, F0 9F 98 80): UTF-16 puts the
  // emoji first (0xD83D < 0xFF5E), UTF-8 puts it last.
  assert.ok("\u{1F600}" < "\uFF5E", "JS order differs here");
  assert.ok(cmp(["\uFF5E"], ["\u{1F600}"]) < 0);
  fc.assert(
    fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), (a, b) => Math.sign(cmp([a], [b])) === Math.sign(utf8Compare(a, b))),
    { numRuns: 2000 },
  );
});

test("key comparator - nulls first, then field by field", () => {
  const cmp = keyComparator([INT, STRING]);
  assert.ok(cmp([null, "a"], [0, "a"]) < 0);
  assert.ok(cmp([1, null], [1, ""]) < 0);
  assert.equal(cmp([null, null], [null, null]), 0);
  assert.ok(cmp([1, "b"], [2, "a"]) < 0);
  assert.ok(cmp([2, "a"], [2, "b"]) < 0);
  assert.ok(cmp([-5, "z"], [3, "a"]) < 0);
});

test("key comparator - BIGINT keys by value beyond 2^53", () => {
  const cmp = keyComparator([BIGINT]);
  assert.ok(cmp([2n ** 60n], [2n ** 60n + 1n]) < 0);
  assert.ok(cmp([-(2n ** 63n)], [0n]) < 0);
});

test("serialized keys - framed BinaryRows compare as their values", () => {
  const keys = new SerializedKeys([INT, STRING]);
  const a = serializeBinaryRow([INT, STRING], [1, "b"]);
  const b = serializeBinaryRow([INT, STRING], [1, "\u{1F600}"]);
  assert.ok(keys.compareSerialized(a, b) < 0);
  assert.deepEqual(keys.decode(a), [1, "b"]);
  assert.equal(keys.compareSerialized(a, serializeBinaryRow([INT, STRING], [1, "b"])), 0);
});
