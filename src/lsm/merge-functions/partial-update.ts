/**
 * Partial-update (Paimon 1.4.2's PartialUpdateMergeFunction): each non-null field of a newer version overwrites the
 * row's, a null never does — or, with sequence groups, as sequence-groups.ts says; the result is a new row of kind
 * +I carrying the sequence number of the last version added.
 *
 * Retractions (-U, -D) are refused unless `ignore-delete` (passed over) or `partial-update.remove-record-on-delete`
 * (a -D replaces the row with its own values and makes the result a -D; a -U is passed over). Java's details are
 * kept, since Java reads the same files: the first version of a merge, retraction or not, fills the row with all its
 * values (so a key deleted and then written again keeps the deleted row's values where the new version has nulls),
 * and a key that met only retractions merges into a -D.
 */
import type { DataField } from "../../format/data-types.ts";
import { dataInvalid } from "../../errors.ts";
import type { Value } from "../../format/values.ts";
import { isRetract, RowKind } from "../row-kind.ts";
import { BuiltRow, nullInNotNullField, versionValues, type MergeFunction, type MergeResult, type VersionAccess } from "./merge-function.ts";
import { aggReversed } from "./field-aggregators.ts";
import { compareGroupSequence, type SequenceGroups } from "./sequence-groups.ts";

export interface PartialUpdateOptions {
  ignoreDelete: boolean;
  removeRecordOnDelete: boolean;
  /** The table's sequence groups (then the merge's fields are the table's, in order), or null. */
  groups: SequenceGroups | null;
}

/** Why partial-update refuses a retraction (Java's words, less the sequence groups natslake does not write). */
export const PARTIAL_UPDATE_RETRACTION =
  "By default, Partial update can not accept delete records, you can choose one of the following solutions: " +
  "1. Configure 'ignore-delete' to ignore delete records. " +
  "2. Configure 'partial-update.remove-record-on-delete' to remove the whole row when receiving delete records.";

export class PartialUpdateFunction<V> implements MergeFunction<V> {
  private row: Value[] = [];
  /**
   * Cells instead of values (when the caller can tell nulls without reading values, and the table has no sequence
   * groups): per field the newest version whose value is not null. Given up for values at a retraction.
   */
  private cells: Array<V | undefined> | null = null;
  private from: V | null = null;
  private latestSequence = 0n;
  private meetInsert = false;
  private rowFilled = false;
  private deleteRow = false;

  constructor(
    private readonly access: VersionAccess<V>,
    private readonly fields: readonly DataField[],
    private readonly options: PartialUpdateOptions,
  ) {}

  reset(): void {
    this.row = new Array<Value>(this.fields.length).fill(null);
    this.cells = this.access.isNull !== undefined && this.options.groups === null ? new Array<V | undefined>(this.fields.length) : null;
    this.from = null;
    this.latestSequence = 0n;
    this.meetInsert = false;
    this.rowFilled = false;
    this.deleteRow = false;
    for (const a of this.options.groups?.aggregators ?? []) a?.reset();
  }

  add(v: V): void {
    const kind = this.access.kind(v);
    this.from = v;
    this.deleteRow = false;
    if (isRetract(kind)) {
      this.cellsToValues();
      if (!this.rowFilled) {
        this.row = versionValues(this.access, this.fields, v);
        this.rowFilled = true;
      }
      if (this.options.ignoreDelete) return;
      this.latestSequence = this.access.sequence(v);
      if (this.options.groups !== null) return this.retractGroups(v, kind, this.options.groups);
      if (!this.options.removeRecordOnDelete) throw dataInvalid(PARTIAL_UPDATE_RETRACTION, { reason: "retraction-refused" });
      if (kind === RowKind.DELETE) {
        this.deleteRow = true;
        this.row = versionValues(this.access, this.fields, v);
      }
      return;
    }
    this.latestSequence = this.access.sequence(v);
    if (this.options.groups !== null) this.updateGroups(v, this.options.groups);
    else if (this.cells !== null) {
      const isNull = this.access.isNull!;
      for (let k = 0; k < this.fields.length; k++) {
        if (!isNull(v, k)) this.cells[k] = v;
        else if (!this.fields[k]!.type.nullable) throw nullInNotNullField(this.fields[k]!);
      }
    } else {
      for (let k = 0; k < this.fields.length; k++) {
        const value = this.access.value(v, k);
        if (value !== null) this.row[k] = value;
        else if (!this.fields[k]!.type.nullable) throw nullInNotNullField(this.fields[k]!);
      }
    }
    this.meetInsert = true;
    this.rowFilled = true;
  }

