/**
 * A primary-key table's merge engine, read from its options (`merge-engine` and the options of each engine), and
 * the rules those options must satisfy:
 *
 * - `mergeEngineOf`: the engine whose merge functions the write buffer, merge-on-read and compaction run; what
 *   natslake does not merge (aggregate functions it does not run) is refused by name (Unsupported), never merged
 *   into rows that would be wrong.
 * - `validateMergeEngine`: at create, Java's rules (SchemaValidation and the engines' factories, which Java applies
 *   only when a writer or reader first merges — natslake refuses such a table before it exists), as Java words them.
 * - `retractionRefusal`: which retractions the engine refuses. Java accepts them into a level-0 file and fails the
 *   first merge that meets one — every later compaction of the bucket, every read of the key; natslake refuses them
 *   as they come in (a dead letter in the cluster, an error from TableWrite), so the rest of a batch lands.
 * - `retractionValueRefusal`: the same for a retraction the engine takes by kind but whose value no merge can take
 *   back — a `product` retracted by an integer or decimal zero (Java's ArithmeticException at the merge).
 */
import { dataInvalid, ErrorKind, LakeError } from "../../errors.ts";
import type { TableSchema } from "../../format/schema.ts";
import type { Row } from "../../format/values.ts";
import { TableOptions } from "../../options.ts";
import { isRetract, RowKind } from "../row-kind.ts";
import { DeduplicateFunction } from "./deduplicate.ts";
import type { MergeEngine, MergeEngineName } from "./merge-function.ts";
import { PARTIAL_UPDATE_RETRACTION, PartialUpdateFunction } from "./partial-update.ts";
import { aggregateFunctionOf, AggregationFunction, aggregationRule, aggregatorsOf } from "./aggregation.ts";
import { FIRST_ROW_RETRACTION, FirstRowFunction } from "./first-row.ts";
import { partialUpdateFunctionOf, sequenceGroupsOf } from "./sequence-groups.ts";
import { needsLookup } from "../lookup-changelog.ts";

/** The `sequence.field` columns named by the options (none when unset). */
function sequenceFieldsOf(options: TableOptions): string[] {
  const raw = options.get("sequence.field");
  return raw === undefined || raw.trim() === "" ? [] : raw.split(",").map((x) => x.trim());
}

/** Functions whose aggregators take a retraction back (Java's FieldAggregator.retract overrides). */
const RETRACTABLE = new Set(["sum", "product", "last_value", "last_non_null_value", "collect", "merge_map", "primary-key"]);

const ENGINES: readonly MergeEngineName[] = ["deduplicate", "partial-update", "aggregation", "first-row"];

/** `merge-engine` (default deduplicate); an unknown name is DataInvalid. */
export function mergeEngineName(options: TableOptions): MergeEngineName {
  const name = (options.get("merge-engine") ?? "deduplicate").trim().toLowerCase();
  if (!(ENGINES as readonly string[]).includes(name)) throw dataInvalid(`merge-engine '${name}' is not one of ${ENGINES.join(", ")}`, { option: "merge-engine" });
  return name as MergeEngineName;
}

/** `ignore-delete` as Java reads it: the key itself, else any of its fallback keys. */
export function ignoreDeleteOf(options: TableOptions): boolean {
  const raw = options.raw;
  for (const key of ["ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete"]) {
    const v = raw[key];
    if (v !== undefined) return v.trim().toLowerCase() === "true";
  }
  return false;
}

/** The `fields.<f>.<suffix>` options of a table: field name (or comma list of names) → value. */
function fieldOptions(options: TableOptions, suffix: string): Map<string, string> {
  const out = new Map<string, string>();
  const tail = `.${suffix}`;
  for (const [k, v] of Object.entries(options.raw)) {
    if (k.startsWith("fields.") && k.endsWith(tail) && k.length > "fields.".length + tail.length) out.set(k.slice("fields.".length, k.length - tail.length), v);
  }
  return out;
}

