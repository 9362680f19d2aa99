/**
 * The wire contracts as zod schemas: one per message type that crosses NATS (and per KV value other processes read).
 * They are the source of the JSON Schemas published in the package (`schemas/*.schema.json`, written by
 * `npm run schemas`, kept equal to this file by test/unit/actors/wire-schemas.test.ts), and each is held to the
 * TypeScript type the code sends by the compile-time checks at the end of this file: a field added to a message
 * type but not here (or the other way round) does not compile.
 *
 * msgpack messages (row batches, commit entries, rejections) are described in msgpack's JSON view (`jsonView`):
 * `bin` values as base64 text, integers of any width as JSON integers. Objects the cluster sends are strict (no
 * other keys), so a test that validates every message the cluster sends (test/integration/wire-contracts.test.ts)
 * also notices a field sent but not described. Readers in other languages should still ignore keys they do not know:
 * a later version may add optional fields.
 */
import { z } from "zod";
import type { DataFileMeta, SimpleStats } from "../../src/format/manifest.ts";
import type { FieldJson, TypeJson } from "../../src/format/data-types.ts";
import type { TableSchemaJson } from "../../src/format/schema.ts";
import type { RouterProgress } from "../ports.ts";
import { consumeOpenSchema, type ConsumeControl, type ConsumeOpen, type ConsumeOpenReply } from "./consume.ts";
import { lookupReplySchema, lookupRequestSchema, type LookupReply, type LookupRequest } from "./lookup.ts";
import { maintenanceRequestSchema } from "./maintenance-request.ts";
import { nodeControlRequestSchema } from "./node-control.ts";
import type {
  AdminReply,
  AdminRequest,
  BucketAssignment,
  BucketAttempts,
  Committable,
  CommittableRef,
  CompactionChange,
  CompactionEntry,
  CompactionRejection,
  DeadLetter,
  DlqReplayRecord,
  MaintenanceReply,
  MaintenanceRequest,
  MemberHeartbeat,
  NodeControlReply,
  NodeDrainRequest,
  Rejection,
  Released,
  RowBatch,
  SnapshotNotification,
  StopTableReply,
  StopTableRequest,
  StreamIdMarker,
  TableAssignment,
  TableMeta,
  WireDataFile,
} from "./messages.ts";

// ---------------------------------------------------------------------------------------------------------------
// Building blocks

const isBinary = (v: unknown): boolean => v instanceof Uint8Array;
const isInt64 = (v: unknown): boolean => typeof v === "bigint";
/** msgpack `bin` (a Uint8Array once decoded); base64 text in the JSON view. */
export const binary = z.custom<Uint8Array>(isBinary, { message: "expected bytes (msgpack bin)" });
/** A 64-bit integer carried as msgpack int64 (a bigint once decoded by natslake); an integer in the JSON view. */
export const int64 = z.custom<bigint>(isInt64, { message: "expected a 64-bit integer (msgpack int64)" });

const int = z.number().int();
const count = z.number().int().nonnegative();
/** A JetStream stream sequence (0: none yet). */
const seq = z.number().int().nonnegative();
const epochMillis = z.number().int().nonnegative().describe("epoch milliseconds");
/** `<db>.<table>`. */
const tableName = z.string().regex(/^[^.\s]+\.[^.\s]+$/, "a table is named <db>.<table>").describe("the table, `<db>.<table>`");
/** An ingest stream's identity, `<stream name>#<marker>` (src/commit/stream-identity.ts). */
const streamIdentity = z.string().min(1).describe("the ingest stream's identity, `<stream name>#<marker>`");
const bucketKey = z.string().regex(/^\d+$/, "a bucket number");
/** An unsigned decimal integer as text (NATS header values are text). */
const digits = z.string().regex(/^\d+$/);
/**
 * W3C trace context (https://www.w3.org/TR/trace-context/), version 00 as the OpenTelemetry propagator writes it:
 * `00-<trace id>-<parent span id>-<flags>` in lower-case hex (actors/wire/trace-context.ts).
 */
const traceparent = z
  .string()
  .regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/, "a W3C traceparent, 00-<32 hex>-<16 hex>-<2 hex>")
  .describe("W3C trace context (`00-<trace id>-<span id>-<flags>`), present only when the sender traces");

// ---------------------------------------------------------------------------------------------------------------
// Ingest

