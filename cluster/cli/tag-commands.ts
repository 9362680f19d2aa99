/**
 * `natslake tag create|delete|list`: tags in Paimon's format (src/table/tags.ts), readable by Java Paimon and
 * pypaimon (`scan.tag-name`) and by `natslake read --tag`.
 */
import type { Command } from "commander";
import { InvalidArgumentError } from "commander";
import { parseDuration } from "../../src/options.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { createTag, deleteTag, listTags, type Tag } from "../../src/table/tags.ts";
import { catalogFrom, parseNonNegativeInt, renderTable, type WarehouseOpts, WAREHOUSE_FLAG, WAREHOUSE_HELP, examples } from "./common.ts";

function durationArg(v: string): number {
  try {
    const ms = parseDuration(v);
    if (ms > 0) return ms;
  } catch {
    // the message below
  }
  throw new InvalidArgumentError(`not a positive duration: '${v}' (e.g. 30 s, 10 min, 1 h, 7 d)`);
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function tagJson(t: Tag): Record<string, unknown> {
  return {
    name: t.name,
    snapshot: t.snapshot.id,
    snapshotTime: iso(t.snapshot.timeMillis),
    createTime: iso(t.createTimeMillis),
    timeRetainedMs: t.timeRetainedMs,
    records: t.snapshot.totalRecordCount,
  };
}

export function registerTagCommands(program: Command, out: (s: string) => void): void {
  const tag = program.command("tag").description("create, delete and list tags (named snapshots that expiration keeps)").addHelpText("after", examples("natslake tag create shop.orders before-backfill", "natslake tag list shop.orders"));

  tag
    .command("create <table> <name>")
    .description("tag the latest snapshot, or --snapshot N")
    .option("--snapshot <id>", "the snapshot to tag (default: the latest)", parseNonNegativeInt("--snapshot"))
    .option("--time-retained <duration>", "record how long the tag is meant to be kept (Paimon's tagTimeRetained), e.g. 7 d", durationArg)
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", "\nExample:\n  natslake tag create shop.orders before-backfill --snapshot 42 --time-retained '30 d'\n")
    .action(async (name: string, tagName: string, o: WarehouseOpts & { snapshot?: number; timeRetained?: number }) => {
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      const created = await createTag(t, tagName, {
        ...(o.snapshot !== undefined ? { snapshotId: o.snapshot } : {}),
        ...(o.timeRetained !== undefined ? { timeRetainedMs: o.timeRetained } : {}),
      });
      out(`created tag '${created.name}' of ${t.name} on snapshot ${created.snapshot.id}`);
    });

  tag
    .command("delete <table> <name>")
    .description("delete a tag (and, when its snapshot was expired, the files only it still held)")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", examples("natslake tag delete shop.orders before-backfill"))
    .action(async (name: string, tagName: string, o: WarehouseOpts) => {
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      const r = await deleteTag(t, tagName);
      const changelog = r.changelogFilesDeleted > 0 ? `, ${r.changelogFilesDeleted} changelog files` : "";
      const files = r.dataFilesDeleted + r.changelogFilesDeleted + r.manifestsDeleted > 0 ? `; deleted ${r.dataFilesDeleted} data files${changelog} and ${r.manifestsDeleted} manifest files only it held` : "";
      out(`deleted tag '${r.tag.name}' of ${t.name} (snapshot ${r.tag.snapshot.id})${files}`);
    });

  tag
    .command("list <table>")
    .description("list the tags: name, snapshot, create time, retention")
    .option("--json", "one JSON object per tag")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", examples("natslake tag list shop.orders --json"))
    .action(async (name: string, o: WarehouseOpts & { json?: boolean }) => {
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      const tags = await listTags(t);
      if (o.json) {
        for (const x of tags) out(JSON.stringify(tagJson(x)));
        return;
      }
      const rows = tags.map((x) => {
        const j = tagJson(x);
        return [j["name"], j["snapshot"], j["snapshotTime"], j["createTime"] ?? "-", x.timeRetainedMs === null ? "-" : `${x.timeRetainedMs / 1000} s`];
      });
      out(renderTable(["tag", "snapshot", "snapshot time", "created", "retained"], rows));
      out(`(${tags.length} tags)`);
    });
}
