/**
 * CoordinatorActor: runs beside the table's leader committer (a cluster singleton per table, like a shard
 * coordinator). It keeps the live writer nodes from membership heartbeats and assigns the table's buckets to them
 * with per-bucket owner epochs:
 * - an unowned bucket, or one whose owner's heartbeat expired (a crash: its lease ran out), is assigned at once to a
 *   live node with epoch + 1 — the old owner's late committables are then rejected by epoch;
 * - to even the load (a node joined) or to drain a node (SIGTERM), a bucket is *revoked*: its owner flushes, sends
 *   its last committable and reports the bucket released with the last offset it covered; the coordinator hands
 *   the bucket to its new owner (epoch + 1) once that offset is committed — so nothing is read twice and the new
 *   owner starts exactly where the old one stopped. A revoke that is not answered in time is forced.
 * Assignments are written to KV, fenced by leader epoch (a coordinator that outlived its leadership cannot replace its
 * successor's); every node's writer host watches them.
 */
import type { TableAssignment, BucketAssignment } from "./wire/messages.ts";
import { ensureError, ErrorKind, isLakeError } from "../src/errors.ts";
import { natslakeStateAsOf } from "../src/commit/stream-commit.ts";
import { failpointAsync } from "../src/failpoints.ts";
import type { Table } from "../src/table/table.ts";
import { planAllocation } from "./allocation.ts";
import type { Actor, ActorContext, Cancellable } from "./runtime/index.ts";
import type { Clock, ClusterState } from "./ports.ts";

export type CoordinatorMsg = { type: "tick" } | { type: "tick-done"; error?: Error };

export interface CoordinatorDeps {
  table: Table;
  nodeId: string;
  leaderEpoch: number;
  cluster: ClusterState;
  clock: Clock;
  intervalMs: number;
  /** Heartbeats older than this mean the node is gone. */
  memberTimeoutMs: number;
  /** A revoke not answered within this long is forced (the owner is assumed stuck). */
  revokeTimeoutMs: number;
  maxMovesPerRound: number;
  /** Publishes the coordinator's view to the committer of the same node (acceptance rule). */
  onAssignment: (a: TableAssignment) => void;
}

export class CoordinatorActor implements Actor<CoordinatorMsg> {
  private timer: Cancellable | null = null;
  private busy = false;
  private current: TableAssignment | null = null;
  /** When each revoke started (monotonic ms). */
  private readonly revokedAt = new Map<number, number>();
  /** Highest owner epoch handed out per bucket: epochs never repeat, even for a bucket that was unassigned. */
  private readonly maxEpoch = new Map<number, number>();

  constructor(private readonly d: CoordinatorDeps) {}

  preStart(ctx: ActorContext<CoordinatorMsg>): void {
    this.timer = ctx.scheduleRepeatedly(this.d.intervalMs, { type: "tick" }, { initialDelayMs: 0 });
  }

  postStop(): void {
    this.timer?.cancel();
  }

  receive(msg: CoordinatorMsg, ctx: ActorContext<CoordinatorMsg>): void {
    switch (msg.type) {
      case "tick":
        if (this.busy) return;
        this.busy = true;
        ctx.pipeToSelf(
          this.round(ctx),
          () => ({ type: "tick-done" }),
          (e) => ({ type: "tick-done", error: ensureError(e) }),
        );
        return;
      case "tick-done":
        this.busy = false;
        // A Fenced round was logged in the round. The coordinator is not stopped here: the node stops it with its
        // leadership, and one that kept running would show its refused rounds in the log rather than fall silent.
        if (msg.error && !isLakeError(msg.error, ErrorKind.Fenced)) ctx.log.warn("coordinator round failed", { table: this.d.table.name, error: msg.error.message });
        return;
    }
  }

  private get bucketCount(): number {
    return this.d.table.bucket > 0 ? this.d.table.bucket : 1;
  }

