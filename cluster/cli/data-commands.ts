/**
 * `natslake write` (JSONL or CSV into a table, with progress) and `natslake read` (rows out as a table or JSONL).
 */
import { statSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { SingleBar, Presets } from "cli-progress";
import type { Command } from "commander";
import { parsePartitionSpec } from "../../src/format/partition.ts";
import { toJsonText, toJsonValue } from "../../src/format/values.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { BatchWriter, describeOverwrite } from "../../src/write/batch-writer.ts";
import { planRead, readColumns, readPlanRows } from "../../src/scan/read.ts";
import { tableForRead } from "../../src/scan/plan.ts";
import { catalogFrom, errnoCode, parseNonNegativeInt, parseTime, renderTable, UsageError, type WarehouseOpts, WAREHOUSE_FLAG, WAREHOUSE_HELP, examples } from "./common.ts";
import type { Table } from "../../src/table/table.ts";
import { readRecords } from "./input.ts";
import { isLakeError, LakeError } from "../../src/errors.ts";
import { parseIncrementalRange, type IncrementalRange } from "../../src/scan/incremental.ts";

const BATCH_ROWS = 50_000;

interface WriteOpts extends WarehouseOpts {
  overwrite?: boolean;
  partition?: string;
  overwriteAll?: boolean;
  dryRun?: boolean;
  format?: string;
  progress?: boolean;
}

/** Parsed input records in batches, each with the file line of every record (the one reader `publish` uses too). */
async function* readInput(file: string, format: "jsonl" | "csv", onBytes: (n: number) => void): AsyncGenerator<{ records: Record<string, unknown>[]; lines: number[] }> {
  let records: Record<string, unknown>[] = [];
  let lines: number[] = [];
  for await (const { record, line } of readRecords(file, format, onBytes)) {
    records.push(record);
    lines.push(line);
    if (records.length >= BATCH_ROWS) {
      yield { records, lines };
      records = [];
      lines = [];
    }
  }
  if (records.length > 0) yield { records, lines };
}

/**
 * A bad row's error as `<file>:<line>: …`, as `publish` names it: the writer counts rows (`row N`, 1-based over the
 * whole write, in its context), the user knows lines.
 */
function atLine(e: unknown, file: string, rowsBefore: number, lines: readonly number[]): unknown {
  if (!isLakeError(e) || typeof e.context["row"] !== "number") return e;
  const line = lines[e.context["row"] - rowsBefore - 1];
  if (line === undefined) return e;
  const why = e.cause instanceof Error ? e.cause.message : e.message;
  return new LakeError(e.kind, `${file}:${line}: ${why}`, { context: { ...e.context, line }, cause: e });
}

function inputFormat(file: string, explicit?: string): "jsonl" | "csv" {
  const f = explicit ?? (file.endsWith(".csv") ? "csv" : file.endsWith(".jsonl") || file.endsWith(".json") || file.endsWith(".ndjson") ? "jsonl" : undefined);
  if (f !== "jsonl" && f !== "csv") throw new UsageError(`cannot tell the format of '${file}': name it .jsonl or .csv, or pass --format jsonl|csv`);
  return f;
}

async function overwriteSpec(t: Table, o: WriteOpts): Promise<BatchWriter["overwrite"]> {
  if (o.overwriteAll && (o.overwrite || o.partition)) throw new UsageError("--overwrite-all replaces the whole table; do not combine it with --overwrite/--partition");
  if (o.overwriteAll) return { partition: null };
  if (o.partition && !o.overwrite) throw new UsageError("--partition is only meaningful with --overwrite");
  if (o.overwrite) {
    if (t.partitionKeys.length === 0) throw new UsageError(`${t.name} is not partitioned: use --overwrite-all to replace the whole table`);
    if (!o.partition) throw new UsageError(`--overwrite needs --partition k=v[,k=v] (partition keys: ${t.partitionKeys.join(", ")}), or --overwrite-all to replace the whole table`);
    return { partition: parsePartitionSpec(o.partition, t.partitionKeys, t.partitionTypes) };
  }
  if (o.dryRun) throw new UsageError("--dry-run applies to --overwrite or --overwrite-all");
  return undefined;
}

export function registerDataCommands(program: Command, out: (s: string) => void): void {
  program
    .command("write <table> <file>")
    .description("write the rows of a JSONL or CSV file into a table, as one snapshot (a primary-key table's rows may name their kind in _row_kind: +I, -U, +U, -D; a -D needs only the key)")
    .option("--format <jsonl|csv>", "input format (default: from the file extension)")
    .option("--overwrite", "replace the partition given by --partition (INSERT OVERWRITE)")
    .option("--partition <k=v,...>", "the partition --overwrite replaces")
    .option("--overwrite-all", "replace the whole table")
    .option("--dry-run", "with --overwrite/--overwrite-all: show what would be replaced, write nothing")
    .option("--no-progress", "no progress bar")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", examples("natslake write shop.orders orders.jsonl --warehouse /data/wh", "natslake write shop.orders fix.jsonl --overwrite --partition dt=2026-11-29 --dry-run"))
    .action(async (name: string, file: string, o: WriteOpts) => {
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      const format = inputFormat(file, o.format);
      const overwrite = await overwriteSpec(t, o);
      let size: number;
      try {
        size = statSync(file).size;
      } catch {
        throw new UsageError(`cannot read input file '${file}'`);
      }
      if (o.dryRun && overwrite) {
        const d = await describeOverwrite(t, overwrite);
        out(`dry run: would replace ${d.files} files with ${d.rows} rows in ${d.partitions.length} partition(s) of ${t.name} at snapshot ${d.snapshotId ?? "(none)"}`);
        for (const p of d.partitions) out(`  ${p.path || "(unpartitioned)"}: ${p.files} files, ${p.rows} rows`);
        return;
      }
      const writer = await BatchWriter.open(t, { commitUser: randomUUID(), overwrite });
      const showBar = (o.progress ?? true) && process.stderr.isTTY === true;
      const bar = new SingleBar({ format: "writing |{bar}| {percentage}% | {rows} rows | {eta_formatted}", stream: process.stderr }, Presets.shades_classic);
      let bytes = 0;
      let rows = 0;
      if (showBar) bar.start(size, 0, { rows: 0 });
      try {
        for await (const { records, lines } of readInput(file, format, (n) => (bytes += n))) {
          await writer.write(records).catch((e: unknown) => {
            throw atLine(e, file, rows, lines);
          });
          rows += records.length;
          if (showBar) bar.update(Math.min(bytes, size), { rows });
          else if (o.progress ?? true) process.stderr.write(`written ${rows} rows (${Math.round((100 * Math.min(bytes, size)) / Math.max(size, 1))}%)\n`);
        }
        const res = await writer.commit();
        if (showBar) bar.stop();
        out(res.snapshot ? `wrote ${rows} rows to ${t.name} in ${res.files} files; snapshot ${res.snapshot.id}${res.replacedFiles ? ` (replaced ${res.replacedFiles} files)` : ""}` : `wrote 0 rows to ${t.name}; no snapshot`);
      } catch (e) {
        if (showBar) bar.stop();
        // The cause is what the user needs; a cleanup that fails as well (a read-only warehouse) must not hide it.
        try {
          await writer.abort();
        } catch (cleanup) {
          if (errnoCode(cleanup) !== errnoCode(e)) process.stderr.write(`note: removing the uncommitted data files failed too: ${cleanup instanceof Error ? cleanup.message : String(cleanup)}\n`);
        }
        throw e;
      }
    });

  program
    .command("read <table>")
    .description("read rows from the latest snapshot, or a given snapshot, point in time or tag in that snapshot's own schema")
    .option("--snapshot <id>", "read this snapshot", parseNonNegativeInt("--snapshot"))
    .option("--at <time>", "read the snapshot current at this time (ISO-8601 or epoch ms)", parseTime)
    .option("--tag <name>", "read the snapshot this tag holds")
    .option("--limit <n>", "at most n rows", parseNonNegativeInt("--limit"))
    .option("--columns <cols>", "comma-separated columns to read")
    .option("--partition <k=v,...>", "read only this partition")
    .option("--format <table|jsonl>", "output format", "table")
    .option("--incremental <A..B>", "only the rows added after snapshot A, up to and including B (APPEND snapshots; see README)", (v: string) => parseIncrementalRange(v))
    .option("--incremental-since <time>", "only the rows added after the snapshot current at this time, up to the latest", parseTime)
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", "\nExamples:\n  natslake read shop.orders --limit 10\n  natslake read shop.orders --incremental 41..57 --format jsonl\n  natslake read shop.orders --tag before-backfill\n")
    .action(async (name: string, o: WarehouseOpts & { snapshot?: number; at?: number; tag?: string; limit?: number; columns?: string; partition?: string; format: string; incremental?: IncrementalRange; incrementalSince?: number }) => {
      if (o.format !== "table" && o.format !== "jsonl") throw new UsageError(`--format must be table or jsonl, got '${o.format}'`);
      if ([o.snapshot, o.at, o.tag].filter((x) => x !== undefined).length > 1) throw new UsageError("use one of --snapshot, --at and --tag");
      const incrementalFlags = [o.incremental, o.incrementalSince].filter((x) => x !== undefined).length;
      if (incrementalFlags > 1 || (incrementalFlags === 1 && (o.snapshot !== undefined || o.at !== undefined || o.tag !== undefined)))
        throw new UsageError("--incremental and --incremental-since read a range of snapshots: use one of them, without --snapshot, --at or --tag");
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      let incremental = o.incremental;
      if (o.incrementalSince !== undefined) {
        const base = await t.snapshots.atOrBefore(o.incrementalSince);
        const latest = await t.snapshots.latestId();
        if (latest === null) throw new UsageError(`${t.name} has no snapshots`);
        incremental = { from: base?.id ?? 0, to: latest };
      }
      const chosen = {
        ...(o.snapshot !== undefined ? { snapshotId: o.snapshot } : {}),
        ...(o.at !== undefined ? { atTimeMillis: o.at } : {}),
        ...(o.tag !== undefined ? { tag: o.tag } : {}),
      };
      // A chosen snapshot is read in its own schema (time travel): its columns, and the partition keys named here.
      const read = await tableForRead(t, chosen);
      const projection = o.columns?.split(",").map((s) => s.trim()).filter(Boolean);
      const partition = o.partition ? parsePartitionSpec(o.partition, read.partitionKeys, read.partitionTypes) : undefined;
      const spec = {
        ...chosen,
        ...(projection ? { projection } : {}),
        ...(partition ? { partition } : {}),
        ...(o.limit !== undefined ? { limit: o.limit } : {}),
        ...(incremental !== undefined ? { incremental } : {}),
      };
      // `--incremental-since` a time at or after the latest snapshot: nothing was added since.
      const nothingNew = incremental !== undefined && incremental.from >= incremental.to;
      const plan = nothingNew ? { snapshot: null, schema: read.schema, timeTravel: false, splits: [] } : await planRead(read, spec);
      const fields = readColumns(read, plan, projection);
      const rows: unknown[][] = [];
      for await (const row of readPlanRows(read, plan, spec)) {
        if (o.format === "jsonl") {
          const obj: Record<string, unknown> = {};
          for (const f of fields) obj[f.name] = toJsonValue(f.type, row[f.name] ?? null);
          out(toJsonText(obj));
        } else {
          rows.push(fields.map((f) => toJsonValue(f.type, row[f.name] ?? null)));
        }
      }
      if (o.format === "table") {
        out(renderTable(fields.map((f) => f.name), rows));
        out(`(${rows.length} rows)`);
      }
    });
}
