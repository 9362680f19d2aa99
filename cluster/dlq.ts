/**
 * A table's dead letters, for operators: read them from the DLQ stream (`natslake dlq list`) and publish their rows
 * again once the cause is gone — as they were (a column added since, say) or as the operator fixed them
 * (`natslake dlq replay`).
 *
 * - Letters stay in the DLQ after a replay: deleting them from its head would be counted as drops by
 *   `natslake_dlq_dropped_total` (cluster/nats/table-infra.ts). A replay is recorded instead, in KV
 *   `<p>_dlq_replays` (key `<db>.<table>.<seq>`, kept 7 days like the letters), and a letter recorded there is not
 *   replayed again unless asked (`again`).
 * - Everything is checked before anything is published: each letter exists in this table's DLQ subject, and every row
 *   fits the table's current schema as the producer client checks it — one bad row and nothing is sent.
 * - Each letter's rows go through their own producer with the id `dlq-replay-<seq>`, batched by size only, so its
 *   message ids are the same every time: a replay run again within the stream's duplicate window (after a crash
 *   between the acknowledgement and the record) stores nothing twice. The record is written once every batch of the
 *   letter was acknowledged.
 */
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, LakeError, dataInvalid, isLakeError } from "../src/errors.ts";
import type { Identifier } from "../src/table/table.ts";
import type { DeadLetter, DlqReplayRecord } from "../actors/wire/messages.ts";
import { createProducer, waitVisible, type BatchOutcome, type VisibilityToken } from "./producer.ts";
import { readTableMeta } from "./nats/table-infra.ts";
import type { Subjects } from "./nats/subjects.ts";
import { STREAM_NOT_FOUND } from "./nats/jetstream-codes.ts";

/** A dead letter as the DLQ stream holds it. */
export interface StoredLetter {
  /** Its sequence in the DLQ stream (what `replay` names it by). */
  seq: number;
  /** When the DLQ stored it (epoch ms). */
  storedAt: number;
  letter: DeadLetter;
}

const isStreamNotFound = (e: unknown): boolean => (e as { api_error?: { err_code?: number } } | null)?.api_error?.err_code === STREAM_NOT_FOUND || /stream not found/i.test(String((e as Error)?.message));

/** How many letters of `table` the DLQ holds now (0 when there is no DLQ stream yet). */
export async function letterCount(jsm: JetStreamManager, subjects: Subjects, table: Identifier): Promise<number> {
  const subject = subjects.dlq(table);
  try {
    const info = await jsm.streams.info(subjects.dlqStream, { subjects_filter: subject });
    return info.state.subjects?.[subject] ?? 0;
  } catch (e) {
    if (isStreamNotFound(e)) return 0;
    throw e;
  }
}

/** Up to `limit` letters of `table` from DLQ sequence `fromSeq` on, oldest first; `more` when others follow. */
export async function readLetters(nc: NatsConnection, subjects: Subjects, table: Identifier, o: { fromSeq?: number; limit: number }): Promise<{ letters: StoredLetter[]; more: boolean }> {
  const jsm = await jetstreamManager(nc);
  if ((await letterCount(jsm, subjects, table)) === 0) return { letters: [], more: false };
  const js = jetstream(nc);
  const consumer = await js.consumers.get(subjects.dlqStream, {
    filter_subjects: subjects.dlq(table),
    ...(o.fromSeq !== undefined ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: o.fromSeq } : { deliver_policy: DeliverPolicy.All }),
  });
  const letters: StoredLetter[] = [];
  let more = false;
  try {
    for (;;) {
      const want = Math.min(256, o.limit - letters.length);
      if (want <= 0) break;
      let pending = 0;
      let got = 0;
      for await (const m of await consumer.fetch({ max_messages: want, expires: 2000 })) {
        got++;
        pending = m.info.pending;
        letters.push({ seq: m.seq, storedAt: Math.floor(m.info.timestampNanos / 1_000_000), letter: m.json<DeadLetter>() });
      }
      if (got === 0 || pending === 0) break;
      more = letters.length >= o.limit;
    }
  } finally {
    await consumer.delete().catch(() => false);
  }
  return { letters, more };
}

