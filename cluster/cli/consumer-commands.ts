/**
 * `natslake consumer list|reset|delete`: consumers' read progress in Paimon's format (src/table/consumers.ts). A
 * consumer's `nextSnapshot` keeps snapshot expiration from removing what it still has to read.
 */
import type { Command } from "commander";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { checkConsumerIdFor, deleteConsumer, getConsumer, listConsumers, writeConsumer } from "../../src/table/consumers.ts";
import { checkName } from "../../src/names.ts";
import { catalogFrom, parseNonNegativeInt, renderTable, UsageError, type WarehouseOpts, WAREHOUSE_FLAG, WAREHOUSE_HELP, examples } from "./common.ts";

export function registerConsumerCommands(program: Command, out: (s: string) => void): void {
  const consumer = program.command("consumer").description("list, reset and delete consumers (read progress that snapshot expiration respects)").addHelpText("after", examples("natslake consumer list shop.orders --warehouse /data/wh", "natslake consumer reset shop.orders billing --next-snapshot 120"));

  consumer
    .command("list <table>")
    .description("every consumer of the table: its next snapshot and when it last recorded progress")
    .option("--json", "one JSON object per consumer")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", "\nExample:\n  natslake consumer list shop.orders --json\n")
    .action(async (name: string, o: WarehouseOpts & { json?: boolean }) => {
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      const latest = (await t.snapshots.latestId()) ?? 0;
      const cs = await listConsumers(t);
      const rows = cs.map((c) => ({ id: c.id, nextSnapshot: c.nextSnapshot, behind: Math.max(0, latest + 1 - c.nextSnapshot), updatedAt: new Date(c.updatedAtMillis).toISOString() }));
      if (o.json) for (const r of rows) out(JSON.stringify(r));
      else {
        out(renderTable(["consumer", "next snapshot", "snapshots behind", "last progress"], rows.map((r) => [r.id, r.nextSnapshot, r.behind, r.updatedAt])));
        out(`(${rows.length} consumers; latest snapshot ${latest})`);
      }
    });

  consumer
    .command("reset <table> <id>")
    .description("set a consumer's next snapshot (it resumes there; snapshots from it on are kept from expiration)")
    .requiredOption("--next-snapshot <n>", "the first snapshot the consumer reads next", parseNonNegativeInt("--next-snapshot"))
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", "\nExample:\n  natslake consumer reset shop.orders billing --next-snapshot 120\n")
    .action(async (name: string, id: string, o: WarehouseOpts & { nextSnapshot: number }) => {
      checkName("consumer id", id);
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      await checkConsumerIdFor(t, id);
      const earliest = await t.snapshots.earliestId();
      const latest = await t.snapshots.latestId();
      // Paimon's rule: the next snapshot must exist, or be the one after the latest (nothing new to read yet).
      if (earliest === null || latest === null || o.nextSnapshot < earliest || o.nextSnapshot > latest + 1)
        throw new UsageError(`--next-snapshot ${o.nextSnapshot}: ${t.name} has snapshots ${earliest ?? "none"}..${latest ?? "none"}; choose one of them or ${(latest ?? 0) + 1}`);
      const before = await getConsumer(t, id);
      await writeConsumer(t, id, o.nextSnapshot);
      out(`consumer ${id} of ${t.name}: next snapshot ${before === null ? "(new)" : before.nextSnapshot} -> ${o.nextSnapshot}`);
    });

  consumer
    .command("delete <table> <id>")
    .description("delete a consumer (its snapshots are no longer kept for it)")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", examples("natslake consumer delete shop.orders billing --warehouse /data/wh"))
    .action(async (name: string, id: string, o: WarehouseOpts) => {
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      if (!(await deleteConsumer(t, id))) throw new UsageError(`${t.name} has no consumer '${id}'`);
      out(`deleted consumer ${id} of ${t.name}`);
    });
}
