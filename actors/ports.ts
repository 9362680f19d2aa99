/**
 * The ports through which actors reach the outside world. The node (cluster/node.ts) implements them over NATS,
 * JetStream, KV and Redis; tests may implement them in-process. Actors never import NATS or Redis themselves.
 *
 * Offsets are JetStream stream sequences (numbers: a stream sequence stays far below 2^53).
 */
import type { Meter } from "@opentelemetry/api";
import type {
  BucketAssignment,
  BucketAttempts,
  CommitEntry,
  DeadLetter,
  MemberHeartbeat,
  SnapshotNotification,
  TableAssignment,
  WriterRejection,
} from "./wire/messages.ts";
import type { RowBatch } from "./wire/messages.ts";

export type { Lease, LeaseGrant } from "./lease-port.ts";
export type { LiveStream } from "../src/commit/stream-identity.ts";
import type { LiveStream } from "../src/commit/stream-identity.ts";
export type { Meter };

/** One message of a bucket's ingest subject. */
export interface IngestMessage {
  seq: number;
  /** The payload as published (a msgpack RowBatch; decoded by the writer, off its thread). */
  data: Uint8Array;
  /** Publish time at the server (epoch ms). */
  publishedAt: number;
  /** The message's W3C `traceparent` header, read only while the node traces (actors/wire/trace-context.ts). */
  traceparent?: string;
}

/** Reads one bucket's ingest subject from a start sequence, in order, with no acks (progress lives in snapshots). */
export interface BucketReader {
  /** Up to `max` messages; resolves early (possibly with none) after `waitMs`. */
  fetch(max: number, waitMs: number): Promise<IngestMessage[]>;
  close(): Promise<void>;
}

export interface IngestLog {
  /** The table's live ingest stream: its identity and sequence range (asked afresh on every call). */
  liveStream(table: string): Promise<LiveStream>;
  /**
   * Only the live stream's identity (one request, no sequence range): the check before every committable, where the
   * stream was already identified at open. A stream without a marker has a `#none` identity, which matches no table.
   */
  streamIdentity(table: string): Promise<string>;
  /** A fresh reader of `bucket` starting after `afterSeq` (the committed offset). */
  openBucket(table: string, bucket: number, afterSeq: number): Promise<BucketReader>;
  /**
   * Drops messages of `bucket` up to and including `throughSeq` (they are committed) — only if the live stream is
   * `stream` (the one the offset belongs to; undefined: not known, purge anyway); otherwise nothing is purged and it
   * throws, so that offsets of one stream never delete the messages of another.
   */
  purgeBucket(table: string, bucket: number, throughSeq: number, stream: string | undefined): Promise<void>;
}

/** Committables: writers append, the leader reads them from the start of the (purged) stream. */
export interface CommitLog {
  /**
   * The largest message the transport takes (NATS: the server's `max_payload`, headers included). A committable
   * whose encoding would not fit is appended by reference (actors/committable-store.ts).
   */
  readonly maxPayload: number;
  /** Publishes durably; resolves when the server stored it (de-duplicated by `msgId`). */
  append(c: CommitEntry, msgId: string): Promise<void>;
  /** A reader of every committable still in the stream, in order. */
  open(table: string): Promise<CommitReader>;
  /** Drops committables up to and including `throughSeq` (all of them were decided). */
  purge(table: string, throughSeq: number): Promise<void>;
}

export interface CommitReader {
  /**
   * Identity of the commit stream the sequences count in (its creation time: a re-created stream numbers from 1
   * again). Compaction watermarks name it (src/commit/compaction-commit.ts).
   */
  readonly streamId: string;
  fetch(max: number, waitMs: number): Promise<Array<{ seq: number; committable: CommitEntry }>>;
  close(): Promise<void>;
}

/** Where each bucket's read attempts are kept across processes (KV): see BucketAttempts and actors/poison-guard.ts. */
export interface AttemptLog {
  /** The bucket's attempts; null when none are recorded (or the record cannot be read: it is then started afresh). */
  read(table: string, bucket: number): Promise<BucketAttempts | null>;
  /** Replaces the record; null deletes it. */
  write(table: string, bucket: number, attempts: BucketAttempts | null): Promise<void>;
}

