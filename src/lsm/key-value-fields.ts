/**
 * The physical columns of a primary-key table's data and changelog files, as Java Paimon writes them
 * (KeyValue.createKeyValueFields): `_KEY_<k>` for each trimmed primary-key field (the primary key minus the partition
 * fields, in key order), then `_SEQUENCE_NUMBER` BIGINT NOT NULL, then `_VALUE_KIND` TINYINT NOT NULL, then every
 * column of the table (key and partition columns included). Field ids: a key field's is its column's id + 1073741823
 * (Integer.MAX_VALUE / 2), the sequence number's Integer.MAX_VALUE − 1, the value kind's Integer.MAX_VALUE − 2.
 * Readers resolve the columns by name; the ids go into the Parquet schema as for every other column.
 */
import { parseColumnList, type DataField } from "../format/data-types.ts";
import type { TableSchema } from "../format/schema.ts";
import { trimmedPrimaryKeys } from "../format/schema.ts";

const [SEQ, KIND] = parseColumnList("_SEQUENCE_NUMBER BIGINT NOT NULL, _VALUE_KIND TINYINT NOT NULL");
export const SEQUENCE_NUMBER_FIELD: DataField = { id: 2147483646, name: SEQ!.name, type: SEQ!.type };
export const VALUE_KIND_FIELD: DataField = { id: 2147483645, name: KIND!.name, type: KIND!.type };

/**
 * The kind column of a write buffer (not of a file): nullable, a null standing for +I — so rows written without a
 * kind (upserts) go into the buffer by the builders' fast paths, with nothing per row for their kind.
 */
export const BUFFER_KIND_FIELD: DataField = { ...VALUE_KIND_FIELD, type: { ...VALUE_KIND_FIELD.type, nullable: true } };

export const KEY_FIELD_PREFIX = "_KEY_";
/** Integer.MAX_VALUE / 2: a key field's id is its column's id plus this. */
export const KEY_FIELD_ID_START = 1073741823;

/** Whether `f` is the sequence number or the value kind (read from a data file by name: no table schema has them). */
export function isSystemField(f: DataField): boolean {
  return f.id === SEQUENCE_NUMBER_FIELD.id || f.id === VALUE_KIND_FIELD.id;
}

/** The trimmed primary-key fields of `schema`, in key order: what a file's keys (and minKey/maxKey) hold. */
export function keyFields(schema: TableSchema): DataField[] {
  return trimmedPrimaryKeys(schema).map((k) => {
    const f = schema.fields.find((x) => x.name === k);
    if (f === undefined) throw new Error(`primary key ${k} is not a column of schema ${schema.id}`);
    return f;
  });
}

/** The `_KEY_<k>` copy of a key field: same type (key columns are NOT NULL in the table schema already). */
export function keyCopyField(f: DataField): DataField {
  return { id: f.id + KEY_FIELD_ID_START, name: KEY_FIELD_PREFIX + f.name, type: f.type };
}

/** Every column of a primary-key file, in Java's order. */
export function keyValueFields(schema: TableSchema): DataField[] {
  return [...keyFields(schema).map(keyCopyField), SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD, ...schema.fields];
}
