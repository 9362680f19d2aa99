/**
 * The order of a key's versions, as Paimon merges them: by the user's `sequence.field` columns when the table has them
 * (compared field by field, nulls first, reversed for `sequence.field.sort-order = descending` — Java's
 * UserDefinedSeqComparator), then by the system sequence number (write order), then retractions before additions
 * (Java's SortMergeReaderWithMinHeap, for versions with equal sequence numbers from different files). The last
 * version in this order is the newest: deduplicate keeps it.
 */
import { compareValues } from "../codec/stats.ts";
import { dataInvalid } from "../errors.ts";
import type { DataField } from "../format/data-types.ts";
import type { TableSchema } from "../format/schema.ts";
import { TableOptions } from "../options.ts";
import type { Value } from "../format/values.ts";

/** The table's `sequence.field` columns (in the option's order) and whether they order ascending. */
export interface SequenceFieldSpec {
  fields: DataField[];
  ascending: boolean;
}

/** The `sequence.field` of a schema, or null when it has none; unknown columns are DataInvalid. */
export function sequenceFieldSpec(schema: TableSchema): SequenceFieldSpec | null {
  const options = new TableOptions(schema.options);
  const raw = options.get("sequence.field");
  if (raw === undefined || raw.trim() === "") return null;
  const fields = raw.split(",").map((name) => {
    const f = schema.fields.find((x) => x.name === name.trim());
    if (f === undefined) throw dataInvalid(`sequence.field '${name.trim()}' is not a column (columns: ${schema.fields.map((x) => x.name).join(", ")})`);
    return f;
  });
  const order = (options.get("sequence.field.sort-order") ?? "ascending").trim().toLowerCase();
  return { fields, ascending: order !== "descending" };
}

/** Compares two versions' `sequence.field` values (arrays in the spec's field order): nulls first, then by value. */
export function sequenceValueComparator(spec: SequenceFieldSpec): (a: readonly Value[], b: readonly Value[]) => number {
  const types = spec.fields.map((f) => f.type);
  const sign = spec.ascending ? 1 : -1;
  return (a, b) => {
    for (let k = 0; k < types.length; k++) {
      const x = a[k] ?? null;
      const y = b[k] ?? null;
      if (x === null || y === null) {
        if (x !== y) return x === null ? -1 : 1;
        continue;
      }
      const c = compareValues(types[k]!, x, y);
      if (c !== 0) return sign * c;
    }
    return 0;
  };
}
