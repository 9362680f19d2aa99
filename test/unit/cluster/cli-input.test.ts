/**
 * The CLI's input reader (cluster/cli/input.ts), which `write` and `publish` share: every record with the physical
 * line it starts on — blank lines counted, CRLF or LF, CSV records spanning lines, across the stream's 64 KiB chunks
 * — and JSON numbers read without rounding.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { readRecords } from "../../../cluster/cli/input.ts";
import { tempDir } from "../../helpers/tables.ts";

const dir = tempDir();
after(() => dir.cleanup());

async function read(file: string, format: "jsonl" | "csv"): Promise<Array<{ line: number; record: Record<string, unknown> }>> {
  const out = [];
  for await (const r of readRecords(file, format)) out.push(r);
  return out;
}

/** A deterministic CSV of `n` records with blank lines and multi-line quoted fields; the line each record starts on. */
function csvText(n: number, eol: string): { text: string; starts: number[] } {
  const parts = [`id,note${eol}`];
  let line = 2;
  const starts: number[] = [];
  for (let i = 0; i < n; i++) {
    if (i % 7 === 3) {
      parts.push(eol);
      line++;
    }
    starts.push(line);
    if (i % 5 === 1) {
      parts.push(`${i},"first${eol}second ${"x".repeat(i % 50)}${eol}third"${eol}`);
      line += 3;
    } else {
      parts.push(`${i},${"y".repeat(i % 90)}${eol}`);
      line++;
    }
  }
  return { text: parts.join(""), starts };
}

test("cli input - CSV: each record's start line, blank lines and multi-line fields counted, LF and CRLF, across chunks", async () => {
  for (const eol of ["\n", "\r\n"]) {
    const { text, starts } = csvText(6000, eol);
    assert.ok(text.length > 4 * 65536, "several chunks of the file stream");
    const file = join(dir.path, `lines-${eol.length}.csv`);
    writeFileSync(file, text);
    const got = await read(file, "csv");
    assert.equal(got.length, starts.length);
    assert.deepEqual(got.map((r) => r.line), starts, `start lines with ${JSON.stringify(eol)}`);
    assert.deepEqual(got.map((r) => Number(r.record["id"])), starts.map((_, i) => i));
    assert.equal(got[1]!.record["note"], `first${eol}second x${eol}third`);
    assert.equal(got[0]!.record["note"], null, "an empty field is null");
  }
});

test("cli input - CSV: a record with too few fields and an unclosed quote name the line they start on", async () => {
  const short = join(dir.path, "short.csv");
  writeFileSync(short, "id,note\r\n1,a\r\n\r\n\r\n2\r\n");
  await assert.rejects(read(short, "csv"), /short\.csv:5: the record has 1 fields, the header names 2 columns/);
  const open = join(dir.path, "open.csv");
  writeFileSync(open, 'id,note\r\n1,a\r\n\r\n2,"never\r\nclosed\r\n');
  await assert.rejects(read(open, "csv"), (e: Error) => /open\.csv:4: Quote Not Closed/.test(e.message) && !/at line/.test(e.message));
});

test("cli input - JSONL: integers beyond 2^53 keep their digits; blank lines count as lines", async () => {
  const file = join(dir.path, "wide.jsonl");
  writeFileSync(file, '{"id": 4611686018427387904, "d": 12345678901234567.89}\n\n{"id": 7, "d": 1.5}\r\n{"id": -9223372036854775808}\n');
  const got = await read(file, "jsonl");
  assert.deepEqual(got.map((r) => r.line), [1, 3, 4]);
  assert.deepEqual(got.map((r) => r.record["id"]), [4611686018427387904n, 7, -9223372036854775808n]);
  assert.equal(got[0]!.record["d"], "12345678901234567.89", "a number a double cannot hold stays its text (exact for DECIMAL)");
  assert.equal(got[1]!.record["d"], 1.5);
  const bad = join(dir.path, "bad.jsonl");
  writeFileSync(bad, '{"id": 1}\n\n[1, 2]\n');
  await assert.rejects(read(bad, "jsonl"), /bad\.jsonl:3: each line must be a JSON object/);
});
