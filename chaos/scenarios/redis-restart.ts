/**
 * redis-server restarted (stopped and started on the same port at once) twice: the lease keys and the fencing
 * counter are gone (no persistence). Expected: a leader is elected again, its epoch still above the chain's
 * (`max(INCR, newest snapshot epoch + 1)`), nothing lost or doubled.
 */
import { applyNemesis, redisRestart } from "../faults.ts";
import type { Scenario } from "../types.ts";

export const scenarios: Scenario[] = [
  {
    name: "redis-restart",
    description: "redis-server restarted on the same port (twice)",
    defaultDurationMs: 30_000,
    async run(ctx) {
      await ctx.sleep(5000);
      await applyNemesis(ctx, redisRestart);
      await ctx.sleep(8000);
      await applyNemesis(ctx, redisRestart);
    },
  },
];
