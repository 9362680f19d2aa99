/**
 * A table with a history of schema changes of every kind, for the time-travel tests (test/compat/time-travel-
 * schemas.test.ts, test/cli/time-travel-cli.test.ts): natslake adds columns (the library and `natslake table
 * alter`), pypaimon drops one, renames one and widens a type (natslake's own alter only adds), natslake writes every
 * batch and compacts them, and every snapshot gets a tag. What each read must give is worked out here from the
 * history — a model keyed by field id, as Paimon maps files to a schema — never from a reader.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { paimonAlter } from "./python.ts";
import { reopen, sortRows, writeRows } from "./tables.ts";
import { warehouseCli } from "./warehouse-cli.ts";
import { parseColumnList, parseSqlType, typeToSql } from "../../src/format/data-types.ts";
import { toCanonical, toJsonValue } from "../../src/format/values.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { createTag } from "../../src/table/tags.ts";
import { compactTable } from "../../src/maintenance/compact.ts";

export const HISTORY_TABLE = "tt.evolve";

/** A column of a schema: its field id, name and Paimon SQL type. */
export interface Column {
  id: number;
  name: string;
  sql: string;
}

const col = (id: number, name: string, sql: string): Column => ({ id, name, sql });
const S0 = [col(0, "id", "BIGINT NOT NULL"), col(1, "name", "STRING"), col(2, "qty", "INT"), col(3, "note", "STRING"), col(4, "dt", "STRING NOT NULL")];
const S1 = [...S0, col(5, "score", "DOUBLE")]; // natslake adds score
const S2 = S1.filter((c) => c.id !== 3); // pypaimon drops note
const S3 = S2.map((c) => (c.id === 1 ? { ...c, name: "label" } : c)); // pypaimon renames name → label
const S4 = S3.map((c) => (c.id === 2 ? { ...c, sql: "BIGINT" } : c)); // pypaimon widens qty INT → BIGINT
const S5 = [...S4, col(6, "note", "STRING")]; // `table alter` adds a new note: another field id than the dropped one
const S6 = [...S5, col(7, "extra", "INT")]; // natslake adds extra after the last commit: no snapshot is in schema 6

/** Schema k's columns (Paimon's rules: an added column goes last with the next id, a rename keeps id and place). */
export const SCHEMAS = [S0, S1, S2, S3, S4, S5, S6];
export const LATEST_SCHEMA = 6;
export const BATCH_ROWS = 20;
/** Batch k (of BATCH_ROWS rows) is written under schema k, as snapshot k + 1. */
export const BATCHES = 6;

/** Each snapshot: the schema it was committed under (a read of it is in that schema) and the batches it holds. */
export const SNAPSHOTS: ReadonlyArray<{ id: number; schemaId: number; batches: number }> = [
  { id: 1, schemaId: 0, batches: 1 },
  { id: 2, schemaId: 1, batches: 2 },
  { id: 3, schemaId: 2, batches: 3 },
  { id: 4, schemaId: 3, batches: 4 },
  { id: 5, schemaId: 4, batches: 5 },
  { id: 6, schemaId: 5, batches: 6 },
  { id: 7, schemaId: 5, batches: 6 }, // the compaction of 1..6, its files rewritten in schema 5
];

/** The tag made of snapshot `id`. */
export const tagOf = (id: number): string => `t-${id}`;

function valueOf(fieldId: number, i: number, batch: number): unknown {
  switch (fieldId) {
    case 0:
      return i;
    case 1:
      return i % 9 === 0 ? null : `n${i}`;
    case 2:
      return batch >= 4 ? 3_000_000_000 + i : i * 7; // beyond INT once the column is BIGINT
    case 3:
      return `old-note-${i}`;
    case 4:
      return i % 2 === 0 ? "a" : "b";
    case 5:
      return i / 4;
    case 6:
      return `new-note-${i}`;
    default:
      return null;
  }
}

const batchRows = (batch: number): Array<Record<string, unknown>> =>
  Array.from({ length: BATCH_ROWS }, (_, k) => {
    const i = batch * BATCH_ROWS + k;
    return Object.fromEntries(SCHEMAS[batch]!.map((c) => [c.name, valueOf(c.id, i, batch)]));
  });

/**
 * The rows of batches `from`..`to` − 1 as a read in `schema` gives them (a column by field id: a file written without
 * that id reads null), rendered like `toJsonValue`, sorted (`sortRows`).
 */
