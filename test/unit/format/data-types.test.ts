import { test } from "node:test";
import assert from "node:assert/strict";
import { parseColumnList, parseSqlType, typeFromJson, typeToJson, typeToSql, assignFieldIds } from "../../../src/format/data-types.ts";
import { newTableSchema, schemaFromJson, schemaToJson } from "../../../src/format/schema.ts";
import { isLakeError } from "../../../src/errors.ts";

test("data-types - canonical SQL text round-trips for every atomic type", () => {
  const texts = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT NOT NULL", "FLOAT", "DOUBLE", "DECIMAL(10, 2)", "DECIMAL(38, 18) NOT NULL",
    "CHAR(5)", "VARCHAR(10)", "STRING", "BINARY(16)", "VARBINARY(3)", "BYTES", "DATE", "TIME(3)", "TIMESTAMP(3)", "TIMESTAMP(6)",
    "TIMESTAMP(9) NOT NULL", "TIMESTAMP(3) WITH LOCAL TIME ZONE",
  ];
  for (const t of texts) assert.equal(typeToSql(parseSqlType(t)), t);
});

test("data-types - aliases and spellings Java and pypaimon accept", () => {
  assert.equal(typeToSql(parseSqlType("integer")), "INT");
  assert.equal(typeToSql(parseSqlType("TIMESTAMP_LTZ(3)")), "TIMESTAMP(3) WITH LOCAL TIME ZONE");
  assert.equal(typeToSql(parseSqlType("VARCHAR(2147483647)")), "STRING");
  assert.equal(typeToSql(parseSqlType("DOUBLE PRECISION")), "DOUBLE");
  assert.equal(typeToSql(parseSqlType("NUMERIC")), "DECIMAL(10, 0)");
  assert.equal(typeToSql(parseSqlType("TIMESTAMP")), "TIMESTAMP(6)");
  assert.equal(typeToSql(parseSqlType("TIMESTAMP(3) WITHOUT TIME ZONE")), "TIMESTAMP(3)");
});

test("data-types - composite types serialise to Java's JSON objects", () => {
  const t = parseSqlType("MAP<STRING NOT NULL, ARRAY<ROW<x DOUBLE, `y z` STRING NOT NULL>>> NOT NULL");
  const json = typeToJson(t);
  assert.deepEqual(json, {
    type: "MAP NOT NULL",
    key: "STRING NOT NULL",
    value: { type: "ARRAY", element: { type: "ROW", fields: [{ id: -1, name: "x", type: "DOUBLE" }, { id: -1, name: "y z", type: "STRING NOT NULL" }] } },
  });
  assert.deepEqual(typeFromJson(json), t);
});

test("data-types - pypaimon's MAP text and explicit nullable are read as pypaimon meant", () => {
  const t = typeFromJson({ type: "MAP<STRING NOT NULL, INT>", key: "STRING NOT NULL", value: "INT", nullable: true });
  assert.equal(t.nullable, true);
  assert.equal(t.root, "MAP");
});

test("data-types - bad type text fails with the reason", () => {
  for (const [text, re] of [
    ["DECIMAL(40, 2)", /precision must be between 1 and 38/],
    ["DECIMAL(5, 6)", /scale/],
    ["FOO", /unknown type 'FOO'/],
    ["ARRAY<INT", /expected '>'/],
    ["INT NOT", /unexpected 'NOT'/],
  ] as const) {
    assert.throws(() => parseSqlType(text), (e: unknown) => isLakeError(e, "DataInvalid") && re.test((e as Error).message), text);
  }
});

test("data-types - column lists with nested types and comments", () => {
  const cols = parseColumnList("id BIGINT NOT NULL, tags ARRAY<STRING> COMMENT 'the tags', pt ROW<a INT, b MAP<STRING, INT>>");
  assert.deepEqual(cols.map((c) => c.name), ["id", "tags", "pt"]);
  assert.equal(cols[1]!.description, "the tags");
  assert.throws(() => parseColumnList("id BIGINT id2 INT"), /expected ','/);
});

test("data-types - field ids: top-level first, nested from the same counter", () => {
  const { fields, highestFieldId } = assignFieldIds(parseColumnList("a INT, pt ROW<x DOUBLE, y ROW<z INT>>, b INT").map((c) => ({ id: -1, ...c })));
  assert.deepEqual(fields.map((f) => f.id), [0, 1, 5]);
  const pt = fields[1]!.type;
  assert.ok(pt.root === "ROW");
  assert.deepEqual(pt.fields.map((f) => f.id), [2, 3]);
  assert.equal(highestFieldId, 5);
});

test("schema - schema-0 JSON as Java writes it, primary keys forced NOT NULL", () => {
  const s = newTableSchema({ columns: parseColumnList("id BIGINT, dt STRING, v DOUBLE"), partitionKeys: ["dt"], primaryKeys: ["dt", "id"], options: { bucket: "4" } }, 1720496663041);
  const json = schemaToJson(s);
  assert.deepEqual(json, {
    version: 3,
    id: 0,
    fields: [
      { id: 0, name: "id", type: "BIGINT NOT NULL" },
      { id: 1, name: "dt", type: "STRING NOT NULL" },
      { id: 2, name: "v", type: "DOUBLE" },
    ],
    highestFieldId: 2,
    partitionKeys: ["dt"],
    primaryKeys: ["dt", "id"],
    options: { bucket: "4", "file.format": "parquet" },
    timeMillis: 1720496663041,
  });
  assert.deepEqual(schemaFromJson(JSON.parse(JSON.stringify(json))), s);
});

test("schema - invalid option combinations fail with a clear message", () => {
  const cols = parseColumnList("id BIGINT, k STRING, dt STRING");
  const cases: Array<[Record<string, string>, RegExp, string[]?]> = [
    [{ bucket: "4" }, /needs a 'bucket-key'/],
    [{ bucket: "4", "bucket-key": "id, k" }, /must not contain spaces/],
    [{ bucket: "-1", "bucket-key": "id" }, /cannot be combined with 'bucket' = -1/],
    [{ bucket: "0" }, /must be -2, -1 or a positive number/],
    [{ bucket: "2", "bucket-key": "nope" }, /bucket key 'nope' is not a column/],
    [{ bucket: "2", "bucket-key": "dt" }, /must not be a partition key/, ["dt"]],
    [{ buckets: "2" }, /unknown table option 'buckets' \(did you mean 'bucket'\?\)/],
    [{ "file.compresion": "zstd" }, /did you mean 'file.compression'/],
    [{ "file.compression": "zip" }, /expected one of/],
    [{ "natslake.commit-interval": "soon" }, /not a duration/],
  ];
  for (const [options, re, pk] of cases) {
    assert.throws(() => newTableSchema({ columns: cols, options, partitionKeys: pk ?? [] }), re, JSON.stringify(options));
  }
  assert.throws(() => newTableSchema({ columns: parseColumnList("_VALUE_KIND INT") }), /reserved/);
  assert.throws(() => newTableSchema({ columns: parseColumnList("a INT, a INT") }), /defined twice/);
});
