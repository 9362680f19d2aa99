/**
 * The deduplicate merge of a primary-key bucket (src/lsm/merge-read.ts), on rows: per key the version with the
 * highest sequence number, retractions drop the key (or are passed over with ignore-delete), key order in Paimon's
 * order (strings by code point, composite keys column by column), ties in file order. Checked against a direct model
 * over random histories (fast-check).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { mergeBucket, mergeReadFields, type BucketVersions } from "../../../src/lsm/merge-read.ts";
import { SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "../../../src/lsm/key-value-fields.ts";
import { parseColumnList, type DataField } from "../../../src/format/data-types.ts";
import type { Row } from "../../../src/format/values.ts";

const fields = (text: string): DataField[] => parseColumnList(text).map((c, i) => ({ id: i, name: c.name, type: c.type }));
const SEQ = SEQUENCE_NUMBER_FIELD.name;
const KIND = VALUE_KIND_FIELD.name;
/** `mergeBucket` over rows that carry the key fields and the system fields: the surviving rows, in key order. */
function mergeBucketRows(rows: readonly Row[], keyFields: readonly DataField[], opts: { ignoreDelete: boolean }): Row[] {
  const versions: BucketVersions = {
    n: rows.length,
    key: (i, k) => rows[i]![keyFields[k]!.name] ?? null,
    sequence: (i) => BigInt(rows[i]![SEQ] as number | bigint),
    kind: (i) => Number(rows[i]![KIND]),
  };
  return mergeBucket(versions, keyFields, opts).map((i) => rows[i]!);
}

const v = (key: Row, seq: number, kind: number, rest: Row = {}): Row => ({ ...key, ...rest, [SEQ]: BigInt(seq), [KIND]: kind });

test("merge - the latest version per key; -U and -D drop the key, a later +I brings it back; key order", () => {
  const [id] = fields("id BIGINT NOT NULL");
  const rows = [v({ id: 5n }, 0, 0, { s: "a" }), v({ id: 1n }, 1, 0, { s: "b" }), v({ id: 5n }, 2, 2, { s: "a2" }), v({ id: 3n }, 3, 0, { s: "c" }), v({ id: 3n }, 4, 3), v({ id: 2n }, 5, 0, { s: "d" }), v({ id: 2n }, 6, 1), v({ id: 1n }, 7, 3), v({ id: 1n }, 8, 0, { s: "b3" })];
  const out = mergeBucketRows(rows, [id!], { ignoreDelete: false });
  assert.deepEqual(out.map((r) => [r["id"], r["s"]]), [[1n, "b3"], [5n, "a2"]]);
  const kept = mergeBucketRows(rows, [id!], { ignoreDelete: true });
  assert.deepEqual(kept.map((r) => [r["id"], r["s"]]), [[1n, "b3"], [2n, "d"], [3n, "c"], [5n, "a2"]], "retractions passed over");
});

test("merge - Paimon's key order: strings by code point (a surrogate pair after U+FFFD), composite keys column by column; equal sequence numbers: the later file wins", () => {
  const [s] = fields("s STRING NOT NULL");
  const out = mergeBucketRows([v({ s: "😀" }, 0, 0), v({ s: "\uFFFD" }, 1, 0), v({ s: "b" }, 2, 0), v({ s: "ab" }, 3, 0), v({ s: "a" }, 4, 0)], [s!], { ignoreDelete: false });
  assert.deepEqual(out.map((r) => r["s"]), ["a", "ab", "b", "\uFFFD", "😀"]);
  const [dt, id] = fields("dt STRING NOT NULL, id INT NOT NULL");
  const comp = mergeBucketRows([v({ dt: "b", id: 1 }, 0, 0), v({ dt: "a", id: 2 }, 1, 0), v({ dt: "a", id: 10 }, 2, 0), v({ dt: "b", id: 0 }, 3, 0)], [dt!, id!], { ignoreDelete: false });
  assert.deepEqual(comp.map((r) => `${String(r["dt"])}${String(r["id"])}`), ["a2", "a10", "b0", "b1"]);
  const tie = mergeBucketRows([v({ id: 1 }, 7, 0, { w: "first file" }), v({ id: 1 }, 7, 0, { w: "second file" })], [id!], { ignoreDelete: false });
  assert.deepEqual(tie.map((r) => r["w"]), ["second file"]);
});

test("merge - random histories: the model's answer (last version by sequence, retractions drop), whatever the file order", () => {
  const [id] = fields("id INT NOT NULL");
  const op = fc.record({ key: fc.integer({ min: 0, max: 12 }), kind: fc.constantFrom(0, 1, 2, 3), tag: fc.integer() });
  fc.assert(
    fc.property(fc.array(op, { maxLength: 80 }), fc.boolean(), fc.integer({ min: 1, max: 5 }), (ops, ignoreDelete, files) => {
      // Versions numbered in write order, then spread over `files` files that are read in file order.
      const versions = ops.map((o, seq) => v({ id: o.key }, seq, o.kind, { tag: o.tag }));
      const inFiles = Array.from({ length: files }, (_, f) => versions.filter((_, k) => k % files === f)).flat();
      const out = mergeBucketRows(inFiles, [id!], { ignoreDelete });
      const model = new Map<number, Row | null>();
      for (const x of versions) {
        const retracts = x[KIND] === 1 || x[KIND] === 3;
        if (retracts && ignoreDelete) continue;
        model.set(x["id"] as number, retracts ? null : x);
      }
      const expected = [...model.entries()].filter(([, r]) => r !== null).sort(([a], [b]) => a - b).map(([, r]) => r);
      assert.deepEqual(out, expected);
    }),
    { numRuns: 300 },
  );
});

test("merge - the fields a merge reads: the wanted ones, the missing key fields, then the two system fields", () => {
  const table = { schema: { primaryKeys: ["dt", "id"], fields: fields("dt STRING NOT NULL, id BIGINT NOT NULL, name STRING") } } as unknown as Parameters<typeof mergeReadFields>[0];
  const [, id, name] = table.schema.fields;
  assert.deepEqual(mergeReadFields(table, [name!, id!]).map((f) => f.name), ["name", "id", "dt", SEQ, KIND]);
});
