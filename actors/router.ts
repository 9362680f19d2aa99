/**
 * RouterActor: runs beside the table's leader. It consumes rows that publishers sent to the table's bare subject
 * (JSON or msgpack, one row or many), computes each row's bucket with Paimon's bucket function, and republishes
 * them as row batches to the bucket subjects — exactly once:
 * - every routed message carries the id `r-<raw stream sequence>-<bucket>`, so a re-route of the same raw message
 *   (after a crash between publishing and recording progress) is de-duplicated by the stream;
 * - progress (the last raw sequence fully routed) is recorded only after every routed publish of that message was
 *   acknowledged, and the raw message is purged only after that.
 * A payload that cannot be read, or a row that does not fit the schema, goes to the dead-letter subject with the
 * reason, the raw message's stream sequence and the row's index in it (what its publisher can trace); the other rows
 * of the message still land. Rows are checked here by the same converter the writers use, so a routed row is one the
 * writer accepts: checking them only at the writer would name the routed message instead, which no publisher knows.
 *
 * Primary-key tables: a raw row may name its kind in `_row_kind` ("+I", "-U", "+U", "-D"; absent: "+I"); the kind
 * and the key are checked by the rules TableWrite uses (src/lsm/keyed-input.ts) — a bad kind, a missing or null key
 * is a dead letter with the reason. The routed batch's `cols` are the table's columns then `_row_kind`, and each row
 * carries its canonical values in wire form (a retraction's left-out NOT NULL columns as their type's zero) and its
 * kind, so every routed row fits the schema. With `natslake.ingest.format = debezium-json` each raw message is one
 * Debezium change event (src/cdc/debezium-json.ts): its rows are routed together or the whole event is a dead letter
 * (row index −1, the event as its original); a tombstone is passed over.
 */
import type { DeadLetter, RowBatch } from "./wire/messages.ts";
import { batchRowConverter, compileWireEncoder, jsonSafe, packValue, parseJsonMessage, parseRawPayload } from "./wire/row-batch.ts";
import { packedSizeBound, payloadLimit } from "./wire/limits.ts";
import { dataInvalid, ensureError, ErrorKind, LakeError } from "../src/errors.ts";
import { createBucketFunctionOfType, type BucketFunctionType } from "../src/format/bucket.ts";
import type { Row } from "../src/format/values.ts";
import type { Table } from "../src/table/table.ts";
import { compileKeyedInput, type KeyedRow } from "../src/lsm/keyed-input.ts";
import { ROW_KIND_COLUMN, rowKindName, rowKindOnAppendTable } from "../src/lsm/row-kind.ts";
import { compileDebeziumJson, compileDebeziumRoundingCheck, type DebeziumChange } from "../src/cdc/debezium-json.ts";
import { ingestFormatOf } from "../src/cdc/ingest-format.ts";
import type { Actor, ActorContext } from "./runtime/index.ts";
import type { Bus, Clock, Meter, RawLog, RawMessage, RawReader, RouterProgress } from "./ports.ts";
import { checkStream, resetHint } from "../src/commit/stream-identity.ts";
import { STREAM_RECHECK_MS } from "./stream-check.ts";
import { METRICS } from "./metrics.ts";
import { failIfSchemaMovedOn } from "./schema-check.ts";

/**
 * Rows per routed message at most; a message is also cut before its encoding could exceed the server's
 * max_payload (`splitByBytes`): a routed publish the server refuses would be retried forever (issue 9).
 */
const ROWS_PER_MESSAGE = 1000;

/**
 * Cuts a bucket's rows (with their size bounds) into runs of at most ROWS_PER_MESSAGE rows whose encodings fit in
 * `limit` bytes after the batch's `prefix` bytes. Deterministic in the rows alone, so a group re-routed after a crash
 * gets the same messages and hence the same message ids.
 */
