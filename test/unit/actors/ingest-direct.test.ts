/**
 * The direct msgpack → Arrow decoder (actors/ingest/direct.ts) against the generic path (msgpackr, then the
 * builders' own rules): for any payload — good rows, bad values of every kind, odd encodings, broken envelopes — both
 * land the same rows in the same order and reject the same rows with the same reasons.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { FLOAT32_OPTIONS, Packr } from "msgpackr";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { RecordBatchBuilder } from "../../../src/codec/columns/record-batch-builder.ts";
import { assignFieldIds, parseColumnList, type DataField } from "../../../src/format/data-types.ts";
import { decodeSized, packPayloads } from "../../../actors/ingest/decode.ts";
import { DirectReader, directDecoderFor } from "../../../actors/ingest/direct.ts";

const fieldsOf = (sql: string): DataField[] => assignFieldIds(parseColumnList(sql).map((c) => ({ id: -1, ...c }))).fields;
const DIRECT = fieldsOf(
  "i INT, s SMALLINT, t TINYINT, b BIGINT, d DOUBLE, f FLOAT, o BOOLEAN, str STRING, ts TIMESTAMP(3), us TIMESTAMP(6), ltz TIMESTAMP_LTZ(9), nn BIGINT NOT NULL, ns STRING NOT NULL",
);
const MIXED = fieldsOf("id BIGINT, day DATE, name STRING");
const packers = [
  new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: "auto" as "bigint" }),
  new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: "auto" as "bigint", useFloat32: FLOAT32_OPTIONS.ALWAYS }),
];

const value = fc.oneof(
  fc.integer({ min: -200, max: 200 }),
  fc.integer(),
  fc.maxSafeInteger(),
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, -(2 ** 53), 2 ** 63, 1.5, -0, NaN, Infinity, 1e300, 8.64e15, 8.7e15),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.string(),
  fc.string({ unit: "grapheme" }),
  fc.constantFrom("\uFEFFbom", "", "ü", "😀", "2024-01-01"),
  // Text of a date or timestamp's shape that names no real one: refused on both paths, never rolled over.
  fc.constantFrom("2026-02-30", "2026-02-30T10:00:00", "2026-01-01T25:00:00", "2026-01-01T24:00:00", "2024-02-29T23:59:59.5"),
  fc.uint8Array({ maxLength: 4 }),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);

function payloadArb(fields: DataField[]): fc.Arbitrary<Uint8Array> {
  const names = fields.map((f) => f.name);
  const cols = fc.oneof(
    { weight: 8, arbitrary: fc.shuffledSubarray(names, { minLength: 1 }) },
    { weight: 1, arbitrary: fc.shuffledSubarray(names, { minLength: 1 }).map((c) => [...c, "nope"]) },
    { weight: 1, arbitrary: fc.shuffledSubarray(names, { minLength: 1 }).map((c) => [...c, c[0]!]) },
  );
  return fc
    .record({
      cols,
      rows: fc.array(
        fc.oneof({ weight: 10, arbitrary: fc.array(value, { maxLength: names.length + 1 }) }, { weight: 1, arbitrary: value }),
        { maxLength: 12 },
      ),
      packer: fc.integer({ min: 0, max: 1 }),
      shape: fc.constantFrom("batch", "batch", "batch", "rows-first", "extra-key", "v2", "no-schema", "not-a-batch", "trailing"),
    })
    .map(({ cols, rows, packer, shape }) => {
      const p = packers[packer]!;
      // A realistic row: as many values as columns (the generator above also makes short, long and non-array rows).
      const batch: Record<string, unknown> =
        shape === "rows-first" ? { rows, cols, v: 1, schema: 0 } : shape === "no-schema" ? { v: 1, cols, rows } : { v: shape === "v2" ? 2 : 1, schema: 0, cols, rows };
      if (shape === "extra-key") batch["x"] = 1;
      if (shape === "not-a-batch") return p.pack(rows);
      const bytes = p.pack(batch);
      return shape === "trailing" ? Uint8Array.from([...bytes, 0x01]) : bytes;
    });
}

function both(fields: DataField[], payloads: Uint8Array[]): void {
  const p = packPayloads(payloads.map((data, i) => ({ seq: i + 1, data })));
  const generic = decodeSized(fields, p, { direct: false });
  const direct = decodeSized(fields, p);
  assert.deepStrictEqual(direct.rejected, generic.rejected);
  assert.equal(direct.rows, generic.rows);
  const rowsOf = (b: typeof generic.builder): unknown[] => (b === null ? [] : recordBatchToRows(fields, b.finish()));
  assert.deepStrictEqual(rowsOf(direct.builder), rowsOf(generic.builder));
}

test("direct decoding - any payload: the same rows, order and rejections as the generic path (all-direct columns)", () => {
  assert.ok(directDecoderFor(DIRECT) !== null);
  fc.assert(fc.property(fc.array(payloadArb(DIRECT), { minLength: 1, maxLength: 4 }), (payloads) => both(DIRECT, payloads)), { numRuns: 400 });
});

test("direct decoding - a table with a column without a direct path takes the generic path, same results", () => {
  assert.equal(directDecoderFor(MIXED), null);
  fc.assert(fc.property(fc.array(payloadArb(MIXED), { minLength: 1, maxLength: 3 }), (payloads) => both(MIXED, payloads)), { numRuns: 50 });
});

test("direct decoding - well-formed rows land without the generic path; bad ones are rejected in place", () => {
  const p = packers[0]!;
  const rows = [
    [1, 2, 3, 2 ** 40, 0.5, 0.25, true, "héllo", 1_700_000_000_000, 1_700_000_000_000, 1_700_000_000_000, 7, "x"],
    [null, null, null, null, null, null, null, null, null, null, null, 8, "y"],
    [1, 2, 3, 4, 5, 6, "not a boolean", "s", 1, 2, 3, 9, "z"],
    [4],
  ];
  const names = DIRECT.map((f) => f.name);
  const out = decodeSized(DIRECT, packPayloads([{ seq: 5, data: p.pack({ v: 1, schema: 0, cols: names, rows }) }]));
  assert.equal(out.rows, 2);
  assert.deepStrictEqual(
    out.rejected.map((r) => [r.seq, r.rowIndex]),
    [[5, 2], [5, 3]],
  );
  assert.match(out.rejected[0]!.reason, /column o/);
  assert.match(out.rejected[1]!.reason, /nn is NOT NULL/);
  // The direct path itself took the two good rows and handed the two bad ones over, in place.
  const slow: number[] = [];
  const builder = new RecordBatchBuilder(DIRECT, 4);
  const r = directDecoderFor(DIRECT)!.decodeMessage(builder, p.pack({ v: 1, schema: 0, cols: names, rows }), (i) => (slow.push(i), true));
  assert.equal(r?.appended, 2);
  assert.deepStrictEqual(slow, [2, 3]);
  assert.equal(builder.length, 2);
  const got = recordBatchToRows(DIRECT, out.builder!.finish());
  assert.equal(got[0]!["str"], "héllo");
  assert.equal(got[0]!["b"], 2n ** 40n);
  assert.equal(got[1]!["i"], null);
});

test("direct decoding - a date or timestamp that is no real day is rejected on both paths, naming the row and column", () => {
  const p = packers[0]!;
  const cases: Array<[DataField[], string[], unknown[][], RegExp]> = [
    [DIRECT, ["ts", "nn", "ns"], [[1_700_000_000_000, 1, "a"], ["2026-02-30T10:00:00", 2, "b"], ["2026-01-01T25:00:00", 3, "c"], ["2024-02-29T10:00:00", 4, "d"]], /column ts: '2026-02-30T10:00:00' is not a valid timestamp/],
    [MIXED, ["id", "day"], [[1, "2026-02-28"], [2, "2026-02-30"], [3, "2026-13-01"], [4, "2024-02-29"]], /column day: '2026-02-30' is not a valid date: 2026-02 has no day 30/],
  ];
  for (const [fields, cols, rows, first] of cases) {
    const payload = packPayloads([{ seq: 3, data: p.pack({ v: 1, schema: 0, cols, rows }) }]);
    for (const direct of [true, false]) {
      const out = decodeSized(fields, payload, { direct });
      assert.deepStrictEqual(out.rejected.map((r) => r.rowIndex), [1, 2], `direct=${direct}`);
      assert.match(out.rejected[0]!.reason, first);
      assert.equal(out.rows, 2);
    }
  }
});

test("DirectReader.skip - finds the end of any msgpack value, and −1 for truncated input", () => {
  fc.assert(
    fc.property(value, fc.integer({ min: 0, max: 1 }), (v, k) => {
      const bytes = packers[k]!.pack(v);
      assert.equal(new DirectReader(bytes).skip(0), bytes.length);
      if (bytes.length > 1) assert.equal(new DirectReader(bytes.subarray(0, bytes.length - 1)).skip(0), -1);
    }),
    { numRuns: 300 },
  );
});
