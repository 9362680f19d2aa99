import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as arrow from "apache-arrow";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { recordBatchToRows } from "../../../src/codec/columns/batch-to-rows.ts";
import { rowsToRecordBatch } from "../../../src/codec/columns/record-batch-builder.ts";
import { fromArrowSchema } from "../../../src/codec/arrow-schema.ts";
import { parquetFooterInfo, parquetRowCount, readParquet, readParquetAsync, readParquetSchema, writeParquet } from "../../../src/codec/parquet.ts";
import { parseColumnList, T, typeToSql, type DataType } from "../../../src/format/data-types.ts";
import { dateToString, formatDecimal, type Row, type Timestamp, type Value } from "../../../src/format/values.ts";
import { isLakeError } from "../../../src/errors.ts";
import { ALL_ROWS, ALL_TYPES, ts } from "../../helpers/codec-fixtures.ts";
import { runPython } from "../../helpers/python.ts";

async function withDuck<R>(fn: (conn: DuckDBConnection, dir: string) => Promise<R>): Promise<R> {
  const dir = mkdtempSync(join(tmpdir(), "natslake-parquet-"));
  const inst = await DuckDBInstance.create(":memory:");
  const conn = await inst.connect();
  try {
    return await fn(conn, dir);
  } finally {
    conn.closeSync();
    inst.closeSync();
    rmSync(dir, { recursive: true, force: true });
  }
}

const sqlPath = (p: string): string => `'${p.replace(/'/g, "''")}'`;

async function rowsOf(conn: DuckDBConnection, sql: string): Promise<Array<Record<string, unknown>>> {
  return (await conn.runAndReadAll(sql)).getRowObjectsJS() as Array<Record<string, unknown>>;
}

/** The JSON DuckDB's `getRowObjectsJson` gives for a canonical value (non-temporal types). */
function duckJson(type: DataType, v: Value): unknown {
  if (v === null) return null;
  switch (type.root) {
    case "BIGINT":
      return String(v);
    case "FLOAT":
    case "DOUBLE": {
      const n = v as number;
      return Number.isNaN(n) ? "NaN" : n === Infinity ? "Infinity" : n === -Infinity ? "-Infinity" : n;
    }
    case "DECIMAL":
      return formatDecimal(v as bigint, type.scale);
    case "ARRAY":
      return (v as Value[]).map((x) => duckJson(type.element, x));
    case "MAP":
      return (v as Array<[Value, Value]>).map(([k, x]) => ({ key: duckJson(type.key, k), value: duckJson(type.value, x) }));
    case "MULTISET": {
      const counts = new Map<Value, number>();
      for (const x of v as Value[]) counts.set(x, (counts.get(x) ?? 0) + 1);
      return [...counts].map(([k, n]) => ({ key: duckJson(type.element, k), value: n }));
    }
    case "ROW": {
      const o: Record<string, unknown> = {};
      for (const f of type.fields) o[f.name] = duckJson(f.type, (v as Record<string, Value>)[f.name] ?? null);
      return o;
    }
    default:
      return v;
  }
}

const floorDiv = (a: bigint, b: bigint): bigint => (a % b < 0n ? a / b - 1n : a / b);