/** The replay records bucket; null when none exists and `create` is false (nothing was ever replayed). */
export async function replayRecords(nc: NatsConnection, subjects: Subjects, create: boolean): Promise<KV | null> {
  const kvm = new Kvm(nc);
  try {
    const kv = await kvm.open(subjects.dlqReplaysKv);
    await kv.status(); // open() binds without looking: this fails when the bucket does not exist
    return kv;
  } catch (e) {
    if (!isStreamNotFound(e)) throw e;
    if (!create) return null;
  }
  // As long as the letters it describes live, on as many replicas as the DLQ.
  const jsm = await jetstreamManager(nc);
  const replicas = await jsm.streams.info(subjects.dlqStream).then((i) => i.config.num_replicas, () => 1);
  return kvm.create(subjects.dlqReplaysKv, { history: 1, replicas, ttl: 7 * 86_400_000 });
}

const recordKey = (subjects: Subjects, table: Identifier, seq: number): string => `${subjects.tableKey(table)}.${seq}`;

/** The replay records of `table`, by letter sequence. */
export async function replaysOf(kv: KV | null, subjects: Subjects, table: Identifier): Promise<Map<number, DlqReplayRecord>> {
  const out = new Map<number, DlqReplayRecord>();
  if (kv === null) return out;
  const keys: string[] = [];
  for await (const k of await kv.keys(`${subjects.tableKey(table)}.*`)) keys.push(k);
  for (const k of keys) {
    const e = await kv.get(k);
    if (e === null || e.operation !== "PUT") continue;
    const r = e.json<DlqReplayRecord>();
    if (r.v === 1 && typeof r.seq === "number") out.set(r.seq, r);
  }
  return out;
}

/** One letter to replay: its DLQ sequence and the rows to publish, and where they came from (for messages). */
export interface ReplayItem {
  seq: number;
  rows: Array<Record<string, unknown>>;
  source: DlqReplayRecord["source"];
  /** `file:line` or `letter <seq>`: named in every error about the item. */
  where: string;
}

/** The rows a letter holds as it is, or why it holds none that can be replayed unchanged. */
export function rowsOfLetter(l: StoredLetter): Array<Record<string, unknown>> {
  const o = l.letter.original;
  if (l.letter.originalBytes !== undefined)
    throw dataInvalid(`letter ${l.seq}: its row was cut to fit the DLQ (${l.letter.originalBytes} bytes): the full row is in the ingest stream at sequence ${l.letter.streamSeq} while it is not purged; replay it from a file`);
  if (l.letter.rowIndex < 0 || o === null || typeof o !== "object" || Array.isArray(o))
    throw dataInvalid(`letter ${l.seq}: it holds no row to replay as it is (the whole message could not be read: ${l.letter.reason}); export it with \`dlq list --format jsonl\`, write its row(s) and replay the file`);
  return [o as Record<string, unknown>];
}

export interface ReplayOptions {
  table: Identifier;
  tableName: string;
  /** Replay letters recorded as replayed too. */
  again: boolean;
  dryRun: boolean;
  onProgress?: (done: number, total: number) => void;
}

export interface ReplayResult {
  /** Letters (and their rows) published and acknowledged, or that would be (dry run). */
  letters: number;
  rows: number;
  /** Letters skipped as replayed before. */
  skipped: number[];
  /** Letters with a batch not acknowledged: failed (not stored) or unknown (may be stored). */
  failed: number[];
  unknown: number[];
  firstError?: string;
  /** The highest acknowledged sequence per bucket, for a read-your-writes wait. */
  token: VisibilityToken;
}

