/**
 * The lookup client (`natslake/lookup`): rows of a primary-key table by key, answered by the cluster's reader nodes
 * over NATS (protocol: actors/wire/lookup.ts) — no access to the warehouse needed.
 *
 *   const lookups = await createLookupClient({ servers: "nats://127.0.0.1:4222" });
 *   const { rows, snapshotId } = await lookups.get("shop.users", [{ id: 42 }, { id: 43 }]);
 *   await producer.upsert([{ id: 44, name: "new" }]);
 *   await lookups.get("shop.users", [{ id: 44 }], { readYourWrites: producer.token() });   // sees the upsert
 *   await lookups.close();
 *
 * - `rows` holds one entry per key, in order: the row (values as `natslake get` prints them: JSON numbers, text for
 *   BIGINT beyond 2^53, DECIMAL, dates and timestamps, base64 for bytes), or null for a key never written or deleted.
 * - Which snapshot: the newest the answering reader holds (refreshed by every commit's notification); `snapshot`
 *   for exactly one; `atLeastSnapshot` and `readYourWrites` (a producer's visibility token: the rows it had
 *   acknowledged) for one at least that new — the reader waits up to `waitMs` for it, then the call rejects with
 *   code `not-visible`.
 * - A reader that does not answer (it died with the request, or none is subscribed: "no responders") is not the
 *   end: the request — a read, safe to repeat — goes again, to another reader of the queue group, up to `retries`
 *   times. A refusal (unknown table, bad key, …) is not retried: it rejects with a `LookupError` naming its `code`.
 */
import { RequestError, TimeoutError, type NatsConnection } from "@nats-io/transport-node";
import { stringify as stringifyLossless } from "lossless-json";
import { dataInvalid, ErrorKind, LakeError } from "../src/errors.ts";
import type { LookupErrorCode, LookupReply, LookupRequest } from "../actors/wire/lookup.ts";
import { DEFAULT_LOOKUP_WAIT_MS } from "../actors/wire/lookup.ts";
import { connectNats } from "./nats/connect.ts";
import type { NatsAuthSettings } from "./nats/connect-options.ts";
import { DEFAULT_PREFIX, Subjects } from "./nats/subjects.ts";

export type { LookupErrorCode } from "../actors/wire/lookup.ts";

export interface LookupClientOptions {
  /** A connection to use (the caller closes it); else one is opened to `servers` with `auth`. */
  nc?: NatsConnection;
  /** NATS URL(s) when no `nc` is given. */
  servers?: string | string[];
  /** Credentials and TLS (default: the NATSLAKE_NATS_* environment), as every natslake client takes them. */
  auth?: NatsAuthSettings;
  /** The cluster's subject prefix (default `lake`). */
  prefix?: string;
  /** Defaults of every `get` (each may override them). */
  defaults?: Pick<GetOptions, "timeoutMs" | "retries" | "waitMs">;
}

export interface GetOptions {
  /** The columns of the rows returned, in this order (default all). */
  columns?: string[];
  /** Answer from exactly this snapshot. */
  snapshot?: number;
  /** Answer from this snapshot or a newer one. */
  atLeastSnapshot?: number;
  /** Read-your-writes: a producer's `token()`; the answer comes from a snapshot that holds what it had acknowledged. */
  readYourWrites?: { table: string; offsets: Record<string, number> };
  /** How long a reader may wait for the snapshot asked for (default 5 s). */
  waitMs?: number;
  /** How long one reader has to answer, beyond that wait (default 2 s); then the request goes to another. */
  timeoutMs?: number;
  /** Attempts after the first when a reader does not answer (default 2). */
  retries?: number;
}

export interface LookupResult {
  /** The snapshot that answered (null: the table has none yet). */
  snapshotId: number | null;
  /** One per key, in order: the row, or null. */
  rows: Array<Record<string, unknown> | null>;
  /** The reader node that answered. */
  reader: string;
  /** Requests sent for this answer (more than 1: a reader did not answer and another did). */
  attempts: number;
}

/** A lookup a reader refused: `code` says why (actors/wire/lookup.ts). */
export class LookupError extends LakeError {
  constructor(
    readonly code: LookupErrorCode,
    kind: ErrorKind,
    message: string,
    context: Record<string, unknown>,
  ) {
    super(kind, message, { context, retryable: code === "not-visible" });
  }
}

/** Between attempts while no reader is subscribed ("no responders": a reader restarting). */
const NO_READER_RETRY_MS = 200;
const DEFAULT_TIMEOUT_MS = 2000;
const DEFAULT_RETRIES = 2;

