/**
 * `natslake dlq list|replay <db.table> --nats URL`: a table's dead letters (cluster/dlq.ts).
 *
 * - `list` prints the letters oldest first (`--from-seq`, `--limit`), each with its DLQ sequence, the stage that
 *   rejected it, where its row was published and why, and whether it was replayed; `--format jsonl` writes one
 *   letter per line with its row under `row` — the file `replay` takes back once the rows are fixed.
 * - `replay` publishes letters' rows again through the producer client: from a file (`{"seq": N, "row": {…}}` or
 *   `"rows": […]` per line; other fields, like those `list` writes, are ignored), or — without a file — the letters
 *   not replayed yet as they are (after the cause was fixed, e.g. the column they name was added), or those `--seq`
 *   names. Nothing is published unless every letter exists and every row fits the schema; a letter replayed before is
 *   skipped unless `--again`. Exit 0 when every letter's rows were acknowledged, 1 when some were not, 2 for bad input.
 */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { InvalidArgumentError } from "commander";
import { SingleBar, Presets } from "cli-progress";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { ErrorKind, LakeError } from "../../src/errors.ts";
import { DEFAULT_PREFIX, Subjects } from "../nats/subjects.ts";
import { readTableMeta } from "../nats/table-infra.ts";
import { readLetters, replay, replayRecords, replaysOf, rowsOfLetter, waitReplayVisible, type ReplayItem, type StoredLetter } from "../dlq.ts";
import { CliError, connectOrExplain, examples, parsePositiveInt, renderTable, UsageError } from "./common.ts";
import { parseRowJson } from "../../src/format/wire/json.ts";

interface ListFlags {
  nats: string;
  prefix: string;
  fromSeq?: number;
  limit: number;
  format: string;
  pending?: boolean;
}

interface ReplayFlags {
  nats: string;
  prefix: string;
  seq?: number[];
  again?: boolean;
  dryRun?: boolean;
  waitVisible?: boolean;
  progress: boolean;
}

/** Letters read from the DLQ by one replay without a file (each is held in memory with its row). */
const MAX_LETTERS_PER_RUN = 100_000;

const seqList = (v: string, acc: number[] = []): number[] => {
  const out = [...acc];
  for (const part of v.split(",").map((s) => s.trim()).filter(Boolean)) {
    if (!/^\d+$/.test(part) || Number(part) <= 0) throw new InvalidArgumentError(`--seq takes DLQ sequence numbers, got '${part}'`);
    out.push(Number(part));
  }
  return out;
};

/** The table must be registered on NATS (a typo would otherwise show an empty DLQ). */
async function checkTable(nc: Parameters<typeof readTableMeta>[0], subjects: Subjects, table: string): Promise<void> {
  try {
    await readTableMeta(nc, subjects, table);
  } catch (e) {
    if (e instanceof LakeError && e.kind === ErrorKind.NotFound) throw new LakeError(ErrorKind.NotFound, `unknown table '${table}': ${e.message}`);
    throw e;
  }
}

/** A letter as one JSON line: what `replay <file>` reads back (`seq` and `row`). */
function letterLine(l: StoredLetter, replayedAt: number | undefined): string {
  const d = l.letter;
  return JSON.stringify({
    seq: l.seq,
    storedAt: new Date(l.storedAt).toISOString(),
    stage: d.stage,
    reason: d.reason,
    streamSeq: d.streamSeq,
    rowIndex: d.rowIndex,
    row: d.original,
    ...(d.originalBytes !== undefined ? { originalBytes: d.originalBytes } : {}),
    replayedAt: replayedAt === undefined ? null : new Date(replayedAt).toISOString(),
  });
}

/** The replay items of a file: one per line, `seq` and `row` (an object) or `rows` (objects). */
function itemsOfFile(file: string): ReplayItem[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new UsageError(`cannot read input file '${file}'`);
  }
  const items: ReplayItem[] = [];
  const seen = new Set<number>();
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "") return;
    const where = `${file}:${i + 1}`;
    let o: unknown;
    try {
      // Without rounding, as `write` and `publish` read rows: a fixed BIGINT beyond 2^53 keeps its digits.
      o = parseRowJson(line);
    } catch (e) {
      throw new UsageError(`${where}: not valid JSON (${(e as Error).message})`);
    }
    const rec = o as { seq?: unknown; row?: unknown; rows?: unknown } | null;
    if (rec === null || typeof rec !== "object" || typeof rec.seq !== "number" || !Number.isInteger(rec.seq) || rec.seq <= 0)
      throw new UsageError(`${where}: expected {"seq": <DLQ sequence>, "row": {…}} (or "rows": [{…}, …])`);
    const rows = rec.rows !== undefined ? rec.rows : [rec.row];
    if (!Array.isArray(rows) || rows.some((r) => r === null || typeof r !== "object" || Array.isArray(r)))
      throw new UsageError(`${where}: letter ${rec.seq}: its row must be a JSON object keyed by column name (a letter whose original could not be read or was cut holds text there: write the row)`);
    if (seen.has(rec.seq)) throw new UsageError(`${where}: letter ${rec.seq} is named twice`);
    seen.add(rec.seq);
    items.push({ seq: rec.seq, rows: rows as Array<Record<string, unknown>>, source: "file", where });
  });
  return items;
}

