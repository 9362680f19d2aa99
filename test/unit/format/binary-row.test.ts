import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  BinaryRowWriter,
  EMPTY_ROW_SERIALIZED,
  RowKind,
  binaryRowKind,
  createRowEncoder,
  decodeBinaryRow,
  deserializeBinaryRow,
  encodeBinaryRow,
  fixedPartSize,
  frameBinaryRow,
  nullBitsSizeInBytes,
  serializeBinaryRow,
} from "../../../src/format/binary-row.ts";
import { T, type DataType } from "../../../src/format/data-types.ts";
import { Timestamp, type Value } from "../../../src/format/values.ts";
import { isLakeError } from "../../../src/errors.ts";

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const unhex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s.replace(/\s+/g, ""), "hex"));
const ts = (iso: string, nanoOfMilli = 0): Timestamp => new Timestamp(Date.parse(iso + "Z"), nanoOfMilli);
const isKind = (kind: "DataInvalid" | "Unsupported") => (e: unknown) => isLakeError(e, kind);

// ---------------------------------------------------------------------------------------------------------------
// paimon-format.md §5.3 / §5.4 worked examples, byte for byte

test("binary-row - worked example (INT 5, STRING 'ab', BIGINT null)", () => {
  const types = [T.int(), T.string(), T.bigint()];
  const framed = serializeBinaryRow(types, [5, "ab", null]);
  assert.equal(hex(framed), "00000003" + "0004000000000000" + "0500000000000000" + "6162000000000082" + "0000000000000000");
  assert.deepEqual(deserializeBinaryRow(types, framed), [5, "ab", null]);
});

test("binary-row - worked example: 12-byte string goes to the variable part", () => {
  const framed = serializeBinaryRow([T.string()], ["hello world!"]);
  assert.equal(hex(framed), "00000001" + "0000000000000000" + "0c00000010000000" + "68656c6c6f20776f726c642100000000");
  assert.deepEqual(deserializeBinaryRow([T.string()], framed), ["hello world!"]);
});

test("binary-row - worked example: partition ('2024-01-01', INT 7)", () => {
  const framed = serializeBinaryRow([T.string(), T.int()], ["2024-01-01", 7]);
  assert.equal(hex(framed), "00000002" + "0000000000000000" + "0a00000018000000" + "0700000000000000" + "323032342d30312d3031000000000000");
});

test("binary-row - worked example slots (boolean, tinyint, double, decimal, timestamp, date)", () => {
  const one = (t: DataType, v: Value): string => hex(encodeBinaryRow([t], [v]));
  assert.equal(one(T.boolean(), true), "0000000000000000" + "0100000000000000");
  assert.equal(one(T.tinyint(), -1), "0000000000000000" + "ff00000000000000");
  assert.equal(one(T.double(), 3.5), "0000000000000000" + "0000000000000c40");
  assert.equal(one(T.decimal(10, 2), 1234n), "0000000000000000" + "d204000000000000");
  assert.equal(one(T.decimal(20, 2), 1234n), "0000000000000000" + "0200000010000000" + "04d2" + "00".repeat(14));
  assert.equal(one(T.timestamp(3), ts("2024-01-01T00:00:00.123")), "0000000000000000" + "7bf451c28c010000");
  assert.equal(one(T.timestamp(6), ts("2024-01-01T00:00:00.123", 456000)), "0000000000000000" + "40f5060010000000" + "7bf451c28c010000");
  assert.equal(one(T.date(), 19723), "0000000000000000" + "0b4d000000000000");
});

test("binary-row - empty row", () => {
  assert.equal(hex(EMPTY_ROW_SERIALIZED), "000000000000000000000000");
  assert.deepEqual(serializeBinaryRow([], []), EMPTY_ROW_SERIALIZED);
  assert.deepEqual(deserializeBinaryRow([], EMPTY_ROW_SERIALIZED), []);
  assert.deepEqual(decodeBinaryRow([], new Uint8Array(8)), []);
});

