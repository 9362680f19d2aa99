/**
 * `natslake compact <db.table>`: rewrites an append table's small files into fewer, larger ones and commits one
 * COMPACT snapshot (src/maintenance/compact.ts has the rules). Readers see the same rows, in the same bucket order.
 * It works on the warehouse directly; beside a cluster serving the table it is safe — appends committed meanwhile
 * stay, and a compaction whose inputs an overwrite replaced fails with a conflict (exit 3) and leaves no files.
 */
import { randomUUID } from "node:crypto";
import { Presets, SingleBar } from "cli-progress";
import type { Command } from "commander";
import { compactTable, type CompactSummary } from "../../src/maintenance/compact.ts";
import { parsePartitionSpec } from "../../src/spec/partition.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { catalogFrom, parseNonNegativeInt, UsageError, type WarehouseOpts } from "./common.ts";

interface CompactOpts extends WarehouseOpts {
  partition?: string;
  bucket?: number;
  dryRun?: boolean;
  json?: boolean;
  progress?: boolean;
}

const mb = (n: number): string => (n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`);

export function summaryLine(s: CompactSummary): string {
  if (s.tasks === 0) return `${s.table}: nothing to compact (${s.filesBefore} files, ${mb(s.bytesBefore)}; no run of small files long enough)`;
  if (s.dryRun) return `${s.table}: would compact ${s.inputFiles} files in ${s.tasks} task(s): ${s.filesBefore} → ${s.filesAfter} files, ${s.rows} rows rewritten; dry run, nothing written`;
  return (
    `${s.table}: compacted ${s.inputFiles} files into ${s.outputFiles} in ${s.tasks} task(s): ${s.filesBefore} → ${s.filesAfter} files, ` +
    `${mb(s.bytesBefore)} → ${mb(s.bytesAfter)}, ${s.rows} rows rewritten; snapshot ${s.snapshotId ?? "(none)"}`
  );
}

export function registerCompactCommand(program: Command, out: (s: string) => void): void {
  program
    .command("compact <table>")
    .description("rewrite an append table's small files into fewer, larger ones (one COMPACT snapshot; readers see the same rows)")
    .option("--partition <k=v,...>", "compact only this partition")
    .option("--bucket <n>", "compact only this bucket", parseNonNegativeInt("--bucket"))
    .option("--dry-run", "report what would be compacted, write nothing")
    .option("--json", "print the summary as JSON")
    .option("--no-progress", "no progress bar")
    .option("--warehouse <dir>", "warehouse directory (or NATSLAKE_WAREHOUSE)")
    .addHelpText("after", "\nExample:\n  natslake compact shop.orders --partition dt=2026-11-29 --dry-run\n")
    .action(async (name: string, o: CompactOpts) => {
      const table = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      if (o.partition !== undefined && table.partitionKeys.length === 0) throw new UsageError(`${table.name} is not partitioned: --partition does not apply`);
      if (o.bucket !== undefined && table.bucket <= 0) throw new UsageError(`${table.name} has no fixed buckets (bucket = ${table.bucket}): --bucket does not apply`);
      if (o.bucket !== undefined && o.bucket >= table.bucket) throw new UsageError(`--bucket ${o.bucket}: ${table.name} has buckets 0..${table.bucket - 1}`);
      const partition = o.partition === undefined ? undefined : parsePartitionSpec(o.partition, table.partitionKeys, table.partitionTypes, { defaultName: table.options.partitionDefaultName });
      const showBar = (o.progress ?? true) && !o.json && process.stderr.isTTY === true;
      const bar = new SingleBar({ format: "compacting |{bar}| {value}/{total} tasks | {files} files | {eta_formatted}", stream: process.stderr }, Presets.shades_classic);
      let started = false;
      let files = 0;
      try {
        const s = await compactTable(table, {
          ...(partition !== undefined ? { partition } : {}),
          ...(o.bucket !== undefined ? { bucket: o.bucket } : {}),
          dryRun: o.dryRun === true,
          commitUser: randomUUID(),
          onProgress: (done, total, task) => {
            files += task.files.length;
            if (!showBar) return;
            if (!started) {
              bar.start(total, 0, { files: 0 });
              started = true;
            }
            bar.update(done, { files });
          },
        });
        if (started) bar.stop();
        out(o.json ? JSON.stringify(s) : summaryLine(s));
      } catch (e) {
        if (started) bar.stop();
        throw e;
      }
    });
}
