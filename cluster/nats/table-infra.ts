/**
 * The NATS side of a table: its ingest and commit streams, the shared dead-letter stream, the KV buckets, and the
 * `TableMeta` producers read. `ensureTableInfra` is idempotent (several nodes may run it at once) and works on
 * nats-server 2.9 (no multi-filter consumers, subject transforms or stream metadata are used).
 *
 * Streams (names and subjects from subjects.ts):
 * - ingest `<P>_IN_<db>_<table>`: subjects `<p>.in.<db>.<table>` and `<p>.in.<db>.<table>.*` (a `>` would not match
 *   the bare subject), limits retention, `discard: new` with `max_bytes` (a full stream refuses new batches instead
 *   of deleting uncommitted ones), an explicit `duplicate_window` (producers retry with the same Nats-Msg-Id within
 *   it), file storage, `num_replicas`.
 * - commit `<P>_COMMIT_<db>_<table>`: the committables subject, file storage, `discard: new`, no size limit.
 * - dead letters `<P>_DLQ`: `<p>.dlq.>`, limits of 7 days and `dlqMaxBytes`, `discard: old` (the newest dead letters
 *   matter most). Letters dropped that way are counted, not silent: `dlqDropped` (the node's
 *   `natslake_dlq_dropped_total`).
 * - KV buckets: tables, members (history 1, `max_age` = member TTL, so a silent member's key disappears), assign,
 *   snap, router, attempts.
 *
 * An existing ingest stream is updated when its updatable settings differ (subjects are only ever added); settings
 * JetStream cannot change (storage, retention) are an error that says what differs.
 *
 * nats-server before the fix of nats-io/nats-server#4771 (PR #4772, Nov 2023; 2.9.x included) underestimates a message's stored size in
 * the `discard: new` + `max_bytes` check; a message that fits the estimate but not the real size is accepted and the
 * server then deletes the *oldest* messages to get under `max_bytes` — silent loss of acknowledged rows. It happens
 * only when the stream is within roughly (subject length + 40) bytes of `max_bytes`; the result's `warnings` say so
 * for such servers.
 */
import { Kvm, type KV } from "@nats-io/kv";
import {
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  jetstreamManager,
  type JetStreamManager,
  type StreamConfig,
  type StreamInfo,
} from "@nats-io/jetstream";
import { errors, nanos, type NatsConnection } from "@nats-io/transport-node";
import type { Meter } from "@opentelemetry/api";
import { METRICS } from "../../actors/metrics.ts";
import { ErrorKind, LakeError, dataInvalid } from "../../src/errors.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { identifierText, type Identifier, type Table } from "../../src/table/table.ts";
import { schemaToJson } from "../../src/format/schema.ts";
import type { TableMeta } from "../../actors/wire/messages.ts";
import type { Subjects } from "./subjects.ts";
import { CLUSTER_NOT_AVAILABLE, isJetStreamError as isApiError, STREAM_NAME_IN_USE, STREAM_NOT_FOUND } from "./jetstream-codes.ts";

const DAY_MS = 86_400_000;

export const DEFAULT_DLQ_MAX_BYTES = 1024 * 1024 * 1024;
export const DEFAULT_MEMBER_TTL_MS = 10_000;

export interface TableInfraOptions {
  nc: NatsConnection;
  subjects: Subjects;
  table: Table;
  /** Stream and KV replicas (1 on a single server, 3 in a cluster). Default: option `natslake.stream.replicas`, else 1. */
  replicas?: number;
  /** Ingest stream size bound for a table that does not set `natslake.stream.max-bytes` (else that option's default, 1 GiB). */
  maxBytes?: number;
  /** Ingest de-duplication window in ms for a table that does not set `natslake.stream.duplicate-window` (default 2 min). */
  duplicateWindowMs?: number;
  /** Bound of the shared dead-letter stream (created once; later calls do not change it). Default 1 GiB. */
  dlqMaxBytes?: number;
  /** max_age of the members KV bucket (applies when this call creates it). Default 10 s. */
  memberTtlMs?: number;
}