// ---------------------------------------------------------------------------------------------------------------
// Layout details

test("binary-row - null bitset width and bit positions", () => {
  assert.equal(nullBitsSizeInBytes(0), 8);
  // 8 header bits + 56 null bits fill exactly 8 bytes (paimon-format.md §5.1 says 55; Java's formula says 56).
  assert.equal(nullBitsSizeInBytes(56), 8);
  assert.equal(nullBitsSizeInBytes(57), 16);
  assert.equal(nullBitsSizeInBytes(120), 16);
  assert.equal(nullBitsSizeInBytes(121), 24);
  assert.equal(fixedPartSize(3), 32);

  const types = Array.from({ length: 60 }, () => T.int());
  const values: Value[] = types.map((_, i) => (i === 0 || i === 59 ? null : i));
  const row = encodeBinaryRow(types, values);
  assert.equal(row.length, 16 + 60 * 8);
  // Field i ↔ bit i + 8 of the bitset.
  assert.equal(row[1], 0x01);
  assert.equal(row[(59 + 8) >> 3], 1 << ((59 + 8) & 7));
  assert.deepEqual(decodeBinaryRow(types, row), values);
});

test("binary-row - inline string boundary: 7 bytes inline, 8 bytes in the variable part", () => {
  assert.equal(hex(encodeBinaryRow([T.string()], ["1234567"])), "0000000000000000" + "3132333435363787");
  assert.equal(hex(encodeBinaryRow([T.string()], ["12345678"])), "0000000000000000" + "0800000010000000" + "3132333435363738");
  assert.equal(hex(encodeBinaryRow([T.string()], [""])), "0000000000000000" + "0000000000000080");
  // 'é' is 2 UTF-8 bytes; 4 of them are 8 bytes and no longer fit inline.
  assert.equal(hex(encodeBinaryRow([T.string()], ["ééé"])), "0000000000000000" + "c3a9c3a9c3a90086");
  assert.equal(hex(encodeBinaryRow([T.string()], ["éééé"])), "0000000000000000" + "0800000010000000" + "c3a9c3a9c3a9c3a9");
  for (const s of ["1234567", "12345678", "", "ééé", "éééé", "😀", "日本語テキスト"])
    assert.deepEqual(decodeBinaryRow([T.string()], encodeBinaryRow([T.string()], [s])), [s]);
});

test("binary-row - inline binary and variable-part binary", () => {
  const small = Uint8Array.from([1, 2, 3]);
  const big = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.equal(hex(encodeBinaryRow([T.bytes()], [small])), "0000000000000000" + "0102030000000083");
  assert.equal(hex(encodeBinaryRow([T.bytes()], [big])), "0000000000000000" + "0900000010000000" + "0102030405060708" + "0900000000000000");
  assert.deepEqual(decodeBinaryRow([T.bytes(), T.bytes()], encodeBinaryRow([T.bytes(), T.bytes()], [small, big])), [small, big]);
});

test("binary-row - lone surrogates encode as '?' like Java's String.getBytes(UTF_8)", () => {
  assert.equal(hex(encodeBinaryRow([T.string()], ["a\ud800b"])), "0000000000000000" + "613f620000000083");
  assert.equal(hex(encodeBinaryRow([T.string()], ["\udc00"])), "0000000000000000" + "3f00000000000081");
  // A valid pair is one 4-byte code point.
  assert.equal(hex(encodeBinaryRow([T.string()], ["\ud83d\ude00"])), "0000000000000000" + "f09f988000000084");
});

test("binary-row - other fixed-width slots", () => {
  const one = (t: DataType, v: Value): string => hex(encodeBinaryRow([t], [v])).slice(16);
  assert.equal(one(T.smallint(), -2), "feff000000000000");
  assert.equal(one(T.int(), -2147483648), "0000008000000000");
  assert.equal(one(T.bigint(), -(2n ** 63n)), "0000000000000080");
  assert.equal(one(T.bigint(), 5), "0500000000000000"); // a safe-integer number is accepted for BIGINT
  assert.equal(one(T.float(), 1.5), "0000c03f00000000");
  assert.equal(one(T.boolean(), false), "0000000000000000");
  assert.equal(one({ root: "TIME", precision: 3, nullable: true }, 3_600_000), "80ee360000000000");
  assert.equal(one(T.timestamp(3), ts("1969-12-31T23:59:59.999")), "ffffffffffffffff");
  assert.equal(one(T.timestampLtz(3), new Timestamp(1, 0)), "0100000000000000");
});

