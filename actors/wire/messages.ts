/**
 * Types of every message that crosses NATS, with their encodings. Each is a plain object with a string `type`
 * (unions over enums), versioned by `v` where it is persisted.
 *
 * Encodings: row batches, committables and rejections (of committables and of compactions) are msgpack (msgpackr, no
 * records extension, so other languages can read them; bigints as int64); notifications, table metadata and
 * heartbeats are JSON (readable by any subscriber and by `nats kv get`).
 */
import type { TableSchemaJson } from "../../src/format/schema.ts";
import type { DataFileMeta } from "../../src/format/manifest.ts";
import type { CompactionRejectReason } from "../../src/commit/compaction-commit.ts";

// ---------------------------------------------------------------------------------------------------------------
// Ingest

/**
 * A batch of rows for one bucket (the producer client and the router publish these to `<p>.in.<db>.<table>.<b>`).
 * `cols` names the columns of each row array, so the payload describes itself and column order may differ from the
 * schema; values use the same input forms as the CLI (see docs/guide/tables.md: numbers, decimal strings, ISO timestamps or epoch
 * millis, bytes as msgpack bin). Rows whose values do not fit the schema go to the dead-letter subject.
 */
export interface RowBatch {
  v: 1;
  /** The schema id the producer validated against (informational; rows are checked again by the writer). */
  schema: number;
  cols: string[];
  rows: unknown[][];
}

/** Headers on ingest messages. */
export const H_MSG_ID = "Nats-Msg-Id";
/** On routed messages: the stream sequence of the raw message they came from. */
export const H_RAW_SEQ = "Natslake-Raw-Seq";

/** A dead letter: a rejected row (or whole message) with the reason. Published to `<p>.dlq.<db>.<table>`. */
export interface DeadLetter {
  type: "dead-letter";
  table: string;
  /** Where it was rejected. */
  stage: "router" | "writer";
  reason: string;
  /** Stream sequence of the message the row came from. */
  streamSeq: number;
  /** Index of the row in that message, or -1 when the whole message was unreadable. */
  rowIndex: number;
  /**
   * The original row (JSON-safe rendering) or the original payload as base64 when it could not be decoded. A
   * letter that would not fit in one NATS message carries the first bytes of that rendering's JSON instead (a
   * string) and `originalBytes` says how long the whole was (`fitDeadLetter`, actors/wire/limits.ts).
   */
  original: unknown;
  /** Set when `original` was cut to fit the server's max_payload: the size of the full JSON rendering. */
  originalBytes?: number;
  at: number;
}

/**
 * A bucket's read attempts, kept in KV (`<p>_attempts`, key `<db>.<table>.<bucket>`) so that they survive the writer's
 * process: a message that kills it leaves nothing else behind. Written by the bucket's writer only (actors/poison-guard.ts).
 */