export const rowBatchSchema = z
  .strictObject({
    v: z.literal(1),
    schema: int.describe("the schema id the producer validated against (informational; -1: none)"),
    cols: z.array(z.string()).describe("the column of each position of a row; a primary-key table's batches end with `_row_kind`, each row's kind (`+I`, `-U`, `+U`, `-D`)"),
    rows: z.array(z.array(z.unknown())).describe("rows as arrays of values in `cols` order; values are checked against the table's schema by the writer"),
  })
  .meta({
    title: "RowBatch",
    description:
      "Rows for one bucket (msgpack), on `<p>.in.<db>.<table>.<bucket>`: published by the producer client and by the router. Rows whose values do not fit the table's schema become dead letters; the rest land.",
  });

/** What a publisher that does not route may send to `<p>.in.<db>.<table>`: the batch's schema id may be left out. */
const rawRowBatch = z
  .looseObject({ v: z.literal(1), schema: int.optional(), cols: z.array(z.string()), rows: z.array(z.array(z.unknown())) })
  .describe("a row batch {v: 1, schema?, cols, rows}");
const rawRow = z.record(z.string(), z.unknown()).describe("one row: column name → value");

export const rawRowsSchema = z.union([rawRowBatch, rawRow, z.array(rawRow).describe("an array of rows")]).meta({
  title: "RawRows",
  description:
    "What any publisher may send to a table's bare subject `<p>.in.<db>.<table>`, as JSON or msgpack: one row object, an array of row objects, or a row batch. The router on the table's leader checks each row and routes it to its bucket exactly once; values take the CLI's input forms (README). A primary-key table's rows may carry `_row_kind` (`+I`, `-U`, `+U`, `-D`; absent: `+I`; a retraction needs only the key). A table with `natslake.ingest.format = debezium-json` takes one Debezium change event (JSON, with or without the schema wrapper) per message instead.",
});

export const streamIdMarkerSchema = z
  .strictObject({ type: z.literal("stream-id"), v: z.literal(1), id: z.string().min(1).describe("unique per stream: a creation time and random bits") })
  .meta({ title: "StreamIdMarker", description: "The ingest stream's identity marker (JSON): the one message on `<p>.in.<db>.<table>.stream-id`, written once into each new stream." });

export const deadLetterSchema = z
  .strictObject({
    type: z.literal("dead-letter"),
    table: tableName,
    stage: z.enum(["router", "writer"]).describe("where the row was rejected: raw rows by the router, routed batches by the writer"),
    reason: z.string(),
    streamSeq: seq.describe("stream sequence of the message the row came from (what its publish acknowledgement returned)"),
    rowIndex: z.number().int().min(-1).describe("index of the row in that message; -1 when the whole message was unreadable"),
    original: z.unknown().describe("the row (JSON-safe rendering) or the payload as base64; a string of the rendering's first 4 KiB when the letter would not fit in one message"),
    originalBytes: count.optional().describe("set when `original` was cut: the size of the full rendering's JSON"),
    at: epochMillis,
  })
  .meta({ title: "DeadLetter", description: "A rejected row or message with the reason (JSON), on `<p>.dlq.<db>.<table>` (stream `<P>_DLQ`). Header `Natslake-Reason`: the reason's first 200 characters." });

export const dlqReplayRecordSchema = z
  .strictObject({
    v: z.literal(1),
    table: tableName,
    seq: z.number().int().positive().describe("the letter's sequence in the DLQ stream"),
    at: epochMillis.describe("when the replayed rows were acknowledged"),
    rows: count,
    source: z.enum(["original", "file"]).describe("the letter's own row, or rows an operator supplied (fixed)"),
    msgIds: z.array(z.string().min(1)).describe("the `Nats-Msg-Id`s of the ingest messages that carried the rows"),
  })
  .meta({
    title: "DlqReplayRecord",
    description:
      "A dead letter whose rows `natslake dlq replay` published again and saw acknowledged (JSON): KV `<p>_dlq_replays`, key `<db>.<table>.<dlq seq>`, kept 7 days. The letter stays in the DLQ; later replays skip it unless asked.",
  });

// ---------------------------------------------------------------------------------------------------------------
// Commit protocol (msgpack)

const simpleStats = z.strictObject({ minValues: binary, maxValues: binary, nullCounts: z.array(int64.nullable()) });

const dataFileMeta = z
  .strictObject({
    fileName: z.string().min(1),
    fileSize: count,
    rowCount: count,
    minKey: binary,
    maxKey: binary,
    keyStats: simpleStats,
    valueStats: simpleStats,
    minSequenceNumber: int64,
    maxSequenceNumber: int64,
    schemaId: count,
    level: count,
    extraFiles: z.array(z.string()),
    creationTimeMillis: int.nullable(),
    deleteRowCount: count.nullable(),
    embeddedIndex: binary.nullable(),
    fileSource: int.nullable(),
    valueStatsCols: z.array(z.string()).nullable(),
    externalPath: z.string().nullable(),
    firstRowId: int64.nullable(),
    writeCols: z.array(z.string()).nullable(),
  })
  .describe("a data file's metadata exactly as its Paimon manifest entry will carry it");

