/**
 * Finding a column by name the way Java Paimon does: an exact match first, then a case-insensitive one.
 */
import type * as arrow from "apache-arrow";

/** Index of `name` among `names`: exact match first, then case-insensitive (Java's fallback). −1 if absent. */
export function findField(names: readonly string[], name: string): number {
  const exact = names.indexOf(name);
  if (exact >= 0) return exact;
  const lower = name.toLowerCase();
  return names.findIndex((n) => n.toLowerCase() === lower);
}

/** Column `name` of a batch as one Data chunk (a RecordBatch column is always a single chunk). */
export function batchColumn(batch: arrow.RecordBatch, name: string): arrow.Data | undefined {
  const k = findField(
    batch.schema.fields.map((f) => f.name),
    name,
  );
  return k < 0 ? undefined : batch.data.children[k];
}
