/**
 * The reader role's lookup service: answers `<p>.ctl.lookup.<db>.<table>` (queue group: one reader takes each
 * request) with the rows of a primary-key table by key (protocol: actors/wire/lookup.ts). Per table it keeps a
 * TableLookups (cluster/lookup-table.ts) — the newest snapshot, refreshed by the table's snapshot notifications, and
 * a bounded cache of decoded files (`lookup.cache-max-memory-size`) — made on the table's first request.
 *
 * Requests are answered concurrently: one waiting for a snapshot (read-your-writes) holds up no other.
 */
import type { Meter } from "@opentelemetry/api";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { METRICS } from "../actors/metrics.ts";
import { DEFAULT_LOOKUP_WAIT_MS, lookupRequestSchema, type LookupReply, type LookupRequest } from "../actors/wire/lookup.ts";
import type { Logger } from "../actors/runtime/index.ts";
import { ensureError, ErrorKind, isLakeError } from "../src/errors.ts";
import { failpointAsync } from "../src/failpoints.ts";
import type { DataField } from "../src/format/data-types.ts";
import { parseRowJson } from "../src/format/wire/json.ts";
import { toJsonText, toJsonValue, type Row } from "../src/format/values.ts";
import type { Catalog } from "../src/table/catalog.ts";
import { isClientInbox } from "./nats/inbox.ts";
import type { Subjects } from "./nats/subjects.ts";
import { subscribeSnapshots, type SnapshotSubscription } from "./snapshots-client.ts";
import { LookupRefusal, TableLookups } from "./lookup-table.ts";
import { commonLookupRequest } from "./lookup-request.ts";

export interface LookupServiceDeps {
  nc: NatsConnection;
  subjects: Subjects;
  catalog: Catalog;
  nodeId: string;
  log: Logger;
  meter: Meter;
}

interface ServedTable {
  lookups: TableLookups;
  notifications: SnapshotSubscription;
}

type Refusal = Extract<LookupReply, { ok: false }>;

const enc = new TextEncoder();

/** A row of `fields` as JSON values, as `natslake get` prints it (a loop: half the cost of Object.fromEntries of a map, measured). */
function jsonRow(fields: readonly DataField[], row: Row): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) out[f.name] = toJsonValue(f.type, row[f.name] ?? null);
  return out;
}

/** Whether a JSON value holds a -0 somewhere (JSON.stringify writes it as 0). */
const holdsNegativeZero = (v: unknown): boolean => {
  if (typeof v === "number") return Object.is(v, -0);
  if (Array.isArray(v)) return v.some(holdsNegativeZero);
  if (v === null || typeof v !== "object") return false;
  // A loop over the fields, not Object.values: no array per row of every reply.
  for (const k in v) if (Object.hasOwn(v, k) && holdsNegativeZero((v as Record<string, unknown>)[k])) return true;
  return false;
};

/**
 * The reply's text: JSON.stringify (twice as fast as toJsonText on a batch's rows, measured) unless a value is -0,
 * which toJsonText writes as -0.0, as `natslake get` prints it.
 */
const replyText = (reply: LookupReply): string => (reply.ok && reply.rows.some(holdsNegativeZero) ? toJsonText(reply) : JSON.stringify(reply));

/**
 * Counts of one table's requests, summed as they are answered and reported when the metrics are read: an OpenTelemetry
 * counter's `add` per request (it hashes the labels each time) was 4% of a reader's CPU per single-key lookup.
 */
interface TableTallies {
  /** Requests by outcome. */
  requests: Map<string, number>;
  keys: number;
  cacheHits: number;
  cacheMisses: number;
}

export class LookupService {
  private sub: Subscription | undefined;
  private readonly tables = new Map<string, Promise<ServedTable>>();
  private readonly duration;
  /** Counts since the node started, per table label (never dropped, so the counters they report never go down). */
  private readonly tallies = new Map<string, TableTallies>();
  /** Cache counts already tallied, per table (the tallies take what was added since). */
  private readonly reported = new Map<string, { hits: number; misses: number }>();
  private readonly served = new Map<string, TableLookups>();

