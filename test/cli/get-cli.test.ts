/**
 * `natslake get`: one line per --key in the order given, `{"key":…,"row":…}` with the row or null (never written,
 * deleted); composite keys as field=value pairs (values as CSV text, converted by the column's type) or a JSON object
 * for values with commas; --columns, --snapshot and --tag (time travel); --format json. A bad key or option is one
 * line on stderr and exit 2. Most runs are in this process (the command's own parser and action); the errors and
 * one lookup run as a user runs them, as `natslake` processes.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Catalog, createTag, parseColumnList, parseIdentifier } from "../../src/index.ts";
import { buildProgram } from "../../cluster/cli/program.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { reopen, tempDir } from "../helpers/tables.ts";
import { warehouseCli } from "../helpers/warehouse-cli.ts";

const wh = tempDir();
after(() => wh.cleanup());
const cli = warehouseCli(wh.path);
const TABLE = "cli.users";

before(async () => {
  const t = await new Catalog(wh.path).createTable(parseIdentifier(TABLE), {
    columns: parseColumnList("region STRING NOT NULL, id BIGINT NOT NULL, name STRING, born DATE"),
    partitionKeys: ["region"],
    primaryKeys: ["region", "id"],
    options: { bucket: "2" },
  });
  const commit = async (rows: Array<Record<string, unknown>>): Promise<void> => {
    const w = await BatchWriter.open(await reopen(wh.path, TABLE));
    await w.write(rows);
    await w.commit();
  };
  // Snapshot 1: three users; snapshot 2: one renamed, one deleted, one in a region whose name has a comma.
  await commit([
    { region: "eu", id: 1, name: "ada", born: "1815-12-10" },
    { region: "eu", id: 2, name: "bob", born: null },
    { region: "us", id: 9007199254740993n, name: "big", born: "2000-01-01" },
  ]);
  await createTag(t, "first");
  await commit([{ region: "eu", id: 1, name: "ada lovelace", born: "1815-12-10" }, { _row_kind: "-D", region: "eu", id: 2 }, { region: "eu,west", id: 3, name: "cy", born: null }]);
});

/** `natslake get TABLE <args>` in this process: its output lines, parsed. */
async function get(args: string[]): Promise<unknown[]> {
  const lines: string[] = [];
  await (await buildProgram((l) => lines.push(l))).parseAsync(["get", TABLE, ...args, "--warehouse", wh.path], { from: "user" });
  return lines.flatMap((l) => l.split("\n")).map((l) => JSON.parse(l) as unknown);
}

test("get cli - present, deleted and never-written keys in the order asked; composite keys as pairs or JSON", { timeout: 60_000 }, async () => {
  assert.deepEqual(await get(["--key", "region=eu,id=1", "--key", "id=2,region=eu", "--key", "region=us,id=9007199254740993", "--key", "region=eu,id=77", "--key", '{"region":"eu,west","id":3}']), [
    { key: { region: "eu", id: 1 }, row: { region: "eu", id: 1, name: "ada lovelace", born: "1815-12-10" } },
    { key: { region: "eu", id: 2 }, row: null },
    { key: { region: "us", id: "9007199254740993" }, row: { region: "us", id: "9007199254740993", name: "big", born: "2000-01-01" } },
    { key: { region: "eu", id: 77 }, row: null },
    { key: { region: "eu,west", id: 3 }, row: { region: "eu,west", id: 3, name: "cy", born: null } },
  ]);
  // A BIGINT beyond 2^53 in a JSON key keeps its digits.
  assert.deepEqual(await get(["--key", '{"region":"us","id":9007199254740993}', "--columns", "name"]), [{ key: { region: "us", id: "9007199254740993" }, row: { name: "big" } }]);
});

test("get cli - --snapshot and --tag look up in an older snapshot; --format json prints one array", { timeout: 60_000 }, async () => {
  const keys = ["--key", "region=eu,id=1", "--key", "region=eu,id=2", "--key", '{"region":"eu,west","id":3}', "--columns", "name"];
  const first = [
    { key: { region: "eu", id: 1 }, row: { name: "ada" } },
    { key: { region: "eu", id: 2 }, row: { name: "bob" } },
    { key: { region: "eu,west", id: 3 }, row: null },
  ];
  assert.deepEqual(await get([...keys, "--snapshot", "1"]), first);
  assert.deepEqual(await get([...keys, "--tag", "first"]), first);
  const lines: string[] = [];
  await (await buildProgram((l) => lines.push(l))).parseAsync(["get", TABLE, ...keys, "--format", "json", "--warehouse", wh.path], { from: "user" });
  assert.deepEqual(JSON.parse(lines.join("\n")), [
    { key: { region: "eu", id: 1 }, row: { name: "ada lovelace" } },
    { key: { region: "eu", id: 2 }, row: null },
    { key: { region: "eu,west", id: 3 }, row: { name: "cy" } },
  ]);
});

test("get cli - as a user runs it: rows on stdout, exit 0 with keys missing; a bad key or option is one line and exit 2", { timeout: 120_000 }, async () => {
  const out = await cli.ok(["get", TABLE, "--key", "region=eu,id=1", "--key", "region=eu,id=2"]);
  assert.deepEqual(out.trim().split("\n").map((l) => JSON.parse(l) as unknown), [
    { key: { region: "eu", id: 1 }, row: { region: "eu", id: 1, name: "ada lovelace", born: "1815-12-10" } },
    { key: { region: "eu", id: 2 }, row: null },
  ]);
  await cli.fails(["get", TABLE, "--key", "region=eu"], 2, /--key 'region=eu': cli\.users: key 1 lacks primary-key field 'id' \(primary key: region, id\)/);
  await cli.fails(["get", TABLE, "--key", "region=eu,id=1", "--key", "region=eu,id=x"], 2, /--key 'region=eu,id=x': .*key 2 is not valid: column id: expected a 64-bit integer/);
  await cli.fails(["get", TABLE, "--key", "region=eu,id=1,name=ada"], 2, /has field 'name', which is not in the primary key/);
  await cli.fails(["get", TABLE, "--key", "region=eu,42"], 2, /--key 'region=eu,42': '42' is not field=value/);
  await cli.fails(["get", TABLE, "--key", '{"region":"eu",'], 2, /--key '\{"region":"eu",': not valid JSON/);
  await cli.fails(["get", TABLE], 2, /give at least one --key/);
  await cli.fails(["get", TABLE, "--key", "region=eu,id=1", "--format", "csv"], 2, /--format must be jsonl or json, got 'csv'/);
  await cli.fails(["get", TABLE, "--key", "region=eu,id=1", "--snapshot", "9"], 2, /snapshot 9 of cli\.users does not exist/);
  await cli.fails(["get", TABLE, "--key", "region=eu,id=1", "--columns", "nope"], 2, /no column 'nope'/);
});

test("get cli - an append table is refused: get needs a primary key", { timeout: 60_000 }, async () => {
  await new Catalog(wh.path).createTable(parseIdentifier("cli.events"), { columns: parseColumnList("id INT, v STRING") });
  await cli.fails(["get", "cli.events", "--key", "id=1"], 2, /cli\.events has no primary key: get needs a primary key/);
});
