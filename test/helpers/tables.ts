/**
 * Test helpers: temporary warehouses, table creation from SQL column text, and writing JSON-rendered rows through
 * natslake's batch writer.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseColumnList, type DataField } from "../../src/format/data-types.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import type { Table } from "../../src/table/table.ts";
import { BatchWriter, type OverwriteSpec } from "../../src/write/batch-writer.ts";
import assert from "node:assert/strict";
import { planRead, readColumns, readPlanRows, readRows, type ReadSpec } from "../../src/scan/read.ts";
import { planScan } from "../../src/scan/plan.ts";
import { toCanonical, toJsonValue } from "../../src/format/values.ts";

export function tempDir(prefix = "natslake-test-"): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

export async function createTable(
  warehouse: string,
  name: string,
  columns: string,
  opts: { partitionKeys?: string[]; options?: Record<string, string> } = {},
): Promise<Table> {
  return new Catalog(warehouse).createTable(parseIdentifier(name), {
    columns: parseColumnList(columns),
    partitionKeys: opts.partitionKeys ?? [],
    options: opts.options ?? {},
  });
}

export async function writeRows(table: Table, rows: Array<Record<string, unknown>>, overwrite?: OverwriteSpec): Promise<number | null> {
  const w = await BatchWriter.open(table, { overwrite });
  await w.write(rows);
  const res = await w.commit();
  return res.snapshot?.id ?? null;
}

/** What a row should read back as: the input normalised through the table's types, rendered as JSON. */
export function expectedJson(table: Table, row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of table.schema.fields) out[f.name] = toJsonValue(f.type, toCanonical(f.type, row[f.name], f.name));
  return out;
}

/** natslake's own read, rendered as JSON like the Python oracle renders (in the schema of the read: see `planRead`). */
export async function readJson(table: Table, spec: ReadSpec = {}): Promise<Array<Record<string, unknown>>> {
  return (await readJsonWithColumns(table, spec)).rows;
}

/** `readJson` with the columns the read gave (`readColumns`), in order. */
export async function readJsonWithColumns(table: Table, spec: ReadSpec = {}): Promise<{ columns: DataField[]; rows: Array<Record<string, unknown>> }> {
  const plan = await planRead(table, spec);
  const columns = readColumns(table, plan, spec.projection);
  const rows: Array<Record<string, unknown>> = [];
  for await (const r of readPlanRows(table, plan, spec)) rows.push(Object.fromEntries(columns.map((f) => [f.name, toJsonValue(f.type, r[f.name] ?? null)])));
  return { columns, rows };
}

/** Order-insensitive comparison key for JSON rows. */
export const sortRows = (rows: Array<Record<string, unknown>>): Array<Record<string, unknown>> =>
  [...rows].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : JSON.stringify(a) > JSON.stringify(b) ? 1 : 0));

export async function reopen(warehouse: string, name: string): Promise<Table> {
  return new Catalog(warehouse).getTable(parseIdentifier(name));
}

/**
 * The ids of a table read bucket by bucket, asserting exactly once (no id twice) and, per bucket, publish order: ids
 * below `orderedBelow` (all by default — e.g. the producer client's, not the raw publishers') come back increasing.
 */
export async function idsOnceInBucketOrder(t: Table, orderedBelow = Infinity): Promise<Set<number>> {
  const seen = new Set<number>();
  for (const split of (await planScan(t)).splits) {
    let last = -1;
    for await (const row of readRows(t, { buckets: [split.bucket] })) {
      const id = Number(row["id"]);
      assert.ok(!seen.has(id), `id ${id} appears twice`);
      seen.add(id);
      if (id < orderedBelow) {
        assert.ok(id > last, `bucket ${split.bucket}: id ${id} after ${last} breaks publish order`);
        last = id;
      }
    }
  }
  return seen;
}
