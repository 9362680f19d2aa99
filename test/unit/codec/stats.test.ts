import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import * as arrow from "apache-arrow";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { readParquet, writeParquet } from "../../../src/codec/parquet.ts";
import { compareDoubles, compareStrings, compareValues, computeStats, emptyStats, mergeStats, safeFileBounds, statsFromRows } from "../../../src/codec/stats.ts";
import { parseColumnList, T } from "../../../src/format/data-types.ts";
import { Timestamp, type Row, type Value } from "../../../src/format/values.ts";
import { ALL_ROWS, ALL_TYPES, bytes, ts } from "../../helpers/codec-fixtures.ts";

test("stats - min, max and null counts per column of every type", () => {
  const stats = computeStats(ALL_TYPES, rowsToRecordBatch(ALL_TYPES, ALL_ROWS));
  const col = (name: string): [Value, Value, number] => {
    const k = ALL_TYPES.findIndex((f) => f.name === name);
    return [stats.min[k]!, stats.max[k]!, stats.nullCounts[k]!];
  };
  assert.deepEqual(col("b"), [false, true, 1]);
  assert.deepEqual(col("b_nn"), [false, true, 0]);
  assert.deepEqual(col("i8"), [-128, 127, 1]);
  assert.deepEqual(col("i32"), [-2147483648, 2147483647, 0]);
  assert.deepEqual(col("i64"), [-(2n ** 63n), 2n ** 63n - 1n, 1]);
  assert.deepEqual(col("f32"), [-0, Infinity, 1]);
  // Java's Double.compare: NaN is above everything.
  assert.deepEqual(col("f64"), [-0.1, NaN, 1]);
  assert.deepEqual(col("d10"), [-99999999n, 1234n, 1]);
  assert.deepEqual(col("d38"), [-(10n ** 38n - 1n), 10n ** 38n - 1n, 1]);
  assert.deepEqual(col("ch"), ["", "z", 1]);
  assert.deepEqual(col("s"), ["", "x".repeat(200), 1]);
  assert.deepEqual(col("bin"), [bytes(), bytes(9), 1]);
  assert.deepEqual(col("dt"), [-719162, 19723, 1]);
  assert.deepEqual(col("tm"), [0, 86399999, 1]);
  assert.deepEqual(col("ts3"), [ts("1960-05-05T05:05:05.005"), ts("2024-01-02T03:04:05.678"), 1]);
  assert.deepEqual(col("ts9"), [ts("1960-05-05T05:05:05.005", 5005), ts("2262-04-11T23:47:16.854", 775807), 1]);
  assert.deepEqual(col("ltz6"), [ts("0001-01-01T00:00:00"), ts("2030-01-01T00:00:00.001", 1000), 1]);
  // Nested types have no order: null min/max, but null counts.
  assert.deepEqual(col("tags"), [null, null, 1]);
  assert.deepEqual(col("m"), [null, null, 1]);
  assert.deepEqual(col("r"), [null, null, 1]);
  assert.deepEqual(col("ms"), [null, null, 1]);
});

test("stats - strings order by UTF-8 bytes (code points), not by UTF-16 code units", () => {
  // U+FF61 is one UTF-16 unit 0xFF61; U+1F600 is the surrogate pair 0xD83D 0xDE00. JS `<` puts the emoji first,
  // UTF-8 (EF BD A1 vs F0 9F 98 80) puts it last.
  assert.ok("😀" < "｡");
  assert.ok(compareStrings("｡", "😀") < 0);
  assert.ok(compareStrings("a", "ab") < 0);
  assert.ok(compareStrings("é", "z") > 0);
  const fields = [{ name: "s", type: T.string() }];
  const rows: Row[] = [{ s: "😀" }, { s: "｡" }, { s: "\uE000" }, { s: "\uD7FF" }];
  const stats = computeStats(fields, rowsToRecordBatch(fields, rows));
  assert.deepEqual([stats.min[0], stats.max[0]], ["\uD7FF", "😀"]);
  assert.deepEqual(statsFromRows(fields, rows), stats);

  const enc = new TextEncoder();
  fc.assert(
    fc.property(fc.string({ unit: "grapheme" }), fc.string({ unit: "grapheme" }), (a, b) => {
      const byBytes = Buffer.compare(Buffer.from(enc.encode(a)), Buffer.from(enc.encode(b)));
      assert.equal(Math.sign(compareStrings(a, b)), byBytes);
    }),
  );
});

