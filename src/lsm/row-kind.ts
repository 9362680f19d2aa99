/**
 * Row kinds of primary-key tables — Paimon's RowKind: +I insert (0), -U update-before (1), +U update-after (2),
 * -D delete (3). A row comes in with one of them and is stored with it (`_VALUE_KIND`); -U and -D retract a key's
 * earlier version, +I and +U add one.
 *
 * On the way in and on the way out (Arrow batches for consumers) the kind travels in the column `_row_kind`, a string
 * "+I" / "-U" / "+U" / "-D" — the name and form pypaimon's streaming reads use — so a row is an ordinary object with
 * one more field. A primary-key table cannot have a column of that name.
 */
import { dataInvalid, type LakeError } from "../errors.ts";
import { RowKind } from "../format/binary-row.ts";

export { RowKind };

/** The column (and incoming field) that carries a row's kind. */
export const ROW_KIND_COLUMN = "_row_kind";

const NAMES = ["+I", "-U", "+U", "-D"] as const;
export type RowKindName = (typeof NAMES)[number];

/** "+I" for 0 and so on. */
export function rowKindName(kind: RowKind): RowKindName {
  return NAMES[kind]!;
}

/** The kind a field value names ("+I", "-U", "+U", "-D"), or null when it names none. */
export function parseRowKind(v: unknown): RowKind | null {
  if (typeof v !== "string") return null;
  const i = (NAMES as readonly string[]).indexOf(v);
  return i < 0 ? null : (i as RowKind);
}

/** -U and -D: rows that take a key's earlier version back. */
export function isRetract(kind: number): boolean {
  return kind === RowKind.UPDATE_BEFORE || kind === RowKind.DELETE;
}

/**
 * The error for a row that names a kind on a table without a primary key: an append table keeps every row it is
 * given, so a -D or -U could only be stored as data — refused (`context.reason` = `row-kind-on-append-table`).
 */
export function rowKindOnAppendTable(table: string): LakeError {
  return dataInvalid(`${ROW_KIND_COLUMN} is for primary-key tables: ${table} has no primary key (its rows are appended as they come; leave ${ROW_KIND_COLUMN} out)`, {
    column: ROW_KIND_COLUMN,
    reason: "row-kind-on-append-table",
  });
}
