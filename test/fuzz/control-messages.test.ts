/**
 * Fuzz: control and wire messages — the commit stream's entries (committables, references, compactions) and the
 * leader's rejections (msgpack, actors/wire/codec.ts), consume control messages, maintenance, node-control and
 * consume-open requests (JSON), a traceparent header, and every published wire schema (schemas/*.schema.json's zod
 * source) on hostile JSON. Every case: a value or a typed error (DataInvalid, or a zod result); round trips exact.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { propagation } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { decodeCommitEntry, decodeCommittable, decodeRejection, encodeMsg } from "../../actors/wire/codec.ts";
import { consumeOpenSchema, parseConsumeControl } from "../../actors/wire/consume.ts";
import { parseMaintenanceRequest } from "../../actors/wire/maintenance-request.ts";
import type { Committable, CommitEntry, Rejection } from "../../actors/wire/messages.ts";
import { parseNodeControlRequest } from "../../actors/wire/node-control.ts";
import { WIRE_SCHEMAS } from "../../actors/wire/schemas.ts";
import { spanContextOf } from "../../actors/wire/trace-context.ts";
import { decodeOutcome, fuzzParams, fuzzTimeout, jsonOddityBytes, msgpackBombs, msgpackDeep, msgpackOddities, mutated, randomBytes, anyJsonText } from "../helpers/fuzz.ts";
import { dataFileMeta } from "../helpers/fuzz-values.ts";

const enc = new TextEncoder();
const seq = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const claim = {
  table: fc.constantFrom("db.t", "sales.orders"),
  bucket: fc.integer({ min: 0, max: 1023 }),
  ownerEpoch: fc.integer({ min: 0, max: 2 ** 40 }),
  writerId: fc.stringMatching(/^[a-z0-9-]{1,12}$/),
  prevOffset: seq,
  lastOffset: seq,
  flushId: fc.integer({ min: 0, max: 2 ** 40 }),
};
const committable: fc.Arbitrary<Committable> = fc.record(
  {
    type: fc.constant("committable" as const),
    v: fc.constant(1 as const),
    ...claim,
    stream: fc.constant("NL_db_t#abc"),
    seq: fc.record({ first: fc.bigInt({ min: 0n, max: 2n ** 62n }), last: fc.bigInt({ min: 0n, max: 2n ** 62n }) }),
    rowCount: fc.integer({ min: 0, max: 2 ** 40 }),
    files: fc.array(
      fc.record({ partition: fc.uint8Array({ maxLength: 16 }), totalBuckets: fc.integer({ min: -2, max: 1024 }), meta: dataFileMeta, changelog: fc.constant(true as const) }, { requiredKeys: ["partition", "totalBuckets", "meta"] }),
      { maxLength: 3 },
    ),
    firstArrivalMillis: fc.integer({ min: 0, max: 2 ** 45 }),
  },
  { requiredKeys: ["type", "v", "table", "bucket", "ownerEpoch", "writerId", "prevOffset", "lastOffset", "flushId", "rowCount", "files", "firstArrivalMillis"] },
);
const entry: fc.Arbitrary<CommitEntry> = fc.oneof(
  committable,
  fc.record({ type: fc.constant("committable-ref" as const), v: fc.constant(1 as const), ...claim, path: fc.constant("natslake-committables/x"), size: fc.integer({ min: 0, max: 2 ** 40 }) }),
  fc.record({
    type: fc.constant("compaction" as const),
    v: fc.constant(1 as const),
    table: claim.table,
    bucket: claim.bucket,
    ownerEpoch: claim.ownerEpoch,
    writerId: claim.writerId,
    compactionId: fc.uuid(),
    planSnapshotId: fc.integer({ min: 0, max: 2 ** 40 }),
    changes: fc.array(fc.record({ partition: fc.uint8Array({ maxLength: 16 }), totalBuckets: fc.integer({ min: 1, max: 64 }), before: fc.array(dataFileMeta, { maxLength: 2 }), after: fc.array(dataFileMeta, { maxLength: 2 }) }), { maxLength: 2 }),
  }),
);
const rejection: fc.Arbitrary<Rejection> = fc.record(
  {
    type: fc.constant("rejection" as const),
    table: claim.table,
    bucket: claim.bucket,
    ownerEpoch: claim.ownerEpoch,
    prevOffset: seq,
    committedOffset: seq,
    committedSeq: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
    reason: fc.constantFrom("stale-owner-epoch", "broken-offset-chain", "stream-mismatch", "body-missing", "broken-sequence-chain") as fc.Arbitrary<Rejection["reason"]>,
  },
  { requiredKeys: ["type", "table", "bucket", "ownerEpoch", "prevOffset", "committedOffset", "reason"], noNullPrototype: true },
);

/** Byte views compared as plain Uint8Arrays (msgpack decodes bin as Buffer views). */
const plainBytes = (v: unknown): unknown => {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (Array.isArray(v)) return v.map(plainBytes);
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plainBytes(x)]));
  return v;
};

