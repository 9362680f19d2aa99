/**
 * redis-server down for 10 s (stopped, then started on the same port). Expected: the leader cannot renew and
 * self-fences at its deadline; nothing commits while Redis is down (writers keep their committables in the commit
 * stream); within the budget after Redis is back a leader commits everything, nothing lost or doubled.
 */
import { applyNemesis, redisOutage } from "../faults.ts";
import type { Scenario } from "../types.ts";

export const scenarios: Scenario[] = [
  {
    name: "redis-outage",
    description: "redis-server down for 10 s, then back on the same port",
    defaultDurationMs: 30_000,
    async run(ctx) {
      await ctx.sleep(5000);
      await applyNemesis(ctx, redisOutage(10_000));
    },
  },
];
