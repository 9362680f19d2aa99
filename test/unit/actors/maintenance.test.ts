import { test } from "node:test";
import assert from "node:assert/strict";
import { metrics } from "@opentelemetry/api";
import { ActorSystem, noopLogger } from "../../../actors/runtime/index.ts";
import { MaintenanceActor, type MaintenanceTask } from "../../../actors/maintenance.ts";
import { expireSnapshotsTask } from "../../../actors/maintenance-tasks.ts";
import type { MaintenanceJob } from "../../../actors/maintenance-jobs.ts";
import { systemClock, type MaintenanceResponder } from "../../../actors/ports.ts";
import type { ExpireResult } from "../../../src/maintenance/expire-snapshots.ts";
import { createTable, reopen, tempDir, writeRows } from "../../helpers/tables.ts";

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

/** A responder that records what it was told. */
function recorder(): MaintenanceResponder & { events: string[]; ended: Promise<void> } {
  const events: string[] = [];
  let end!: () => void;
  const ended = new Promise<void>((r) => (end = r));
  return {
    events,
    ended,
    accepted: (n) => void events.push(`accepted:${n}`),
    progress: (p) => void events.push(`progress:${p.done}/${p.total}`),
    done: (r) => (events.push(`done:${JSON.stringify(r)}`), end()),
    failed: (e) => (events.push(`failed:${e.message}`), end()),
  };
}

test("maintenance - requested jobs run one at a time with the scheduled tasks, in arrival order, answered with progress and result", async () => {
  const wh = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(wh.path, "m.r", "id BIGINT NOT NULL");
    const order: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const busy = async <T>(name: string, ms: number, v: T): Promise<T> => {
      order.push(name);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await sleep(ms);
      inFlight--;
      return v;
    };
    const tasks: MaintenanceTask[] = [{ name: "expire-snapshots", intervalMs: () => 20, run: () => busy("scheduled", 40, { snapshots: 1 }) }];
    const ref = system.spawn("maintenance-m.r", () =>
      new MaintenanceActor({
        table,
        tasks,
        clock: systemClock,
        meter: metrics.getMeter("test"),
        tickMs: 5,
        runJob: async (_t, job, onProgress) => {
          onProgress({ done: 1, total: 2 });
          const r = await busy(`request-${job.task}`, 50, { task: job.task });
          onProgress({ done: 2, total: 2 });
          return r;
        },
      }),
    );
    await sleep(60); // the scheduled task is running or has run
    const jobs: MaintenanceJob[] = [
      { task: "expire-snapshots", options: { dryRun: true } },
      { task: "compact", options: {} },
      { task: "remove-orphans", options: {} },
    ];
    const rs = jobs.map(() => recorder());
    jobs.forEach((job, i) => ref.tell({ type: "request", job, responder: rs[i]! }));
    await Promise.all(rs.map((r) => r.ended));
    await sleep(100);
    assert.equal(maxInFlight, 1, "never two jobs of one table at once");
    const requested = order.filter((o) => o.startsWith("request-"));
    assert.deepEqual(requested, ["request-expire-snapshots", "request-compact", "request-remove-orphans"], "in arrival order");
    assert.ok(order.filter((o) => o === "scheduled").length >= 2, `the schedule goes on around the requests: ${order.join(",")}`);
    // Requests go before the scheduled tasks: nothing scheduled between the three.
    const first = order.indexOf("request-expire-snapshots");
    assert.deepEqual(order.slice(first, first + 3), requested);
    assert.deepEqual(rs[1]!.events, ["accepted:2", "progress:1/2", "progress:2/2", 'done:{"task":"compact"}']);
    assert.match(rs[0]!.events[0]!, /^accepted:[01]$/);
  } finally {
    await system.shutdown();
    wh.cleanup();
  }
});

