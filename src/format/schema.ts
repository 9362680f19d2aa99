/**
 * TableSchema: the content of `schema/schema-N` (fields with ids, partition and primary keys, options), its JSON
 * wire form as Java writes it, and the structural checks Java's `SchemaValidation` applies when it loads a table —
 * run here at create time so a table natslake creates is one Java can open.
 */
import { dataInvalid } from "../errors.ts";
import { intField, listField, objectField, stringsField } from "./wire/fields.ts";
import { checkNewColumns } from "../names.ts";
import { TableOptions, validateCreateOptions } from "../options.ts";
import {
  assignFieldIds,
  type DataField,
  type DataType,
  fieldFromJson,
  type FieldJson,
  fieldToJson,
  highestFieldId,
  isNestedType,
  withNullable,
} from "./data-types.ts";

export interface TableSchema {
  version: number;
  id: number;
  fields: DataField[];
  highestFieldId: number;
  partitionKeys: string[];
  primaryKeys: string[];
  options: Record<string, string>;
  comment?: string;
  timeMillis: number;
}

export interface SchemaInput {
  columns: Array<{ name: string; type: DataType; description?: string }>;
  partitionKeys?: string[];
  primaryKeys?: string[];
  options?: Record<string, string>;
  comment?: string;
}

const SYSTEM_NAMES = new Set(["_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"]);

/**
 * Builds schema 0 of a new table: checks its column names (src/names.ts), assigns field ids, normalises primary keys
 * to NOT NULL, fills defaults.
 */
export function newTableSchema(input: SchemaInput, now = Date.now()): TableSchema {
  checkNewColumns(input.columns.map((c) => c.name));
  const partitionKeys = input.partitionKeys ?? [];
  const primaryKeys = input.primaryKeys ?? [];
  const options: Record<string, string> = { ...input.options };
  validateCreateOptions(options);
  // Always write `bucket` and `file.format`: old readers infer other defaults from a missing key.
  if (options["bucket"] === undefined) options["bucket"] = "-1";
  if (options["file.format"] === undefined) options["file.format"] = "parquet";
  const pkNullable = (options["primary-key.nullable"] ?? "false") === "true";
  const columns = input.columns.map((c) => {
    const f: DataField = { id: -1, name: c.name, type: primaryKeys.includes(c.name) && !pkNullable ? withNullable(c.type, false) : c.type };
    if (c.description !== undefined) f.description = c.description;
    return f;
  });
  const { fields, highestFieldId: hi } = assignFieldIds(columns);
  const schema: TableSchema = { version: 3, id: 0, fields, highestFieldId: hi, partitionKeys, primaryKeys, options, timeMillis: now };
  if (input.comment !== undefined) schema.comment = input.comment;
  validateTableSchema(schema);
  return schema;
}

/** The checks Java applies when loading a table, so that what natslake creates always opens in Java. */
export function validateTableSchema(schema: TableSchema): void {
  const names = schema.fields.map((f) => f.name);
  const seen = new Set<string>();
  if (schema.fields.length === 0) throw dataInvalid("a table needs at least one column");
  for (const n of names) {
    if (n.trim() === "") throw dataInvalid("column names must not be empty");
    if (seen.has(n)) throw dataInvalid(`column '${n}' is defined twice`);
    seen.add(n);
    if (n.startsWith("_KEY_") || SYSTEM_NAMES.has(n)) throw dataInvalid(`column name '${n}' is reserved by Paimon`);
  }
  const mustExist = (what: string, keys: string[]): void => {
    for (const k of keys) if (!seen.has(k)) throw dataInvalid(`${what} '${k}' is not a column (columns: ${names.join(", ")})`);
    if (new Set(keys).size !== keys.length) throw dataInvalid(`${what}s contain a duplicate`);
  };
  mustExist("partition key", schema.partitionKeys);
  mustExist("primary key", schema.primaryKeys);
  for (const k of [...schema.partitionKeys, ...schema.primaryKeys]) {
    if (isNestedType(fieldByName(schema, k).type)) throw dataInvalid(`key column '${k}' must have a primitive type`);
  }
  const opts = new TableOptions(schema.options);
  const bucket = opts.bucket;
  if (!(bucket === -1 || bucket === -2 || bucket > 0)) throw dataInvalid(`option 'bucket' must be -2, -1 or a positive number, got ${bucket}`);
  const rawBucketKey = schema.options["bucket-key"];
  if (rawBucketKey !== undefined) {
    if (/\s/.test(rawBucketKey)) throw dataInvalid(`option 'bucket-key' = '${rawBucketKey}' must not contain spaces (Paimon splits it on ',' without trimming; write 'a,b')`);
    if (bucket === -1) throw dataInvalid("option 'bucket-key' cannot be combined with 'bucket' = -1 (unaware/dynamic buckets take no bucket key)");
    const bk = opts.bucketKey;
    mustExist("bucket key", bk);
    for (const k of bk) {
      if (schema.partitionKeys.includes(k)) throw dataInvalid(`bucket key '${k}' must not be a partition key`);
      if (schema.primaryKeys.length > 0 && !schema.primaryKeys.includes(k)) throw dataInvalid(`bucket key '${k}' must be part of the primary key`);
      if (isNestedType(fieldByName(schema, k).type)) throw dataInvalid(`bucket key '${k}' must have a primitive type`);
    }
  }
  if (schema.primaryKeys.length === 0 && bucket > 0 && rawBucketKey === undefined) {
    throw dataInvalid(`an append table with 'bucket' = ${bucket} needs a 'bucket-key' option (the columns rows are hashed on)`);
  }
  if (schema.primaryKeys.length > 0) {
    const trimmed = schema.primaryKeys.filter((k) => !schema.partitionKeys.includes(k));
    if (trimmed.length === 0) throw dataInvalid("the primary key must contain columns besides the partition keys");
  }
  const seq = schema.options["sequence.field"];
  if (seq !== undefined) mustExist("sequence field", seq.split(","));
}