  private async round(ctx: ActorContext<CoordinatorMsg>): Promise<void> {
    const table = this.d.table.name;
    if (this.current === null) {
      const stored = await this.d.cluster.readAssignment(table);
      this.current = stored ?? { v: 1, table, leaderEpoch: this.d.leaderEpoch, leader: this.d.nodeId, buckets: {} };
      // Owner epochs only grow, across leaders too: start above what the snapshot chain has seen.
      const st = await natslakeStateAsOf(this.d.table, await this.d.table.snapshots.latest());
      for (const [b, p] of st?.buckets ?? []) {
        const a = this.current.buckets[String(b)];
        if (a !== undefined && a.epoch < p.ownerEpoch) a.epoch = p.ownerEpoch;
      }
      this.d.onAssignment(this.current);
    }
    const members = await this.d.cluster.liveMembers(this.d.memberTimeoutMs);
    const writers = members.filter((m) => m.roles.includes("writer"));
    const alive = new Set(writers.map((m) => m.nodeId));
    const accepting = writers.filter((m) => !m.draining).map((m) => m.nodeId).sort();
    const next: TableAssignment = { v: 1, table, leaderEpoch: this.d.leaderEpoch, leader: this.d.nodeId, buckets: { ...this.current.buckets } };
    let changed = this.current.leaderEpoch !== this.d.leaderEpoch;
    const set = (b: number, a: BucketAssignment): void => {
      next.buckets[String(b)] = a;
      changed = true;
    };
    for (const [k, a] of Object.entries(next.buckets)) this.maxEpoch.set(Number(k), Math.max(this.maxEpoch.get(Number(k)) ?? 0, a.epoch));
    const epochOf = (b: number): number => Math.max(next.buckets[String(b)]?.epoch ?? 0, this.maxEpoch.get(b) ?? 0);

    // 1. Revokes in progress: hand over once released and committed, or when the owner is gone or stuck.
    const released = await this.d.cluster.releasedBuckets(table);
    // The committed offsets matter only to a hand-over in progress: rounds run twice a second, and on an object store
    // reading the latest snapshot costs requests each time.
    const revoking = Object.values(next.buckets).some((a) => a.state === "revoking");
    const st = revoking ? await natslakeStateAsOf(this.d.table, await this.d.table.snapshots.latest()) : null;
    for (const [key, a] of Object.entries(next.buckets)) {
      if (a.state !== "revoking") continue;
      const b = Number(key);
      const rel = released.find((r) => r.bucket === b && r.epoch === a.epoch && r.node === a.node);
      const committed = Number(st?.buckets.get(b)?.offset ?? 0n);
      const stuck = this.d.clock.monotonic() - (this.revokedAt.get(b) ?? this.d.clock.monotonic()) > this.d.revokeTimeoutMs;
      if ((rel !== undefined && committed >= rel.lastOffset) || !alive.has(a.node) || stuck) {
        this.revokedAt.delete(b);
        const target = a.target !== undefined && accepting.includes(a.target) ? a.target : undefined;
        if (target !== undefined) set(b, { node: target, epoch: epochOf(b) + 1, state: "active" });
        else delete next.buckets[key];
        changed = true;
        ctx.log.info("bucket handed over", { table, bucket: b, from: a.node, to: target ?? "(reallocate)", forced: rel === undefined });
      }
    }

    // 2. Allocation: unowned and orphaned buckets now; moves as revokes.
    const owners = new Map<number, string>();
    // Buckets of a live node that is draining are handed off by revoke (below), never reassigned on the spot.
    const held = new Set<number>();
    for (let b = 0; b < this.bucketCount; b++) {
      const a = next.buckets[String(b)];
      if (a !== undefined && alive.has(a.node) && (accepting.includes(a.node) || a.state === "revoking")) owners.set(b, a.node);
      if (a !== undefined && alive.has(a.node) && !accepting.includes(a.node) && accepting.length > 0) held.add(b);
    }
    const plan = planAllocation({ buckets: this.bucketCount, nodes: accepting, owners, held, maxMovesPerRound: this.d.maxMovesPerRound });
    for (const [b, node] of plan.assign) {
      const epoch = epochOf(b) + 1;
      set(b, { node, epoch, state: "active" });
      this.maxEpoch.set(b, epoch);
      ctx.log.info("bucket assigned", { table, bucket: b, node, epoch });
    }
    // Buckets of draining nodes are revoked too (their owner is alive but takes no buckets) — also when no node
    // accepts them (the last node, or a whole cluster stopping): the writer then still flushes and sends its last
    // committable, so what was acknowledged is committed before it exits, and the bucket is left unassigned.
    const drainOnly = new Set<number>();
    for (let b = 0; b < this.bucketCount; b++) {
      const a = next.buckets[String(b)];
      if (a !== undefined && a.state === "active" && alive.has(a.node) && !accepting.includes(a.node)) {
        if (accepting.length > 0) plan.move.set(b, accepting[b % accepting.length]!);
        else drainOnly.add(b);
      }
    }
    for (const b of drainOnly) {
      const a = next.buckets[String(b)]!;
      set(b, { node: a.node, epoch: a.epoch, state: "revoking" });
      this.revokedAt.set(b, this.d.clock.monotonic());
      ctx.log.info("bucket revoked: its owner drains and no node takes buckets", { table, bucket: b, from: a.node });
    }
    for (const [b, target] of plan.move) {
      const a = next.buckets[String(b)];
      if (a === undefined || a.state === "revoking") continue;
      set(b, { ...a, state: "revoking", target });
      this.revokedAt.set(b, this.d.clock.monotonic());
      ctx.log.info("bucket revoked for hand-off", { table, bucket: b, from: a.node, to: target });
    }

    if (changed) {
      // A pause here (sleep) lets a test make this round outlive its leadership.
      await failpointAsync("coordinator.before-write");
      try {
        await this.d.cluster.writeAssignment(next);
      } catch (e) {
        // Logged here, not when the round's result arrives: a coordinator stopped with its leadership (the usual
        // case) never handles that message.
        if (isLakeError(e, ErrorKind.Fenced)) ctx.log.warn("coordinator fenced by a newer leader; assignment not written", { table, error: e.message });
        throw e;
      }
      this.current = next;
      this.d.onAssignment(next);
    }
  }
}
