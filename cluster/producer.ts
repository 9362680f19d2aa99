/**
 * The producer client for services: validates rows against the table's schema (from KV, no warehouse needed),
 * routes each to its Paimon bucket, batches rows per bucket into RowBatch messages and publishes them with
 * JetStream, retrying a timed-out publish with the same `Nats-Msg-Id` inside the stream's duplicate window.
 *
 *   const p = await createProducer({ servers: "nats://127.0.0.1:4222", table: "db.events" });
 *   const outcome = await p.write({ id: 1n, ts: Date.now(), user: "u1" });   // the outcome of the row's batch
 *   await p.waitVisible(p.token(), 5000);                                      // read-your-writes
 *   await p.close();
 *
 * Semantics:
 * - `write(row)` converts the row synchronously; a bad row throws a DataInvalid LakeError naming the column and
 *   nothing of it is published. So does a row too large for one NATS message (a batch of it alone would exceed the
 *   server's max_payload): it is refused before anything is sent, never acknowledged. The returned promise resolves (never rejects) with the outcome of the batch that
 *   carried the row: `ok`; `duplicate` (the stream already held this message id — an earlier attempt landed, so the
 *   rows are stored once); `failed` (a definite refusal: the stream is full under `discard: new`, the message is too
 *   large, no stream listens — nothing of the batch is stored); `unknown` (no acknowledgement within the retry budget:
 *   the batch may or may not be stored; re-sending it under a new id may duplicate it).
 * - Buckets: bucket = Paimon's bucket function (`bucket-function.type`, default Murmur3 over the BinaryRow of the
 *   bucket key) for `bucket = N > 0`. A table with `bucket` ≤ 0 (unaware/dynamic/postpone) has one ingest subject per
 *   writer bucket and no key to route on: this producer sends all its rows to bucket 0.
 * - Order: with `ordered` (default) a bucket has at most one batch in flight, so the stream stores a bucket's batches
 *   in `write` order even when a publish is retried. `ordered: false` pipelines up to `maxInFlight` batches per
 *   bucket (faster on high-latency links; a retried batch may then land after a later one).
 * - Message ids are `<producerId>-<bucket>-<counter>` with a counter per bucket starting at 0. De-duplication is per
 *   stream, so a producerId must not be reused by another producer instance within the duplicate window (the
 *   default is a fresh NUID per instance).
 * - `token()` is the highest acknowledged stream sequence per bucket so far; `waitVisible(token)` resolves with the
 *   first snapshot notification whose offsets cover it.
 * - Primary-key tables: a row may name its kind in `_row_kind` ("+I", "-U", "+U", "-D"; absent: "+I"), and
 *   `upsert(rows)` / `delete(keys)` write +I rows / -D keys. The kind and the key are checked before anything is
 *   packed, by the rules TableWrite and the router use (src/lsm/keyed-input.ts): a bad kind, a missing or null key
 *   column throw DataInvalid. A retraction (-U, -D) may carry only its key; its other NOT NULL columns travel as their
 *   type's zero, so every row of a primary-key RowBatch fits the schema. The batch's `cols` end with `_row_kind`,
 *   whose value every row carries. On an append table `_row_kind` is refused.
 */
