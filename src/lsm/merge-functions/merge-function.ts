/**
 * A merge engine's merge function, as Paimon's MergeFunction: fed the versions of one key in merge order (the
 * `sequence.field`, then `_SEQUENCE_NUMBER`, then retractions before additions — what the merge reader and the
 * write buffer compute), it gives the key's one surviving version. The same function runs in the three places a
 * key's versions meet: the write buffer's fold (src/lsm/sort-buffer.ts), merge-on-read and compaction
 * (src/lsm/merge-reader.ts).
 *
 * A result is either one of the inputs as it is (deduplicate, first-row: the caller gathers that row from the
 * decoded column buffers, no value read) or a new row built from several (partial-update, aggregation: a
 * `BuiltRow`). A key with a single version never reaches the function: it passes as it is (Java's
 * ReducerMergeFunctionWrapper), which is also why a lone retraction a function would refuse is not refused there.
 *
 * Versions are whatever the caller holds them as (a buffered row's index, a cursor's row): the function reads them
 * through a `VersionAccess`.
 */
import type { DataField } from "../../format/data-types.ts";
import { dataInvalid } from "../../errors.ts";
import type { Value } from "../../format/values.ts";
import type { RowKind } from "../row-kind.ts";
import type { FieldAggregator } from "./field-aggregators.ts";

/** How a merge function reads a version `V` of a key. */
export interface VersionAccess<V> {
  kind(v: V): number;
  sequence(v: V): bigint;
  /** The value of the merge's field `k` (an index into the `fields` the function was created for). */
  value(v: V, k: number): Value;
  /**
   * Whether field `k` of the version is null, without reading its value. A caller that gives this lets partial-update
   * and aggregation build rows of cells (`BuiltRow.cells`) instead of values; absent: they build values.
   */
  isNull?(v: V, k: number): boolean;
}

/**
 * A row a merge function built from several versions: its values (one per merge field), kind and sequence number.
 *
 * With `cells`, field k's value is the same field of the version `cells[k]` — a caller that gathers columns buffer to
 * buffer (the merge reader's output) copies that cell without reading it — or, where `cells[k]` is undefined, the
 * value the function computed (`computed(k)`). `values` then reads the cells on first use, for callers that want values.
 */
export class BuiltRow<V> {
  private materialized: boolean;

  constructor(
    private readonly row: Value[],
    readonly kind: RowKind,
    readonly sequence: bigint,
    /** A version of the key it was built from (its key columns are the row's). */
    readonly from: V,
    readonly cells?: ReadonlyArray<V | undefined>,
    private readonly access?: VersionAccess<V>,
  ) {
    this.materialized = cells === undefined;
  }

  /** The row's values, one per merge field. */
  get values(): Value[] {
    if (!this.materialized) {
      const cells = this.cells!;
      for (let k = 0; k < cells.length; k++) if (cells[k] !== undefined) this.row[k] = this.access!.value(cells[k]!, k);
      this.materialized = true;
    }
    return this.row;
  }

  /** The value the function computed for field k (where `cells[k]` is undefined). */
  computed(k: number): Value {
    return this.row[k]!;
  }
}

/** What a key's versions merge into: one of them as it is, a built row, or nothing. */
export type MergeResult<V> = V | BuiltRow<V> | null;

export interface MergeFunction<V> {
  reset(): void;
  /** The next version in merge order; throws DataInvalid for a version the engine does not accept. */
  add(v: V): void;
  result(): MergeResult<V>;
}

export type MergeEngineName = "deduplicate" | "partial-update" | "aggregation" | "first-row";

/** A table's merge engine with its options read: makes the merge function of each merge. */
export interface MergeEngine {
  readonly name: MergeEngineName;
  /** `ignore-delete` (with Java's fallback keys): retractions are passed over. */
  readonly ignoreDelete: boolean;
  /** A read of some columns must still merge every column (partial-update's sequence groups compare across fields). */
  readonly mergesAllFields?: boolean;
  /**
   * A lookup table's merge (Java's LookupMergeFunction, src/lsm/lookup-changelog.ts): of a key's versions, those at
   * level 0 and only the newest one above, which already holds the older ones. Set for every engine but first-row
   * when the table needs lookup (`changelog-producer = lookup`, `force-lookup`).
   */
  readonly lookupMerge?: boolean;
  /**
   * The merge function for versions read through `access`, whose values are those of `fields` (the table's columns
   * for a write or a compaction, the read's columns for a merge-on-read — each field's merge depends on that field
   * alone, the primary-key columns included, which are equal in every version).
   */
  create<V>(access: VersionAccess<V>, fields: readonly DataField[]): MergeFunction<V>;
  /**
   * How the merge function merges a key's versions when all of them are additions, as one rule per field of `fields`
   * that reads that field alone (src/lsm/group-fold.ts folds a group by them, column by column, without the merge
   * function); absent or null when the engine's fields depend on one another (partial-update's sequence groups) or
   * it has no such rules (deduplicate and first-row keep a version as it is already).
   */
  fieldRules?(fields: readonly DataField[]): FieldRule[] | null;
}

/**
 * How one field of a key's additions (in merge order) merges: the newest version's cell (`last`); the newest non-null
 * cell, else the newest version's null (`lastNonNull`; with `notNull` a null in any version is refused, so the fold
 * leaves the group to the merge function, which refuses it); the cell of the input an aggregator that gives back one
 * of its inputs chose (`choose`: max, min); or a value computed by an aggregator (`agg`).
 */
export type FieldRule = { pick: "last" } | { pick: "lastNonNull"; notNull: boolean } | { choose: FieldAggregator } | { agg: FieldAggregator };

/** A null where a NOT NULL field must have a value (Java's "Field i can not be null", naming the field). */
export const nullInNotNullField = (f: DataField): Error => dataInvalid(`Field ${f.name} can not be null`, { column: f.name });

/** Every value of a version (Java's initRow of the partial-update and aggregation functions), a null in a NOT NULL field refused. */
export function versionValues<V>(access: VersionAccess<V>, fields: readonly DataField[], v: V): Value[] {
  return fields.map((f, k) => {
    const value = access.value(v, k);
    if (value === null && !f.type.nullable) throw nullInNotNullField(f);
    return value;
  });
}

/** Whether a merge result is a built row (a result that is not is one of the inputs). */
export function isBuilt<V>(r: MergeResult<V>): r is BuiltRow<V> {
  return r instanceof BuiltRow;
}
