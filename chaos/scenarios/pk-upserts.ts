/**
 * A primary-key table under upserts and deletes while writers and the leader are SIGKILLed mid-flush and
 * mid-compaction. The load (chaos/pk-load-child.ts): 2,000 changes/s over 2,000 keys — every key changed again and
 * again — through two producer clients with the keys partitioned between them: 70 % upserts, 10 % updates (+U, half
 * of them after a -U of the key), 20 % deletes (half by key alone, half with a whole row).
 *
 * Compactions: while the load runs, the scenario asks the table's leader to compact it every second (the maintenance
 * request `natslake compact --nats` sends; every third one full), so files move above level 0 and flushes land on
 * top of compacted buckets. Once the writers compact primary-key buckets themselves, their compactions land beside
 * these; the scenario does not care who compacts.
 *
 * The faults (points by seed):
 * - the leader SIGKILLs itself mid-compaction, twice, with no handover staged: both committers start with a
 *   compaction failpoint armed — one after a rewritten output (`compact.rewrite.after-output`), the other with every
 *   output written, before the COMPACT commit (`compact.after-rewrite`) —, each past its first compaction, so the
 *   leader dies in one of the compactions asked of it, and so does the other committer once it leads (compactions
 *   are paused in between until the writer's kill has happened). The table must stay as it was, the outputs left to
 *   orphan cleanup, and the next leader's compactions land;
 * - a writer SIGKILLs itself mid-flush, armed at its start at one of the points a flush passes: while its worker
 *   encodes the flush (`bucket-buffer.flush`), half-way through writing the file (`io.write.mid`), after encoding
 *   (`writer.parquet.encoded`), after the file before the committable (`writer.file.written`) or after the
 *   committable (`writer.after-committable`) — the sequence numbers that flush took die with it, and the new owner
 *   must take them again from the committed ones;
 * - (`pk-upserts` only) then the leader SIGKILLs itself mid-commit at one of the commit failpoints (armed on the
 *   standby, leadership handed over, as committer-failpoints does): the next leader re-reads the committables and
 *   must apply each flush once; and a writer mid-flush again, at another point, armed by a restart;
 * - once the writers' own compactions land (a COMPACT snapshot linked by the committer), a writer killed
 *   mid-compaction (`compact.rewrite.after-output` or `writer.compaction-before-send`); until then this step is
 *   skipped, and the run's event log says so.
 * `pk-upserts` (the full suite, 60 s of load) injects all of them; `pk-upserts-ci` (the CI subset, 25 s, which
 * must stay short) the first mid-compaction kill and the mid-flush kill, then stops asking for compactions (the
 * other committer stays armed, idle: which compaction point a run covers depends on which committer leads first),
 * and the writer mid-compaction kill once writers compact.
 *
 * Expected (chaos/pk-verifier.ts): the table, read by natslake and by pypaimon, equals the model of every
 * acknowledged change applied in stream order — nothing lost, nothing applied twice, no delete undone; an
 * unacknowledged change may or may not be there —; no change in two flushed files, each within the offsets its
 * snapshot advanced; at every retained snapshot no bucket has overlapping key ranges within a level ≥ 1; per bucket,
 * committed flushes take increasing sequence numbers; and I3–I7 as for every scenario. The scenario's own
 * expectation: the leader's compactions landed (`pk-upserts`: one of them after the last mid-compaction kill).
 */
import { COMMIT_FAILPOINTS, committerFailpointFault, FAILPOINT_MEANING, stopGracefully, waitUntil, writerFailpointFault } from "../faults.ts";
import { createRng } from "../prng.ts";
import { writerCompactionSeen } from "../table-state.ts";
import { TABLE } from "../topology.ts";
import type { PkWorkload, Scenario, ScenarioContext, ScenarioRun, ScenarioSetup } from "../types.ts";

/** The writer failpoints a flush of a primary-key bucket passes (bucket-buffer.append is the decode, not a flush). */
export const PK_FLUSH_POINTS = ["bucket-buffer.flush", "io.write.mid", "writer.parquet.encoded", "writer.file.written", "writer.after-committable"] as const;
const WRITER_COMPACTION_POINTS = ["compact.rewrite.after-output", "writer.compaction-before-send"] as const;
const COMMITTERS = ["c1", "c2"] as const;
const WRITERS = ["w1", "w2", "w3"] as const;
const WORKLOAD: PkWorkload = { kind: "pk-upserts", keys: 2000, deleteShare: 0.2, updateShare: 0.1, producers: 2 };
/** Every third compaction asked of the leader is a full one, the first among them. */
const FULL_EVERY = 3;
const COMPACT_EVERY_MS = 1000;
/** How long an armed process may take to reach its point once it can (a compaction asked, the load flowing). */
const REACH_WITHIN_MS = 60_000;

