import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  DEFAULT_PARTITION_NAME,
  escapePathName,
  isNullOrWhitespaceOnly,
  javaDoubleToString,
  javaFloatToString,
  parsePartitionSpec,
  partitionPath,
  partitionValueString,
  unescapePathName,
} from "../../../src/format/partition.ts";
import { T, type DataType } from "../../../src/format/data-types.ts";
import { Timestamp, type Value } from "../../../src/format/values.ts";
import { isLakeError } from "../../../src/errors.ts";

const LEGACY = { defaultName: DEFAULT_PARTITION_NAME, legacyName: true };
const CAST = { defaultName: DEFAULT_PARTITION_NAME, legacyName: false };
const TIME = (precision: number): DataType => ({ root: "TIME", precision, nullable: true });
const isKind = (kind: "DataInvalid" | "Unsupported") => (e: unknown) => isLakeError(e, kind);

// ---------------------------------------------------------------------------------------------------------------
// Escaping

test("partition - escape: special characters become uppercase %XX", () => {
  assert.equal(escapePathName("a/b"), "a%2Fb");
  assert.equal(escapePathName("a=b:c"), "a%3Db%3Ac");
  assert.equal(escapePathName(`"#%'*/:=?\\{}[]^`), "%22%23%25%27%2A%2F%3A%3D%3F%5C%7B%7D%5B%5D%5E");
  assert.equal(escapePathName("\u0000\u0001\n\u001f\u007f"), "%00%01%0A%1F%7F");
  // Space, other punctuation and non-ASCII stay as they are.
  assert.equal(escapePathName("a b-c_d.e,f;g!h@i$j&k(l)m+n~o`p|q<r>s"), "a b-c_d.e,f;g!h@i$j&k(l)m+n~o`p|q<r>s");
  assert.equal(escapePathName("日本/語"), "日本%2F語");
  assert.throws(() => escapePathName(""), isKind("DataInvalid"));
});

test("partition - escape: exactly 0x00-0x1F, 0x7F and the listed specials are escaped", () => {
  const specials = new Set(`"#%'*/:=?\\{}[]^`);
  for (let c = 0; c < 128; c++) {
    const ch = String.fromCharCode(c);
    const expected = c < 0x20 || c === 0x7f || specials.has(ch);
    assert.equal(escapePathName(ch) !== ch, expected, `char ${c}`);
  }
});

test("partition - unescape follows Java's PartitionPathUtils.unescapePathName", () => {
  assert.equal(unescapePathName("a%2Fb"), "a/b");
  assert.equal(unescapePathName("a%2fb"), "a/b");
  assert.equal(unescapePathName("100%"), "100%");
  assert.equal(unescapePathName("%zz"), "%zz");
  // Java needs i + 2 < length, so a trailing "%41" still decodes but "%4" does not.
  assert.equal(unescapePathName("%41"), "A");
  assert.equal(unescapePathName("x%4"), "x%4");
  // Integer.parseInt accepts a sign.
  assert.equal(unescapePathName("%+9"), "\t");
  assert.equal(unescapePathName("%-1"), "%-1");
});

