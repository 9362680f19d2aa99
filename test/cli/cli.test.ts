/**
 * The `natslake` CLI end to end, as a user runs it: real processes, a real warehouse, exit codes and messages.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { tempDir } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const wh = tempDir();
after(() => wh.cleanup());

function nl(args: string[], env: Record<string, string> = {}): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, NATSLAKE_WAREHOUSE: wh.path, ...env }, encoding: "utf8" });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

const ok = (args: string[]): string => {
  const r = nl(args);
  assert.equal(r.code, 0, `natslake ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
};

test("cli - create, write JSONL and CSV, read back as jsonl, snapshots, time travel", () => {
  ok(["table", "create", "cli.events", "--columns", "id BIGINT NOT NULL, dt STRING NOT NULL, amount DECIMAL(10, 2), note STRING", "--partition-keys", "dt", "--option", "bucket=2", "--option", "bucket-key=id"]);
  assert.match(ok(["table", "list"]), /^cli\.events$/m);
  assert.match(ok(["table", "describe", "cli.events"]), /amount\s+\|\s+DECIMAL\(10, 2\)/);
  const jsonl = join(wh.path, "a.jsonl");
  writeFileSync(jsonl, '{"id": 1, "dt": "d1", "amount": "1.50", "note": "x"}\n\n{"id": 2, "dt": "d2", "amount": null, "note": "y"}\n');
  assert.match(ok(["write", "cli.events", jsonl]), /wrote 2 rows to cli\.events .*snapshot 1/);
  const csv = join(wh.path, "b.csv");
  writeFileSync(csv, 'id,dt,amount,note\n3,d1,2.25,"has, comma"\n4,d2,,\n');
  assert.match(ok(["write", "cli.events", csv]), /wrote 2 rows .*snapshot 2/);
  const rows = ok(["read", "cli.events", "--format", "jsonl"]).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(rows.sort((a, b) => Number(a["id"]) - Number(b["id"])), [
    { id: 1, dt: "d1", amount: "1.50", note: "x" },
    { id: 2, dt: "d2", amount: null, note: "y" },
    { id: 3, dt: "d1", amount: "2.25", note: "has, comma" },
    { id: 4, dt: "d2", amount: null, note: null },
  ]);
  assert.equal(ok(["read", "cli.events", "--snapshot", "1", "--format", "jsonl"]).trim().split("\n").length, 2);
  assert.equal(ok(["read", "cli.events", "--limit", "3", "--format", "jsonl"]).trim().split("\n").length, 3);
  assert.deepEqual(JSON.parse(ok(["read", "cli.events", "--columns", "note", "--partition", "dt=d1", "--limit", "1", "--format", "jsonl"]).trim()), { note: "x" });
  const snaps = ok(["snapshots", "cli.events", "--json"]).trim().split("\n").map((l) => JSON.parse(l) as { id: number; timeMillis: number; commitUser: string });
  assert.deepEqual(snaps.map((s) => s.id), [1, 2]);
  assert.notEqual(snaps[0]!.commitUser, snaps[1]!.commitUser, "every CLI write commits under a fresh commit user");
  assert.equal(ok(["read", "cli.events", "--at", String(snaps[0]!.timeMillis), "--format", "jsonl"]).trim().split("\n").length, 2);
  assert.match(ok(["read", "cli.events"]), /\(4 rows\)/);
});

test("cli - overwrite a partition, with a dry run first; pypaimon sees the result", async () => {
  const f = join(wh.path, "ow.jsonl");
  writeFileSync(f, '{"id": 9, "dt": "d1", "amount": "9.00", "note": "new"}\n');
  assert.match(ok(["write", "cli.events", f, "--overwrite", "--partition", "dt=d1", "--dry-run"]), /would replace \d+ files with 2 rows in 1 partition/);
  assert.equal(ok(["snapshots", "cli.events", "--json"]).trim().split("\n").length, 2, "a dry run writes nothing");
  assert.match(ok(["write", "cli.events", f, "--overwrite", "--partition", "dt=d1"]), /snapshot 3 \(replaced \d+ files\)/);
  const rows = await paimonRead(wh.path, "cli.events");
  assert.deepEqual(rows.map((r) => r["id"]).sort(), [2, 4, 9]);
});

test("cli - bad arguments print what is wrong and exit non-zero", () => {
  const cases: Array<[string[], RegExp, Record<string, string>?]> = [
    [["table", "create", "nodot", "--columns", "a INT"], /must have the form <database>\.<table>/],
    [["table", "create", "x.y", "--columns", "a INTT"], /unknown type 'INTT'/],
    [["table", "create", "x.y", "--columns", "a INT", "--option", "buckett=2"], /did you mean 'bucket'/],
    [["table", "create", "x.y", "--columns", "a INT", "--option", "bucket=2"], /needs a 'bucket-key'/],
    [["table", "create", "x.y", "--columns", "a INT", "--option", "nonsense"], /key=value/],
    [["table", "create", "a/b.y", "--columns", "a INT"], /invalid database name/],
    [["table", "describe", "cli.missing"], /does not exist/],
    [["read", "cli.events", "--limit", "-1"], /non-negative integer/],
    [["read", "cli.events", "--snapshot", "99"], /snapshot 99 of cli\.events does not exist/],
    [["read", "cli.events", "--snapshot", "1", "--at", "2020-01-01"], /use one of --snapshot, --at and --tag/],
    [["read", "cli.events", "--at", "yesterday"], /is not a time/],
    [["read", "cli.events", "--format", "xml"], /--format must be table or jsonl/],
    [["read", "cli.events", "--columns", "nope"], /no column 'nope'/],
    [["write", "cli.events", "/nonexistent.jsonl"], /cannot read input file/],
    [["write", "cli.events", "file.txt"], /cannot tell the format/],
    [["write", "cli.events", "x.jsonl", "--overwrite"], /needs --partition/],
    [["write", "cli.events", "x.jsonl", "--overwrite", "--partition", "nope=1"], /unknown partition key 'nope'/],
    [["bogus"], /unknown command/],
    [["table", "list"], /no warehouse/, { NATSLAKE_WAREHOUSE: "" }],
  ];
  for (const [args, re, env] of cases) {
    const r = nl(args, env);
    assert.notEqual(r.code, 0, `natslake ${args.join(" ")} should fail`);
    assert.match(r.stderr, re, `natslake ${args.join(" ")}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /at .*\.ts:\d+/, "no stack trace for bad input");
  }
});

test("cli - a bad row names its line and column, and nothing is committed", () => {
  const f = join(wh.path, "bad.jsonl");
  writeFileSync(f, '{"id": 20, "dt": "d3"}\n{"id": "twenty-one", "dt": "d3"}\n');
  const r = nl(["write", "cli.events", f]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /bad\.jsonl:2: column id: expected a 64-bit integer/);
  assert.equal(ok(["read", "cli.events", "--partition", "dt=d3", "--format", "jsonl"]).trim(), "");
});

test("cli - a name that could escape the warehouse, break a NATS subject or alias another is refused with its rule, exit 2, nothing made", () => {
  const cases: Array<[string[], RegExp]> = [
    [["table", "create", "names.>", "--columns", "a INT"], /^error: invalid table name '>': '>' is a NATS subject wildcard; new table names are 1-100 characters from a-z, 0-9, '_' and '-'/],
    [["table", "create", "names.*", "--columns", "a INT"], /invalid table name '\*': '\*' is a NATS subject wildcard/],
    [["table", "create", "names.t x", "--columns", "a INT"], /invalid table name 't x': whitespace is not allowed/],
    [["table", "create", "names.%2e%2e", "--columns", "a INT", "--if-not-exists"], /invalid table name '%2e%2e': '%' is not allowed/],
    [["table", "create", "names.t", "--columns", "id INT, ID INT"], /invalid column name 'ID': it differs from column 'id' only in case/],
  ];
  for (const [args, re] of cases) {
    const r = nl(args);
    assert.equal(r.code, 2, `natslake ${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, re, `natslake ${args.join(" ")}`);
  }
  assert.equal(ok(["table", "list"]).includes("names."), false, "no table was made");
});