const dec = new TextDecoder();
const enc = new TextEncoder();

export class LookupClient {
  private readonly subjects: Subjects;

  constructor(
    readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly o: LookupClientOptions,
  ) {
    this.subjects = new Subjects(o.prefix ?? DEFAULT_PREFIX);
  }

  /** The rows of `keys` (each names every primary-key field) of `table` (`db.table`). */
  async get(table: string, keys: ReadonlyArray<Record<string, unknown>>, opts: GetOptions = {}): Promise<LookupResult> {
    const subject = this.subjects.lookup(this.subjects.table(table));
    if (opts.readYourWrites !== undefined && opts.readYourWrites.table !== table) throw dataInvalid(`readYourWrites: the token is of table ${opts.readYourWrites.table}, not ${table}`);
    if (opts.snapshot !== undefined && (opts.atLeastSnapshot !== undefined || opts.readYourWrites !== undefined)) throw dataInvalid("snapshot names one snapshot: give it without atLeastSnapshot and readYourWrites");
    const d = this.o.defaults ?? {};
    const waitMs = opts.waitMs ?? d.waitMs ?? DEFAULT_LOOKUP_WAIT_MS;
    const req: LookupRequest = {
      type: "lookup",
      v: 1,
      table,
      keys: [...keys],
      ...(opts.columns !== undefined ? { columns: opts.columns } : {}),
      ...(opts.snapshot !== undefined ? { snapshot: opts.snapshot } : {}),
      ...(opts.atLeastSnapshot !== undefined ? { minSnapshot: opts.atLeastSnapshot } : {}),
      ...(opts.readYourWrites !== undefined && Object.keys(opts.readYourWrites.offsets).length > 0 ? { visibleAfter: opts.readYourWrites.offsets } : {}),
      waitMs,
    };
    // Keys may hold bigints: written as their digits.
    const payload = enc.encode(stringifyLossless(req) ?? "");
    const waits = req.minSnapshot !== undefined || req.visibleAfter !== undefined;
    const timeout = (waits ? waitMs : 0) + (opts.timeoutMs ?? d.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    const attempts = 1 + (opts.retries ?? d.retries ?? DEFAULT_RETRIES);
    let last: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let reply: LookupReply;
      try {
        const m = await this.nc.request(subject, payload, { timeout });
        reply = JSON.parse(dec.decode(m.data)) as LookupReply;
      } catch (e) {
        // No reader answered: it died with the request, or none is subscribed. The request goes again (to another).
        const noResponders = e instanceof RequestError && e.isNoResponders();
        if (!noResponders && !(e instanceof TimeoutError) && !(e instanceof RequestError && e.cause instanceof TimeoutError)) throw e;
        last = e;
        if (noResponders && attempt < attempts) await new Promise((r) => setTimeout(r, NO_READER_RETRY_MS));
        continue;
      }
      if (!reply.ok) {
        const context = { code: reply.code, reader: reply.reader, ...(reply.key !== undefined ? { key: reply.key } : {}), ...(reply.field !== undefined ? { field: reply.field } : {}), ...(reply.earliest !== undefined ? { earliest: reply.earliest } : {}) };
        throw new LookupError(reply.code, reply.kind as ErrorKind, reply.error, context);
      }
      return { snapshotId: reply.snapshotId, rows: reply.rows, reader: reply.reader, attempts: attempt };
    }
    throw new LakeError(ErrorKind.Io, `no reader node answered the lookup of ${table} (${attempts} attempts, ${timeout} ms each; is a node with the reader role running?): ${last instanceof Error ? last.message : String(last)}`, { cause: last, retryable: true });
  }

  /** Closes the connection if the client opened it. */
  async close(): Promise<void> {
    if (this.ownsConnection) await this.nc.close();
  }
}

export async function createLookupClient(opts: LookupClientOptions): Promise<LookupClient> {
  if (opts.nc !== undefined) return new LookupClient(opts.nc, false, opts);
  if (opts.servers === undefined) throw dataInvalid("createLookupClient needs `servers` or `nc`");
  // Without async traces nats.js makes no Error per request (a RequestError and a TimeoutError, each capturing a stack,
  // measured at 15% of the client's CPU per single-key lookup); a failed lookup still says why, as a LakeError.
  const nc = await connectNats([opts.servers].flat().join(","), opts.auth ?? {}, { name: "natslake-lookup", noAsyncTraces: true });
  return new LookupClient(nc, true, opts);
}