test("maintenance - a request is refused once the lease is gone, and those still queued when the leadership ends are answered", async () => {
  const wh = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(wh.path, "m.s", "id BIGINT NOT NULL");
    let leader = true;
    const ref = system.spawn("maintenance-m.s", () =>
      new MaintenanceActor({ table, tasks: [], clock: systemClock, meter: metrics.getMeter("test"), tickMs: 5, stillLeader: () => leader, runJob: () => sleep(200).then(() => ({ ran: true })) }),
    );
    const running = recorder();
    const queued = recorder();
    ref.tell({ type: "request", job: { task: "compact", options: {} }, responder: running });
    ref.tell({ type: "request", job: { task: "remove-orphans", options: {} }, responder: queued });
    await sleep(50);
    await system.stop(ref);
    await queued.ended;
    assert.deepEqual(queued.events[0], "accepted:1");
    assert.match(queued.events[1]!, /^failed:m\.s: this node stopped leading the table before the job ran; nothing was done/);
    // The running job outlives its actor and still says how it ended.
    await running.ended;
    assert.deepEqual(running.events, ["accepted:0", 'done:{"ran":true}']);

    leader = false;
    const ref2 = system.spawn("maintenance-m.s-2", () => new MaintenanceActor({ table, tasks: [], clock: systemClock, meter: metrics.getMeter("test"), stillLeader: () => leader }));
    const late = recorder();
    ref2.tell({ type: "request", job: { task: "compact", options: {} }, responder: late });
    await late.ended;
    assert.deepEqual(late.events, ["failed:m.s: this node no longer leads the table"], "a paused ex-leader refuses without accepting");
  } finally {
    await system.shutdown();
    wh.cleanup();
  }
});

test("maintenance - a task due every few ms does not starve an hourly one (the most overdue runs first)", async () => {
  const wh = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(wh.path, "m.o", "id BIGINT NOT NULL");
    const runs: string[] = [];
    const task = (name: string, every: number, ms: number): MaintenanceTask => ({ name, intervalMs: () => every, run: async () => (runs.push(name), await sleep(ms), {}) });
    system.spawn("maintenance-m.o", () => new MaintenanceActor({ table, tasks: [task("often", 5, 20), task("rare", 100, 5)], clock: systemClock, meter: metrics.getMeter("test"), tickMs: 5 }));
    await sleep(700);
    const rare = runs.filter((r) => r === "rare").length;
    assert.ok(rare >= 3, `the 100 ms task ran ${rare} times in 700 ms beside one always due (${runs.length} runs)`);
  } finally {
    await system.shutdown();
    wh.cleanup();
  }
});

test("maintenance - scheduled snapshot expiration runs after commits (not again on an idle table), counts what it removed, and write-only turns it off", async () => {
  const wh = tempDir();
  try {
    const table = await createTable(wh.path, "m.e", "id BIGINT NOT NULL", { options: { "snapshot.num-retained.min": "2", "snapshot.time-retained": "0 s" } });
    for (let i = 0; i < 6; i++) await writeRows(table, [{ id: i }]);
    const recorded: ExpireResult[] = [];
    const t = expireSnapshotsTask((_name, r) => recorded.push(r));
    assert.equal(t.intervalMs(table), 1000);
    assert.deepEqual(await t.run(table), { snapshots: 4, "data-files": 0, manifests: recorded[0]!.manifestsDeleted });
    assert.equal(await table.snapshots.earliestId(), 5);
    assert.deepEqual(await t.run(table), {}, "no commit since: nothing read");
    assert.equal(recorded.length, 1);
    await writeRows(table, [{ id: 9 }]);
    assert.equal((await t.run(table))["snapshots"], 1);
    assert.equal(recorded.length, 2);
    await createTable(wh.path, "m.wo", "id BIGINT NOT NULL", { options: { "write-only": "true" } });
    assert.equal(expireSnapshotsTask(() => undefined).intervalMs(await reopen(wh.path, "m.wo")), null, "write-only = true: no expiration");
  } finally {
    wh.cleanup();
  }
});

