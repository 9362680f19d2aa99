import { test } from "node:test";
import assert from "node:assert/strict";
import { metrics } from "@opentelemetry/api";
import { ActorSystem, noopLogger } from "../../../actors/runtime/index.ts";
import { MaintenanceActor, type MaintenanceTask } from "../../../actors/maintenance.ts";
import { systemClock } from "../../../actors/ports.ts";
import { createTable, tempDir } from "../../helpers/tables.ts";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test("maintenance - each task runs when due, one at a time, never while the previous run is in flight; off tasks never; failures do not stop the others", async () => {
  const wh = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(wh.path, "m.t", "id BIGINT NOT NULL");
    const runs: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const task = (name: string, intervalMs: number | null, body: () => Promise<Record<string, number>>): MaintenanceTask => ({
      name,
      intervalMs: () => intervalMs,
      run: async () => {
        runs.push(name);
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        try {
          return await body();
        } finally {
          inFlight--;
        }
      },
    });
    const tasks = [
      task("slow", 150, async () => (await sleep(120), { files: 1 })),
      task("failing", 150, () => Promise.reject(new Error("boom"))),
      task("off", null, async () => ({})),
    ];
    system.spawn("maintenance-m.t", () => new MaintenanceActor({ table, tasks, clock: systemClock, meter: metrics.getMeter("test"), tickMs: 10 }));
    await sleep(1500);
    assert.equal(maxInFlight, 1, "one run at a time");
    assert.ok(!runs.includes("off"), "a task the options turn off never runs");
    const slow = runs.filter((r) => r === "slow").length;
    const failing = runs.filter((r) => r === "failing").length;
    assert.ok(slow >= 2 && slow <= 11, `slow ran ${slow} times in 1500 ms at a 150 ms interval`);
    assert.ok(failing >= 2, `a failing task is tried again at its next due time (${failing} runs)`);
    assert.equal(runs[0], "slow", "due at once in a new leadership");
  } finally {
    await system.shutdown();
    wh.cleanup();
  }
});