/** Core-NATS notifications and control messages. */
export interface Bus {
  /** A committable's or a writer's compaction's rejection, to the writer that sent it. */
  publishRejection(writerId: string, r: WriterRejection): void;
  /** Publishes the notification and records it as the table's last one (for late subscribers). */
  publishSnapshot(n: SnapshotNotification): Promise<void>;
  /** The snapshot id of the table's last recorded notification (0 when none). */
  lastSnapshotNotified(table: string): Promise<number>;
  /**
   * Publishes dead letters; one too large for a message carries only the start of its original (`fitDeadLetter`).
   * Resolves with how many the DLQ stored now: each letter has a message id (its stage, table, ingest stream, stream
   * sequence and row), so a letter published again — its group routed again after a failure — is de-duplicated, not
   * stored twice.
   */
  publishDeadLetters(table: string, letters: DeadLetter[]): Promise<number>;
}

/** Cluster membership and bucket assignments (KV). */
export interface ClusterState {
  heartbeat(hb: MemberHeartbeat): Promise<void>;
  /**
   * Members that heartbeat within `maxAgeMs` — judged by when this process saw their heartbeat change (monotonic
   * clock), not by the wall-clock time a member wrote into it (clocks may be skewed).
   */
  liveMembers(maxAgeMs: number): Promise<MemberHeartbeat[]>;
  readAssignment(table: string): Promise<TableAssignment | null>;
  writeAssignment(a: TableAssignment): Promise<void>;
  /** Calls back with every change of the table's assignment (and the current value first). */
  watchAssignment(table: string, onChange: (a: TableAssignment | null) => void): Promise<{ stop(): void }>;
  /** Lets the coordinator know that `node` flushed and stopped `bucket` at `epoch`, its input covered through `lastOffset`. */
  reportReleased(table: string, bucket: number, epoch: number, node: string, lastOffset: number): Promise<void>;
  releasedBuckets(table: string): Promise<Array<{ bucket: number; epoch: number; node: string; lastOffset: number }>>;
}

export type { BucketAssignment };

/** A message of a table's bare (unrouted) subject. */
export interface RawMessage {
  seq: number;
  data: Uint8Array;
}

export interface RawReader {
  fetch(max: number, waitMs: number): Promise<RawMessage[]>;
  close(): Promise<void>;
}

export interface RouterProgress {
  /** The stream whose sequences `through` and `intent` count (absent in progress written before it was recorded). */
  stream?: string;
  /** Last raw sequence fully routed. */
  through: number;
  /** A group of raw messages being routed: re-routed identically after a crash. */
  intent: { from: number; to: number } | null;
}

/** The router's view of the ingest stream. */
export interface RawLog {
  /** The largest message the transport takes (as `CommitLog.maxPayload`): routed batches are split to fit it. */
  readonly maxPayload: number;
  /** The table's live ingest stream (as `IngestLog.liveStream`). */
  liveStream(table: string): Promise<LiveStream>;
  /** Its identity only (as `IngestLog.streamIdentity`): the check before routing each group. */
  streamIdentity(table: string): Promise<string>;
  /** The progress and its revision (0 when none was ever written). */
  readProgress(table: string): Promise<{ progress: RouterProgress; revision: number }>;
  /**
   * Compare-and-set: writes only if the stored revision is still `revision`, and returns the new revision. Throws
   * when another router wrote meanwhile — this router is stale (a paused ex-leader) and must stop.
   */
  writeProgress(table: string, p: RouterProgress, revision: number): Promise<number>;
  /** Raw messages after `afterSeq`. */
  open(table: string, afterSeq: number): Promise<RawReader>;
  /** Publishes a row batch to a bucket subject with a de-duplication id; resolves when stored. */
  publishRouted(table: string, bucket: number, batch: RowBatch, msgId: string, rawSeq: number): Promise<void>;
  /** Drops raw messages through `throughSeq` (routed), only if the live stream is `stream` (as `purgeBucket`). */
  purgeRaw(table: string, throughSeq: number, stream: string | undefined): Promise<void>;
}

export interface Clock {
  /** Wall clock, epoch ms. */
  now(): number;
  /** Monotonic ms (performance.now()). */
  monotonic(): number;
}

export const systemClock: Clock = { now: () => Date.now(), monotonic: () => performance.now() };

/**
 * Where a maintenance request's answers go (the node implements it over the request's NATS reply subject). Calls
 * never throw and may come after the MaintenanceActor stopped: a job that outlives its leadership still reports
 * how it ended.
 */
export interface MaintenanceResponder {
  /** Queued, with this many jobs ahead of it. */
  accepted(queuedBehind: number): void;
  progress(p: { done: number; total: number; files?: number }): void;
  done(result: unknown): void;
  failed(error: Error): void;
}