test("maintenance - orphan cleanup (scheduled or requested) waits until the leader decided its commit-stream backlog; the other jobs do not", async () => {
  const wh = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(wh.path, "m.o", "id BIGINT NOT NULL");
    const runs: string[] = [];
    let decided = false;
    const tasks: MaintenanceTask[] = [
      { name: "remove-orphans", intervalMs: () => 20, run: async () => (runs.push("scheduled-orphans"), {}) },
      { name: "expire-snapshots", intervalMs: () => 20, run: async () => (runs.push("scheduled-expire"), {}) },
    ];
    const ref = system.spawn("maintenance-m.o", () =>
      new MaintenanceActor({
        table,
        tasks,
        clock: systemClock,
        meter: metrics.getMeter("test"),
        tickMs: 5,
        backlogDecided: () => decided,
        runJob: async (_t, job) => (runs.push(`request-${job.task}`), {}),
      }),
    );
    const orphans = recorder();
    ref.tell({ type: "request", job: { task: "remove-orphans", options: {} }, responder: orphans });
    await sleep(200);
    assert.ok(runs.includes("scheduled-expire"), "expiration runs meanwhile");
    assert.ok(!runs.some((r) => r.includes("orphans")), `no orphan cleanup before the backlog is decided: ${runs.join(",")}`);
    assert.deepEqual(orphans.events, ["accepted:0"], "the request waits, accepted");
    decided = true;
    await orphans.ended;
    await sleep(100);
    assert.ok(runs.includes("request-remove-orphans") && runs.includes("scheduled-orphans"), runs.join(","));
  } finally {
    await system.shutdown();
    wh.cleanup();
  }
});

test("maintenance - a run-on-commit task runs right after each landed snapshot (commits during a run make one more), without starving the others", async () => {
  const wh = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(wh.path, "m.c", "id BIGINT NOT NULL");
    const runs: Array<{ name: string; at: number }> = [];
    const t0 = performance.now();
    const onCommit: MaintenanceTask = { name: "expire-snapshots", runOnCommit: true, intervalMs: () => 60_000, run: async () => (runs.push({ name: "expire", at: performance.now() - t0 }), await sleep(30), {}) };
    const hourly: MaintenanceTask = { name: "remove-orphans", intervalMs: () => 200, run: async () => (runs.push({ name: "orphans", at: performance.now() - t0 }), await sleep(5), {}) };
    // A long tick: anything that runs between ticks was started by a commit (or by the end of the previous run).
    const ref = system.spawn("maintenance-m.c", () => new MaintenanceActor({ table, tasks: [onCommit, hourly], clock: systemClock, meter: metrics.getMeter("test"), tickMs: 10_000 }));
    // The first commit starts both (never run in this leadership: due at once), the on-commit task first (list order).
    ref.tell({ type: "committed", snapshotId: 1 });
    await sleep(100);
    assert.deepEqual(runs.map((r) => r.name), ["expire", "orphans"], "nothing before the first tick but what the commit started");
    ref.tell({ type: "committed", snapshotId: 2 });
    await sleep(10);
    // Three commits land while that run is in flight: they make one more run, not three.
    for (let id = 3; id <= 5; id++) ref.tell({ type: "committed", snapshotId: id });
    await sleep(150);
    const expires = runs.filter((r) => r.name === "expire");
    assert.equal(expires.length, 3, `one run per commit, coalesced while running: ${JSON.stringify(runs)}`);
    assert.ok(expires[1]!.at < 100 + 20, `started at once after the commit (at ${expires[1]!.at.toFixed(0)} ms)`);

    // Commits every 10 ms for 1 s keep the on-commit task always due; the 200 ms task still gets its turns. Its own
    // schedule is driven by the actor's runs ending (the tick is 10 s).
    runs.length = 0;
    for (let i = 0; i < 100; i++) {
      ref.tell({ type: "committed", snapshotId: 10 + i });
      await sleep(10);
    }
    const orphans = runs.filter((r) => r.name === "orphans").length;
    const expiresUnderLoad = runs.filter((r) => r.name === "expire").length;
    assert.ok(expiresUnderLoad >= 15, `expiration ran ${expiresUnderLoad} times under 100 commits`);
    assert.ok(orphans >= 2, `the other task ran ${orphans} times in ~1 s beside commits every 10 ms (${JSON.stringify(runs.map((r) => r.name))})`);
  } finally {
    await system.shutdown();
    wh.cleanup();
  }
});

