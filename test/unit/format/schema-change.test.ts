import { test } from "node:test";
import assert from "node:assert/strict";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { newTableSchema } from "../../../src/format/schema.ts";
import { withAddedColumns } from "../../../src/format/schema-change.ts";

const base = newTableSchema({ columns: parseColumnList("id BIGINT NOT NULL, r ROW<a INT, b STRING>"), options: { bucket: "2", "bucket-key": "id" } });

test("schema change - added columns take the next field ids (after nested ones), go last, and make the next schema id", () => {
  assert.equal(base.highestFieldId, 3);
  const next = withAddedColumns(base, parseColumnList("note STRING, m MAP<STRING, INT>"), 42);
  assert.equal(next.id, 1);
  assert.equal(next.timeMillis, 42);
  assert.deepEqual(next.fields.map((f) => [f.name, f.id]), [["id", 0], ["r", 1], ["note", 4], ["m", 5]]);
  assert.equal(next.highestFieldId, 5);
  assert.deepEqual(next.options, base.options);
  // The base is left as it was (schemas are immutable files).
  assert.equal(base.fields.length, 2);
});

test("schema change - Paimon's refusals: NOT NULL, an existing name, a reserved name, nothing to add", () => {
  assert.throws(() => withAddedColumns(base, parseColumnList("x INT NOT NULL")), /cannot be added as NOT NULL/);
  assert.throws(() => withAddedColumns(base, parseColumnList("id STRING")), /column 'id' already exists/);
  assert.throws(() => withAddedColumns(base, parseColumnList("_SEQUENCE_NUMBER BIGINT")), /reserved by Paimon/);
  assert.throws(() => withAddedColumns(base, []), /nothing to change/);
});