export interface BucketAttempts {
  v: 1;
  /** The ingest stream the sequences count in (another stream starts afresh). */
  stream: string;
  /** The committed offset the attempts started reading after. */
  from: number;
  /** Generations of the bucket's writer that read past `from` while it stayed the committed offset. */
  attempts: number;
  /** Isolating: messages up to this stream sequence are read, flushed and committed one at a time. */
  until?: number;
  /** Isolating: the message being tried alone (when the writer dies, this is the one it died on). */
  probing?: number;
  /** Isolating: failures of each message tried alone (stream sequence → count), above the committed offset. */
  failures?: Record<string, number>;
  /** The last error a failure showed, if it showed one (a killed process shows none). */
  lastError?: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Commit protocol

/** One data file of a committable, as the committer needs it (a DataFileMeta, wire-safe). */
export interface WireDataFile {
  /** Framed BinaryRow of the partition. */
  partition: Uint8Array;
  totalBuckets: number;
  /** The file's metadata exactly as the manifest entry will carry it (bigints travel as msgpack int64). */
  meta: DataFileMeta;
  /** A primary-key table's changelog file (changelog-producer = input), not a data file. */
  changelog?: true;
}

/**
 * What a committable and a reference to one both carry: the fields the leader's acceptance rule reads.
 * `prevOffset` is the stream sequence the writer resumed after (the committed offset when it took the bucket, then
 * the `lastOffset` of its previous committable); `lastOffset` the last stream sequence its files cover.
 */
export interface CommittableClaim {
  table: string;
  /**
   * Identity of the ingest stream the offsets were read from (`<name>#<marker>`, src/commit/stream-identity.ts):
   * the leader accepts it only while the table's snapshots record the same stream.
   */
  stream?: string;
  bucket: number;
  ownerEpoch: number;
  writerId: string;
  prevOffset: number;
  lastOffset: number;
  /** Writer-local flush counter, for logs and dedupe of republished committables. */
  flushId: number;
  /**
   * The commit-interval instant (wall-clock ms, a multiple of the interval) the flush was cut on, when a flush tick
   * cut it; absent for early flushes (a full buffer, a preemption, a hand-off). The leader waits briefly for the
   * beat's other buckets before it commits (actors/beat-gather.ts).
   */
  beatMillis?: number;
  /**
   * W3C trace context of the flush that made it (actors/wire/trace-context.ts), when tracing is on: the leader's
   * commit span links to it.
   */
  traceparent?: string;
  /**
   * Primary-key tables: the sequence numbers the flush took, `first` … `last` (last = first − 1 when it took none).
   * The leader accepts the committable only when `first` is above the bucket's committed sequence number.
   */
  seq?: { first: bigint; last: bigint };
}

/** One committable per (bucket, flush): writer → committer over JetStream `<p>.commit.<db>.<table>`. */
export interface Committable extends CommittableClaim {
  type: "committable";
  v: 1;
  rowCount: number;
  files: WireDataFile[];
  /** Wall-clock ms of the oldest row's arrival at the writer (publish → visible latency). */
  firstArrivalMillis: number;
}

/**
 * A committable sent by reference, when its encoding would not fit in one NATS message (many files, large
 * statistics): the writer first writes the committable's msgpack encoding, durably, to `<table>/<path>`, then
 * appends this in its place. It is one message in the commit stream like any committable, so it is decided
 * atomically, once, in stream order; it repeats the fields the acceptance rule reads, and the committer checks them
 * against the body it loads. See actors/committable-store.ts.
 */
export interface CommittableRef extends CommittableClaim {
  type: "committable-ref";
  v: 1;
  /** The body's path relative to the table's directory (`natslake-committables/<uuid>`). */
  path: string;
  /** The body's size in bytes. */
  size: number;
}

/** The files one compaction replaced in one partition of its bucket (both lists as their manifest entries carry them). */
export interface CompactionChange {
  /** Framed BinaryRow of the partition. */
  partition: Uint8Array;
  totalBuckets: number;
  /** The inputs: live files of the bucket, in the sequence order their rows were rewritten in. */
  before: DataFileMeta[];
  /** The outputs, written under the bucket's directory, referenced by no snapshot until accepted. */
  after: DataFileMeta[];
  /** `changelog-producer = lookup`: the changelog files the compaction wrote (same rules as `after`). */
  changelog?: DataFileMeta[];
}

/**
 * A writer's compaction of small files of its bucket: writer → committer over the commit stream, like a committable.
 * It carries no offsets (it moves no progress); the leader lands accepted ones as a COMPACT snapshot and deletes the
 * outputs of rejected ones (src/commit/compaction-commit.ts: duplicate / stale owner / inputs gone / outputs missing).
 */
export interface CompactionEntry {
  type: "compaction";
  v: 1;
  table: string;
  bucket: number;
  ownerEpoch: number;
  writerId: string;
  /** Unique per compaction (logs, the message id). */
  compactionId: string;
  /** The snapshot the writer planned against. */
  planSnapshotId: number;
  changes: CompactionChange[];
}

/** What the commit stream carries: a committable, a reference to one, or a writer's compaction. */
export type CommitEntry = Committable | CommittableRef | CompactionEntry;

/** committer → writer: a committable was not accepted; the writer resumes bucket `bucket` from `committedOffset`. */
export interface Rejection {
  type: "rejection";
  table: string;
  bucket: number;
  ownerEpoch: number;
  prevOffset: number;
  committedOffset: number;
  /** Primary-key tables: the highest sequence number committed for the bucket; the writer continues after it. */
  committedSeq?: bigint;
  /**
   * `body-missing`: a committable sent by reference whose body file is gone (it cannot be applied; re-send it).
   * `broken-sequence-chain`: a primary-key flush whose sequence numbers do not start above the committed ones.
   */
  reason: "stale-owner-epoch" | "broken-offset-chain" | "stream-mismatch" | "body-missing" | "broken-sequence-chain";
}

/**
 * committer → writer, on the same subject as a Rejection: a CompactionEntry the leader did not land (its outputs are
 * deleted). The writer stops counting the job (and, for a primary-key bucket, every job it planned on top of it) and
 * plans again from the committed snapshot, instead of waiting for the job's in-flight time to pass.
 */
export interface CompactionRejection {
  type: "compaction-rejection";
  table: string;
  bucket: number;
  ownerEpoch: number;
  /** The rejected entry's compactionId. */
  compactionId: string;
  /**
   * `stale-owner-epoch`: the writer no longer owns the bucket; `inputs-gone`: an input left the bucket first (another
   * compaction took it); `outputs-missing`: an output does not exist (it was deleted with an earlier rejected job);
   * `lsm-conflict`: the change would leave a level >= 1 that is not one sorted run.
   */
  reason: CompactionRejectReason;
  /** What the leader found, for the writer's log. */
  detail: string;
}

/** What travels on `<p>.ctl.reject.<db>.<table>.<writer>`: a committable's rejection or a compaction's. */
export type WriterRejection = Rejection | CompactionRejection;

/**
 * KV `<p>_dlq_replays` value (key `<db>.<table>.<dlq sequence>`): a dead letter whose rows `natslake dlq replay`
 * published again, and acknowledged. The letter itself stays in the DLQ until the stream's limits drop it.
 */
export interface DlqReplayRecord {
  v: 1;
  table: string;
  /** The letter's sequence in the DLQ stream. */
  seq: number;
  /** When the rows were acknowledged (epoch ms). */
  at: number;
  rows: number;
  /** Whether the rows were the letter's original or rows the operator supplied (fixed). */
  source: "original" | "file";
  /** The ingest messages that carried them (`Nats-Msg-Id`s). */
  msgIds: string[];
}

// ---------------------------------------------------------------------------------------------------------------
// Notifications

/** Published on `<p>.snap.<db>.<table>` after a snapshot lands; the last one is kept in KV `<p>_snap`. */
export interface SnapshotNotification {
  type: "snapshot";
  table: string;
  snapshotId: number;
  kind: string;
  /** The snapshot's commit time (epoch ms). */
  timeMillis: number;
  /** Wall-clock epoch ms right after the `link()` that created the snapshot returned. */
  linkedAtMillis: number;
  totalRecordCount: number;
  deltaRecordCount: number;
  epoch: number;
  /** Committed stream offset per bucket (bucket → sequence). */
  offsets: Record<string, number>;
  /**
   * The stream those offsets belong to (`<name>#<marker>`); absent before the table's first committable. A
   * read-your-writes wait compares offsets only with notifications of the stream it published to.
   */
  stream?: string;
  /**
   * W3C trace context of the commit that landed the snapshot (its notify span, a child of the commit span), when the
   * leader traces: a subscriber continues the trace from it (`notificationContext`, cluster/snapshots-client.ts).
   * Also sent as the message's `traceparent` header.
   */
  traceparent?: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Metadata, membership, assignment (KV values, JSON)

/** KV `<p>_tables` value: what producers need to validate and route rows without the warehouse. */
export interface TableMeta {
  v: 1;
  table: string;
  schema: TableSchemaJson;
  bucket: number;
  bucketKey: string[];
  partitionKeys: string[];
  ingestStream: string;
  /** The stream's duplicate window in ms (producers retry within it with the same message id). */
  duplicateWindowMs: number;
}

/**
 * KV `<p>_tables` value under key `_natslake.cluster.warehouse`: the warehouse this cluster (its prefix on this NATS)
 * serves, written once by the first node (cluster/nats/warehouse-binding.ts).
 */
export interface WarehouseBinding {
  v: 1;
  /** `file:///abs/path` or `s3://bucket/prefix` (no endpoint or region settings). */
  warehouse: string;
  /** The node that bound it, and when (epoch ms). */
  boundBy: string;
  at: number;
}

export type NodeRole = "writer" | "committer" | "reader";

/** KV `<p>_members` value, refreshed every heartbeat interval. */
export interface MemberHeartbeat {
  v: 1;
  nodeId: string;
  roles: NodeRole[];
  pid: number;
  startedAt: number;
  at: number;
  /** The node is draining (SIGTERM, `natslake node drain`): give it no new buckets. */
  draining: boolean;
  /** The drain finished and the node stays up holding no buckets and no leases (`natslake node drain`). */
  drained?: boolean;
  /** Largest lease renew lag (ms) seen by this node's leaders since it started (event-loop health). */
  leaseRenewLagMsMax?: number;
  /** Largest lease renew lag (ms) among renewals since the previous heartbeat. */
  leaseRenewLagMsRecent?: number;
  /** Tables this node currently leads. */
  leading?: string[];
}

/** One bucket's assignment. `state: "revoking"` asks the owner to flush, stop and report `released`. */
export interface BucketAssignment {
  node: string;
  epoch: number;
  state: "active" | "revoking";
  /** While revoking: the node that takes the bucket over once it is released. */
  target?: string;
}

/** KV `<p>_assign` value for one table, written by the table's coordinator (the leader). */
export interface TableAssignment {
  v: 1;
  table: string;
  /** The leader epoch that wrote it (a stale leader's writes are ignored by readers holding a newer one). */
  leaderEpoch: number;
  /** The node whose coordinator wrote it (the table's leader). */
  leader: string;
  buckets: Record<string, BucketAssignment>;
}

/**
 * KV `<p>_assign` value under `released.<db>.<table>.<bucket>`: the writer let go of a bucket it was asked to release
 * (the coordinator hands it over once this is recorded).
 */
export interface Released {
  bucket: number;
  /** The owner epoch the writer held. */
  epoch: number;
  node: string;
  /** The last stream sequence covered by the owner's final committable (0 if it sent none). */
  lastOffset: number;
}

/** The payload of an ingest stream's identity marker, the one message on `<p>.in.<db>.<table>.stream-id`. */
export interface StreamIdMarker {
  type: "stream-id";
  v: 1;
  /** Unique per stream: its creation time (as the node that wrote it saw it) and random bits. */
  id: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Admin (request-reply on `<p>.ctl.admin`, JSON)

export type AdminRequest =
  | { type: "create-table"; table: string; columns: string; partitionKeys?: string[]; primaryKeys?: string[]; options?: Record<string, string> }
  | { type: "list-tables" }
  | { type: "describe-table"; table: string }
  /** Moves the table's offsets onto its live ingest stream (cluster/stream-reset.ts). */
  | { type: "reset-offsets"; table: string; from: "earliest" | "latest" }
  /** Drops the table: its files, and everything the cluster keeps for it (cluster/table-drop.ts). */
  | { type: "drop-table"; table: string; ifExists?: boolean };

/**
 * Node → node, while a table is dropped (request-reply on `<p>.ctl.stop-table.<nodeId>`, JSON): stop serving the
 * table now. Answered by that node only, once its writers, committer, router and maintenance for it have stopped.
 */
export interface StopTableRequest {
  type: "stop-table";
  v: 1;
  table: string;
}

/** `served`: the node was serving the table (and now is not). */
export type StopTableReply = { ok: true; node: string; table: string; served: boolean } | { ok: false; node: string; error: string; kind: string };

export type AdminReply = { ok: true; result: unknown } | { ok: false; error: string; kind: string };

// ---------------------------------------------------------------------------------------------------------------
// Maintenance requests (request-reply on `<p>.ctl.maint.<db>.<table>`, JSON, served by the table's leader only)

export type MaintenanceTaskName = "compact" | "expire-snapshots" | "expire-partitions" | "remove-orphans" | "restore";

/** The options of each task: the CLI's flags, already parsed (durations in ms). */
export interface MaintenanceTaskOptions {
  /** `full`: primary-key tables only — every sorted run of each bucket into the max level. */
  compact: { partition?: string; bucket?: number; full?: boolean; dryRun?: boolean };
  "expire-snapshots": { retainMin?: number; retainMax?: number; olderThanMs?: number; maxDeletes?: number; dryRun?: boolean };
  "expire-partitions": { expirationTimeMs?: number; timestampFormatter?: string; timestampPattern?: string; dryRun?: boolean };
  "remove-orphans": { olderThanMs?: number; dryRun?: boolean };
  /** `natslake rollback --nats`: the table's content back to a snapshot or a tag, as one new snapshot (exactly one of the two). */
  restore: { toSnapshot?: number; toTag?: string; dryRun?: boolean };
}

/** CLI → the table's leader: run one maintenance job now, serialised with the leader's scheduled ones. */
export type MaintenanceRequest = {
  [K in MaintenanceTaskName]: { type: "maintenance"; v: 1; task: K; table: string; options: MaintenanceTaskOptions[K]; progress?: boolean };
}[MaintenanceTaskName];

/**
 * The leader's answers, all to the request's reply subject, in this order: `accepted` at once (the CLI knows a
 * leader has it; until then no leader answered), `progress` while it runs where the local CLI shows a bar,
 * `running` every few seconds (silence means the leader died or paused mid-job), the `part`s of a result too large
 * for one message (base64 slices of its JSON), then `done` — `result` (or the parts) is the same summary object the
 * local CLI prints with `--json`. A request refused before it is queued (not valid, not the leader any more) gets
 * only `done` with `ok: false`.
 */
export type MaintenanceReply =
  | { type: "accepted"; node: string; task: MaintenanceTaskName; table: string; queuedBehind: number }
  | { type: "progress"; node: string; done: number; total: number; files?: number }
  | { type: "running"; node: string }
  | { type: "part"; node: string; index: number; data: string }
  | { type: "done"; ok: true; node: string; result?: unknown; parts?: number }
  | { type: "done"; ok: false; node: string; error: string; kind: string };

// ---------------------------------------------------------------------------------------------------------------
// Node control (request on `<p>.ctl.node.<nodeId>`, JSON, answered by that node only)

/**
 * CLI → one node: drain it as SIGTERM would — its buckets are flushed and handed to other writers, the last
 * committables of the buckets it released are committed, its leases are released and its actors stop. `then`:
 * `stay` keeps the process up afterwards, holding nothing (a member marked draining, so it gets nothing back until
 * it is restarted); `exit` ends the process as a SIGTERM does.
 */
export interface NodeDrainRequest {
  type: "drain";
  v: 1;
  then: "stay" | "exit";
}

/**
 * The node's answers, all to the request's reply subject: `accepted` at once, `progress` every second while buckets
 * are still being handed off, then `done`.
 */
export type NodeControlReply =
  | { type: "accepted"; node: string; buckets: number; leading: string[]; alreadyDraining: boolean }
  | { type: "progress"; node: string; buckets: number }
  | {
      type: "done";
      ok: true;
      node: string;
      /** Buckets the node owned when the drain began. */
      handedOff: number;
      /** Buckets still owned when the drain timeout passed (0: all handed off); their leases expire instead. */
      stillOwned: number;
      /** Released buckets whose last committable was not committed within the drain timeout. */
      uncommitted: number;
      then: "stay" | "exit";
    }
  | { type: "done"; ok: false; node: string; error: string; kind: string };