export function splitByBytes(rows: readonly unknown[][], sizes: readonly number[], prefix: number, limit: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let start = 0;
  let bytes = prefix;
  for (let i = 0; i < rows.length; i++) {
    if (i > start && (i - start >= ROWS_PER_MESSAGE || bytes + sizes[i]! > limit)) {
      out.push([start, i]);
      start = i;
      bytes = prefix;
    }
    bytes += sizes[i]!;
  }
  if (rows.length > start) out.push([start, rows.length]);
  return out;
}

export type RouterMsg =
  | { type: "opened"; reader: RawReader; from: number }
  /** The recorded progress belongs to another stream: nothing is routed until the offsets are reset. */
  | { type: "stream-mismatch"; reason: string }
  | { type: "recheck" }
  | { type: "open-failed"; error: Error }
  | { type: "pull" }
  | { type: "routed"; through: number }
  | { type: "route-failed"; error: Error };

/** A row ready for its bucket's routed batch: its values in the batch's `cols` order and their encoded size bound. */
interface RoutedRow {
  bucket: number;
  values: unknown[];
  size: number;
}

export interface RouterDeps {
  table: Table;
  raw: RawLog;
  bus: Bus;
  clock: Clock;
  meter: Meter;
  fetchBatch: number;
}

export class RouterActor implements Actor<RouterMsg> {
  private reader: RawReader | null = null;
  /** Last raw sequence fully routed, and the group in progress (recorded before publishing). */
  private through = 0;
  /** KV revision of the progress this router last read or wrote (compare-and-set fences a stale router). */
  private revision = 0;
  private intent: { from: number; to: number } | null = null;
  /** Messages fetched past an intent's range, kept for the next group. */
  private leftover: RawMessage[] = [];
  private busy = false;
  private readonly names: string[];
  /** The routed batches' columns: `names`, and `_row_kind` for a primary-key table. */
  private readonly cols: string[];
  /** The bucket of a canonical row. */
  private readonly bucketOf: (row: Row) => number;
  /** A raw row (JSON or msgpack) → its routed form; throws DataInvalid saying what is wrong with it. */
  private readonly routeRow: (row: Record<string, unknown>) => RoutedRow;
  /** debezium-json tables: a raw message's JSON value → the change it holds (throws DataInvalid with the reason). */
  private readonly debezium: { read: (event: unknown) => DebeziumChange; mayRound: (event: unknown) => boolean } | null = null;
  /** Why this router cannot read the table's raw subject (an ingest format it does not know): it routes nothing. */
  private readonly unreadable: string | null = null;
  /** The live stream the recorded progress was checked against; recorded with every progress write. */
  private stream: string | undefined;
  private readonly streamMismatches;
  private readonly deadLetters;

  constructor(private readonly d: RouterDeps) {
    this.streamMismatches = METRICS.streamMismatches.create(d.meter);
    this.deadLetters = METRICS.deadLetters.create(d.meter);
    const t = d.table;
    this.names = t.schema.fields.map((f) => f.name);
    this.cols = t.isPrimaryKeyTable ? [...this.names, ROW_KIND_COLUMN] : this.names;
    if (t.bucket > 0) {
      const keys = t.bucketKeys;
      const fn = createBucketFunctionOfType((t.options.get("bucket-function.type") ?? "default") as BucketFunctionType, keys.map((k) => t.typeOf(k)), t.bucket);
      this.bucketOf = (row) => fn(keys.map((k) => row[k] ?? null));
    } else {
      this.bucketOf = () => 0;
    }
    this.routeRow = t.isPrimaryKeyTable ? this.keyedRowRouter() : this.appendRowRouter();
    try {
      if (ingestFormatOf(t.name, t.schema) === "debezium-json") this.debezium = { read: compileDebeziumJson(t.name, t.schema), mayRound: compileDebeziumRoundingCheck(t.schema) };
    } catch (e) {
      this.unreadable = ensureError(e).message;
    }
  }