test("stats - doubles follow Java's Double.compare (−0.0 < 0.0, NaN greatest)", () => {
  assert.ok(compareDoubles(-0, 0) < 0);
  assert.ok(compareDoubles(NaN, Infinity) > 0);
  assert.equal(compareDoubles(NaN, NaN), 0);
  const fields = [{ name: "d", type: T.double() }];
  const rows: Row[] = [{ d: 0 }, { d: -0 }, { d: 3 }, { d: null }];
  const stats = computeStats(fields, rowsToRecordBatch(fields, rows));
  assert.ok(Object.is(stats.min[0], -0));
  assert.equal(stats.max[0], 3);
  assert.equal(stats.nullCounts[0], 1);
});

test("stats - all-null and empty columns have null min/max", () => {
  const fields = [
    { name: "a", type: T.int() },
    { name: "s", type: T.string() },
  ];
  const rows: Row[] = [{ a: null, s: null }, {}];
  const stats = computeStats(fields, rowsToRecordBatch(fields, rows));
  assert.deepEqual(stats, { min: [null, null], max: [null, null], nullCounts: [2, 2] });
  assert.deepEqual(computeStats(fields, rowsToRecordBatch(fields, [])), emptyStats(2));
});

test("stats - merging equals the stats of the concatenation, also over multi-batch tables and Parquet files", () => {
  const a = ALL_ROWS.slice(0, 2);
  const b = ALL_ROWS.slice(2);
  const merged = mergeStats(ALL_TYPES, computeStats(ALL_TYPES, rowsToRecordBatch(ALL_TYPES, a)), computeStats(ALL_TYPES, rowsToRecordBatch(ALL_TYPES, b)));
  const whole = computeStats(ALL_TYPES, rowsToRecordBatch(ALL_TYPES, ALL_ROWS));
  assert.deepEqual(merged, whole);
  const table = new arrow.Table([rowsToRecordBatch(ALL_TYPES, a), rowsToRecordBatch(ALL_TYPES, b)]);
  assert.deepEqual(computeStats(ALL_TYPES, table), whole);
  assert.deepEqual(computeStats(ALL_TYPES, readParquet(writeParquet(table))), whole);
  assert.deepEqual(mergeStats(ALL_TYPES, emptyStats(ALL_TYPES.length), whole), whole);
  assert.deepEqual(statsFromRows(ALL_TYPES, ALL_ROWS), whole);
});

test("stats - property: Arrow-buffer stats equal canonical-value stats", () => {
  const fields = parseColumnList("i BIGINT, d DECIMAL(38, 4), t TIMESTAMP(6), b BYTES, s STRING, f FLOAT, n SMALLINT, dt DATE");
  const row = fc.record({
    i: fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: null }),
    d: fc.option(fc.bigInt({ min: -(10n ** 38n) + 1n, max: 10n ** 38n - 1n }), { nil: null }),
    t: fc.option(
      fc.tuple(fc.integer({ min: -6e13, max: 2.5e14 }), fc.integer({ min: 0, max: 999 })).map(([ms, us]) => new Timestamp(ms, us * 1000)),
      { nil: null },
    ),
    b: fc.option(fc.uint8Array({ maxLength: 6 }), { nil: null }),
    s: fc.option(fc.string({ unit: "binary", maxLength: 6 }), { nil: null }),
    f: fc.option(fc.float().map(Math.fround), { nil: null }),
    n: fc.option(fc.integer({ min: -32768, max: 32767 }), { nil: null }),
    dt: fc.option(fc.integer({ min: -719162, max: 2932896 }), { nil: null }),
  });
  fc.assert(
    fc.property(fc.array(row, { maxLength: 30 }), (rows) => {
      assert.deepEqual(computeStats(fields, rowsToRecordBatch(fields, rows as Row[])), statsFromRows(fields, rows as Row[]));
    }),
    { numRuns: 200 },
  );
});

