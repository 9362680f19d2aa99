/**
 * Aggregation (Paimon 1.4.2's AggregateMergeFunction): every field of a key's versions is folded by its aggregator
 * (field-aggregators.ts) — additions by `agg`, retractions by `retract` (which throws for a function that does not
 * take them) — into a new row of kind +I with the last version's sequence number. With
 * `aggregation.remove-record-on-delete` a -D replaces the row with its own values and makes the result a -D (a
 * later version of the same merge aggregates onto those values, as Java's does).
 *
 * Which aggregator a field gets (Java's getAggFuncName): a `sequence.field` column last_value, a primary-key column
 * its own value, else `fields.<f>.aggregate-function`, else `fields.default-aggregate-function`, else
 * last_non_null_value.
 */
import type { DataField } from "../../format/data-types.ts";
import type { Value } from "../../format/values.ts";
import type { TableOptions } from "../../options.ts";
import { isRetract, RowKind } from "../row-kind.ts";
import { fieldAggregator, PRIMARY_KEY_AGGREGATOR, type FieldAggregator } from "./field-aggregators.ts";
import { BuiltRow, versionValues, type FieldRule, type MergeFunction, type MergeResult, type VersionAccess } from "./merge-function.ts";

/** The aggregate function Java gives a field of this table (its name; "primary-key" for key columns). */
export function aggregateFunctionOf(field: string, options: TableOptions, primaryKeys: readonly string[], sequenceFields: readonly string[]): string {
  if (sequenceFields.includes(field)) return "last_value";
  if (primaryKeys.includes(field)) return "primary-key";
  return options.raw[`fields.${field}.aggregate-function`] ?? options.raw["fields.default-aggregate-function"] ?? "last_non_null_value";
}

/** The aggregator of each of `fields` under the table's options; DataInvalid for a function or type Java refuses. */
export function aggregatorsOf(fields: readonly DataField[], options: TableOptions, primaryKeys: readonly string[], sequenceFields: readonly string[]): FieldAggregator[] {
  return fields.map((f) => {
    const name = aggregateFunctionOf(f.name, options, primaryKeys, sequenceFields);
    if (name === "primary-key") return PRIMARY_KEY_AGGREGATOR;
    return fieldAggregator(name, f.name, f.type, {
      ignoreRetract: options.bool(`fields.${f.name}.ignore-retract`),
      delimiter: options.raw[`fields.${f.name}.list-agg-delimiter`] ?? ",",
      distinct: options.bool(`fields.${f.name}.distinct`),
    });
  });
}

/** A field's rule for a key's additions (AggregationFunction.add): its aggregator's pick or chosen input, else its aggregate. */
export function aggregationRule(a: FieldAggregator): FieldRule {
  if (a.pick === "last") return { pick: "last" };
  // last_non_null_value takes a null in a NOT NULL field as it comes (Java checks no nulls here).
  if (a.pick === "lastNonNull") return { pick: "lastNonNull", notNull: false };
  return a.choosesInput === true ? { choose: a } : { agg: a };
}

export class AggregationFunction<V> implements MergeFunction<V> {
  private row: Value[] = [];
  private latest: V | null = null;
  private deleteRow = false;
  /** Each field's aggregator's `pick`, when the caller can tell nulls without reading values (else none). */
  private readonly picks: ReadonlyArray<FieldAggregator["pick"]>;
  private readonly anyPick: boolean;
  /**
   * The fields whose aggregator picks an input (last_value, last_non_null_value, the key) as cells: the version that
   * holds the result so far. Given up for values at a retraction.
   */
  private cells: Array<V | undefined> | null = null;

  constructor(
    private readonly access: VersionAccess<V>,
    private readonly fields: readonly DataField[],
    private readonly aggregators: readonly FieldAggregator[],
    private readonly removeRecordOnDelete: boolean,
  ) {
    this.picks = aggregators.map((a) => (access.isNull !== undefined ? a.pick : undefined));
    this.anyPick = this.picks.some((p) => p !== undefined);
  }

  reset(): void {
    this.row = new Array<Value>(this.fields.length).fill(null);
    this.cells = this.anyPick ? new Array<V | undefined>(this.fields.length) : null;
    this.latest = null;
    this.deleteRow = false;
    for (const a of this.aggregators) a.reset();
  }

  add(v: V): void {
    this.latest = v;
    const kind = this.access.kind(v);
    this.deleteRow = this.removeRecordOnDelete && kind === RowKind.DELETE;
    if (this.deleteRow) {
      this.cells = null;
      this.row = versionValues(this.access, this.fields, v);
      return;
    }
    const retract = isRetract(kind);
    if (retract) this.cellsToValues();
    const cells = this.cells;
    for (let k = 0; k < this.fields.length; k++) {
      const pick = cells === null ? undefined : this.picks[k];
      if (pick !== undefined) {
        if (pick === "last" || !this.access.isNull!(v, k)) cells![k] = v;
        continue;
      }
      const input = this.access.value(v, k);
      const a = this.aggregators[k]!;
      this.row[k] = retract ? a.retract(this.row[k]!, input) : a.agg(this.row[k]!, input);
    }
  }

  /** The picked fields' results so far as values (the row a retraction works on), and values from here on. */
  private cellsToValues(): void {
    const cells = this.cells;
    if (cells === null) return;
    for (let k = 0; k < cells.length; k++) if (this.picks[k] !== undefined) this.row[k] = cells[k] === undefined ? null : this.access.value(cells[k]!, k);
    this.cells = null;
  }

  result(): MergeResult<V> {
    const latest = this.latest;
    if (latest === null) return null;
    const kind = this.deleteRow ? RowKind.DELETE : RowKind.INSERT;
    const sequence = this.access.sequence(latest);
    if (this.cells === null) return new BuiltRow(this.row, kind, sequence, latest);
    // A last_non_null_value no version set is null in every version, the latest included.
    const cells = this.picks.map((p, k) => (p === undefined ? undefined : (this.cells![k] ?? latest)));
    return new BuiltRow(this.row, kind, sequence, latest, cells, this.access);
  }
}
