/**
 * A wire tap for integration tests: a NATS connection of its own that sees every message natslake sends — core
 * subscriptions on `<prefix>.>` (JetStream-published messages included), `$KV.>` (the prefix's KV buckets) and
 * `_INBOX.>` (replies and consume sessions) — and validates each against the published JSON Schemas (schemas/).
 *
 * A message is classified by its subject (actors/wire/contracts.ts); a subject under the prefix or its KV buckets
 * with no contract is a failure, so a new message type cannot slip through undescribed. Its NATS headers (KV entries
 * aside: those are the KV client's) must be ones its contract names, with values as `message-headers` describes them
 * (the W3C `traceparent` included). Inbox messages are
 * classified by the request that named the inbox: replies by the reply schema of the request's subject, a consume
 * session's messages by the `inbox` of its ConsumeOpen (headers validated; Arrow IPC chunks checked by their framing
 * and read with arrow-js; chunk numbers contiguous). Inbox traffic no natslake request asked for (JetStream API
 * answers) is not natslake's and is left alone, as are the copies JetStream consumers deliver of stored messages.
 */
import { connect, type Msg, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import { tableFromIPC } from "apache-arrow";
import { contractOf, type SubjectContract } from "../../actors/wire/contracts.ts";
import { unpackValue } from "../../actors/wire/row-batch.ts";
import { jsonView, wireSchema } from "../../actors/wire/schemas.ts";
import { wireValidator } from "./wire-validator.ts";

export interface WireTap {
  /**
   * Validated messages per schema name; also `commit-entry/<type>` per kind of commit entry, `consume-chunk` (Arrow
   * chunks with rows), `kv-delete` (KV delete markers) and `jetstream-delivery` (copies of stored messages, skipped).
   * Trace context: `<name>+traceparent` counts bodies that carry one (`<name>` the schema, or `commit-entry/<type>`),
   * `<schema>+traceparent-header` messages with the header; `message-headers` counts messages with any header.
   * `commit-entry/committable+beat` counts committables that carry the beat a flush tick cut them on.
   */
  counts: Map<string, number>;
  /** What did not validate (at most 50 kept, `failureCount` counts all). */
  failures: string[];
  failureCount: number;
  /** Rows in the Arrow IPC chunks consume sessions carried. */
  chunkRows: number;
  /** Waits until the tap has processed everything published before the call, then unsubscribes. */
  stop(): Promise<void>;
}

const dec = new TextDecoder();
const EOS = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];

function headerObject(h: MsgHdrs | undefined): Record<string, string> {
  const o: Record<string, string> = {};
  if (h === undefined) return o;
  for (const k of h.keys()) o[k] = h.get(k);
  return o;
}

/** A body as the schema's encoding says (msgpack in its JSON view). */
function decodeBody(data: Uint8Array, encoding: string): unknown {
  if (encoding === "msgpack") return jsonView(unpackValue(data));
  if (encoding === "json-or-msgpack") {
    const first = data.find((b) => b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d);
    return first === 0x7b || first === 0x5b ? JSON.parse(dec.decode(data)) : jsonView(unpackValue(data));
  }
  return JSON.parse(dec.decode(data));
}