test("partition - property: unescape(escape(s)) == s", () => {
  fc.assert(
    fc.property(fc.string({ minLength: 1, maxLength: 30, unit: "binary" }), (s) => {
      assert.equal(unescapePathName(escapePathName(s)), s);
    }),
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Paths

test("partition - path of string and int keys", () => {
  assert.equal(partitionPath(["dt", "hr"], [T.string(), T.int()], ["2024-01-01", 7], LEGACY), "dt=2024-01-01/hr=7");
  assert.equal(partitionPath([], [], [], LEGACY), "");
  assert.equal(partitionPath(["a/b"], [T.string()], ["x=y"], LEGACY), "a%2Fb=x%3Dy");
});

test("partition - null, empty and whitespace-only values use the default name", () => {
  const keys = ["a", "b", "c", "d"];
  const types = [T.string(), T.string(), T.string(), T.int()];
  assert.equal(partitionPath(keys, types, [null, "", " \t\n", null], LEGACY), "a=__DEFAULT_PARTITION__/b=__DEFAULT_PARTITION__/c=__DEFAULT_PARTITION__/d=__DEFAULT_PARTITION__");
  assert.equal(partitionPath(["a"], [T.string()], [null], { defaultName: "NULL_PART", legacyName: true }), "a=NULL_PART");
  // Java's Character.isWhitespace: U+001C..U+001F count, a no-break space does not.
  assert.equal(isNullOrWhitespaceOnly("\u001c\u3000\u2028"), true);
  assert.equal(isNullOrWhitespaceOnly("\u00a0"), false);
  assert.equal(isNullOrWhitespaceOnly("\ufeff"), false);
  assert.equal(partitionPath(["a"], [T.string()], ["\u00a0"], LEGACY), "a=\u00a0");
});

test("partition - legacy names: DATE as int days, TIME as millis, TIMESTAMP as LocalDateTime.toString", () => {
  assert.equal(partitionPath(["d"], [T.date()], [19723], LEGACY), "d=19723");
  assert.equal(partitionPath(["t"], [TIME(0)], [3_600_000], LEGACY), "t=3600000");
  // The ':' of the time is escaped.
  assert.equal(partitionPath(["ts"], [T.timestamp(3)], [new Timestamp(1704067200123, 0)], LEGACY), "ts=2024-01-01T00%3A00%3A00.123");
});

test("partition - non-legacy names cast to STRING: DATE yyyy-mm-dd, TIMESTAMP with a space", () => {
  assert.equal(partitionPath(["d"], [T.date()], [19723], CAST), "d=2024-01-01");
  assert.equal(partitionPath(["ts"], [T.timestamp(3)], [new Timestamp(1704067200123, 0)], CAST), "ts=2024-01-01 00%3A00%3A00.123");
});

test("partition - value text of other types (both modes)", () => {
  for (const legacy of [true, false]) {
    assert.equal(partitionValueString(T.boolean(), true, legacy), "true");
    assert.equal(partitionValueString(T.tinyint(), -5, legacy), "-5");
    assert.equal(partitionValueString(T.bigint(), -(2n ** 63n), legacy), "-9223372036854775808");
    assert.equal(partitionValueString(T.decimal(10, 2), 1230n, legacy), "12.30");
    assert.equal(partitionValueString(T.decimal(10, 2), -5n, legacy), "-0.05");
    assert.equal(partitionValueString(T.decimal(5, 0), 42n, legacy), "42");
    assert.equal(partitionValueString(T.double(), 1, legacy), "1.0");
    assert.equal(partitionValueString(T.float(), 0.1, legacy), "0.1");
    assert.equal(partitionValueString(T.string(), "x", legacy), "x");
    assert.equal(partitionValueString(T.string(), null, legacy), null);
  }
  assert.equal(partitionValueString(T.bytes(), new TextEncoder().encode("héllo"), false), "héllo");
  assert.throws(() => partitionValueString(T.bytes(), new Uint8Array([1]), true), isKind("Unsupported"));
  assert.throws(() => partitionValueString(T.array(T.int()), [1], true), isKind("Unsupported"));
  assert.throws(() => partitionValueString(T.int(), "1", true), isKind("DataInvalid"));
});

// Produced by running Paimon's own DateTimeUtils.formatTimestamp / Timestamp.toString / formatDate /
// formatTimestampMillis (sources at apache/paimon 5dacde5) on JDK 17.
test("partition - timestamp, date and time text match Java's formatting", () => {
  const tsCases: Array<[number, number, number, string]> = [
    [0, 1704067200000, 0, "2024-01-01 00:00:00"],
    [0, 1704067200123, 0, "2024-01-01 00:00:00.123"],
    [0, 1704067200100, 0, "2024-01-01 00:00:00.1"],
    [3, 1704067200000, 0, "2024-01-01 00:00:00.000"],
    [3, 1704067200123, 456000, "2024-01-01 00:00:00.123456"],
    [3, 1704067201000, 0, "2024-01-01 00:00:01.000"],
    [6, 1704067200123, 0, "2024-01-01 00:00:00.123000"],
    [6, 1704067200123, 456789, "2024-01-01 00:00:00.123456789"],
    [6, 253402300799999, 0, "9999-12-31 23:59:59.999000"],
    [9, 1704067200100, 0, "2024-01-01 00:00:00.100000000"],
    [9, -1, 999999, "1969-12-31 23:59:59.999999999"],
    [3, -62135596800000, 0, "0001-01-01 00:00:00.000"],
  ];
  for (const [p, ms, nano, want] of tsCases) assert.equal(partitionValueString(T.timestamp(p), new Timestamp(ms, nano), false), want, `${p} ${ms} ${nano}`);

  const legacyCases: Array<[number, number, string]> = [
    [1704067200000, 0, "2024-01-01T00:00"],
    [1704067200123, 0, "2024-01-01T00:00:00.123"],
    [1704067200123, 456000, "2024-01-01T00:00:00.123456"],
    [1704067200123, 456789, "2024-01-01T00:00:00.123456789"],
    [1704067201000, 0, "2024-01-01T00:00:01"],
    [1704067200100, 0, "2024-01-01T00:00:00.100"],
    [-1, 999999, "1969-12-31T23:59:59.999999999"],
    [-62135596800000, 0, "0001-01-01T00:00"],
  ];
  for (const [ms, nano, want] of legacyCases) assert.equal(partitionValueString(T.timestamp(9), new Timestamp(ms, nano), true), want);
  assert.equal(partitionValueString(T.timestampLtz(3), new Timestamp(1704067200123, 0), true), "2024-01-01T00:00:00.123");

  const dateCases: Array<[number, string]> = [[0, "1970-01-01"], [19723, "2024-01-01"], [-1, "1969-12-31"], [-719162, "0001-01-01"], [2932896, "9999-12-31"], [47647, "2100-06-15"]];
  for (const [d, want] of dateCases) assert.equal(partitionValueString(T.date(), d, false), want);

  const timeCases: Array<[number, number, string]> = [
    [0, 3600500, "01:00:00"],
    [1, 0, "00:00:00.0"],
    [1, 3600500, "01:00:00.5"],
    [1, 3600123, "01:00:00.1"],
    [1, 86399999, "23:59:59.9"],
    [3, 3600000, "01:00:00.0"],
    [3, 3600123, "01:00:00.123"],
    [3, 3600050, "01:00:00.05"],
    [3, 45296789, "12:34:56.789"],
  ];
  for (const [p, t, want] of timeCases) assert.equal(partitionValueString(TIME(p), t, false), want);
});

// Produced by Double.toString / Float.toString on JDK 25 (JDK 19+ digit selection; JDK 17 prints e.g.
// 9.999999999999999E22 for 1e23 and 4.119939E16 with an extra digit for some floats).
test("partition - FLOAT and DOUBLE text match Java's toString", () => {
  const doubles: Array<[number, string]> = [
    [1, "1.0"], [0.1, "0.1"], [0.001, "0.001"], [1e-4, "1.0E-4"], [1e7, "1.0E7"], [9999999, "9999999.0"],
    [123.456, "123.456"], [1e21, "1.0E21"], [1e23, "1.0E23"], [2e-3, "0.002"], [5e-324, "4.9E-324"],
    [1.7976931348623157e308, "1.7976931348623157E308"], [100, "100.0"], [1234567, "1234567.0"],
    [12345678.9, "1.23456789E7"], [-0, "-0.0"], [0, "0.0"], [0.5, "0.5"], [2.5e-5, "2.5E-5"],
    [NaN, "NaN"], [Infinity, "Infinity"], [-Infinity, "-Infinity"], [-1.5, "-1.5"],
  ];
  for (const [v, want] of doubles) assert.equal(javaDoubleToString(v), want, String(v));
  const floats: Array<[number, string]> = [
    [0.1, "0.1"], [1.1, "1.1"], [3.4028235e38, "3.4028235E38"], [1e10, "1.0E10"], [16777216, "1.6777216E7"],
    [1.4e-45, "1.4E-45"], [0.001, "0.001"], [1e7, "1.0E7"], [123.456, "123.456"], [100, "100.0"],
    // Exact ties between two shortest candidates: Java picks the even last digit, JS toPrecision rounds up.
    [283999.125, "283999.12"], [-3612.03125, "-3612.0312"], [2650443.25, "2650443.2"], [257147.625, "257147.62"],
  ];
  for (const [v, want] of floats) assert.equal(javaFloatToString(v), want, String(v));
});

// ---------------------------------------------------------------------------------------------------------------
// CLI specs

test("partition - parse spec into canonical values in partition-key order", () => {
  const keys = ["dt", "hr", "region"];
  const types = [T.date(), T.int(), T.string()];
  assert.deepEqual(parsePartitionSpec("region=eu, hr=7,dt=2024-01-01", keys, types), [19723, 7, "eu"]);
  assert.deepEqual(parsePartitionSpec("dt=19723,hr=7,region=eu", keys, types), [19723, 7, "eu"]);
  assert.deepEqual(parsePartitionSpec("dt=__DEFAULT_PARTITION__,hr=,region=eu", keys, types), [null, null, "eu"]);
  assert.deepEqual(parsePartitionSpec("dt=NONE,hr=1,region=x", keys, types, { defaultName: "NONE" }), [null, 1, "x"]);
  assert.deepEqual(parsePartitionSpec("", [], []), []);
});

test("partition - parse spec of other types", () => {
  const keys = ["b", "big", "dec", "ts", "bin"];
  const types = [T.boolean(), T.bigint(), T.decimal(10, 2), T.timestamp(3), T.bytes()];
  const v = parsePartitionSpec("b=true,big=9007199254740993,dec=12.3,ts=2024-01-01 00:00:00.123,bin=hi", keys, types);
  assert.deepEqual(v, [true, 9007199254740993n, 1230n, new Timestamp(1704067200123, 0), new TextEncoder().encode("hi")]);
});

test("partition - parse spec errors name the problem", () => {
  const keys = ["dt", "hr"];
  const types = [T.string(), T.int()];
  assert.throws(() => parsePartitionSpec("dt=a", keys, types), /missing partition key\(s\) hr/);
  assert.throws(() => parsePartitionSpec("dt=a,hr=1,x=2", keys, types), /unknown partition key 'x' \(partition keys are dt, hr\)/);
  assert.throws(() => parsePartitionSpec("dt=a,dt=b,hr=1", keys, types), /given twice/);
  assert.throws(() => parsePartitionSpec("dt,hr=1", keys, types), /not key=value/);
  assert.throws(() => parsePartitionSpec("dt=a,hr=x", keys, types), isKind("DataInvalid"));
  assert.throws(() => parsePartitionSpec("x=1", [], []), /not partitioned/);
  assert.throws(() => parsePartitionSpec("dt=", ["dt"], [T.string(false)]), /NOT NULL/);
});

test("partition - spec round trip through the directory name (non-legacy)", () => {
  const keys = ["dt", "name"];
  const types = [T.date(), T.string()];
  const values: Value[] = [19723, "a b"];
  assert.equal(partitionPath(keys, types, values, CAST), "dt=2024-01-01/name=a b");
  assert.deepEqual(parsePartitionSpec("dt=2024-01-01,name=a b", keys, types), values);
});