/**
 * The failpoints nodes start with, by seed (`FAILPOINTS` at their first start; a restart by a fault starts them
 * clean): one committer `compact.rewrite.after-output` at its 5th–8th pass (once per rewrite step: a full compaction
 * of the 4 buckets passes it 4 times), the other `compact.after-rewrite` at its 2nd (once per job with anything to
 * do) — so each leader's first compaction lands (the first asked is a full one) and one of the next ones dies —, and
 * one writer a flush point at its 8th–20th pass (a writer flushes each of its buckets about every commit interval:
 * seconds into the load).
 */
function armedAtStart(seed: number): Record<string, string> {
  const rng = createRng(seed ^ 0x5eed_c0de);
  const rewrite = `compact.rewrite.after-output:kill@${rng.int(5, 8)}`;
  const commit = "compact.after-rewrite:kill@2";
  const [a, b] = rng.next() < 0.5 ? [rewrite, commit] : [commit, rewrite];
  return { [COMMITTERS[0]]: a, [COMMITTERS[1]]: b, [rng.pick(WRITERS)]: `${rng.pick(PK_FLUSH_POINTS)}:kill@${rng.int(8, 20)}` };
}

const pointOf = (spec: string): string => spec.slice(0, spec.indexOf(":"));

export async function armAtStart(run: ScenarioRun): Promise<ScenarioSetup> {
  const armed = armedAtStart(run.seed);
  run.log(`armed at start: ${Object.entries(armed).map(([id, p]) => `${id} ${p}`).join(", ")}`);
  return Promise.resolve({ topology: { nodeEnv: Object.fromEntries(Object.entries(armed).map(([id, p]) => [id, { FAILPOINTS: p }])) } });
}

/**
 * Compactions asked of the table's leader one after the other, `COMPACT_EVERY_MS` apart, until `stop` (none while
 * paused): what they did is kept for the scenario's expectation. A request no leader takes (a handover) or whose
 * leader died mid-job (`abandon`) counts as failed; the next one comes `COMPACT_EVERY_MS` later.
 */
class LeaderCompactions {
  readonly landed: Array<{ at: number; snapshotId: number; node: string; full: boolean }> = [];
  nothingToDo = 0;
  failed = 0;
  private asked = 0;
  private paused = false;
  private stopped = false;
  /** Ends the wait for the request in flight (its leader died: its answer would come only after a long silence). */
  private cut: (() => void) | null = null;
  private readonly loop: Promise<void>;

  constructor(private readonly ctx: ScenarioContext) {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      for (let waited = 0; (waited < COMPACT_EVERY_MS || this.paused) && !this.stopped; waited += 250) await new Promise((r) => setTimeout(r, 250));
      if (!this.stopped) await this.once(this.asked++ % FULL_EVERY === 0);
    }
  }

  private async once(full: boolean): Promise<void> {
    const what = full ? "a full compaction" : "a compaction";
    const request = this.ctx.topology.requestCompaction({ full });
    const abandoned = new Promise<"abandoned">((resolve) => (this.cut = () => resolve("abandoned")));
    try {
      const r = await Promise.race([request, abandoned]);
      if (r === "abandoned") {
        this.failed++;
        request.catch(() => undefined);
        this.ctx.log(`${what} asked of the leader did not land: the leader died`);
      } else if (r.snapshotId === null) this.nothingToDo++;
      else {
        this.landed.push({ at: Date.now(), snapshotId: r.snapshotId, node: r.node, full });
        this.ctx.log(`${what} by ${r.node} landed as snapshot ${r.snapshotId}`);
      }
    } catch (e) {
      this.failed++;
      this.ctx.log(`${what} asked of the leader did not land: ${(e as Error).message}`);
    } finally {
      this.cut = null;
    }
  }

  /** No new request until `resume` (one in flight goes on). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
  }

  /** Stops waiting for the request in flight. */
  abandon(): void {
    this.cut?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abandon();
    await this.loop;
  }
}

/**
 * Waits (up to REACH_WITHIN_MS) for node `id` to die at the point it was armed with at its first start, records the
 * fault and restarts it clean 1 s later. Returns when it died (null: it did not, which the fault records).
 */