  constructor(private readonly d: LookupServiceDeps) {
    this.duration = METRICS.lookupDuration.create(d.meter);
    METRICS.lookupRequests.create(d.meter).addCallback((r) => {
      for (const [table, t] of this.tallies) for (const [outcome, n] of t.requests) r.observe(n, { table, outcome });
    });
    METRICS.lookupKeys.create(d.meter).addCallback((r) => {
      for (const [table, t] of this.tallies) if (t.keys > 0) r.observe(t.keys, { table });
    });
    METRICS.lookupCacheFiles.create(d.meter).addCallback((r) => {
      for (const [table, t] of this.tallies) {
        if (t.cacheHits > 0) r.observe(t.cacheHits, { table, result: "hit" });
        if (t.cacheMisses > 0) r.observe(t.cacheMisses, { table, result: "miss" });
      }
    });
    METRICS.lookupCacheBytes.create(d.meter).addCallback((r) => {
      for (const [name, t] of this.served) r.observe(t.cache.bytes, { table: name });
    });
    METRICS.lookupSnapshot.create(d.meter).addCallback((r) => {
      for (const [name, t] of this.served) if (t.newestId !== null) r.observe(t.newestId, { table: name });
    });
  }

  start(): void {
    const sub = this.d.nc.subscribe(this.d.subjects.lookupAnyTable, { queue: this.d.subjects.lookupQueue });
    this.sub = sub;
    void (async () => {
      for await (const m of sub) void this.answer(m);
    })();
  }

  async stop(): Promise<void> {
    this.sub?.unsubscribe();
    for (const t of this.tables.values()) {
      const served = await t.catch(() => null);
      served?.notifications.stop();
      served?.lookups.stop();
    }
    this.tables.clear();
  }

  private async answer(m: Msg): Promise<void> {
    // Answers go to inboxes only (cluster/nats/inbox.ts): any other reply subject is dropped unanswered.
    if (!isClientInbox(m.reply)) {
      this.d.log.warn("lookup request dropped: its reply subject is not an inbox", { subject: m.subject, reply: m.reply ?? null });
      return;
    }
    const started = performance.now();
    const table = m.subject.slice(this.d.subjects.prefix.length + ".ctl.lookup.".length);
    let reply: LookupReply;
    try {
      reply = await this.lookUp(m.data, table);
    } catch (e) {
      reply = this.refusal(e);
    }
    const text = replyText(reply);
    const ms = performance.now() - started;
    // Subjects of tables that are not served (anyone allowed to ask may name any) are counted under one label.
    const tally = this.talliesOf(this.served.has(table) ? table : "(not served)");
    const outcome = reply.ok ? "ok" : reply.code;
    tally.requests.set(outcome, (tally.requests.get(outcome) ?? 0) + 1);
    // An unexpected failure (the table dropped and made again, a snapshot gone): the next request starts afresh.
    if (!reply.ok && reply.code === "failed") this.forget(table);
    if (reply.ok) {
      tally.keys += reply.rows.length;
      this.duration.record(ms, { table });
    }
    this.reportCache(table);
    // Crash tests: a reader that dies with the answer computed and not sent (test/integration/lookup-service.test.ts).
    await failpointAsync("lookup.before-reply");
    try {
      m.respond(enc.encode(text));
    } catch (e) {
      // Too large for the server's max_payload: said to the client, which may ask for fewer keys at once.
      m.respond(enc.encode(toJsonText(this.refusal(new LookupRefusal("failed", ErrorKind.DataInvalid, `the answer (${text.length} bytes) does not fit one NATS message: ask for fewer keys or columns at once (${ensureError(e).message})`)))));
    }
  }

  private async lookUp(data: Uint8Array, subjectTable: string): Promise<LookupReply> {
    const req = this.parse(data);
    if (req.table !== subjectTable) throw new LookupRefusal("bad-request", ErrorKind.DataInvalid, `a lookup on ${this.d.subjects.prefix}.ctl.lookup.${subjectTable} is for table ${subjectTable}, not ${req.table}`);
    const served = await this.tableFor(req.table);
    const answer = await served.lookups.get(req.keys, req.columns, {
      ...(req.snapshot !== undefined ? { snapshot: req.snapshot } : {}),
      ...(req.minSnapshot !== undefined ? { minSnapshot: req.minSnapshot } : {}),
      ...(req.visibleAfter !== undefined ? { visibleAfter: req.visibleAfter } : {}),
      waitMs: req.waitMs ?? DEFAULT_LOOKUP_WAIT_MS,
    });
    const columns = answer.lookup.columns;
    return { ok: true, table: req.table, snapshotId: answer.snapshotId, rows: answer.rows.map((r) => (r === null ? null : jsonRow(columns, r))), reader: this.d.nodeId };
  }

  /** The request in `data` (integers read without rounding), or a bad-request refusal saying what is wrong. */
  private parse(data: Uint8Array): LookupRequest {
    let o: unknown;
    try {
      o = parseRowJson(new TextDecoder().decode(data));
    } catch (e) {
      throw new LookupRefusal("bad-request", ErrorKind.DataInvalid, `a lookup request is JSON: ${ensureError(e).message}`);
    }
    const common = commonLookupRequest(o);
    if (common !== null) return common;
    const r = lookupRequestSchema.safeParse(o);
    if (!r.success) throw new LookupRefusal("bad-request", ErrorKind.DataInvalid, `bad lookup request: ${r.error.issues.map((i) => `${i.path.join(".") || "(request)"}: ${i.message}`).join("; ")}`);
    return r.data as LookupRequest;
  }