const hostileMsgpack = (valid: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> => fc.oneof(mutated(valid), randomBytes(), msgpackBombs, msgpackDeep, msgpackOddities);

test("fuzz control messages - commit entries round-trip exactly through msgpack", { timeout: fuzzTimeout() }, () => {
  fc.assert(
    fc.property(entry, (e) => {
      assert.deepEqual(plainBytes(decodeCommitEntry(encodeMsg(e))), plainBytes(e));
    }),
    fuzzParams(),
  );
});

test("fuzz control messages - commit entries and committable bodies: an entry or a DataInvalid, never a value made up", { timeout: fuzzTimeout() }, () => {
  fc.assert(
    fc.property(hostileMsgpack(entry.map(encodeMsg)), (bytes) => {
      const r = decodeOutcome(() => decodeCommitEntry(bytes), bytes);
      if (r.ok) {
        // What decodes must be what a sender could have meant: its identifying fields are real values.
        assert.equal(typeof r.value.table, "string");
        assert.equal(typeof r.value.writerId, "string");
        assert.ok(Number.isSafeInteger(r.value.bucket) && Number.isSafeInteger(r.value.ownerEpoch), `bucket ${r.value.bucket}, owner epoch ${r.value.ownerEpoch}`);
      }
      decodeOutcome(() => decodeCommittable(bytes), bytes);
    }),
    fuzzParams(),
  );
});

test("fuzz control messages - rejections: round trip exact; hostile bytes are a rejection or a DataInvalid", { timeout: fuzzTimeout() }, () => {
  fc.assert(
    fc.property(rejection, (r) => {
      assert.deepEqual(decodeRejection(encodeMsg(r)), r);
    }),
    fuzzParams(),
  );
  fc.assert(
    fc.property(hostileMsgpack(rejection.map(encodeMsg)), (bytes) => {
      const r = decodeOutcome(() => decodeRejection(bytes), bytes);
      if (r.ok) assert.ok(typeof r.value.reason === "string" && (r.value.type !== "rejection" || Number.isSafeInteger(r.value.committedOffset)));
    }),
    fuzzParams(),
  );
});

/** JSON requests: valid ones mutated, hostile JSON, any JSON value, random bytes. */
const hostileJson = (valid: readonly string[]): fc.Arbitrary<Uint8Array> =>
  fc.oneof(mutated(fc.constantFrom(...valid.map((s) => enc.encode(s)))), jsonOddityBytes, anyJsonText.map((s) => enc.encode(s)), randomBytes(128));

test("fuzz control messages - consume control, maintenance and node-control requests: a request or a DataInvalid", { timeout: fuzzTimeout() }, () => {
  const consume = hostileJson(['{"type":"credit","through":3}', '{"type":"ack","snapshotId":12}', '{"type":"ping"}', '{"type":"close"}']);
  const maintenance = hostileJson([
    '{"type":"maintenance","v":1,"table":"db.t","task":"compact","options":{"full":true}}',
    '{"type":"maintenance","v":1,"table":"db.t","task":"restore","options":{"toSnapshot":3}}',
    '{"type":"maintenance","v":1,"table":"db.t","task":"expire-snapshots","options":{"retainMin":1,"olderThanMs":0}}',
  ]);
  const node = hostileJson(['{"type":"drain","v":1,"then":"stay"}']);
  fc.assert(
    fc.property(consume, maintenance, node, (c, m, n) => {
      decodeOutcome(() => parseConsumeControl(c), c);
      decodeOutcome(() => parseMaintenanceRequest(m), m);
      decodeOutcome(() => parseNodeControlRequest(n), n);
    }),
    fuzzParams(),
  );
});

test("fuzz control messages - every wire schema checks hostile JSON without throwing; consume-open requests parse or are refused", { timeout: fuzzTimeout() }, () => {
  const open = hostileJson(['{"type":"consume-open","v":1,"table":"db.t","inbox":"_INBOX.x","window":8,"projection":["a"],"partition":{"dt":"2024-01-01"}}']);
  fc.assert(
    fc.property(open, (bytes) => {
      const value = decodeOutcome(() => JSON.parse(new TextDecoder().decode(bytes)) as unknown, bytes, { typed: (e) => e instanceof SyntaxError });
      if (!value.ok) return;
      for (const s of [...WIRE_SCHEMAS.map((w) => w.schema), consumeOpenSchema]) {
        const r = decodeOutcome(() => s.safeParse(value.value), bytes, { typed: () => false });
        assert.ok(r.ok && typeof r.value.success === "boolean");
      }
    }),
    fuzzParams(),
  );
});

test("fuzz control messages - a traceparent header of any text is a span context or none", { timeout: fuzzTimeout() }, () => {
  // What a traced node sets up (cluster/tracing.ts): without a propagator every header would read as none.
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const valid = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const header = fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: "binary", maxLength: 80 }), mutated(fc.constant(enc.encode(valid))).map((b) => Buffer.from(b).toString("latin1")));
  fc.assert(
    fc.property(header, (h) => {
      const r = decodeOutcome(() => spanContextOf(h), h, { typed: () => false });
      assert.ok(r.ok);
      if (r.value !== undefined) assert.match(r.value.traceId, /^[0-9a-f]{32}$/);
    }),
    fuzzParams(),
  );
  assert.equal(spanContextOf(valid)?.traceId, "0af7651916cd43dd8448eb211c80319c");
});
