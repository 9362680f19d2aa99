/**
 * One key's versions folded into its survivor — the step every merge of versions shares: the merge reader's k-way
 * merge (src/lsm/merge-reader.ts, a key's versions as the heap gives them) and the point lookup's per-key fold
 * (src/scan/lookup.ts, a key's rows found by binary search in the files that hold it). Versions are put in merge
 * order (the `sequence.field`, then the sequence number, then retractions before additions; Java's
 * SortMergeReaderWithMinHeap with its UserDefinedSeqComparator), a lookup table's versions narrowed to those at level
 * 0 and the newest above (Java's LookupMergeFunction), and fed to the table's merge function.
 */
import { compareValues } from "../codec/stats.ts";
import type { Value } from "../format/values.ts";
import { lookupMergeVersions } from "./lookup-changelog.ts";
import type { SequenceFieldSpec } from "./merge-order.ts";
import type { MergeFunction, MergeResult } from "./merge-functions/merge-function.ts";
import { isRetract } from "./row-kind.ts";

/** What merge order reads of a version `V`. */
export interface VersionOrderAccess<V> {
  /** The value of the `sequence.field` column `k` (in the option's order). */
  sequenceValue(v: V, k: number): Value;
  sequence(v: V): bigint;
  kind(v: V): number;
}

/** Merge order of two versions of one key (negative: `a` merges first). */
export function versionOrder<V>(spec: SequenceFieldSpec | null, access: VersionOrderAccess<V>): (a: V, b: V) => number {
  const types = spec?.fields.map((f) => f.type) ?? [];
  const sign = spec === null || spec.ascending ? 1 : -1;
  return (a, b) => {
    for (let k = 0; k < types.length; k++) {
      const x = access.sequenceValue(a, k);
      const y = access.sequenceValue(b, k);
      // Nulls first, whatever the sort order.
      if (x === null || y === null) {
        if (x !== y) return x === null ? -1 : 1;
        continue;
      }
      const c = compareValues(types[k]!, x, y);
      if (c !== 0) return sign * c;
    }
    const sa = access.sequence(a);
    const sb = access.sequence(b);
    if (sa !== sb) return sa < sb ? -1 : 1;
    return (isRetract(access.kind(a)) ? 0 : 1) - (isRetract(access.kind(b)) ? 0 : 1);
  };
}

/**
 * Folds the versions of one key (several, in any order; the array is reordered) with `fn`: a lookup table's
 * (`lookupLevel` given: each version's LSM level) narrowed first, then sorted into merge order by `order`.
 */
export function foldKeyVersions<V>(versions: V[], order: (a: V, b: V) => number, fn: MergeFunction<V>, lookupLevel: ((v: V) => number) | null): MergeResult<V> {
  // A lookup table's newest version above level 0 holds the older ones: they are not merged again.
  const group = lookupLevel !== null ? lookupMergeVersions(versions, lookupLevel) : versions;
  // Insertion sort: a key has a handful of versions at most (one per sorted run).
  for (let i = 1; i < group.length; i++) {
    const v = group[i]!;
    let j = i - 1;
    while (j >= 0 && order(group[j]!, v) > 0) {
      group[j + 1] = group[j]!;
      j--;
    }
    group[j + 1] = v;
  }
  fn.reset();
  for (const v of group) fn.add(v);
  return fn.result();
}