const claim = {
  table: tableName,
  stream: streamIdentity.optional(),
  bucket: count,
  ownerEpoch: count,
  writerId: z.string().min(1),
  prevOffset: seq.describe("the stream sequence the writer resumed after"),
  lastOffset: seq.describe("the last stream sequence the files cover"),
  flushId: count,
  beatMillis: z.number().int().nonnegative().optional().describe("the commit-interval instant (wall-clock ms) a flush tick cut the flush on; absent for early flushes"),
  traceparent: traceparent.optional().describe("the writer's flush span, when the writer traces: the leader's commit span links to it"),
  seq: z
    .strictObject({ first: int64, last: int64 })
    .optional()
    .describe("primary-key tables: the sequence numbers the flush took, first … last (last = first − 1 when none); the leader accepts it only when first is above the bucket's committed sequence number"),
};

const wireDataFile = z.strictObject({
  partition: binary.describe("framed BinaryRow of the partition"),
  totalBuckets: int,
  meta: dataFileMeta,
  changelog: z.literal(true).optional().describe("a primary-key table's changelog file (changelog-producer = input), listed in the snapshot's changelog manifests"),
});

export const committableSchema = z
  .strictObject({
    type: z.literal("committable"),
    v: z.literal(1),
    ...claim,
    rowCount: count,
    files: z.array(wireDataFile),
    firstArrivalMillis: z.number().int().describe("wall-clock ms of the oldest row's arrival at the writer (0: unknown)"),
  })
  .describe("one bucket's flush: the files written and the offsets they cover");

export const committableRefSchema = z
  .strictObject({
    type: z.literal("committable-ref"),
    v: z.literal(1),
    ...claim,
    path: z.string().min(1).describe("the body's path relative to the table's directory"),
    size: count,
  })
  .describe("a committable too large for one message, written to the warehouse first and sent by reference");

const compactionChange = z.strictObject({ partition: binary, totalBuckets: int, before: z.array(dataFileMeta), after: z.array(dataFileMeta), changelog: z.array(dataFileMeta).optional() });

export const compactionEntrySchema = z
  .strictObject({
    type: z.literal("compaction"),
    v: z.literal(1),
    table: tableName,
    bucket: count,
    ownerEpoch: count,
    writerId: z.string().min(1),
    compactionId: z.string().min(1),
    planSnapshotId: count,
    changes: z.array(compactionChange),
  })
  .describe("a writer's compaction of small files of its bucket");

export const commitEntrySchema = z.discriminatedUnion("type", [committableSchema, committableRefSchema, compactionEntrySchema]).meta({
  title: "CommitEntry",
  description: "What the commit stream carries (msgpack), writer → the table's leader on `<p>.commit.<db>.<table>`: a committable, a reference to one, or a compaction.",
});

const committableRejectionSchema = z
  .strictObject({
    type: z.literal("rejection"),
    table: tableName,
    bucket: count,
    ownerEpoch: count,
    prevOffset: seq,
    committedOffset: seq.describe("where the writer resumes the bucket from"),
    committedSeq: int64.optional().describe("primary-key tables: the highest sequence number committed for the bucket; the writer continues after it"),
    reason: z.enum(["stale-owner-epoch", "broken-offset-chain", "stream-mismatch", "body-missing", "broken-sequence-chain"]),
  })
  .describe("a committable the leader did not accept: the writer resumes the bucket from committedOffset");

const compactionRejectionSchema = z
  .strictObject({
    type: z.literal("compaction-rejection"),
    table: tableName,
    bucket: count,
    ownerEpoch: count,
    compactionId: z.string().min(1).describe("the rejected compaction entry's compactionId"),
    reason: z.enum(["stale-owner-epoch", "inputs-gone", "outputs-missing", "lsm-conflict"]),
    detail: z.string().describe("what the leader found, for the writer's log"),
  })
  .describe("a writer's compaction the leader did not land (its outputs were deleted): the writer plans the bucket again from the committed snapshot");

export const rejectionSchema = z.discriminatedUnion("type", [committableRejectionSchema, compactionRejectionSchema]).meta({
  title: "Rejection",
  description: "What the leader did not accept from a writer (msgpack), leader → writer on `<p>.ctl.reject.<db>.<table>.<writer>`: a committable, or a compaction.",
});

// ---------------------------------------------------------------------------------------------------------------
// Notifications