  /** Append tables: a row's values as they came (the writer converts them again), once they convert. */
  private appendRowRouter(): (row: Record<string, unknown>) => RoutedRow {
    const check = batchRowConverter(this.d.table.schema.fields, this.names).convert;
    return (row) => {
      this.refuseUnknownColumns(row);
      const values = this.names.map((n) => row[n] ?? null);
      return this.sized(this.bucketOf(check(values)), values);
    };
  }

  /** Primary-key tables: the kind and key checked, the canonical values in wire form, then the kind. */
  private keyedRowRouter(): (row: Record<string, unknown>) => RoutedRow {
    const keyed = compileKeyedInput(this.d.table.schema);
    return (row) => {
      this.refuseUnknownColumns(row);
      return this.routedKeyed(keyed(row));
    };
  }

  /** Wire encoders of the table's columns, in `names` order (built on first use: append tables never need them). */
  private encoders: Array<(v: unknown) => unknown> | null = null;

  /** A primary-key table's canonical row with its kind → its routed form. */
  private routedKeyed({ row, kind }: KeyedRow): RoutedRow {
    this.encoders ??= this.d.table.schema.fields.map((f) => compileWireEncoder(f.type) as (v: unknown) => unknown);
    const values = this.names.map((n, i) => this.encoders![i]!(row[n] ?? null));
    values.push(rowKindName(kind));
    return this.sized(this.bucketOf(row), values);
  }

  /** A column the table does not have: refused with the columns it has (`_row_kind` on an append table by name). */
  private refuseUnknownColumns(row: Record<string, unknown>): void {
    for (const k of Object.keys(row)) {
      if (this.cols.includes(k)) continue;
      if (k === ROW_KIND_COLUMN) throw rowKindOnAppendTable(this.d.table.name);
      throw dataInvalid(`unknown column '${k}' (columns: ${this.names.join(", ")})`, { column: k });
    }
  }

  /**
   * A raw message the server took may still not fit once re-encoded as a row batch (its own prefix, other encodings
   * of its values): such a row goes alone, and one that does not fit even alone is refused.
   */
  private sized(bucket: number, values: unknown[]): RoutedRow {
    let size = packedSizeBound(values);
    if (this.prefix + size > this.limit) size = packValue(values).length;
    if (this.prefix + size > this.limit) {
      throw dataInvalid(`row too large for one routed message (${this.prefix + size} bytes encoded; the server's max_payload allows ${this.limit})`);
    }
    return { bucket, values, size };
  }

  /** A row batch's bytes besides its rows: the keys, schema id and column names, and the rows array's header. */
  private get prefix(): number {
    return (this.prefixBytes ??= packValue({ v: 1, schema: this.d.table.schema.id, cols: this.cols, rows: [] }).length + 5);
  }
  private prefixBytes: number | undefined;

  private get limit(): number {
    return payloadLimit(this.d.raw.maxPayload);
  }

  preStart(ctx: ActorContext<RouterMsg>): void {
    if (this.unreadable !== null) {
      // Nothing is read, so nothing is lost: the node restarts this router once the table's schema changes.
      ctx.log.error("not routing: the table's raw subject cannot be read", { table: this.d.table.name, reason: this.unreadable });
      return;
    }
    this.start(ctx);
  }

  /**
   * Reads the recorded progress and opens the raw subject after it — once the live stream is the one that progress
   * counts in (a re-created stream numbers from 1 again: resuming after the old sequence would skip its messages).
   */
  private start(ctx: ActorContext<RouterMsg>): void {
    const table = this.d.table.name;
    ctx.pipeToSelf(
      (async (): Promise<RouterMsg> => {
        const { progress: p, revision } = await this.d.raw.readProgress(table);
        const live = await this.d.raw.liveStream(table);
        const check = checkStream(p.stream, Math.max(p.through, p.intent?.to ?? 0), live);
        if (!check.ok) return { type: "stream-mismatch", reason: `${table}: router progress: ${check.reason}; ${resetHint(table)}` };
        this.stream = live.identity;
        this.revision = revision;
        this.through = p.through;
        this.intent = p.intent;
        const from = p.intent !== null ? p.intent.from - 1 : p.through;
        return { type: "opened", reader: await this.d.raw.open(table, from), from };
      })(),
      (m) => m,
      (e) => ({ type: "open-failed", error: ensureError(e) }),
    );
  }

