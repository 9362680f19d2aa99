/**
 * Partition times as Paimon's PartitionTimeExtractor finds them: Java DateTimeFormatter patterns (SMART resolution),
 * the default lenient format, `$key` patterns, and the values that do not parse (kept by expiration, not an error).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  compileFormatter,
  parseDefaultPartitionTime,
  PartitionTimeExtractor,
  PartitionTimeParseError,
  substitutePattern,
} from "../../../src/maintenance/partition-time.ts";
import { validateCreateOptions } from "../../../src/options.ts";
import { isLakeError } from "../../../src/errors.ts";

/** Wall-clock ms of an ISO local date-time (read as UTC, as the extractor encodes it). */
const wall = (iso: string): number => Date.parse(iso + "Z");
const parses = (formatter: string, text: string): number => compileFormatter(formatter).parse(text);
const notParsed = (formatter: string | null, text: string): void => {
  const ex = new PartitionTimeExtractor(null, formatter);
  assert.throws(() => ex.extract(["dt"], [text]), PartitionTimeParseError, `${formatter ?? "default"} must not parse '${text}'`);
};

test("partition time - the formatters operators use", () => {
  assert.equal(parses("yyyy-MM-dd", "2026-11-24"), wall("2026-11-24T00:00:00"));
  assert.equal(parses("yyyyMMdd", "20261124"), wall("2026-11-24T00:00:00"));
  assert.equal(parses("yyyy-MM-dd HH:mm:ss", "2026-11-24 07:08:09"), wall("2026-11-24T07:08:09"));
  assert.equal(parses("yyyyMMddHH", "2026112413"), wall("2026-11-24T13:00:00"), "an hour alone: minutes and seconds are 0");
  assert.equal(parses("yyyy-MM-dd HH", "2026-11-24 05"), wall("2026-11-24T05:00:00"));
  assert.equal(parses("yyyy/MM/dd HH:mm", "2026/11/24 23:59"), wall("2026-11-24T23:59:00"));
  assert.equal(parses("uuuu-MM-dd", "2026-11-24"), wall("2026-11-24T00:00:00"), "u is the year too");
  assert.equal(parses("yyyy-MM-dd'T'HH:mm:ss.SSS", "2026-11-24T01:02:03.456"), wall("2026-11-24T01:02:03.456"));
  assert.equal(parses("dd MMM yyyy", "24 Nov 2026"), wall("2026-11-24T00:00:00"));
  assert.equal(parses("MMMM d, yyyy", "November 4, 2026"), wall("2026-11-04T00:00:00"));
  assert.equal(parses("yy-MM-dd", "26-11-24"), wall("2026-11-24T00:00:00"), "yy is 2000-2099");
  assert.equal(parses("'day='yyyy-MM-dd", "day=2026-11-24"), wall("2026-11-24T00:00:00"), "quoted literals");
});

test("partition time - SMART resolution and strict matching (java.time's)", () => {
  assert.equal(parses("yyyy-MM-dd", "2026-02-31"), wall("2026-02-28T00:00:00"), "a day past the month's end is its last day");
  assert.equal(parses("yyyy-MM-dd", "2024-02-30"), wall("2024-02-29T00:00:00"), "leap year");
  assert.equal(parses("yyyy-MM-dd HH:mm:ss", "2026-11-24 24:00:00"), wall("2026-11-25T00:00:00"), "24:00:00 is the next midnight");
  for (const [f, text] of [
    ["yyyy-MM-dd", "2026-1-24"], // MM needs two digits
    ["yyyy-MM-dd", "2026-13-01"], // month out of range
    ["yyyy-MM-dd", "2026-11-32"],
    ["yyyy-MM-dd", "2026-11-24 "], // unparsed text
    ["yyyy-MM-dd", "not-a-date"],
    ["yyyy-MM-dd HH:mm:ss", "2026-11-24 24:00:01"],
    ["yyyy-MM-dd HH:mm:ss", "2026-11-24 10:60:00"],
    ["yyyyMMdd", "2026112"],
    ["MMM dd yyyy", "nov 24 2026"], // text is case-sensitive
  ] as const) {
    notParsed(f, text);
  }
  // A formatter without an hour gives midnight; with a second but no minute Java resolves no time: the date alone.
  assert.equal(parses("yyyy-MM-dd ss", "2026-11-24 30"), wall("2026-11-24T00:00:00"));
});