export function expectedRows(schema: readonly Column[], to: number, opts: { projection?: string[]; from?: number } = {}): Array<Record<string, unknown>> {
  const cols = opts.projection ? opts.projection.map((n) => schema.find((c) => c.name === n)!) : schema;
  const out: Array<Record<string, unknown>> = [];
  for (let b = opts.from ?? 0; b < to; b++) {
    const written = new Set(SCHEMAS[b]!.map((c) => c.id));
    for (let k = 0; k < BATCH_ROWS; k++) {
      const i = b * BATCH_ROWS + k;
      const row = cols.map((c) => {
        const type = parseSqlType(c.sql);
        return [c.name, written.has(c.id) ? toJsonValue(type, toCanonical({ ...type, nullable: true }, valueOf(c.id, i, b), c.name)) : null];
      });
      out.push(Object.fromEntries(row));
    }
  }
  return sortRows(out);
}

/** `[name, SQL type]` of `schema`'s columns (or of `projection`, in its order). */
export const columnsOf = (schema: readonly Column[], projection?: string[]): Array<[string, string]> =>
  (projection ? projection.map((n) => schema.find((c) => c.name === n)!) : schema).map((c) => [c.name, c.sql]);

/**
 * Builds the table in `warehouse` and returns each snapshot's commit time. Batches are a few ms apart, so every
 * snapshot has its own commit millisecond (a read by time then has one answer: Paimon's search among snapshots of
 * the same millisecond may land on any of them).
 */
export async function buildSchemaHistory(warehouse: string): Promise<Map<number, number>> {
  const catalog = new Catalog(warehouse);
  const ident = parseIdentifier(HISTORY_TABLE);
  const writeBatch = async (batch: number): Promise<void> => {
    assert.equal(await writeRows(await reopen(warehouse, HISTORY_TABLE), batchRows(batch)), batch + 1);
    await sleep(5);
  };
  await catalog.createTable(ident, { columns: parseColumnList(S0.map((c) => `${c.name} ${c.sql}`).join(", ")), partitionKeys: ["dt"], options: { bucket: "2", "bucket-key": "id" } });
  await writeBatch(0);
  assert.equal((await catalog.addColumns(ident, [{ name: "score", type: parseSqlType("DOUBLE") }])).schema.id, 1);
  await writeBatch(1);
  assert.equal(await paimonAlter(warehouse, HISTORY_TABLE, ["--drop", "note"]), 2);
  await writeBatch(2);
  assert.equal(await paimonAlter(warehouse, HISTORY_TABLE, ["--rename", "name", "label"]), 3);
  await writeBatch(3);
  assert.equal(await paimonAlter(warehouse, HISTORY_TABLE, ["--type", "qty", "BIGINT"]), 4);
  await writeBatch(4);
  assert.match(await warehouseCli(warehouse).ok(["table", "alter", HISTORY_TABLE, "--add-column", "note STRING"]), /schema 5 adds note STRING/);
  await writeBatch(5);
  const compacted = await compactTable(await reopen(warehouse, HISTORY_TABLE), { rules: { minFileNum: 2 } });
  assert.equal(compacted.snapshotId, 7);
  assert.equal((await catalog.addColumns(ident, [{ name: "extra", type: parseSqlType("INT") }])).schema.id, LATEST_SCHEMA);

  const t = await reopen(warehouse, HISTORY_TABLE);
  const timeOf = new Map<number, number>();
  for (const s of SNAPSHOTS) {
    const snap = await t.snapshots.snapshot(s.id);
    assert.equal(snap.schemaId, s.schemaId, `snapshot ${s.id} was committed under schema ${s.schemaId}`);
    timeOf.set(s.id, snap.timeMillis);
    await createTag(t, tagOf(s.id), { snapshotId: s.id });
  }
  assert.equal(new Set(timeOf.values()).size, SNAPSHOTS.length, "every snapshot has its own commit time");
  // natslake's and pypaimon's changes landed as the model has them.
  for (const [k, schema] of SCHEMAS.entries()) {
    const s = await t.schemas.schema(k);
    assert.deepEqual(s.fields.map((f) => [f.id, f.name, typeToSql(f.type)]), schema.map((c) => [c.id, c.name, c.sql]), `schema ${k}`);
  }
  return timeOf;
}
