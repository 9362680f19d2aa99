/**
 * `natslake dlq list|replay` against a live 1-node cluster. Raw rows land, except two dead letters: one with a bad
 * value, one naming a column the table does not have. `list` shows both (table and jsonl). `replay` refuses, before
 * publishing anything, a letter whose row still does not fit; once `table alter` adds the column, the second letter
 * replays as it is; the first is exported with `list --format jsonl`, fixed, and replayed from the file. Every row is
 * then in the table exactly once (natslake's reader and pypaimon agree), the letters stay in the DLQ marked replayed,
 * a second replay skips them, and a file naming a letter that does not exist, or an unknown table, is refused (exit 2).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstream } from "@nats-io/jetstream";
import { producerWhenRegistered, startCluster, waitFor, withNodeLogsOnFailure } from "../helpers/cluster.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { parseColumnList } from "../../src/format/data-types.ts";
import { readRows } from "../../src/scan/read.ts";
import { readTableMeta } from "../../cluster/nats/table-infra.ts";
import { Subjects } from "../../cluster/nats/subjects.ts";
import { paimonRead } from "../helpers/python.ts";

const BIN = fileURLToPath(new URL("../../bin/natslake.mjs", import.meta.url));

function cli(args: string[], timeoutMs = 90_000): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const t = setTimeout(() => {
      p.kill("SIGKILL");
      reject(new Error(`natslake ${args.join(" ")} did not finish within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    p.on("exit", (status) => {
      clearTimeout(t);
      resolve({ status, stdout, stderr });
    });
  });
}

interface LetterLine {
  seq: number;
  stage: string;
  reason: string;
  streamSeq: number;
  rowIndex: number;
  row: Record<string, unknown>;
  replayedAt: string | null;
}

test("dlq - list letters; replay refuses rows that still do not fit, replays as-is after the column is added and fixed rows from a file; exactly once, skipped the second time", { timeout: 300_000 }, async () => {
  const c = await startCluster({ nodes: 1, commitInterval: "100ms" });
  try {
    await withNodeLogsOnFailure(c, async () => {
      const name = "dq.t";
      const catalog = new Catalog(c.warehouse);
      await catalog.createTable(parseIdentifier(name), { columns: parseColumnList("id BIGINT NOT NULL, qty INT NOT NULL"), options: { bucket: "2", "bucket-key": "id" } });
      const producer = await producerWhenRegistered(c.nc, name);
      await producer.close();
      const nats = ["--nats", c.nats.url];
      // Raw rows, as a service in another language would publish them: two of four are dead letters.
      const raw = [{ id: 1, qty: 1 }, { id: 2, qty: "lots" }, { id: 3, qty: 3, note: "late column" }, { id: 4, qty: 4 }];
      await jetstream(c.nc).publish("lake.in.dq.t", JSON.stringify(raw), { msgID: "dlq-test-raw-1" });
      let lastList = "";
      const listed = await waitFor("two dead letters listed", async () => {
        const r = await cli(["dlq", "list", name, ...nats, "--format", "jsonl"]);
        lastList = `exit ${r.status}: ${r.stdout}${r.stderr}`;
        const lines = r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as LetterLine);
        return r.status === 0 && lines.length === 2 ? lines : undefined;
      }, 60_000, 500).catch((e: unknown) => {
        throw new Error(`${(e as Error).message}; the last list: ${lastList}`);
      });
      const [bad, unknownCol] = [listed.find((l) => l.row["id"] === 2)!, listed.find((l) => l.row["id"] === 3)!];
      assert.ok(bad && unknownCol, JSON.stringify(listed));
      assert.equal(bad.stage, "router");
      assert.equal(bad.rowIndex, 1);
      assert.match(bad.reason, /qty/);
      assert.match(unknownCol.reason, /unknown column 'note'/);
      assert.equal(unknownCol.replayedAt, null);
      const text = await cli(["dlq", "list", name, ...nats]);
      assert.equal(text.status, 0, text.stderr);
      assert.match(text.stdout, /seq\s+\| stored\s+\| stage\s+\| from \(stream seq#row\)\s+\| reason\s+\| replayed/);
      assert.match(text.stdout, new RegExp(`^${unknownCol.seq}\\s+\\|.*\\| router\\s+\\| ${unknownCol.streamSeq}#2\\s+\\| unknown column 'note'.*\\| no$`, "m"));
      assert.match(text.stderr, /^2 letter\(s\) of dq\.t\n$/);

      const t = async () => catalog.getTable(parseIdentifier(name));
      const ids = async (): Promise<number[]> => {
        const out: number[] = [];
        for await (const r of readRows(await t())) out.push(Number(r["id"]));
        return out.sort((a, b) => a - b);
      };
      await waitFor("the good rows landed", async () => ((await ids()).join() === "1,4" ? true : undefined), 30_000, 300);

      // As they are, neither fits yet: refused before anything is published.
      const refused = await cli(["dlq", "replay", name, ...nats]);
      assert.equal(refused.status, 2, refused.stderr);
      assert.match(refused.stderr, new RegExp(`^error: letter ${bad.seq}: .*qty`));
      const stillRefused = await cli(["dlq", "replay", name, ...nats, "--seq", String(unknownCol.seq)]);
      assert.equal(stillRefused.status, 2);
      assert.match(stillRefused.stderr, new RegExp(`^error: letter ${unknownCol.seq}: unknown column 'note'`));
      assert.deepEqual(await ids(), [1, 4], "nothing was published");

      // The column arrives; the cluster publishes the new schema; the letter replays unchanged.
      const alter = await cli(["table", "alter", name, "--add-column", "note STRING", "--warehouse", c.warehouse]);
      assert.equal(alter.status, 0, alter.stderr);
      await waitFor("producers see the new column", async () => ((await readTableMeta(c.nc, new Subjects(), name)).schema.fields.some((f) => f.name === "note") ? true : undefined), 60_000, 300);
      const asIs = await cli(["dlq", "replay", name, ...nats, "--seq", String(unknownCol.seq), "--wait-visible"]);
      assert.equal(asIs.status, 0, asIs.stderr);
      assert.match(asIs.stdout, /^replayed 1 letter\(s\) \(1 row\(s\)\) to dq\.t\nvisible in a snapshot\n$/);

      // The bad value: exported, fixed by the operator, replayed from the file.
      const exported = await cli(["dlq", "list", name, ...nats, "--format", "jsonl", "--pending"]);
      assert.equal(exported.status, 0, exported.stderr);
      const pending = exported.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as LetterLine);
      assert.deepEqual(pending.map((l) => l.seq), [bad.seq], "only the bad-value letter is still pending");
      const fixed = join(c.dir, "fixed.jsonl");
      writeFileSync(fixed, pending.map((l) => JSON.stringify({ ...l, row: { ...l.row, qty: 2 } })).join("\n") + "\n");
      const dry = await cli(["dlq", "replay", name, fixed, ...nats, "--dry-run"]);
      assert.equal(dry.status, 0, dry.stderr);
      assert.match(dry.stdout, /^dry run: would replay 1 letter\(s\) \(1 row\(s\)\) to dq\.t\n$/);
      const fromFile = await cli(["dlq", "replay", name, fixed, ...nats, "--wait-visible"]);
      assert.equal(fromFile.status, 0, fromFile.stderr);
      assert.match(fromFile.stdout, /^replayed 1 letter\(s\) \(1 row\(s\)\) to dq\.t\nvisible in a snapshot\n$/);

      const expected = [
        { id: 1, qty: 1, note: null },
        { id: 2, qty: 2, note: null },
        { id: 3, qty: 3, note: "late column" },
        { id: 4, qty: 4, note: null },
      ];
      const mine: Array<Record<string, unknown>> = [];
      for await (const r of readRows(await t())) mine.push({ id: Number(r["id"]), qty: r["qty"], note: r["note"] ?? null });
      assert.deepEqual(mine.sort((a, b) => Number(a["id"]) - Number(b["id"])), expected, "every row once (natslake)");
      const theirs = (await paimonRead(c.warehouse, name)).map((r) => ({ id: Number(r["id"]), qty: r["qty"], note: r["note"] ?? null }));
      assert.deepEqual(theirs.sort((a, b) => a.id - b.id), expected, "every row once (pypaimon)");

      // The letters stay, marked; replaying again skips them.
      const after = await cli(["dlq", "list", name, ...nats, "--format", "jsonl"]);
      const marked = after.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as LetterLine);
      assert.deepEqual(marked.map((l) => [l.seq, l.replayedAt !== null]).sort(), [[bad.seq, true], [unknownCol.seq, true]].sort());
      const none = await cli(["dlq", "list", name, ...nats, "--pending"]);
      assert.match(none.stderr, /^0 letter\(s\) of dq\.t not replayed\n$/);
      const again = await cli(["dlq", "replay", name, fixed, ...nats]);
      assert.equal(again.status, 0, again.stderr);
      assert.match(again.stdout, new RegExp(`^replayed 0 letter\\(s\\) \\(0 row\\(s\\)\\) to dq\\.t; 1 replayed before, skipped \\(--again replays them\\): ${bad.seq}\\n$`));
      const nothing = await cli(["dlq", "replay", name, ...nats]);
      assert.equal(nothing.status, 0, nothing.stderr);
      assert.match(nothing.stdout, /^nothing to replay for dq\.t \(no dead letter that was not replayed yet\)\n$/);
      assert.deepEqual(await ids(), [1, 2, 3, 4]);

      // Refusals: a letter that does not exist, a malformed line, an unknown table.
      const wrong = join(c.dir, "wrong.jsonl");
      writeFileSync(wrong, JSON.stringify({ seq: 999, row: { id: 9, qty: 9 } }) + "\n");
      const missing = await cli(["dlq", "replay", name, wrong, ...nats]);
      assert.equal(missing.status, 2);
      assert.equal(missing.stderr, `error: ${wrong}:1: no dead letter of dq.t has sequence 999 (dropped or aged out of the DLQ, or never one)\n`);
      writeFileSync(wrong, '{"row": {"id": 9}}\n');
      const malformed = await cli(["dlq", "replay", name, wrong, ...nats]);
      assert.equal(malformed.status, 2);
      assert.match(malformed.stderr, /^error: .*wrong\.jsonl:1: expected \{"seq": <DLQ sequence>, "row": \{…\}\}/);
      const unknownTable = await cli(["dlq", "list", "dq.nope", ...nats]);
      assert.equal(unknownTable.status, 2);
      assert.match(unknownTable.stderr, /^error: unknown table 'dq\.nope': /);
      assert.deepEqual(await ids(), [1, 2, 3, 4], "still every row once");
    }, 40);
  } finally {
    await c.stop();
  }
});