/** The table's merge engine; Unsupported, naming the option, for what natslake does not merge. */
export function mergeEngineOf(schema: TableSchema): MergeEngine {
  const options = new TableOptions(schema.options);
  const name = mergeEngineName(options);
  const ignoreDelete = ignoreDeleteOf(options);
  // First-row needs lookup too, but keeps the first version whatever the levels (Java does not wrap it).
  const lookupMerge = name !== "first-row" && needsLookup(options);
  switch (name) {
    case "deduplicate":
      return { name, ignoreDelete, lookupMerge, create: (access) => new DeduplicateFunction(access, ignoreDelete) };
    case "partial-update": {
      const removeRecordOnDelete = options.bool("partial-update.remove-record-on-delete");
      const groups = sequenceGroupsOf(schema, options, ignoreDelete);
      return {
        name,
        ignoreDelete,
        lookupMerge,
        mergesAllFields: groups !== null,
        create: (access, fields) => {
          // A group's fields are compared by their group's sequence fields: the merge must see every field.
          if (groups !== null && fields.length !== schema.fields.length) throw new LakeError(ErrorKind.Unexpected, "a partial-update table with sequence groups merges all its fields");
          return new PartialUpdateFunction(access, fields, { ignoreDelete, removeRecordOnDelete, groups });
        },
        // Without sequence groups each field of the additions is its newest non-null value (PartialUpdateFunction.add).
        fieldRules: (fields) => (groups !== null ? null : fields.map((f) => ({ pick: "lastNonNull", notNull: !f.type.nullable }))),
      };
    }
    case "aggregation": {
      const removeRecordOnDelete = options.bool("aggregation.remove-record-on-delete");
      const sequenceFields = sequenceFieldsOf(options);
      // Checked once for the whole table (a function or type Java refuses), then made per merge for its fields.
      aggregatorsOf(schema.fields, options, schema.primaryKeys, sequenceFields);
      return {
        name,
        ignoreDelete,
        lookupMerge,
        create: (access, fields) => new AggregationFunction(access, fields, aggregatorsOf(fields, options, schema.primaryKeys, sequenceFields), removeRecordOnDelete),
        fieldRules: (fields) => aggregatorsOf(fields, options, schema.primaryKeys, sequenceFields).map(aggregationRule),
      };
    }
    case "first-row":
      return { name, ignoreDelete, create: (access) => new FirstRowFunction(access, ignoreDelete) };
  }
}

/**
 * Java's rules for the merge engine options of a primary-key schema (DataInvalid, in Java's words), then
 * `mergeEngineOf`'s refusals (Unsupported).
 */
export function validateMergeEngine(schema: TableSchema): void {
  const options = new TableOptions(schema.options);
  const name = mergeEngineName(options);
  const ignoreDelete = ignoreDeleteOf(options);
  const conflicting = (a: string, b: string): LakeError => dataInvalid(`${a} and ${b} have conflicting behavior so should not be enabled at the same time.`);
  if (name === "partial-update") {
    if (ignoreDelete && options.bool("partial-update.remove-record-on-delete")) throw conflicting("ignore-delete", "partial-update.remove-record-on-delete");
  }
  if (name === "aggregation") {
    for (const f of schema.fields) {
      if (options.bool("aggregation.remove-record-on-delete") && options.bool(`fields.${f.name}.ignore-retract`)) throw conflicting("aggregation.remove-record-on-delete", `fields.${f.name}.ignore-retract`);
    }
  }
  if (name === "first-row") {
    const producer = (options.get("changelog-producer") ?? "none").trim().toLowerCase();
    if (producer !== "none" && producer !== "lookup") throw dataInvalid("Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine", { option: "changelog-producer" });
    if (sequenceFieldsOf(options).length > 0) throw dataInvalid("Do not support use sequence field on FIRST_ROW merge engine.", { option: "sequence.field" });
  }
  for (const seq of sequenceFieldsOf(options)) {
    if (options.raw[`fields.${seq}.aggregate-function`] !== undefined) throw dataInvalid(`Should not define aggregation on sequence field: '${seq}'.`, { option: `fields.${seq}.aggregate-function` });
  }
  mergeEngineOf(schema);
}

/**
 * The reason the table's merge engine refuses a row of this kind, or null when it takes it: retractions on
 * partial-update (unless ignore-delete or partial-update.remove-record-on-delete); on aggregation, those that reach a
 * field whose function takes none back (unless the field's ignore-retract, or a -D with
 * aggregation.remove-record-on-delete). With `ignore-delete` every
 * retraction is taken (and dropped by the write buffer, as Java's RowKindFilter drops it). Never throws: a table
 * natslake cannot write is refused where it is opened for writing, not row by row.
 */
