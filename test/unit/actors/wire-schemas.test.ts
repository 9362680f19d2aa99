/**
 * The published wire contracts (`schemas/`): the files are exactly what the zod schemas generate, every one compiles
 * with ajv in strict mode, messages made by the real encoders (msgpack committables, rejections and row batches; JSON
 * dead letters, cut ones too; trace context as the W3C propagator writes it) validate, and broken ones do not — a
 * missing field, a field the schema does not know, a wrong type, a msgpack `undefined`, a malformed `traceparent`, a
 * header no contract names. Subjects map to their contracts; an unknown subject to none.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Packr } from "msgpackr";
import { ROOT_CONTEXT, trace, TraceFlags } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { decodeCommitEntry, decodeRejection, encodeMsg } from "../../../actors/wire/codec.ts";
import { contractOf, SUBJECT_CONTRACTS } from "../../../actors/wire/contracts.ts";
import { fitDeadLetter } from "../../../actors/wire/limits.ts";
import type { Committable, CommittableRef, CompactionEntry, CompactionRejection, DeadLetter, DlqReplayRecord, MemberHeartbeat, NodeControlReply, Rejection, SnapshotNotification } from "../../../actors/wire/messages.ts";
import { parseNodeControlRequest } from "../../../actors/wire/node-control.ts";
import { publishedSchemaFiles } from "../../../actors/wire/published.ts";
import { encodeRowBatch, unpackValue } from "../../../actors/wire/row-batch.ts";
import { jsonView, WIRE_SCHEMAS } from "../../../actors/wire/schemas.ts";
import { EMPTY_STATS, FileSource, type DataFileMeta } from "../../../src/format/manifest.ts";
import { SCHEMAS_DIR, wireValidator } from "../../helpers/wire-validator.ts";

const v = wireValidator();
const viaMsgpack = (bytes: Uint8Array): unknown => jsonView(unpackValue(bytes));
const valid = (name: string, value: unknown): void => assert.equal(v.check(name, value), null);
const invalid = (name: string, value: unknown, why: RegExp): void => {
  const err = v.check(name, value);
  assert.notEqual(err, null, `${name} accepted ${JSON.stringify(value, (_k, x: unknown) => (typeof x === "bigint" ? String(x) : x))}`);
  assert.match(err!, why);
};

const meta = (i: number): DataFileMeta => ({
  fileName: `data-${i}.parquet`,
  fileSize: 100,
  rowCount: 3,
  minKey: EMPTY_STATS.minValues,
  maxKey: EMPTY_STATS.maxValues,
  keyStats: EMPTY_STATS,
  valueStats: { minValues: new Uint8Array([1, 2]), maxValues: new Uint8Array([3, 4]), nullCounts: [0n, null] },
  minSequenceNumber: 0n,
  maxSequenceNumber: 2n ** 62n,
  schemaId: 0,
  level: 0,
  extraFiles: [],
  creationTimeMillis: Date.now(),
  deleteRowCount: 0,
  embeddedIndex: null,
  fileSource: FileSource.APPEND,
  valueStatsCols: null,
  externalPath: null,
  firstRowId: null,
  writeCols: null,
});

const committable: Committable = {
  type: "committable",
  v: 1,
  table: "db.t",
  stream: "LAKE_IN_db_t#2025-01-01T00:00:00.000Z.abcd",
  bucket: 3,
  ownerEpoch: 2,
  writerId: "n1",
  prevOffset: 10,
  lastOffset: 20,
  flushId: 4,
  rowCount: 3,
  files: [{ partition: new Uint8Array([0, 0, 0, 0]), totalBuckets: 4, meta: meta(1) }],
  firstArrivalMillis: Date.now(),
};

/** A `traceparent` as OpenTelemetry's W3C propagator writes it (what a tracing node puts in bodies and headers). */
function w3cTraceparent(): string {
  const carrier: Record<string, string> = {};
  const span = trace.wrapSpanContext({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: TraceFlags.SAMPLED });
  new W3CTraceContextPropagator().inject(trace.setSpan(ROOT_CONTEXT, span), carrier, { set: (c, k, v) => void (c[k] = v) });
  const tp = carrier["traceparent"];
  assert.ok(tp !== undefined, "the propagator wrote a traceparent");
  return tp;
}

