/**
 * A key's several versions merged column by column, without the merge function: when every version is an addition
 * and the engine merges each field by a rule of its own (merge-function.ts `FieldRule`: partial-update without
 * sequence groups, aggregation), the row the merge function would build is, per field, one version's cell — the
 * newest, or the newest non-null — or a value an aggregator computes. The fold finds, per field, which version holds
 * it (reading validity bits, no values) and computes only the aggregated fields, so the caller gathers the row's
 * cells buffer to buffer as it gathers a lone version's row: no version objects, no row of values, no built row per
 * key (measured: those and their garbage were most of a merged scan's group path).
 *
 * The result is the merge function's for such a group — kind +I, the newest version's sequence number, the key of any
 * version (all equal). A group the rules do not cover is left to the merge function (`fold` returns false): one with a
 * retraction (which partial-update refuses, removes or passes over, and aggregation retracts, each by its own rules)
 * or with a null in a field whose rule refuses nulls (the merge function refuses it in its words).
 *
 * Versions come in as the merge meets them and are put in merge order by sequence number (a stable insertion: equal
 * sequence numbers keep the order they came in, as `foldKeyVersions` sorts them). A `sequence.field` orders versions
 * by values: such a merge does not fold (the caller's choice).
 */
import type { Value } from "../format/values.ts";
import type { FieldAggregator } from "./merge-functions/field-aggregators.ts";
import type { FieldRule } from "./merge-functions/merge-function.ts";
import { isRetract } from "./row-kind.ts";

/**
 * A decoded batch a version is a row of: its sequence numbers as 32-bit word pairs (low, high), its kinds, and per
 * field of the rules its validity bits (null: no nulls) with row 0's place among them.
 */
export interface FoldBatch {
  seqWords: Int32Array;
  kind: Int8Array;
  nullBits: ReadonlyArray<Uint8Array | null>;
  bitOffset: Int32Array;
}

/** The value of field `k` (of the rules' fields) at a row of a batch. */
export type FoldValue<B> = (b: B, k: number, row: number) => Value;

function isNull(b: FoldBatch, k: number, row: number): boolean {
  const bits = b.nullBits[k]!;
  if (bits === null) return false;
  const at = b.bitOffset[k]! + row;
  return (bits[at >> 3]! & (1 << (at & 7))) === 0;
}

/** Per field: where the fold's row takes it from. */
const COMPUTED = -1;

const LAST = 0;
const LAST_NON_NULL = 1;
const LAST_NON_NULL_STRICT = 2;
const CHOOSE = 3;
const AGG = 4;

export class GroupFold<B extends FoldBatch> {
  /** The group's versions in merge order (the newest last): `count` of them. */
  readonly batches: B[] = [];
  readonly rows: number[] = [];
  count = 0;
  /** Per field: the index (into `batches`/`rows`) of the version whose cell the row takes, or COMPUTED. */
  readonly source: Int32Array;
  /** Per field whose source is COMPUTED: the value. */
  readonly values: Value[];
  private readonly ruleOf: Uint8Array;
  private readonly aggregators: Array<FieldAggregator | null>;
  private retraction = false;

  constructor(
    rules: readonly FieldRule[],
    private readonly value: FoldValue<B>,
  ) {
    this.source = new Int32Array(rules.length);
    this.values = new Array<Value>(rules.length).fill(null);
    this.ruleOf = Uint8Array.from(rules, (r) => ("agg" in r ? AGG : "choose" in r ? CHOOSE : r.pick === "last" ? LAST : r.notNull ? LAST_NON_NULL_STRICT : LAST_NON_NULL));
    this.aggregators = rules.map((r) => ("agg" in r ? r.agg : "choose" in r ? r.choose : null));
  }

  /** A new key begins. */
  begin(): void {
    this.count = 0;
    this.retraction = false;
  }

  /** One more version of the key (any order): inserted after every version whose sequence number is not larger. */
  add(b: B, row: number): void {
    if (isRetract(b.kind[row]!)) this.retraction = true;
    const batches = this.batches;
    const rows = this.rows;
    let i = this.count++;
    while (i > 0 && newerSequence(batches[i - 1]!, rows[i - 1]!, b, row)) {
      batches[i] = batches[i - 1]!;
      rows[i] = rows[i - 1]!;
      i--;
    }
    batches[i] = b;
    rows[i] = row;
  }

  /** Folds the versions added since `begin`; false when the merge function must merge them (see above). */
  fold(): boolean {
    if (this.retraction) return false;
    const n = this.count;
    const newest = n - 1;
    const { batches, rows, source } = this;
    for (let k = 0; k < source.length; k++) {
      switch (this.ruleOf[k]) {
        case LAST:
          source[k] = newest;
          break;
        case LAST_NON_NULL: {
          let i = newest;
          while (i > 0 && isNull(batches[i]!, k, rows[i]!)) i--;
          // None non-null: the newest version's null.
          source[k] = i === 0 && isNull(batches[0]!, k, rows[0]!) ? newest : i;
          break;
        }
        case LAST_NON_NULL_STRICT:
          for (let i = 0; i < n; i++) if (isNull(batches[i]!, k, rows[i]!)) return false;
          source[k] = newest;
          break;
        case CHOOSE: {
          // The version whose value the aggregator kept (none non-null: the newest version's null).
          const a = this.aggregators[k]!;
          a.reset();
          let acc: Value = null;
          let from = newest;
          for (let i = 0; i < n; i++) {
            if (isNull(batches[i]!, k, rows[i]!)) continue;
            const input = this.value(batches[i]!, k, rows[i]!);
            const kept: Value = acc === null ? input : a.agg(acc, input);
            if (!Object.is(kept, acc)) {
              acc = kept;
              from = i;
            }
          }
          source[k] = from;
          break;
        }
        default: {
          const a = this.aggregators[k]!;
          a.reset();
          let acc: Value = null;
          for (let i = 0; i < n; i++) acc = a.agg(acc, this.value(batches[i]!, k, rows[i]!));
          this.values[k] = acc;
          source[k] = COMPUTED;
        }
      }
    }
    return true;
  }
}

/** Whether version (a, ra) has a larger sequence number than (b, rb), compared as two words (high signed, low unsigned). */
function newerSequence(a: FoldBatch, ra: number, b: FoldBatch, rb: number): boolean {
  const ha = a.seqWords[2 * ra + 1]!;
  const hb = b.seqWords[2 * rb + 1]!;
  if (ha !== hb) return ha > hb;
  return a.seqWords[2 * ra]! >>> 0 > b.seqWords[2 * rb]! >>> 0;
}