export function registerDlqCommands(program: Command, out: (s: string) => void): void {
  const dlq = program
    .command("dlq")
    .description("a table's dead letters: list them, and replay their rows once the cause is fixed")
    .addHelpText("after", examples("natslake dlq list shop.orders --nats nats://127.0.0.1:4222", "natslake dlq replay shop.orders fixed.jsonl --nats nats://127.0.0.1:4222"));

  dlq
    .command("list <table>")
    .description("the table's dead letters, oldest first: DLQ sequence, stage, reason, where the row was published, replayed or not")
    .requiredOption("--nats <url>", "the cluster's NATS server(s)")
    .option("--prefix <p>", "the cluster's subject prefix", DEFAULT_PREFIX)
    .option("--from-seq <n>", "start at this DLQ sequence", parsePositiveInt("--from-seq"))
    .option("--limit <n>", "at most this many letters", parsePositiveInt("--limit"), 100)
    .option("--format <f>", "table, or jsonl (one letter per line, its row under `row`: what `dlq replay <file>` reads)", "table")
    .option("--pending", "only letters not replayed yet")
    .addHelpText("after", examples("natslake dlq list shop.orders --nats nats://127.0.0.1:4222 --pending", "natslake dlq list shop.orders --nats nats://127.0.0.1:4222 --format jsonl --limit 1000"))
    .action(async (name: string, o: ListFlags) => {
      if (o.format !== "table" && o.format !== "jsonl") throw new UsageError(`--format must be table or jsonl, got '${o.format}'`);
      const id = parseIdentifier(name);
      const subjects = new Subjects(o.prefix);
      const nc = await connectOrExplain({ ...o, nats: o.nats }, { name: "natslake-dlq" });
      try {
        await checkTable(nc, subjects, name);
        const { letters, more } = await readLetters(nc, subjects, id, { ...(o.fromSeq !== undefined ? { fromSeq: o.fromSeq } : {}), limit: o.limit });
        const replays = await replaysOf(await replayRecords(nc, subjects, false), subjects, id);
        const shown = letters.filter((l) => !(o.pending === true && replays.has(l.seq)));
        if (o.format === "jsonl") for (const l of shown) out(letterLine(l, replays.get(l.seq)?.at));
        else {
          out(
            renderTable(
              ["seq", "stored", "stage", "from (stream seq#row)", "reason", "replayed"],
              shown.map((l) => [l.seq, new Date(l.storedAt).toISOString(), l.letter.stage, `${l.letter.streamSeq}#${l.letter.rowIndex}`, l.letter.reason, replays.has(l.seq) ? new Date(replays.get(l.seq)!.at).toISOString() : "no"]),
            ),
          );
        }
        const next = letters.length > 0 ? letters[letters.length - 1]!.seq + 1 : undefined;
        process.stderr.write(`${shown.length} letter(s) of ${name}${o.pending === true ? " not replayed" : ""}${more && next !== undefined ? `; more follow: --from-seq ${next}` : ""}\n`);
      } finally {
        await nc.close().catch(() => undefined);
      }
    });

  dlq
    .command("replay <table> [file]")
    .description("publish dead letters' rows again: fixed rows from a file (as `dlq list --format jsonl` writes it), or without a file the letters not replayed yet, as they are")
    .requiredOption("--nats <url>", "the cluster's NATS server(s)")
    .option("--prefix <p>", "the cluster's subject prefix", DEFAULT_PREFIX)
    .option("--seq <list>", "only these letters (DLQ sequences, comma-separated; repeatable)", seqList)
    .option("--again", "also letters replayed before")
    .option("--dry-run", "check the letters and rows, publish nothing")
    .option("--wait-visible", "wait until a snapshot holds the replayed rows")
    .option("--no-progress", "no progress bar")
    .addHelpText(
      "after",
      examples(
        "natslake dlq replay shop.orders fixed.jsonl --nats nats://127.0.0.1:4222 --wait-visible",
        "natslake dlq replay shop.orders --nats nats://127.0.0.1:4222 --seq 12,15 --dry-run",
      ) +
        "\nA file line is {\"seq\": <DLQ sequence>, \"row\": {…}} or {\"seq\": N, \"rows\": [{…}, …]}; `dlq list --format jsonl` writes\n" +
        "such lines. Replayed letters stay in the DLQ (marked replayed) until its limits drop them.",
    )
    .action(async (name: string, file: string | undefined, o: ReplayFlags) => {
      const id = parseIdentifier(name);
      const subjects = new Subjects(o.prefix);
      const fromFile = file !== undefined ? itemsOfFile(file) : null;
      const nc = await connectOrExplain({ ...o, nats: o.nats }, { name: "natslake-dlq" });
      const bar = new SingleBar({ format: "replaying |{bar}| {value}/{total} letters", stream: process.stderr }, Presets.shades_classic);
      let barOn = false;
      try {
        await checkTable(nc, subjects, name);
        const wanted = o.seq !== undefined ? new Set(o.seq) : null;
        let items: ReplayItem[];
        if (fromFile !== null) items = wanted === null ? fromFile : fromFile.filter((it) => wanted.has(it.seq));
        else {
          // The letters as they are: every one still in the DLQ (the ones replayed before are skipped below).
          const { letters, more } = await readLetters(nc, subjects, id, { limit: MAX_LETTERS_PER_RUN });
          if (more) process.stderr.write(`note: the first ${MAX_LETTERS_PER_RUN} letters only; run it again for the rest (replayed ones are skipped)\n`);
          const chosen = wanted === null ? letters : letters.filter((l) => wanted.has(l.seq));
          if (wanted !== null) for (const s of wanted) if (!chosen.some((l) => l.seq === s)) throw new LakeError(ErrorKind.NotFound, `no dead letter of ${name} has sequence ${s} (dropped or aged out of the DLQ, or never one)`);
          const replays = o.again === true ? new Map() : await replaysOf(await replayRecords(nc, subjects, false), subjects, id);
          items = chosen.filter((l) => wanted !== null || !replays.has(l.seq)).map((l) => ({ seq: l.seq, rows: rowsOfLetter(l), source: "original" as const, where: `letter ${l.seq}` }));
        }
        if (o.seq !== undefined && fromFile !== null) for (const s of o.seq) if (!items.some((it) => it.seq === s)) throw new UsageError(`--seq ${s}: the file names no such letter`);
        if (items.length === 0) {
          out(`nothing to replay for ${name}${fromFile === null ? " (no dead letter that was not replayed yet)" : ""}`);
          return;
        }
        const tty = o.progress && process.stderr.isTTY === true && o.dryRun !== true;
        const r = await replay(nc, subjects, items, {
          table: id,
          tableName: name,
          again: o.again === true,
          dryRun: o.dryRun === true,
          onProgress: (done, total) => {
            if (!tty) return;
            if (!barOn) {
              bar.start(total, 0);
              barOn = true;
            }
            bar.update(done);
          },
        });
        if (barOn) {
          bar.stop();
          barOn = false;
        }
        const skipped = r.skipped.length > 0 ? `; ${r.skipped.length} replayed before, skipped (--again replays them): ${r.skipped.join(", ")}` : "";
        out(`${o.dryRun === true ? "dry run: would replay" : "replayed"} ${r.letters} letter(s) (${r.rows} row(s)) to ${name}${skipped}`);
        const notAcked = [...r.failed, ...r.unknown];
        if (notAcked.length > 0) {
          if (r.failed.length > 0) out(`  failed (not stored): letters ${r.failed.join(", ")}`);
          if (r.unknown.length > 0) out(`  unknown (no acknowledgement: may be stored; replaying them within the stream's duplicate window stores nothing twice): letters ${r.unknown.join(", ")}`);
          throw new CliError(`${notAcked.length} letter(s) were not replayed: ${r.firstError ?? "not acknowledged"}`);
        }
        if (o.waitVisible === true && o.dryRun !== true && r.letters > 0) {
          await waitReplayVisible(nc, subjects, r, 60_000);
          out("visible in a snapshot");
        }
      } finally {
        if (barOn) bar.stop();
        await nc.close().catch(() => undefined);
      }
    });
}