test("binary-row - non-compact decimal uses Java's minimal two's complement", () => {
  const dec = T.decimal(38, 0);
  const varPart = (v: bigint): string => {
    const row = encodeBinaryRow([dec], [v]);
    assert.equal(row.length, 8 + 8 + 16);
    const len = row[8]!;
    assert.equal(hex(row.subarray(12, 16)), "10000000"); // offset 16
    return hex(row.subarray(16, 16 + len));
  };
  assert.equal(varPart(0n), "00");
  assert.equal(varPart(127n), "7f");
  assert.equal(varPart(128n), "0080");
  assert.equal(varPart(-1n), "ff");
  assert.equal(varPart(-128n), "80"); // pypaimon writes ff80 here
  assert.equal(varPart(-129n), "ff7f");
  assert.equal(varPart(10n ** 38n - 1n), "4b3b4ca85a86c47a098a223fffffffff");
  assert.equal(varPart(-(10n ** 38n - 1n)), "b4c4b357a5793b85f675ddc000000001");
});

test("binary-row - Java reserves the variable chunk of null non-compact decimal and timestamp", () => {
  // Java's projection calls writeDecimal(pos, null, p) / writeTimestamp(pos, null, p): null bit, slot = offset << 32.
  assert.equal(hex(encodeBinaryRow([T.decimal(20, 2)], [null])), "0001000000000000" + "0000000010000000" + "00".repeat(16));
  assert.equal(hex(encodeBinaryRow([T.timestamp(6)], [null])), "0001000000000000" + "0000000010000000" + "00".repeat(8));
  // Compact ones are plain nulls.
  assert.equal(hex(encodeBinaryRow([T.decimal(18, 2)], [null])), "0001000000000000" + "0000000000000000");
  assert.equal(hex(encodeBinaryRow([T.timestamp(3)], [null])), "0001000000000000" + "0000000000000000");
  const types = [T.timestamp(6), T.decimal(30, 3), T.string()];
  const values: Value[] = [null, null, "a long string value"];
  assert.deepEqual(decodeBinaryRow(types, encodeBinaryRow(types, values)), values);
});

test("binary-row - decodes pypaimon's encodings", () => {
  // pypaimon 2.1.0: -128 in DECIMAL(38, 0) as the 2-byte ff80; null TIMESTAMP(6) / DECIMAL(38) as a zero slot.
  assert.deepEqual(decodeBinaryRow([T.decimal(38, 0)], unhex("0000000000000000 0200000010000000 ff80000000000000 0000000000000000")), [-128n]);
  assert.deepEqual(decodeBinaryRow([T.timestamp(6)], unhex("0001000000000000 0000000000000000")), [null]);
  assert.deepEqual(decodeBinaryRow([T.decimal(38, 10)], unhex("0001000000000000 0000000000000000")), [null]);
  // pypaimon's serialized bytes of (INT 1, STRING 'x', BIGINT 10), with the arity prefix.
  assert.deepEqual(
    deserializeBinaryRow([T.int(), T.string(), T.bigint()], unhex("00000003 0000000000000000 0100000000000000 7800000000000081 0a00000000000000")),
    [1, "x", 10n],
  );
});

test("binary-row - decimal wider than its precision decodes as null (Java getDecimal)", () => {
  const row = encodeBinaryRow([T.decimal(38, 0)], [10n ** 20n]);
  assert.deepEqual(decodeBinaryRow([T.decimal(20, 0)], row), [null]);
  assert.deepEqual(decodeBinaryRow([T.decimal(21, 0)], row), [10n ** 20n]);
});