export function retractionRefusal(schema: TableSchema): (kind: RowKind) => string | null {
  const options = new TableOptions(schema.options);
  const name = (options.get("merge-engine") ?? "deduplicate").trim().toLowerCase();
  if (ignoreDeleteOf(options)) return () => null;
  if (name === "partial-update") {
    const groups = fieldOptions(options, "sequence-group");
    if (groups.size === 0) return options.bool("partial-update.remove-record-on-delete") ? () => null : (kind) => (isRetract(kind) ? PARTIAL_UPDATE_RETRACTION : null);
    // Sequence groups retract their fields; an aggregate in a group that takes none back would fail the merge.
    const inGroups = [...groups.values()].flatMap((v) => v.split(","));
    const stuck = inGroups.find((f) => {
      const fn = partialUpdateFunctionOf(f, options);
      return fn !== undefined && !RETRACTABLE.has(fn) && !options.bool(`fields.${f}.ignore-retract`);
    });
    if (stuck === undefined) return () => null;
    const why = `Aggregate function of column ${stuck} (in a sequence group) does not support retraction, If you allow this function to ignore retraction messages, you can configure 'fields.${stuck}.ignore-retract'='true'.`;
    return (kind) => (isRetract(kind) ? why : null);
  }
  if (name === "first-row") return (kind) => (isRetract(kind) ? FIRST_ROW_RETRACTION : null);
  if (name === "aggregation") {
    // The first field whose aggregator cannot take a retraction back (ignore-retract lets it pass it over).
    const sequenceFields = sequenceFieldsOf(options);
    const stuck = schema.fields.find((f) => !options.bool(`fields.${f.name}.ignore-retract`) && !RETRACTABLE.has(aggregateFunctionOf(f.name, options, schema.primaryKeys, sequenceFields)));
    if (stuck === undefined) return () => null;
    const fn = aggregateFunctionOf(stuck.name, options, schema.primaryKeys, sequenceFields);
    const why = `Aggregate function '${fn}' (column ${stuck.name}) does not support retraction, If you allow this function to ignore retraction messages, you can configure 'fields.${stuck.name}.ignore-retract'='true'.`;
    const removes = options.bool("aggregation.remove-record-on-delete");
    // With remove-record-on-delete a -D removes the row instead of being retracted field by field.
    return (kind) => (isRetract(kind) && !(removes && kind === RowKind.DELETE) ? why : null);
  }
  return () => null;
}

/** Integer and decimal columns: a division of them by zero throws in Java (floating point gives infinity instead). */
const EXACT_NUMERIC = new Set(["TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL"]);

/**
 * The reason the table refuses this retraction for one of its values, or null: a `product` field (aggregation, or
 * inside a partial-update sequence group) of an integer or decimal type, retracted by zero, unless the field
 * ignores retractions (or the retraction is a -D that `aggregation.remove-record-on-delete` turns into a removal).
 * Java takes such a row and fails every merge that meets it — each compaction of its bucket, each read of its key —
 * so natslake refuses it as it comes in. null when the table has no such field (the caller skips the check).
 */
export function retractionValueRefusal(schema: TableSchema): ((row: Readonly<Row>, kind: RowKind) => string | null) | null {
  const options = new TableOptions(schema.options);
  if (ignoreDeleteOf(options)) return null;
  const name = (options.get("merge-engine") ?? "deduplicate").trim().toLowerCase();
  let candidates: string[];
  if (name === "aggregation") candidates = schema.fields.map((f) => f.name);
  else if (name === "partial-update") candidates = [...fieldOptions(options, "sequence-group").values()].flatMap((v) => v.split(",").map((x) => x.trim()));
  else return null;
  const sequenceFields = sequenceFieldsOf(options);
  const divisors = schema.fields.filter(
    (f) =>
      candidates.includes(f.name) &&
      EXACT_NUMERIC.has(f.type.root) &&
      !options.bool(`fields.${f.name}.ignore-retract`) &&
      (name === "aggregation" ? aggregateFunctionOf(f.name, options, schema.primaryKeys, sequenceFields) : partialUpdateFunctionOf(f.name, options)) === "product",
  );
  if (divisors.length === 0) return null;
  const removes = name === "aggregation" && options.bool("aggregation.remove-record-on-delete");
  return (row, kind) => {
    if (!isRetract(kind) || (removes && kind === RowKind.DELETE)) return null;
    for (const f of divisors) {
      const v = row[f.name];
      // Canonical values: integers as numbers or bigints, decimals as their unscaled bigint.
      if (v === 0 || v === 0n) {
        const filled = f.type.nullable ? "" : ` (a retraction that leaves the NOT NULL column ${f.name} out carries its zero)`;
        return `a retraction of ${f.name} by zero: product divides by it (Java: ArithmeticException: / by zero, at every merge of the key)${filled}`;
      }
    }
    return null;
  };
}
