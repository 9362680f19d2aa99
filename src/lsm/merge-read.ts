/**
 * What a merge-on-read of a primary-key table needs from the table: whether natslake can merge it (the deduplicate
 * engine, with or without a `sequence.field` and `ignore-delete`; the other engines and deletion vectors are refused
 * by name, never read into rows that would be wrong), and which columns the merge decodes besides the wanted ones.
 * The merge itself is src/lsm/merge-reader.ts.
 */
import { ErrorKind, LakeError } from "../errors.ts";
import type { DataField } from "../format/data-types.ts";
import type { Table } from "../table/table.ts";
import { keyFields, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "./key-value-fields.ts";
import { sequenceFieldSpec } from "./merge-order.ts";

/** Throws Unsupported, naming the option, when a primary-key table needs more than the deduplicate merge. */
export function checkMergeReadable(table: Table): void {
  const o = table.options;
  const engine = o.get("merge-engine") ?? "deduplicate";
  const refuse = (why: string): never => {
    throw new LakeError(ErrorKind.Unsupported, `${table.name} has a primary key and ${why}: natslake reads primary-key tables with the deduplicate merge engine only`);
  };
  if (engine !== "deduplicate") refuse(`merge-engine = ${engine}`);
  if (o.bool("deletion-vectors.enabled")) refuse("deletion vectors enabled");
}

/** The fields a merge decodes: the wanted ones, then the missing key and `sequence.field` fields, then the system fields. */
export function mergeReadFields(table: Table, wanted: readonly DataField[]): DataField[] {
  const out = [...wanted];
  const needed = [...keyFields(table.schema), ...(sequenceFieldSpec(table.schema)?.fields ?? [])];
  for (const f of needed) if (!out.some((x) => x.name === f.name)) out.push(f);
  return [...out, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD];
}

/** `ignore-delete` as Paimon reads it (with its deduplicate-specific fallback key). */
export function ignoreDeleteOf(table: Table): boolean {
  return table.options.bool("ignore-delete") || table.options.bool("deduplicate.ignore-delete");
}
