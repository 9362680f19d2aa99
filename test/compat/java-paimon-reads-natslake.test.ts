/**
 * natslake writes → released Java Paimon (1.4.2, test/compat/java/PaimonRead.java) reads identical rows: every
 * type natslake supports, nulls, projection; TIMESTAMP(9) / TIMESTAMP_LTZ(9) with nanosecond digits (INT96 in the
 * data files) through Java, pypaimon and natslake itself; and a DOUBLE/FLOAT column holding NaN, which Java's
 * filter `d > 1e300` must return (Paimon compares with Double.compareTo: NaN above everything) — arrow-rs leaves
 * NaN out of the footer's max, and a footer max of 1.0 made Java skip the row group and lose the row.
 *
 * The tables are written first and read by one JVM (its start costs seconds), then each test checks its part.
 */
import { before, after, test } from "node:test";
import assert from "node:assert/strict";
import { javaPaimonRead, javaPaimonReadRaw, javaRows, type JavaReadRequest, type JavaResult } from "../helpers/java.ts";
import { paimonRead } from "../helpers/python.ts";
import { createTable, expectedJson, readJson, sortRows, tempDir, writeRows } from "../helpers/tables.ts";
import type { Table } from "../../src/table/table.ts";

const wh = tempDir();
after(() => wh.cleanup());

const ALL_TYPES =
  "id BIGINT NOT NULL, b BOOLEAN, t TINYINT, s SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE, " +
  "dec_small DECIMAL(10, 2), dec_mid DECIMAL(18, 4), dec_big DECIMAL(38, 10), ch CHAR(3), vc VARCHAR(20), str STRING, " +
  "bin BINARY(4), vbin BYTES, dt DATE, tm TIME, ts0 TIMESTAMP(0), ts3 TIMESTAMP(3), ts6 TIMESTAMP(6), ts9 TIMESTAMP(9), " +
  "ltz3 TIMESTAMP_LTZ(3), ltz6 TIMESTAMP_LTZ(6), ltz9 TIMESTAMP_LTZ(9), tags ARRAY<STRING>, ints ARRAY<INT NOT NULL>, " +
  "tsa ARRAY<TIMESTAMP(9)>, attrs MAP<STRING, INT>, mb MAP<BIGINT, ARRAY<STRING>>, " +
  "pt ROW<x DOUBLE, y STRING, z ROW<a TIMESTAMP(9)>>, rs ARRAY<ROW<k STRING NOT NULL, v BIGINT>>, req STRING NOT NULL";

const frac = (i: number, digits: number): string => String((i * 7919 + 123456789) % 10 ** digits).padStart(digits, "0");

function allTypesRow(i: number): Record<string, unknown> {
  const nul = i % 5 === 4; // every fifth row is all nulls (where nullable)
  const v = <T>(x: T): T | null => (nul ? null : x);
  return {
    id: i,
    b: v(i % 2 === 0),
    t: v((i % 256) - 128),
    s: v(i * 7 - 30000),
    i: v(i * 100_003 - 2_000_000_000),
    bi: v(i % 2 ? `-${9223372036854775000n + BigInt(i)}` : i * 1_000_000_007),
    f: v(i / 4 - 2),
    d: v(i % 3 === 0 ? -i * 1.5e100 : i / 3),
    dec_small: v(`${i}.${String(i % 100).padStart(2, "0")}`),
    dec_mid: v(`-${i}12345678901.2345`),
    dec_big: v(`-${"9".repeat(27)}.${String(i).padStart(10, "0")}`),
    ch: v("abc"),
    vc: v(`v${i}`),
    str: v(`row ${i} — ünïcödé 🚀`),
    bin: v(Buffer.from([i % 256, 0, 255, 7]).toString("base64")),
    vbin: v(Buffer.from("x".repeat(i)).toString("base64")),
    dt: v(`${1900 + i * 7}-0${1 + (i % 9)}-1${i % 10}`),
    tm: v(`1${i % 10}:0${i % 10}:59.${frac(i, 3)}`),
    ts0: v(`2026-11-29T10:00:0${i % 10}`),
    ts3: v(`1969-12-31T23:59:59.${frac(i, 3)}`),
    ts6: v(`2026-11-29T10:00:00.${frac(i, 6)}`),
    ts9: v(`${1950 + i}-06-15T12:34:56.${frac(i, 9)}`),
    ltz3: v(`2026-11-29T10:00:00.${frac(i, 3)}Z`),
    ltz6: v(`1960-01-01T00:00:00.${frac(i, 6)}Z`),
    ltz9: v(`${2000 + i}-02-29T23:59:59.${frac(i, 9)}Z`.replace(/^(\d{4})-02-29/, (m, y: string) => (Number(y) % 4 === 0 ? m : `${y}-03-01`))),
    tags: v(i % 3 === 0 ? [] : [`a${i}`, null, "b"]),
    ints: v([i, -i | 0, 2147483647]),
    tsa: v([`1969-07-20T20:17:40.${frac(i, 9)}`, null]),
    attrs: v({ k1: i, k2: null }),
    mb: v([[BigInt(i) - 5n, ["x", null]], [9007199254740993n, []]]),
    pt: v({ x: i + 0.5, y: i % 2 ? null : "y", z: i % 3 ? { a: `2262-04-11T23:47:16.${frac(i, 9)}` } : null }),
    rs: v([{ k: "one", v: i }, { k: "two", v: null }]),
    req: `r${i}`,
  };
}