export const snapshotNotificationSchema = z
  .strictObject({
    type: z.literal("snapshot"),
    table: tableName,
    snapshotId: z.number().int().positive(),
    kind: z.string().describe("the snapshot's commit kind (APPEND, COMPACT, OVERWRITE, …)"),
    timeMillis: epochMillis.describe("the snapshot's commit time"),
    linkedAtMillis: epochMillis.describe("wall clock right after the link() that created the snapshot"),
    totalRecordCount: count,
    deltaRecordCount: count,
    epoch: count.describe("the leader epoch that committed it"),
    offsets: z.record(bucketKey, seq).describe("committed stream sequence per bucket"),
    stream: streamIdentity.optional(),
    traceparent: traceparent.optional().describe("the leader's notify span (a child of its commit span), when the leader traces; also the message's `traceparent` header"),
  })
  .meta({ title: "SnapshotNotification", description: "A snapshot landed (JSON): on `<p>.snap.<db>.<table>` (core NATS); the newest is kept in KV `<p>_snap` under `<db>.<table>`." });

// ---------------------------------------------------------------------------------------------------------------
// Metadata, membership, assignment (KV values, JSON)

const typeJson: z.ZodType<TypeJson> = z.union([z.string(), z.looseObject({ type: z.string() })]);
const fieldJson = z.strictObject({ id: int, name: z.string(), type: typeJson, description: z.string().optional() });
const tableSchemaJson = z
  .strictObject({
    version: int.optional(),
    id: count,
    fields: z.array(fieldJson),
    highestFieldId: int,
    partitionKeys: z.array(z.string()),
    primaryKeys: z.array(z.string()),
    options: z.record(z.string(), z.string()),
    comment: z.string().nullable().optional(),
    timeMillis: z.number().int().optional(),
  })
  .describe("the table's schema as Paimon stores it (schema/schema-N)");

export const tableMetaSchema = z
  .strictObject({
    v: z.literal(1),
    table: tableName,
    schema: tableSchemaJson,
    bucket: int,
    bucketKey: z.array(z.string()),
    partitionKeys: z.array(z.string()),
    ingestStream: z.string().min(1),
    duplicateWindowMs: count,
  })
  .meta({ title: "TableMeta", description: "What producers need to validate and route rows (JSON): KV `<p>_tables`, key `<db>.<table>`." });

export const warehouseBindingSchema = z
  .strictObject({
    v: z.literal(1),
    warehouse: z.string().regex(/^(file:\/\/\/|s3:\/\/)/).describe("`file:///abs/path` or `s3://bucket/prefix`, without endpoint or region settings"),
    boundBy: z.string().min(1).describe("the node that bound the cluster to it"),
    at: epochMillis,
  })
  .meta({ title: "WarehouseBinding", description: "The warehouse this cluster (its prefix on this NATS) serves, written once by its first node (JSON): KV `<p>_tables`, key `_natslake.cluster.warehouse`. A node given another warehouse refuses to start." });

const nodeRole = z.enum(["writer", "committer", "reader"]);

export const memberHeartbeatSchema = z
  .strictObject({
    v: z.literal(1),
    nodeId: z.string().min(1),
    roles: z.array(nodeRole),
    pid: z.number().int().positive(),
    startedAt: epochMillis,
    at: epochMillis,
    draining: z.boolean(),
    drained: z.boolean().optional().describe("set once a drain that keeps the process up (`natslake node drain`) finished: the node holds no buckets and no leases until it is restarted"),
    leaseRenewLagMsMax: z.number().nonnegative().optional(),
    leaseRenewLagMsRecent: z.number().nonnegative().optional(),
    leading: z.array(tableName).optional(),
  })
  .meta({ title: "MemberHeartbeat", description: "A node's membership heartbeat (JSON): KV `<p>_members`, key `<nodeId>`, rewritten every heartbeat interval." });

const bucketAssignment = z.strictObject({
  node: z.string().min(1),
  epoch: count.describe("the bucket's owner epoch"),
  state: z.enum(["active", "revoking"]),
  target: z.string().min(1).optional().describe("while revoking: the node that takes the bucket over"),
});

export const tableAssignmentSchema = z
  .strictObject({
    v: z.literal(1),
    table: tableName,
    leaderEpoch: count,
    leader: z.string().min(1),
    buckets: z.record(bucketKey, bucketAssignment),
  })
  .meta({ title: "TableAssignment", description: "A table's bucket assignment with owner epochs (JSON): KV `<p>_assign`, key `<db>.<table>`, written by the table's leader." });