test("partition time - Paimon's default format is lenient (no formatter)", () => {
  const ex = new PartitionTimeExtractor(null, null);
  assert.equal(ex.extract(["dt"], ["2026-11-24"]), wall("2026-11-24T00:00:00"));
  assert.equal(ex.extract(["dt"], ["2026-1-4"]), wall("2026-01-04T00:00:00"), "1-digit fields");
  assert.equal(ex.extract(["dt"], ["2026-11-24 10:20:30"]), wall("2026-11-24T10:20:30"));
  assert.equal(ex.extract(["dt"], ["2026-11-24 10:20:30.5"]), wall("2026-11-24T10:20:30.500"));
  assert.equal(parseDefaultPartitionTime("2026-13-01"), wall("2027-01-01T00:00:00"), "month 13 rolls into the next year");
  assert.equal(parseDefaultPartitionTime("2026-02-30"), wall("2026-03-02T00:00:00"), "day 30 of February rolls into March");
  notParsed(null, "20261124");
  notParsed(null, "2026-11-24T10:20:30");
  notParsed(null, "2026-11-24 10:20");
});

test("partition time - $key patterns: longer keys first, other text kept, a null cannot be substituted", () => {
  assert.equal(substitutePattern("$dt $hour:00:00", ["dt", "hour"], ["2026-11-24", "07"]), "2026-11-24 07:00:00");
  assert.equal(substitutePattern("$dt1-$dt", ["dt", "dt1"], ["A", "B"]), "B-A", "$dt1 is not $dt followed by 1");
  assert.equal(substitutePattern("$year-$month-$day", ["year", "month", "day"], ["2026", "11", "24"]), "2026-11-24");
  assert.equal(substitutePattern("$x $", ["dt"], ["A"]), "$x $", "an unknown key and a lone $ are literal");
  assert.throws(() => substitutePattern("$dt", ["dt"], [null]), PartitionTimeParseError);

  const hourly = new PartitionTimeExtractor("$dt $hour:00:00", "yyyy-MM-dd HH:mm:ss");
  assert.equal(hourly.extract(["dt", "hour"], ["2026-11-24", "07"]), wall("2026-11-24T07:00:00"));
  assert.throws(() => hourly.extract(["dt", "hour"], ["2026-11-24", "7"]), PartitionTimeParseError, "HH needs two digits");
  const second = new PartitionTimeExtractor("$day", "yyyyMMdd");
  assert.equal(second.extract(["region", "day"], ["eu", "20261124"]), wall("2026-11-24T00:00:00"), "the pattern picks the key; without one, the first value");
  assert.throws(() => new PartitionTimeExtractor(null, "yyyyMMdd").extract(["region", "day"], ["eu", "20261124"]), PartitionTimeParseError);
  assert.throws(() => new PartitionTimeExtractor(null, null).extract(["dt"], [null]), PartitionTimeParseError, "a null first value");
});

test("partition time - a formatter that cannot work fails at table create, naming the problem", () => {
  for (const [f, what] of [
    ["yyyy-MM-dd EEE", /pattern letter 'E' is not supported/],
    ["yyyy-MM", /must have a year .* a month .* and a day/],
    ["yyyy-MM-dd'T", /unclosed quote/],
    ["yyyy-MM-ddd", /too many pattern letters 'ddd'/],
    ["yyyy-MM-dd[ HH]", /optional sections/],
    ["yyyy-MM-dd-yyyy", /the year appears twice/],
  ] as const) {
    assert.throws(
      () => validateCreateOptions({ "partition.timestamp-formatter": f }),
      (e: unknown) => isLakeError(e) && /partition\.timestamp-formatter/.test(e.message) && what.test(e.message),
      f,
    );
  }
  validateCreateOptions({ "partition.timestamp-formatter": "yyyy-MM-dd", "partition.timestamp-pattern": "$dt", "partition.expiration-time": "7 d" });
  assert.throws(() => validateCreateOptions({ "partition.expiration-strategy": "by-size" }), /expected one of values-time, update-time/);
  assert.throws(() => validateCreateOptions({ "partition.expiration-max-num": "0" }), /at least 1/);
  assert.throws(() => validateCreateOptions({ "partition.expiration-time": "a week" }), /not a duration/);
});
