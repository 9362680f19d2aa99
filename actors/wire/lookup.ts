/**
 * The lookup protocol: rows of a primary-key table looked up by key over NATS, answered by reader nodes from their
 * decoded-file caches (cluster/lookup-service.ts; the client is cluster/lookup-client.ts, `natslake/lookup`).
 *
 * One request-reply on `<p>.ctl.lookup.<db>.<table>` (readers answer in a queue group, so one does): a
 * `LookupRequest` → a `LookupReply`. Both are JSON, like every other request-reply of the cluster (admin, consume-open,
 * maintenance): any language with a NATS client sends one with its JSON library (examples/python/lookup.py). Values
 * are JSON as `natslake get` prints them (BIGINT beyond 2^53 as text, DECIMAL and timestamps as text, bytes as
 * base64); a key's values may also be given in any form the column's writes accept (text for numbers included), and
 * integers are read without rounding.
 *
 * Which snapshot answers:
 * - `snapshot: N` — exactly snapshot N (in its own schema); `snapshot-expired` when it was expired, `snapshot-not-found`
 *   when it does not exist yet.
 * - else the newest snapshot the reader holds — refreshed on every snapshot notification — and at least
 *   `minSnapshot`, and at least the first snapshot whose committed offsets reach `visibleAfter` (a producer's
 *   visibility token: read-your-writes). The reader waits for such a snapshot up to `waitMs`, then answers
 *   `not-visible`.
 * The reply names the snapshot that answered; `rows` holds one entry per key in request order: the merged row with
 * the columns asked for, or null (never written, or deleted).
 */
import { z } from "zod";

/** How long a reader waits for the snapshot a request needs, unless the request says (`waitMs`). */
export const DEFAULT_LOOKUP_WAIT_MS = 5000;
/** The longest wait a request may ask for. */
export const MAX_LOOKUP_WAIT_MS = 60_000;
/** Keys one request may name at most (a reply must fit the server's max_payload too). */
export const MAX_LOOKUP_KEYS = 10_000;

/** The kinds of refusal a reply names (`code`), beside the error kind (`kind`). */
export const LOOKUP_ERROR_CODES = ["bad-request", "unknown-table", "not-primary-key", "bad-key", "unknown-column", "snapshot-expired", "snapshot-not-found", "not-visible", "unsupported", "failed"] as const;
export type LookupErrorCode = (typeof LOOKUP_ERROR_CODES)[number];

/** client → reader (`<p>.ctl.lookup.<db>.<table>`, request-reply); checked by `lookupRequestSchema`. */
export interface LookupRequest {
  type: "lookup";
  v: 1;
  /** `db.table`; must be the table of the subject. */
  table: string;
  /** Each key names every primary-key field: `{ "id": 42 }`, `{ "region": "eu", "id": "9007199254740993" }`. */
  keys: Array<Record<string, unknown>>;
  /** The columns of the rows returned, in this order (default all). */
  columns?: string[];
  /** Answer from exactly this snapshot. */
  snapshot?: number;
  /** Answer from this snapshot or a newer one, waiting for it up to `waitMs`. */
  minSnapshot?: number;
  /** A producer's visibility token's offsets (bucket → stream sequence): answer from a snapshot that commits them. */
  visibleAfter?: Record<string, number>;
  /** How long the reader may wait for the snapshot asked for (default DEFAULT_LOOKUP_WAIT_MS). */
  waitMs?: number;
}

export type LookupReply =
  | { ok: true; table: string; snapshotId: number | null; rows: Array<Record<string, unknown> | null>; reader: string }
  | { ok: false; code: LookupErrorCode; error: string; kind: string; reader: string; key?: number; field?: string; earliest?: number };

const snapshotId = z.number().int().positive();

export const lookupRequestSchema = z
  .strictObject({
    type: z.literal("lookup"),
    v: z.literal(1),
    table: z.string().min(1).describe("the table, `<db>.<table>`: the one the subject names"),
    keys: z
      .array(z.record(z.string(), z.unknown()))
      .min(1)
      .max(MAX_LOOKUP_KEYS)
      .describe("the keys, each an object of every primary-key field; values as `natslake get` prints them, or any form the column's writes accept"),
    columns: z.array(z.string().min(1)).min(1).optional().describe("the columns of the rows returned, in this order (default: all)"),
    snapshot: snapshotId.optional().describe("answer from exactly this snapshot (time travel)"),
    minSnapshot: snapshotId.optional().describe("answer from this snapshot or a newer one, waiting for it up to waitMs"),
    visibleAfter: z
      .record(z.string().regex(/^\d+$/, "a bucket number"), z.number().int().nonnegative())
      .optional()
      .describe("read-your-writes: a producer's visibility token's offsets (bucket → stream sequence); the answering snapshot commits them"),
    waitMs: z.number().int().min(0).max(MAX_LOOKUP_WAIT_MS).optional().describe(`how long the reader may wait for the snapshot asked for (default ${DEFAULT_LOOKUP_WAIT_MS})`),
  })
  .refine((r) => r.snapshot === undefined || (r.minSnapshot === undefined && r.visibleAfter === undefined), { message: "snapshot names one snapshot: give it without minSnapshot and visibleAfter" })
  .meta({
    title: "LookupRequest",
    description:
      "Rows of a primary-key table by key (JSON), on `<p>.ctl.lookup.<db>.<table>`: one reader node answers with a LookupReply, from the newest snapshot it holds (at least minSnapshot, and one that commits visibleAfter) or from exactly `snapshot`. The reply subject must be an inbox (`_INBOX…`).",
  });

export const lookupReplySchema = z
  .union([
    z.strictObject({
      ok: z.literal(true),
      table: z.string(),
      snapshotId: snapshotId.nullable().describe("the snapshot that answered (null: the table has none yet, every row is null)"),
      rows: z.array(z.record(z.string(), z.unknown()).nullable()).describe("one per key, in request order: the row (the columns asked for, values as `natslake get` prints them) or null"),
      reader: z.string().min(1).describe("the reader node that answered"),
    }),
    z.strictObject({
      ok: z.literal(false),
      code: z.enum(LOOKUP_ERROR_CODES).describe("what was refused: bad-request, unknown-table, not-primary-key, bad-key, unknown-column, snapshot-expired, snapshot-not-found, not-visible (the wait ran out), unsupported, failed"),
      error: z.string(),
      kind: z.string().describe("the error kind (DataInvalid, NotFound, …)"),
      reader: z.string().min(1),
      key: z.number().int().nonnegative().optional().describe("bad-key: the key's index in the request"),
      field: z.string().optional().describe("bad-key: the field that is missing, extra or of a value its column does not take; unknown-column: the column"),
      earliest: snapshotId.optional().describe("snapshot-expired: the earliest snapshot still there"),
    }),
  ])
  .meta({ title: "LookupReply", description: "A reader's answer to a LookupRequest (JSON): the rows in request order and the snapshot that answered, or why it was refused." });
