/**
 * `natslake rollback <db.table> --to-snapshot N | --to-tag T [--dry-run] [--force] [--guard DURATION]`: Paimon's
 * rollback_to (src/maintenance/rollback.ts). Refused while the latest snapshot is a cluster's commit younger than the
 * guard window: a running cluster would re-ingest what the rollback removes (see the README).
 */
import type { Command } from "commander";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { DEFAULT_ROLLBACK_GUARD_MS, rollback } from "../../src/maintenance/rollback.ts";
import { catalogFrom, parseNonNegativeInt, UsageError, type WarehouseOpts, durationArg } from "./common.ts";


interface RollbackOpts extends WarehouseOpts {
  toSnapshot?: number;
  toTag?: string;
  dryRun?: boolean;
  force?: boolean;
  guard?: number;
  json?: boolean;
}

export function registerRollbackCommand(program: Command, out: (s: string) => void): void {
  program
    .command("rollback <table>")
    .description("roll the table back to a snapshot or a tag: later snapshots, their tags and the files only they used are deleted")
    .option("--to-snapshot <id>", "the snapshot to roll back to", parseNonNegativeInt("--to-snapshot"))
    .option("--to-tag <name>", "the tag to roll back to (its snapshot is written back when it was expired)")
    .option("--dry-run", "report what would be deleted, change nothing")
    .option("--force", "roll back even though a cluster committed the latest snapshot within the guard window")
    .option("--guard <duration>", `refuse when a cluster committed the latest snapshot within this (default ${DEFAULT_ROLLBACK_GUARD_MS / 1000} s)`, durationArg)
    .option("--json", "print the summary as JSON")
    .option("--warehouse <dir>", "warehouse directory (or NATSLAKE_WAREHOUSE)")
    .addHelpText("after", "\nExamples:\n  natslake rollback shop.orders --to-snapshot 41 --dry-run\n  natslake rollback shop.orders --to-tag before-backfill\n")
    .action(async (name: string, o: RollbackOpts) => {
      if ((o.toSnapshot === undefined) === (o.toTag === undefined)) throw new UsageError("give exactly one of --to-snapshot N and --to-tag NAME");
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      const r = await rollback(t, {
        ...(o.toSnapshot !== undefined ? { toSnapshot: o.toSnapshot } : {}),
        ...(o.toTag !== undefined ? { toTag: o.toTag } : {}),
        dryRun: o.dryRun === true,
        force: o.force === true,
        ...(o.guard !== undefined ? { guardMs: o.guard } : {}),
      });
      if (o.json) {
        out(JSON.stringify({ table: t.name, ...r }));
        return;
      }
      const [recreate, del] = r.dryRun ? ["would re-create", "would delete"] : ["re-created", "deleted"];
      if (r.snapshotsDeleted.length === 0 && r.tagsDeleted.length === 0 && !r.recreatedSnapshot) {
        out(`${t.name}: already at snapshot ${r.target}; nothing to roll back`);
        return;
      }
      const snaps = r.snapshotsDeleted.length ? `${r.snapshotsDeleted[0]}..${r.snapshotsDeleted[r.snapshotsDeleted.length - 1]} (${r.snapshotsDeleted.length})` : "none";
      out(
        `${t.name}: ${r.resumed ? "finishing an interrupted rollback: " : ""}${r.dryRun ? "would roll back" : "rolled back"} from snapshot ${r.fromLatest} to ${r.target}` +
          `${r.recreatedSnapshot ? ` (${recreate} snapshot ${r.target} from its tag)` : ""}; ${del} snapshots ${snaps}, ` +
          `${r.tagsDeleted.length} tags${r.tagsDeleted.length ? ` (${r.tagsDeleted.join(", ")})` : ""}, ${r.dataFilesDeleted} data files and ${r.manifestsDeleted} manifest files`,
      );
      if (r.damagedSnapshots.length > 0)
        out(`  damaged snapshots ${r.damagedSnapshots.join(", ")}: the files only they added are not known; \`natslake remove-orphans ${t.name}\` deletes them once older than its bound`);
    });
}
