/**
 * Input values that do not name a real value of their type are refused with a message naming the column, never
 * silently changed: 2026-02-30 is not March 2nd, 1.239 is not 1.24 in DECIMAL(5,2), 25:00 is no time of day.
 * And `read --format jsonl` keeps the sign of -0.0.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseColumnList, type DataType } from "../../../src/format/data-types.ts";
import { compileRowConverter } from "../../../src/format/row-converter.ts";
import { Timestamp, toCanonical, toJsonText, toJsonValue } from "../../../src/format/values.ts";
import { batchRowConverter } from "../../../actors/wire/row-batch.ts";

const typeOf = (sql: string): DataType => parseColumnList(`c ${sql}`)[0]!.type;
const days = (iso: string): number => Date.parse(iso + "T00:00:00Z") / 86_400_000;

test("values - DATE: a real calendar day converts; one that is not is refused, naming the column", () => {
  const date = typeOf("DATE");
  assert.equal(toCanonical(date, "2026-02-28", "d"), days("2026-02-28"));
  assert.equal(toCanonical(date, "2024-02-29", "d"), days("2024-02-29"), "a leap day");
  assert.equal(toCanonical(date, "2000-02-29", "d"), days("2000-02-29"), "400 years: a leap year");
  for (const [text, why] of [
    ["2026-02-30", /column d: '2026-02-30' is not a valid date: 2026-02 has no day 30 \(it has 28 days\)/],
    ["2026-02-29", /2026-02 has no day 29/],
    ["1900-02-29", /1900-02 has no day 29/],
    ["2026-04-31", /2026-04 has no day 31/],
    ["2026-01-00", /has no day 0/],
    ["2026-13-01", /there is no month 13/],
    ["2026-00-10", /there is no month 0/],
  ] as const) {
    assert.throws(() => toCanonical(date, text, "d"), (e: Error) => why.test(e.message), text);
  }
});

test("values - TIMESTAMP and TIME: hour 25, 24:00, minute 60, Feb 30 and a zone beyond ±18:00 are refused", () => {
  const ts = typeOf("TIMESTAMP(3)");
  assert.deepEqual(toCanonical(ts, "2026-02-28T23:59:59.999", "t"), new Timestamp(Date.parse("2026-02-28T23:59:59.999Z"), 0));
  assert.deepEqual(toCanonical(ts, "2026-03-01T01:00:00+01:00", "t"), new Timestamp(Date.parse("2026-03-01T00:00:00Z"), 0));
  for (const [text, why] of [
    ["2026-02-30T10:00:00", /column t: '2026-02-30T10:00:00' is not a valid timestamp: 2026-02 has no day 30/],
    ["2026-01-01T25:00:00", /hour 25 is beyond 23/],
    ["2026-01-01T24:00:00", /hour 24 is beyond 23/],
    ["2026-01-01 10:60", /minute 60 is beyond 59/],
    ["2026-01-01T10:00:60", /second 60 is beyond 59/],
    ["2026-01-01T10:00:00+19:00", /zone offset \+19:00/],
  ] as const) {
    assert.throws(() => toCanonical(ts, text, "t"), (e: Error) => why.test(e.message), text);
    assert.throws(() => toCanonical(typeOf("TIMESTAMP_LTZ(6)"), text, "t"), (e: Error) => why.test(e.message), text);
  }
  const time = typeOf("TIME");
  assert.equal(toCanonical(time, "23:59:59.999", "tm"), 86_399_999);
  assert.throws(() => toCanonical(time, "25:00:00", "tm"), /column tm: '25:00:00' is not a valid time: hour 25 is beyond 23/);
  assert.throws(() => toCanonical(time, "24:00", "tm"), /hour 24/);
  assert.throws(() => toCanonical(time, "10:61", "tm"), /minute 61/);
});

test("values - DECIMAL: more fraction digits than the scale are refused, not rounded; trailing zeros are fine", () => {
  const dec = typeOf("DECIMAL(5, 2)");
  assert.equal(toCanonical(dec, "1.23", "x"), 123n);
  assert.equal(toCanonical(dec, "1.2", "x"), 120n);
  assert.equal(toCanonical(dec, "1.2300", "x"), 123n, "zeros beyond the scale change nothing");
  assert.equal(toCanonical(dec, -1.5, "x"), -150n);
  for (const input of ["1.239", 1.239, "-1.235", "0.001", "999.995"]) {
    assert.throws(() => toCanonical(dec, input, "x"), /column x: '.*' has 3 digits after the decimal point; DECIMAL\(5, 2\) keeps 2/, String(input));
  }
  assert.throws(() => toCanonical(typeOf("DECIMAL(10, 0)"), "7.5", "x"), /has 1 digits after the decimal point; DECIMAL\(10, 0\) keeps 0/);
  // The compiled row converter (the write path) says the same.
  const conv = compileRowConverter(parseColumnList("x DECIMAL(5, 2), d DATE").map((c, i) => ({ id: i, ...c })));
  assert.throws(() => conv({ x: "1.239" }), /column x: '1\.239' has 3 digits/);
  assert.throws(() => conv({ d: "2026-02-30" }), /column d: '2026-02-30' is not a valid date/);
});

test("values - JSON text keeps -0.0 (JSON.stringify would print 0), everything else as JSON.stringify", () => {
  const dbl = typeOf("DOUBLE");
  assert.equal(toJsonText({ f: toJsonValue(dbl, -0) }), '{"f":-0.0}');
  assert.ok(Object.is((JSON.parse(toJsonText({ f: -0 })) as { f: number }).f, -0), "-0.0 parses back to -0");
  assert.equal(toJsonText(Math.fround(-0)), "-0.0");
  const sample = { a: 1, b: [0, -1.5, null, "x\"y"], c: { d: true, e: "NaN" }, "k\n": null };
  assert.equal(toJsonText(sample), JSON.stringify(sample));
  assert.equal(toJsonText([-0, { z: -0 }]), '[-0.0,{"z":-0.0}]');
});

test("values - the cluster's row check (the router's, for raw publishes; the writers' generic path) refuses the same", () => {
  const fields = parseColumnList("d DATE, ts TIMESTAMP(3), x DECIMAL(5, 2)").map((c, i) => ({ id: i, ...c }));
  const { convert } = batchRowConverter(fields, ["d", "ts", "x"]);
  assert.deepEqual(convert(["2024-02-29", "2024-02-29T23:59:59", "1.5"]), { d: days("2024-02-29"), ts: new Timestamp(Date.parse("2024-02-29T23:59:59Z"), 0), x: 150n });
  assert.throws(() => convert(["2026-02-30", null, null]), /column d: '2026-02-30' is not a valid date/);
  assert.throws(() => convert([null, "2026-01-01T25:00:00", null]), /column ts: .* hour 25/);
  assert.throws(() => convert([null, null, "1.239"]), /column x: '1\.239' has 3 digits/);
});

test("values - epoch millis beyond ±2^53 are refused when the row is read (the columns hold safe integers), not left to fail every flush", () => {
  for (const ms of [1.3521632236956517e306, 2 ** 53, -(2 ** 53) - 2]) {
    assert.throws(() => toCanonical(typeOf("TIMESTAMP(3)"), ms, "ts"), (e: unknown) => e instanceof Error && /column ts: .*beyond ±2\^53/.test(e.message), String(ms));
  }
  const edge = Number.MAX_SAFE_INTEGER;
  assert.equal((toCanonical(typeOf("TIMESTAMP(3)"), edge, "ts") as Timestamp).millis, edge);
});