test("binary-row - row kind byte", () => {
  const row = encodeBinaryRow([T.int()], [1], RowKind.DELETE);
  assert.equal(row[0], 3);
  assert.equal(binaryRowKind(row), RowKind.DELETE);
  assert.equal(binaryRowKind(encodeBinaryRow([T.int()], [1])), RowKind.INSERT);
});

test("binary-row - framing: arity prefix is big-endian and checked on read", () => {
  const framed = frameBinaryRow(300, new Uint8Array(8));
  assert.equal(hex(framed.subarray(0, 4)), "0000012c");
  const two = serializeBinaryRow([T.int(), T.int()], [1, 2]);
  assert.throws(() => deserializeBinaryRow([T.int()], two), isKind("DataInvalid"));
  assert.throws(() => deserializeBinaryRow([T.int(), T.int(), T.int()], two), /arity 2 but 3/);
  assert.throws(() => deserializeBinaryRow([], new Uint8Array(2)), isKind("DataInvalid"));
});

test("binary-row - decode rejects truncated rows and out-of-range offsets", () => {
  assert.throws(() => decodeBinaryRow([T.int()], new Uint8Array(12)), isKind("DataInvalid"));
  const row = encodeBinaryRow([T.string()], ["hello world!"]);
  assert.throws(() => decodeBinaryRow([T.string()], row.subarray(0, 20)), /beyond the row length/);
  assert.throws(() => decodeBinaryRow([T.timestamp(6)], unhex("0000000000000000 0000000040000000")), isKind("DataInvalid"));
});

test("binary-row - decode works on a subarray with a non-zero byteOffset", () => {
  const framed = serializeBinaryRow([T.bigint(), T.string()], [7n, "hello world!"]);
  const padded = new Uint8Array(framed.length + 5);
  padded.set(framed, 5);
  assert.deepEqual(deserializeBinaryRow([T.bigint(), T.string()], padded.subarray(5)), [7n, "hello world!"]);
});

test("binary-row - nested types are unsupported", () => {
  assert.throws(() => encodeBinaryRow([T.array(T.int())], [[1]]), isKind("Unsupported"));
  assert.throws(() => decodeBinaryRow([T.map(T.string(), T.int())], new Uint8Array(16)), isKind("Unsupported"));
});

test("binary-row - non-canonical values are rejected with the field and type", () => {
  assert.throws(() => encodeBinaryRow([T.int()], ["1"]), /field 0 \(INT\): expected a 32-bit integer/);
  assert.throws(() => encodeBinaryRow([T.int()], [2 ** 31]), isKind("DataInvalid"));
  assert.throws(() => encodeBinaryRow([T.tinyint()], [128]), isKind("DataInvalid"));
  assert.throws(() => encodeBinaryRow([T.bigint()], [2n ** 63n]), isKind("DataInvalid"));
  assert.throws(() => encodeBinaryRow([T.bigint()], [1.5]), isKind("DataInvalid"));
  assert.throws(() => encodeBinaryRow([T.decimal(10, 2)], [12.34]), isKind("DataInvalid"));
  assert.throws(() => encodeBinaryRow([T.decimal(38, 0)], [2n ** 130n]), /does not fit in 16 bytes/);
  assert.throws(() => encodeBinaryRow([T.timestamp(6)], [new Date() as unknown as Value]), isKind("DataInvalid"));
  assert.throws(() => encodeBinaryRow([T.bytes()], ["AAA="]), isKind("DataInvalid"));
  assert.throws(() => encodeBinaryRow([T.int(), T.int()], [1]), /expects 2 values, got 1/);
});

