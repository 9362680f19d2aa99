/**
 * The input rules of primary-key tables (src/lsm/keyed-input.ts), shared by TableWrite, the producer client and the
 * router: the kind a row names, its key, and retractions that carry only their key. A property checks them against a
 * model over random kinds and keys: a row converts exactly when its kind is one of the four (or absent) and its key
 * is present and non-null, and otherwise fails with the reason the model predicts — never with anything else.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { isLakeError } from "../../../src/errors.ts";
import { parseColumnList } from "../../../src/format/data-types.ts";
import { newTableSchema } from "../../../src/format/schema.ts";
import { Timestamp } from "../../../src/format/values.ts";
import { compileKeyedInput, keyedInputRules, rowKindOf } from "../../../src/lsm/keyed-input.ts";
import { RowKind, rowKindOnAppendTable } from "../../../src/lsm/row-kind.ts";

const schema = newTableSchema({
  columns: parseColumnList("dt STRING NOT NULL, id BIGINT NOT NULL, name STRING NOT NULL, score DOUBLE, at TIMESTAMP(3) NOT NULL"),
  partitionKeys: ["dt"],
  primaryKeys: ["dt", "id"],
  options: { bucket: "2" },
});
const convert = compileKeyedInput(schema);

const reasonOf = (f: () => unknown): string | undefined => {
  try {
    f();
    return undefined;
  } catch (e) {
    assert.ok(isLakeError(e, "DataInvalid"), `DataInvalid, got ${String(e)}`);
    return String(e.context["reason"]);
  }
};

test("keyed input - kinds: absent or null is +I; the four names; anything else refused with bad-row-kind", () => {
  const row = { dt: "2026-01-01", id: 1, name: "a", score: 1.5, at: 0 };
  assert.equal(convert(row).kind, RowKind.INSERT);
  assert.equal(convert({ ...row, _row_kind: null }).kind, RowKind.INSERT);
  for (const [name, kind] of [["+I", RowKind.INSERT], ["-U", RowKind.UPDATE_BEFORE], ["+U", RowKind.UPDATE_AFTER], ["-D", RowKind.DELETE]] as const) {
    const out = convert({ ...row, _row_kind: name });
    assert.equal(out.kind, kind);
    assert.equal("_row_kind" in out.row, false, "the kind is taken off the row");
  }
  for (const bad of ["+X", "D", "", 0, 3n, true, ["+I"], { k: 1 }]) {
    assert.throws(() => convert({ ...row, _row_kind: bad }), (e: unknown) => isLakeError(e, "DataInvalid") && e.context["reason"] === "bad-row-kind" && /is not one of \+I, -U, \+U, -D/.test(e.message));
  }
  assert.throws(() => rowKindOf({ _row_kind: 3n }), /row kind 3 \(a bigint\) is not one of/);
});

test("keyed input - a retraction may carry only its key; its NOT NULL columns get their zero, nullable ones null", () => {
  assert.deepEqual(convert({ dt: "2026-01-01", id: 5, _row_kind: "-D" }), { kind: RowKind.DELETE, row: { dt: "2026-01-01", id: 5n, name: "", score: null, at: new Timestamp(0, 0) } });
  assert.deepEqual(convert({ dt: "2026-01-01", id: 5, _row_kind: "-U" }).row["name"], "");
  // An addition needs its whole row.
  assert.throws(() => convert({ dt: "2026-01-01", id: 5, _row_kind: "+U" }), /column name is NOT NULL but the value is missing/);
  // Keys, partition keys among them, are required of every kind.
  assert.throws(() => convert({ id: 5, _row_kind: "-D" }), (e: unknown) => isLakeError(e) && e.context["reason"] === "missing-key" && /a delete without its key: primary-key column 'dt' is missing/.test(e.message));
  assert.throws(() => convert({ dt: "x", id: null, _row_kind: "-D" }), (e: unknown) => isLakeError(e) && e.context["reason"] === "null-key" && /primary-key column 'id' is null/.test(e.message));
});

test("keyed input - the rules the producer and the router share: retraction fields, fillers, the append-table refusal", () => {
  const rules = keyedInputRules(schema);
  assert.deepEqual(rules.retractionFields.map((f) => [f.name, f.type.nullable]), [["dt", false], ["id", false], ["name", true], ["score", true], ["at", true]]);
  assert.deepEqual(rules.fillers.map((f) => f.name), ["name", "at"]);
  const e = rowKindOnAppendTable("db.events");
  assert.equal(e.context["reason"], "row-kind-on-append-table");
  assert.match(e.message, /_row_kind is for primary-key tables: db\.events has no primary key/);
});

test("keyed input - property: random kinds and keys convert or fail with the reason a model predicts", () => {
  const kindValue = fc.oneof(fc.constantFrom("+I", "-U", "+U", "-D"), fc.constant(undefined), fc.constant(null), fc.anything());
  const keyValue = fc.oneof(fc.constant(undefined), fc.constant(null), fc.integer({ min: -1000, max: 1000 }));
  const partValue = fc.oneof(fc.constant(undefined), fc.constant(null), fc.constantFrom("2026-01-01", "x"));
  const seen = new Map<string, number>();
  fc.assert(
    fc.property(kindValue, partValue, keyValue, fc.boolean(), (kind, dt, id, whole) => {
      const input: Record<string, unknown> = whole ? { name: "n", score: 2, at: 5 } : {};
      if (kind !== undefined) input["_row_kind"] = kind;
      if (dt !== undefined) input["dt"] = dt;
      if (id !== undefined) input["id"] = id;
      // The model: the kind first, then each key column in key order, then the values an addition needs.
      const names = ["+I", "-U", "+U", "-D"];
      const kindOk = kind === undefined || kind === null || (typeof kind === "string" && names.includes(kind));
      const k = kindOk ? (kind === undefined || kind === null ? 0 : names.indexOf(kind as string)) : -1;
      let expected: string | undefined;
      if (!kindOk) expected = "bad-row-kind";
      else if (dt === undefined) expected = "missing-key";
      else if (dt === null) expected = "null-key";
      else if (id === undefined) expected = "missing-key";
      else if (id === null) expected = "null-key";
      else if (!whole && (k === 0 || k === 2)) expected = "column"; // an addition without its NOT NULL values
      const got = reasonOf(() => convert(input));
      const label = got === "undefined" ? "column" : got;
      if (label !== expected) assert.fail(`${label} ≠ ${expected} for ${fc.stringify({ kind, dt, id, whole })}`);
      seen.set(String(label), (seen.get(String(label)) ?? 0) + 1);
      if (expected === undefined) assert.equal(convert(input).kind, k);
    }),
    { numRuns: 2000 },
  );
  for (const outcome of ["undefined", "bad-row-kind", "missing-key", "null-key", "column"]) assert.ok((seen.get(outcome) ?? 0) > 0, `the generator reached ${outcome}`);
});

test("keyed input - rowkind.field: the kind comes from the column (stored as given), agreeing with _row_kind or the write's own kind; a null or bad one, or two that disagree, refused with bad-row-kind", () => {
  const opSchema = newTableSchema({ columns: parseColumnList("id BIGINT NOT NULL, op STRING, v INT"), partitionKeys: [], primaryKeys: ["id"], options: { bucket: "1", "rowkind.field": "op" } });
  const conv = compileKeyedInput(opSchema);
  const rules = keyedInputRules(opSchema);
  for (const [name, kind] of [["+I", RowKind.INSERT], ["-U", RowKind.UPDATE_BEFORE], ["+U", RowKind.UPDATE_AFTER], ["-D", RowKind.DELETE]] as const) {
    const out = conv({ id: 1, op: name, v: 7 });
    assert.equal(out.kind, kind);
    assert.equal(out.row["op"], name, "the column keeps its value");
    assert.equal(conv({ id: 1, op: name, _row_kind: name }).kind, kind, "_row_kind that agrees");
    assert.equal(rules.kindOf({ id: 1, op: name }, kind), kind, "a write of the same kind");
  }
  const refused = (f: () => unknown, message: RegExp): void => assert.throws(f, (e: unknown) => isLakeError(e, "DataInvalid") && e.context["reason"] === "bad-row-kind" && message.test(e.message));
  refused(() => conv({ id: 1, v: 7 }), /Row kind cannot be null: the rowkind.field column 'op' is missing/);
  refused(() => conv({ id: 1, op: null }), /Row kind cannot be null: the rowkind.field column 'op' is null/);
  refused(() => conv({ id: 1, op: "D" }), /row kind "D" in the rowkind.field column 'op' is not one of/);
  refused(() => conv({ id: 1, op: "-D", _row_kind: "+I" }), /named twice, differently: the rowkind.field column 'op' says -D, _row_kind says \+I/);
  refused(() => rules.kindOf({ id: 1, op: "-D" }, RowKind.INSERT), /the rowkind.field column 'op' says -D, the write is \+I \(an upsert\)/);
  // A write that names its kind (a delete by key) needs no kind column; neither does a row that names _row_kind.
  assert.equal(conv({ id: 1 }, RowKind.DELETE).kind, RowKind.DELETE);
  assert.equal(conv({ id: 1, _row_kind: "-D" }).kind, RowKind.DELETE);
  // Without rowkind.field a write's kind and _row_kind must agree too.
  refused(() => keyedInputRules(schema).kindOf({ dt: "d", id: 1, _row_kind: "+I" }, RowKind.DELETE), /_row_kind says \+I, the write is -D \(a delete\)/);
});

test("keyed input - a product retracted by an integer or decimal zero is refused as it comes in (Java fails every merge of the key); floating point, ignore-retract, remove-record-on-delete and other values pass", () => {
  const make = (options: Record<string, string>, columns = "id BIGINT NOT NULL, p BIGINT, d DECIMAL(10,2), f DOUBLE, q INT NOT NULL") =>
    compileKeyedInput(newTableSchema({ columns: parseColumnList(columns), partitionKeys: [], primaryKeys: ["id"], options: { bucket: "1", "merge-engine": "aggregation", "fields.default-aggregate-function": "product", ...options } }));
  const conv = make({});
  const refusal = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      assert.ok(isLakeError(e, "DataInvalid") && e.context["reason"] === "retraction-refused", String(e));
      return e.message;
    }
    return "accepted";
  };
  assert.match(refusal(() => conv({ id: 1, p: 0, d: "1.00", f: 0, q: 2, _row_kind: "-U" })), /^-U refused: a retraction of p by zero: product divides by it/);
  assert.match(refusal(() => conv({ id: 1, p: 2, d: "0.00", f: 0, q: 2, _row_kind: "-D" })), /a retraction of d by zero/);
  // A NOT NULL column a delete by key leaves out carries its zero: refused, saying so.
  assert.match(refusal(() => conv({ id: 1, p: 2, d: "1.00", _row_kind: "-D" })), /a retraction of q by zero.*leaves the NOT NULL column q out carries its zero/);
  // Additions by zero, nulls and floating-point zeros (Java divides to infinity) pass.
  assert.equal(refusal(() => conv({ id: 1, p: 0, d: "0.00", f: 0, q: 0 })), "accepted");
  assert.equal(refusal(() => conv({ id: 1, p: null, d: null, f: 0, q: 3, _row_kind: "-U" })), "accepted");
  assert.equal(refusal(() => make({ "fields.p.ignore-retract": "true", "fields.q.ignore-retract": "true", "fields.d.ignore-retract": "true" })({ id: 1, p: 0, d: "0.00", q: 0, _row_kind: "-U" })), "accepted");
  assert.equal(refusal(() => make({ "aggregation.remove-record-on-delete": "true" })({ id: 1, _row_kind: "-D" })), "accepted", "a -D that removes the row retracts nothing");
  assert.match(refusal(() => make({ "aggregation.remove-record-on-delete": "true" })({ id: 1, p: 0, q: 1, _row_kind: "-U" })), /a retraction of p by zero/);
  assert.equal(refusal(() => make({ "ignore-delete": "true" })({ id: 1, p: 0, q: 0, _row_kind: "-U" })), "accepted", "ignore-delete drops retractions");
  // Another function on the field: no division.
  assert.equal(refusal(() => make({ "fields.default-aggregate-function": "sum" })({ id: 1, p: 0, d: "0.00", q: 0, _row_kind: "-U" })), "accepted");
  // partial-update: a product inside a sequence group.
  const pu = compileKeyedInput(
    newTableSchema({ columns: parseColumnList("id BIGINT NOT NULL, g BIGINT, p INT, v STRING"), partitionKeys: [], primaryKeys: ["id"], options: { bucket: "1", "merge-engine": "partial-update", "fields.g.sequence-group": "p", "fields.p.aggregate-function": "product" } }),
  );
  assert.match(refusal(() => pu({ id: 1, g: 5, p: 0, _row_kind: "-U" })), /a retraction of p by zero/);
  assert.equal(refusal(() => pu({ id: 1, g: 5, p: 3, _row_kind: "-U" })), "accepted");
});
