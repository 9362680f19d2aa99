/**
 * Partial-update's sequence groups (Paimon 1.4.2's PartialUpdateMergeFunction with `fields.<g>.sequence-group`):
 * each group's fields are updated only by a version whose group sequence (one or several ordering fields, compared in
 * order, nulls first) is at least the row's; a version whose group sequence is all null leaves the group alone. A
 * field of a group may carry an aggregate function (`fields.<f>.aggregate-function`, or the table's default): it
 * aggregates every version with a group sequence, a newer one by `agg`, an older one by `aggReversed`. A retraction
 * of a group nulls the group's fields (retracts its aggregates) when its sequence is at least the row's; with
 * `partial-update.remove-record-on-sequence-group` naming the group's sequence field, a -D of it removes the row.
 *
 * `sequenceGroupsOf` reads the options and checks them with Java's words. A table with groups is merged on all its
 * columns, whichever a read wants (Java's adjustProjection adds the groups' sequence fields; natslake merges them all).
 */
import { compareValues } from "../../codec/stats.ts";
import { dataInvalid } from "../../errors.ts";
import { isNestedType, type DataField } from "../../format/data-types.ts";
import type { TableSchema } from "../../format/schema.ts";
import type { Value } from "../../format/values.ts";
import type { TableOptions } from "../../options.ts";
import { fieldAggregator, PRIMARY_KEY_AGGREGATOR, type FieldAggregator } from "./field-aggregators.ts";

/** The sequence groups of a table, by table field index. */
export interface SequenceGroups {
  /** Per field: the sequence fields of the group that orders it (a group's own sequence fields too), else null. */
  sequenceOf: Array<number[] | null>;
  /** Per field: its aggregator, else null. */
  aggregators: Array<FieldAggregator | null>;
  /** Sequence fields a -D of which removes the row (`partial-update.remove-record-on-sequence-group`). */
  removeOn: Set<number>;
}

const SUFFIX = ".sequence-group";

/**
 * The table's sequence groups, or null when it has none; DataInvalid (Java's words) for a group naming an unknown
 * field, a field in two groups, a sequence field that cannot be ordered, an aggregate function on a field outside
 * every group (other than last_non_null_value), remove-record-on-sequence-group naming what is no group's sequence
 * field, and the options that conflict with groups.
 */
export function sequenceGroupsOf(schema: TableSchema, options: TableOptions, ignoreDelete: boolean): SequenceGroups | null {
  const names = schema.fields.map((f) => f.name);
  const requireField = (name: string): number => {
    const at = names.indexOf(name);
    if (at < 0) throw dataInvalid(`Field ${name} can not be found in table schema.`);
    return at;
  };
  const sequenceOf: Array<number[] | null> = names.map(() => null);
  const sequenceFields: number[] = [];
  const protectedFields = new Set<number>();
  for (const [key, value] of Object.entries(options.raw)) {
    if (!key.startsWith("fields.") || !key.endsWith(SUFFIX)) continue;
    const seq = key.slice("fields.".length, key.length - SUFFIX.length).split(",").map(requireField);
    for (const s of seq) {
      const f = schema.fields[s]!;
      if (isNestedType(f.type)) throw dataInvalid(`sequence group field '${f.name}' must have an orderable type, not ${f.type.root}`, { option: key });
    }
    for (const field of value.split(",").map(requireField)) {
      if (sequenceOf[field] !== null) throw dataInvalid(`Field ${names[field]} is defined repeatedly by multiple groups: ${key}`, { option: key });
      sequenceOf[field] = seq;
      protectedFields.add(field);
    }
    for (const s of seq) {
      sequenceOf[s] = seq;
      sequenceFields.push(s);
    }
  }
  // Aggregators: checked with or without groups (an aggregate outside every group is refused either way).
  const aggregators = schema.fields.map((f, i): FieldAggregator | null => {
    if (sequenceFields.includes(i)) return null;
    if (schema.primaryKeys.includes(f.name)) return PRIMARY_KEY_AGGREGATOR;
    const fn = partialUpdateFunctionOf(f.name, options);
    if (fn === undefined) return null;
    if (fn !== "last_non_null_value" && !protectedFields.has(i)) throw dataInvalid(`Must use sequence group for aggregation functions but not found for field ${f.name}.`, { option: `fields.${f.name}.aggregate-function` });
    return fieldAggregator(fn, f.name, f.type, {
      ignoreRetract: options.bool(`fields.${f.name}.ignore-retract`),
      delimiter: options.raw[`fields.${f.name}.list-agg-delimiter`] ?? ",",
      distinct: options.bool(`fields.${f.name}.distinct`),
    });
  });
  if (sequenceFields.length === 0) return null;
  const conflicting = (a: string, b: string): Error => dataInvalid(`${a} and ${b} have conflicting behavior so should not be enabled at the same time.`);
  if (options.bool("partial-update.remove-record-on-delete")) throw conflicting("sequence-group", "partial-update.remove-record-on-delete");
  const removeOnText = options.raw["partial-update.remove-record-on-sequence-group"];
  if (removeOnText !== undefined && ignoreDelete) throw conflicting("ignore-delete", "partial-update.remove-record-on-sequence-group");
  const removeOn = new Set<number>();
  for (const name of removeOnText === undefined ? [] : removeOnText.split(",")) {
    const at = names.indexOf(name);
    if (at < 0 || !sequenceFields.includes(at)) throw dataInvalid(`field '${removeOnText}' defined in 'partial-update.remove-record-on-sequence-group' option must be part of sequence groups`);
    removeOn.add(at);
  }
  return { sequenceOf, aggregators, removeOn };
}

/** Compares a version's group sequence with the row's (field by field, nulls first, ascending). */
export function compareGroupSequence(fields: readonly DataField[], seq: readonly number[], version: (k: number) => Value, row: readonly Value[]): number {
  for (const k of seq) {
    const x = version(k);
    const y = row[k] ?? null;
    if (x === null || y === null) {
      if (x !== y) return x === null ? -1 : 1;
      continue;
    }
    const c = compareValues(fields[k]!.type, x, y);
    if (c !== 0) return c;
  }
  return 0;
}

/**
 * The aggregate function of a partial-update column (inside a sequence group): its own, else the table's default;
 * none — unlike an aggregation table, whose columns default to last_non_null_value (aggregation.ts).
 */
export function partialUpdateFunctionOf(field: string, options: TableOptions): string | undefined {
  return options.raw[`fields.${field}.aggregate-function`] ?? options.raw["fields.default-aggregate-function"];
}