test("binary-row - writer reuse gives the same bytes as one-shot encoding", () => {
  const types = [T.string(), T.timestamp(6), T.decimal(25, 5), T.int()];
  const encode = createRowEncoder(types);
  const w = new BinaryRowWriter(types.length, 0);
  const rows: Value[][] = [
    ["a fairly long string that forces the writer to grow", ts("2024-05-06T07:08:09.010", 11000), 123456789012345678901n, 1],
    ["short", null, null, null],
    ["x".repeat(500), ts("1900-01-01T00:00:00"), -1n, -1],
    ["", ts("2024-01-01T00:00:00"), 0n, 0],
  ];
  for (const r of rows) {
    w.reset();
    encode(w, r);
    assert.deepEqual(w.toBytes(), encodeBinaryRow(types, r));
    assert.deepEqual(w.view(), encodeBinaryRow(types, r));
    assert.deepEqual(w.toSerialized(), serializeBinaryRow(types, r));
    assert.deepEqual(decodeBinaryRow(types, w.view()), r);
  }
});

test("binary-row - writer rejects field indexes outside the arity", () => {
  const w = new BinaryRowWriter(2);
  w.reset();
  assert.throws(() => w.writeInt(2, 1), isKind("DataInvalid"));
  assert.throws(() => w.setNull(-1), isKind("DataInvalid"));
});

// ---------------------------------------------------------------------------------------------------------------
// Property: decode(encode(v)) == v for random rows of mixed primitive types

type Gen = { type: DataType; value: fc.Arbitrary<Value> };

const genFor = (kind: number, precision: number): Gen => {
  switch (kind) {
    case 0:
      return { type: T.boolean(), value: fc.boolean() };
    case 1:
      return { type: T.tinyint(), value: fc.integer({ min: -128, max: 127 }) };
    case 2:
      return { type: T.smallint(), value: fc.integer({ min: -32768, max: 32767 }) };
    case 3:
      return { type: T.int(), value: fc.integer() };
    case 4:
      return { type: T.bigint(), value: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }) };
    case 5:
      return { type: T.float(), value: fc.float() };
    case 6:
      return { type: T.double(), value: fc.double() };
    case 7: {
      const p = 1 + (precision % 38);
      const max = 10n ** BigInt(p) - 1n;
      return { type: T.decimal(p, Math.min(p, 2)), value: fc.bigInt({ min: -max, max }) };
    }
    case 8:
      return { type: T.string(), value: fc.string({ unit: "binary", maxLength: 24 }) };
    case 9:
      return { type: T.bytes(), value: fc.uint8Array({ maxLength: 24 }) };
    case 10:
      return { type: T.date(), value: fc.integer({ min: -1_000_000, max: 1_000_000 }) };
    case 11:
      return { type: { root: "TIME", precision: 3, nullable: true }, value: fc.integer({ min: 0, max: 86_399_999 }) };
    default: {
      const p = precision % 10;
      const type = kind === 12 ? T.timestamp(p) : T.timestampLtz(p);
      const value = fc
        .tuple(fc.integer({ min: -8_000_000_000_000, max: 8_000_000_000_000 }), fc.integer({ min: 0, max: 999_999 }))
        .map(([millis, nano]) => new Timestamp(millis, nano).truncate(p));
      return { type, value };
    }
  }
};

const rowArb: fc.Arbitrary<{ types: DataType[]; values: Value[] }> = fc
  .array(fc.tuple(fc.integer({ min: 0, max: 13 }), fc.nat(100)), { maxLength: 70 })
  .chain((specs) => {
    const gens = specs.map(([k, p]) => genFor(k, p));
    return fc.tuple(...gens.map((g) => fc.option(g.value, { nil: null, freq: 5 }))).map((values) => ({ types: gens.map((g) => g.type), values: values as Value[] }));
  });

test("binary-row - property: decode(encode(row)) == row for mixed primitive types", () => {
  fc.assert(
    fc.property(rowArb, ({ types, values }) => {
      const row = encodeBinaryRow(types, values);
      assert.equal(row.length % 8, 0);
      assert.deepStrictEqual(decodeBinaryRow(types, row), values);
      assert.deepStrictEqual(deserializeBinaryRow(types, serializeBinaryRow(types, values)), values);
    }),
    { numRuns: 500 },
  );
});