export async function startWireTap(natsUrl: string, prefix = "lake"): Promise<WireTap> {
  const nc: NatsConnection = await connect({ servers: natsUrl, name: "wire-tap" });
  const v = wireValidator();
  const replies = new Map<string, string>();
  const inboxes = new Map<string, number>();
  const tap: WireTap = { counts: new Map(), failures: [], failureCount: 0, chunkRows: 0, stop: async () => undefined };
  const count = (name: string): void => void tap.counts.set(name, (tap.counts.get(name) ?? 0) + 1);
  const fail = (subject: string, why: string, data?: Uint8Array, headers?: MsgHdrs): void => {
    tap.failureCount++;
    if (tap.failures.length < 50) tap.failures.push(`${subject}: ${why}${data ? ` — body: ${dec.decode(data.subarray(0, 300))}` : ""}${headers ? ` — headers: ${JSON.stringify(headerObject(headers))}` : ""}`);
  };
  const validate = (subject: string, schema: string, value: unknown, data?: Uint8Array): boolean => {
    const err = v.check(schema, value);
    if (err !== null) {
      fail(subject, `not a valid ${schema}: ${err}`, data);
      return false;
    }
    count(schema);
    return true;
  };

  const onConsumeMessage = (m: Msg): void => {
    const headers = headerObject(m.headers);
    if (!validate(m.subject, "consume-headers", headers)) return;
    const type = headers["Natslake-Type"];
    if (type === "error") {
      validate(m.subject, "consume-error", decodeBody(m.data, "json"), m.data);
      return;
    }
    if (type === "heartbeat") {
      if (m.data.length !== 0) fail(m.subject, "a heartbeat with a body");
      return;
    }
    const chunk = Number(headers["Natslake-Chunk"]);
    const expected = (inboxes.get(m.subject) ?? 0) + 1;
    if (chunk !== expected) fail(m.subject, `chunk ${chunk} after chunk ${expected - 1}`);
    inboxes.set(m.subject, chunk);
    if (m.data.length === 0) {
      if (headers["Natslake-Last"] !== "1") fail(m.subject, "an empty chunk that is not a snapshot's last");
      return;
    }
    // One Arrow IPC stream: messages framed by the continuation marker, ending with the end-of-stream marker.
    const d = m.data;
    const framed = d.length >= 16 && d[0] === 0xff && d[1] === 0xff && d[2] === 0xff && d[3] === 0xff && EOS.every((b, i) => d[d.length - 8 + i] === b);
    if (!framed) return fail(m.subject, `chunk ${chunk} is not a framed Arrow IPC stream`);
    try {
      tap.chunkRows += tableFromIPC(d).numRows;
      count("consume-chunk");
    } catch (e) {
      fail(m.subject, `chunk ${chunk} does not read as Arrow IPC: ${(e as Error).message}`);
    }
  };

  /** The message's headers: only those its contract names, each as `message-headers` describes it. */
  const checkHeaders = (m: Msg, contract: SubjectContract): void => {
    const headers = headerObject(m.headers);
    const names = Object.keys(headers);
    if (names.length === 0) return;
    const unnamed = names.filter((h) => !(contract.headers ?? []).includes(h));
    if (unnamed.length > 0) return fail(m.subject, `header(s) ${unnamed.join(", ")} not named by the contract of ${contract.subject}`, undefined, m.headers);
    if (!validate(m.subject, "message-headers", headers)) return;
    if (headers["traceparent"] !== undefined) count(`${contract.schema}+traceparent-header`);
  };

  const onMessage = (m: Msg): void => {
    // A stream's consumer delivering a stored message to an inbox (a writer's reader, a KV watch): the server gives
    // it the subject it was published on, but it is a copy of a message the tap validated when it was published (or
    // only its headers). Deliveries are told apart by their `$JS.ACK.` reply subject.
    if (m.reply?.startsWith("$JS.ACK.")) {
      count("jetstream-delivery");
      return;
    }
    try {
      if (m.subject.startsWith("_INBOX.")) {
        const replySchema = replies.get(m.subject);
        if (replySchema !== undefined) {
          // "No responders" (a status message without a body) is the server's, not natslake's.
          if (m.data.length === 0 && m.headers?.code === 503) return;
          validate(m.subject, replySchema, decodeBody(m.data, "json"), m.data);
        } else if (inboxes.has(m.subject)) onConsumeMessage(m);
        return;
      }
      if (m.subject.startsWith("$KV.")) {
        if (!m.subject.startsWith(`$KV.${prefix}_`)) return;
        const op = m.headers?.get("KV-Operation");
        if (op === "DEL" || op === "PURGE") {
          if (m.data.length !== 0) fail(m.subject, `a KV ${op} marker with a body`);
          count("kv-delete");
          return;
        }
      }
      const contract = contractOf(m.subject, prefix);
      if (contract === null) return fail(m.subject, "no wire contract describes this subject", m.data);
      const body = decodeBody(m.data, wireSchema(contract.schema).encoding);
      if (!validate(m.subject, contract.schema, body, m.data)) return;
      // The commit stream carries three kinds: counted apart, so a test can ask for each.
      const kind = contract.schema === "commit-entry" ? `commit-entry/${(body as { type: string }).type}` : contract.schema;
      if (kind !== contract.schema) count(kind);
      if (typeof (body as { traceparent?: unknown }).traceparent === "string") count(`${kind}+traceparent`);
      // Committables a flush tick cut carry their beat (the leader gathers a beat's buckets into one round).
      if (typeof (body as { beatMillis?: unknown }).beatMillis === "number") count(`${kind}+beat`);
      if (contract.carrier !== "kv") checkHeaders(m, contract);
      if (contract.reply !== undefined && m.reply) replies.set(m.reply, contract.reply);
      if (contract.schema === "consume-open") inboxes.set((body as { inbox: string }).inbox, 0);
    } catch (e) {
      fail(m.subject, `could not be decoded: ${(e as Error).message}`, m.data, m.headers);
    }
  };

  const subs = [`${prefix}.>`, "$KV.>", "_INBOX.>"].map((s) => nc.subscribe(s, { callback: (err, m) => (err ? fail(s, err.message) : onMessage(m)) }));
  await nc.flush();
  tap.stop = async () => {
    await nc.flush();
    for (const s of subs) s.unsubscribe();
    await nc.close();
  };
  return tap;
}