export interface TableInfra {
  meta: TableMeta;
  ingest: StreamInfo;
  commit: StreamInfo;
  dlq: StreamInfo;
  /** Server limitations that weaken a guarantee (see the module comment). */
  warnings: string[];
}

/**
 * The resolved stream settings of a table. Size and duplicate window: the table's own `natslake.stream.*` option when
 * it sets one, else the caller's (a node's `streamMaxBytes`, `duplicateWindow`), else the option's default — a table
 * made with a small `natslake.stream.max-bytes` gets that bound whatever the nodes' default. Replicas: the caller's
 * (the NATS cluster's size, which a node knows), else the table's option, else 1.
 */
export function streamSettings(table: Table, o: Pick<TableInfraOptions, "replicas" | "maxBytes" | "duplicateWindowMs"> = {}): {
  replicas: number;
  maxBytes: number;
  duplicateWindowMs: number;
} {
  const replicasOpt = table.options.raw["natslake.stream.replicas"];
  const replicas = o.replicas ?? (replicasOpt === undefined ? 1 : Number.parseInt(replicasOpt, 10));
  const own = (key: string): boolean => table.options.raw[key] !== undefined;
  const maxBytes = own("natslake.stream.max-bytes") ? table.options.memory("natslake.stream.max-bytes") : (o.maxBytes ?? table.options.memory("natslake.stream.max-bytes"));
  const duplicateWindowMs = own("natslake.stream.duplicate-window") ? table.options.duration("natslake.stream.duplicate-window") : (o.duplicateWindowMs ?? table.options.duration("natslake.stream.duplicate-window"));
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5) throw dataInvalid(`stream replicas must be 1..5, got ${replicas}`);
  if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0) throw dataInvalid(`ingest stream max bytes must be a positive integer, got ${maxBytes}`);
  if (!Number.isSafeInteger(duplicateWindowMs) || duplicateWindowMs < 1000)
    throw dataInvalid(`ingest stream duplicate window must be at least 1 s, got ${duplicateWindowMs} ms`);
  return { replicas, maxBytes, duplicateWindowMs };
}

/** The TableMeta of a table (what `ensureTableInfra` stores in KV `<p>_tables`). */
export function tableMetaOf(subjects: Subjects, table: Table, duplicateWindowMs: number): TableMeta {
  return {
    v: 1,
    table: table.name,
    schema: schemaToJson(table.schema),
    bucket: table.bucket,
    bucketKey: table.bucketKeys,
    partitionKeys: table.partitionKeys,
    ingestStream: subjects.ingestStream(table.identifier),
    duplicateWindowMs,
  };
}

export async function ensureTableInfra(o: TableInfraOptions): Promise<TableInfra> {
  const { nc, subjects, table } = o;
  const id = table.identifier;
  const { replicas, maxBytes, duplicateWindowMs } = streamSettings(table, o);
  const jsm = await jetstreamManager(nc);
  const warnings: string[] = [];
  if (serverHasDiscardNewSizeBug(nc.info?.version)) {
    warnings.push(
      `nats-server ${nc.info?.version} mis-sizes messages in the 'discard: new' + max_bytes check (nats-io/nats-server#4771, fixed by #4772 in Nov 2023; 2.10.5+): ` +
        `when stream ${subjects.ingestStream(id)} is within a few dozen bytes of max_bytes (${maxBytes}), it may delete its oldest messages ` +
        `instead of refusing new ones. Upgrade nats-server, or keep the stream far from full.`,
    );
  }

  const ingest = await ensureStream(jsm, {
    name: subjects.ingestStream(id),
    subjects: [subjects.ingestRaw(id), subjects.ingestAllBuckets(id)],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.New,
    max_bytes: maxBytes,
    duplicate_window: nanos(duplicateWindowMs),
    num_replicas: replicas,
  });
  const commit = await ensureStream(jsm, {
    name: subjects.commitStream(id),
    subjects: [subjects.commit(id)],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.New,
    num_replicas: replicas,
  });
  const dlq = await ensureStream(
    jsm,
    {
      name: subjects.dlqStream,
      subjects: [subjects.dlqAll],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      max_age: nanos(7 * DAY_MS),
      max_bytes: o.dlqMaxBytes ?? DEFAULT_DLQ_MAX_BYTES,
      num_replicas: replicas,
    },
    // Shared by every table: the first creator's limits stand.
    { updateLimits: false },
  );

  const { tablesKv } = await ensureClusterKv(nc, subjects, replicas, o.memberTtlMs);

  const meta = tableMetaOf(subjects, table, duplicateWindowMs);
  const text = JSON.stringify(meta);
  const key = subjects.tableKey(id);
  const current = await tablesKv.get(key);
  // Forward only: a node still on an older schema (it follows a new one within a table scan) must not send
  // producers back to it.
  if (current === null || current.operation !== "PUT" || (current.string() !== text && storedSchemaId(current.string()) <= table.schema.id)) await tablesKv.put(key, text);
  return { meta, ingest, commit, dlq, warnings };
}

