/**
 * The merge engines' functions (src/lsm/merge-functions/) on hand-computed cases — Paimon's documented examples and
 * the rules of its 1.4.2 sources — and the engine options: what is refused at create (Java's words where Java has
 * the rule, by name where natslake does not merge it) and which retractions a table refuses as they come in.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseColumnList, type DataField } from "../../../src/format/data-types.ts";
import { newTableSchema } from "../../../src/format/schema.ts";
import type { Value } from "../../../src/format/values.ts";
import { ErrorKind, isLakeError } from "../../../src/errors.ts";
import { RowKind } from "../../../src/lsm/row-kind.ts";
import { isBuilt, type MergeResult, type VersionAccess } from "../../../src/lsm/merge-functions/merge-function.ts";
import { mergeEngineOf, retractionRefusal, validateMergeEngine } from "../../../src/lsm/merge-functions/merge-engine.ts";
import { keyedInputRules } from "../../../src/lsm/keyed-input.ts";

/** A version as a test writes it: kind, sequence number, values (one per field). */
interface V {
  kind: RowKind;
  seq: number;
  values: Value[];
}
const ACCESS: VersionAccess<V> = { kind: (v) => v.kind, sequence: (v) => BigInt(v.seq), value: (v, k) => v.values[k] ?? null };

const COLUMNS = "k INT NOT NULL, price DOUBLE, number INT, name STRING";
const fieldsOf = (text: string): DataField[] => parseColumnList(text).map((c, i) => ({ id: i, name: c.name, type: c.type }));

function schemaWith(options: Record<string, string>, columns = COLUMNS) {
  return newTableSchema({ columns: parseColumnList(columns), primaryKeys: ["k"], partitionKeys: [], options: { bucket: "1", ...options } });
}

/** The engine's merge of `versions` (in merge order). */
function mergeAll(options: Record<string, string>, versions: V[], columns = COLUMNS): MergeResult<V> {
  const fn = mergeEngineOf(schemaWith(options, columns)).create(ACCESS, fieldsOf(columns));
  fn.reset();
  for (const v of versions) fn.add(v);
  return fn.result();
}

/** A built result as [kind, sequence, values]. */
function built(r: MergeResult<V>): [RowKind, number, Value[]] {
  assert.ok(r !== null && isBuilt(r), "a built row");
  return [r.kind, Number(r.sequence), r.values];
}

const I = (seq: number, ...values: Value[]): V => ({ kind: RowKind.INSERT, seq, values });
const D = (seq: number, ...values: Value[]): V => ({ kind: RowKind.DELETE, seq, values });
const UB = (seq: number, ...values: Value[]): V => ({ kind: RowKind.UPDATE_BEFORE, seq, values });
const PU = { "merge-engine": "partial-update" };

test("deduplicate - the last version in merge order as it is; ignore-delete passes retractions over", () => {
  const a = I(1, 1, 1.0, null, "a");
  const b = D(2, 1, null, null, null);
  assert.equal(mergeAll({}, [a, b]), b, "a surviving retraction is returned (the caller drops or writes it)");
  assert.equal(mergeAll({ "ignore-delete": "true" }, [a, b]), a);
  assert.equal(mergeAll({ "deduplicate.ignore-delete": "true" }, [b]), null, "Java's fallback key; only retractions: nothing");
});

test("partial-update - Paimon's example: non-null fields overwrite, nulls never do; +I with the last sequence number", () => {
  // docs/primary-key-table/merge-engine/partial-update: <1, 23.0, 10, NULL>, <1, NULL, NULL, 'This is a book'>,
  // <1, 25.2, NULL, NULL> → <1, 25.2, 10, 'This is a book'>.
  const r = mergeAll(PU, [I(4, 1, 23.0, 10, null), I(7, 1, null, null, "This is a book"), I(9, 1, 25.2, null, null)]);
  assert.deepEqual(built(r), [RowKind.INSERT, 9, [1, 25.2, 10, "This is a book"]]);
  // +U is an addition like +I; the result is +I all the same.
  assert.deepEqual(built(mergeAll(PU, [I(1, 1, null, 3, "x"), { kind: RowKind.UPDATE_AFTER, seq: 2, values: [1, 2.5, null, null] }])), [RowKind.INSERT, 2, [1, 2.5, 3, "x"]]);
});

