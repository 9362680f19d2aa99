/**
 * JSONL (and CSV) with `_row_kind` per line, as a user runs the CLI: `natslake write` applies the kinds to a
 * primary-key table (TableWrite) — upserts, updates as -U/+U, deletes by key — and natslake and pypaimon read the
 * result; `natslake publish` sends the lines through the producer client with their kinds. A bad kind or a line
 * without its key names the line and exits 2 with nothing written.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { ensureTableInfra } from "../../cluster/nats/table-infra.ts";
import { decodeRowBatch } from "../../actors/wire/row-batch.ts";
import { startNats } from "../helpers/servers.ts";
import { tempDir } from "../helpers/tables.ts";
import { paimonRead } from "../helpers/python.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));
const wh = tempDir("natslake-cdc-cli-");
after(() => wh.cleanup());

function nl(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, NATSLAKE_WAREHOUSE: wh.path }, encoding: "utf8", timeout: 60_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}
const ok = (args: string[]): string => {
  const r = nl(args);
  assert.equal(r.code, 0, `natslake ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
};
const file = (name: string, lines: unknown[]): string => {
  const f = join(wh.path, name);
  writeFileSync(f, lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n") + "\n");
  return f;
};
const readSorted = (table: string): Array<Record<string, unknown>> =>
  ok(["read", table, "--format", "jsonl"]).trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>).sort((a, b) => `${String(a["dt"])}${String(a["id"]).padStart(4)}`.localeCompare(`${String(b["dt"])}${String(b["id"]).padStart(4)}`));

test("write - JSONL lines with _row_kind upsert, update and delete by key; natslake and pypaimon read the result", async () => {
  ok(["table", "create", "cdc.accounts", "--columns", "dt STRING NOT NULL, id BIGINT NOT NULL, owner STRING NOT NULL, balance DECIMAL(10, 2)", "--partition-keys", "dt", "--primary-key", "dt,id", "--option", "bucket=2"]);
  const first = file("first.jsonl", [
    { dt: "d1", id: 1, owner: "ann", balance: "10.00" },
    { dt: "d1", id: 2, owner: "bob", balance: "20.00", _row_kind: "+I" },
    { dt: "d1", id: 3, owner: "cy", balance: "30.00" },
    { dt: "d2", id: 1, owner: "dee", balance: null },
  ]);
  assert.match(ok(["write", "cdc.accounts", first]), /wrote 4 rows to cdc\.accounts/);
  const second = file("second.jsonl", [
    { dt: "d1", id: 2, _row_kind: "-U" }, // an update-before names only its key
    { dt: "d1", id: 2, owner: "bob", balance: "25.00", _row_kind: "+U" },
    { dt: "d1", id: 3, _row_kind: "-D" }, // a delete by key
    { dt: "d2", id: 1, owner: "dee", balance: "1.00" }, // no kind: +I, replaces the key's row
  ]);
  assert.match(ok(["write", "cdc.accounts", second]), /wrote 4 rows/);
  // CSV takes _row_kind as a column too.
  const csv = join(wh.path, "third.csv");
  writeFileSync(csv, "dt,id,owner,balance,_row_kind\nd1,1,,,-D\nd3,7,eve,7.00,+I\n");
  assert.match(ok(["write", "cdc.accounts", csv]), /wrote 2 rows/);
  const expected = [
    { dt: "d1", id: 2, owner: "bob", balance: "25.00" },
    { dt: "d2", id: 1, owner: "dee", balance: "1.00" },
    { dt: "d3", id: 7, owner: "eve", balance: "7.00" },
  ];
  assert.deepEqual(readSorted("cdc.accounts"), expected);
  const theirs = (await paimonRead(wh.path, "cdc.accounts")).map((r) => ({ dt: r["dt"], id: Number(r["id"]), owner: r["owner"], balance: r["balance"] === null ? null : Number(r["balance"]).toFixed(2) }));
  assert.deepEqual(theirs.sort((a, b) => `${String(a.dt)}${a.id}`.localeCompare(`${String(b.dt)}${b.id}`)), expected);
});

test("write - a bad kind or a line without its key names the line, exits 2, and commits nothing", () => {
  const before = ok(["snapshots", "cdc.accounts", "--json"]).trim().split("\n").length;
  const cases: Array<[unknown[], RegExp]> = [
    [[{ dt: "d9", id: 1, owner: "x" }, { dt: "d9", id: 2, owner: "y", _row_kind: "U" }], /bad\.jsonl:2: row kind "U" is not one of \+I, -U, \+U, -D/],
    [[{ dt: "d9", id: 1, owner: "x" }, { id: 2, _row_kind: "-D" }], /bad\.jsonl:2: a delete without its key: primary-key column 'dt' is missing/],
    [[{ dt: "d9", id: null, owner: "x" }], /bad\.jsonl:1: primary-key column 'id' is null/],
  ];
  for (const [lines, message] of cases) {
    const r = nl(["write", "cdc.accounts", file("bad.jsonl", lines)]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, message);
  }
  assert.equal(ok(["snapshots", "cdc.accounts", "--json"]).trim().split("\n").length, before, "nothing committed");
  assert.equal(readSorted("cdc.accounts").filter((r) => r["dt"] === "d9").length, 0);
});

test("publish - JSONL lines with _row_kind go through the producer client with their kinds; a bad line stops the run at it", async () => {
  const server = await startNats();
  const nc = await connect({ servers: server.url });
  try {
    const subjects = new Subjects("lake");
    const table = await new Catalog(wh.path).createTable(parseIdentifier("cdc.pub"), {
      columns: parseColumnList("id BIGINT NOT NULL, v STRING NOT NULL"),
      primaryKeys: ["id"],
      options: { bucket: "1" },
    });
    // Registered on NATS as a node registers it; no node runs, so what publish sent stays on the bucket subjects to read.
    await ensureTableInfra({ nc, subjects, table, replicas: 1, maxBytes: 16 * 1024 * 1024, duplicateWindowMs: 60_000 });
    const lines = [{ id: 1, v: "a" }, { id: 2, v: "b", _row_kind: "+I" }, { id: 1, _row_kind: "-U" }, { id: 1, v: "a2", _row_kind: "+U" }, { id: 2, _row_kind: "-D" }];
    const r = nl(["publish", "cdc.pub", file("pub.jsonl", lines), "--nats", server.url, "--no-progress"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /published 5 rows to cdc\.pub: 5 ok$/m);
    const jsm = await jetstreamManager(nc);
    const stream = subjects.ingestStream(table.identifier);
    const st = (await jsm.streams.info(stream)).state;
    const rows: unknown[][] = [];
    for (let seq = st.first_seq; seq <= st.last_seq; seq++) {
      const batch = decodeRowBatch((await jsm.streams.getMessage(stream, { seq }))!.data);
      assert.deepEqual(batch.cols, ["id", "v", "_row_kind"]);
      rows.push(...batch.rows);
    }
    assert.deepEqual(rows, [[1, "a", "+I"], [2, "b", "+I"], [1, "", "-U"], [1, "a2", "+U"], [2, "", "-D"]]);
    const bad = nl(["publish", "cdc.pub", file("pub-bad.jsonl", [{ id: 3, v: "c" }, { v: "d", _row_kind: "-D" }]), "--nats", server.url, "--no-progress"]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /pub-bad\.jsonl:2: a delete without its key: primary-key column 'id' is missing/);
    assert.match(bad.stdout, /published 1 rows to cdc\.pub \(stopped at the error below\): 1 ok/);
  } finally {
    await nc.close();
    await server.stop();
  }
});
