/**
 * Poison mixed into the load (chaos/load-child.ts): wrong-typed and unknown-column rows and undecodable payloads on
 * the raw subject, and bad RowBatches (a wrong-typed row next to a good one, an unknown column, undecodable bytes)
 * straight to bucket subjects; one writer SIGKILLed mid-run so some dead letters are produced twice (the DLQ's
 * message ids must de-duplicate them). Expected: every acknowledged poison row or payload is in `LAKE_DLQ`
 * (subject lake.dlq.chaos.events) exactly once and never in the table; every good row lands exactly once.
 */
import { applyNemesis, writerKill } from "../faults.ts";
import type { Scenario } from "../types.ts";

export const scenarios: Scenario[] = [
  {
    name: "poison",
    description: "poison rows and payloads mixed into the load, a writer SIGKILLed mid-run",
    // Not in the CI subset (CI's 30 minutes): test/integration/poison.test.ts runs poison with a killed node in npm
    // test; this scenario runs in the full suite.
    defaultDurationMs: 30_000,
    load: { poison: true },
    async run(ctx) {
      await ctx.sleep(10_000);
      await applyNemesis(ctx, writerKill);
    },
  },
];