  /** The table's lookups, made on its first request: unknown tables and tables without a primary key are refused. */
  private tableFor(name: string): Promise<ServedTable> {
    let t = this.tables.get(name);
    if (t === undefined) {
      t = this.open(name);
      this.tables.set(name, t);
      // Not kept when it failed: the table may be created later.
      t.catch(() => {
        if (this.tables.get(name) === t) this.tables.delete(name);
      });
    }
    return t;
  }

  private async open(name: string): Promise<ServedTable> {
    let id;
    try {
      id = this.d.subjects.table(name);
    } catch (e) {
      throw new LookupRefusal("bad-request", ErrorKind.DataInvalid, ensureError(e).message);
    }
    if (!(await this.d.catalog.tableExists(id))) throw new LookupRefusal("unknown-table", ErrorKind.NotFound, `table ${name} does not exist`);
    const table = await this.d.catalog.getTable(id);
    if (!table.isPrimaryKeyTable) throw new LookupRefusal("not-primary-key", ErrorKind.DataInvalid, `${name} has no primary key: lookups need a primary-key table (consume or read an append table's rows)`);
    const lookups = new TableLookups(table);
    // Notifications first (the KV's last one included), then the warehouse: no snapshot between them is missed.
    const notifications = await subscribeSnapshots(this.d.nc, id, (n) => void lookups.noteSnapshot(n.snapshotId, n.offsets), {
      prefix: this.d.subjects.prefix,
      onError: (e) => this.d.log.warn("a snapshot notification could not be used for lookups", { table: name, error: e.message }),
    });
    try {
      await lookups.refresh();
    } catch (e) {
      notifications.stop();
      throw e;
    }
    this.served.set(name, lookups);
    return { lookups, notifications };
  }

  /** Drops what the service keeps for `table`: its next request opens it again. */
  private forget(table: string): void {
    const t = this.tables.get(table);
    if (t === undefined) return;
    this.tables.delete(table);
    this.served.delete(table);
    this.reported.delete(table);
    void t.then(
      (served) => {
        served.notifications.stop();
        served.lookups.stop();
      },
      () => undefined,
    );
  }

  private talliesOf(table: string): TableTallies {
    let t = this.tallies.get(table);
    if (t === undefined) this.tallies.set(table, (t = { requests: new Map(), keys: 0, cacheHits: 0, cacheMisses: 0 }));
    return t;
  }

  /** Hits and misses of the table's cache since the last report. */
  private reportCache(table: string): void {
    const t = this.served.get(table);
    if (t === undefined) return;
    let before = this.reported.get(table);
    if (before === undefined) this.reported.set(table, (before = { hits: 0, misses: 0 }));
    if (t.cache.hits === before.hits && t.cache.misses === before.misses) return;
    const tally = this.talliesOf(table);
    tally.cacheHits += t.cache.hits - before.hits;
    tally.cacheMisses += t.cache.misses - before.misses;
    before.hits = t.cache.hits;
    before.misses = t.cache.misses;
  }

  /** The reply that refuses a request for `e`. */
  private refusal(e: unknown): Refusal {
    const reader = this.d.nodeId;
    if (e instanceof LookupRefusal) return { ok: false, code: e.code, error: e.message, kind: e.kind, reader, ...e.details };
    const err = ensureError(e);
    if (!isLakeError(e)) {
      this.d.log.warn("lookup failed", { error: err.message });
      return { ok: false, code: "failed", error: err.message, kind: ErrorKind.Unexpected, reader };
    }
    const at = e.context["key"];
    const column = e.context["column"];
    if (e.kind === ErrorKind.DataInvalid && typeof at === "number") return { ok: false, code: "bad-key", error: e.message, kind: e.kind, reader, key: at, ...(typeof column === "string" ? { field: column } : {}) };
    const unknownColumn = e.kind === ErrorKind.DataInvalid ? /^no column '([^']+)'/.exec(e.message) : null;
    if (unknownColumn !== null) return { ok: false, code: "unknown-column", error: e.message, kind: e.kind, reader, field: unknownColumn[1]! };
    if (e.kind === ErrorKind.Unsupported) return { ok: false, code: "unsupported", error: e.message, kind: e.kind, reader };
    if (e.kind === ErrorKind.DataInvalid) return { ok: false, code: "bad-request", error: e.message, kind: e.kind, reader };
    return { ok: false, code: "failed", error: e.message, kind: e.kind, reader };
  }
}