import { jetstream, JetStreamApiError, type JetStreamClient } from "@nats-io/jetstream";
import { errors, headers as natsHeaders, nuid, RequestError, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import { SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import { stringify as stringifyLossless } from "lossless-json";
import { ErrorKind, LakeError, dataInvalid, isLakeError } from "../src/errors.ts";
import { createBucketFunctionOfType, type BucketFunction, type BucketFunctionType } from "../src/format/bucket.ts";
import type { DataField } from "../src/format/data-types.ts";
import { schemaFromJson, type TableSchema } from "../src/format/schema.ts";
import { TableOptions } from "../src/options.ts";
import type { Value } from "../src/format/values.ts";
import type { Identifier } from "../src/table/table.ts";
import { DEFAULT_PREFIX, Subjects } from "./nats/subjects.ts";
import { connectNats } from "./nats/connect.ts";
import type { NatsAuthSettings } from "./nats/connect-options.ts";

// A client's own connection, made as natslake's processes make theirs (credentials and TLS from files or the
// NATSLAKE_NATS_* environment; a refusal named, the URL's password never printed): for consumers and admin clients too.
export { connectNats, NatsConnectError } from "./nats/connect.ts";
export type { NatsAuthSettings } from "./nats/connect-options.ts";
import { readTableMeta, watchTableMeta } from "./nats/table-infra.ts";
import { liveIngestStream } from "./nats/adapters.ts";
import { subscribeSnapshots } from "./snapshots-client.ts";
import type { SnapshotNotification, TableMeta } from "../actors/wire/messages.ts";
import { MsgpackWriter, compileInputPacker, packValue, rowBatchPrefix, type InputPacker } from "../actors/wire/row-batch.ts";
import { payloadLimit } from "../actors/wire/limits.ts";
import { withTimeout } from "../src/timeout.ts";
import { H_TRACEPARENT, traceparentOf } from "../actors/wire/trace-context.ts";
import { keyedInputRules, zeroValue, type KeyedInputRules } from "../src/lsm/keyed-input.ts";
import { isRetract, ROW_KIND_COLUMN, rowKindName, rowKindOnAppendTable, RowKind } from "../src/lsm/row-kind.ts";

// ---------------------------------------------------------------------------------------------------------------
// Publishing with retries

export type OutcomeStatus = "ok" | "duplicate" | "failed" | "unknown";

export interface BatchOutcome {
  status: OutcomeStatus;
  /** The bucket the batch went to (−1 for the raw subject). */
  bucket: number;
  rows: number;
  /** Stream sequence (for a duplicate: the sequence of the message stored earlier). */
  seq?: number;
  msgId: string;
  attempts: number;
  error?: string;
}

export interface RetryPolicy {
  /** Per-attempt acknowledgement timeout. */
  timeoutMs: number;
  /** Attempts after the first (on timeouts and "no responders"). */
  retries: number;
  /** The stream's duplicate window: no attempt is sent after the window since the first attempt could close. */
  duplicateWindowMs: number;
}

export const DEFAULT_PUBLISH_TIMEOUT_MS = 5_000;
export const DEFAULT_RETRIES = 3;

const CLUSTER_NOT_AVAILABLE = 10008;

function isNoResponders(e: unknown): boolean {
  if (e instanceof RequestError) return e.isNoResponders();
  const cause = e instanceof Error ? e.cause : undefined;
  return cause instanceof RequestError && cause.isNoResponders();
}

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** JetStream's words for a `discard: new` stream at one of its limits (the store fails with err_code 10077). */
const STREAM_FULL = /maximum (bytes|messages)( per subject)? exceeded/i;

/** The words refusalText uses for a full stream (`natslake publish` looks for them). */
export const STREAM_FULL_WORDS = "ingest stream is full";

/**
 * What a producer says of a JetStream refusal. A full ingest stream is named as such: it is back-pressure (the table's
 * writers are behind or stopped, and the stream holds at most `natslake.stream.max-bytes`), not a fault of the rows,
 * and the batch can be sent again once the writers catch up.
 */
export function refusalText(e: JetStreamApiError): string {
  const raw = `${e.message} (err_code ${e.code})`;
  if (!STREAM_FULL.test(e.message)) return raw;
  return `the table's ${STREAM_FULL_WORDS} (${raw}): its writers are behind or stopped and the stream holds at most natslake.stream.max-bytes; nothing of this batch was stored — send it again once they catch up`;
}

/**
 * Publishes `payload` with `msgId`, retrying timeouts, "no responders" and "JetStream temporarily unavailable" with
 * the same id while a retry still falls inside the duplicate window. Never throws.
 */
export async function publishWithRetry(
  js: JetStreamClient,
  subject: string,
  payload: Uint8Array,
  msgId: string,
  policy: RetryPolicy,
  headers?: MsgHdrs,
): Promise<Omit<BatchOutcome, "bucket" | "rows">> {
  const start = Date.now();
  let timedOut = false;
  let lastError = "";
  let attempts = 0;
  for (let attempt = 0; attempt <= policy.retries; attempt++) {
    if (attempt > 0) {
      const wait = Math.min(100 * 2 ** (attempt - 1), 2_000);
      // The retry must reach the server while the first attempt's id is still remembered.
      if (Date.now() + wait + policy.timeoutMs - start > policy.duplicateWindowMs) break;
      await new Promise((r) => setTimeout(r, wait));
    }
    attempts++;
    try {
      const ack = await js.publish(subject, payload, { msgID: msgId, timeout: policy.timeoutMs, ...(headers !== undefined ? { headers } : {}) });
      return { status: ack.duplicate ? "duplicate" : "ok", seq: ack.seq, msgId, attempts };
    } catch (e) {
      lastError = errorText(e);
      if (e instanceof errors.TimeoutError) {
        timedOut = true;
        continue;
      }
      if (isNoResponders(e)) continue;
      if (e instanceof JetStreamApiError) {
        if (e.code === CLUSTER_NOT_AVAILABLE) {
          timedOut = true; // the server may have stored it before answering that it cannot confirm
          continue;
        }
        // A definite refusal: the stream did not store the message.
        return { status: "failed", msgId, attempts, error: refusalText(e) };
      }
      if (e instanceof errors.InvalidArgumentError) return { status: "failed", msgId, attempts, error: lastError };
      // Anything else (a closed connection mid-request, …): whether it was stored cannot be told.
      return { status: "unknown", msgId, attempts, error: lastError };
    }
  }
  return { status: timedOut ? "unknown" : "failed", msgId, attempts, error: lastError };
}

// ---------------------------------------------------------------------------------------------------------------
// Producer

export interface ProducerOptions {
  /** Server URL(s) to connect to (the producer then owns and closes the connection), or… */
  servers?: string | string[];
  /**
   * Credentials and TLS of the connection it makes from `servers` (files, see cluster/nats/connect-options.ts),
   * over the NATSLAKE_NATS_* environment — which is used alone when this is absent.
   */
  auth?: NatsAuthSettings;
  /** …an existing connection (left open by `close()`). */
  nc?: NatsConnection;
  /** `<db>.<table>`. */
  table: string;
  prefix?: string;
  /** Default: a fresh NUID. Must be unique among producers within the stream's duplicate window. */
  producerId?: string;
  /** Rows per batch message (default 500). */
  maxBatchRows?: number;
  /**
   * Bytes per batch message before it is sealed (default: a quarter of the server's max_payload; never more than
   * what fits in one message). A batch is sealed before a row would take it past this.
   */
  maxBatchBytes?: number;
  /** How long a partly filled batch waits for more rows (default 5 ms). */
  lingerMs?: number;
  /** Batches awaiting acknowledgement at once, over all buckets (default 32). */
  maxInFlight?: number;
  /** At most one batch in flight per bucket, so retries keep write order (default true). */
  ordered?: boolean;
  publishTimeoutMs?: number;
  retries?: number;
  /** Use this metadata instead of reading it from KV (tests, tools). */
  meta?: TableMeta;
  /**
   * Publish spans, one per batch (default: the global `@opentelemetry/api` tracer — recording nothing unless the
   * service registered an OpenTelemetry SDK with a propagator, which then also puts `traceparent` on each batch).
   */
  tracer?: Tracer;
}

/** The highest acknowledged stream sequence per bucket of one producer, for read-your-writes. */
export interface VisibilityToken {
  table: string;
  offsets: Record<string, number>;
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

interface PendingBatch {
  bucket: number;
  /** Rows so far. */
  rows: number;
  /** The message: room for the prefix and the rows array header, then the packed rows (see `payload`). */
  out: MsgpackWriter;
  done: Deferred<BatchOutcome>;
}

interface BucketLane {
  queue: PendingBatch[];
  inFlight: number;
  counter: number;
}

/** True when the snapshot's offsets reach every bucket's sequence in the token. */
export function tokenVisibleIn(token: VisibilityToken, n: SnapshotNotification): boolean {
  for (const [bucket, seq] of Object.entries(token.offsets)) {
    const have = n.offsets[bucket];
    if (have === undefined || have < seq) return false;
  }
  return true;
}

export async function createProducer(opts: ProducerOptions): Promise<Producer> {
  if (opts.nc === undefined && opts.servers === undefined) throw dataInvalid("createProducer needs `servers` or `nc`");
  const subjects = new Subjects(opts.prefix ?? DEFAULT_PREFIX);
  const id = subjects.table(opts.table);
  const owned = opts.nc === undefined;
  const nc = opts.nc ?? (await connectNats([opts.servers!].flat().join(","), opts.auth ?? {}));
  try {
    const meta = opts.meta ?? (await readTableMeta(nc, subjects, id));
    const producer = new Producer(nc, owned, subjects, id, meta, opts);
    // A schema given by the caller is theirs to keep; otherwise follow the table's as the cluster publishes it.
    if (opts.meta === undefined) producer.watchMeta(await watchTableMeta(nc, subjects, id, (m) => producer.followMeta(m)));
    return producer;
  } catch (e) {
    if (owned) await nc.close();
    throw e;
  }
}

export class Producer {
  readonly producerId: string;
  schema!: TableSchema;
  numBuckets!: number;
  private readonly js: JetStreamClient;
  /** Per column: validates an input value and writes its wire form (msgpack) into `scratch`. */
  private packers!: InputPacker[];
  /** Primary-key tables: the kind and key rules, and the packers of retractions (non-key columns may be left out). */
  private keyed!: { rules: KeyedInputRules; retractPackers: InputPacker[] } | null;
  private names!: string[];
  private known!: Set<string>;
  /** Per column: its position in the bucket key or −1; and the key values of the row being prepared. */
  private keySlot!: Int32Array;
  private keyValues!: Value[];
  private bucketFn!: ((key: readonly Value[]) => number) | null;
  /** The row being prepared, packed (bytes [0, pos)). */
  private readonly scratch = new MsgpackWriter(1024);
  /** `{v, schema, cols, rows:` — every batch message starts with it. */
  private prefix!: Uint8Array;
  /** Typical bytes of a sealed batch (a new batch's first allocation). */
  private batchCapacity = 16 * 1024;
  private subjectOf!: string[];
  private readonly pending = new Map<number, PendingBatch>();
  private readonly lanes = new Map<number, BucketLane>();
  private readonly ready = new Set<number>();
  private readonly unsettled = new Set<Promise<BatchOutcome>>();
  private readonly acked: Record<string, number> = {};
  private readonly policy: RetryPolicy;
  private readonly maxBatchRows: number;
  private readonly maxBatchBytes: number;
  private maxRowBytes!: number;
  private readonly lingerMs: number;
  private readonly maxInFlight: number;
  private readonly perBucket: number;
  private readonly tracer: Tracer;
  private inFlight = 0;
  private preparedBucket = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private current!: TableMeta;
  /** Stops the watch of the table's metadata (set by createProducer). */
  private stopWatch: (() => void) | null = null;

  /** Use `createProducer`. */
  constructor(
    readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    readonly subjects: Subjects,
    readonly identifier: Identifier,
    meta: TableMeta,
    opts: ProducerOptions,
  ) {
    this.producerId = opts.producerId ?? nuid.next();
    this.js = jetstream(nc);
    this.meta = meta;
    this.adopt(meta);
    // The table's writers dead-letter a message with more rows than its natslake.ingest.max-message-rows: say so now.
    const rowBound = new TableOptions(meta.schema.options ?? {}).int("natslake.ingest.max-message-rows");
    if (opts.maxBatchRows !== undefined && opts.maxBatchRows > rowBound)
      throw dataInvalid(`producer option maxBatchRows ${opts.maxBatchRows} is above ${meta.table}'s natslake.ingest.max-message-rows (${rowBound}): its writers would dead-letter such batches`);
    this.maxBatchRows = positive("maxBatchRows", opts.maxBatchRows ?? Math.min(500, rowBound));
    // Batches are sealed by their encoded size too (issue 9).
    const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    this.maxBatchBytes = Math.min(payloadLimit(maxPayload), positive("maxBatchBytes", opts.maxBatchBytes ?? Math.floor(maxPayload / 4)));
    this.lingerMs = Math.max(0, opts.lingerMs ?? 5);
    this.maxInFlight = positive("maxInFlight", opts.maxInFlight ?? 32);
    this.perBucket = (opts.ordered ?? true) ? 1 : this.maxInFlight;
    this.tracer = opts.tracer ?? trace.getTracer("natslake");
    this.policy = {
      timeoutMs: positive("publishTimeoutMs", opts.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS),
      retries: Math.max(0, opts.retries ?? DEFAULT_RETRIES),
      duplicateWindowMs: meta.duplicateWindowMs,
    };
  }

  get table(): string {
    return this.meta.table;
  }

  /** The table's metadata this producer validates and routes by (the newest schema it has seen). */
  get meta(): TableMeta {
    return this.current;
  }
  private set meta(m: TableMeta) {
    this.current = m;
  }

  /**
   * Follows a newer schema of the table (a column added while the producer runs; the cluster publishes it in KV once
   * a node runs the table on it). Open batches are sealed first: a batch's prefix names its columns, and rows packed
   * for the old columns must not travel under the new ones. Older or equal schemas are ignored.
   */
  followMeta(meta: TableMeta): boolean {
    if (this.closed || schemaIdOf(meta) <= this.schema.id || meta.bucket !== this.current.bucket || meta.bucketKey.join(",") !== this.current.bucketKey.join(",")) return false;
    this.sealAll();
    this.meta = meta;
    this.adopt(meta);
    return true;
  }

  /** @internal createProducer hands over the stop of its metadata watch. */
  watchMeta(stop: () => void): void {
    if (this.closed) stop();
    else this.stopWatch = stop;
  }

  /** Everything derived from the table's metadata: columns, packers, bucket routing, the batch prefix. */
  private adopt(meta: TableMeta): void {
    this.schema = schemaFromJson(meta.schema);
    const fields = this.schema.fields;
    this.names = fields.map((f) => f.name);
    const keyed = this.schema.primaryKeys.length > 0;
    this.known = new Set(keyed ? [...this.names, ROW_KIND_COLUMN] : this.names);
    this.numBuckets = meta.bucket > 0 ? meta.bucket : 1;
    if (meta.bucket > 0) {
      const r = routeByKey(fields, meta, this.schema);
      this.bucketFn = r.fn;
      this.keySlot = Int32Array.from(this.names, (name) => r.names.indexOf(name));
      this.keyValues = new Array<Value>(r.names.length).fill(null);
    } else {
      this.bucketFn = null;
      this.keySlot = new Int32Array(this.names.length).fill(-1);
      this.keyValues = [];
    }
    this.packers = fields.map((f, k) => compileInputPacker(f, this.keySlot[k]! >= 0));
    if (keyed) {
      const rules = keyedInputRules(this.schema);
      const fillers = new Set(rules.fillers.map((f) => f.name));
      const retractPackers = rules.retractionFields.map((f, k): InputPacker => {
        const pack = compileInputPacker(f, this.keySlot[k]! >= 0);
        if (!fillers.has(f.name)) return pack;
        const zero = zeroValue(f.type);
        return (w, v) => pack(w, v === null || v === undefined ? zero : v);
      });
      this.keyed = { rules, retractPackers };
    } else this.keyed = null;
    this.prefix = rowBatchPrefix(this.schema.id, keyed ? [...this.names, ROW_KIND_COLUMN] : this.names);
    this.subjectOf = Array.from({ length: this.numBuckets }, (_, b) => this.subjects.ingestBucket(this.identifier, b));
    // The server refuses a message over its max_payload (headers included), so a row is refused here, before it is
    // buffered, when a batch of it alone would not fit (the prefix names the columns, so it follows the schema).
    this.maxRowBytes = payloadLimit(this.nc.info?.max_payload ?? 1024 * 1024) - this.prefix.length - 5;
  }

  /** Buffers one row; resolves with the outcome of its batch. Throws (synchronously) for a bad row. */
  write(row: Readonly<Record<string, unknown>>): Promise<BatchOutcome> {
    this.checkOpen();
    this.prepare(row);
    return this.enqueue(this.preparedBucket, this.scratch.buf, 0, this.scratch.pos);
  }

  /** Checks a row exactly as `write` would — schema, values, size — and throws the same error; buffers nothing. */
  validate(row: Readonly<Record<string, unknown>>): void {
    this.checkOpen();
    this.prepare(row);
  }

  /**
   * Buffers several rows: all are validated first, so a bad row (its index in the message) throws and none of
   * them is buffered. Resolves with the outcomes of the batches that carried them.
   */
  writeMany(rows: ReadonlyArray<Readonly<Record<string, unknown>>>): Promise<BatchOutcome[]> {
    return this.writeAll(rows, null);
  }

  /**
   * Primary-key tables: inserts or replaces rows by key (each row whole, written as +I: a later version of a key wins).
   * All rows are checked first, as `writeMany` does; a row that names another kind in `_row_kind` is refused.
   */
  upsert(rows: ReadonlyArray<Readonly<Record<string, unknown>>>): Promise<BatchOutcome[]> {
    return this.writeAll(rows, RowKind.INSERT);
  }

  /**
   * Primary-key tables: deletes the rows of these keys (-D). Each object holds at least every primary-key column — the
   * partition columns among them — and may hold the whole row; the other columns may be left out.
   */
  delete(keys: ReadonlyArray<Readonly<Record<string, unknown>>>): Promise<BatchOutcome[]> {
    return this.writeAll(keys, RowKind.DELETE);
  }

  /** `writeMany`, `upsert` and `delete`: every row checked and packed before any is buffered. */
  private writeAll(rows: ReadonlyArray<Readonly<Record<string, unknown>>>, kind: RowKind | null): Promise<BatchOutcome[]> {
    this.checkOpen();
    if (kind !== null && this.keyed === null) {
      const what = kind === RowKind.DELETE ? "delete" : "upsert";
      throw new LakeError(ErrorKind.Unsupported, `${what}: ${this.meta.table} has no primary key, so it has no rows to replace or delete by key (append rows with write or writeMany)`);
    }
    // Every row packed into one staging buffer first; nothing is buffered unless all rows are good.
    const staged = new MsgpackWriter(Math.max(1024, rows.length * 64));
    const buckets = new Int32Array(rows.length);
    const ends = new Float64Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      try {
        this.prepare(rows[i]!, kind);
        buckets[i] = this.preparedBucket;
        staged.bytes(this.scratch.buf, 0, this.scratch.pos);
        ends[i] = staged.pos;
      } catch (e) {
        if (isLakeError(e)) throw new LakeError(e.kind, `row ${i}: ${e.message}`, { context: { ...e.context, rowIndex: i } });
        throw e;
      }
    }
    const batches = new Set<Promise<BatchOutcome>>();
    for (let i = 0; i < rows.length; i++) batches.add(this.enqueue(buckets[i]!, staged.buf, i === 0 ? 0 : ends[i - 1]!, ends[i]!));
    return Promise.all(batches);
  }

  /** Seals every partly filled batch and resolves with the outcomes of all batches not settled before the call. */
  async flush(): Promise<BatchOutcome[]> {
    this.sealAll();
    return Promise.all([...this.unsettled]);
  }

  /** The highest acknowledged sequence per bucket so far. */
  token(): VisibilityToken {
    return { table: this.meta.table, offsets: { ...this.acked } };
  }

  /**
   * Resolves with the first snapshot notification (the KV's last one included) whose committed offsets reach the
   * token; rejects after `timeoutMs`. An empty token resolves at once with null.
   */
  async waitVisible(token: VisibilityToken = this.token(), timeoutMs = 10_000): Promise<SnapshotNotification | null> {
    return waitVisible(this.nc, token, timeoutMs, this.subjects.prefix);
  }

  /** Flushes, then closes the connection if the producer opened it. Later writes throw. */
  async close(): Promise<BatchOutcome[]> {
    if (this.closed) return [];
    const outcomes = await this.flush();
    this.closed = true;
    this.stopWatch?.();
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.ownsConnection) await this.nc.close();
    return outcomes;
  }

  // -------------------------------------------------------------------------------------------------------------

  private checkOpen(): void {
    if (this.closed) throw new LakeError(ErrorKind.Unexpected, `producer for ${this.meta.table} is closed`);
  }

  /**
   * Validates, packs and routes one row: leaves its msgpack bytes (an array of its values in schema order) in
   * `scratch` and its bucket in `preparedBucket` — no canonical row, wire values or tuple allocated per row.
   */
  private prepare(input: Readonly<Record<string, unknown>>, forced: RowKind | null = null): void {
    if (input === null || typeof input !== "object" || Array.isArray(input)) throw dataInvalid(`a row must be an object keyed by column name`);
    const w = this.scratch;
    const names = this.names;
    let packers = this.packers;
    const keySlot = this.keySlot;
    const n = names.length;
    const keyed = this.keyed;
    let kind: RowKind = RowKind.INSERT;
    if (keyed !== null) {
      // The kind, then the key: what is wrong with them is said before any value is looked at.
      // An upsert or a delete names its kind; a row that names another (in _row_kind or rowkind.field) is refused.
      kind = keyed.rules.kindOf(input, forced ?? undefined);
      keyed.rules.checkKind(kind);
      keyed.rules.checkKey(input, kind);
      if (isRetract(kind)) packers = keyed.retractPackers;
    } else if (input[ROW_KIND_COLUMN] !== undefined) throw rowKindOnAppendTable(this.meta.table);
    w.pos = 0;
    w.arrayHeader(keyed !== null ? n + 1 : n);
    // Conversion errors in column order, then an unknown key: the order compileRowConverter reports them in.
    let seen = 0;
    for (let k = 0; k < n; k++) {
      const v = input[names[k]!];
      if (v !== undefined) seen++;
      const c = packers[k]!(w, v);
      const slot = keySlot[k]!;
      if (slot >= 0) this.keyValues[slot] = c;
    }
    if (keyed !== null) {
      if (input[ROW_KIND_COLUMN] !== undefined) seen++;
      w.string(rowKindName(kind));
    }
    // Only when the record has more defined keys than the columns it matched is a key unknown.
    let defined = 0;
    for (const name in input) if (input[name] !== undefined) defined++;
    if (defined !== seen) {
      const unknown = Object.keys(input).filter((name) => !this.known.has(name));
      throw dataInvalid(`unknown column '${unknown[0]}' (columns: ${names.join(", ")})`, { column: unknown[0] });
    }
    if (w.pos > this.maxRowBytes) {
      const bytes = w.pos;
      w.pos = 0;
      if (w.buf.length > 1024 * 1024) w.resize(1024);
      throw dataInvalid(`row is too large for one NATS message (${bytes} bytes encoded, at most ${this.maxRowBytes} fit; the server's max_payload is ${this.nc.info?.max_payload ?? "1048576"})`);
    }
    this.preparedBucket = this.bucketFn === null ? 0 : this.bucketFn(this.keyValues);
  }

  /** Appends a packed row (`src[start, end)`) to its bucket's open batch. */
  private enqueue(bucket: number, src: Uint8Array, start: number, end: number): Promise<BatchOutcome> {
    let batch = this.pending.get(bucket);
    if (batch !== undefined && batch.out.pos + (end - start) > this.maxBatchBytes) {
      this.seal(batch);
      batch = undefined;
    }
    if (batch === undefined) {
      const out = new MsgpackWriter(Math.max(this.batchCapacity, this.prefix.length + 5 + (end - start)));
      // Room for the prefix and the largest rows array header; both are written when the batch is sealed.
      out.pos = this.prefix.length + 5;
      batch = { bucket, rows: 0, out, done: deferred<BatchOutcome>() };
      this.pending.set(bucket, batch);
      const p = batch.done.promise;
      this.unsettled.add(p);
      void p.then(() => this.unsettled.delete(p));
    }
    batch.out.bytes(src, start, end);
    batch.rows++;
    const p = batch.done.promise;
    if (batch.rows >= this.maxBatchRows) this.seal(batch);
    else if (this.timer === null) this.timer = setTimeout(() => this.sealAll(), this.lingerMs);
    return p;
  }

  private sealAll(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    for (const b of [...this.pending.values()]) this.seal(b);
  }

  private seal(batch: PendingBatch): void {
    this.pending.delete(batch.bucket);
    this.batchCapacity = Math.min(Math.max(1024, this.maxBatchBytes + 64), Math.max(this.batchCapacity, batch.out.pos + (batch.out.pos >> 3)));
    let lane = this.lanes.get(batch.bucket);
    if (lane === undefined) {
      lane = { queue: [], inFlight: 0, counter: 0 };
      this.lanes.set(batch.bucket, lane);
    }
    lane.queue.push(batch);
    this.ready.add(batch.bucket);
    this.pump();
  }

  private pump(): void {
    for (const bucket of this.ready) {
      if (this.inFlight >= this.maxInFlight) return;
      const lane = this.lanes.get(bucket)!;
      while (lane.queue.length > 0 && lane.inFlight < this.perBucket && this.inFlight < this.maxInFlight) {
        const batch = lane.queue.shift()!;
        lane.inFlight++;
        this.inFlight++;
        void this.send(batch, lane);
      }
      if (lane.queue.length === 0) this.ready.delete(bucket);
    }
  }

  /** The batch's message: the prefix and rows array header written right before its rows. */
  private payload(batch: PendingBatch): Uint8Array {
    const out = batch.out;
    const rowsStart = this.prefix.length + 5;
    const end = out.pos;
    const header = batch.rows < 16 ? 1 : batch.rows < 0x10000 ? 3 : 5;
    const start = rowsStart - header - this.prefix.length;
    out.pos = start + this.prefix.length;
    out.arrayHeader(batch.rows);
    out.buf.set(this.prefix, start);
    return out.buf.subarray(start, end);
  }

  private async send(batch: PendingBatch, lane: BucketLane): Promise<void> {
    const msgId = `${this.producerId}-${batch.bucket}-${lane.counter++}`;
    const subject = this.subjectOf[batch.bucket]!;
    // The batch's span; its context travels in the message's `traceparent` header (only when the process traces).
    const span = this.tracer.startSpan("natslake.publish", {
      kind: SpanKind.PRODUCER,
      attributes: { "messaging.system": "nats", "messaging.destination.name": subject, "messaging.message.id": msgId, "messaging.batch.message_count": batch.rows, "natslake.table": this.meta.table, "natslake.bucket": batch.bucket },
    });
    const traceparent = traceparentOf(span);
    let headers: MsgHdrs | undefined;
    if (traceparent !== undefined) {
      headers = natsHeaders();
      headers.set(H_TRACEPARENT, traceparent);
    }
    let outcome: BatchOutcome;
    try {
      const r = await publishWithRetry(this.js, subject, this.payload(batch), msgId, this.policy, headers);
      outcome = { ...r, bucket: batch.bucket, rows: batch.rows };
    } catch (e) {
      outcome = { status: "failed", bucket: batch.bucket, rows: batch.rows, msgId, attempts: 0, error: errorText(e) };
    }
    if (span.isRecording()) {
      span.setAttributes({ "natslake.outcome": outcome.status, ...(outcome.seq !== undefined ? { "natslake.stream_seq": outcome.seq } : {}) });
      if (outcome.status === "failed" || outcome.status === "unknown") span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error ?? outcome.status });
    }
    span.end();
    if ((outcome.status === "ok" || outcome.status === "duplicate") && outcome.seq !== undefined) {
      const key = String(batch.bucket);
      if ((this.acked[key] ?? 0) < outcome.seq) this.acked[key] = outcome.seq;
    }
    lane.inFlight--;
    this.inFlight--;
    if (lane.queue.length > 0) this.ready.add(batch.bucket);
    batch.done.resolve(outcome);
    this.pump();
  }
}