test("wire schemas - the files in schemas/ are exactly what the zod schemas generate, one per schema plus subjects.json", () => {
  const want = publishedSchemaFiles();
  const have = readdirSync(SCHEMAS_DIR).filter((f) => f.endsWith(".json")).sort();
  assert.deepEqual(have, Object.keys(want).sort(), "run `npm run schemas`");
  for (const [f, text] of Object.entries(want)) assert.equal(readFileSync(join(SCHEMAS_DIR, f), "utf8"), text, `${f} is out of date: run \`npm run schemas\``);
  assert.deepEqual(v.names.sort(), WIRE_SCHEMAS.map((s) => s.name).sort());
  // Every subject names a schema that exists, and headers the headers schema describes.
  for (const c of SUBJECT_CONTRACTS) for (const n of [c.schema, c.reply]) if (n !== undefined) assert.ok(v.names.includes(n), `${c.subject}: no schema ${n}`);
  const described = Object.keys((JSON.parse(readFileSync(join(SCHEMAS_DIR, "message-headers.schema.json"), "utf8")) as { properties: object }).properties);
  for (const c of SUBJECT_CONTRACTS) for (const h of c.headers ?? []) assert.ok(described.includes(h), `${c.subject}: header ${h} is not in message-headers`);
});

test("wire schemas - msgpack commit entries and rejections from the real codec validate in their JSON view; broken ones do not", () => {
  valid("commit-entry", viaMsgpack(encodeMsg(committable)));
  const compaction: CompactionEntry = { type: "compaction", v: 1, table: "db.t", bucket: 0, ownerEpoch: 1, writerId: "n1", compactionId: "c-1", planSnapshotId: 9, changes: [{ partition: new Uint8Array(4), totalBuckets: 1, before: [meta(1), meta(2)], after: [meta(3)] }] };
  valid("commit-entry", viaMsgpack(encodeMsg(compaction)));
  valid("commit-entry", { type: "committable-ref", v: 1, table: "db.t", bucket: 0, ownerEpoch: 1, writerId: "n1", prevOffset: 0, lastOffset: 5, flushId: 1, path: "natslake-committables/x", size: 2_000_000 });
  const rejection: Rejection = { type: "rejection", table: "db.t", bucket: 1, ownerEpoch: 1, prevOffset: 4, committedOffset: 7, reason: "broken-offset-chain" };
  valid("rejection", viaMsgpack(encodeMsg(rejection)));

  const { rowCount: _dropped, ...missing } = committable;
  invalid("commit-entry", viaMsgpack(encodeMsg(missing as Committable)), /rowCount/);
  invalid("commit-entry", viaMsgpack(encodeMsg({ ...committable, surprise: 1 } as Committable)), /additional properties/);
  invalid("commit-entry", viaMsgpack(encodeMsg({ ...committable, bucket: "3" } as unknown as Committable)), /integer/);
  // An `undefined` packs as a msgpack extension no other language reads: the view shows it and the schema refuses it.
  const withUndefined = viaMsgpack(encodeMsg({ ...committable, files: [{ ...committable.files[0]!, meta: { ...meta(1), externalPath: undefined as unknown as null } }] }));
  invalid("commit-entry", withUndefined, /externalPath|must be/);
  invalid("rejection", viaMsgpack(encodeMsg({ ...rejection, reason: "because" as Rejection["reason"] })), /allowed values/);
});

