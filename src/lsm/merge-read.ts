/**
 * What a merge-on-read of a primary-key table needs from the table: whether natslake can merge it (the engines
 * src/lsm/merge-functions/merge-engine.ts merges, with or without a `sequence.field` and `ignore-delete`; other
 * engines and their options natslake does not merge are refused by name, never read into rows that would be wrong;
 * deletion vectors are refused where they are not applied), and which columns the merge decodes besides the wanted
 * ones. The merge itself is
 * src/lsm/merge-reader.ts.
 */
import { ErrorKind, LakeError } from "../errors.ts";
import type { DataField } from "../format/data-types.ts";
import { refuseDeletionVectors } from "../table/deletion-vectors.ts";
import type { Table } from "../table/table.ts";
import { keyFields, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "./key-value-fields.ts";
import { sequenceFieldSpec } from "./merge-order.ts";
import { ignoreDeleteOf as ignoreDeleteOption, mergeEngineOf } from "./merge-functions/merge-engine.ts";
import type { MergeEngine } from "./merge-functions/merge-function.ts";

/**
 * What merges a table's files: a read of a snapshot's rows (which applies the table's deletion vectors, see
 * src/scan/read.ts), a point lookup, a compaction. Only a read takes tables with deletion vectors: a lookup would
 * have to apply them too, and a compaction maintain them (look each key up in the levels above, as Java's writer does).
 */
export type MergeUse = "read" | "lookup" | "compaction";

/** The table's merge engine; Unsupported, naming the option, when natslake cannot merge the table for `use`. */
export function checkMergeReadable(table: Table, use: MergeUse = "read"): MergeEngine {
  if (use !== "read") refuseDeletionVectors(table, use);
  try {
    return mergeEngineOf(table.schema);
  } catch (e) {
    if (e instanceof LakeError && e.kind === ErrorKind.Unsupported) throw new LakeError(ErrorKind.Unsupported, `${table.name} has a primary key and ${e.message}`);
    throw e;
  }
}

/** The fields a merge decodes: the wanted ones, then the missing key and `sequence.field` fields, then the system fields. */
export function mergeReadFields(table: Table, wanted: readonly DataField[]): DataField[] {
  const out = [...wanted];
  const needed = [...keyFields(table.schema), ...(sequenceFieldSpec(table.schema)?.fields ?? [])];
  for (const f of needed) if (!out.some((x) => x.name === f.name)) out.push(f);
  return [...out, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD];
}

/** `ignore-delete` as Paimon reads it (with its engine-specific fallback keys). */
export function ignoreDeleteOf(table: Table): boolean {
  return ignoreDeleteOption(table.options);
}