  async postStop(): Promise<void> {
    await this.reader?.close().catch(() => undefined);
  }

  receive(msg: RouterMsg, ctx: ActorContext<RouterMsg>): void {
    switch (msg.type) {
      case "opened":
        this.reader = msg.reader;
        ctx.log.info("router started", { table: this.d.table.name, after: msg.from });
        ctx.self.tell({ type: "pull" });
        return;
      case "open-failed":
        throw msg.error;
      case "stream-mismatch":
        this.streamMismatches.add(1, { table: this.d.table.name, component: "router" });
        ctx.log.error("not routing: the router's progress belongs to another stream", { table: this.d.table.name, reason: msg.reason });
        ctx.scheduleOnce(STREAM_RECHECK_MS, { type: "recheck" });
        return;
      case "recheck":
        this.start(ctx);
        return;
      case "pull": {
        if (this.busy || this.reader === null) return;
        this.busy = true;
        const reader = this.reader;
        ctx.pipeToSelf(
          this.routeSome(reader),
          (through) => ({ type: "routed", through }),
          (e) => ({ type: "route-failed", error: ensureError(e) }),
        );
        return;
      }
      case "routed":
        this.busy = false;
        ctx.self.tell({ type: "pull" });
        return;
      case "route-failed":
        this.busy = false;
        if (/wrong last sequence|revision/i.test(msg.error.message)) {
          // Another router recorded progress: this one is stale (its leader lost leadership). Stop for good.
          ctx.log.warn("router fenced by a newer router; stopping", { table: this.d.table.name });
          ctx.stop();
          return;
        }
        // The failed group's messages were taken from the reader already, so retrying on this reader would wait for
        // them forever. Fail instead: supervision restarts the router (with back-off), which re-reads its progress and
        // re-opens the reader at the recorded intent, routing the same group again under the same message ids.
        ctx.log.warn("routing failed; restarting the router from its recorded progress", { table: this.d.table.name, error: msg.error.message });
        throw msg.error;
    }
  }