/** The parts of a stream's state `dlqDroppedOf` reads. */
export interface StreamSeqState {
  first_seq: number;
  last_seq: number;
  messages: number;
}

/**
 * Dead letters the DLQ stream no longer holds from its head: the stream is `discard: old` with `max_bytes` and a 7-day
 * `max_age`, so when it is full (or a letter is a week old) the server deletes its oldest letters, and nothing else
 * says so. JetStream numbers messages 1, 2, …; a limit discard removes from the head and moves `first_seq` past
 * them. So `first_seq - 1` is exactly the number of letters dropped by the limits — as long as nobody else removed
 * letters from the head (`nats stream purge`, or deleting the first letters by hand): those are counted too, so in
 * general it is an upper bound of the drops, and exact for a DLQ that operators only read. (Deleting letters from
 * the middle, `num_deleted`, does not move `first_seq` and is not counted.) Recreating the stream starts it at 0.
 */
export function dlqDroppedOf(state: StreamSeqState): number {
  if (state.last_seq === 0) return 0;
  return Math.max(0, state.first_seq - 1);
}

/** The stream's info; null when it does not exist. */
async function streamInfoOrNull(jsm: JetStreamManager, name: string): Promise<StreamInfo | null> {
  try {
    return await jsm.streams.info(name);
  } catch (e) {
    if (isApiError(e, STREAM_NOT_FOUND)) return null;
    throw e;
  }
}

/** `dlqDroppedOf` of the live DLQ stream; null when it does not exist (yet). */
export async function dlqDropped(jsm: JetStreamManager, subjects: Subjects): Promise<number | null> {
  const info = await streamInfoOrNull(jsm, subjects.dlqStream);
  return info === null ? null : dlqDroppedOf(info.state);
}

/**
 * Registers `natslake_dlq_dropped_total` on `meter`: an observable counter read from the DLQ stream's state at each
 * collection (`dlqDropped`; see there for when it is exact). Every node reports the same cluster-wide value, so
 * aggregate it with max, not sum. A collection that cannot reach JetStream reports nothing (no stale value).
 */
export function registerDlqDroppedMetric(meter: Meter, nc: NatsConnection, subjects: Subjects): void {
  let jsm: Promise<JetStreamManager> | undefined;
  METRICS.dlqDropped.create(meter).addCallback(async (r) => {
      try {
        jsm ??= jetstreamManager(nc);
        const n = await dlqDropped(await jsm, subjects);
        if (n !== null) r.observe(n, { stream: subjects.dlqStream });
      } catch {
        jsm = undefined;
      }
    });
}

/**
 * The cluster-wide KV buckets (tables, members, assignments, last notifications, router progress, read attempts), created when
 * missing; an existing bucket keeps its settings. Nodes call this at start, before any table exists.
 */
/** The schema id of a stored TableMeta (-1 when it cannot be read: it is then replaced). */
function storedSchemaId(text: string): number {
  try {
    const id = (JSON.parse(text) as { schema?: { id?: unknown } }).schema?.id;
    return typeof id === "number" ? id : -1;
  } catch {
    return -1;
  }
}