test("wire schemas - trace context: committables (by reference too), notifications and headers carry the propagator's traceparent; a malformed one is refused", () => {
  const tp = w3cTraceparent();
  valid("commit-entry", viaMsgpack(encodeMsg({ ...committable, traceparent: tp })));
  const ref: CommittableRef = { type: "committable-ref", v: 1, table: "db.t", bucket: 0, ownerEpoch: 1, writerId: "n1", prevOffset: 0, lastOffset: 5, flushId: 1, traceparent: tp, path: "natslake-committables/x", size: 2_000_000 };
  valid("commit-entry", viaMsgpack(encodeMsg(ref)));
  invalid("commit-entry", viaMsgpack(encodeMsg({ ...committable, traceparent: tp.toUpperCase() })), /traceparent.*pattern/);
  invalid("commit-entry", viaMsgpack(encodeMsg({ ...committable, traceparent: "" })), /traceparent.*pattern/);
  const n: SnapshotNotification = { type: "snapshot", table: "db.t", snapshotId: 5, kind: "APPEND", timeMillis: 1, linkedAtMillis: 2, totalRecordCount: 10, deltaRecordCount: 3, epoch: 1, offsets: { "0": 7 }, traceparent: tp };
  valid("snapshot-notification", n);
  invalid("snapshot-notification", { ...n, traceparent: `01-${tp.slice(3)}` }, /traceparent.*pattern/);
  valid("message-headers", { traceparent: tp, "Nats-Msg-Id": "p1-0-4", "Natslake-Raw-Seq": "12" });
  invalid("message-headers", { traceparent: "00-abc" }, /pattern/);
  invalid("message-headers", { "Trace-Parent": tp }, /additional properties/);
  invalid("message-headers", { "Natslake-Reason": "x".repeat(201) }, /200/);
});

test("wire schemas - node control, dead-letter replay records and drained heartbeats", () => {
  // The request schema is the node's own check: what it accepts validates, what it refuses does not.
  const drain = parseNodeControlRequest(new TextEncoder().encode(JSON.stringify({ type: "drain", v: 1, then: "stay" })));
  valid("node-control-request", drain);
  invalid("node-control-request", { ...drain, force: true }, /additional properties/);
  invalid("node-control-request", { ...drain, then: "later" }, /allowed values/);
  const replies: NodeControlReply[] = [
    { type: "accepted", node: "n2", buckets: 1, leading: ["db.t"], alreadyDraining: false },
    { type: "progress", node: "n2", buckets: 1 },
    { type: "done", ok: true, node: "n2", handedOff: 1, stillOwned: 0, uncommitted: 0, then: "stay" },
    { type: "done", ok: false, node: "n2", error: "node control request: unknown type \"reboot\" (drain)", kind: "DataInvalid" },
  ];
  for (const r of replies) valid("node-control-reply", r);
  invalid("node-control-reply", { type: "done", ok: true, node: "n2", handedOff: 1, stillOwned: 0, then: "stay" }, /uncommitted/);

  const record: DlqReplayRecord = { v: 1, table: "db.t", seq: 12, at: Date.now(), rows: 1, source: "file", msgIds: ["dlq-replay-12-0-0"] };
  valid("dlq-replay-record", record);
  invalid("dlq-replay-record", { ...record, source: "stdin" }, /allowed values/);
  invalid("dlq-replay-record", { ...record, seq: 0 }, /seq/);

  const hb: MemberHeartbeat = { v: 1, nodeId: "n2", roles: ["writer", "committer", "reader"], pid: 4242, startedAt: 1, at: 2, draining: true, drained: true, leading: [] };
  valid("member-heartbeat", hb);
  invalid("member-heartbeat", { ...hb, drained: "yes" }, /boolean/);
});

