/**
 * `natslake read --snapshot / --tag / --at` read a snapshot in its own schema (the table's history of schema changes:
 * test/helpers/schema-history.ts; the library and the Java and pypaimon oracles: test/compat/time-travel-schemas.
 * test.ts); a read of the latest snapshot and `natslake tail` from an old snapshot are in the current schema. Every
 * snapshot by every way runs the command in this process (its parser and action); a few reads, the errors and the
 * tail run as a user runs them, as `natslake` processes.
 */
import { before, after, test } from "node:test";
import assert from "node:assert/strict";
import { sortRows, tempDir } from "../helpers/tables.ts";
import { warehouseCli } from "../helpers/warehouse-cli.ts";
import { buildProgram } from "../../cluster/cli/program.ts";
import { BATCHES, buildSchemaHistory, expectedRows, HISTORY_TABLE, LATEST_SCHEMA, SCHEMAS, SNAPSHOTS, tagOf } from "../helpers/schema-history.ts";

const wh = tempDir();
after(() => wh.cleanup());
const cli = warehouseCli(wh.path);
let timeOf = new Map<number, number>();
before(async () => {
  timeOf = await buildSchemaHistory(wh.path);
});

const CURRENT = SCHEMAS[LATEST_SCHEMA]!;

/** JSON lines as rows, and the column names in the order the first line has them. */
function jsonLines(lines: string[]): { names: string[]; rows: Array<Record<string, unknown>> } {
  const rows = lines.filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, unknown>);
  return { names: Object.keys(rows[0] ?? {}), rows };
}

/** `natslake read … --format jsonl` run in this process: the command's own parser and action, without a process start each. */
async function readInProcess(args: string[]): Promise<{ names: string[]; rows: Array<Record<string, unknown>> }> {
  const lines: string[] = [];
  await (await buildProgram((l) => lines.push(l))).parseAsync(["read", HISTORY_TABLE, ...args, "--format", "jsonl", "--warehouse", wh.path], { from: "user" });
  return jsonLines(lines);
}

/** The same as a user runs it: a `natslake` process. */
const readAsUser = async (args: string[]): Promise<{ names: string[]; rows: Array<Record<string, unknown>> }> => jsonLines((await cli.ok(["read", HISTORY_TABLE, ...args, "--format", "jsonl"])).split("\n"));

test("time travel cli - read --snapshot, --tag and --at read every snapshot in its own schema", { timeout: 120_000 }, async () => {
  for (const s of SNAPSHOTS) {
    const schema = SCHEMAS[s.schemaId]!;
    for (const args of [["--snapshot", String(s.id)], ["--tag", tagOf(s.id)], ["--at", new Date(timeOf.get(s.id)!).toISOString()]]) {
      const { names, rows } = await readInProcess(args);
      assert.deepEqual(names, schema.map((c) => c.name), args.join(" "));
      assert.deepEqual(sortRows(rows), expectedRows(schema, s.batches), args.join(" "));
    }
  }
  // Projections and partitions name the snapshot's columns.
  const projected = await readInProcess(["--snapshot", "2", "--columns", "note,name"]);
  assert.deepEqual(projected.names, ["note", "name"]);
  assert.deepEqual(sortRows(projected.rows), expectedRows(SCHEMAS[1]!, 2, { projection: ["note", "name"] }));
  const partition = await readInProcess(["--tag", tagOf(3), "--partition", "dt=b"]);
  assert.deepEqual(sortRows(partition.rows), expectedRows(SCHEMAS[2]!, 3).filter((r) => r["dt"] === "b"));
});

test("time travel cli - as a user runs it: an old snapshot in its schema, the latest in the current one, a column of neither is an error naming the schema", { timeout: 120_000 }, async () => {
  const old = await readAsUser(["--snapshot", "2"]);
  assert.deepEqual(old.names, SCHEMAS[1]!.map((c) => c.name));
  assert.deepEqual(sortRows(old.rows), expectedRows(SCHEMAS[1]!, 2));
  // The table format's header is the snapshot's columns.
  assert.match((await cli.ok(["read", HISTORY_TABLE, "--tag", tagOf(1), "--limit", "1"])).split("\n")[0]!, /^\s*id\s*\|\s*name\s*\|\s*qty\s*\|\s*note\s*\|\s*dt\s*$/);
  const latest = await readAsUser([]);
  assert.deepEqual(latest.names, CURRENT.map((c) => c.name));
  assert.deepEqual(sortRows(latest.rows), expectedRows(CURRENT, BATCHES));
  await cli.fails(["read", HISTORY_TABLE, "--snapshot", "2", "--columns", "label"], 2, /no column 'label' in tt\.evolve as of snapshot 2 \(read in its schema 1, columns: id, name, qty, note, dt, score\)/);
  await cli.fails(["read", HISTORY_TABLE, "--columns", "name"], 2, /no column 'name' in tt\.evolve \(schema 6, columns: id, label, qty, dt, score, note, extra\)/);
});

test("time travel cli - a tail from an old snapshot reads in the current schema (it goes on into newer snapshots)", { timeout: 60_000 }, async () => {
  // snapshot-full:2 then the delta of snapshot 3: one schema throughout, the current one.
  const tail = jsonLines((await cli.ok(["tail", HISTORY_TABLE, "--from", "snapshot-full:2", "--max-snapshots", "2", "--format", "jsonl"])).split("\n"));
  assert.deepEqual(tail.names, CURRENT.map((c) => c.name));
  assert.deepEqual(sortRows(tail.rows), expectedRows(CURRENT, 3));
});
