/**
 * `natslake compact <db.table>`: rewrites an append table's small files into fewer, larger ones and commits one
 * COMPACT snapshot (src/maintenance/compact.ts has the rules). Readers see the same rows, in the same bucket order.
 * A primary-key table's buckets are compacted by their LSM levels (src/maintenance/compact-pk.ts): one pick of the
 * table's universal compaction per bucket, or with `--full` every sorted run into the top level.
 * With `--nats`, a table the cluster serves is compacted by its leader (maintenance-routing.ts); otherwise on the
 * warehouse directly — safe beside a cluster too: appends committed meanwhile stay, and a compaction whose inputs an
 * overwrite replaced fails with a conflict (exit 3) and leaves no files.
 */
import { Presets, SingleBar } from "cli-progress";
import type { Command } from "commander";
import type { CompactSummary } from "../../src/maintenance/compact.ts";
import { parseNonNegativeInt, WAREHOUSE_FLAG, WAREHOUSE_HELP } from "./common.ts";
import { addRoutingOptions, runRouted, type RoutingOpts } from "./maintenance-routing.ts";

interface CompactOpts extends RoutingOpts {
  partition?: string;
  bucket?: number;
  full?: boolean;
  dryRun?: boolean;
  json?: boolean;
  progress?: boolean;
}

const mb = (n: number): string => (n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`);

export function summaryLine(s: CompactSummary): string {
  if (s.primaryKey !== undefined) return primaryKeySummaryLine(s, s.primaryKey);
  if (s.tasks === 0) return `${s.table}: nothing to compact (${s.filesBefore} files, ${mb(s.bytesBefore)}; no run of small files long enough)`;
  if (s.dryRun) return `${s.table}: would compact ${s.inputFiles} files in ${s.tasks} task(s): ${s.filesBefore} → ${s.filesAfter} files, ${s.rows} rows rewritten; dry run, nothing written`;
  return (
    `${s.table}: compacted ${s.inputFiles} files into ${s.outputFiles} in ${s.tasks} task(s): ${s.filesBefore} → ${s.filesAfter} files, ` +
    `${mb(s.bytesBefore)} → ${mb(s.bytesAfter)}, ${s.rows} rows rewritten${s.rowsCopied > 0 ? ` (${s.rowsCopied} in row groups copied as they were)` : ""}; snapshot ${s.snapshotId ?? "(none)"}`
  );
}

function primaryKeySummaryLine(s: CompactSummary, pk: NonNullable<CompactSummary["primaryKey"]>): string {
  const buckets = `${s.tasks} bucket${s.tasks === 1 ? "" : "s"}`;
  if (s.tasks === 0) {
    const why = pk.full ? "every bucket is one sorted run at the top level already" : "no bucket's sorted runs call for a compaction (see num-sorted-run.compaction-trigger; --full compacts anyway)";
    return `${s.table}: nothing to compact (${s.filesBefore} files, ${mb(s.bytesBefore)}; ${why})`;
  }
  const levels = [...new Set(pk.buckets.map((b) => b.outputLevel))].sort((a, b) => a - b).join(", ");
  const dropped = pk.buckets.filter((b) => b.dropDelete).length;
  const what = `${pk.upgradedFiles} files moved up unchanged, ${pk.rewrittenFiles} rewritten into ${s.dryRun ? "about " : ""}${s.outputFiles - pk.upgradedFiles}`;
  const deletes = dropped > 0 ? `; deletes dropped in ${dropped} bucket${dropped === 1 ? "" : "s"} (compacted into their top level)` : "";
  if (s.dryRun) return `${s.table}: would compact ${buckets}${pk.full ? " fully" : ""} into level ${levels}: ${what}; ${s.rows} rows read; dry run, nothing written`;
  return (
    `${s.table}: compacted ${buckets}${pk.full ? " fully" : ""} into level ${levels}: ${what}; ${s.filesBefore} → ${s.filesAfter} files, ${mb(s.bytesBefore)} → ${mb(s.bytesAfter)}, ` +
    `${s.rows} rows read, ${pk.rowsWritten ?? 0} written${deletes}; snapshot ${s.snapshotId ?? "(none)"}`
  );
}

export function registerCompactCommand(program: Command, out: (s: string) => void): void {
  const cmd = program
    .command("compact <table>")
    .description("rewrite an append table's small files into fewer, larger ones, or compact a primary-key table's buckets by their levels (one COMPACT snapshot; readers see the same rows)")
    .option("--partition <k=v,...>", "compact only this partition")
    .option("--bucket <n>", "compact only this bucket", parseNonNegativeInt("--bucket"))
    .option("--full", "primary-key tables: every sorted run of each bucket into the top level (deletes dropped)")
    .option("--dry-run", "report what would be compacted, write nothing")
    .option("--json", "print the summary as JSON")
    .option("--no-progress", "no progress bar")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP);
  addRoutingOptions(cmd)
    .addHelpText("after", "\nExamples:\n  natslake compact shop.orders --partition dt=2026-11-29 --dry-run\n  natslake compact shop.users --full   # a primary-key table: every bucket to its top level\n  natslake compact shop.orders --nats nats://127.0.0.1:4222   # by the table's leader\n")
    .action(async (name: string, o: CompactOpts) => {
      const showBar = (o.progress ?? true) && !o.json && process.stderr.isTTY === true;
      const bar = new SingleBar({ format: "compacting |{bar}| {value}/{total} tasks | {files} files | {eta_formatted}", stream: process.stderr }, Presets.shades_classic);
      let started = false;
      try {
        const { result: s, note } = await runRouted(
          name,
          { task: "compact", options: { ...(o.partition !== undefined ? { partition: o.partition } : {}), ...(o.bucket !== undefined ? { bucket: o.bucket } : {}), ...(o.full === true ? { full: true } : {}), dryRun: o.dryRun === true } },
          o,
          {
            wantsProgress: showBar,
            warehouseMustExist: true,
            onProgress: (p) => {
              if (!showBar) return;
              if (!started) {
                bar.start(p.total, 0, { files: 0 });
                started = true;
              }
              bar.update(p.done, { files: p.files ?? 0 });
            },
          },
        );
        if (started) bar.stop();
        out(o.json ? JSON.stringify(s) : summaryLine(s));
        if (note !== undefined) process.stderr.write(`${note}\n`);
      } catch (e) {
        if (started) bar.stop();
        throw e;
      }
    });
}