  /**
   * Routes the next raw messages as one group; resolves with the last raw sequence routed (0 when none).
   * The group's range is recorded as an *intent* before anything is published: after a crash the same range is
   * routed again with the same grouping, hence the same message ids, which the stream de-duplicates.
   */
  private async routeSome(reader: RawReader): Promise<number> {
    const table = this.d.table.name;
    let msgs: RawMessage[];
    if (this.intent !== null) {
      msgs = this.leftover.filter((m) => m.seq <= this.intent!.to);
      this.leftover = this.leftover.filter((m) => m.seq > this.intent!.to);
      while ((msgs[msgs.length - 1]?.seq ?? this.intent.from - 1) < this.intent.to) {
        const got = await reader.fetch(this.d.fetchBatch, 500);
        msgs.push(...got.filter((m) => m.seq <= this.intent!.to));
        this.leftover.push(...got.filter((m) => m.seq > this.intent!.to));
      }
    } else {
      msgs = this.leftover.length > 0 ? this.leftover.splice(0) : await reader.fetch(this.d.fetchBatch, 200);
      if (msgs.length === 0) return 0;
      this.intent = { from: msgs[0]!.seq, to: msgs[msgs.length - 1]!.seq };
      this.revision = await this.d.raw.writeProgress(table, this.progress(this.through, this.intent), this.revision);
    }
    // The raw reader follows its subject onto a re-created stream without a word: messages numbered in another stream
    // than the progress must not be routed (a reset from the earliest offset would route them a second time).
    const live = await this.d.raw.streamIdentity(table);
    if (this.stream !== undefined && live !== this.stream)
      throw new LakeError(ErrorKind.Conflict, `${table}: the ingest stream changed under the router (progress in ${this.stream}, now ${live})`);
    const { from, to } = this.intent;
    const letters: DeadLetter[] = [];
    const perBucket = new Map<number, { rows: unknown[][]; sizes: number[] }>();
    const add = (r: RoutedRow): void => {
      let list = perBucket.get(r.bucket);
      if (!list) perBucket.set(r.bucket, (list = { rows: [], sizes: [] }));
      list.rows.push(r.values);
      list.sizes.push(r.size);
    };
    for (const m of msgs) {
      const letter = (rowIndex: number, reason: string, original: unknown): DeadLetter => ({ type: "dead-letter", table, stage: "router", reason, streamSeq: m.seq, rowIndex, original, at: this.d.clock.now() });
      try {
        if (this.debezium !== null) {
          // One change event: its rows are routed together, or the event is a dead letter as a whole.
          // Read fast, and again without rounding only when a value the rows take may have been rounded.
          const fast = parseJsonMessage(m.data, true);
          const event = this.debezium.mayRound(fast) ? parseJsonMessage(m.data) : fast;
          let routed: RoutedRow[];
          try {
            const change = this.debezium.read(event);
            routed = change.op === "tombstone" ? [] : change.rows.map((r) => this.routedKeyed(r));
          } catch (e) {
            letters.push(letter(-1, ensureError(e).message, jsonSafe(event)));
            continue;
          }
          routed.forEach(add);
          continue;
        }
        const p = parseRawPayload(m.data);
        const rows: Array<Record<string, unknown>> = "rows" in p ? p.rows : p.batch.rows.map((r) => Object.fromEntries(p.batch.cols.map((c, i) => [c, r[i]])));
        rows.forEach((row, i) => {
          try {
            add(this.routeRow(row));
          } catch (e) {
            letters.push(letter(i, ensureError(e).message, jsonSafe(row)));
          }
        });
      } catch (e) {
        letters.push(letter(-1, ensureError(e).message, Buffer.from(m.data).toString("base64")));
      }
    }
    // Before anything of the group is published: rows of a newer schema are re-routed whole once the node restarted
    // this router on it (the intent stands, and nothing of it went out, so no id is reused for other content).
    await failIfSchemaMovedOn(this.d.table, letters.map((l) => l.reason));
    const publishes: Array<Promise<void>> = [];
    for (const [bucket, { rows, sizes }] of perBucket) {
      splitByBytes(rows, sizes, this.prefix, this.limit).forEach(([a, b], chunk) => {
        const batch: RowBatch = { v: 1, schema: this.d.table.schema.id, cols: this.cols, rows: rows.slice(a, b) };
        publishes.push(this.d.raw.publishRouted(table, bucket, batch, `r-${from}-${to}-${bucket}-${chunk}`, to));
      });
    }
    await Promise.all(publishes);
    if (letters.length > 0) {
      // Counted as the DLQ stored them: a group routed again after a failure publishes its letters again, under the
      // same ids, and the ones stored by the failed attempt are de-duplicated — counting them again would count a row
      // twice.
      const stored = await this.d.bus.publishDeadLetters(table, letters);
      if (stored > 0) this.deadLetters.add(stored, { table, stage: "router" });
    }
    this.through = to;
    this.intent = null;
    this.revision = await this.d.raw.writeProgress(table, this.progress(to, null), this.revision);
    await this.d.raw.purgeRaw(table, to, this.stream);
    return to;
  }

  private progress(through: number, intent: { from: number; to: number } | null): RouterProgress {
    return this.stream !== undefined ? { stream: this.stream, through, intent } : { through, intent };
  }
}
