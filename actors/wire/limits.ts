/**
 * The size rule for every message the cluster sends whose size depends on the data (committables, routed row
 * batches, dead letters): NATS refuses a message larger than the server's `max_payload` (1 MiB by default; the
 * client learns it from the server's INFO), headers included. A refused committable or routed batch would be
 * retried forever — a stalled bucket (issue 9) — so each such message is kept under the limit before it is sent.
 */
import type { DeadLetter } from "./messages.ts";
import { packValue } from "./row-batch.ts";

/** Room left for headers (`Nats-Msg-Id`, `Natslake-Raw-Seq`, the dead-letter reason) and framing. */
export const HEADER_ROOM = 1024;

/** The largest payload the cluster puts in one message, given the server's `max_payload`. */
export const payloadLimit = (maxPayload: number): number => Math.max(1024, maxPayload - HEADER_ROOM);

/** How much of an oversized dead letter's original is kept (the reason, position and size say the rest). */
const ORIGINAL_HEAD = 4096;

const enc = new TextEncoder();

/**
 * A dead letter's JSON, cut to fit `limit` bytes: a letter whose original (say a 1 MB row) would make it too large
 * carries the first ORIGINAL_HEAD characters of the original's JSON and its full size instead. A dead letter that
 * cannot be published would fail its writer's (or router's) batch again and again; the row itself stays in the
 * ingest stream until it is committed, and its position (`streamSeq`, `rowIndex`) finds it.
 */
export function fitDeadLetter(l: DeadLetter, limit: number): Uint8Array {
  const whole = enc.encode(JSON.stringify(l));
  if (whole.length <= limit) return whole;
  const original = JSON.stringify(l.original) ?? "null";
  const cut: DeadLetter = { ...l, original: original.slice(0, ORIGINAL_HEAD), originalBytes: enc.encode(original).length };
  const bytes = enc.encode(JSON.stringify(cut));
  // A reason longer than the limit (never produced here, but a letter must never fail): keep only its start.
  return bytes.length <= limit ? bytes : enc.encode(JSON.stringify({ ...cut, reason: l.reason.slice(0, 1000) }));
}

/**
 * An upper bound of the msgpack encoding size of a decoded input value (what the router re-encodes: JSON or msgpack
 * values, binaries, bigints), without encoding it: strings by their exact UTF-8 length plus the largest header.
 * Anything else is encoded to be measured.
 */
export function packedSizeBound(v: unknown): number {
  switch (typeof v) {
    case "string":
      return 5 + Buffer.byteLength(v, "utf8");
    case "number":
    case "bigint":
      return 9;
    case "boolean":
    case "undefined":
      return 1;
    case "object": {
      if (v === null) return 1;
      if (v instanceof Uint8Array) return 5 + v.length;
      if (Array.isArray(v)) {
        let n = 5;
        for (const x of v) n += packedSizeBound(x);
        return n;
      }
      if (Object.getPrototypeOf(v) === Object.prototype) {
        let n = 5;
        for (const [k, x] of Object.entries(v)) n += 5 + Buffer.byteLength(k, "utf8") + packedSizeBound(x);
        return n;
      }
      return packValue(v).length;
    }
    default:
      return packValue(v).length;
  }
}