/** Nanosecond digits everywhere, pre-1970 values, and the ends of the int64-nanos range. */
const NANOS = "id INT NOT NULL, ts7 TIMESTAMP(7), ts8 TIMESTAMP(8), ts9 TIMESTAMP(9), ltz7 TIMESTAMP_LTZ(7), ltz9 TIMESTAMP_LTZ(9)";
const NANOS_ROWS: Array<Record<string, unknown>> = [
  { id: 1, ts7: "2024-01-02T03:04:05.1234567", ts8: "2024-01-02T03:04:05.12345678", ts9: "2024-01-02T03:04:05.123456789", ltz7: "2024-01-02T03:04:05.7654321Z", ltz9: "2024-01-02T03:04:05.987654321Z" },
  { id: 2, ts7: "1969-12-31T23:59:59.9999999", ts8: "1969-12-31T23:59:59.00000001", ts9: "1969-12-31T23:59:59.999999999", ltz7: "1900-01-01T00:00:00.0000001Z", ltz9: "1960-06-30T12:00:00.000000001Z" },
  { id: 3, ts7: null, ts8: null, ts9: "1677-09-21T00:12:43.145224192", ltz7: null, ltz9: "2262-04-11T23:47:16.854775807Z" },
  { id: 4, ts7: "1970-01-01T00:00:00.0000001", ts8: "2000-02-29T00:00:00.00000001", ts9: "1970-01-01T00:00:00.000000001", ltz7: "2100-12-31T23:59:59.9999999Z", ltz9: null },
];

const NAN = "id INT NOT NULL, d DOUBLE, f FLOAT";
const NAN_ROWS: Array<Record<string, unknown>> = [
  { id: 1, d: 1.0, f: 1.0 },
  { id: 2, d: "NaN", f: "NaN" },
  { id: 3, d: -3.5, f: -3.5 },
  { id: 4, d: null, f: null },
  { id: 5, d: "-Infinity", f: 2.5 },
];

interface Case {
  table: Table;
  rows: Array<Record<string, unknown>>;
  request: JavaReadRequest;
}

const cases: Record<string, Case> = {};
let results: Record<string, JavaResult<Record<string, unknown>>> = {};
const java = (name: string): Array<Record<string, unknown>> => javaRows(results[name]);

before(async () => {
  const all = await createTable(wh.path, "java.all_types", ALL_TYPES);
  const allRows = Array.from({ length: 15 }, (_, i) => allTypesRow(i));
  await writeRows(all, allRows.slice(0, 8)); // two commits, two data files
  await writeRows(all, allRows.slice(8));
  const nanos = await createTable(wh.path, "java.nanos", NANOS);
  await writeRows(nanos, NANOS_ROWS);
  const nan = await createTable(wh.path, "java.nan", NAN);
  await writeRows(nan, NAN_ROWS);
  Object.assign(cases, {
    all: { table: all, rows: allRows, request: { table: "java.all_types" } },
    projected: { table: all, rows: allRows, request: { table: "java.all_types", columns: ["ts9", "id", "pt", "ltz9"] } },
    nanos: { table: nanos, rows: NANOS_ROWS, request: { table: "java.nanos" } },
    nan: { table: nan, rows: NAN_ROWS, request: { table: "java.nan" } },
    nanD: { table: nan, rows: NAN_ROWS, request: { table: "java.nan", filter: { column: "d", op: "gt", literal: "1e300" } } },
    nanF: { table: nan, rows: NAN_ROWS, request: { table: "java.nan", filter: { column: "f", op: "gt", literal: "1e30" } } },
    nanLt: { table: nan, rows: NAN_ROWS, request: { table: "java.nan", filter: { column: "d", op: "lt", literal: "0" } } },
  } satisfies Record<string, Case>);
  const names = Object.keys(cases);
  const read = await javaPaimonRead(wh.path, names.map((n) => cases[n]!.table), names.map((n) => cases[n]!.request));
  results = Object.fromEntries(names.map((n, k) => [n, read[k]!]));
});