const TEMPORAL = new Set(["DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "BINARY", "VARBINARY"]);

// ---------------------------------------------------------------------------------------------------------------

test("parquet - every type round-trips through writeParquet / readParquet", () => {
  const file = writeParquet(rowsToRecordBatch(ALL_TYPES, ALL_ROWS));
  const table = readParquet(file);
  assert.equal(table.numRows, ALL_ROWS.length);
  assert.deepEqual(recordBatchToRows(ALL_TYPES, table), ALL_ROWS);
  // The Arrow schema read back maps to the same Paimon types (modulo the documented lossy cases).
  const back = new Map(fromArrowSchema(table.schema).map((f) => [f.name, typeToSql(f.type)]));
  assert.equal(back.get("i32"), "INT NOT NULL");
  assert.equal(back.get("d38"), "DECIMAL(38, 10)");
  assert.equal(back.get("ts9"), "TIMESTAMP(9)");
  assert.equal(back.get("ltz6"), "TIMESTAMP(6) WITH LOCAL TIME ZONE");
  assert.equal(back.get("r"), "ROW<x INT NOT NULL, y STRING, z ROW<a DOUBLE>>");
});

test("parquet - file layout matches Java Paimon: REQUIRED for NOT NULL, LIST/element, MAP/key_value, decimals by precision", async () => {
  await withDuck(async (conn, dir) => {
    const path = join(dir, "layout.parquet");
    writeFileSync(path, writeParquet(rowsToRecordBatch(ALL_TYPES, ALL_ROWS)));
    const schema = await rowsOf(conn, `select name, type, type_length, repetition_type, converted_type, logical_type from parquet_schema(${sqlPath(path)})`);
    const at = (name: string, nth = 0): Record<string, unknown> => schema.filter((r) => r["name"] === name)[nth]!;
    assert.equal(at("b_nn")["repetition_type"], "REQUIRED");
    assert.equal(at("i32")["repetition_type"], "REQUIRED");
    assert.equal(at("b")["repetition_type"], "OPTIONAL");
    assert.equal(at("i8")["converted_type"], "INT_8");
    assert.equal(at("i16")["converted_type"], "INT_16");
    assert.equal(at("d10")["type"], "INT64"); // p ≤ 18
    assert.equal(at("d38")["type"], "FIXED_LEN_BYTE_ARRAY");
    assert.equal(at("d38")["type_length"], "16");
    assert.equal(at("bin")["type"], "BYTE_ARRAY");
    assert.equal(at("s")["converted_type"], "UTF8");
    assert.equal(at("dt")["converted_type"], "DATE");
    assert.equal(at("tm")["converted_type"], "TIME_MILLIS");
    assert.equal(at("ts3")["converted_type"], "TIMESTAMP_MILLIS");
    assert.equal(at("ts6")["converted_type"], "TIMESTAMP_MICROS");
    // Precision 7–9: INT96 without a logical type, as Java Paimon writes them (and the only form its reader takes).
    for (const c of ["ts9", "ltz9"]) {
      assert.equal(at(c)["type"], "INT96", c);
      assert.equal(at(c)["type_length"], null, c);
      assert.equal(at(c)["logical_type"], null, c);
      assert.equal(at(c)["converted_type"], null, c);
    }
    assert.match(String(at("ltz3")["logical_type"]), /isAdjustedToUTC=1/);
    assert.match(String(at("ts3")["logical_type"]), /isAdjustedToUTC=0/);

    // ARRAY: 3-level list; the repeated group is `list`, its child `element` (REQUIRED for ARRAY<INT NOT NULL>).
    const names = schema.map((r) => r["name"]);
    const tags = names.indexOf("tags");
    assert.deepEqual(names.slice(tags, tags + 3), ["tags", "list", "element"]);
    assert.equal(schema[tags]!["converted_type"], "LIST");
    assert.equal(schema[tags + 1]!["repetition_type"], "REPEATED");
    const ints = names.indexOf("ints");
    assert.equal(schema[ints + 2]!["repetition_type"], "REQUIRED");
    // MAP: repeated group `key_value` with a REQUIRED `key` and an OPTIONAL `value`.
    const m = names.indexOf("m");
    assert.deepEqual(names.slice(m, m + 4), ["m", "key_value", "key", "value"]);
    assert.equal(schema[m]!["converted_type"], "MAP");
    assert.equal(schema[m + 1]!["repetition_type"], "REPEATED");
    assert.equal(schema[m + 2]!["repetition_type"], "REQUIRED");
    assert.equal(schema[m + 3]!["repetition_type"], "OPTIONAL");
    // ROW: a plain group; NOT NULL fields REQUIRED.
    const r = names.indexOf("r");
    assert.deepEqual(names.slice(r, r + 3), ["r", "x", "y"]);
    assert.equal(schema[r + 1]!["repetition_type"], "REQUIRED");
  });
});

test("parquet - compression follows Paimon's file.compression names", async () => {
  const batch = rowsToRecordBatch(ALL_TYPES, ALL_ROWS);
  await withDuck(async (conn, dir) => {
    const cases: Array<[string | undefined, string]> = [
      [undefined, "ZSTD"],
      ["zstd", "ZSTD"],
      ["ZSTD", "ZSTD"],
      ["snappy", "SNAPPY"],
      ["gzip", "GZIP"],
      ["lz4", "LZ4_RAW"],
      ["none", "UNCOMPRESSED"],
      ["uncompressed", "UNCOMPRESSED"],
    ];
    for (const [name, codec] of cases) {
      const path = join(dir, `c-${name ?? "default"}.parquet`);
      writeFileSync(path, writeParquet(batch, name === undefined ? {} : { compression: name }));
      const codecs = await rowsOf(conn, `select distinct compression from parquet_metadata(${sqlPath(path)})`);
      assert.deepEqual(
        codecs.map((c) => c["compression"]),
        [codec],
        `compression ${name}`,
      );
      const back = await rowsOf(conn, `select count(*) as n from read_parquet(${sqlPath(path)})`);
      assert.equal(back[0]!["n"], BigInt(ALL_ROWS.length));
    }
  });
  assert.throws(() => writeParquet(batch, { compression: "lzo" }), (e: unknown) => isLakeError(e, "DataInvalid"));
});

test("parquet - DuckDB reads back the values written", async () => {
  await withDuck(async (conn, dir) => {
    const path = join(dir, "values.parquet");
    writeFileSync(path, writeParquet(rowsToRecordBatch(ALL_TYPES, ALL_ROWS)));
    const res = await conn.runAndReadAll(`select * from read_parquet(${sqlPath(path)})`);
    const got = res.getRowObjectsJson();
    assert.equal(got.length, ALL_ROWS.length);
    for (const [i, row] of ALL_ROWS.entries()) {
      for (const f of ALL_TYPES) {
        if (TEMPORAL.has(f.type.root)) continue;
        assert.deepEqual(got[i]![f.name], duckJson(f.type, row[f.name] ?? null), `row ${i} column ${f.name}`);
      }
    }

    // Temporal and binary columns, as numbers / hex.
    const q = `select date_diff('day', DATE '1970-01-01', dt) as dt, epoch_ms(tm) as tm, epoch_ms(ts0) as ts0,
      epoch_ms(ts3) as ts3, epoch_us(ts6) as ts6, epoch_us(ts9) as ts9, epoch_ms(ltz3) as ltz3, epoch_us(ltz6) as ltz6,
      epoch_us(ltz9) as ltz9, hex(bin) as bin, hex(vbin) as vbin from read_parquet(${sqlPath(path)})`;
    const temporal = await rowsOf(conn, q);
    const big = (v: Value, f: (t: Timestamp) => bigint): bigint | null => (v === null ? null : f(v as Timestamp));
    const hex = (v: Value): string | null => (v === null ? null : Buffer.from(v as Uint8Array).toString("hex").toUpperCase());
    for (const [i, row] of ALL_ROWS.entries()) {
      const expected = {
        dt: row["dt"] === null ? null : BigInt(row["dt"] as number),
        tm: row["tm"] === null ? null : BigInt(row["tm"] as number),
        ts0: big(row["ts0"]!, (t) => BigInt(t.millis)),
        ts3: big(row["ts3"]!, (t) => BigInt(t.millis)),
        ts6: big(row["ts6"]!, (t) => t.toEpochMicros()),
        // DuckDB reads INT96 as a microsecond TIMESTAMP: days plus nanos of the day / 1000, so rounded down.
        ts9: big(row["ts9"]!, (t) => floorDiv(t.toEpochNanos(), 1000n)),
        ltz3: big(row["ltz3"]!, (t) => BigInt(t.millis)),
        ltz6: big(row["ltz6"]!, (t) => t.toEpochMicros()),
        ltz9: big(row["ltz9"]!, (t) => floorDiv(t.toEpochNanos(), 1000n)),
        bin: hex(row["bin"]!),
        vbin: hex(row["vbin"]!),
      };
      assert.deepEqual(temporal[i], expected, `row ${i}`);
    }
    const dates = await rowsOf(conn, `select cast(dt as varchar) as d from read_parquet(${sqlPath(path)})`);
    assert.deepEqual(
      dates.map((d) => d["d"]),
      ALL_ROWS.map((r) => (r["dt"] === null ? null : dateToString(r["dt"] as number))),
    );
  });
});

test("parquet - row groups, row count from the footer, column projection", async () => {
  const fields = [
    { name: "id", type: T.bigint(false) },
    { name: "s", type: T.string() },
    { name: "x", type: T.double() },
  ];
  const rows: Row[] = Array.from({ length: 2500 }, (_, i) => ({ id: BigInt(i), s: `v${i % 17}`, x: i / 4 }));
  const batch = rowsToRecordBatch(fields, rows);
  await withDuck(async (conn, dir) => {
    const one = join(dir, "one.parquet");
    const many = join(dir, "many.parquet");
    writeFileSync(one, writeParquet(batch));
    writeFileSync(many, writeParquet(batch, { maxRowGroupSize: 1000 }));
    const groups = async (p: string): Promise<unknown> =>
      (await rowsOf(conn, `select count(distinct row_group_id) as n from parquet_metadata(${sqlPath(p)})`))[0]!["n"];
    assert.equal(await groups(one), 1n, "one row group by default");
    assert.equal(await groups(many), 3n);
    assert.equal(parquetRowCount(readFileSync(one)), 2500);
    assert.equal(parquetRowCount(readFileSync(many)), 2500);
    assert.deepEqual(parquetFooterInfo(readFileSync(many)), { numRows: 2500, numRowGroups: 3 });
    assert.deepEqual(parquetFooterInfo(readFileSync(one)), { numRows: 2500, numRowGroups: 1 });
  });
  const file = writeParquet(batch);
  for (const projected of [readParquet(file, { columns: ["s", "id", "nope"] }), await readParquetAsync(file, { columns: ["s", "id", "nope"] })]) {
    assert.deepEqual(
      projected.schema.fields.map((f) => f.name),
      ["id", "s"],
    );
    assert.deepEqual(
      recordBatchToRows(fields.slice(0, 2), projected),
      rows.map((r) => ({ id: r["id"]!, s: r["s"]! })),
    );
  }
  assert.deepEqual(recordBatchToRows(fields, await readParquetAsync(file)), rows);
  assert.deepEqual(readParquetSchema(file).fields.map((f) => `${f.name}:${String(f.type)}:${f.nullable}`), ["id:Int64:false", "s:Utf8:true", "x:Float64:true"]);
  assert.equal(parquetRowCount(writeParquet(rowsToRecordBatch(fields, []))), 0);
  assert.throws(() => parquetRowCount(new Uint8Array([1, 2, 3])), (e: unknown) => isLakeError(e, "DataInvalid"));
  assert.throws(() => parquetRowCount(file.subarray(0, file.length - 1)), (e: unknown) => isLakeError(e, "DataInvalid"));
});

test("parquet - writer settings: no dictionary and chunk statistics by default; dictionary, page statistics, v2 on request", async () => {
  const fields = [
    { name: "id", type: T.bigint() },
    { name: "s", type: T.string() },
  ];
  const rows: Row[] = Array.from({ length: 3000 }, (_, i) => ({ id: BigInt(i), s: i % 100 === 0 ? null : `v${i % 10}` }));
  const batch = rowsToRecordBatch(fields, rows);
  await withDuck(async (conn, dir) => {
    const meta = async (name: string, bytes: Uint8Array): Promise<Array<Record<string, unknown>>> => {
      const p = join(dir, name);
      writeFileSync(p, bytes);
      assert.deepEqual(recordBatchToRows(fields, readParquet(bytes)), rows);
      return rowsOf(conn, `select path_in_schema as col, encodings, stats_min_value as lo, stats_max_value as hi, stats_null_count as nulls, dictionary_page_offset as dict from parquet_metadata(${sqlPath(p)}) order by column_id`);
    };
    const plain = await meta("default.parquet", writeParquet(batch));
    assert.deepEqual(plain.map((c) => [c["col"], c["lo"], c["hi"], c["nulls"], c["dict"]]), [
      ["id", "0", "2999", 0n, null],
      ["s", "v0", "v9", 30n, null],
    ]);
    for (const c of plain) assert.doesNotMatch(String(c["encodings"]), /DICTIONARY|DELTA/);
    const dict = await meta("dict.parquet", writeParquet(batch, { dictionary: ["s"] }));
    assert.equal(dict[0]!["dict"], null);
    assert.notEqual(dict[1]!["dict"], null);
    const all = await meta("all.parquet", writeParquet(batch, { dictionary: true, statistics: "page" }));
    assert.ok(all.every((c) => c["dict"] !== null));
    const none = await meta("none.parquet", writeParquet(batch, { statistics: false }));
    assert.deepEqual(none.map((c) => [c["lo"], c["hi"]]), [[null, null], [null, null]]);
    const v2 = await meta("v2.parquet", writeParquet(batch, { writerVersion: "2.0" }));
    assert.match(String(v2[0]!["encodings"]), /DELTA_BINARY_PACKED/);
  });
});

test("parquet - Arrow tables built elsewhere get Paimon's nested names", async () => {
  const list = arrow.vectorFromArray(
    [[1, 2], null, [3]],
    new arrow.List(new arrow.Field("item", new arrow.Int32(), true)),
  );
  const table = new arrow.Table({ l: list });
  assert.equal(table.schema.fields[0]!.type.children[0]!.name, "item");
  await withDuck(async (conn, dir) => {
    const path = join(dir, "foreign.parquet");
    writeFileSync(path, writeParquet(table));
    const names = (await rowsOf(conn, `select name from parquet_schema(${sqlPath(path)})`)).map((r) => r["name"]);
    assert.deepEqual(names, ["arrow_schema", "l", "list", "element"]);
    const back = readParquet(readFileSync(path));
    assert.deepEqual(recordBatchToRows([{ name: "l", type: T.array(T.int()) }], back), [{ l: [1, 2] }, { l: null }, { l: [3] }]);
  });
});

test("parquet - reads files written by DuckDB (another engine's layout and units)", async () => {
  await withDuck(async (conn, dir) => {
    const path = join(dir, "duck.parquet");
    await conn.run(`copy (select * from (values
        (1::BIGINT, 'a'::VARCHAR, 12.5::DECIMAL(10,2), 123456789012345678901234.5678901234::DECIMAL(38,10),
         TIMESTAMP '2024-01-02 03:04:05.123456', TIMESTAMPTZ '2024-01-02 03:04:05.5+00', DATE '2024-02-29',
         TIME '01:02:03.456', ['x', NULL]::VARCHAR[], MAP {'k': 1}, {'p': 1, 'q': 'z'}, '\\x01\\x02'::BLOB, true, 1.5::FLOAT),
        (NULL, NULL, -0.01, -1, NULL, NULL, NULL, NULL, [], MAP {}, NULL, NULL, NULL, NULL)
      ) t(i, s, d, d38, ts, tz, dt, tm, l, m, r, b, bo, f)) to ${sqlPath(path)} (format parquet)`);
    const table = readParquet(readFileSync(path));
    assert.equal(parquetRowCount(readFileSync(path)), 2);
    const fields = fromArrowSchema(table.schema);
    assert.deepEqual(
      fields.map((f) => `${f.name} ${typeToSql(f.type)}`),
      [
        "i BIGINT",
        "s STRING",
        "d DECIMAL(10, 2)",
        "d38 DECIMAL(38, 10)",
        "ts TIMESTAMP(6)",
        "tz TIMESTAMP(6) WITH LOCAL TIME ZONE",
        "dt DATE",
        "tm TIME(6)",
        "l ARRAY<STRING>",
        "m MAP<STRING NOT NULL, INT>",
        "r ROW<p INT, q STRING>",
        "b BYTES",
        "bo BOOLEAN",
        "f FLOAT",
      ],
    );
    const rows = recordBatchToRows(fields, table);
    assert.deepEqual(rows[0], {
      i: 1n,
      s: "a",
      d: 1250n,
      d38: 1234567890123456789012345678901234n,
      ts: ts("2024-01-02T03:04:05.123", 456000),
      tz: ts("2024-01-02T03:04:05.500"),
      dt: 19782,
      tm: 3723456,
      l: ["x", null],
      m: [["k", 1]],
      r: { p: 1, q: "z" },
      b: Uint8Array.from([1, 2]),
      bo: true,
      f: 1.5,
    });
    assert.deepEqual(rows[1], { i: null, s: null, d: -1n, d38: -10000000000n, ts: null, tz: null, dt: null, tm: null, l: [], m: [], r: null, b: null, bo: null, f: null });
  });
});

test("parquet - TIMESTAMP(7..9) nested and top-level are INT96 under every writer setting; pyarrow and DuckDB read the nanos", async () => {
  const fields = parseColumnList("t7 TIMESTAMP(7), l9 TIMESTAMP_LTZ(9), arr ARRAY<TIMESTAMP(9)>, m MAP<STRING, TIMESTAMP_LTZ(8)>, r ROW<x TIMESTAMP(9)>");
  const at = (iso: string, nanoOfMilli: number): Timestamp => ts(iso, nanoOfMilli);
  const rows: Row[] = [
    { t7: at("2024-01-02T03:04:05.678", 123400), l9: at("1969-12-31T23:59:59.999", 999999), arr: [at("1677-09-22T00:00:00.001", 1), null], m: [["k", at("2262-04-11T23:47:16.854", 775807)]], r: { x: at("2000-02-29T12:00:00", 1) } },
    { t7: null, l9: null, arr: null, m: null, r: null },
    { t7: at("1970-01-01T00:00:00", 100), l9: at("1900-01-01T00:00:00", 0), arr: [], m: [], r: { x: null } },
  ];
  const batch = rowsToRecordBatch(fields, rows);
  const paths: string[] = [];
  await withDuck(async (conn, dir) => {
    for (const [k, opts] of [{}, { writerVersion: "2.0" as const }, { dictionary: true }, { statistics: "page" as const }].entries()) {
      const file = writeParquet(batch, opts);
      assert.deepEqual(recordBatchToRows(fields, readParquet(file)), rows, `natslake reads back (${JSON.stringify(opts)})`);
      const p = join(dir, `int96-${k}.parquet`);
      writeFileSync(p, file);
      const meta = await rowsOf(conn, `select path_in_schema as col, type, encodings, stats_min_value as lo from parquet_metadata(${sqlPath(p)}) order by column_id`);
      const int96 = meta.filter((c) => c["col"] !== "m, key_value, key");
      assert.equal(int96.length, 5);
      for (const c of int96) {
        assert.equal(c["type"], "INT96", `${String(c["col"])} (${JSON.stringify(opts)})`);
        assert.doesNotMatch(String(c["encodings"]), /DELTA/);
        assert.equal(c["lo"], null, "no FLBA-ordered statistics");
      }
      paths.push(p);
    }
    // One interpreter for every file (each start costs seconds on a busy machine).
    const py = await runPython("-", paths, {
      input: `import sys, pyarrow.parquet as pq
for p in sys.argv[1:]:
    t = pq.read_table(p)
    print([str(t.schema.field(n).type) for n in ("t7", "l9")])
    print(t.column("t7").cast("int64").to_pylist())
    print([None if v is None else [None if x is None else x.value for x in v] for v in t.column("arr").to_pylist()])`,
    });
    const lines = py.trim().split("\n");
    assert.equal(lines.length, 3 * paths.length);
    for (let k = 0; k < paths.length; k++) {
      const [types, t7, arr] = lines.slice(3 * k, 3 * k + 3);
      assert.match(types!, /'timestamp\[ns\]'/);
      assert.equal(t7, `[${rows.map((r) => (r["t7"] === null ? "None" : (r["t7"] as Timestamp).toEpochNanos())).join(", ")}]`);
      assert.equal(arr, "[[-9223286399998999999, None], None, []]");
    }
  });
});

test("parquet - a FLOAT/DOUBLE chunk holding NaN has no min/max in the footer (null count kept); others keep theirs", async () => {
  const fields = parseColumnList("d DOUBLE, f FLOAT, ok DOUBLE");
  const rows: Row[] = [
    { d: 1, f: NaN, ok: 2 },
    { d: NaN, f: 1.5, ok: null },
    { d: null, f: -1, ok: 3 },
  ];
  await withDuck(async (conn, dir) => {
    for (const [k, opts] of [{}, { statistics: "page" as const }, { maxRowGroupSize: 1 }].entries()) {
      const file = writeParquet(rowsToRecordBatch(fields, rows), opts);
      const p = join(dir, `nan-${k}.parquet`);
      writeFileSync(p, file);
      const meta = await rowsOf(conn, `select row_group_id as g, path_in_schema as col, stats_min_value as lo, stats_max_value as hi, stats_null_count as nulls from parquet_metadata(${sqlPath(p)}) where row_group_id = 0 order by column_id`);
      if (k < 2) {
        assert.deepEqual(meta.map((c) => [c["col"], c["lo"], c["hi"], c["nulls"]]), [
          ["d", null, null, 1n],
          ["f", null, null, 0n],
          ["ok", "2.0", "3.0", 1n],
        ]);
      }
      // DuckDB prunes row groups by those statistics: the NaN row must survive `d > 1e300` (NaN sorts above all).
      const hits = await rowsOf(conn, `select count(*) as n from read_parquet(${sqlPath(p)}) where d > 1e300`);
      assert.equal(hits[0]!["n"], 1n);
      if (k === 1) {
        const pyIndex = await runPython("-", [p], {
          input: `import sys, pyarrow.parquet as pq
rg = pq.ParquetFile(sys.argv[1]).metadata.row_group(0)
print([rg.column(i).has_column_index for i in range(3)])`,
        });
        assert.equal(pyIndex.trim(), "[False, False, True]", "no column index for the NaN columns");
      }
    }
  });
});
