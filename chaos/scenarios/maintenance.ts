/**
 * Maintenance under load and faults: the table keeps few snapshots (at most 20, each kept 1 s) so the leader expires
 * snapshots after every commit, and it looks for orphan files every 3 s (older than 45 s: far above any write →
 * commit time here, so in-flight files are never touched). Then: the leader SIGKILLs itself in the middle of an
 * expiration, twice (armed on the standby, leadership handed over — as committer-failpoints does), and a writer dies
 * mid-flush, leaving orphan files. Expected: nothing acknowledged lost or doubled (I1, I2), the retained chain
 * contiguous and whole (I3, from the earliest snapshot expiration left), old snapshots really expired, and the next
 * leader finishes what the killed one began.
 */
import { committerFailpointFault, writerFailpointFault } from "../faults.ts";
import type { Scenario } from "../types.ts";
import { Catalog, parseIdentifier } from "../../src/table/catalog.ts";
import { TABLE } from "../topology.ts";

export const scenarios: Scenario[] = [
  {
    name: "maintenance",
    description: "snapshot expiration and orphan cleanup on the leader under load; the leader killed mid-expiration twice, a writer mid-flush",
    defaultDurationMs: 60_000,
    topology: {
      tableOptions: {
        "snapshot.num-retained.min": "5",
        "snapshot.num-retained.max": "20",
        "snapshot.time-retained": "1 s",
        "natslake.orphan-older-than": "45 s",
        "natslake.orphan-check-interval": "3 s",
      },
    },
    async run(ctx) {
      await ctx.sleep(4000);
      await committerFailpointFault(ctx, "expire.after-snapshot");
      await ctx.sleep(3000);
      await writerFailpointFault(ctx, "writer.file.written");
      await ctx.sleep(3000);
      await committerFailpointFault(ctx, "expire.before-snapshots");
      await ctx.sleep(3000);
      const t = await new Catalog(ctx.topology.warehouse).getTable(parseIdentifier(TABLE));
      const ids = await t.snapshots.listIds();
      ctx.expect("old snapshots expired", (ids[0] ?? 1) > 1 && ids.length <= 40, `${ids.length} snapshots on disk, ${ids[0]}..${ids[ids.length - 1]}`);
    },
  },
];