test("wire schemas - row batches, raw rows, dead letters (whole and cut) and notifications validate", () => {
  valid("row-batch", viaMsgpack(encodeRowBatch({ v: 1, schema: 0, cols: ["id", "b"], rows: [[2n ** 63n - 1n, new Uint8Array([1])], [1, null]] })));
  invalid("row-batch", viaMsgpack(encodeRowBatch({ v: 1, schema: 0, cols: ["id"], rows: [{ id: 1 } as unknown as unknown[]] })), /must be array/);
  // What services may send to the bare subject: one row, an array of rows, a row batch (schema id optional).
  const anyPack = new Packr({ useRecords: false });
  valid("raw-rows", { id: 1, msg: "hi" });
  valid("raw-rows", [{ id: 1 }, { id: 2 }]);
  valid("raw-rows", viaMsgpack(anyPack.pack({ v: 1, cols: ["id"], rows: [[1], [2]] })));
  invalid("raw-rows", [1, 2], /must be object/);
  invalid("raw-rows", "text", /must be/);

  const letter: DeadLetter = { type: "dead-letter", table: "db.t", stage: "writer", reason: "column id: not a BIGINT", streamSeq: 12, rowIndex: 0, original: { id: "x" }, at: Date.now() };
  valid("dead-letter", JSON.parse(new TextDecoder().decode(fitDeadLetter(letter, 1 << 20))));
  const cut = JSON.parse(new TextDecoder().decode(fitDeadLetter({ ...letter, original: { blob: "y".repeat(50_000) } }, 10_000))) as DeadLetter;
  assert.equal(typeof cut.originalBytes, "number");
  valid("dead-letter", cut);
  invalid("dead-letter", { ...letter, stage: "committer" }, /allowed values/);
  invalid("dead-letter", { ...letter, table: "no-dot" }, /pattern/);

  const n: SnapshotNotification = { type: "snapshot", table: "db.t", snapshotId: 5, kind: "APPEND", timeMillis: 1, linkedAtMillis: 2, totalRecordCount: 10, deltaRecordCount: 3, epoch: 1, offsets: { "0": 7, "1": 9 } };
  valid("snapshot-notification", n);
  invalid("snapshot-notification", { ...n, offsets: { x: 1 } }, /property name/);
});

test("wire schemas - requests: the maintenance and consume-open schemas are the validators the nodes use; defaults may be left out", () => {
  valid("maintenance-request", { type: "maintenance", v: 1, task: "compact", table: "db.t", options: {} });
  invalid("maintenance-request", { type: "maintenance", v: 1, task: "compact", table: "db.t", options: { dryrun: true } }, /additional properties/);
  valid("consume-open", { type: "consume-open", v: 1, table: "db.t", inbox: "_INBOX.x" });
  invalid("consume-open", { type: "consume-open", v: 1, table: "db.t", inbox: "_INBOX.*" }, /pattern/);
  valid("consume-headers", { "Natslake-Type": "chunk", "Natslake-Chunk": "1", "Natslake-Snapshot": "4", "Natslake-Kind": "full" });
  invalid("consume-headers", { "Natslake-Type": "chunk", "Natslake-Chunk": "1" }, /Natslake-Snapshot/);
  valid("admin-request", { type: "reset-offsets", table: "db.t", from: "latest" });
  valid("admin-request", { type: "drop-table", table: "db.t", ifExists: true });
  invalid("admin-request", { type: "rename-table", table: "db.t" }, /must/);
  valid("stop-table-request", { type: "stop-table", v: 1, table: "db.t" });
  invalid("stop-table-request", { type: "stop-table", v: 1, table: "db.>.x" }, /pattern/);
  valid("stop-table-reply", { ok: true, node: "n1", table: "db.t", served: true });
  valid("stop-table-reply", { ok: false, node: "n1", error: "no", kind: "DataInvalid" });
});

test("wire schemas - every subject maps to its contract; an unknown one to none", () => {
  const of = (s: string): string | undefined => contractOf(s, "lake")?.schema;
  assert.equal(of("lake.in.db.t"), "raw-rows");
  assert.equal(of("lake.in.db.t.12"), "row-batch");
  assert.equal(of("lake.in.db.t.stream-id"), "stream-id-marker");
  assert.equal(of("lake.commit.db.t"), "commit-entry");
  assert.equal(of("lake.ctl.reject.db.t.n1"), "rejection");
  assert.equal(contractOf("lake.ctl.maint.db.t", "lake")?.reply, "maintenance-reply");
  assert.equal(of("lake.ctl.consume.s.abc"), "consume-control");
  assert.equal(of("$KV.lake_assign.db.t"), "table-assignment");
  assert.equal(of("$KV.lake_assign.released.db.t.3"), "released");
  assert.equal(of("$KV.lake_members.n1"), "member-heartbeat");
  assert.equal(of("lake.ctl.node.n2"), "node-control-request");
  assert.equal(contractOf("lake.ctl.node.n2", "lake")?.reply, "node-control-reply");
  assert.equal(of("$KV.lake_dlq_replays.db.t.12"), "dlq-replay-record");
  assert.equal(of("$KV.lake_dlq_replays.db.t.x"), undefined, "a replay record's key ends in a DLQ sequence");
  assert.deepEqual(contractOf("lake.in.db.t.3", "lake")?.headers, ["Nats-Msg-Id", "traceparent", "Natslake-Raw-Seq"]);
  assert.equal(contractOf("lake.ctl.reject.db.t.n1", "lake")?.headers, undefined);
  assert.equal(of("lake.in.db.t.x"), undefined);
  assert.equal(of("lake.ctl.drain.n1"), undefined);
  assert.equal(of("other.in.db.t"), undefined);
  assert.equal(contractOf("other.in.db.t", "other")?.schema, "raw-rows");
});

