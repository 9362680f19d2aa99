/**
 * `natslake.ingest.format`: how the cluster's router reads what publishers send to a table's bare subject
 * (`<p>.in.<db>.<table>`). `rows` (the default): rows as JSON or msgpack, a primary-key table's rows with their
 * `_row_kind`. `debezium-json`: each message is one Debezium change event (debezium-json.ts), which only a table with
 * a primary key can apply — an update or a delete names its row by key.
 *
 * The producer client publishes rows to the bucket subjects and never goes through this: the option concerns the
 * bare subject only.
 */
import { dataInvalid } from "../errors.ts";
import type { TableSchema } from "../format/schema.ts";

export const INGEST_FORMAT_OPTION = "natslake.ingest.format";
export const INGEST_FORMATS = ["rows", "debezium-json"] as const;
export type IngestFormat = (typeof INGEST_FORMATS)[number];

/**
 * The table's ingest format; DataInvalid when the option names none (a table written by another engine is not
 * checked at create) or asks for Debezium events on a table without a primary key.
 */
export function ingestFormatOf(table: string, schema: TableSchema): IngestFormat {
  const raw = schema.options[INGEST_FORMAT_OPTION] ?? "rows";
  if (!(INGEST_FORMATS as readonly string[]).includes(raw)) {
    throw dataInvalid(`${table}: option '${INGEST_FORMAT_OPTION}' = '${raw}': expected one of ${INGEST_FORMATS.join(", ")}`, { option: INGEST_FORMAT_OPTION });
  }
  const format = raw as IngestFormat;
  if (format === "debezium-json" && schema.primaryKeys.length === 0) {
    throw dataInvalid(
      `${table}: option '${INGEST_FORMAT_OPTION}' = 'debezium-json' needs a primary key: Debezium's updates and deletes name their rows by key (create the table with a primary key)`,
      { option: INGEST_FORMAT_OPTION },
    );
  }
  return format;
}
