/**
 * One nats-server of the 3-node cluster SIGKILLed — the one hosting most of natslake's stream consumers (else the
 * ingest stream's leader; never the subscriber's server) — and restarted with its store only after 20 s, longer than
 * the recovery budget: natslake must recover on the two survivors. Streams and KV have 3 replicas: publishes fail or
 * time out during the elections (outcomes "failed"/"unknown", never a loss), nodes reconnect to the survivors,
 * readers whose consumer died with the server re-open on a survivor, and nothing acknowledged is lost (I7 would say
 * so if JetStream itself lost it).
 */
import { applyNemesis, natsNodeKill } from "../faults.ts";
import type { Scenario } from "../types.ts";

export const scenarios: Scenario[] = [
  {
    name: "nats-node-kill",
    description: "one nats-server SIGKILLed (the one hosting most consumers) for 20 s, then restarted",
    defaultDurationMs: 45_000,
    async run(ctx) {
      await ctx.sleep(5000);
      const rec = await applyNemesis(ctx, natsNodeKill(20_000));
      if (rec === null) throw new Error("no nats-server to kill");
    },
  },
];
