/**
 * Every NATS name natslake uses, in one place: subjects, streams, KV buckets and keys. The prefix (default `lake`)
 * is configurable so several deployments can share one NATS account.
 *
 * | subject / name                          | what                                                        |
 * | --------------------------------------- | ----------------------------------------------------------- |
 * | `<p>.in.<db>.<table>.<bucket>`          | row batches routed to a bucket (producer client, router)    |
 * | `<p>.in.<db>.<table>`                   | raw rows from publishers that do not route (JSON / msgpack) |
 * | `<p>.in.<db>.<table>.stream-id`         | the ingest stream's identity marker (its first message)     |
 * | `<p>.dlq.<db>.<table>`                  | rejected rows with the reason and the original payload      |
 * | `<p>.commit.<db>.<table>`               | committables, writer → committer (readers read along)       |
 * | `<p>.snap.<db>.<table>`                 | snapshot notifications (core NATS)                          |
 * | `<p>.ctl.reject.<db>.<table>.<writer>`  | committable rejections, committer → writer                  |
 * | `<p>.ctl.admin`                         | admin request-reply (create table, …)                       |
 * | `<p>.ctl.maint.<db>.<table>`            | maintenance request-reply, served by the table's leader only |
 * | `<p>.ctl.consume.open.<db>.<table>`     | consume sessions opened, request-reply (readers, queue group) |
 * | `<p>.ctl.consume.open`                  | the same for any table, from consumers of earlier versions  |
 * | `<p>.ctl.consume.s.<session>`           | a consume session's control: credit, ack, ping, close       |
 * | `<p>.ctl.lookup.<db>.<table>`           | rows by key, request-reply (readers, queue group)           |
 * | `<p>.ctl.node.<nodeId>`                 | node control request-reply (drain), answered by that node   |
 * | `<p>.ctl.stop-table.<nodeId>`           | stop serving a table being dropped, answered by that node   |
 * | stream `<P>_IN_<db>_<table>`            | ingest: the bare and the bucket subjects                    |
 * | stream `<P>_COMMIT_<db>_<table>`        | committables                                                |
 * | stream `<P>_DLQ`                        | every table's dead letters                                  |
 * | KV `<p>_tables`, key `<db>.<table>`     | table metadata for producers (schema, buckets, bucket key)  |
 * | KV `<p>_members`, key `<nodeId>`        | membership heartbeats                                       |
 * | KV `<p>_assign`, key `<db>.<table>`     | bucket assignments with owner epochs                        |
 * | KV `<p>_snap`, key `<db>.<table>`       | the last snapshot notification (for late subscribers)       |
 * | KV `<p>_router`, key `<db>.<table>`     | router progress (last raw stream sequence routed)           |
 * | KV `<p>_dlq_replays`, key `<db>.<table>.<seq>` | dead letters replayed (`natslake dlq replay`), 7 days |
 *
 * Names are checked by src/names.ts (a new database or table takes only `a-z`, `0-9`, `_` and `-`); each name that
 * becomes a token is checked here again, by the wider rule tables made before those rules are served with: letters,
 * digits, `_` and `-` — never a `.` (the token count would change), a wildcard (`*`, `>`) or whitespace.
 */
import { dataInvalid } from "../../src/errors.ts";
import { showName } from "../../src/names.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import type { Identifier } from "../../src/table/table.ts";

export const DEFAULT_PREFIX = "lake";

const TOKEN = /^[A-Za-z0-9_-]+$/;

export function checkSubjectToken(kind: string, v: string): void {
  if (!TOKEN.test(v)) throw dataInvalid(`${kind} '${showName(v)}' cannot be used in a NATS subject: use letters, digits, '_' and '-' only`);
}

export class Subjects {
  constructor(readonly prefix: string = DEFAULT_PREFIX) {
    checkSubjectToken("subject prefix", prefix);
  }

  /**
   * `db.table` as the cluster names it: parsed (src/table/catalog.ts) and both names checked as subject tokens — what
   * clients and admin requests call before anything is sent or built from the name.
   */
  table(text: string): Identifier {
    const id = parseIdentifier(text);
    this.t(id);
    return id;
  }

  private t(id: Identifier): string {
    checkSubjectToken("database name", id.database);
    checkSubjectToken("table name", id.table);
    return `${id.database}.${id.table}`;
  }

