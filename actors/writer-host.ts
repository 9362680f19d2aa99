/**
 * WriterHostActor: the per-node, per-table "shard region". It follows the table's assignment and runs one
 * BucketWriterActor per bucket assigned to this node (a fresh actor per owner epoch), stops writers whose bucket
 * moved, answers revokes (the writer flushes, sends its last committable, then the host reports the bucket
 * released with the last offset covered), and routes rejections (of committables and of compactions) to the
 * bucket's writer of that owner epoch.
 */
import type { TableAssignment, WriterRejection } from "./wire/messages.ts";
import { ensureError } from "../src/errors.ts";
import type { Actor, ActorContext, ActorRef } from "./runtime/index.ts";
import type { ClusterState } from "./ports.ts";
import { BucketWriterActor, type WriterDeps, type WriterMsg } from "./writer.ts";
import { observeWriterHost } from "./writer-gauges.ts";

export type WriterHostMsg =
  | { type: "assignment"; assignment: TableAssignment | null }
  | { type: "rejection"; rejection: WriterRejection }
  | { type: "released"; bucket: number; epoch: number; lastOffset: number }
  | { type: "reported"; bucket: number }
  | { type: "report-failed"; bucket: number; error: Error };

export interface WriterHostDeps {
  nodeId: string;
  cluster: ClusterState;
  /** Everything a bucket writer needs except its bucket and owner epoch. */
  writerDeps: Omit<WriterDeps, "bucket" | "ownerEpoch">;
  /** How a writer is spawned (the node decides supervision). */
  spawnWriter: (ctx: ActorContext<WriterHostMsg>, name: string, factory: () => BucketWriterActor) => ActorRef<WriterMsg>;
  stopWriter: (ref: ActorRef<WriterMsg>) => Promise<void>;
}

interface Running {
  epoch: number;
  ref: ActorRef<WriterMsg>;
  revoking: boolean;
}

export class WriterHostActor implements Actor<WriterHostMsg> {
  private readonly running = new Map<number, Running>();
  /** The newest leader epoch whose assignment this host followed; an older leader's assignment is ignored. */
  private leaderEpoch = 0;
  private unobserve: (() => void) | null = null;

  constructor(private readonly d: WriterHostDeps) {}

  get ownedBuckets(): number {
    return this.running.size;
  }

  preStart(): void {
    const running = this.running;
    this.unobserve = observeWriterHost(this.d.writerDeps.meter, {
      table: this.d.writerDeps.table.name,
      budget: this.d.writerDeps.budget,
      bucketsByState() {
        let revoking = 0;
        for (const r of running.values()) if (r.revoking) revoking++;
        return { active: running.size - revoking, revoking };
      },
    });
  }

  postStop(): void {
    this.unobserve?.();
    this.unobserve = null;
  }

  receive(msg: WriterHostMsg, ctx: ActorContext<WriterHostMsg>): void {
    switch (msg.type) {
      case "assignment":
        this.apply(msg.assignment, ctx);
        return;
      case "rejection": {
        const r = this.running.get(msg.rejection.bucket);
        if (!r || r.epoch !== msg.rejection.ownerEpoch || r.ref.stopped) return;
        const rejection = msg.rejection;
        r.ref.tell(rejection.type === "rejection" ? { type: "rejected", rejection } : { type: "compaction-rejected", rejection });
        return;
      }
      case "released": {
        const table = this.d.writerDeps.table.name;
        ctx.pipeToSelf(
          this.d.cluster.reportReleased(table, msg.bucket, msg.epoch, this.d.nodeId, msg.lastOffset),
          () => ({ type: "reported", bucket: msg.bucket }),
          (e) => ({ type: "report-failed", bucket: msg.bucket, error: ensureError(e) }),
        );
        const r = this.running.get(msg.bucket);
        if (r && r.epoch === msg.epoch) this.running.delete(msg.bucket);
        ctx.log.info("bucket released", { table, bucket: msg.bucket, epoch: msg.epoch, lastOffset: msg.lastOffset });
        return;
      }
      case "reported":
        return;
      case "report-failed":
        ctx.log.warn("could not report a released bucket; the coordinator will force the hand-off", { bucket: msg.bucket, error: msg.error.message });
        return;
    }
  }

  private apply(a: TableAssignment | null, ctx: ActorContext<WriterHostMsg>): void {
    // No assignment (a new table, the coordinator has not run, or the entry was deleted): nothing to own. A deleted
    // entry also ends what this host knew of leader epochs, so a leader starting over from a lower one is followed.
    if (a === null) {
      this.leaderEpoch = 0;
      return;
    }
    // Written by a leader that has been replaced (its coordinator finished a round after losing the lease): following
    // it would stop writers the current leader placed. The KV write is fenced too; this also covers a late delivery.
    if (a.leaderEpoch < this.leaderEpoch) {
      ctx.log.warn("ignoring the assignment of an older leader", { table: a.table, leaderEpoch: a.leaderEpoch, following: this.leaderEpoch });
      return;
    }
    this.leaderEpoch = a.leaderEpoch;
    const mine = new Map<number, { epoch: number; state: "active" | "revoking" }>();
    for (const [k, b] of Object.entries(a.buckets)) if (b.node === this.d.nodeId) mine.set(Number(k), { epoch: b.epoch, state: b.state });
    // Stop writers whose bucket moved away or whose epoch is outdated (the coordinator reassigned after a crash).
    for (const [bucket, r] of this.running) {
      const m = mine.get(bucket);
      if (m === undefined || m.epoch !== r.epoch) {
        this.running.delete(bucket);
        // Its epoch is over: whatever it still sends is rejected by epoch, so it can stop without a final flush.
        void this.d.stopWriter(r.ref);
      }
    }
    for (const [bucket, m] of mine) {
      const r = this.running.get(bucket);
      if (m.state === "active" && r === undefined) {
        const deps: WriterDeps = { ...this.d.writerDeps, bucket, ownerEpoch: m.epoch };
        const ref = this.d.spawnWriter(ctx, `writer-${this.d.writerDeps.table.name}-${bucket}-${m.epoch}`, () => new BucketWriterActor(deps));
        this.running.set(bucket, { epoch: m.epoch, ref, revoking: false });
      } else if (m.state === "revoking" && r !== undefined && !r.revoking && r.epoch === m.epoch) {
        r.revoking = true;
        const self = ctx.self;
        r.ref.tell({ type: "revoke", reply: (lastOffset) => self.tell({ type: "released", bucket, epoch: m.epoch, lastOffset }) });
      } else if (m.state === "revoking" && r === undefined) {
        // Nothing running here (e.g. after a restart): release at once; the committed offset is where it stands.
        ctx.self.tell({ type: "released", bucket, epoch: m.epoch, lastOffset: 0 });
      }
    }
  }
}
