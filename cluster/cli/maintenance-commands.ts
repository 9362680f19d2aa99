/**
 * Table maintenance from the CLI: `natslake expire-snapshots` (Paimon's expire_snapshots procedure, same argument
 * names). It works on the warehouse directly; running it beside a cluster that serves the table is safe — expiration
 * only removes snapshots older than the ones commits build on, and two expirations of the same range delete the same
 * files — but the cluster's own schedule makes it unnecessary there.
 */
import type { Command } from "commander";
import { InvalidArgumentError } from "commander";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { parseDuration } from "../../src/options.ts";
import { expireSnapshots } from "../../src/maintenance/expire-snapshots.ts";
import { catalogFrom, parsePositiveInt, type WarehouseOpts } from "./common.ts";

function durationArg(v: string): number {
  try {
    return parseDuration(v);
  } catch {
    throw new InvalidArgumentError(`not a duration: '${v}' (e.g. 30 s, 10 min, 1 h, 7 d)`);
  }
}

export function registerMaintenanceCommands(program: Command, out: (s: string) => void): void {
  program
    .command("expire-snapshots <table>")
    .description("delete old snapshots and the files only they reference, by the table's snapshot.* options or these flags")
    .option("--retain-min <n>", "keep at least this many snapshots (snapshot.num-retained.min)", parsePositiveInt("--retain-min"))
    .option("--retain-max <n>", "keep at most this many snapshots (snapshot.num-retained.max)", parsePositiveInt("--retain-max"))
    .option("--older-than <duration>", "expire only snapshots older than this (snapshot.time-retained), e.g. 1 h", durationArg)
    .option("--max-deletes <n>", "expire at most this many snapshots in this run (snapshot.expire.limit)", parsePositiveInt("--max-deletes"))
    .option("--dry-run", "report what would be deleted, delete nothing")
    .option("--json", "print the summary as JSON")
    .option("--warehouse <dir>", "warehouse directory (or NATSLAKE_WAREHOUSE)")
    .addHelpText("after", "\nExample:\n  natslake expire-snapshots shop.orders --retain-min 10 --older-than '1 h' --dry-run\n")
    .action(async (name: string, o: WarehouseOpts & { retainMin?: number; retainMax?: number; olderThan?: number; maxDeletes?: number; dryRun?: boolean; json?: boolean }) => {
      const table = await catalogFrom(o).getTable(parseIdentifier(name));
      const r = await expireSnapshots(table, {
        ...(o.retainMin !== undefined ? { retainMin: o.retainMin } : {}),
        ...(o.retainMax !== undefined ? { retainMax: o.retainMax } : {}),
        ...(o.olderThan !== undefined ? { timeRetainedMs: o.olderThan } : {}),
        ...(o.maxDeletes !== undefined ? { limit: o.maxDeletes } : {}),
        dryRun: o.dryRun === true,
      });
      if (o.json) {
        out(JSON.stringify({ table: table.name, ...r }));
        return;
      }
      const verb = r.dryRun ? "would expire" : "expired";
      if (r.to <= r.from) out(`${table.name}: nothing to expire`);
      else
        out(
          `${table.name}: ${verb} snapshots ${r.from}..${r.to - 1} (${r.snapshotsDeleted}); ` +
            `${r.dryRun ? "would delete" : "deleted"} ${r.dataFilesDeleted} data files and ${r.manifestsDeleted} manifest files; earliest snapshot now ${r.to}`,
        );
    });
}
