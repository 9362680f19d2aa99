/**
 * Table maintenance from the CLI: `natslake expire-snapshots` (Paimon's expire_snapshots procedure, same argument
 * names). With `--nats`, a table the cluster serves is expired by its leader, one job at a time with the leader's
 * scheduled expiration (maintenance-routing.ts); otherwise on the warehouse directly — safe beside a cluster too
 * (expiration only removes snapshots older than the ones commits build on, and two expirations of the same range
 * delete the same files), though the two runs' deletes then interleave.
 */
import type { Command } from "commander";
import { parsePositiveInt, durationArg, WAREHOUSE_FLAG, WAREHOUSE_HELP } from "./common.ts";
import { addRoutingOptions, runRouted, type RoutingOpts } from "./maintenance-routing.ts";


export function registerMaintenanceCommands(program: Command, out: (s: string) => void): void {
  const cmd = program
    .command("expire-snapshots <table>")
    .description("delete old snapshots and the files only they reference, by the table's snapshot.* options or these flags")
    .option("--retain-min <n>", "keep at least this many snapshots (snapshot.num-retained.min)", parsePositiveInt("--retain-min"))
    .option("--retain-max <n>", "keep at most this many snapshots (snapshot.num-retained.max)", parsePositiveInt("--retain-max"))
    .option("--older-than <duration>", "expire only snapshots older than this (snapshot.time-retained), e.g. 1 h", durationArg)
    .option("--max-deletes <n>", "expire at most this many snapshots in this run (snapshot.expire.limit)", parsePositiveInt("--max-deletes"))
    .option("--dry-run", "report what would be deleted, delete nothing")
    .option("--json", "print the summary as JSON")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP);
  addRoutingOptions(cmd)
    .addHelpText("after", "\nExample:\n  natslake expire-snapshots shop.orders --retain-min 10 --older-than '1 h' --dry-run\n")
    .action(async (name: string, o: RoutingOpts & { retainMin?: number; retainMax?: number; olderThan?: number; maxDeletes?: number; dryRun?: boolean; json?: boolean }) => {
      const options = {
        ...(o.retainMin !== undefined ? { retainMin: o.retainMin } : {}),
        ...(o.retainMax !== undefined ? { retainMax: o.retainMax } : {}),
        ...(o.olderThan !== undefined ? { olderThanMs: o.olderThan } : {}),
        ...(o.maxDeletes !== undefined ? { maxDeletes: o.maxDeletes } : {}),
        dryRun: o.dryRun === true,
      };
      const { result: r, note } = await runRouted(name, { task: "expire-snapshots", options }, o, { wantsProgress: false, onProgress: () => undefined, warehouseMustExist: false });
      if (o.json) out(JSON.stringify(r));
      else {
        const verb = r.dryRun ? "would expire" : "expired";
        if (r.to <= r.from) out(`${r.table}: nothing to expire`);
        else
          out(
            `${r.table}: ${verb} snapshots ${r.from}..${r.to - 1} (${r.snapshotsDeleted}); ` +
              // An older leader's result (a rolling upgrade) has no changelog count.
              `${r.dryRun ? "would delete" : "deleted"} ${r.dataFilesDeleted} data files${r.changelogFilesDeleted > 0 ? `, ${r.changelogFilesDeleted} changelog files` : ""} and ${r.manifestsDeleted} manifest files; earliest snapshot now ${r.to}`,
          );
        // Results of an older leader (a rolling upgrade) carry no list.
        const damaged = r.damagedSnapshots ?? [];
        if (damaged.length > 0) out(`  damaged snapshots ${damaged.join(", ")} expired: the files only they referenced are left to \`natslake remove-orphans ${r.table}\``);
      }
      if (note !== undefined) process.stderr.write(`${note}\n`);
    });
}