export async function ensureClusterKv(nc: NatsConnection, subjects: Subjects, replicas: number, memberTtlMs?: number): Promise<{ tablesKv: KV }> {
  const kvm = new Kvm(nc);
  const kvOpts = { history: 1, replicas, storage: StorageType.File };
  const tablesKv = await createKv(kvm, subjects.tablesKv, kvOpts);
  await createKv(kvm, subjects.membersKv, { ...kvOpts, ttl: memberTtlMs ?? DEFAULT_MEMBER_TTL_MS });
  await createKv(kvm, subjects.assignKv, kvOpts);
  await createKv(kvm, subjects.snapKv, kvOpts);
  await createKv(kvm, subjects.routerKv, kvOpts);
  await createKv(kvm, subjects.attemptsKv, kvOpts);
  return { tablesKv };
}

/** True for nats-server versions before 2.10.5, whose discard-new size check underestimates messages. */
export function serverHasDiscardNewSizeBug(version: string | undefined): boolean {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version ?? "");
  if (!m) return false;
  const [maj, min, pat] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return maj < 2 || (maj === 2 && (min < 10 || (min === 10 && pat < 5)));
}

async function createKv(kvm: Kvm, name: string, opts: { history: number; replicas: number; storage: StorageType; ttl?: number }): Promise<KV> {
  for (let attempt = 0; ; attempt++) {
    try {
      // Opens the bucket when it exists (its settings are left alone).
      return await kvm.create(name, opts);
    } catch (e) {
      // Two nodes creating it at once: the loser retries and finds it.
      if (attempt < 3 && isApiError(e, STREAM_NAME_IN_USE)) continue;
      throw e;
    }
  }
}

const isNoResponders = (e: unknown): boolean => e instanceof errors.NoRespondersError || (e instanceof errors.RequestError && e.isNoResponders());

/**
 * True when a JetStream request failed for a reason that passes by itself: no answer in time, nobody answering the
 * API subject (JetStream not up yet on this server), or a cluster without a meta leader. Any other API error is a
 * definite refusal (bad settings, replicas the server cannot place) that retrying repeats.
 */
export function isTransientJetStreamError(e: unknown): boolean {
  for (let c: unknown = e, depth = 0; c instanceof Error && depth < 5; c = c.cause, depth++) {
    if (c instanceof errors.TimeoutError || isNoResponders(c)) return true;
    // @nats-io/jetstream does not export this class from its public entry point; its name is its contract.
    if (c.name === "JetStreamNotEnabled") return true;
    if (isApiError(c, CLUSTER_NOT_AVAILABLE)) return true;
  }
  return false;
}

/**
 * Creates the stream, or brings an existing one in line: subjects are added, limits set (when `updateLimits`);
 * storage or retention that differ cannot be changed by JetStream and are reported as an error.
 */