async function armedKill(ctx: ScenarioContext, id: string, role: "leader" | "writer"): Promise<number | null> {
  const t = ctx.topology;
  const spec = armedAtStart(ctx.seed)[id]!;
  const point = pointOf(spec);
  const exit = await t.waitExit(id, REACH_WITHIN_MS);
  const name = `${role} SIGKILL at ${point}`;
  if (exit === null || exit.failpoint !== point) {
    ctx.record({ name, target: `node:${id}`, injectedAt: exit?.at ?? Date.now(), fired: false, detail: { armed: spec, why: exit === null ? `not reached within ${REACH_WITHIN_MS / 1000} s` : `exited otherwise (code ${exit.code}, signal ${exit.signal})` } });
    if (exit === null) await stopGracefully(t, id);
    t.startNode(id);
    return null;
  }
  const rec = ctx.record({ name, target: `node:${id}`, injectedAt: exit.at, recoveryFrom: "injected", detail: { armed: spec, point, pid: exit.pid, meaning: FAILPOINT_MEANING[point] } });
  await ctx.sleep(1000);
  t.startNode(id);
  rec.healedAt = Date.now();
  return exit.at;
}

/**
 * Waits (up to 60 s) until both committers run and have started (their current log says "node started"): a leader
 * killed while the other committer is still booting from an earlier kill would have no one to take over, and its
 * recovery would be that boot (seconds on a loaded machine), not the takeover.
 */
async function committersUp(ctx: ScenarioContext): Promise<void> {
  const t = ctx.topology;
  const up = await waitUntil(() => (COMMITTERS.every((id) => t.isRunning(id) && t.nodeLog(id).includes('"msg":"node started"')) ? true : null), 60_000, 250);
  if (up === null) ctx.log(`not every committer started within 60 s (${COMMITTERS.filter((id) => !t.isRunning(id)).join(", ") || "all running"}); going on`);
}

/**
 * The leader killed mid-compaction by the failpoint it started with, in one of the compactions asked of it (the
 * compactions resumed for it, paused again after); returns once another committer leads. The armed committer that
 * is left takes over from the killed one by itself; should a committer restarted clean lead instead (it came back
 * before the lease moved), it is drained.
 */
async function leaderKillMidCompaction(ctx: ScenarioContext, compactions: LeaderCompactions, armed: Set<string>): Promise<number | null> {
  const t = ctx.topology;
  const armedLeader = async (): Promise<string | null> => {
    const l = await t.leader();
    return l !== null && armed.has(l) && t.isRunning(l) ? l : null;
  };
  let leader = await waitUntil(armedLeader, 20_000);
  if (leader === null) {
    const current = await t.leader();
    if (current !== null && !armed.has(current)) {
      ctx.log(`${current} leads, started clean: drained so that an armed committer leads`);
      await stopGracefully(t, current);
      t.startNode(current);
    }
    leader = await waitUntil(armedLeader, 30_000);
  }
  if (leader === null) throw new Error(`no armed committer (${[...armed].join(", ")}) leads within 50 s`);
  armed.delete(leader);
  await committersUp(ctx);
  compactions.resume();
  const at = await armedKill(ctx, leader, "leader");
  compactions.pause();
  compactions.abandon();
  // The next fault waits for the takeover: a fault staged while no committer leads would add to this one's recovery.
  const next = await waitUntil(async () => {
    const l = await t.leader();
    return l !== null && l !== leader && t.isRunning(l) ? l : null;
  }, 30_000);
  ctx.log(next === null ? `no committer took over from ${leader} within 30 s` : `${next} took over from ${leader}`);
  return at;
}

/** A writer killed mid-compaction, once the writers' own compactions land; skipped (and said) until then. */
async function writerKillMidCompaction(ctx: ScenarioContext): Promise<void> {
  if (await writerCompactionSeen(ctx.topology.warehouse, TABLE)) await writerFailpointFault(ctx, ctx.rng.pick(WRITER_COMPACTION_POINTS), { nth: [1, 3] });
  else ctx.log("the writers do not compact the primary-key buckets (no COMPACT snapshot linked by the committer): the writer mid-compaction kill is skipped");
}

/**
 * The scenario's expectation about the leader's compactions: some landed — with `after` one after that time (waited
 * for up to 60 s, compactions resumed: a new leader's first job may queue behind its takeover), else one before the
 * kill. Stops the compactions.
 */
