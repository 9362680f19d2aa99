/**
 * Schema evolution: the next `schema-N` of a table from changes to the current one, by Paimon's rules.
 *
 * Only adding columns is supported so far — what services need when their rows grow a field. Paimon's rules for it
 * (SchemaManager's AddColumn): the new column gets the next field id (ids are never reused, so files written before
 * still map to the schema by id and read the new column as null), it goes last, and it must be nullable, since the
 * rows already written have no value for it.
 */
import { dataInvalid } from "../errors.ts";
import { checkNewColumns } from "../names.ts";
import { assignFieldIds, type DataType } from "./data-types.ts";
import { validateTableSchema, type TableSchema } from "./schema.ts";

export interface AddColumn {
  name: string;
  type: DataType;
  description?: string;
}

/** Schema `base.id + 1`: `base` with `columns` appended. Throws DataInvalid for a change Paimon refuses. */
export function withAddedColumns(base: TableSchema, columns: readonly AddColumn[], now = Date.now()): TableSchema {
  if (columns.length === 0) throw dataInvalid("nothing to change: name at least one column to add");
  for (const c of columns) {
    if (base.fields.some((f) => f.name === c.name)) throw dataInvalid(`column '${c.name}' already exists`);
    if (!c.type.nullable) throw dataInvalid(`column '${c.name}' cannot be added as NOT NULL: the rows already written have no value for it`);
  }
  checkNewColumns(
    columns.map((c) => c.name),
    base.fields.map((f) => f.name),
  );
  const { fields: added, highestFieldId } = assignFieldIds(
    columns.map((c) => ({ id: -1, name: c.name, type: c.type, ...(c.description !== undefined ? { description: c.description } : {}) })),
    base.highestFieldId + 1,
  );
  const next: TableSchema = { ...base, id: base.id + 1, fields: [...base.fields, ...added], highestFieldId, timeMillis: now };
  validateTableSchema(next);
  return next;
}