export const releasedSchema = z
  .strictObject({ bucket: count, epoch: count, node: z.string().min(1), lastOffset: seq.describe("the last stream sequence of the owner's final committable (0: none)") })
  .meta({ title: "Released", description: "A writer let go of a bucket it was asked to release (JSON): KV `<p>_assign`, key `released.<db>.<table>.<bucket>`." });

export const routerProgressSchema = z
  .strictObject({
    stream: streamIdentity.optional(),
    through: seq.describe("the last raw sequence fully routed"),
    intent: z.strictObject({ from: seq, to: seq }).nullable().describe("raw messages being routed, routed again identically after a crash"),
  })
  .meta({ title: "RouterProgress", description: "How far the router of a table got (JSON): KV `<p>_router`, key `<db>.<table>`." });

export const bucketAttemptsSchema = z
  .strictObject({
    v: z.literal(1),
    stream: streamIdentity,
    from: seq.describe("the committed offset the attempts started reading after"),
    attempts: count.describe("generations of the bucket's writer that read past `from` while it stayed the committed offset"),
    until: seq.optional().describe("isolating: messages up to this stream sequence are read and flushed one at a time"),
    probing: seq.optional().describe("isolating: the message being tried alone"),
    failures: z.record(z.string().regex(/^\d+$/), count).optional().describe("isolating: failures of each message tried alone, by stream sequence"),
    lastError: z.string().optional().describe("the last error a failure showed (a killed process shows none)"),
  })
  .meta({
    title: "BucketAttempts",
    description: "A bucket's read attempts, kept across its writer's restarts so that a poison message is dead-lettered after a bounded number of them (JSON): KV `<p>_attempts`, key `<db>.<table>.<bucket>`, written by the bucket's writer.",
  });

// ---------------------------------------------------------------------------------------------------------------
// Admin, maintenance, consume (request-reply, JSON)

const failure = { ok: z.literal(false), error: z.string(), kind: z.string().describe("the error kind (DataInvalid, NotFound, …)") };

export const adminRequestSchema = z
  .discriminatedUnion("type", [
    z.strictObject({
      type: z.literal("create-table"),
      table: tableName,
      columns: z.string().min(1).describe("a column list as `natslake table create --columns` takes it"),
      partitionKeys: z.array(z.string()).optional(),
      primaryKeys: z.array(z.string()).optional(),
      options: z.record(z.string(), z.string()).optional(),
    }),
    z.strictObject({ type: z.literal("list-tables") }),
    z.strictObject({ type: z.literal("describe-table"), table: tableName }),
    z.strictObject({ type: z.literal("reset-offsets"), table: tableName, from: z.enum(["earliest", "latest"]) }),
    z.strictObject({ type: z.literal("drop-table"), table: tableName, ifExists: z.boolean().optional().describe("succeed when there is nothing to drop") }),
  ])
  .meta({ title: "AdminRequest", description: "An admin request (JSON) on `<p>.ctl.admin`, answered by one reader node with an AdminReply." });

export const adminReplySchema = z
  .union([z.strictObject({ ok: z.literal(true), result: z.unknown() }), z.strictObject(failure)])
  .meta({ title: "AdminReply", description: "The answer to an AdminRequest (JSON)." });

export { maintenanceRequestSchema };

export const stopTableRequestSchema = z
  .strictObject({ type: z.literal("stop-table"), v: z.literal(1), table: tableName })
  .meta({
    title: "StopTableRequest",
    description:
      "Stop serving a table (JSON) on `<p>.ctl.stop-table.<nodeId>`, sent by the node dropping it to every live member and answered by that node only with a StopTableReply once its writers, committer, router and maintenance for the table have stopped.",
  });

export const stopTableReplySchema = z
  .union([
    z.strictObject({ ok: z.literal(true), node: z.string().min(1), table: tableName, served: z.boolean().describe("the node was serving the table (and now is not)") }),
    z.strictObject({ ...failure, node: z.string().min(1) }),
  ])
  .meta({ title: "StopTableReply", description: "A node's answer to a StopTableRequest (JSON)." });

const taskName = z.enum(["compact", "expire-snapshots", "expire-partitions", "remove-orphans", "restore"]);
export const maintenanceReplySchema = z
  .union([
    z.strictObject({ type: z.literal("accepted"), node: z.string(), task: taskName, table: tableName, queuedBehind: count }),
    z.strictObject({ type: z.literal("progress"), node: z.string(), done: count, total: count, files: count.optional() }),
    z.strictObject({ type: z.literal("running"), node: z.string() }),
    z.strictObject({ type: z.literal("part"), node: z.string(), index: count, data: z.string().describe("a base64 slice of the result's JSON") }),
    z.strictObject({ type: z.literal("done"), ok: z.literal(true), node: z.string(), result: z.unknown().optional(), parts: count.optional() }),
    z.strictObject({ type: z.literal("done"), ...failure, node: z.string() }),
  ])
  .meta({
    title: "MaintenanceReply",
    description: "The leader's answers to a maintenance request (JSON), in order: accepted, progress and running while it runs, the parts of a large result, then done.",
  });