test("wire codec - a primary-key committable keeps its sequence range and changelog files, a rejection its committed sequence, through msgpack and the schema", () => {
  const keyed: Committable = { ...committable, seq: { first: 2n ** 40n, last: 2n ** 40n + 99n }, files: [committable.files[0]!, { ...committable.files[0]!, meta: meta(9), changelog: true }] };
  valid("commit-entry", viaMsgpack(encodeMsg(keyed)));
  const back = decodeCommitEntry(encodeMsg(keyed));
  assert.ok(back.type === "committable");
  assert.deepEqual(back.seq, keyed.seq);
  assert.deepEqual(back.files.map((f) => f.changelog === true), [false, true]);
  const rejection: Rejection = { type: "rejection", table: "db.t", bucket: 1, ownerEpoch: 1, prevOffset: 4, committedOffset: 7, committedSeq: 123n, reason: "broken-sequence-chain" };
  valid("rejection", viaMsgpack(encodeMsg(rejection)));
  assert.deepEqual(decodeRejection(encodeMsg(rejection)), rejection);
});

test("wire codec - a compaction's rejection travels on the rejection subject, through msgpack and the schema; a broken one is refused", () => {
  const r: CompactionRejection = { type: "compaction-rejection", table: "db.t", bucket: 2, ownerEpoch: 3, compactionId: "c-7", reason: "lsm-conflict", detail: "the bucket's levels would not be valid: level 2 overlaps" };
  valid("rejection", viaMsgpack(encodeMsg(r)));
  assert.deepEqual(decodeRejection(encodeMsg(r)), r);
  invalid("rejection", viaMsgpack(encodeMsg({ ...r, reason: "because" as CompactionRejection["reason"] })), /allowed values/);
  invalid("rejection", viaMsgpack(encodeMsg({ ...r, prevOffset: 4 } as CompactionRejection)), /additional properties/);
  const { compactionId: _id, ...noId } = r;
  invalid("rejection", viaMsgpack(encodeMsg(noId as CompactionRejection)), /compactionId/);
  assert.throws(() => decodeRejection(encodeMsg(noId as CompactionRejection)), /compactionId/);
  assert.throws(() => decodeRejection(encodeMsg({ ...r, type: "other" } as unknown as CompactionRejection)), /not a rejection/);
});

test("wire codec - a primary-key compaction keeps levels, an upgrade (the same file before at its level and after at the new one) and the rows' sequence numbers, through msgpack and the schema", () => {
  const up = meta(1);
  const rewritten = { ...meta(2), level: 0, minSequenceNumber: 2n ** 40n, maxSequenceNumber: 2n ** 40n + 7n };
  const output = { ...meta(3), level: 4, fileSource: 1, deleteRowCount: 2, minSequenceNumber: 2n ** 40n, maxSequenceNumber: 2n ** 40n + 7n };
  const entry: CompactionEntry = {
    type: "compaction",
    v: 1,
    table: "db.t",
    bucket: 1,
    ownerEpoch: 3,
    writerId: "n2",
    compactionId: "c-2",
    planSnapshotId: 41,
    changes: [{ partition: new Uint8Array([0, 0, 0, 0]), totalBuckets: 4, before: [{ ...up, level: 0 }, rewritten], after: [{ ...up, level: 4 }, output] }],
  };
  valid("commit-entry", viaMsgpack(encodeMsg(entry)));
  const back = decodeCommitEntry(encodeMsg(entry));
  assert.ok(back.type === "compaction");
  assert.deepEqual(back, entry);
});
