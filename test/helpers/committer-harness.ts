/**
 * A CommitterActor on a real table (in a temporary warehouse) with its NATS and Redis ports as in-process fakes: the
 * commit stream is a queue the test feeds, the bus records what it publishes, the lease is granted at once.
 */
import { metrics } from "@opentelemetry/api";
import type { ActorSystem } from "../../actors/runtime/index.ts";
import { CommitterActor } from "../../actors/committer.ts";
import { systemClock, type Bus, type CommitLog, type CommitReader, type IngestLog, type Lease, type LeaseGrant } from "../../actors/ports.ts";
import type { Committable, SnapshotNotification } from "../../actors/wire/messages.ts";
import type { Table } from "../../src/table/table.ts";

/** A committable of no files covering (prevOffset, lastOffset] of `bucket`, cut on `beatMillis` when given. */
export const committable = (prevOffset: number, lastOffset: number, o: { bucket?: number; beatMillis?: number } = {}): Committable => ({
  type: "committable",
  v: 1,
  table: "t.events",
  bucket: o.bucket ?? 0,
  ownerEpoch: 1,
  writerId: "w1",
  prevOffset,
  lastOffset,
  rowCount: 0,
  files: [],
  flushId: lastOffset,
  firstArrivalMillis: 0,
  ...(o.beatMillis !== undefined ? { beatMillis: o.beatMillis } : {}),
});

/**
 * A CommitterActor on `table` with in-process ports: an earlier announcement of snapshot 1, a commit stream fed
 * through `queue`, a lease it gets at once.
 */
export function startCommitter(
  system: ActorSystem,
  table: Table,
  o: { backlog?: Array<{ seq: number; committable: Committable }>; onBacklogDecided?: (epoch: number) => void; commitIntervalMs?: number } = {},
): { published: SnapshotNotification[]; queue: Array<{ seq: number; committable: Committable }> } {
  const published: SnapshotNotification[] = [];
  const bus: Bus = {
    publishRejection: () => {},
    publishSnapshot: async (n) => {
      await Promise.resolve();
      published.push(n);
    },
    lastSnapshotNotified: () => Promise.resolve(1),
    publishDeadLetters: () => Promise.resolve(),
  };
  // The commit stream: what an earlier leadership left in it, then what the test adds.
  const queue: Array<{ seq: number; committable: Committable }> = [...(o.backlog ?? [])];
  const reader: CommitReader = {
    streamId: "COMMITS@1",
    fetch: async (max, waitMs) => {
      if (queue.length === 0) await new Promise((r) => setTimeout(r, Math.min(waitMs, 20)));
      return queue.splice(0, max);
    },
    close: () => Promise.resolve(),
  };
  const commitLog: CommitLog = { maxPayload: 1024 * 1024, append: () => Promise.resolve(), open: () => Promise.resolve(reader), purge: () => Promise.resolve() };
  const ingestLog: IngestLog = { liveStream: () => Promise.resolve({ identity: "S#1", firstSeq: 1, lastSeq: 1 }), streamIdentity: () => Promise.resolve("S#1"), openBucket: () => Promise.reject(new Error("unused")), purgeBucket: () => Promise.resolve() };
  const grant: LeaseGrant = { token: "x", fencingEpoch: 1, acquiredAtMono: performance.now() };
  let acquired = false;
  const lease: Lease = {
    tryAcquire: () => Promise.resolve(acquired ? null : ((acquired = true), grant)),
    renew: () => Promise.resolve(true),
    release: () => Promise.resolve(),
    validUntil: () => performance.now() + 60_000,
    ttlMs: 60_000,
  };
  system.spawn(
    "committer",
    () =>
      new CommitterActor({
        table,
        nodeId: "n2",
        lease,
        keeper: () => ({ isValid: () => true, stop: () => {}, stats: () => ({ renewLagMsMax: 0, renewLagMsLast: 0, renewals: 0, failures: 0 }) }),
        commitLog,
        ingestLog,
        bus,
        // A leader of epoch 4 wrote the stored assignment but committed nothing (the chain's newest epoch is 1).
        assignments: { ownerEpochOf: () => 1, storedLeaderEpoch: () => Promise.resolve(4) },
        clock: systemClock,
        meter: metrics.getMeter("test"),
        commitIntervalMs: o.commitIntervalMs ?? 40,
        acquireIntervalMs: 10,
        ...(o.onBacklogDecided !== undefined ? { onBacklogDecided: o.onBacklogDecided } : {}),
      }),
  );
  return { published, queue };
}

/** Polls `check` every 20 ms until it holds; fails after `timeoutMs`. */
export async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
