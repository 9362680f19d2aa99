/**
 * The consume protocol: a consumer reads a table's rows over NATS from a reader node, with no access to the
 * warehouse. Every control message is JSON; rows travel as Arrow IPC. Written so a consumer can be written in any
 * language with a NATS client and an Arrow library (examples/python/consume.py does it in Python).
 *
 * 1. Open: request-reply on `<p>.ctl.consume.open.<db>.<table>` (readers answer in a queue group, so one does):
 *    `ConsumeOpen` → `ConsumeOpenReply`. The consumer names an inbox it subscribed to; the reader sends everything
 *    for the session there, and listens for the consumer's control messages on `<p>.ctl.consume.s.<session>`.
 * 2. Rows: each message on the inbox carries the header `Natslake-Type`:
 *    - `chunk`: the body is one Arrow IPC *stream* (schema message, one or more record batches, end-of-stream
 *      marker: read with `pyarrow.ipc.open_stream(body).read_all()`, arrow-js `tableFromIPC`), or empty. Headers:
 *      `Natslake-Chunk` (the session's chunk number, from 1, contiguous), `Natslake-Snapshot`, `Natslake-Kind`
 *      (`full` | `delta`). A snapshot's chunks are consecutive and its last one carries `Natslake-Last: 1` (with
 *      rows, or an empty body; a snapshot with no rows left after the projection and partition filter is one empty
 *      chunk marked last). Rows come in the table's read order (splits in plan order, a bucket in write order), so
 *      a snapshot sent again — by another session, possibly cut into other chunks — holds the same rows in the same
 *      order. A chunk is about 768 KiB at most and never exceeds the server's max_payload.
 *    - `heartbeat`: no body, sent every HEARTBEAT_MS while the reader has nothing else to send, with
 *      `Natslake-Sent`: the number of the last chunk sent. A consumer that has not received that chunk lost one (core
 *      NATS drops messages to a client that falls too far behind) and opens a new session — the reader, waiting for
 *      credit for a chunk the consumer never got, would otherwise wait forever.
 *    - `error`: the body is `{ "error": string, "kind": string }`; the session is over (e.g. its start was expired).
 * 3. Flow control: the reader sends chunk n only while n ≤ credited + window (`window` from the open request) and
 *    the bodies of the chunks sent and not credited total less than window × WINDOW_BYTES_PER_CHUNK (so at most
 *    that and one chunk are in flight). The consumer grants credit with `{"type":"credit","through":n}` once it has
 *    taken chunk n: for each chunk, or for several at once as long as it never sits on a credit of half the window
 *    (in chunks or bytes) with nothing left to take (the natslake client: once its caller took the rows of half a
 *    window, in chunks or in bytes); a
 *    consumer that grants nothing stalls its session only: the reader holds at most a window in flight and another
 *    read ahead for it, and rows it shares with other sessions are dropped from its memory once those moved on (the
 *    stalled session reads them again from the table when it resumes). The byte bound keeps what a connection of
 *    many consumers has pending at the server under its slow-consumer limit (nats-server's `max_pending`, 64 MB).
 * 4. Progress: `{"type":"ack","snapshotId":s}` records that every snapshot up to s was processed (with a consumer id:
 *    Paimon's consumer file `nextSnapshot = s + 1`, so a new session — on any reader — resumes after it). Sent as a
 *    request, it is answered `{"ok":true}` once recorded (`{"ok":false,"error":…}` when it could not be). An ack is
 *    idempotent: a consumer whose session went away with an ack unanswered (its reader died: no answer, or "no
 *    responders" once the session's subscription is gone) sends the same ack again on its next session (the natslake
 *    client does; it never sends one older than an ack already answered, which would move the progress back).
 * 5. Liveness: the consumer sends credit or `{"type":"ping"}` at least every HEARTBEAT_MS; a session silent for
 *    SESSION_TIMEOUT_MS is closed by the reader. A consumer that hears nothing (no chunk, no heartbeat) for
 *    READER_TIMEOUT_MS opens a new session on another reader, from where it is (the natslake client: after the rows
 *    it received, dropping what the new session sends again; with a consumer id the reader starts at the consumer
 *    file's progress, at or before that). `{"type":"close"}` ends a session at once.
 */
import { z } from "zod";
import { dataInvalid } from "../../src/errors.ts";