test("partial-update - a null into a NOT NULL field is refused", () => {
  const cols = "k INT NOT NULL, a INT NOT NULL, b STRING";
  assert.throws(() => mergeAll(PU, [I(1, 1, 5, "x"), I(2, 1, null, "y")], cols), (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /Field a can not be null/.test((e as Error).message));
});

test("partial-update - retractions: refused by default; ignore-delete passes them over; remove-record-on-delete: -D removes the row, -U is passed over", () => {
  const up = I(1, 1, 1.5, 7, "a");
  assert.throws(
    () => mergeAll(PU, [up, D(2, 1, null, null, null)]),
    (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /Partial update can not accept delete records/.test((e as Error).message) && /ignore-delete/.test((e as Error).message),
  );
  assert.throws(() => mergeAll(PU, [UB(2, 1, 1.5, 7, "a"), up]), /Partial update can not accept delete records/);
  // ignore-delete: the retraction is passed over (its sequence number is not the result's).
  assert.deepEqual(built(mergeAll({ ...PU, "ignore-delete": "true" }, [up, D(2, 1, null, null, null), I(3, 1, null, 8, null)])), [RowKind.INSERT, 3, [1, 1.5, 8, "a"]]);
  assert.deepEqual(built(mergeAll({ ...PU, "partial-update.ignore-delete": "true" }, [up, D(5, 1, null, null, null)])), [RowKind.INSERT, 1, [1, 1.5, 7, "a"]], "Java's fallback key");
  const rrd = { ...PU, "partial-update.remove-record-on-delete": "true" };
  assert.deepEqual(built(mergeAll(rrd, [up, D(2, 1, null, null, null)])), [RowKind.DELETE, 2, [1, null, null, null]], "-D: the row is the delete's");
  assert.deepEqual(built(mergeAll(rrd, [up, UB(2, 1, 0, 0, "old")])), [RowKind.INSERT, 2, [1, 1.5, 7, "a"]], "-U passed over (its sequence number taken)");
  // Java keeps the deleted row's values where a later version has nulls (its row is the -D's, then updated).
  assert.deepEqual(built(mergeAll(rrd, [up, D(2, 1, 9.5, null, "gone"), I(3, 1, null, 4, null)])), [RowKind.INSERT, 3, [1, 9.5, 4, "gone"]]);
  // Only retractions seen: a -D, whatever they were.
  assert.deepEqual(built(mergeAll(rrd, [UB(2, 1, null, null, null), UB(3, 1, null, null, null)])), [RowKind.DELETE, 3, [1, null, null, null]]);
  assert.deepEqual(built(mergeAll({ ...PU, "ignore-delete": "true" }, [D(2, 1, null, null, null), D(3, 1, null, null, null)])), [RowKind.DELETE, 0, [1, null, null, null]], "ignore-delete, only retractions: Java's -D at sequence 0");
});

test("engine options - Java's rules at create, in Java's words; what natslake does not merge refused by name", () => {
  const refused = (options: Record<string, string>, kind: ErrorKind, why: RegExp): void => {
    assert.throws(() => validateMergeEngine(schemaWith(options)), (e: unknown) => isLakeError(e, kind) && why.test((e as Error).message), JSON.stringify(options));
  };
  refused({ ...PU, "ignore-delete": "true", "partial-update.remove-record-on-delete": "true" }, ErrorKind.DataInvalid, /^ignore-delete and partial-update.remove-record-on-delete have conflicting behavior so should not be enabled at the same time\.$/);
  refused({ ...PU, "fields.number.aggregate-function": "sum" }, ErrorKind.DataInvalid, /^Must use sequence group for aggregation functions but not found for field number\.$/);
  refused({ ...PU, "fields.default-aggregate-function": "max" }, ErrorKind.DataInvalid, /not found for field price/);
  refused({ ...PU, "fields.number.sequence-group": "price", "fields.name.sequence-group": "price" }, ErrorKind.DataInvalid, /^Field price is defined repeatedly by multiple groups: fields\.(number|name)\.sequence-group$/);
  refused({ ...PU, "fields.number.sequence-group": "nope" }, ErrorKind.DataInvalid, /^Field nope can not be found in table schema\.$/);
  refused({ ...PU, "fields.number.sequence-group": "price", "partial-update.remove-record-on-delete": "true" }, ErrorKind.DataInvalid, /^sequence-group and partial-update.remove-record-on-delete have conflicting behavior/);
  refused({ ...PU, "fields.number.sequence-group": "price", "partial-update.remove-record-on-sequence-group": "price" }, ErrorKind.DataInvalid, /field 'price' defined in 'partial-update.remove-record-on-sequence-group' option must be part of sequence groups/);
  refused({ ...PU, "fields.number.sequence-group": "price", "partial-update.remove-record-on-sequence-group": "number", "ignore-delete": "true" }, ErrorKind.DataInvalid, /^ignore-delete and partial-update.remove-record-on-sequence-group have conflicting behavior/);
  validateMergeEngine(schemaWith({ ...PU, "fields.number.sequence-group": "price", "fields.price.aggregate-function": "sum" }));
  // Accepted: last_non_null_value needs no sequence group (it is what partial-update does anyway).
  validateMergeEngine(schemaWith({ ...PU, "fields.default-aggregate-function": "last_non_null_value" }));
  validateMergeEngine(schemaWith({ ...PU, "partial-update.remove-record-on-delete": "true" }));
});

test("retractions a table refuses as they come in: partial-update's, unless ignore-delete or remove-record-on-delete; the input rules say why (retraction-refused)", () => {
  const refuses = (options: Record<string, string>, kind: RowKind): boolean => retractionRefusal(schemaWith(options))(kind) !== null;
  for (const kind of [RowKind.DELETE, RowKind.UPDATE_BEFORE]) {
    assert.equal(refuses(PU, kind), true);
    assert.equal(refuses({ ...PU, "ignore-delete": "true" }, kind), false);
    assert.equal(refuses({ ...PU, "partial-update.remove-record-on-delete": "true" }, kind), false);
    assert.equal(refuses({}, kind), false, "deduplicate takes every retraction");
  }
  for (const kind of [RowKind.INSERT, RowKind.UPDATE_AFTER]) assert.equal(refuses(PU, kind), false);
  const rules = keyedInputRules(schemaWith(PU));
  assert.throws(
    () => rules.checkKind(RowKind.DELETE),
    (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && e.context["reason"] === "retraction-refused" && /^-D refused: By default, Partial update can not accept delete records/.test((e as Error).message),
  );
  rules.checkKind(RowKind.INSERT);
});

const AGG = { "merge-engine": "aggregation" };

test("aggregation - Paimon's example: max and sum per field, +I with the last sequence number; primary-key columns untouched; the default last_non_null_value", () => {
  // docs/primary-key-table/merge-engine/aggregation: price max, sales sum; <1, 23.0, 15>, <1, 30.2, 20> → <1, 30.2, 35>.
  const cols = "product_id BIGINT NOT NULL, price DOUBLE, sales BIGINT, note STRING";
  const schema = newTableSchema({ columns: parseColumnList(cols), primaryKeys: ["product_id"], partitionKeys: [], options: { bucket: "1", ...AGG, "fields.price.aggregate-function": "max", "fields.sales.aggregate-function": "sum" } });
  const fn = mergeEngineOf(schema).create(ACCESS, fieldsOf(cols));
  fn.reset();
  fn.add(I(3, 1n, 23.0, 15n, "first"));
  fn.add(I(8, 1n, 30.2, 20n, null));
  assert.deepEqual(built(fn.result()), [RowKind.INSERT, 8, [1n, 30.2, 35n, "first"]]);
  fn.reset();
  fn.add(I(9, 2n, null, null, null));
  fn.add(I(10, 2n, 1.5, null, "x"));
  assert.deepEqual(built(fn.result()), [RowKind.INSERT, 10, [2n, 1.5, null, "x"]], "a fresh key after reset; nulls never count");
});

/** The aggregation of one INT-or-other column `v` of a table with these options. */
function aggregate(type: string, fnOptions: Record<string, string>, versions: Array<[RowKind, Value]>): Value {
  const cols = `k INT NOT NULL, v ${type}`;
  const r = mergeAll({ ...AGG, ...fnOptions }, versions.map(([kind, value], i) => ({ kind, seq: i, values: [1, value] })), cols);
  return built(r)[2][1]!;
}
const ins = (value: Value): [RowKind, Value] => [RowKind.INSERT, value];
const del = (value: Value): [RowKind, Value] => [RowKind.DELETE, value];
const fnOf = (name: string, extra: Record<string, string> = {}): Record<string, string> => ({ "fields.v.aggregate-function": name, ...extra });

test("aggregation - each function on hand-computed cases (Java's arithmetic: wrapping integers, FLOAT rounding, DECIMAL to the column's scale)", () => {
  assert.equal(aggregate("INT", fnOf("sum"), [ins(2147483647), ins(1)]), -2147483648, "INT wraps");
  assert.equal(aggregate("TINYINT", fnOf("sum"), [ins(100), ins(100)]), -56, "TINYINT wraps");
  assert.equal(aggregate("BIGINT", fnOf("sum"), [ins(2n ** 63n - 1n), ins(2n)]), -(2n ** 63n) + 1n, "BIGINT wraps");
  assert.equal(aggregate("FLOAT", fnOf("sum"), [ins(Math.fround(0.1)), ins(Math.fround(0.7))]), Math.fround(Math.fround(0.1) + Math.fround(0.7)), "FLOAT rounds each sum");
  assert.equal(aggregate("DECIMAL(5, 2)", fnOf("sum"), [ins(12345n), ins(99999n)]), 112344n, "a compact decimal keeps Java's long, whatever its digits");
  assert.equal(aggregate("DECIMAL(20, 2)", fnOf("sum"), [ins(10n ** 19n), ins(9n * 10n ** 19n)]), null, "beyond the precision: null");
  assert.equal(aggregate("DECIMAL(10, 2)", fnOf("product"), [ins(150n), ins(333n)]), 500n, "1.50 × 3.33 = 4.995 → 5.00 (HALF_UP)");
  assert.equal(aggregate("INT", fnOf("product"), [ins(3), ins(null), ins(-4)]), -12);
  assert.equal(aggregate("INT", fnOf("max"), [ins(3), ins(9), ins(null), ins(4)]), 9);
  assert.equal(aggregate("STRING", fnOf("min"), [ins("b"), ins("a"), ins("c")]), "a");
  assert.equal(aggregate("INT", fnOf("last_value"), [ins(3), ins(null)]), null);
  assert.equal(aggregate("INT", fnOf("last_non_null_value"), [ins(3), ins(null)]), 3);
  assert.equal(aggregate("INT", fnOf("first_value"), [ins(null), ins(3)]), null);
  assert.equal(aggregate("INT", fnOf("first_non_null_value"), [ins(null), ins(3), ins(4)]), 3);
  assert.equal(aggregate("BOOLEAN", fnOf("bool_and"), [ins(true), ins(null), ins(false)]), false);
  assert.equal(aggregate("BOOLEAN", fnOf("bool_or"), [ins(false), ins(true)]), true);
  assert.equal(aggregate("STRING", fnOf("listagg"), [ins("a"), ins(""), ins("b"), ins(null), ins("a")]), "a,b,a");
  assert.equal(aggregate("STRING", fnOf("listagg", { "fields.v.list-agg-delimiter": "; " }), [ins("a"), ins("b")]), "a; b");
  assert.equal(aggregate("STRING", fnOf("listagg", { "fields.v.distinct": "true" }), [ins("a,b"), ins("b,c,,a,d")]), "a,b,c,d");
  assert.equal(aggregate("INT", { "fields.default-aggregate-function": "sum" }, [ins(1), ins(2)]), 3, "the table's default function");
  assert.deepEqual(aggregate("ARRAY<INT>", fnOf("collect"), [ins([1, 2]), ins(null), ins([2, null])]), [1, 2, 2, null]);
  assert.deepEqual(aggregate("ARRAY<INT>", fnOf("collect", { "fields.v.distinct": "true" }), [ins([1, 2, 1]), ins([2, 3])]), [1, 2, 3], "distinct (Java's order is its HashSet's; the elements are these)");
  assert.deepEqual(aggregate("ARRAY<DOUBLE>", fnOf("collect", { "fields.v.distinct": "true" }), [ins([0, -0, 0])]), [0, -0], "-0.0 and 0.0 differ, as Java's Double.equals has it");
  assert.deepEqual(aggregate("MAP<STRING, INT>", fnOf("merge_map"), [ins([["a", 1], ["b", 2]]), ins(null), ins([["b", 3], ["c", null]])]), [["a", 1], ["b", 3], ["c", null]]);
});

test("aggregation - retractions where Paimon takes them back (sum, product, last_value, last_non_null_value, collect, merge_map); the others refused unless ignore-retract; remove-record-on-delete", () => {
  assert.equal(aggregate("INT", fnOf("sum"), [ins(10), del(3)]), 7);
  assert.equal(aggregate("INT", fnOf("sum"), [del(3)]), -3, "from nothing: the negation");
  assert.equal(aggregate("DECIMAL(10, 2)", fnOf("product"), [ins(600n), del(300n)]), 200n, "6.00 / 3.00");
  assert.throws(() => aggregate("DECIMAL(10, 2)", fnOf("product"), [ins(100n), del(300n)]), /Non-terminating decimal expansion/);
  assert.equal(aggregate("INT", fnOf("product"), [ins(7), del(2)]), 3, "integer division truncates");
  assert.equal(aggregate("INT", fnOf("last_value"), [ins(7), del(2)]), null);
  assert.equal(aggregate("INT", fnOf("last_non_null_value"), [ins(7), del(null)]), 7);
  assert.equal(aggregate("INT", fnOf("last_non_null_value"), [ins(7), del(1)]), null);
  assert.deepEqual(aggregate("ARRAY<STRING>", fnOf("collect"), [ins(["a", "b", "a", "c"]), del(["a", "x"])]), ["b", "a", "c"], "one equal element removed per element retracted");
  assert.equal(aggregate("ARRAY<STRING>", fnOf("collect"), [del(["a"])]), null, "nothing to retract from");
  assert.deepEqual(aggregate("MAP<INT, STRING>", fnOf("merge_map"), [ins([[1, "a"], [2, "b"]]), del([[2, "whatever"]])]), [[1, "a"]], "the keys retracted are removed");
  assert.throws(() => aggregate("INT", fnOf("max"), [ins(7), del(2)]), (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /Aggregate function 'max' does not support retraction/.test((e as Error).message));
  assert.equal(aggregate("INT", fnOf("max", { "fields.v.ignore-retract": "true" }), [ins(7), del(9), ins(3)]), 7);
  // remove-record-on-delete: a -D is the row (its own values), a -D result; what follows aggregates onto it.
  const r = mergeAll({ ...AGG, ...fnOf("sum"), "aggregation.remove-record-on-delete": "true" }, [I(1, 1, 5), D(2, 1, 4)], "k INT NOT NULL, v INT");
  assert.deepEqual(built(r), [RowKind.DELETE, 2, [1, 4]]);
  const again = mergeAll({ ...AGG, ...fnOf("sum"), "aggregation.remove-record-on-delete": "true" }, [I(1, 1, 5), D(2, 1, 4), I(3, 1, 10)], "k INT NOT NULL, v INT");
  assert.deepEqual(built(again), [RowKind.INSERT, 3, [1, 14]]);
});

test("aggregation - refused at create: an unknown function, a function on a type it does not take, conflicting options, an aggregate on the sequence field; functions natslake does not run by name", () => {
  const refused = (type: string, options: Record<string, string>, kind: ErrorKind, why: RegExp): void => {
    assert.throws(() => validateMergeEngine(schemaWith({ ...AGG, ...options }, `k INT NOT NULL, v ${type}, ts BIGINT`)), (e: unknown) => isLakeError(e, kind) && why.test((e as Error).message), JSON.stringify(options));
  };
  refused("INT", fnOf("avg"), ErrorKind.DataInvalid, /^Use unsupported aggregation: avg or spell aggregate function incorrectly!$/);
  refused("STRING", fnOf("sum"), ErrorKind.DataInvalid, /^Data type for sum column must be 'NumericType' but was 'STRING'\.$/);
  refused("BOOLEAN", fnOf("product"), ErrorKind.DataInvalid, /Data type for product column must be 'NumericType'/);
  refused("INT", fnOf("bool_or"), ErrorKind.DataInvalid, /^Data type for bool or column must be 'BooleanType' but was 'INT'\.$/);
  refused("VARCHAR(10)", fnOf("listagg"), ErrorKind.DataInvalid, /must be STRING \(unbounded VARCHAR\), but was VARCHAR\(10\)/);
  refused("ARRAY<INT>", fnOf("max"), ErrorKind.DataInvalid, /must be comparable/);
  refused("INT", fnOf("sum", { "fields.v.ignore-retract": "true", "aggregation.remove-record-on-delete": "true" }), ErrorKind.DataInvalid, /aggregation.remove-record-on-delete and fields.v.ignore-retract have conflicting behavior/);
  refused("INT", { "sequence.field": "ts", "fields.ts.aggregate-function": "max" }, ErrorKind.DataInvalid, /^Should not define aggregation on sequence field: 'ts'\.$/);
  refused("ARRAY<INT>", fnOf("nested_update"), ErrorKind.Unsupported, /aggregate function 'nested_update' .* is not run by natslake yet/);
  refused("INT", fnOf("collect"), ErrorKind.DataInvalid, /^Data type for collect column must be 'Array' but was 'INT'\.$/);
  refused("ARRAY<INT>", fnOf("merge_map"), ErrorKind.DataInvalid, /^Data type for merge map column must be 'MAP' but was 'ARRAY<INT>'$/);
  refused("INT", { "fields.default-aggregate-function": "rbm32" }, ErrorKind.Unsupported, /'rbm32'/);
  validateMergeEngine(schemaWith({ ...AGG, ...fnOf("sum"), "fields.default-aggregate-function": "max" }, "k INT NOT NULL, v INT, ts BIGINT"));
});

test("aggregation - retractions a table refuses as they come in: those reaching a function that takes none back", () => {
  const refuses = (options: Record<string, string>, kind: RowKind): boolean => retractionRefusal(schemaWith({ ...AGG, ...options }, "k INT NOT NULL, v INT, w INT"))(kind) !== null;
  const sums = { "fields.v.aggregate-function": "sum", "fields.w.aggregate-function": "last_value" };
  assert.equal(refuses(sums, RowKind.DELETE), false, "sum and last_value take retractions back");
  assert.equal(refuses({}, RowKind.UPDATE_BEFORE), false, "the default last_non_null_value does");
  assert.equal(refuses({ ...sums, "fields.w.aggregate-function": "max" }, RowKind.DELETE), true);
  assert.equal(refuses({ ...sums, "fields.w.aggregate-function": "max" }, RowKind.INSERT), false);
  assert.equal(refuses({ ...sums, "fields.w.aggregate-function": "max", "fields.w.ignore-retract": "true" }, RowKind.DELETE), false);
  assert.equal(refuses({ "fields.w.aggregate-function": "max", "aggregation.remove-record-on-delete": "true" }, RowKind.DELETE), false, "a -D removes the row");
  assert.equal(refuses({ "fields.w.aggregate-function": "max", "aggregation.remove-record-on-delete": "true" }, RowKind.UPDATE_BEFORE), true, "a -U is still retracted field by field");
  assert.equal(refuses({ "fields.w.aggregate-function": "max", "ignore-delete": "true" }, RowKind.DELETE), false);
  assert.match(retractionRefusal(schemaWith({ ...AGG, "fields.w.aggregate-function": "max" }, "k INT NOT NULL, v INT, w INT"))(RowKind.DELETE)!, /Aggregate function 'max' \(column w\) does not support retraction/);
});

const FR = { "merge-engine": "first-row" };

test("first-row - the first version in merge order as it is; retractions refused unless ignore-delete; sequence.field and changelog producers other than none and lookup refused at create", () => {
  const a = I(4, 1, 1.0, 1, "first");
  const b = I(9, 1, 2.0, 2, "second");
  assert.equal(mergeAll(FR, [a, b]), a);
  assert.throws(() => mergeAll(FR, [a, D(5, 1, null, null, null)]), (e: unknown) => isLakeError(e, ErrorKind.DataInvalid) && /^By default, First row merge engine can not accept DELETE\/UPDATE_BEFORE records\./.test((e as Error).message));
  assert.equal(mergeAll({ ...FR, "ignore-delete": "true" }, [D(2, 1, null, null, null), b, a]), b, "a retraction passed over; then the first addition");
  assert.equal(mergeAll({ ...FR, "first-row.ignore-delete": "true" }, [UB(2, 1, null, null, null)]), null, "Java's fallback key; only retractions: nothing");
  assert.throws(() => validateMergeEngine(schemaWith({ ...FR, "sequence.field": "number" })), /Do not support use sequence field on FIRST_ROW merge engine\.$/);
  assert.throws(() => validateMergeEngine(schemaWith({ ...FR, "changelog-producer": "input" })), /Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine$/);
  validateMergeEngine(schemaWith({ ...FR, "ignore-delete": "true" }));
  assert.notEqual(retractionRefusal(schemaWith(FR))(RowKind.DELETE), null);
  assert.notEqual(retractionRefusal(schemaWith(FR))(RowKind.UPDATE_BEFORE), null);
  assert.equal(retractionRefusal(schemaWith(FR))(RowKind.UPDATE_AFTER), null);
  assert.equal(retractionRefusal(schemaWith({ ...FR, "ignore-delete": "true" }))(RowKind.DELETE), null);
});

const GROUPS = "k INT NOT NULL, a INT, b INT, g_1 INT, c INT, d INT, g_2 INT";

test("partial-update sequence groups - Paimon's example: a group updates only from a version whose group sequence is not older, and not at all from a null one", () => {
  // docs/primary-key-table/merge-engine/partial-update (sequence-group): (1,1,1,1,1,1,1), (1,2,2,2,2,2,null) →
  // 1,2,2,2,1,1,1; then (1,3,3,1,3,3,3) → 1,2,2,2,3,3,3.
  const options = { ...PU, "fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "c,d" };
  const first = [I(1, 1, 1, 1, 1, 1, 1, 1), I(2, 1, 2, 2, 2, 2, 2, null)];
  assert.deepEqual(built(mergeAll(options, first, GROUPS))[2], [1, 2, 2, 2, 1, 1, 1]);
  assert.deepEqual(built(mergeAll(options, [...first, I(3, 1, 3, 3, 1, 3, 3, 3)], GROUPS))[2], [1, 2, 2, 2, 3, 3, 3]);
});

test("partial-update sequence groups - Paimon's example of aggregates in groups (first_value, sum); retractions null or retract a newer group; remove-record-on-sequence-group", () => {
  // docs: 'fields.a.sequence-group'='b', 'fields.b.aggregate-function'='first_value', 'fields.c.sequence-group'='d',
  // 'fields.d.aggregate-function'='sum'; (1,1,1,null,null), (1,null,null,1,1), (1,2,2,null,null), (1,null,null,2,2) → 1,2,1,2,3.
  const cols = "k INT NOT NULL, a INT, b INT, c INT, d INT";
  const options = { ...PU, "fields.a.sequence-group": "b", "fields.b.aggregate-function": "first_value", "fields.c.sequence-group": "d", "fields.d.aggregate-function": "sum" };
  const history = [I(1, 1, 1, 1, null, null), I(2, 1, null, null, 1, 1), I(3, 1, 2, 2, null, null), I(4, 1, null, null, 2, 2)];
  assert.deepEqual(built(mergeAll(options, history, cols))[2], [1, 2, 1, 2, 3]);
  // An older version of a group still aggregates (aggReversed: first_value takes the older value).
  assert.deepEqual(built(mergeAll(options, [I(1, 1, 5, 50, null, null), I(2, 1, 3, 30, null, null)], cols))[2], [1, 5, 30, null, null]);
  // A retraction of group (c, d) at sequence 2: c takes its value, d its sum minus the retracted value.
  assert.deepEqual(built(mergeAll(options, [...history, UB(5, 1, null, null, 2, 2)], cols)), [RowKind.INSERT, 5, [1, 2, 1, 2, 1]]);
  // A retraction older than the group's sequence retracts the aggregate only.
  assert.deepEqual(built(mergeAll(options, [...history, UB(5, 1, null, null, 1, 1)], cols))[2], [1, 2, 1, 2, 2]);
  // Without an aggregate a newer retraction nulls the group's field.
  const plain = { ...PU, "fields.g_1.sequence-group": "a,b" };
  assert.deepEqual(built(mergeAll(plain, [I(1, 1, 7, 8, 1, 4, 4, 4), D(2, 1, 0, 0, 2, 0, 0, 0)], GROUPS)), [RowKind.INSERT, 2, [1, null, null, 2, 4, 4, 4]]);
  // remove-record-on-sequence-group: a -D of g_1's group removes the row.
  const removing = { ...plain, "partial-update.remove-record-on-sequence-group": "g_1" };
  assert.deepEqual(built(mergeAll(removing, [I(1, 1, 7, 8, 1, 4, 4, 4), D(2, 1, null, null, 2, null, null, null)], GROUPS)), [RowKind.DELETE, 2, [1, null, null, 2, null, null, null]]);
  assert.equal(built(mergeAll(removing, [I(1, 1, 7, 8, 5, 4, 4, 4), D(2, 1, null, null, 2, null, null, null)], GROUPS))[0], RowKind.INSERT, "an older -D of the group does not");
});

test("cells - partial-update and aggregation build the same rows from cells (a caller that can tell nulls) as from values: random versions, retractions and options, merge after merge", () => {
  const withNulls: VersionAccess<V> = { ...ACCESS, isNull: (v, k) => (v.values[k] ?? null) === null };
  const AGG = { "merge-engine": "aggregation" };
  const optionSets: Array<Record<string, string>> = [
    PU,
    { ...PU, "ignore-delete": "true" },
    { ...PU, "partial-update.remove-record-on-delete": "true" },
    { ...AGG, "fields.price.aggregate-function": "sum", "fields.number.aggregate-function": "last_value" },
    { ...AGG, "fields.price.aggregate-function": "max", "fields.name.aggregate-function": "last_value", "aggregation.remove-record-on-delete": "true" },
    { ...AGG, "fields.number.aggregate-function": "sum", "fields.number.ignore-retract": "true", "fields.name.aggregate-function": "first_non_null_value", "fields.name.ignore-retract": "true" },
    { ...AGG, "ignore-delete": "true", "fields.price.aggregate-function": "last_non_null_value" },
  ];
  const version = fc.record({
    kind: fc.constantFrom(RowKind.INSERT, RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.UPDATE_BEFORE, RowKind.DELETE),
    price: fc.option(fc.double({ noNaN: true, min: -1e6, max: 1e6 })),
    number: fc.option(fc.integer({ min: -1000, max: 1000 })),
    name: fc.option(fc.string({ maxLength: 4 })),
  });
  fc.assert(
    fc.property(fc.constantFrom(...optionSets), fc.array(fc.array(version, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 3 }), (options, merges) => {
      const run = (access: VersionAccess<V>): unknown[] => {
        const fn = mergeEngineOf(schemaWith(options)).create(access, fieldsOf(COLUMNS));
        // One function, merge after merge (reset between), as the readers use it.
        return merges.map((versions) => {
          try {
            fn.reset();
            versions.forEach((x, i) => fn.add({ kind: x.kind, seq: i + 1, values: [1, x.price, x.number, x.name] }));
            const r = fn.result();
            return r === null ? null : isBuilt(r) ? { kind: r.kind, sequence: r.sequence, values: [...r.values], from: r.from } : { version: r };
          } catch (e) {
            return { error: (e as Error).message };
          }
        });
      };
      assert.deepEqual(run(withNulls), run(ACCESS));
    }),
    { numRuns: 400 },
  );
});