async function compactionsLanded(ctx: ScenarioContext, compactions: LeaderCompactions, after: number | null): Promise<void> {
  if (after !== null) compactions.resume();
  // The writers compact their buckets too: a leader's job may find nothing left to do — that is a compaction the
  // cluster did, not a failure (the levels and the model are judged by the verifier either way).
  const ok = compactions.nothingToDo > 0 || (after === null ? compactions.landed.length > 0 : (await waitUntil(() => (compactions.landed.some((l) => l.at > after) || compactions.nothingToDo > 0 ? true : null), 60_000, 250)) === true);
  await compactions.stop();
  const l = compactions.landed;
  ctx.expect(
    "the leader's compactions landed",
    ok,
    `${l.length} compactions asked of the leader landed (${l.filter((x) => x.full).length} full; snapshots ${l.map((x) => x.snapshotId).join(", ") || "none"}), ` +
      `${compactions.nothingToDo} found nothing to do, ${compactions.failed} did not land` +
      (after === null ? "" : `; ${l.filter((x) => x.at > after).length} after the last mid-compaction kill`) +
      (ok ? "" : after === null ? " — none landed" : " — none landed after the last mid-compaction kill within 60 s"),
  );
}

/**
 * The fault script both forms share: compactions asked of the leader from the start; the armed leader killed
 * mid-compaction and the armed writer mid-flush (whichever comes first). Then, with `then`: compactions paused until
 * both happened, the other armed committer, leading now, killed mid-compaction too; `then` (compactions going on);
 * and a compaction must land after the last kill. Without: compactions stop there (the other committer stays armed,
 * idle), and one must have landed before.
 */
async function script(ctx: ScenarioContext, then?: () => Promise<unknown>): Promise<void> {
  const armed = armedAtStart(ctx.seed);
  const writer = WRITERS.find((w) => armed[w] !== undefined)!;
  // The writer's kill is awaited from the start: its flushes run from the load's first second on.
  const writerKilled = armedKill(ctx, writer, "writer");
  const compactions = new LeaderCompactions(ctx);
  const leaders = new Set<string>(COMMITTERS);
  let lastKill: number | null = null;
  try {
    lastKill = await leaderKillMidCompaction(ctx, compactions, leaders);
    await writerKilled;
    await ctx.topology.waitBalanced(30_000);
    if (then !== undefined) {
      lastKill = (await leaderKillMidCompaction(ctx, compactions, leaders)) ?? lastKill;
      compactions.resume();
      await then();
    }
  } catch (e) {
    await compactions.stop();
    await writerKilled.catch(() => undefined);
    throw e;
  }
  await compactionsLanded(ctx, compactions, then === undefined ? null : (lastKill ?? 0));
}

/**
 * The faults of the full form (`pk-upserts`, and each merge engine's scenario, chaos/scenarios/pk-engines.ts): the
 * script with the second leader kill mid-compaction, the leader mid-commit, a writer mid-flush at another point and
 * a writer mid-compaction. The nodes must have started armed by `armAtStart`.
 */
export async function fullFaultScript(ctx: ScenarioContext): Promise<void> {
  const first = pointOf(Object.values(armedAtStart(ctx.seed)).find((p) => PK_FLUSH_POINTS.some((f) => p.startsWith(`${f}:`)))!);
  await script(ctx, async () => {
    // At its 30th–50th pass (seconds of commits after it took over): the drained leader, restarted when the
    // armed one takes over, has booted by then and takes over in turn.
    await committersUp(ctx);
    await committerFailpointFault(ctx, ctx.rng.pick(COMMIT_FAILPOINTS), { nth: [30, 50] });
    await writerFailpointFault(ctx, ctx.rng.pick(PK_FLUSH_POINTS.filter((p) => p !== first)));
    await writerKillMidCompaction(ctx);
  });
}

export const scenarios: Scenario[] = [
  {
    name: "pk-upserts",
    description: "upserts and deletes into a primary-key table the leader compacts; the leader killed mid-compaction (twice) and mid-commit, writers mid-flush (twice), a writer mid-compaction once writers compact such buckets",
    defaultDurationMs: 60_000,
    load: { ratePerSec: 2000 },
    workload: WORKLOAD,
    setup: armAtStart,
    run: fullFaultScript,
  },
  {
    name: "pk-upserts-ci",
    description: "the pk-upserts scenario's CI form: the leader killed mid-compaction, a writer mid-flush (points by seed)",
    ci: true,
    suite: false,
    defaultDurationMs: 25_000,
    load: { ratePerSec: 2000 },
    workload: WORKLOAD,
    setup: armAtStart,
    async run(ctx) {
      await script(ctx);
      await writerKillMidCompaction(ctx);
    },
  },
];