export const CONSUME_HEADER = {
  type: "Natslake-Type",
  chunk: "Natslake-Chunk",
  snapshot: "Natslake-Snapshot",
  kind: "Natslake-Kind",
  last: "Natslake-Last",
  /** On a heartbeat: the number of the last chunk the session sent (0: none yet). */
  sent: "Natslake-Sent",
} as const;

/**
 * The bytes of chunk bodies a window allows per chunk: a window of 8 has less than 1 MiB uncredited before the reader
 * sends its next chunk, so at most ~2 MiB in flight, whatever the size of its chunks (a catch-up's are large, a delta
 * of a few thousand rows small).
 */
export const WINDOW_BYTES_PER_CHUNK = 128 * 1024;

/** A reader sends a heartbeat after this long without sending anything; a consumer pings as often. */
export const HEARTBEAT_MS = 1000;
/** A reader closes a session it heard nothing from for this long. */
export const SESSION_TIMEOUT_MS = 10_000;
/** A consumer gives up on a reader it heard nothing from for this long, and opens a session elsewhere. */
export const READER_TIMEOUT_MS = 4000;

/** consumer → reader (`<p>.ctl.consume.open.<db>.<table>`, request-reply); checked by `consumeOpenSchema`. */
export interface ConsumeOpen {
  type: "consume-open";
  v: 1;
  /** `db.table`. */
  table: string;
  /** Where the reader sends chunks and heartbeats (the consumer subscribed to it first). */
  inbox: string;
  /** A scan mode as `natslake tail --from` takes it: latest (the default), full, snapshot:N, snapshot-full:N, time:T. */
  from?: string;
  /** Resume from, and record progress in, Paimon's consumer file of this id (overrides `from` when it has progress). */
  consumerId?: string;
  /** Columns to send, in this order (default all). */
  projection?: string[];
  /** Only this partition: `{ key: value }` as the CLI's `--partition k=v` takes values. */
  partition?: Record<string, string>;
  /** Chunks in flight at most (default 8, at most 256). */
  window?: number;
}

/** The reader's check of a ConsumeOpen (its input type is ConsumeOpen; the output has the defaults filled in). */
export const consumeOpenSchema = z
  .strictObject({
    type: z.literal("consume-open"),
    v: z.literal(1),
    table: z.string().min(1),
    inbox: z.string().min(1).regex(/^[^\s*>]+$/, "an inbox is a subject without wildcards or spaces"),
    from: z.string().min(1).default("latest"),
    consumerId: z.string().optional(),
    projection: z.array(z.string().min(1)).min(1).optional(),
    partition: z.record(z.string(), z.string()).optional(),
    window: z.number().int().min(1).max(256).default(8),
  })
  .meta({
    title: "ConsumeOpen",
    description: "A consumer asks for a session (JSON) on `<p>.ctl.consume.open.<db>.<table>` (the table it names; consumers of earlier versions: `<p>.ctl.consume.open`); one reader node answers with ConsumeOpenReply, then sends to `inbox`, which must be an inbox (`_INBOX…`).",
  });

export type ConsumeOpenReply = { ok: true; session: string; reader: string } | { ok: false; error: string; kind: string };

/** consumer → reader, on `<p>.ctl.consume.s.<session>`. */
export type ConsumeControl = { type: "credit"; through: number } | { type: "ack"; snapshotId: number } | { type: "ping" } | { type: "close" };

/** Parses a control message; throws DataInvalid with the reason when it is not one. */
export function parseConsumeControl(data: Uint8Array): ConsumeControl {
  let o: Record<string, unknown> | null;
  try {
    o = JSON.parse(new TextDecoder().decode(data)) as Record<string, unknown> | null;
  } catch (e) {
    throw dataInvalid(`a consume control message is JSON: ${(e as Error).message}`);
  }
  const type = o?.["type"];
  if (type === "credit" && Number.isSafeInteger(o?.["through"])) return { type, through: o!["through"] as number };
  if (type === "ack" && Number.isSafeInteger(o?.["snapshotId"])) return { type, snapshotId: o!["snapshotId"] as number };
  if (type === "ping" || type === "close") return { type };
  // The type alone is quoted: the message may be anything (JSON.stringify of a deeply nested one overflows the stack).
  throw dataInvalid(`not a consume control message (type ${typeof type === "string" ? JSON.stringify(type.slice(0, 40)) : typeof type}; one of credit with through, ack with snapshotId, ping, close)`);
}
