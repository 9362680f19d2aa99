/**
 * What a table must be for natslake to write it — no deletion vectors, and a primary-key table's rules below —, checked when it is created (so a table nothing here
 * can fill is never made) and when a writer opens it. Java's SchemaValidation rules that concern primary keys are
 * kept as Java words them where natslake follows them; what natslake does not write (yet) is refused by name with
 * what to do instead.
 */
import { dataInvalid, ErrorKind, LakeError } from "../errors.ts";
import { isNestedType, isStringType, typeToSql } from "../format/data-types.ts";
import type { TableSchema } from "../format/schema.ts";
import { TableOptions } from "../options.ts";
import { readLsmCompactionOptions } from "./compaction-options.ts";
import { changelogProducerOf, rowDeduplicateOf } from "./lookup-changelog.ts";
import { ROW_KIND_COLUMN } from "./row-kind.ts";
import { validateMergeEngine } from "./merge-functions/merge-engine.ts";

const unsupported = (why: string): LakeError => new LakeError(ErrorKind.Unsupported, why);

/**
 * Why natslake writes no table with `deletion-vectors.enabled` (primary key or not), for every refusal to say the same:
 * Java's writer of such a table looks each new key up in the levels above when it compacts and marks the older row
 * deleted in the vector of its file (an append table's deletes and updates mark rows the same way); natslake's writers
 * and compactions keep no vectors, so a file they rewrote would bring deleted rows back.
 */
export const DELETION_VECTORS_NOT_WRITTEN =
  "deletion-vectors.enabled = true: natslake does not write tables with deletion vectors (its writers and compactions do not maintain them: each key written would have to be looked up in the levels above and its older row marked deleted); create the table without deletion vectors — natslake merges a primary-key table's levels on read — or write this one with Java Paimon (natslake reads it)";

/** Throws DataInvalid (a rule Paimon has) or Unsupported (what natslake does not write) for any table's schema. */
export function validateWritableSchema(table: string, schema: TableSchema): void {
  if (new TableOptions(schema.options).bool("deletion-vectors.enabled")) throw unsupported(`${table}: ${DELETION_VECTORS_NOT_WRITTEN}`);
  validateWritableKeyedSchema(table, schema);
}

/** Throws DataInvalid (a rule Paimon has) or Unsupported (what natslake does not write) for a primary-key schema. */
export function validateWritableKeyedSchema(table: string, schema: TableSchema): void {
  if (schema.primaryKeys.length === 0) return;
  const options = new TableOptions(schema.options);
  const bucket = options.bucket;
  if (bucket === -1) throw unsupported(`${table}: natslake writes primary-key tables with a fixed bucket count; set the option bucket = N (N > 0) — dynamic buckets (bucket = -1, Paimon's default) keep a hash index natslake does not maintain`);
  if (bucket === -2) throw unsupported(`${table}: postpone buckets (bucket = -2) need Paimon's own rescaling job; set the option bucket = N (N > 0)`);
  const missingPartitions = schema.partitionKeys.filter((k) => !schema.primaryKeys.includes(k));
  if (missingPartitions.length > 0) {
    throw dataInvalid(`${table}: the primary key (${schema.primaryKeys.join(", ")}) must contain every partition field (${schema.partitionKeys.join(", ")}); a key that moves between partitions needs dynamic buckets, which natslake does not write`);
  }
  if (schema.fields.some((f) => f.name === ROW_KIND_COLUMN)) throw dataInvalid(`${table}: column name '${ROW_KIND_COLUMN}' is reserved in primary-key tables (it carries each row's kind)`);
  // The merge engine's options: Java's rules (it applies some only at a first merge), and what natslake does not merge.
  try {
    validateMergeEngine(schema);
  } catch (e) {
    if (e instanceof LakeError) throw new LakeError(e.kind, `${table}: ${e.message}`, { context: e.context });
    throw e;
  }
  const producer = changelogProducerOf(options);
  if (producer === "full-compaction") {
    throw unsupported(
      `${table}: changelog-producer = full-compaction is not written by natslake: its changelog comes only from full compactions, which natslake's writers do not schedule (full-compaction.delta-commits is Flink's); use changelog-producer = lookup, whose changelog comes with every compaction of level 0`,
    );
  }
  if (producer !== "none" && producer !== "input" && producer !== "lookup") throw unsupported(`${table}: changelog-producer = ${producer} is not written by natslake (none, input and lookup are)`);
  // The fields row-deduplicate leaves out must be the table's.
  try {
    rowDeduplicateOf(schema, options);
  } catch (e) {
    if (e instanceof LakeError) throw new LakeError(e.kind, `${table}: ${e.message}`, { context: e.context });
    throw e;
  }
  if (options.bool("data-file.thin-mode")) throw unsupported(`${table}: data-file.thin-mode = true is not written by natslake (its files keep the _KEY_ columns pypaimon needs)`);
  // The LSM compaction options (num-levels, triggers, ratios, off-peak hours, …): a value Java would only trip over
  // when a writer restores a bucket is refused now, naming the option.
  readLsmCompactionOptions(options);
  const seq = options.get("sequence.field");
  if (seq !== undefined) {
    const names = seq.split(",");
    const seen = new Set<string>();
    for (const name of names) {
      const f = schema.fields.find((x) => x.name === name);
      if (f === undefined) throw dataInvalid(`Sequence field: '${name}' can not be found in table schema.`);
      if (seen.has(name)) throw dataInvalid(`Sequence field '${name}' is defined repeatedly.`);
      seen.add(name);
      if (isNestedType(f.type)) throw dataInvalid(`sequence field '${name}' must have an orderable (primitive) type`);
    }
  }
}

/**
 * `rowkind.field` (every table, as Java's SchemaValidation and RowKindGenerator check it): a column of the table, of a
 * string type. natslake takes it on primary-key tables only: an append table keeps every row as it comes, so a row
 * whose kind column said -D would be appended where Java refuses it.
 */
export function validateRowKindField(table: string, schema: TableSchema): void {
  const name = schema.options["rowkind.field"];
  if (name === undefined) return;
  const f = schema.fields.find((x) => x.name === name);
  if (f === undefined) throw dataInvalid(`Rowkind field: '${name}' can not be found in table schema.`, { option: "rowkind.field" });
  if (!isStringType(f.type)) throw dataInvalid(`only support string type for rowkind, but ${name} is ${typeToSql(f.type)}`, { option: "rowkind.field" });
  if (schema.primaryKeys.length === 0) throw unsupported(`${table}: rowkind.field is for primary-key tables (natslake appends an append table's rows as they come; a row kind other than +I has nowhere to go)`);
}

/** Java's rule for every table: a changelog producer needs a primary key. */
export function validateChangelogProducer(schema: TableSchema): void {
  const producer = new TableOptions(schema.options).get("changelog-producer") ?? "none";
  if (schema.primaryKeys.length === 0 && producer !== "none") throw dataInvalid("Can not set changelog-producer on table without primary keys, please define primary keys.");
}
