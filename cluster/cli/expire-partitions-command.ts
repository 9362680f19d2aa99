/**
 * `natslake expire-partitions <db.table>`: drops the partitions past their retention (Paimon's partition expiration,
 * src/maintenance/expire-partitions.ts) in one OVERWRITE snapshot. The flags override the table's `partition.*`
 * options. With `--nats`, a table the cluster serves is expired by its leader (maintenance-routing.ts); otherwise on
 * the warehouse directly — safe beside a running cluster too: the drop is built on the latest snapshot at commit
 * time and carries its stream offsets forward. The files go later, with the snapshots that still reference them.
 */
import type { Command } from "commander";
import { InvalidArgumentError } from "commander";
import { compileFormatter } from "../../src/maintenance/partition-time.ts";
import type { ExpirePartitionsResult } from "../../src/maintenance/expire-partitions.ts";
import { addRoutingOptions, runRouted, type RoutingOpts } from "./maintenance-routing.ts";
import { durationArg, WAREHOUSE_FLAG, WAREHOUSE_HELP } from "./common.ts";


function formatterArg(v: string): string {
  try {
    compileFormatter(v);
    return v;
  } catch (e) {
    throw new InvalidArgumentError(e instanceof Error ? e.message : String(e));
  }
}

function patternArg(v: string): string {
  if (!v.includes("$")) throw new InvalidArgumentError(`'${v}' names no partition key (e.g. '$dt' or '$dt $hour:00:00')`);
  return v;
}

interface Opts extends RoutingOpts {
  expirationTime?: number;
  timestampFormatter?: string;
  timestampPattern?: string;
  dryRun?: boolean;
  json?: boolean;
}

function summary(r: ExpirePartitionsResult): string[] {
  const lines: string[] = [];
  const verb = r.dryRun ? "would drop" : "dropped";
  if (r.partitions.length === 0) lines.push(`${r.table}: no partition older than ${r.cutoff} (${r.strategy})`);
  else {
    const where = r.dryRun ? "" : ` in snapshot ${r.snapshotIds.join(", ")}`;
    lines.push(`${r.table}: ${verb} ${r.partitions.length} partition(s) older than ${r.cutoff}${where}: ${r.files} files, ${r.rows} rows`);
    for (const p of r.partitions) lines.push(`  ${p.path}  (${p.time ?? "?"}; ${p.files} files, ${p.rows} rows)`);
  }
  if (r.deferred > 0) lines.push(`${r.deferred} more expired partition(s) left for the next run (partition.expiration-max-num)`);
  for (const s of r.skipped) lines.push(`kept ${s.path}: ${s.reason}`);
  if (!r.dryRun && r.partitions.length > 0) lines.push("the files stay until snapshot expiration removes the snapshots that reference them");
  return lines;
}

export function registerExpirePartitionsCommand(program: Command, out: (s: string) => void): void {
  const cmd = program
    .command("expire-partitions <table>")
    .description("drop the partitions older than partition.expiration-time (by their values' time) in one OVERWRITE snapshot")
    .option("--expiration-time <duration>", "drop partitions older than this (partition.expiration-time), e.g. 7 d", durationArg)
    .option("--timestamp-formatter <pattern>", "Java DateTimeFormatter pattern of the partition time (partition.timestamp-formatter), e.g. yyyy-MM-dd", formatterArg)
    .option("--timestamp-pattern <pattern>", "partition time from the values (partition.timestamp-pattern), e.g. '$dt $hour:00:00'", patternArg)
    .option("--dry-run", "list the partitions that would be dropped, change nothing")
    .option("--json", "print the summary as JSON")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP);
  addRoutingOptions(cmd)
    .addHelpText(
      "after",
      "\nExample (daily dt partitions kept 7 days):\n  natslake expire-partitions shop.orders --expiration-time '7 d' --timestamp-formatter yyyy-MM-dd --dry-run\n\n" +
        "Without flags the table's options decide: partition.expiration-time, partition.timestamp-formatter,\n" +
        "partition.timestamp-pattern, partition.expiration-strategy, partition.expiration-max-num.\n",
    )
    .action(async (name: string, o: Opts) => {
      const options = {
        ...(o.expirationTime !== undefined ? { expirationTimeMs: o.expirationTime } : {}),
        ...(o.timestampFormatter !== undefined ? { timestampFormatter: o.timestampFormatter } : {}),
        ...(o.timestampPattern !== undefined ? { timestampPattern: o.timestampPattern } : {}),
        dryRun: o.dryRun === true,
      };
      const { result: r, note } = await runRouted(name, { task: "expire-partitions", options }, o, { wantsProgress: false, onProgress: () => undefined, warehouseMustExist: true });
      if (o.json) out(JSON.stringify(r));
      else for (const line of summary(r)) out(line);
      if (note !== undefined) process.stderr.write(`${note}\n`);
    });
}
