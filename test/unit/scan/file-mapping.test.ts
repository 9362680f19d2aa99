/**
 * Which columns a read decodes of a data file (src/scan/file-mapping.ts `schemaMapping`): a primary-key table's files
 * hold system columns besides the schema's, so a read of the schema's columns must ask for them by name (a
 * projection) instead of decoding the whole file; an append table's file of the same schema decodes whole.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { newTableSchema } from "../../../src/format/schema.ts";
import { SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "../../../src/lsm/key-value-fields.ts";
import { schemaMapping } from "../../../src/scan/file-mapping.ts";

const schema = newTableSchema({ columns: parseColumnList("id BIGINT, name STRING, amount DOUBLE"), primaryKeys: ["id"] });

test("a primary-key file read for the schema's columns decodes those only, not its system columns", () => {
  const m = schemaMapping(schema, schema.fields, true);
  assert.equal(m.projected, true);
  assert.deepEqual(m.columns, ["id", "name", "amount"]);
});

test("a merge's read names the sequence number and value kind it needs", () => {
  const m = schemaMapping(schema, [...schema.fields, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD], true);
  assert.equal(m.projected, true);
  assert.deepEqual(m.columns, ["id", "name", "amount", "_SEQUENCE_NUMBER", "_VALUE_KIND"]);
});

test("an append table's file read for every column of its schema decodes whole; fewer columns are projected", () => {
  assert.equal(schemaMapping(schema, schema.fields).projected, false);
  const some = schemaMapping(schema, [schema.fields[2]!, schema.fields[0]!]);
  assert.equal(some.projected, true);
  assert.deepEqual(some.columns, ["amount", "id"]);
});
