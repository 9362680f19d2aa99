/**
 * Which message travels on which subject: every subject natslake publishes to (and the KV keys other processes
 * read), with the schema of its messages (actors/wire/schemas.ts) and, for request-reply, of the replies. Published
 * as `schemas/subjects.json`. `contractOf` finds the contract of a concrete subject — the wire-contracts test
 * classifies every message it sees with it, and fails on a subject it does not know.
 *
 * Templates: `<p>` is the prefix (`lake` by default); `<bucket>` and `<seq>` are decimal numbers; other `<…>` are one
 * token.
 */

export type Carrier = "jetstream" | "core" | "kv";

export interface SubjectContract {
  subject: string;
  /** Schema name (schemas/<name>.schema.json) of the messages on the subject. */
  schema: string;
  /** Schema of the answers sent to the message's reply subject (request-reply). */
  reply?: string;
  carrier: Carrier;
  /** Who publishes. */
  from: string;
  /**
   * The NATS headers its messages may carry (values: schemas/message-headers.schema.json); none when absent. KV
   * entries carry only the KV client's own.
   */
  headers?: string[];
}

const c = (subject: string, schema: string, carrier: Carrier, from: string, reply?: string, headers?: string[]): SubjectContract => ({
  subject,
  schema,
  carrier,
  from,
  ...(reply !== undefined ? { reply } : {}),
  ...(headers !== undefined ? { headers } : {}),
});

export const SUBJECT_CONTRACTS: readonly SubjectContract[] = [
  c("<p>.in.<db>.<table>", "raw-rows", "jetstream", "any publisher (JSON or msgpack)", undefined, ["Nats-Msg-Id"]),
  c("<p>.in.<db>.<table>.<bucket>", "row-batch", "jetstream", "the producer client; the router", undefined, ["Nats-Msg-Id", "traceparent", "Natslake-Raw-Seq"]),
  c("<p>.in.<db>.<table>.stream-id", "stream-id-marker", "jetstream", "the first node that finds the stream without one", undefined, ["Nats-Expected-Last-Subject-Sequence"]),
  c("<p>.dlq.<db>.<table>", "dead-letter", "jetstream", "routers and writers", undefined, ["Nats-Msg-Id", "Natslake-Reason"]),
  c("<p>.commit.<db>.<table>", "commit-entry", "jetstream", "writers", undefined, ["Nats-Msg-Id"]),
  c("<p>.snap.<db>.<table>", "snapshot-notification", "core", "the table's leader", undefined, ["traceparent"]),
  c("<p>.ctl.reject.<db>.<table>.<writer>", "rejection", "core", "the table's leader"),
  c("<p>.ctl.admin", "admin-request", "core", "the CLI, services (answered by a reader node)", "admin-reply"),
  c("<p>.ctl.maint.<db>.<table>", "maintenance-request", "core", "the CLI with --nats (answered by the table's leader)", "maintenance-reply"),
  c("<p>.ctl.node.<node>", "node-control-request", "core", "`natslake node drain` (answered by that node only)", "node-control-reply"),
  c("<p>.ctl.stop-table.<node>", "stop-table-request", "core", "the node dropping a table, to every live member (answered by that node only)", "stop-table-reply"),
  c("<p>.ctl.consume.open.<db>.<table>", "consume-open", "core", "consumers (answered by a reader node; the request must name this table)", "consume-open-reply"),
  c("<p>.ctl.consume.open", "consume-open", "core", "consumers of earlier versions, for any table (answered by a reader node)", "consume-open-reply"),
  c("<p>.ctl.consume.s.<session>", "consume-control", "core", "consumers", "consume-control-reply"),
  c("<p>.ctl.lookup.<db>.<table>", "lookup-request", "core", "lookup clients (answered by a reader node; the request must name this table)", "lookup-reply"),
  c("$KV.<p>_tables.<db>.<table>", "table-meta", "kv", "nodes (from the table's schema)"),
  c("$KV.<p>_tables._natslake.cluster.warehouse", "warehouse-binding", "kv", "the cluster's first node, once"),
  c("$KV.<p>_members.<node>", "member-heartbeat", "kv", "every node, each heartbeat interval"),
  c("$KV.<p>_assign.<db>.<table>", "table-assignment", "kv", "the table's leader (coordinator)"),
  c("$KV.<p>_assign.released.<db>.<table>.<bucket>", "released", "kv", "writers handing a bucket over"),
  c("$KV.<p>_snap.<db>.<table>", "snapshot-notification", "kv", "the table's leader"),
  c("$KV.<p>_router.<db>.<table>", "router-progress", "kv", "the table's router (on its leader)"),
  c("$KV.<p>_attempts.<db>.<table>.<bucket>", "bucket-attempts", "kv", "the bucket's writer"),
  c("$KV.<p>_dlq_replays.<db>.<table>.<seq>", "dlq-replay-record", "kv", "`natslake dlq replay`, once a letter's rows were acknowledged"),
];

/**
 * Where a reader sends a consume session's messages: the `inbox` its ConsumeOpen named. Each message's headers
 * follow this schema; the body is an Arrow IPC stream (chunk; a snapshot's last chunk may be empty), empty
 * (heartbeat) or a ConsumeError (error).
 */
export const CONSUME_INBOX_CONTRACT = { subject: "<the inbox of ConsumeOpen>", headers: "consume-headers", errorBody: "consume-error", chunkBody: "Arrow IPC stream" } as const;

type Token = { literal: string } | { digits: true } | { any: true };

function compile(template: string, prefix: string): Token[] {
  return template
    .replaceAll("<p>", prefix)
    .split(".")
    .map((t): Token => (t === "<bucket>" || t === "<seq>" ? { digits: true } : /^<[a-z]+>$/.test(t) ? { any: true } : { literal: t }));
}

const cache = new Map<string, Array<{ tokens: Token[]; contract: SubjectContract }>>();

/** The contract of `subject` for deployments with prefix `prefix`, or null when natslake defines none. */
export function contractOf(subject: string, prefix: string): SubjectContract | null {
  let compiled = cache.get(prefix);
  if (compiled === undefined) cache.set(prefix, (compiled = SUBJECT_CONTRACTS.map((contract) => ({ tokens: compile(contract.subject, prefix), contract }))));
  const parts = subject.split(".");
  for (const { tokens, contract } of compiled) {
    if (tokens.length !== parts.length) continue;
    const ok = tokens.every((t, i) => {
      const p = parts[i]!;
      if ("literal" in t) return p === t.literal;
      if ("digits" in t) return /^\d+$/.test(p);
      return p.length > 0;
    });
    if (ok) return contract;
  }
  return null;
}