  ingestRaw(id: Identifier): string {
    return `${this.prefix}.in.${this.t(id)}`;
  }
  ingestBucket(id: Identifier, bucket: number): string {
    return `${this.prefix}.in.${this.t(id)}.${bucket}`;
  }
  /**
   * The ingest stream's identity marker: one message, written once into each new stream (src/commit/stream-identity.ts).
   * Covered by the stream's `<table>.*` subject; no bucket is named so, and purges filter by bucket or raw subject.
   */
  ingestStreamId(id: Identifier): string {
    return `${this.prefix}.in.${this.t(id)}.stream-id`;
  }
  ingestAllBuckets(id: Identifier): string {
    return `${this.prefix}.in.${this.t(id)}.*`;
  }
  dlq(id: Identifier): string {
    return `${this.prefix}.dlq.${this.t(id)}`;
  }
  commit(id: Identifier): string {
    return `${this.prefix}.commit.${this.t(id)}`;
  }
  snapshots(id: Identifier): string {
    return `${this.prefix}.snap.${this.t(id)}`;
  }
  reject(id: Identifier, writerId: string): string {
    checkSubjectToken("writer id", writerId);
    return `${this.prefix}.ctl.reject.${this.t(id)}.${writerId}`;
  }
  get admin(): string {
    return `${this.prefix}.ctl.admin`;
  }
  /**
   * Consume sessions of any table were opened here before `consumeOpenTable` (actors/wire/consume.ts); readers still
   * answer it for consumers of earlier versions.
   */
  get consumeOpen(): string {
    return `${this.prefix}.ctl.consume.open`;
  }
  /**
   * Consume sessions of one table are opened here: readers answer in a queue group and check that the request names
   * this table, so NATS permissions can let a consumer open sessions on its own tables only.
   */
  consumeOpenTable(id: Identifier): string {
    return `${this.prefix}.ctl.consume.open.${this.t(id)}`;
  }
  /** Every table's consume-open subject (readers subscribe to it). */
  get consumeOpenAnyTable(): string {
    return `${this.prefix}.ctl.consume.open.*.*`;
  }
  /**
   * Lookups of one table's rows by key (actors/wire/lookup.ts): readers answer in a queue group and check that the
   * request names this table, so NATS permissions can let a client look up its own tables only.
   */
  lookup(id: Identifier): string {
    return `${this.prefix}.ctl.lookup.${this.t(id)}`;
  }
  /** Every table's lookup subject (readers subscribe to it). */
  get lookupAnyTable(): string {
    return `${this.prefix}.ctl.lookup.*.*`;
  }
  /** The queue group of the readers' lookup subscriptions. */
  get lookupQueue(): string {
    return `${this.prefix}-lookup`;
  }
  /** A consume session's control messages, consumer → reader. */
  consumeSession(session: string): string {
    checkSubjectToken("consume session id", session);
    return `${this.prefix}.ctl.consume.s.${session}`;
  }
  /**
   * Maintenance requests for one table (compact, expire, remove orphans): only the node leading the table subscribes,
   * from gaining the leadership to losing it, so a request reaches the process whose scheduled maintenance it must be
   * serialised with — and a paused ex-leader, once it notices, stops answering.
   */
  maintenance(id: Identifier): string {
    return `${this.prefix}.ctl.maint.${this.t(id)}`;
  }

  /** "Stop serving this table" for one node, from the node dropping it (cluster/table-stop.ts): only that node subscribes. */
  stopTable(nodeId: string): string {
    checkSubjectToken("node id", nodeId);
    return `${this.prefix}.ctl.stop-table.${nodeId}`;
  }

  /** Control requests for one node (`natslake node drain`): only that node subscribes. */
  nodeControl(nodeId: string): string {
    checkSubjectToken("node id", nodeId);
    return `${this.prefix}.ctl.node.${nodeId}`;
  }

  ingestStream(id: Identifier): string {
    return `${this.prefix.toUpperCase()}_IN_${id.database}_${id.table}`;
  }
  commitStream(id: Identifier): string {
    return `${this.prefix.toUpperCase()}_COMMIT_${id.database}_${id.table}`;
  }
  get dlqStream(): string {
    return `${this.prefix.toUpperCase()}_DLQ`;
  }
  get dlqAll(): string {
    return `${this.prefix}.dlq.>`;
  }

  get tablesKv(): string {
    return `${this.prefix}_tables`;
  }
  get membersKv(): string {
    return `${this.prefix}_members`;
  }
  get assignKv(): string {
    return `${this.prefix}_assign`;
  }
  get snapKv(): string {
    return `${this.prefix}_snap`;
  }
  get routerKv(): string {
    return `${this.prefix}_router`;
  }
  /** Each bucket's read attempts (actors/poison-guard.ts): a message that kills its writer is found across restarts. */
  get attemptsKv(): string {
    return `${this.prefix}_attempts`;
  }
  /** Which dead letters `natslake dlq replay` replayed (they stay in the DLQ: deleting them would look like drops). */
  get dlqReplaysKv(): string {
    return `${this.prefix}_dlq_replays`;
  }
  tableKey(id: Identifier): string {
    return this.t(id);
  }
}