function positive(name: string, v: number): number {
  if (!Number.isFinite(v) || v <= 0) throw dataInvalid(`producer option ${name} must be positive, got ${v}`);
  return v;
}

/** The table's bucket function over the values of its bucket-key columns (named in bucket-key order). */
/** The schema id a TableMeta carries. */
function schemaIdOf(meta: TableMeta): number {
  return schemaFromJson(meta.schema).id;
}

function routeByKey(fields: readonly DataField[], meta: TableMeta, schema: TableSchema): { fn: BucketFunction; names: string[] } {
  const keyFields = meta.bucketKey.map((k) => {
    const f = fields.find((x) => x.name === k);
    if (f === undefined) throw dataInvalid(`bucket key '${k}' of ${meta.table} is not a column`);
    return f;
  });
  if (keyFields.length === 0) throw dataInvalid(`table ${meta.table} has ${meta.bucket} buckets but no bucket key`);
  const fnType = (schema.options["bucket-function.type"] ?? "default") as BucketFunctionType;
  const fn: BucketFunction = createBucketFunctionOfType(
    fnType,
    keyFields.map((f) => f.type),
    meta.bucket,
  );
  return { fn, names: keyFields.map((f) => f.name) };
}

/** Resolves when a snapshot notification of the token's table covers the token (see Producer.waitVisible). */
export async function waitVisible(nc: NatsConnection, token: VisibilityToken, timeoutMs: number, prefix = DEFAULT_PREFIX): Promise<SnapshotNotification | null> {
  if (Object.keys(token.offsets).length === 0) return null;
  // The token's sequences count in the live stream; offsets of snapshots that belong to another stream (one deleted
  // and re-created since) say nothing about them, however high they are.
  const subjects = new Subjects(prefix);
  const table = subjects.table(token.table);
  let live = await liveIngestStream(nc, subjects, table);
  let otherStream: string | undefined;
  const done = deferred<SnapshotNotification | null>();
  const judge = (n: SnapshotNotification): void => {
    if (n.stream !== undefined && n.stream !== live.identity) otherStream = n.stream;
    else if (tokenVisibleIn(token, n)) done.resolve(n);
  };
  const sub = await subscribeSnapshots(
    nc,
    token.table,
    (n) => {
      // The nodes had not written the stream's marker when the identity was read: read it again, then judge.
      if (n.stream !== undefined && n.stream !== live.identity && live.identity.endsWith("#none")) {
        void liveIngestStream(nc, subjects, table).then(
          (l) => {
            live = l;
            judge(n);
          },
          () => undefined,
        );
        return;
      }
      judge(n);
    },
    { prefix },
  );
  try {
    return await withTimeout(done.promise, timeoutMs, () => {
      const why =
        otherStream !== undefined
          ? `; the table's snapshots belong to stream ${otherStream} but the rows went to ${live.identity}: the cluster reads nothing from it until \`natslake table reset-offsets ${token.table}\``
          : "";
      throw new LakeError(ErrorKind.Io, `rows of ${token.table} were not visible in a snapshot within ${timeoutMs} ms (waiting for offsets ${JSON.stringify(token.offsets)})${why}`, {
        retryable: true,
        context: { table: token.table, offsets: token.offsets },
      });
    });
  } finally {
    sub.stop();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Raw publishing (`natslake publish`)

export interface PublishRawOptions {
  prefix?: string;
  /** Rows per message (default 500). */
  batchRows?: number;
  /** Payload encoding (default msgpack: an array of maps; json: a JSON array of objects, bigints exact). */
  encoding?: "msgpack" | "json";
  publishTimeoutMs?: number;
  retries?: number;
  /** Skip the KV read (the table must still be registered for the router to take the rows). */
  meta?: TableMeta;
}

/**
 * Publishes rows unvalidated to the table's bare subject, for the cluster's router to validate and route (bad rows
 * go to the dead-letter subject). Messages carry ids `raw-<nuid>-<n>`, retried like the producer's. Resolves with one
 * outcome per message (bucket −1), in order.
 */
export async function publishRaw(
  nc: NatsConnection,
  table: string,
  rows: ReadonlyArray<Record<string, unknown>>,
  opts: PublishRawOptions = {},
): Promise<BatchOutcome[]> {
  const subjects = new Subjects(opts.prefix ?? DEFAULT_PREFIX);
  const id = subjects.table(table);
  const meta = opts.meta ?? (await readTableMeta(nc, subjects, id));
  const js = jetstream(nc);
  const size = positive("batchRows", opts.batchRows ?? 500);
  const policy: RetryPolicy = {
    timeoutMs: opts.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS,
    retries: opts.retries ?? DEFAULT_RETRIES,
    duplicateWindowMs: meta.duplicateWindowMs,
  };
  const session = nuid.next();
  const subject = subjects.ingestRaw(id);
  const outcomes: BatchOutcome[] = [];
  for (let start = 0, n = 0; start < rows.length; start += size, n++) {
    const chunk = rows.slice(start, start + size);
    const payload = opts.encoding === "json" ? new TextEncoder().encode(stringifyLossless(chunk) ?? "[]") : packValue(chunk);
    const r = await publishWithRetry(js, subject, payload, `raw-${session}-${n}`, policy);
    outcomes.push({ ...r, bucket: -1, rows: chunk.length });
  }
  return outcomes;
}