async function ensureStream(jsm: JetStreamManager, want: Partial<StreamConfig> & { name: string; subjects: string[] }, opts = { updateLimits: true }): Promise<StreamInfo> {
  for (let attempt = 0; ; attempt++) {
    let info: StreamInfo;
    try {
      info = await jsm.streams.info(want.name);
    } catch (e) {
      if (!isApiError(e, STREAM_NOT_FOUND)) throw e;
      try {
        return await jsm.streams.add(want);
      } catch (e2) {
        // Created concurrently with other settings: re-read and update.
        if (attempt < 3 && isApiError(e2, STREAM_NAME_IN_USE)) continue;
        throw e2;
      }
    }
    const have = info.config;
    const fixed: Array<keyof StreamConfig> = ["storage", "retention"];
    for (const k of fixed) {
      if (want[k] !== undefined && have[k] !== want[k])
        throw new LakeError(
          ErrorKind.Conflict,
          `stream ${want.name} exists with ${k} '${String(have[k])}', natslake needs '${String(want[k])}'; JetStream cannot change it (delete the stream to recreate it)`,
        );
    }
    const update: Partial<StreamConfig> = {};
    const missing = want.subjects.filter((s) => !have.subjects.includes(s));
    if (missing.length > 0) update.subjects = [...have.subjects, ...missing];
    if (opts.updateLimits) {
      const limits: Array<keyof StreamConfig> = ["discard", "max_bytes", "max_age", "duplicate_window", "num_replicas"];
      for (const k of limits) {
        if (want[k] !== undefined && have[k] !== want[k]) (update as Record<string, unknown>)[k] = want[k];
      }
    }
    // Lowering max_bytes below what the stream holds makes JetStream delete its oldest (uncommitted) messages,
    // even with discard: new (nats-io/nats-server#2589).
    const wantBytes = update.max_bytes;
    if (wantBytes !== undefined && wantBytes > 0 && wantBytes <= info.state.bytes)
      throw new LakeError(
        ErrorKind.Conflict,
        `stream ${want.name} holds ${info.state.bytes} bytes; lowering max_bytes to ${wantBytes} would delete messages not yet committed (wait until it drains)`,
      );
    if (Object.keys(update).length === 0) return info;
    return jsm.streams.update(want.name, update);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Reading table metadata (producers)

/**
 * Whether KV bucket `name` exists (its stream's info). A direct get (see openKv) on a bucket that does not exist finds
 * no responder instead of the "stream not found" a message get is answered with: this tells the two apart.
 */
async function kvBucketExists(nc: NatsConnection, name: string): Promise<boolean> {
  return (await streamInfoOrNull(await jetstreamManager(nc), `KV_${name}`)) !== null;
}

/** Opens a KV bucket that must exist (no creation). */

export async function openKv(nc: NatsConnection, name: string): Promise<KV> {
  // Reads by direct get (the nodes create every bucket with allow_direct, as nats.js does on servers that have it):
  // a direct get names the key in its API subject, so NATS permissions can allow a client one key (a producer its
  // table's registration) — a plain message get names it in its body, where permissions cannot see it.
  return new Kvm(nc).open(name, { allow_direct: true });
}

/**
 * Calls `onMeta` with every TableMeta of `id` stored from now on (the current one first): producers follow a table's
 * schema through it. An entry that is not a TableMeta is skipped.
 */
export async function watchTableMeta(nc: NatsConnection, subjects: Subjects, id: Identifier, onMeta: (m: TableMeta) => void): Promise<() => void> {
  const kv = await openKv(nc, subjects.tablesKv);
  const w = await kv.watch({ key: subjects.tableKey(id) });
  void (async () => {
    for await (const e of w) {
      if (e.operation !== "PUT") continue;
      try {
        const m = e.json<TableMeta>();
        if (m?.v === 1 && m.schema !== undefined) onMeta(m);
      } catch {
        // not JSON: readTableMeta reports it to whoever reads it
      }
    }
  })().catch(() => undefined);
  return () => w.stop();
}

/**
 * The TableMeta of `id` from KV `<p>_tables`. A table that is not registered (no entry, or no bucket at all) is a
 * NotFound LakeError that says so.
 */
export async function readTableMeta(nc: NatsConnection, subjects: Subjects, id: Identifier | string): Promise<TableMeta> {
  const ident = typeof id === "string" ? parseIdentifier(id) : id;
  const name = identifierText(ident);
  const key = subjects.tableKey(ident);
  const notRegistered = (why: string): LakeError =>
    new LakeError(
      ErrorKind.NotFound,
      `table '${name}' is not registered on NATS (${why}); create it through natslake (or run ensureTableInfra) before producing to it`,
      { context: { table: name } },
    );
  let entry;
  try {
    const kv = await openKv(nc, subjects.tablesKv);
    entry = await kv.get(key);
  } catch (e) {
    if (isApiError(e, STREAM_NOT_FOUND) || (isNoResponders(e) && !(await kvBucketExists(nc, subjects.tablesKv)))) throw notRegistered(`KV bucket '${subjects.tablesKv}' does not exist`);
    throw e;
  }
  if (entry === null || entry.operation !== "PUT") throw notRegistered(`no key '${key}' in KV bucket '${subjects.tablesKv}'`);
  let meta: unknown;
  try {
    meta = entry.json();
  } catch {
    throw dataInvalid(`KV ${subjects.tablesKv}/${key} does not hold JSON`);
  }
  const m = meta as Partial<TableMeta> | null;
  if (m === null || typeof m !== "object" || m.v !== 1 || typeof m.bucket !== "number" || !Array.isArray(m.bucketKey) || m.schema === undefined)
    throw dataInvalid(`KV ${subjects.tablesKv}/${key} does not hold a version-1 TableMeta`);
  return m as TableMeta;
}