export function fieldByName(schema: TableSchema, name: string): DataField {
  const f = schema.fields.find((x) => x.name === name);
  if (f === undefined) throw dataInvalid(`no column '${name}'`);
  return f;
}

/** Bucket key columns: `bucket-key`, else the trimmed primary key (primary key minus partition keys). */
export function bucketKeys(schema: TableSchema): string[] {
  const bk = new TableOptions(schema.options).bucketKey;
  if (bk.length > 0) return bk;
  return schema.primaryKeys.filter((k) => !schema.partitionKeys.includes(k));
}

export function trimmedPrimaryKeys(schema: TableSchema): string[] {
  return schema.primaryKeys.filter((k) => !schema.partitionKeys.includes(k));
}

// ---------------------------------------------------------------------------------------------------------------
// Wire form

export interface TableSchemaJson {
  version?: number;
  id: number;
  fields: FieldJson[];
  highestFieldId: number;
  partitionKeys: string[];
  primaryKeys: string[];
  options: Record<string, string>;
  comment?: string | null;
  timeMillis?: number;
}

export function schemaToJson(s: TableSchema): TableSchemaJson {
  const out: TableSchemaJson = {
    version: s.version,
    id: s.id,
    fields: s.fields.map(fieldToJson),
    highestFieldId: s.highestFieldId,
    partitionKeys: s.partitionKeys,
    primaryKeys: s.primaryKeys,
    options: s.options,
  };
  if (s.comment !== undefined) out.comment = s.comment;
  out.timeMillis = s.timeMillis;
  return out;
}

export function schemaFromJson(json: unknown): TableSchema {
  if (json === null || typeof json !== "object" || Array.isArray(json)) throw dataInvalid("schema file is not a JSON object");
  const o = json as Record<string, unknown>;
  if (o["fields"] === undefined || o["id"] === undefined) throw dataInvalid("schema file lacks 'id' or 'fields'");
  const fields = listField(o["fields"], "schema 'fields'").map(fieldFromJson);
  const int = (k: string): number => intField(o[k], `schema '${k}'`);
  const version = o["version"] === undefined ? 1 : int("version");
  const options: Record<string, string> = {};
  for (const [k, v] of Object.entries(o["options"] === undefined ? {} : objectField(o["options"], "schema 'options'"))) options[k] = String(v);
  // Compatibility defaults both Java and pypaimon apply to old schema versions.
  if (version <= 1 && options["bucket"] === undefined) options["bucket"] = "1";
  if (version <= 2 && options["file.format"] === undefined) options["file.format"] = "orc";
  const s: TableSchema = {
    version,
    id: int("id"),
    fields,
    highestFieldId: o["highestFieldId"] === undefined ? highestFieldId(fields) : int("highestFieldId"),
    partitionKeys: o["partitionKeys"] === undefined ? [] : stringsField(o["partitionKeys"], "schema 'partitionKeys'"),
    primaryKeys: o["primaryKeys"] === undefined ? [] : stringsField(o["primaryKeys"], "schema 'primaryKeys'"),
    options,
    timeMillis: o["timeMillis"] === undefined ? 0 : int("timeMillis"),
  };
  if (typeof o["comment"] === "string") s.comment = o["comment"];
  return s;
}