export { nodeControlRequestSchema };

export const nodeControlReplySchema = z
  .union([
    z.strictObject({
      type: z.literal("accepted"),
      node: z.string().min(1),
      buckets: count.describe("buckets the node owned when the drain began"),
      leading: z.array(tableName).describe("tables it led"),
      alreadyDraining: z.boolean(),
    }),
    z.strictObject({ type: z.literal("progress"), node: z.string().min(1), buckets: count.describe("buckets still owned") }),
    z.strictObject({
      type: z.literal("done"),
      ok: z.literal(true),
      node: z.string().min(1),
      handedOff: count.describe("buckets the node owned when the drain began"),
      stillOwned: count.describe("buckets still owned when the drain timeout passed (0: all handed off); their leases expire instead"),
      uncommitted: count.describe("released buckets whose last committable was not committed within the drain timeout"),
      then: z.enum(["stay", "exit"]),
    }),
    z.strictObject({ type: z.literal("done"), ...failure, node: z.string().min(1) }),
  ])
  .meta({
    title: "NodeControlReply",
    description: "A node's answers to a NodeControlRequest (JSON), in order: accepted at once, progress every second while buckets are being handed off, then done. A request that is not valid gets only done with ok false.",
  });

export { consumeOpenSchema };

export const consumeOpenReplySchema = z
  .union([z.strictObject({ ok: z.literal(true), session: z.string().regex(/^[A-Za-z0-9_-]+$/), reader: z.string().min(1) }), z.strictObject(failure)])
  .meta({ title: "ConsumeOpenReply", description: "A reader's answer to ConsumeOpen (JSON): the session id, or why it was refused." });

export const consumeControlSchema = z
  .discriminatedUnion("type", [
    z.strictObject({ type: z.literal("credit"), through: count.describe("the consumer has taken chunks up to this one") }),
    z.strictObject({ type: z.literal("ack"), snapshotId: count.describe("every snapshot up to this one was processed") }),
    z.strictObject({ type: z.literal("ping") }),
    z.strictObject({ type: z.literal("close") }),
  ])
  .meta({ title: "ConsumeControl", description: "A consumer's control message (JSON) on `<p>.ctl.consume.s.<session>`; an `ack` sent as a request is answered with ConsumeControlReply." });

export const consumeControlReplySchema = z
  .union([z.strictObject({ ok: z.literal(true) }), z.strictObject({ ok: z.literal(false), error: z.string() })])
  .meta({ title: "ConsumeControlReply", description: "The reader's answer to a control message sent as a request (JSON)." });

export const consumeHeadersSchema = z
  .discriminatedUnion("Natslake-Type", [
    z.strictObject({
      "Natslake-Type": z.literal("chunk"),
      "Natslake-Chunk": digits.describe("the session's chunk number, from 1, contiguous"),
      "Natslake-Snapshot": digits,
      "Natslake-Kind": z.enum(["full", "delta"]),
      "Natslake-Last": z.literal("1").optional().describe("the snapshot's last chunk (its body holds rows, or is empty)"),
    }),
    z.strictObject({ "Natslake-Type": z.literal("heartbeat"), "Natslake-Sent": digits.optional().describe("the number of the last chunk the session sent") }),
    z.strictObject({ "Natslake-Type": z.literal("error") }),
  ])
  .meta({
    title: "ConsumeHeaders",
    description:
      "The NATS headers of a message a reader sends to a consumer's inbox: a `chunk` carries one Arrow IPC stream of one or more record batches, or no body (a snapshot without rows: one empty chunk marked last), a `heartbeat` no body, an `error` a ConsumeError body.",
  });

export const consumeErrorSchema = z
  .strictObject({ error: z.string(), kind: z.string() })
  .meta({ title: "ConsumeError", description: "The body of an `error` message to a consumer's inbox (JSON): the session is over." });

// ---------------------------------------------------------------------------------------------------------------
// Headers