/** Checks every item (letter exists here, rows fit the schema), then publishes each letter's rows and records it. */
export async function replay(nc: NatsConnection, subjects: Subjects, items: ReplayItem[], o: ReplayOptions): Promise<ReplayResult> {
  const meta = await readTableMeta(nc, subjects, o.table);
  const jsm = await jetstreamManager(nc);
  const subject = subjects.dlq(o.table);
  // 1. Each letter is one of this table's, in the DLQ now.
  for (const it of items) {
    let stored;
    try {
      stored = await jsm.streams.getMessage(subjects.dlqStream, { seq: it.seq });
    } catch (e) {
      if (isStreamNotFound(e)) throw new LakeError(ErrorKind.NotFound, `${it.where}: there is no dead-letter stream ${subjects.dlqStream}`);
      throw e;
    }
    if (stored === null || stored.subject !== subject)
      throw new LakeError(ErrorKind.NotFound, `${it.where}: no dead letter of ${o.tableName} has sequence ${it.seq}${stored === null ? " (dropped or aged out of the DLQ, or never one)" : ` (it is one of ${stored.subject})`}`);
  }
  // 2. Every row fits the table's schema as producers check it: one bad row and nothing is sent.
  const checker = await createProducer({ nc, table: o.tableName, meta, prefix: subjects.prefix });
  try {
    for (const it of items) {
      if (it.rows.length === 0) throw dataInvalid(`${it.where}: no row to replay`);
      it.rows.forEach((row, i) => {
        try {
          checker.validate(row);
        } catch (e) {
          const why = e instanceof Error ? e.message : String(e);
          throw new LakeError(isLakeError(e) ? e.kind : ErrorKind.DataInvalid, `${it.where}${it.rows.length > 1 ? `: row ${i}` : ""}: ${why}`);
        }
      });
    }
  } finally {
    await checker.close();
  }
  const kv = await replayRecords(nc, subjects, !o.dryRun);
  const done = await replaysOf(kv, subjects, o.table);
  const result: ReplayResult = { letters: 0, rows: 0, skipped: [], failed: [], unknown: [], token: { table: o.tableName, offsets: {} } };
  const todo = items.filter((it) => {
    if (done.has(it.seq) && !o.again) {
      result.skipped.push(it.seq);
      return false;
    }
    return true;
  });
  if (o.dryRun) {
    for (const it of todo) {
      result.letters++;
      result.rows += it.rows.length;
    }
    return result;
  }
  // 3. One letter at a time, each under its own stable message ids; recorded once all its batches are acknowledged.
  let n = 0;
  for (const it of todo) {
    const p = await createProducer({ nc, table: o.tableName, meta, prefix: subjects.prefix, producerId: `dlq-replay-${it.seq}`, lingerMs: 2 ** 31 - 1 });
    let outcomes: BatchOutcome[];
    try {
      const pending = p.writeMany(it.rows);
      await p.flush();
      outcomes = await pending;
    } finally {
      await p.close();
    }
    const bad = outcomes.find((x) => x.status === "failed" || x.status === "unknown");
    if (bad !== undefined) {
      (bad.status === "failed" ? result.failed : result.unknown).push(it.seq);
      result.firstError ??= `letter ${it.seq}: ${bad.status}: ${bad.error ?? "no acknowledgement"}`;
    } else {
      const record: DlqReplayRecord = { v: 1, table: o.tableName, seq: it.seq, at: Date.now(), rows: it.rows.length, source: it.source, msgIds: [...new Set(outcomes.map((x) => x.msgId))] };
      await kv!.put(recordKey(subjects, o.table, it.seq), JSON.stringify(record));
      result.letters++;
      result.rows += it.rows.length;
      for (const [b, seq] of Object.entries(p.token().offsets)) result.token.offsets[b] = Math.max(result.token.offsets[b] ?? 0, seq);
    }
    o.onProgress?.(++n, todo.length);
  }
  return result;
}

/** Waits until a snapshot holds the replayed rows (read-your-writes), or throws after `timeoutMs`. */
export async function waitReplayVisible(nc: NatsConnection, subjects: Subjects, r: ReplayResult, timeoutMs: number): Promise<void> {
  await waitVisible(nc, r.token, timeoutMs, subjects.prefix);
}
