/**
 * Shared fixtures for the Arrow/Parquet codec tests: one column of every Paimon type, and rows exercising nulls,
 * extremes (38-digit decimals, pre-1970 and year-9999 timestamps with nanos, non-BMP strings) and nesting.
 */
import { parseColumnList, type DataType } from "../../src/format/data-types.ts";
import { Timestamp, type Row } from "../../src/format/values.ts";

export const ts = (iso: string, nanoOfMilli = 0): Timestamp => new Timestamp(Date.parse(iso + "Z"), nanoOfMilli);
export const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);

export const ALL_TYPES: Array<{ name: string; type: DataType }> = parseColumnList(`
  b BOOLEAN, b_nn BOOLEAN NOT NULL, i8 TINYINT, i16 SMALLINT, i32 INT NOT NULL, i64 BIGINT, f32 FLOAT, f64 DOUBLE,
  d10 DECIMAL(10, 2), d18 DECIMAL(18, 4), d38 DECIMAL(38, 10), ch CHAR(3), vc VARCHAR(20), s STRING,
  bin BINARY(4), vbin BYTES, dt DATE, tm TIME(3),
  ts0 TIMESTAMP(0), ts3 TIMESTAMP(3), ts6 TIMESTAMP(6), ts9 TIMESTAMP(9),
  ltz3 TIMESTAMP_LTZ(3), ltz6 TIMESTAMP_LTZ(6), ltz9 TIMESTAMP_LTZ(9),
  tags ARRAY<STRING>, ints ARRAY<INT NOT NULL>, m MAP<STRING, INT>, mb MAP<BIGINT, ARRAY<STRING>>,
  r ROW<x INT NOT NULL, y STRING, z ROW<a DOUBLE>>, rs ARRAY<ROW<k STRING NOT NULL, v BIGINT>>, ms MULTISET<STRING>
`);

const MAX38 = 10n ** 38n - 1n;

export const ALL_ROWS: Row[] = [
  {
    b: true, b_nn: false, i8: -128, i16: 32767, i32: -2147483648, i64: -(2n ** 63n), f32: 1.5, f64: -0.1,
    d10: 1234n, d18: -123456789012345678n, d38: MAX38, ch: "abc", vc: "héllo wörld", s: "emoji 😀 and ｡",
    bin: bytes(0, 1, 2, 255), vbin: bytes(), dt: 19723, tm: 45296789,
    ts0: ts("2024-01-02T03:04:05"), ts3: ts("2024-01-02T03:04:05.678"), ts6: ts("2024-01-02T03:04:05.678", 123000),
    ts9: ts("2024-01-02T03:04:05.678", 123456), ltz3: ts("1969-12-31T23:59:59.999"), ltz6: ts("1900-06-15T12:00:00.001", 999000),
    ltz9: ts("1677-09-22T00:00:00.001", 1),
    tags: ["a", "", "ß"], ints: [1, 2, 3], m: [["k1", 1], ["k2", null]], mb: [[5n, ["x"]], [-7n, []]],
    r: { x: 7, y: "why", z: { a: 2.5 } }, rs: [{ k: "one", v: 1n }, { k: "two", v: null }],
    ms: ["a", "a", "b"], // grouped: a multiset is stored as element → count, so it reads back grouped
  },
  {
    b: false, b_nn: true, i8: 127, i16: -32768, i32: 2147483647, i64: 2n ** 63n - 1n, f32: -0, f64: 1e300,
    d10: -99999999n, d18: 999999999999999999n, d38: -MAX38, ch: "", vc: "", s: "x".repeat(200),
    bin: bytes(9), vbin: bytes(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17), dt: -719162, tm: 0,
    ts0: ts("9999-12-31T23:59:59"), ts3: ts("1970-01-01T00:00:00"), ts6: ts("2262-04-11T23:47:16.854", 775000),
    ts9: ts("2262-04-11T23:47:16.854", 775807), ltz3: ts("2000-02-29T00:00:00"), ltz6: ts("0001-01-01T00:00:00"),
    ltz9: ts("1970-01-01T00:00:00", 1),
    tags: [], ints: [], m: [], mb: [],
    r: { x: -1, y: null, z: null }, rs: [], ms: [],
  },
  {
    b: null, b_nn: true, i8: null, i16: null, i32: 0, i64: null, f32: null, f64: null,
    d10: null, d18: null, d38: null, ch: null, vc: null, s: null,
    bin: null, vbin: null, dt: null, tm: null, ts0: null, ts3: null, ts6: null, ts9: null, ltz3: null, ltz6: null, ltz9: null,
    tags: null, ints: null, m: null, mb: null, r: null, rs: null, ms: null,
  },
  {
    b: true, b_nn: true, i8: 0, i16: 0, i32: 1, i64: 0n, f32: Number.POSITIVE_INFINITY, f64: Number.NaN,
    d10: 0n, d18: 1n, d38: 12345678901234567890123456789n, ch: "z", vc: "naïve", s: "",
    bin: bytes(), vbin: bytes(0), dt: 0, tm: 86399999, ts0: ts("1970-01-01T00:00:00"), ts3: ts("1960-05-05T05:05:05.005"),
    ts6: ts("1960-05-05T05:05:05.005", 5000), ts9: ts("1960-05-05T05:05:05.005", 5005), ltz3: ts("2030-01-01T00:00:00.001"),
    ltz6: ts("2030-01-01T00:00:00.001", 1000), ltz9: ts("2030-01-01T00:00:00.001", 999999),
    tags: [null, "n"], ints: [-5], m: [["only", -1]], mb: [[0n, null]],
    r: { x: 0, y: "", z: { a: null } }, rs: [{ k: "", v: -9n }], ms: ["z"],
  },
];
