/**
 * Fuzz: a table's JSON metadata files as a reader finds them on disk or in an object store — snapshots
 * (`parseSnapshotFile`), schemas (`schemaFromJson` of `parseJson`), consumer files and tags. Every case: the value or
 * a DataInvalid; valid files round-trip exactly (int64 commit identifiers and watermarks included).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseColumnList } from "../../src/format/data-types.ts";
import { newTableSchema, schemaFromJson, schemaToJson } from "../../src/format/schema.ts";
import { snapshotToJson } from "../../src/format/snapshot.ts";
import { parseJson, stringifyJson } from "../../src/format/wire/json.ts";
import { consumerNextSnapshot } from "../../src/table/consumers.ts";
import { parseSnapshotFile } from "../../src/table/snapshot-manager.ts";
import { tagFromText, tagToJsonText } from "../../src/table/tags.ts";
import { anyJsonText, decodeOutcome, fuzzParams, fuzzTimeout, jsonOddities, mutated, withHostileField } from "../helpers/fuzz.ts";
import { snapshot } from "../helpers/fuzz-values.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
/** Text mutated as bytes (so cuts and flips land inside numbers, keys and UTF-8 sequences), read back as a reader would. */
const hostileText = (valid: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 4, arbitrary: mutated(valid.map((s) => enc.encode(s))).map((b) => dec.decode(b)) },
    { weight: 4, arbitrary: withHostileField(valid.map((s) => parseJson(s) as Record<string, unknown>)).map((o) => stringifyJson(o)) },
    { weight: 1, arbitrary: jsonOddities },
    { weight: 1, arbitrary: anyJsonText },
  );

const snapshotText = snapshot.map((s) => stringifyJson(snapshotToJson(s)));

test("fuzz table metadata - snapshot files: round trip exact; damaged text is a DataInvalid naming the file", { timeout: fuzzTimeout() }, () => {
  fc.assert(
    fc.property(snapshot, (s) => {
      assert.deepEqual(parseSnapshotFile("/t/snapshot/snapshot-1", stringifyJson(snapshotToJson(s))), s);
    }),
    fuzzParams(),
  );
  fc.assert(
    fc.property(hostileText(snapshotText), (text) => {
      const r = decodeOutcome(() => parseSnapshotFile("/t/snapshot/snapshot-7", text), text);
      if (!r.ok) assert.match(r.error.message, /snapshot-7 is damaged/);
      else {
        for (const k of ["id", "schemaId", "timeMillis", "totalRecordCount", "deltaRecordCount"] as const) assert.ok(Number.isSafeInteger(r.value[k]), `${k} = ${r.value[k]}`);
        assert.equal(typeof r.value.commitIdentifier, "bigint");
        assert.ok(["APPEND", "COMPACT", "OVERWRITE", "ANALYZE"].includes(r.value.commitKind), r.value.commitKind);
      }
    }),
    fuzzParams(),
  );
});

test("fuzz table metadata - tag files: a tag or a DataInvalid", { timeout: fuzzTimeout() }, () => {
  const tagText = fc.tuple(snapshot, fc.option(fc.integer({ min: 1000, max: 10 ** 10 }))).map(([s, retained]) => tagToJsonText(s, retained, 1_700_000_000_000));
  fc.assert(
    fc.property(hostileText(tagText), (text) => {
      const r = decodeOutcome(() => tagFromText("t1", text), text);
      if (r.ok) assert.ok(r.value.timeRetainedMs === null || Number.isFinite(r.value.timeRetainedMs), `timeRetainedMs ${r.value.timeRetainedMs}`);
    }),
    fuzzParams(),
  );
});

const COLUMNS = ["id BIGINT NOT NULL, name STRING", "a INT, b DECIMAL(20, 4), c ARRAY<MAP<STRING, ROW<x INT, y TIMESTAMP(6)>>>", "k STRING NOT NULL, v BYTES, dt STRING NOT NULL"];
const schemaText = fc.tuple(fc.constantFrom(...COLUMNS), fc.integer({ min: 0, max: 50 })).map(([cols, id]) => {
  const s = newTableSchema({ columns: parseColumnList(cols), options: { "file.format": "parquet" } }, 1_700_000_000_000);
  return stringifyJson(schemaToJson({ ...s, id }));
});

test("fuzz table metadata - schema files: round trip exact; damaged text is a DataInvalid", { timeout: fuzzTimeout() }, () => {
  fc.assert(
    fc.property(schemaText, (text) => {
      const s = schemaFromJson(parseJson(text));
      assert.equal(stringifyJson(schemaToJson(s)), text);
    }),
    fuzzParams(),
  );
  fc.assert(
    fc.property(hostileText(schemaText), (text) => {
      const r = decodeOutcome(() => schemaFromJson(parseJson(text)), text);
      if (r.ok) {
        assert.ok(Number.isSafeInteger(r.value.id) && Number.isSafeInteger(r.value.highestFieldId), `id ${r.value.id}, highestFieldId ${r.value.highestFieldId}`);
        for (const k of [...r.value.partitionKeys, ...r.value.primaryKeys]) assert.equal(typeof k, "string");
      }
    }),
    fuzzParams(),
  );
});

test("fuzz table metadata - consumer files: a snapshot id or a DataInvalid naming the file", { timeout: fuzzTimeout() }, () => {
  const consumerText = fc.integer({ min: 0, max: 2 ** 40 }).map((n) => stringifyJson({ nextSnapshot: n }));
  fc.assert(
    fc.property(hostileText(consumerText), (text) => {
      const r = decodeOutcome(() => consumerNextSnapshot("/t/consumer/consumer-c1", text), text);
      if (r.ok) assert.ok(Number.isSafeInteger(r.value) && r.value >= 0);
      else assert.match(r.error.message, /consumer-c1/);
    }),
    fuzzParams(),
  );
  assert.equal(consumerNextSnapshot("/c", '{"nextSnapshot":12}'), 12);
});
