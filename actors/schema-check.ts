/**
 * Rows naming a column the actor's schema lacks are bad input — unless the table has a newer schema that has it (a
 * column was just added and this node has not restarted the table's services on it yet; it does within a table
 * scan). Dead-lettering those rows would lose them; instead the actor fails and its supervisor restarts it from the
 * committed offset until the node moves the table onto the new schema.
 */
import { ErrorKind, LakeError } from "../src/errors.ts";
import type { Table } from "../src/table/table.ts";

const UNKNOWN_COLUMN = /^unknown column '/;

/** Throws a retryable error when any of `reasons` is an unknown column and `table` has a newer schema on disk. */
export async function failIfSchemaMovedOn(table: Table, reasons: Iterable<string>): Promise<void> {
  let unknownColumn = false;
  for (const r of reasons) if (UNKNOWN_COLUMN.test(r)) unknownColumn = true;
  if (!unknownColumn) return;
  const latest = await table.schemas.latest();
  if (latest !== null && latest.id > table.schema.id)
    throw new LakeError(ErrorKind.Conflict, `${table.name}: rows name columns of schema ${latest.id}, this actor runs schema ${table.schema.id}; waiting for the node to restart it on the new schema`, {
      retryable: true,
    });
}
