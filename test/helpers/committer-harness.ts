/**
 * A CommitterActor on a real table (in a temporary warehouse) with its NATS and Redis ports as in-process fakes: the
 * commit stream is a queue the test feeds, the bus records what it publishes, the lease is granted at once.
 */
import { metrics } from "@opentelemetry/api";
import type { ActorSystem } from "../../actors/runtime/index.ts";
import { CommitterActor } from "../../actors/committer.ts";
import { systemClock, type Bus, type CommitLog, type CommitReader, type IngestLog, type Lease, type LeaseGrant } from "../../actors/ports.ts";
import type { CommitEntry, Committable, CompactionRejection, Rejection, SnapshotNotification } from "../../actors/wire/messages.ts";
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

export interface HarnessOptions {
  /** What an earlier leadership left in the commit stream. */
  backlog?: Array<{ seq: number; committable: CommitEntry }>;
  onBacklogDecided?: (epoch: number) => void;
  commitIntervalMs?: number;
  /** The last snapshot id announced before this leader (default 1). */
  lastNotified?: number;
  /** The leader epoch of the stored assignment (default 4: a leader that wrote one but committed nothing). */
  storedLeaderEpoch?: number;
  /** Every snapshot notification waits for this before it is published (a bus that hangs). */
  publishGate?: Promise<void>;
  stallReportMs?: number;
  /** The committer's COMPACT snapshot spacing (default: the committer's own). */
  compactCommitSpacingMs?: number;
}

/** What the fake ports saw, and the commit stream the test feeds. */
export interface HarnessState {
  published: SnapshotNotification[];
  rejections: Rejection[];
  compactionRejections: CompactionRejection[];
  /** The commit stream's purges: everything through this sequence. */
  purgedThrough: number;
  queue: Array<{ seq: number; committable: CommitEntry }>;
  /** Reads of the commit stream so far (an idle leader's pace). */
  fetches: number;
}

/**
 * A CommitterActor on `table` with in-process ports: an earlier announcement (of snapshot 1 by default), a commit
 * stream fed through `queue`, a lease it gets at once.
 */
export function startCommitter(system: ActorSystem, table: Table, o: HarnessOptions = {}): HarnessState {
  const state: HarnessState = { published: [], rejections: [], compactionRejections: [], purgedThrough: 0, queue: [...(o.backlog ?? [])], fetches: 0 };
  const { published, queue } = state;
  const bus: Bus = {
    publishRejection: (_writer, r) => void (r.type === "rejection" ? state.rejections.push(r) : state.compactionRejections.push(r)),
    publishSnapshot: async (n) => {
      await (o.publishGate ?? Promise.resolve());
      published.push(n);
    },
    lastSnapshotNotified: () => Promise.resolve(o.lastNotified ?? 1),
    publishDeadLetters: (_t, letters) => Promise.resolve(letters.length),
  };
  const reader: CommitReader = {
    streamId: "COMMITS@1",
    fetch: async (max, waitMs) => {
      state.fetches++;
      if (queue.length === 0) await new Promise((r) => setTimeout(r, Math.min(waitMs, 20)));
      return queue.splice(0, max);
    },
    close: () => Promise.resolve(),
  };
  const commitLog: CommitLog = {
    maxPayload: 1024 * 1024,
    append: () => Promise.resolve(),
    open: () => Promise.resolve(reader),
    purge: (_table, through) => Promise.resolve(void (state.purgedThrough = through)),
  };
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
        assignments: { ownerEpochOf: () => 1, storedLeaderEpoch: () => Promise.resolve(o.storedLeaderEpoch ?? 4) },
        clock: systemClock,
        meter: metrics.getMeter("test"),
        commitIntervalMs: o.commitIntervalMs ?? 40,
        acquireIntervalMs: 10,
        ...(o.onBacklogDecided !== undefined ? { onBacklogDecided: o.onBacklogDecided } : {}),
        ...(o.stallReportMs !== undefined ? { stallReportMs: o.stallReportMs } : {}),
        ...(o.compactCommitSpacingMs !== undefined ? { compactCommitSpacingMs: o.compactCommitSpacingMs } : {}),
      }),
  );
  return state;
}

/** Polls `check` every 20 ms until it holds; fails after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