test("stats - compareValues orders every comparable type and rejects nested ones", () => {
  assert.ok(compareValues(T.boolean(), false, true) < 0);
  assert.ok(compareValues(T.bigint(), -5n, 3n) < 0);
  assert.ok(compareValues(T.decimal(38, 2), 10n ** 30n, 10n ** 29n) > 0);
  assert.ok(compareValues(T.bytes(), bytes(1, 255), bytes(2)) < 0);
  assert.ok(compareValues(T.bytes(), bytes(1), bytes(1, 0)) < 0);
  assert.ok(compareValues(T.timestamp(9), new Timestamp(5, 2), new Timestamp(5, 1)) > 0);
  assert.throws(() => compareValues(T.array(T.int()), [1], [2]));
});

test("stats - dictionary-encoded and sliced columns", () => {
  const dict = arrow.vectorFromArray(["pear", "apple", null, "zoo"]);
  const batch = new arrow.RecordBatch({ s: dict.data[0]! });
  assert.deepEqual(computeStats([{ name: "s", type: T.string() }], batch), { min: ["apple"], max: ["zoo"], nullCounts: [1] });
  const ints = rowsToRecordBatch([{ name: "n", type: T.int() }], [{ n: 9 }, { n: 1 }, { n: null }, { n: 5 }, { n: 7 }]);
  assert.deepEqual(computeStats([{ name: "n", type: T.int() }], ints.slice(2, 5)), { min: [5], max: [7], nullCounts: [1] });
});

test("stats - property: the raw-buffer fast paths agree with canonical-value stats, also on slices", () => {
  const fields = parseColumnList("i BIGINT, x DOUBLE, s STRING, n INT, t TIMESTAMP(3), y TINYINT, tm TIME");
  const row = fc.record({
    i: fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: null }),
    x: fc.option(fc.oneof(fc.double(), fc.constantFrom(0, -0, NaN, Infinity, -Infinity)), { nil: null }),
    // A small alphabet makes long common prefixes, exercising the word-at-a-time comparison.
    s: fc.option(fc.string({ unit: fc.constantFrom("a", "b", "é", "😀", "\u0000", "\uffff"), maxLength: 14 }), { nil: null }),
    n: fc.option(fc.integer({ min: -2147483648, max: 2147483647 }), { nil: null }),
    t: fc.option(fc.integer({ min: -6e13, max: 2.5e14 }).map((ms) => new Timestamp(ms, 0)), { nil: null }),
    y: fc.option(fc.integer({ min: -128, max: 127 }), { nil: null }),
    tm: fc.option(fc.integer({ min: 0, max: 86399999 }), { nil: null }),
  });
  fc.assert(
    fc.property(fc.array(row, { maxLength: 40 }), fc.nat(), fc.nat(), (rows, p, q) => {
      const batch = rowsToRecordBatch(fields, rows as Row[]);
      const a = rows.length === 0 ? 0 : p % (rows.length + 1);
      const b = a + (rows.length - a === 0 ? 0 : q % (rows.length - a + 1));
      assert.deepEqual(computeStats(fields, batch), statsFromRows(fields, rows as Row[]));
      assert.deepEqual(computeStats(fields, batch.slice(a, b)), statsFromRows(fields, rows.slice(a, b) as Row[]));
    }),
    { numRuns: 300 },
  );
});

test("stats - safeFileBounds: a FLOAT/DOUBLE column whose max is NaN gets null bounds, null counts and other columns kept", () => {
  const fields = parseColumnList("d DOUBLE, f FLOAT, x DOUBLE, s STRING");
  const stats = computeStats(fields, rowsToRecordBatch(fields, [{ d: NaN, f: 1, x: 2, s: "a" }, { d: 1, f: NaN, x: null, s: null }, { d: null, f: null, x: 3, s: "b" }]));
  assert.deepEqual(stats.max.slice(0, 2), [NaN, NaN], "Java's order, before the file-level guard");
  assert.deepEqual(safeFileBounds(fields, stats), { min: [null, null, 2, "a"], max: [null, null, 3, "b"], nullCounts: [1, 1, 1, 1] });
  const clean = computeStats(fields, rowsToRecordBatch(fields, [{ d: 1, f: 2, x: 3, s: "c" }]));
  assert.equal(safeFileBounds(fields, clean), clean);
});