  /** The cells so far as values (the row a retraction then works on), and values from here on. */
  private cellsToValues(): void {
    const cells = this.cells;
    if (cells === null) return;
    for (let k = 0; k < cells.length; k++) if (cells[k] !== undefined) this.row[k] = this.access.value(cells[k]!, k);
    this.cells = null;
  }

  /** Whether the version's group sequence is all null (then the group is passed over; remembered per version). */
  private emptyGroup(v: V, seq: readonly number[], empty: boolean[]): boolean {
    if (empty[seq[0]!]) return true;
    if (seq.some((k) => this.access.value(v, k) !== null)) return false;
    for (const k of seq) empty[k] = true;
    return true;
  }

  /** Java's updateWithSequenceGroup, field by field in table order. */
  private updateGroups(v: V, g: SequenceGroups): void {
    const empty = new Array<boolean>(this.fields.length).fill(false);
    const value = (k: number): Value => this.access.value(v, k);
    for (let i = 0; i < this.fields.length; i++) {
      const seq = g.sequenceOf[i] ?? null;
      const agg = g.aggregators[i] ?? null;
      const acc = this.row[i] ?? null;
      if (seq === null) {
        const field = value(i);
        if (agg !== null) this.row[i] = agg.agg(acc, field);
        else if (field !== null) this.row[i] = field;
        continue;
      }
      if (this.emptyGroup(v, seq, empty)) continue;
      const field = value(i);
      if (compareGroupSequence(this.fields, seq, value, this.row) >= 0) {
        // A sequence field: the group's sequence fields move together.
        if (seq.includes(i)) for (const k of seq) this.row[k] = value(k);
        else this.row[i] = agg === null ? field : agg.agg(acc, field);
      } else if (agg !== null) this.row[i] = aggReversed(agg, acc, field);
    }
  }

  /** Java's retractWithSequenceGroup: a newer retraction nulls (or retracts) its group's fields. */
  private retractGroups(v: V, kind: number, g: SequenceGroups): void {
    const empty = new Array<boolean>(this.fields.length).fill(false);
    const updated = new Set<number>();
    const value = (k: number): Value => this.access.value(v, k);
    for (let i = 0; i < this.fields.length; i++) {
      const seq = g.sequenceOf[i] ?? null;
      if (seq === null || this.emptyGroup(v, seq, empty)) continue;
      const agg = g.aggregators[i] ?? null;
      if (compareGroupSequence(this.fields, seq, value, this.row) >= 0) {
        if (seq.includes(i)) {
          for (const k of seq) {
            if (updated.has(k)) continue;
            if (kind === RowKind.DELETE && g.removeOn.has(k)) {
              this.deleteRow = true;
              this.row = versionValues(this.access, this.fields, v);
              return;
            }
            this.row[k] = value(k);
            updated.add(k);
          }
        } else this.row[i] = agg === null ? null : agg.retract(this.row[i] ?? null, value(i));
      } else if (agg !== null) this.row[i] = agg.retract(this.row[i] ?? null, value(i));
    }
  }

  result(): MergeResult<V> {
    if (this.from === null) return null;
    const kind = this.deleteRow || !this.meetInsert ? RowKind.DELETE : RowKind.INSERT;
    if (this.cells !== null) {
      // A field no version set is null in every version, the last one included.
      const from = this.from;
      const cells = this.cells.map((c) => c ?? from);
      return new BuiltRow(this.row, kind, this.latestSequence, from, cells, this.access);
    }
    return new BuiltRow(this.row, kind, this.latestSequence, this.from);
  }
}
