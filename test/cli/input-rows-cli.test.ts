/**
 * Rows from files as a user gives them to `natslake publish` (through a live cluster) and `natslake write` (straight
 * into the warehouse), issue 26: 64-bit ids written as plain JSON numbers (what Python's json.dumps writes) land
 * exactly through both, one beyond 64 bits is refused quoting the file's digits, and both commands name a bad row by
 * the same `<file>:<line>:`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { clusterPerFile, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { runNatslake as nl } from "../helpers/warehouse-cli.ts";

const cluster = clusterPerFile({ nodes: 1 });

/** Creates the table through the cluster (retried until a node serves the admin request). */
async function createTable(name: string): Promise<void> {
  await waitFor(`${name} created`, async () => {
    const x = await nl(["table", "create", name, "--nats", cluster().nats.url, "--columns", "id BIGINT NOT NULL, item STRING", "--option", "bucket=4", "--option", "bucket-key=id"]);
    return x.code === 0 ? x : undefined;
  }, 30_000, 500);
}

/** A file in the cluster's directory with this text. */
function textFile(name: string, text: string): string {
  const f = join(cluster().dir, name);
  writeFileSync(f, text);
  return f;
}

test("publish, write - BIGINTs beyond 2^53 written as plain JSON numbers land exactly; one beyond 64 bits is refused quoting the file's digits", { timeout: 120_000 }, async () => {
  await createTable("pub.wide");
  const write = await nl(["table", "create", "pub.wide_w", "--warehouse", cluster().warehouse, "--columns", "id BIGINT NOT NULL, item STRING"]);
  assert.equal(write.code, 0, write.stderr);
  // What Python's json.dumps writes for 64-bit ids: plain numbers, beyond what a double holds exactly.
  const ids = ["4611686018427387904", "4611686018427387905", "9223372036854775807", "-9223372036854775808", "9007199254740993"];
  const wide = textFile("wide.jsonl", ids.map((id, i) => `{"id": ${id}, "item": "w${i}"}`).join("\n") + "\n");
  await withNodeLogsOnFailure(cluster(), async () => {
    const pub = await nl(["publish", "pub.wide", wide, "--nats", cluster().nats.url, "--no-progress", "--wait-visible"]);
    assert.equal(pub.code, 0, pub.stderr);
    assert.match(pub.stdout, /published 5 rows to pub\.wide: 5 ok$/m);
  });
  const w = await nl(["write", "pub.wide_w", wide, "--warehouse", cluster().warehouse, "--no-progress"]);
  assert.equal(w.code, 0, w.stderr);
  for (const table of ["pub.wide", "pub.wide_w"]) {
    const read = await nl(["read", table, "--warehouse", cluster().warehouse, "--format", "jsonl"]);
    assert.equal(read.code, 0, read.stderr);
    // `read --format jsonl` gives a BIGINT beyond 2^53 as its decimal text.
    const got = read.stdout.trim().split("\n").map((l) => String((JSON.parse(l) as { id: number | string }).id));
    assert.deepEqual(got.sort(), [...ids].sort(), `${table}: every id exactly as in the file`);
  }
  // 2^63 does not fit a BIGINT: refused by both commands, quoting the digits of the file (not a rounded double).
  const over = textFile("over.jsonl", `{"id": 1, "item": "ok"}\n{"id": 9223372036854775808, "item": "too big"}\n`);
  for (const args of [["publish", "pub.wide", over, "--nats", cluster().nats.url, "--no-progress"], ["write", "pub.wide_w", over, "--warehouse", cluster().warehouse, "--no-progress"]]) {
    const r = await nl(args);
    assert.equal(r.code, 2, `${args[0]}: ${r.stderr}`);
    assert.match(r.stderr, /over\.jsonl:2: column id: expected a 64-bit integer .*got integer 9223372036854775808$/m, args[0]);
  }
});

test("publish, write - a bad row is named <file>:<line>: by both, blank lines counted; a CSV record by the line it starts on", { timeout: 120_000 }, async () => {
  await createTable("pub.lines");
  const badJsonl = textFile("bad.jsonl", `{"id": 1, "item": "a"}\n\n{"id": 2, "item": "b"}\n{"id": "x", "item": "c"}\n`);
  // A blank line and a quoted field over two lines before the bad record, which spans lines 6 and 7 itself.
  const badCsv = textFile("bad.csv", `id,item\n1,a\n\n2,"two\nlines"\nx,"bad\nid"\n`);
  for (const [file, where] of [[badJsonl, /bad\.jsonl:4: column id: expected a 64-bit integer/], [badCsv, /bad\.csv:6: column id: expected a 64-bit integer/]] as const) {
    const pub = await nl(["publish", "pub.lines", file, "--nats", cluster().nats.url, "--no-progress"]);
    assert.equal(pub.code, 2, pub.stderr);
    assert.match(pub.stderr, where, "publish");
    const write = await nl(["write", "pub.lines", file, "--warehouse", cluster().warehouse, "--no-progress"]);
    assert.equal(write.code, 2, write.stderr);
    assert.match(write.stderr, where, "write");
    assert.doesNotMatch(write.stderr, /\brow \d+:/, "write names the line, not a row number");
  }
});
