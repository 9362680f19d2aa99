/**
 * Paimon's order of primary keys: field by field in key order, nulls first (Java's generated RecordComparator with
 * `nullIsLast = false`), each field by its type — strings as unsigned UTF-8 bytes (Java `BinaryString.compareTo`),
 * binaries as unsigned bytes, numbers, decimals and timestamps by value, FLOAT/DOUBLE as Java's `Double.compare`.
 *
 * Every sorted run, every file's minKey/maxKey and every merge of a bucket depends on this order: a key sorted by JS
 * UTF-16 `<` instead would put some strings in another place than Java's reader expects, and a merge would then
 * miss versions silently. Keys here are arrays of canonical values (src/format/values.ts), one per trimmed key field.
 */
import { compareValues } from "../codec/stats.ts";
import { deserializeBinaryRow } from "../format/binary-row.ts";
import type { DataType } from "../format/data-types.ts";
import type { Value } from "../format/values.ts";

/** Negative, zero or positive as `a` sorts before, with or after `b`. */
export type KeyComparator = (a: readonly Value[], b: readonly Value[]) => number;

/** The comparator of keys whose fields have these types (in key order). */
export function keyComparator(types: readonly DataType[]): KeyComparator {
  const n = types.length;
  return (a, b) => {
    for (let k = 0; k < n; k++) {
      const x = a[k] ?? null;
      const y = b[k] ?? null;
      if (x === null || y === null) {
        if (x !== y) return x === null ? -1 : 1;
        continue;
      }
      const c = compareValues(types[k]!, x, y);
      if (c !== 0) return c;
    }
    return 0;
  };
}

/**
 * Keys as DataFileMeta stores them (`minKey`/`maxKey`: a framed BinaryRow of the trimmed key fields), decoded once
 * per distinct byte array: compaction planning compares the same few keys many times.
 */
export class SerializedKeys {
  private readonly cache = new WeakMap<Uint8Array, Value[]>();
  readonly compare: KeyComparator;

  constructor(readonly types: readonly DataType[]) {
    this.compare = keyComparator(types);
  }

  decode(framed: Uint8Array): Value[] {
    let v = this.cache.get(framed);
    if (v === undefined) {
      v = deserializeBinaryRow(this.types, framed);
      this.cache.set(framed, v);
    }
    return v;
  }

  /** Compares two framed keys. */
  compareSerialized(a: Uint8Array, b: Uint8Array): number {
    return this.compare(this.decode(a), this.decode(b));
  }
}