const expected = (c: Case): Array<Record<string, unknown>> => {
  const rows = c.rows.map((r) => expectedJson(c.table, r));
  const cols = c.request.columns;
  return cols === undefined ? rows : rows.map((r) => Object.fromEntries(cols.map((n) => [n, r[n]])));
};

test("natslake → Java Paimon - every type, nulls, two files: Java reads what was written", async () => {
  const c = cases["all"]!;
  assert.deepEqual(await readJson(c.table), expected(c), "natslake reads its own rows");
  assert.equal(java("all").length, c.rows.length);
  assert.deepEqual(sortRows(java("all")), sortRows(expected(c)));
});

test("natslake → Java Paimon - projection, nested TIMESTAMP(9) inside ROW and ARRAY", () => {
  const c = cases["projected"]!;
  assert.deepEqual(sortRows(java("projected")), sortRows(expected(c)));
});

test("natslake → Java Paimon, pypaimon, natslake - TIMESTAMP(7..9) and TIMESTAMP_LTZ(7..9) keep every nanosecond", async () => {
  const c = cases["nanos"]!;
  const want = expected(c);
  assert.equal(want[0]!["ts9"], "2024-01-02T03:04:05.123456789", "the fixture carries nanosecond digits");
  assert.deepEqual(sortRows(java("nanos")), sortRows(want), "Java Paimon");
  assert.deepEqual(sortRows(await paimonRead(wh.path, "java.nanos")), sortRows(want), "pypaimon");
  assert.deepEqual(await readJson(c.table), want, "natslake");
});

test("natslake → Java Paimon - NaN: `d > 1e300` and `f > 1e30` return the NaN row (NaN sorts above everything); `d < 0` does not", async () => {
  const c = cases["nan"]!;
  const rows = expected(c);
  assert.deepEqual(sortRows(java("nan")), sortRows(rows));
  assert.deepEqual(java("nanD"), [rows[1]], "Java Paimon keeps the NaN row for d > 1e300");
  assert.deepEqual(java("nanF"), [rows[1]], "Java Paimon keeps the NaN row for f > 1e30");
  assert.deepEqual(sortRows(java("nanLt")), sortRows([rows[2]!, rows[4]!]));
  assert.deepEqual(sortRows(await paimonRead(wh.path, "java.nan")), sortRows(rows), "pypaimon reads the file");
  assert.deepEqual(await readJson(c.table), rows, "natslake reads it");
});

test("Java oracle - a missing oracle is an error that names scripts/setup.sh, never a skip", async () => {
  const saved = process.env.NATSLAKE_JAVA_ORACLE_DIR;
  process.env.NATSLAKE_JAVA_ORACLE_DIR = `${wh.path}/no-oracle-here`;
  try {
    await assert.rejects(javaPaimonReadRaw(wh.path, [{ table: "java.nan" }]), /Java Paimon oracle is missing .*scripts\/setup\.sh/);
  } finally {
    if (saved === undefined) delete process.env.NATSLAKE_JAVA_ORACLE_DIR;
    else process.env.NATSLAKE_JAVA_ORACLE_DIR = saved;
  }
  // A request Java cannot serve fails alone; the others in the same JVM still answer.
  const [bad, good] = await javaPaimonReadRaw(wh.path, [{ table: "java.no_such_table" }, { table: "java.nan", columns: ["id"] }]);
  assert.match(bad!.error ?? "", /no_such_table/);
  assert.equal(good!.rows?.length, NAN_ROWS.length);
});
