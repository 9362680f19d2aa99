/**
 * The leader SIGSTOPped past its lease (until another committer leads, then 1 s more), then SIGCONTed — twice.
 * Expected: the standby takes over; the woken leader's late work is fenced (the chain's epochs never go back, no
 * committable twice) and it steps down.
 */
import { applyNemesis, leaderPause } from "../faults.ts";
import type { Scenario } from "../types.ts";

export const scenarios: Scenario[] = [
  {
    name: "leader-pause",
    description: "the leader SIGSTOPped past its lease, then SIGCONTed (twice)",
    defaultDurationMs: 35_000,
    async run(ctx) {
      await ctx.sleep(4000);
      for (let i = 0; i < 2; i++) {
        const rec = await applyNemesis(ctx, leaderPause);
        if (rec === null) throw new Error("no leader to pause");
        await ctx.sleep(3000);
        const id = rec.target.replace(/^node:/, "");
        rec.detail = { ...rec.detail, steppedDown: /"msg":"(fenced|lease lost|stepped down)"/.test(ctx.topology.nodeLog(id)) };
        await ctx.sleep(3000);
      }
    },
  },
];