test("maintenance - a run-on-commit task with a gap runs at most once per gap under constant commits, and a commit in the gap still gets its run when the gap ends", async () => {
  const wh = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(wh.path, "m.g", "id BIGINT NOT NULL");
    const starts: number[] = [];
    const t0 = performance.now();
    const task: MaintenanceTask = { name: "expire-snapshots", runOnCommit: true, onCommitGapMs: 100, intervalMs: () => 60_000, run: async () => (starts.push(performance.now() - t0), await sleep(5), {}) };
    const ref = system.spawn("maintenance-m.g", () => new MaintenanceActor({ table, tasks: [task], clock: systemClock, meter: metrics.getMeter("test"), tickMs: 10_000 }));
    let lastCommitAt = 0;
    for (let i = 0; i < 50; i++) {
      lastCommitAt = performance.now() - t0;
      ref.tell({ type: "committed", snapshotId: i + 1 });
      await sleep(10);
    }
    await sleep(250);
    const gaps = starts.slice(1).map((s, i) => s - starts[i]!);
    assert.ok(starts.length >= 4 && starts.length <= 8, `${starts.length} runs for 50 commits over ~${lastCommitAt.toFixed(0)} ms with a 100 ms gap: ${starts.map((s) => s.toFixed(0)).join(", ")}`);
    assert.ok(gaps.every((g) => g >= 95), `runs at least a gap apart: ${gaps.map((g) => g.toFixed(0)).join(", ")}`);
    // The last commits landed inside a gap: their run comes when it ends, not at the next (10 s) tick.
    assert.ok(starts[starts.length - 1]! >= lastCommitAt, `a run after the last commit (last run at ${starts[starts.length - 1]!.toFixed(0)} ms, last commit at ${lastCommitAt.toFixed(0)} ms)`);
  } finally {
    await system.shutdown();
    wh.cleanup();
  }
});

test("maintenance - a gap's wake-up that fires before the actor's clock says the gap ended wakes again for what is left: the last commit's run does not wait for the tick", async () => {
  const wh = tempDir();
  const system = new ActorSystem({ log: noopLogger });
  try {
    const table = await createTable(wh.path, "m.early", "id BIGINT NOT NULL");
    // The actor's clock runs at 0.9 of the timers' pace: every wake-up for a gap's end comes "early" by its clock,
    // as a timer whose loop time was read in whole milliseconds can.
    const t0 = performance.now();
    const slow = { now: () => Date.now(), monotonic: () => (performance.now() - t0) * 0.9 };
    const starts: number[] = [];
    const task: MaintenanceTask = { name: "expire-snapshots", runOnCommit: true, onCommitGapMs: 100, intervalMs: () => 60_000, run: async () => (starts.push(performance.now() - t0), {}) };
    const ref = system.spawn("maintenance-m.early", () => new MaintenanceActor({ table, tasks: [task], clock: slow, meter: metrics.getMeter("test"), tickMs: 10_000 }));
    ref.tell({ type: "committed", snapshotId: 1 }); // runs at once
    await sleep(30);
    const lastCommitAt = performance.now() - t0;
    ref.tell({ type: "committed", snapshotId: 2 }); // inside the gap: its run comes when the gap ends
    await sleep(400);
    assert.equal(starts.length, 2, `a run for each commit: ${starts.map((s) => s.toFixed(0)).join(", ")}`);
    assert.ok(starts[1]! > lastCommitAt && starts[1]! < 400, `the second run after the gap, not at the 10 s tick (at ${starts[1]!.toFixed(0)} ms)`);
  } finally {
    await system.shutdown();
    wh.cleanup();
  }
});