export const messageHeadersSchema = z
  .strictObject({
    "Nats-Msg-Id": z.string().min(1).optional().describe("JetStream's de-duplication id: a message published again with the same id within the stream's duplicate window is stored once"),
    "Nats-Expected-Last-Subject-Sequence": digits.optional().describe("JetStream's compare-and-set: the stream-id marker is written only when its subject holds nothing yet (0)"),
    "Natslake-Raw-Seq": digits.optional().describe("on a routed row batch: the stream sequence of the raw message its rows came from"),
    "Natslake-Reason": z.string().max(200).optional().describe("on a dead letter: the reason's first 200 characters"),
    traceparent: traceparent.optional().describe("on a row batch: the producer's publish span; on a snapshot notification: the leader's notify span (the body's `traceparent`)"),
  })
  .meta({
    title: "MessageHeaders",
    description:
      "The NATS headers natslake sets on the messages it publishes to its subjects (consume sessions have their own, ConsumeHeaders). `subjects.json` names, per subject, the headers its messages may carry; KV entries carry only the KV client's own. Readers should ignore headers they do not know.",
  });

// ---------------------------------------------------------------------------------------------------------------
// The published set

export type WireEncoding = "json" | "msgpack" | "json-or-msgpack" | "nats-headers";

export interface WireSchema {
  /** The file name without `.schema.json`. */
  name: string;
  schema: z.ZodType;
  encoding: WireEncoding;
  /** Requests describe what the cluster accepts (defaults may be left out); everything else what it sends. */
  io: "input" | "output";
}

const w = (name: string, schema: z.ZodType, encoding: WireEncoding, io: "input" | "output" = "output"): WireSchema => ({ name, schema, encoding, io });

export const WIRE_SCHEMAS: readonly WireSchema[] = [
  w("row-batch", rowBatchSchema, "msgpack"),
  w("raw-rows", rawRowsSchema, "json-or-msgpack", "input"),
  w("stream-id-marker", streamIdMarkerSchema, "json"),
  w("dead-letter", deadLetterSchema, "json"),
  w("dlq-replay-record", dlqReplayRecordSchema, "json"),
  w("commit-entry", commitEntrySchema, "msgpack"),
  w("rejection", rejectionSchema, "msgpack"),
  w("snapshot-notification", snapshotNotificationSchema, "json"),
  w("table-meta", tableMetaSchema, "json"),
  w("warehouse-binding", warehouseBindingSchema, "json"),
  w("member-heartbeat", memberHeartbeatSchema, "json"),
  w("table-assignment", tableAssignmentSchema, "json"),
  w("released", releasedSchema, "json"),
  w("router-progress", routerProgressSchema, "json"),
  w("bucket-attempts", bucketAttemptsSchema, "json"),
  w("admin-request", adminRequestSchema, "json", "input"),
  w("admin-reply", adminReplySchema, "json"),
  w("maintenance-request", maintenanceRequestSchema, "json", "input"),
  w("maintenance-reply", maintenanceReplySchema, "json"),
  w("stop-table-request", stopTableRequestSchema, "json", "input"),
  w("stop-table-reply", stopTableReplySchema, "json"),
  w("node-control-request", nodeControlRequestSchema, "json", "input"),
  w("node-control-reply", nodeControlReplySchema, "json"),
  w("consume-open", consumeOpenSchema, "json", "input"),
  w("consume-open-reply", consumeOpenReplySchema, "json"),
  w("consume-control", consumeControlSchema, "json", "input"),
  w("consume-control-reply", consumeControlReplySchema, "json"),
  w("consume-headers", consumeHeadersSchema, "nats-headers"),
  w("consume-error", consumeErrorSchema, "json"),
  w("lookup-request", lookupRequestSchema, "json", "input"),
  w("lookup-reply", lookupReplySchema, "json"),
  w("message-headers", messageHeadersSchema, "nats-headers"),
];

export function wireSchema(name: string): WireSchema {
  const s = WIRE_SCHEMAS.find((x) => x.name === name);
  if (s === undefined) throw new Error(`no wire schema named '${name}'`);
  return s;
}

/** The JSON Schema (draft 2020-12) of a wire schema, as published in `schemas/<name>.schema.json`. */
export function toJsonSchema(s: WireSchema): Record<string, unknown> {
  const json = z.toJSONSchema(s.schema, {
    io: s.io,
    unrepresentable: (ctx) => {
      // Copies made by .describe() or .optional() keep the check function: it tells the two custom types apart.
      const fn = (ctx.zodSchema._zod.def as { fn?: unknown }).fn;
      if (fn === isBinary) return { type: "string", contentEncoding: "base64", description: "msgpack bin (base64 in the JSON view)" };
      if (fn === isInt64) return { type: "integer", description: "msgpack int64" };
      return "throw";
    },
    // zod writes `.includes()` as `format: "includes"` beside the `pattern` that checks it: not a JSON Schema format.
    override: (ctx) => {
      if (ctx.jsonSchema.format === "includes") delete ctx.jsonSchema.format;
    },
  }) as Record<string, unknown>;
  const { $schema, ...rest } = json;
  return { $schema, $id: `urn:natslake:wire:${s.name}`, "x-natslake-encoding": s.encoding, ...rest };
}

