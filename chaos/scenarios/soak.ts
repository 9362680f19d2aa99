/**
 * The seeded random soak: for the run's duration (default 2 min, `--duration`), a fault every 5–15 s (injection to
 * injection), drawn with the run's seed from the built-in nemeses (chaos/faults.ts `soakNemeses`: writer and leader
 * SIGKILL — restarted 1–3 s later, sometimes with a failpoint armed —, leader and writer SIGSTOP, Redis restarted,
 * Redis down 10 s, a NATS node SIGKILLed) plus the infrastructure nemeses chaos/nemesis/index.ts exports as
 * `infraNemeses` (none when it exports none), with poison mixed into the load. Nodes that die at an armed
 * failpoint are recorded as faults and restarted. The same seed gives the same schedule of choices (timings of a
 * real cluster still vary). `CHAOS_SOAK_NEMESES=name,name…` (environment) restricts the draw to those nemeses, e.g.
 * to exercise the infrastructure ones: `CHAOS_SOAK_NEMESES=nats-slow-fsync,leader-slow-fsync,writer-partition`.
 */
import { applyNemesis, pickWeighted, soakNemeses, superviseNodes } from "../faults.ts";
import type { NemesisFactory, Scenario, ScenarioContext } from "../types.ts";

type Weighted = { name: string; weight: number; make: NemesisFactory };

async function infraNemeses(ctx: ScenarioContext): Promise<Weighted[]> {
  try {
    const mod = (await import("../nemesis/index.ts")) as unknown as { infraNemeses?: Weighted[] };
    const list = Array.isArray(mod.infraNemeses) ? mod.infraNemeses : [];
    ctx.log(list.length > 0 ? `infra nemeses: ${list.map((n) => n.name).join(", ")}` : "infra nemeses: none registered (chaos/nemesis/index.ts exports no infraNemeses)");
    return list;
  } catch (e) {
    ctx.log(`infra nemeses unavailable: ${(e as Error).message}`);
    return [];
  }
}

export const scenarios: Scenario[] = [
  {
    name: "soak",
    description: "seeded random faults every 5–15 s for the duration, poison in the load",
    defaultDurationMs: 120_000,
    load: { poison: true },
    async run(ctx) {
      let pool: Weighted[] = [...soakNemeses, ...(await infraNemeses(ctx))];
      const only = (process.env["CHAOS_SOAK_NEMESES"] ?? "").split(",").map((x) => x.trim()).filter((x) => x !== "");
      if (only.length > 0) {
        const unknown = only.filter((n) => !pool.some((p) => p.name === n));
        if (unknown.length > 0) throw new Error(`CHAOS_SOAK_NEMESES names unknown nemeses ${unknown.join(", ")}; known: ${pool.map((p) => p.name).join(", ")}`);
        pool = pool.filter((p) => only.includes(p.name));
        ctx.log(`soak restricted to ${pool.map((p) => p.name).join(", ")} (CHAOS_SOAK_NEMESES)`);
      }
      const supervisor = superviseNodes(ctx);
      try {
        // The last fault leaves 20 s of load for recovery to be measured.
        const end = ctx.loadStartedAt + ctx.durationMs - 20_000;
        let next = ctx.loadStartedAt + ctx.rng.int(5000, 15_000);
        for (let i = 0; i < 1000 && next < end; i++) {
          await ctx.sleep(Math.max(0, next - Date.now()));
          const pick = pickWeighted(ctx, pool);
          const at = Date.now();
          const rec = await applyNemesis(ctx, pick.make);
          if (rec === null) ctx.log(`${pick.name}: not applicable now; drawing again later`);
          next = Math.max(Date.now() + 1000, at + ctx.rng.int(5000, 15_000));
        }
        await ctx.sleep(2000);
      } finally {
        await supervisor.stop();
      }
    },
  },
];
