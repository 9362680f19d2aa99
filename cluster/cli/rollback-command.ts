/**
 * `natslake rollback <db.table> --to-snapshot N | --to-tag T [--dry-run] [--keep-history] [--force] [--guard D]
 * [--nats URL]`. Two ways to roll back (docs/guide/maintenance.md, "Rollback and restore"):
 * - Paimon's `rollback_to` (src/maintenance/rollback.ts, the default on the warehouse): the later snapshots, their
 *   tags and the files only they used are deleted. Refused while the latest snapshot is a cluster's commit younger
 *   than the guard window: a cluster committing meanwhile would build on snapshots being deleted, and would resume
 *   from the old snapshot's offsets;
 * - a restore (src/maintenance/restore.ts, `--keep-history`, and always through a cluster): one new snapshot with
 *   the target's content; ids never repeat and the offsets go forward, so it is safe beside a running cluster. With
 *   `--nats`, a table the cluster serves is restored by its leader, one job at a time with its maintenance.
 */
import type { Command } from "commander";
import { DEFAULT_ROLLBACK_GUARD_MS, rollback, type RollbackResult } from "../../src/maintenance/rollback.ts";
import { restoreTable, type RestoreResult } from "../../src/maintenance/restore.ts";
import { parseNonNegativeInt, UsageError, durationArg, WAREHOUSE_FLAG, WAREHOUSE_HELP } from "./common.ts";
import { addRoutingOptions, runRouted, type RoutingOpts } from "./maintenance-routing.ts";

interface RollbackOpts extends RoutingOpts {
  toSnapshot?: number;
  toTag?: string;
  dryRun?: boolean;
  keepHistory?: boolean;
  force?: boolean;
  guard?: number;
  json?: boolean;
}

export function registerRollbackCommand(program: Command, out: (s: string) => void): void {
  const cmd = program
    .command("rollback <table>")
    .description("roll the table back to a snapshot or a tag (Paimon's rollback_to on the warehouse; one restoring snapshot with --keep-history or through a running cluster)")
    .option("--to-snapshot <id>", "the snapshot to roll back to", parseNonNegativeInt("--to-snapshot"))
    .option("--to-tag <name>", "the tag to roll back to (its snapshot is written back when it was expired)")
    .option("--dry-run", "report what would change, change nothing")
    .option("--keep-history", "restore the target's content as one new snapshot instead of deleting the later ones (safe beside a running cluster; what --nats does)")
    .option("--force", "Paimon's rollback even though a cluster committed the latest snapshot within the guard window")
    .option("--guard <duration>", `refuse Paimon's rollback when a cluster committed the latest snapshot within this (default ${DEFAULT_ROLLBACK_GUARD_MS / 1000} s)`, durationArg)
    .option("--json", "print the summary as JSON")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP);
  addRoutingOptions(cmd)
    .addHelpText(
      "after",
      "\nExamples:\n  natslake rollback shop.orders --to-snapshot 41 --dry-run\n  natslake rollback shop.orders --to-tag before-backfill\n  natslake rollback shop.orders --to-tag before-backfill --nats nats://127.0.0.1:4222   # a running cluster: its leader restores\n",
    )
    .action(async (name: string, o: RollbackOpts) => {
      if ((o.toSnapshot === undefined) === (o.toTag === undefined)) throw new UsageError("give exactly one of --to-snapshot N and --to-tag NAME");
      if (o.keepHistory === true && (o.force === true || o.guard !== undefined)) throw new UsageError("--force and --guard apply to Paimon's rollback, not to --keep-history (a restore needs no guard)");
      const target = { ...(o.toSnapshot !== undefined ? { toSnapshot: o.toSnapshot } : {}), ...(o.toTag !== undefined ? { toTag: o.toTag } : {}) };
      const { result, note } = await runRouted<"restore", RestoreResult | (RollbackResult & { table: string })>(
        name,
        { task: "restore", options: { ...target, dryRun: o.dryRun === true } },
        o,
        { wantsProgress: false, onProgress: () => undefined, warehouseMustExist: true },
        async (t) =>
          o.keepHistory === true
            ? restoreTable(t, { ...target, dryRun: o.dryRun === true })
            : rollback(t, { ...target, dryRun: o.dryRun === true, force: o.force === true, ...(o.guard !== undefined ? { guardMs: o.guard } : {}) }).then((r) => ({ table: t.name, ...r })),
      );
      if (o.json) out(JSON.stringify(result));
      else out("filesRestored" in result ? describeRestore(result) : describeRollback(result));
      if (note !== undefined) process.stderr.write(`${note}\n`);
    });
}

function describeRestore(r: RestoreResult): string {
  if (r.target === r.fromLatest || (r.filesRemoved === 0 && r.filesRestored === 0)) return `${r.table}: snapshot ${r.fromLatest} already holds the content of snapshot ${r.target}; nothing to restore`;
  const what = `${r.filesRemoved} files removed, ${r.filesRestored} brought back under new names, ${r.rowsBefore} → ${r.rowsAfter} rows`;
  if (r.dryRun) return `${r.table}: would restore the content of snapshot ${r.target} on top of snapshot ${r.fromLatest} as one new snapshot: ${what}`;
  return `${r.table}: restored the content of snapshot ${r.target} as snapshot ${r.snapshot} (on top of ${r.fromLatest}): ${what}; snapshots ${r.target + 1}..${r.fromLatest} stay for time travel until they expire`;
}

function describeRollback(r: RollbackResult & { table: string }): string {
  const [recreate, del] = r.dryRun ? ["would re-create", "would delete"] : ["re-created", "deleted"];
  if (r.snapshotsDeleted.length === 0 && r.tagsDeleted.length === 0 && !r.recreatedSnapshot) return `${r.table}: already at snapshot ${r.target}; nothing to roll back`;
  const snaps = r.snapshotsDeleted.length ? `${r.snapshotsDeleted[0]}..${r.snapshotsDeleted[r.snapshotsDeleted.length - 1]} (${r.snapshotsDeleted.length})` : "none";
  return (
    `${r.table}: ${r.resumed ? "finishing an interrupted rollback: " : ""}${r.dryRun ? "would roll back" : "rolled back"} from snapshot ${r.fromLatest} to ${r.target}` +
    `${r.recreatedSnapshot ? ` (${recreate} snapshot ${r.target} from its tag)` : ""}; ${del} snapshots ${snaps}, ` +
    `${r.tagsDeleted.length} tags${r.tagsDeleted.length ? ` (${r.tagsDeleted.join(", ")})` : ""}, ${r.dataFilesDeleted} data files${r.changelogFilesDeleted > 0 ? `, ${r.changelogFilesDeleted} changelog files` : ""} and ${r.manifestsDeleted} manifest files` +
    (r.damagedSnapshots.length > 0
      ? `\n  damaged snapshots ${r.damagedSnapshots.join(", ")}: the files only they added are not known; \`natslake remove-orphans ${r.table}\` deletes them once older than its bound`
      : "")
  );
}