/**
 * A decoded msgpack value in the JSON data model the schemas describe: bytes as base64 text, bigints as numbers
 * (the schemas only check that they are integers). Anything else is returned as it is.
 */
export function jsonView(v: unknown): unknown {
  if (typeof v === "bigint") return Number(v);
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
  if (Array.isArray(v)) return v.map(jsonView);
  if (v !== null && typeof v === "object") {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) o[k] = jsonView(x);
    return o;
  }
  return v;
}

// ---------------------------------------------------------------------------------------------------------------
// Compile-time: each schema's type is the type the code sends or reads, exactly

/**
 * Whether A and B are the same type — TypeScript's own identity check (two generic functions are comparable only when
 * their conditional types name identical types). Assignability both ways is not enough: an optional field in one
 * type and not in the other passes it, and that is how `traceparent` and `drained` were once missed here.
 */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const agree = <_T extends true>(): void => undefined;
// The check itself: a schema that lacks one optional field of its type does not pass.
const _notificationWithoutTraceparent = snapshotNotificationSchema.omit({ traceparent: true });
// @ts-expect-error — Type 'false' does not satisfy the constraint 'true'
agree<Same<z.output<typeof _notificationWithoutTraceparent>, SnapshotNotification>>();
agree<Same<z.output<typeof rowBatchSchema>, RowBatch>>();
agree<Same<z.output<typeof streamIdMarkerSchema>, StreamIdMarker>>();
agree<Same<z.output<typeof deadLetterSchema>, DeadLetter>>();
agree<Same<z.output<typeof dlqReplayRecordSchema>, DlqReplayRecord>>();
agree<Same<z.output<typeof simpleStats>, SimpleStats>>();
agree<Same<z.output<typeof dataFileMeta>, DataFileMeta>>();
agree<Same<z.output<typeof wireDataFile>, WireDataFile>>();
agree<Same<z.output<typeof committableSchema>, Committable>>();
agree<Same<z.output<typeof committableRefSchema>, CommittableRef>>();
agree<Same<z.output<typeof compactionChange>, CompactionChange>>();
agree<Same<z.output<typeof compactionEntrySchema>, CompactionEntry>>();
agree<Same<z.output<typeof committableRejectionSchema>, Rejection>>();
agree<Same<z.output<typeof compactionRejectionSchema>, CompactionRejection>>();
agree<Same<z.output<typeof snapshotNotificationSchema>, SnapshotNotification>>();
agree<Same<z.output<typeof fieldJson>, FieldJson>>();
agree<Same<z.output<typeof tableSchemaJson>, TableSchemaJson>>();
agree<Same<z.output<typeof tableMetaSchema>, TableMeta>>();
agree<Same<z.output<typeof memberHeartbeatSchema>, MemberHeartbeat>>();
agree<Same<z.output<typeof bucketAssignment>, BucketAssignment>>();
agree<Same<z.output<typeof tableAssignmentSchema>, TableAssignment>>();
agree<Same<z.output<typeof releasedSchema>, Released>>();
agree<Same<z.output<typeof routerProgressSchema>, RouterProgress>>();
agree<Same<z.output<typeof bucketAttemptsSchema>, BucketAttempts>>();
agree<Same<z.output<typeof adminRequestSchema>, AdminRequest>>();
agree<Same<z.output<typeof adminReplySchema>, AdminReply>>();
agree<Same<z.output<typeof maintenanceRequestSchema>, MaintenanceRequest>>();
agree<Same<z.output<typeof maintenanceReplySchema>, MaintenanceReply>>();
agree<Same<z.output<typeof stopTableRequestSchema>, StopTableRequest>>();
agree<Same<z.output<typeof stopTableReplySchema>, StopTableReply>>();
agree<Same<z.output<typeof nodeControlRequestSchema>, NodeDrainRequest>>();
agree<Same<z.output<typeof nodeControlReplySchema>, NodeControlReply>>();
agree<Same<z.input<typeof consumeOpenSchema>, ConsumeOpen>>();
agree<Same<z.output<typeof consumeOpenReplySchema>, ConsumeOpenReply>>();
agree<Same<z.output<typeof consumeControlSchema>, ConsumeControl>>();
agree<Same<z.input<typeof lookupRequestSchema>, LookupRequest>>();
agree<Same<z.output<typeof lookupReplySchema>, LookupReply>>();
