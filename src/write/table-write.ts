/**
 * TableWrite: rows in → data files out, per (partition, bucket), for append tables.
 *
 * Rows are validated and converted to canonical values once (format/values.ts), routed to their partition and
 * bucket (Paimon's bucket function, so a row lands where Java and pypaimon would put it), and buffered per bucket
 * in arrival order. `prepareCommit()` flushes every buffer into Parquet files and returns one CommitMessage per
 * (partition, bucket); nothing is visible until a commit references the files.
 *
 * Sequence numbers continue per (partition, bucket) from the highest one among the bucket's live files (Java's
 * AppendOnlyWriter), so files of a bucket order by `_MIN_SEQUENCE_NUMBER` = write order.
 *
 * Primary-key tables (fixed buckets): each row comes with its kind (`_row_kind`, or `upsert` / `delete`), every row
 * takes the bucket's next sequence number, and a bucket's buffer is flushed as Paimon's MergeTreeWriter flushes it —
 * sorted by key, folded per key, one level-0 sorted run (src/lsm/sort-buffer.ts), plus the unfolded rows as a
 * changelog file with `changelog-producer = input`.
 */
import type * as arrow from "apache-arrow";
import { Table as ArrowTable, util as arrowUtil } from "apache-arrow";
import { toArrowField } from "../codec/arrow-schema.ts";
import { ErrorKind, LakeError } from "../errors.ts";
import type { CommitMessage } from "../commit/commit-message.ts";
import { BinaryRowWriter, createRowEncoder, serializeBinaryRow } from "../format/binary-row.ts";
import { RecordBatchBuilder } from "../codec/columns/record-batch-builder.ts";
import { HEAP_ARRAYS, sharedBufferRecycler, type ArrayAllocator, type BufferRecycler } from "../codec/columns/buffer-recycler.ts";
import { type ParquetEncoderPool, sharedParquetPool } from "../codec/parquet-pool.ts";
import { compileConverter, compileRowConverter } from "../format/row-converter.ts";
import { type BucketFunction, type BucketFunctionType, createBucketFunctionOfType, createIntegerKeyBucketFunction } from "../format/bucket.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import { partitionPath } from "../format/partition.ts";
import { toCanonical, type Row, type Value } from "../format/values.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { DataFileWriter, type DataFileEncodeSpec } from "./data-file-writer.ts";
import type { DataField } from "../format/data-types.ts";
import type { TableSchema } from "../format/schema.ts";
import { recordBatchToRows } from "../codec/columns/batch-to-rows.ts";
import { FileSource } from "../format/manifest.ts";
import { compileKeyedInput, keyedInputRules, rowKindFieldOf, type KeyedInputRules } from "../lsm/keyed-input.ts";
import { KeyValueFileWriter } from "../lsm/key-value-file-writer.ts";
import { encodeKeyedFlush, type EncodedKeyedFlush } from "../lsm/keyed-flush.ts";
import { ROW_KIND_COLUMN, RowKind } from "../lsm/row-kind.ts";
import { keyValueLayout, type KeyValueLayout } from "../lsm/sort-buffer.ts";
import { VALUE_KIND_FIELD } from "../lsm/key-value-fields.ts";
import { DELETION_VECTORS_NOT_WRITTEN } from "../lsm/table-rules.ts";
import type { KeyValueEncodeSpec } from "../lsm/key-value-file-writer.ts";
import type { EncodedFlush } from "./encoded-flush.ts";

/** Primary-key buffers of fewer rows flush on the calling thread even with a pool (DataFileWriter's rule for encodes). */
const POOL_MIN_ROWS = 8192;

/** Rows a bucket builder starts with at least. */
const MIN_BUILDER_CAPACITY = 4096;

interface BucketBuffer {
  /** Partition (hex of its framed BinaryRow) and bucket: the key of `buffers` and of the sequence numbers. */
  key: string;
  partition: Uint8Array;
  partitionValues: Value[];
  partitionPath: string;
  bucket: number;
  /** Rows go straight into Arrow column builders; a full builder becomes a batch. */
  builder: RecordBatchBuilder | null;
  batches: arrow.RecordBatch[];
}

export interface TableWriteOptions {
  /** Rows per Parquet file at most (in addition to `target-file-size`); bounds memory of one flush. */
  maxRowsPerFile?: number;
  /**
   * Every row goes to this bucket instead of the one the bucket function computes: a cluster writer owns one
   * bucket, and the producer already routed its rows with the same function.
   */
  bucket?: number;
  /** Worker threads that encode Parquet; default the process-wide pool (`sharedParquetPool`); null: this thread. */
  encoderPool?: ParquetEncoderPool | null;
  /**
   * Primary-key tables: where the sequence numbers come from, instead of the live files (a cluster writer owns its
   * bucket's numbering and carries it across its flushes and re-opens: see actors/writer.ts).
   */
  sequence?: SequenceCounter;
}

/** A bucket's next sequence number, taken `n` at a time. */
export interface SequenceCounter {
  next: bigint;
}

export class TableWrite {
  private readonly buffers = new Map<string, BucketBuffer>();
  private readonly fileWriter: DataFileWriter;
  private readonly bucketFn: BucketFunction | null;
  private readonly partitionIdx: string[];
  private readonly bucketKeyNames: string[];
  private nextSeqByBucket: Map<string, bigint> | null = null;
  private readonly written: string[] = [];
  private readonly maxRowsPerFile: number;
  private readonly convert: (input: Readonly<Record<string, unknown>>) => Row;
  /** Primary-key tables: the input rules every way in shares (src/lsm/keyed-input.ts). */
  private readonly keyRules: KeyedInputRules | null;
  /** The table has `rowkind.field`: every row's kind is read from that column, so no row takes the insert fast path. */
  private readonly kindFromColumn: boolean = false;
  /** The columns that route a row to its buffer, with their converters (primary-key inserts are routed by them alone). */
  private readonly routeColumns: Array<{ name: string; convert: (v: unknown) => Value }>;
  /** Primary-key tables: an input row → its canonical row with `_VALUE_KIND` (the kind given, else its `_row_kind`). */
  private readonly convertKeyed: ((input: Readonly<Record<string, unknown>>, kind?: RowKind) => Row) | null = null;
  private readonly partitionKeyOf: (row: Row) => string;
  /** Every row goes to one buffer (no partitions; one forced bucket or no bucket function). */
  private readonly single: boolean;
  private readonly sequenceCounter: SequenceCounter | undefined;
  /** Primary-key tables: how buffers fold, and the writer of their sorted runs. */
  private readonly kv: { layout: KeyValueLayout; writer: KeyValueFileWriter } | null;
  /** Where large primary-key flushes run (null: on this thread). */
  private readonly pool: ParquetEncoderPool | null;
  /**
   * Primary-key tables: the process's recycler, which gives the bucket builders their buffers and takes them back
   * once a flush in the pool has read them (see buffer-recycler.ts); null for append tables.
   */
  private readonly recycler: BufferRecycler | null;
  /** Where bucket builders get their first buffers. */
  private readonly arrays: ArrayAllocator;
  /** The columns buffered: the table's, and for primary-key tables `_VALUE_KIND`. */
  private readonly bufferFields: DataField[];
  private singleBuffer: BucketBuffer | null = null;
  /** Unpartitioned tables: the buffers by bucket, so routing a row needs no map key. */
  private readonly bufferByBucket: Array<BucketBuffer | undefined> = [];
  /**
   * Primary-key inserts whose bucket key is one INT/BIGINT column given as a number: its name and the bucket of the
   * number (−1: route the usual way); null when the table has no such fast path.
   */
  private readonly integerRoute: { name: string; bucketOf: (v: unknown) => number } | null;
  /** Rows a new bucket builder makes room for (set per `writeRows` call from its size; see `builderCapacity`). */
  private capacityHint = MIN_BUILDER_CAPACITY;

  constructor(
    private readonly table: Table,
    opts: TableWriteOptions = {},
  ) {
    if (table.options.fileFormat !== "parquet") throw new LakeError(ErrorKind.Unsupported, `file.format '${table.options.fileFormat}' is not supported for writing (parquet is)`);
    if (table.bucket === -2) throw new LakeError(ErrorKind.Unsupported, "postpone buckets (bucket = -2) are not supported for writing");
    if (table.options.bool("deletion-vectors.enabled")) throw new LakeError(ErrorKind.Unsupported, `${table.name}: ${DELETION_VECTORS_NOT_WRITTEN}`);
    const pool = opts.encoderPool === undefined ? sharedParquetPool() : opts.encoderPool;
    this.pool = pool;
    this.recycler = table.isPrimaryKeyTable ? sharedBufferRecycler() : null;
    this.arrays = this.recycler ?? HEAP_ARRAYS;
    this.fileWriter = new DataFileWriter(table, { pool });
    if (table.isPrimaryKeyTable) {
      refuseUnwritableKeyed(table);
      this.kv = { layout: keyValueLayout(table.schema), writer: new KeyValueFileWriter(table, { pool }) };
      this.keyRules = keyedInputRules(table.schema);
      this.kindFromColumn = rowKindFieldOf(table.schema) !== null;
      this.bufferFields = this.kv.layout.bufferFields;
    } else {
      this.kv = null;
      this.keyRules = null;
      this.bufferFields = table.schema.fields;
    }
    this.partitionIdx = table.partitionKeys;
    this.bucketKeyNames = table.bucketKeys;
    const forced = opts.bucket;
    this.bucketFn =
      forced !== undefined
        ? () => forced
        : table.bucket > 0
        ? createBucketFunctionOfType(
            (table.options.get("bucket-function.type") ?? "default") as BucketFunctionType,
            this.bucketKeyNames.map((k) => table.typeOf(k)),
            table.bucket,
          )
        : null;
    this.maxRowsPerFile = opts.maxRowsPerFile ?? 1_000_000;
    const integerBucket =
      forced === undefined && table.bucket > 0 && this.partitionIdx.length === 0
        ? createIntegerKeyBucketFunction((table.options.get("bucket-function.type") ?? "default") as BucketFunctionType, this.bucketKeyNames.map((k) => table.typeOf(k)), table.bucket)
        : null;
    this.integerRoute = integerBucket === null ? null : { name: this.bucketKeyNames[0]!, bucketOf: integerBucket };
    this.routeColumns = [...new Set([...this.partitionIdx, ...this.bucketKeyNames])].map((name) => {
      const type = table.typeOf(name);
      const fast = compileConverter(type, name);
      return { name, convert: (v: unknown) => (v === null ? toCanonical(type, v, name) : fast(v)) };
    });
    this.sequenceCounter = opts.sequence;
    this.single = this.partitionIdx.length === 0 && (forced !== undefined || this.bucketFn === null);
    if (this.kv !== null) {
      const keyed = compileKeyedInput(table.schema);
      this.convertKeyed = (input, kind) => {
        const out = keyed(input, kind);
        out.row[VALUE_KIND_FIELD.name] = out.kind;
        return out.row;
      };
      this.convert = (input) => this.convertKeyed!(input);
    } else this.convert = compileRowConverter(table.schema.fields);
    // Partition values → a map key without serialising a BinaryRow per row: one reusable writer, hex of its bytes.
    // The key is the hex of the *framed* row (arity prefix + bytes), the same form manifest entries carry, so the
    // sequence numbers of a bucket's live files (nextSequence) are found under the same key.
    const ptypes = table.partitionTypes;
    const arityHex = ptypes.length.toString(16).padStart(8, "0");
    if (ptypes.length === 0) {
      const empty = Buffer.from(serializeBinaryRow([], [])).toString("hex");
      this.partitionKeyOf = () => empty;
    } else {
      const enc = createRowEncoder(ptypes);
      const w = new BinaryRowWriter(ptypes.length, 64);
      this.partitionKeyOf = (row) => {
        w.reset();
        enc(w, this.partitionIdx.map((k) => row[k] ?? null));
        return arityHex + Buffer.from(w.buffer.buffer, w.buffer.byteOffset, w.size).toString("hex");
      };
    }
  }

  /** Paths of every data file written so far (for cleanup after an aborted write). */
  get writtenFiles(): readonly string[] {
    return this.written;
  }

  /** Validates and buffers rows; throws DataInvalid naming the row and column on the first bad value. */
  writeRows(input: readonly Record<string, unknown>[], rowOffset = 0, kind?: RowKind): void {
    // One buffer for every row (no partitions, no bucket function): no routing, so the builder validates and
    // appends the input directly, with the converter's rules, without canonical rows in between.
    const direct = this.kv === null && this.partitionIdx.length === 0 && this.bucketFn === null ? this.bufferFor({}) : null;
    this.capacityHint = this.builderCapacity(input.length);
    try {
      this.bufferRows(input, rowOffset, kind, direct);
    } finally {
      this.capacityHint = MIN_BUILDER_CAPACITY;
    }
  }

  /** `writeRows` row by row (`direct`: the one buffer of a table that routes nothing). */
  private bufferRows(input: readonly Record<string, unknown>[], rowOffset: number, kind: RowKind | undefined, direct: BucketBuffer | null): void {
    const keyed = this.convertKeyed;
    for (let i = 0; i < input.length; i++) {
      try {
        if (keyed !== null) {
          // A primary-key table's insert (no kind, or +I given) goes into the buffer by the builders' fast paths, its
          // kind column left null (= +I); a row with another kind is converted with it.
          const row = input[i]!;
          if ((kind === undefined || kind === RowKind.INSERT) && !this.kindFromColumn && !(ROW_KIND_COLUMN in row) && !(VALUE_KIND_FIELD.name in row)) this.appendInsert(row);
          else this.writeRow(keyed(row, kind));
        } else if (direct === null) this.writeRow(this.convert(input[i]!));
        else {
          // Sized for this call: growing by doubling churns external memory, which forces full GCs.
          direct.builder ??= new RecordBatchBuilder(this.bufferFields, Math.min(this.maxRowsPerFile, Math.max(4096, input.length - i)));
          direct.builder.appendInput(input[i]!);
          if (direct.builder.length >= this.maxRowsPerFile) direct.batches.push(direct.builder.finish());
        }
      } catch (e) {
        if (e instanceof LakeError) throw new LakeError(e.kind, `row ${rowOffset + i + 1}: ${e.message}`, { context: { ...e.context, row: rowOffset + i + 1 }, cause: e });
        throw e;
      }
    }
  }

  /** True when every row goes to one buffer (no partitions; one forced bucket or none): what `commitEncoded` takes. */
  get writesOneBucket(): boolean {
    return this.single;
  }

  /**
   * Primary-key tables: inserts or replaces rows by key (each row whole, as `+I`; a later version of a key wins).
   */
  upsert(rows: readonly Record<string, unknown>[]): void {
    this.writeKinded(rows, RowKind.INSERT);
  }

  /** Primary-key tables: deletes the rows of these keys (objects holding at least every primary-key column). */
  delete(keys: readonly Record<string, unknown>[]): void {
    this.writeKinded(keys, RowKind.DELETE);
  }

  private writeKinded(rows: readonly Record<string, unknown>[], kind: RowKind): void {
    if (this.kv === null) throw new LakeError(ErrorKind.Unsupported, `${this.table.name} has no primary key: upserts and deletes need one (append rows with writeRows)`);
    this.writeRows(rows, 0, kind);
  }

  /**
   * A primary-key table's insert: only the routing columns (partition and bucket key) are made canonical to find its
   * buffer; the row goes into the buffer's builder as input (validated there), its kind column null (= +I).
   */
  private appendInsert(input: Readonly<Record<string, unknown>>): void {
    // The key is checked first, so a missing or null key is refused in the words every way in uses.
    this.keyRules!.checkKey(input, RowKind.INSERT);
    const fast = this.integerRoute;
    const bucket = fast === null ? -1 : fast.bucketOf(input[fast.name]);
    let buf: BucketBuffer;
    if (bucket >= 0) buf = this.bufferByBucket[bucket] ?? this.bufferFor(this.routeOf(input));
    else {
      const route = this.routeOf(input);
      buf = this.single ? (this.singleBuffer ??= this.bufferFor(route)) : this.bufferFor(route);
    }
    const builder = (buf.builder ??= new RecordBatchBuilder(this.bufferFields, this.capacityHint, this.arrays));
    builder.appendInput(input);
    if (builder.length >= this.maxRowsPerFile) buf.batches.push(builder.finish());
  }

  /**
   * The rows a bucket builder made during a `writeRows` call of `rows` rows makes room for. An unpartitioned table's
   * builders get their share of the rows (a tenth more over fixed buckets, for uneven spreads), so a large call fills
   * each without regrowing it — doubling copies every buffer and churns external memory, which makes V8 run full
   * collections. Partitioned tables (how rows spread over partitions is unknown) and small calls (a cluster writer's
   * fetches) start at 4096 rows and grow.
   */
  private builderCapacity(rows: number): number {
    if (this.partitionIdx.length > 0) return MIN_BUILDER_CAPACITY;
    const share = this.table.bucket > 0 && !this.single ? Math.ceil((rows / this.table.bucket) * 1.1) : rows;
    return Math.min(this.maxRowsPerFile, Math.max(MIN_BUILDER_CAPACITY, share));
  }

  /** The canonical values of the columns that route a row (partition keys, bucket keys), as a partial row. */
  private routeOf(input: Readonly<Record<string, unknown>>): Row {
    const out: Row = {};
    for (const c of this.routeColumns) {
      const v = input[c.name];
      out[c.name] = c.convert(v === undefined ? null : v);
    }
    return out;
  }

  /** Validates and buffers one input row (a primary-key table's with its `_row_kind`); throws DataInvalid with the reason. */
  writeInput(input: Readonly<Record<string, unknown>>): void {
    this.writeRow(this.convert(input));
  }

  /** Buffers one canonical row (already validated; a primary-key table's with its `_VALUE_KIND`). */
  writeRow(row: Row): void {
    const buf = this.single ? (this.singleBuffer ??= this.bufferFor(row)) : this.bufferFor(row);
    if (buf.builder === null) buf.builder = new RecordBatchBuilder(this.bufferFields, this.capacityHint, this.arrays);
    buf.builder.appendRow(row);
    if (buf.builder.length >= this.maxRowsPerFile) buf.batches.push(buf.builder.finish());
  }

  /**
   * Buffers an Arrow batch whose columns are the table's (by name). Unpartitioned tables without fixed buckets
   * take the batch as it is (no per-row work); others are routed row by row.
   */
  writeArrow(batch: arrow.RecordBatch): void {
    if (this.kv !== null) {
      // Rows of a primary-key table go through their kinds (a `_row_kind` column, else +I), one by one.
      const kindColumn = batch.schema.fields.some((f) => f.name === ROW_KIND_COLUMN) ? [{ name: ROW_KIND_COLUMN, type: { root: "VARCHAR", length: 2147483647, nullable: true } as const }] : [];
      this.writeRows(recordBatchToRows([...this.table.schema.fields, ...kindColumn], batch));
      return;
    }
    if (this.partitionIdx.length === 0 && (this.bucketFn === null || this.single) && this.matchesTableSchema(batch)) {
      const buf = this.single ? (this.singleBuffer ??= this.bufferFor({})) : this.bufferFor({});
      // Rows buffered before this batch were written first: keep them first.
      if (buf.builder !== null && buf.builder.length > 0) buf.batches.push(buf.builder.finish());
      buf.batches.push(batch);
      return;
    }
    // Routed (or differently typed) data goes row by row; the values read from Arrow are canonical already.
    for (const row of this.fileWriter.batchToRecords(batch)) this.writeRow(row);
  }

  /** Same column names, order and Arrow types as the table's own layout, so the batch can be written as it is. */
  private matchesTableSchema(batch: arrow.RecordBatch): boolean {
    const fields = this.table.schema.fields;
    const got = batch.schema.fields;
    return got.length === fields.length && fields.every((f, i) => got[i]!.name === f.name && arrowUtil.compareTypes(got[i]!.type, toArrowField(f.name, f.type).type));
  }

  private bufferFor(row: Row): BucketBuffer {
    const bucket = this.bucketFn === null ? 0 : this.bucketFn(this.bucketKeyNames.map((k) => row[k] ?? null));
    const unpartitioned = this.partitionIdx.length === 0;
    const known = unpartitioned ? this.bufferByBucket[bucket] : undefined;
    if (known !== undefined) return known;
    const key = `${this.partitionKeyOf(row)}/${bucket}`;
    let buf = this.buffers.get(key);
    if (buf === undefined) {
      const ptypes = this.table.partitionTypes;
      const pvalues = this.partitionIdx.map((k) => row[k] ?? null);
      buf = {
        key,
        partition: serializeBinaryRow(ptypes, pvalues),
        partitionValues: pvalues,
        partitionPath: partitionPath(this.partitionIdx, ptypes, pvalues, {
          defaultName: this.table.options.partitionDefaultName,
          legacyName: this.table.options.partitionLegacyName,
        }),
        bucket,
        builder: null,
        batches: [],
      };
      this.buffers.set(key, buf);
    }
    if (unpartitioned) this.bufferByBucket[bucket] = buf;
    return buf;
  }

  /** Partitions (values) that buffered rows belong to. */
  partitionsTouched(): Value[][] {
    const seen = new Map<string, Value[]>();
    for (const b of this.buffers.values()) seen.set(Buffer.from(b.partition).toString("hex"), b.partitionValues);
    return [...seen.values()];
  }

  /**
   * Writes every buffered row into data files and returns one CommitMessage per (partition, bucket).
   * The cut is synchronous: rows buffered after this call starts belong to the next call, so a caller can record
   * exactly which input the returned files cover (the cluster writer's offsets). Calls must not overlap.
   */
  async prepareCommit(): Promise<CommitMessage[]> {
    const work: Array<{ key: string; buf: BucketBuffer; batches: arrow.RecordBatch[] }> = [];
    for (const [key, buf] of this.buffers) {
      if (buf.builder !== null && buf.builder.length > 0) buf.batches.push(buf.builder.finish());
      buf.builder = null;
      if (buf.batches.length > 0) work.push({ key, buf, batches: buf.batches });
      buf.batches = [];
    }
    // A counter given by the caller is taken from now, synchronously with the cut: the numbers belong to this call.
    const counter = this.kv !== null ? this.sequenceCounter : undefined;
    const taken = work.map(({ batches }) => {
      if (counter === undefined) return null;
      const first = counter.next;
      counter.next += BigInt(batches.reduce((n, b) => n + b.numRows, 0));
      return first;
    });
    const kv = this.kv;
    // Primary-key buckets flush side by side: each sorts here while the others' runs encode in the pool.
    if (kv !== null) return Promise.all(work.map(({ key, buf, batches }, i) => this.flushKeyed(kv, key, buf, batches, taken[i]!)));
    const out: CommitMessage[] = [];
    for (const { key, buf, batches } of work) {
      let seq = await this.nextSequence(key);
      const files: DataFileMeta[] = await this.fileWriter.writeFiles(buf.partitionPath, buf.bucket, groupBatches(batches, this.maxRowsPerFile), seq, (path) => this.written.push(path));
      if (files.length > 0) seq = files[files.length - 1]!.maxSequenceNumber + 1n;
      this.nextSeqByBucket!.set(key, seq);
      out.push({ partition: buf.partition, bucket: buf.bucket, totalBuckets: this.table.bucket, newFiles: files, deletedFiles: [] });
    }
    return out;
  }

  /**
   * One bucket's buffer of a primary-key table: sorted and folded into one level-0 sorted run (and, with
   * `changelog-producer = input`, a changelog file of every row). Every buffered row took a sequence number.
   */
  private async flushKeyed(kv: { layout: KeyValueLayout; writer: KeyValueFileWriter }, key: string, buf: BucketBuffer, batches: arrow.RecordBatch[], taken: bigint | null): Promise<CommitMessage> {
    const rows = batches.reduce((n, b) => n + b.numRows, 0);
    let seq: bigint;
    if (taken !== null) seq = taken;
    else {
      seq = await this.nextSequence(key);
      this.nextSeqByBucket!.set(key, seq + BigInt(rows));
    }
    const flushed = await this.encodeFlush(kv, batches, rows, seq);
    const onPath = (path: string): void => void this.written.push(path);
    const level0 = { level: 0, fileSource: FileSource.APPEND };
    const newFiles = flushed.data === null ? [] : [await kv.writer.persist(buf.partitionPath, buf.bucket, flushed.data, level0, onPath)];
    const changelogFiles = flushed.changelog === null ? [] : [await kv.writer.persist(buf.partitionPath, buf.bucket, flushed.changelog, { ...level0, changelog: true }, onPath)];
    return { partition: buf.partition, bucket: buf.bucket, totalBuckets: this.table.bucket, newFiles, deletedFiles: [], changelogFiles };
  }

  /**
   * Sorts, folds and encodes one bucket's buffer: in the Parquet pool when there is one and the buffer is not small
   * (a worker round trip costs more than a few thousand rows), so the buckets flush side by side on the workers
   * while this thread, whose heap holds the caller's row objects, makes none of the flush's garbage; else here.
   */
  private async encodeFlush(kv: { layout: KeyValueLayout; writer: KeyValueFileWriter }, batches: arrow.RecordBatch[], rows: number, firstSeq: bigint): Promise<EncodedKeyedFlush> {
    const spec = { schema: kv.layout.schema, encode: kv.writer.encodeSpec, firstSeq };
    if (this.pool === null || rows < POOL_MIN_ROWS) return encodeKeyedFlush(batches, spec);
    try {
      return await this.pool.flushKeyed<EncodedKeyedFlush>(batches, spec);
    } finally {
      // The worker read its copy of the rows: the builders' buffers can serve the next write's builders.
      this.recycler?.giveBatches(batches);
    }
  }

  /**
   * How this table's files are encoded, and how many rows one file holds at most: what a bucket buffer kept
   * elsewhere (a decoding worker) needs to encode files exactly as `prepareCommit` would.
   */
  get encodeSpec(): DataFileEncodeSpec & { maxRowsPerFile: number } {
    return { ...this.fileWriter.encodeSpec, maxRowsPerFile: this.maxRowsPerFile };
  }

  /**
   * What a bucket buffer kept elsewhere needs to hold and encode this table's rows: its columns (a primary-key
   * table's end with `_VALUE_KIND`) and, for a primary-key table, its schema and key-value encoding.
   */
  get bufferSpec(): DataFileEncodeSpec & { fields: DataField[]; keyed?: { schema: TableSchema; encode: KeyValueEncodeSpec } } {
    return { fields: this.bufferFields, ...this.fileWriter.encodeSpec, ...(this.kv !== null ? { keyed: { schema: this.table.schema, encode: this.kv.writer.encodeSpec } } : {}) };
  }

  /**
   * Writes a flush encoded elsewhere (a worker's bucket buffer) for the single bucket of an unpartitioned write and
   * returns its CommitMessage: an append table's files with the sequence numbers `prepareCommit` would give; a
   * primary-key table's sorted run (and changelog file), whose rows already carry theirs (`firstSeq` on, taken from
   * the counter by the caller). Nothing may be buffered here; calls must not overlap each other or `prepareCommit`.
   */
  async commitEncoded(flush: EncodedFlush): Promise<CommitMessage[]> {
    if (!this.single || this.partitionIdx.length > 0) throw new LakeError(ErrorKind.Unexpected, `commitEncoded needs an unpartitioned single-bucket write of ${this.table.name}`);
    if (this.bufferedRows > 0) throw new LakeError(ErrorKind.Unexpected, `commitEncoded with rows buffered in this TableWrite of ${this.table.name}`);
    const buf = (this.singleBuffer ??= this.bufferFor({}));
    const onPath = (path: string): void => void this.written.push(path);
    if (flush.kind === "keyed") {
      if (this.kv === null) throw new LakeError(ErrorKind.Unexpected, `${this.table.name} has no primary key: a keyed flush cannot be committed to it`);
      const level0 = { level: 0, fileSource: FileSource.APPEND };
      const newFiles = flush.data === null ? [] : [await this.kv.writer.persist(buf.partitionPath, buf.bucket, flush.data, level0, onPath)];
      const changelogFiles = flush.changelog === null ? [] : [await this.kv.writer.persist(buf.partitionPath, buf.bucket, flush.changelog, { ...level0, changelog: true }, onPath)];
      return [{ partition: buf.partition, bucket: buf.bucket, totalBuckets: this.table.bucket, newFiles, deletedFiles: [], changelogFiles }];
    }
    const seq = await this.nextSequence(buf.key);
    const metas = await this.fileWriter.persistEncoded(buf.partitionPath, buf.bucket, flush.files, seq, onPath);
    if (metas.length > 0) this.nextSeqByBucket!.set(buf.key, metas[metas.length - 1]!.maxSequenceNumber + 1n);
    return [{ partition: buf.partition, bucket: buf.bucket, totalBuckets: this.table.bucket, newFiles: metas, deletedFiles: [] }];
  }

  /** Rows buffered and not yet written. */
  get bufferedRows(): number {
    let n = 0;
    for (const b of this.buffers.values()) {
      n += b.builder?.length ?? 0;
      for (const x of b.batches) n += x.numRows;
    }
    return n;
  }

  /**
   * Bytes of buffered data: exact for finished batches (their Arrow buffers); rows still in a builder count at the
   * average row size of the finished batches, or 64 bytes before there is one.
   */
  get bufferedBytes(): number {
    let bytes = 0;
    let rows = 0;
    let pendingRows = 0;
    for (const b of this.buffers.values()) {
      pendingRows += b.builder?.length ?? 0;
      for (const x of b.batches) {
        bytes += x.data.byteLength;
        rows += x.numRows;
      }
    }
    return bytes + pendingRows * (rows > 0 ? bytes / rows : 64);
  }

  /** Next sequence number of a bucket: one past the highest among its live files (read once per TableWrite). */
  private async nextSequence(key: string): Promise<bigint> {
    // One read of the live files, shared by the buckets that flush side by side (each waits for the whole map).
    // A failed read (IO) is not kept: the next flush reads again.
    this.sequencesLoaded ??= this.loadSequences().catch((e: unknown) => {
      this.sequencesLoaded = null;
      throw e;
    });
    await this.sequencesLoaded;
    return this.nextSeqByBucket!.get(key) ?? 0n;
  }

  private sequencesLoaded: Promise<void> | null = null;

  private async loadSequences(): Promise<void> {
    const next = new Map<string, bigint>();
    const latest = await this.table.snapshots.latest();
    if (latest !== null) {
      for (const e of await new ManifestStore(this.table).readLiveEntries(latest)) {
        const k = `${Buffer.from(e.partition).toString("hex")}/${e.bucket}`;
        const after = e.file.maxSequenceNumber + 1n;
        if ((next.get(k) ?? 0n) < after) next.set(k, after);
      }
    }
    this.nextSeqByBucket = next;
  }
}

/**
 * What natslake does not write in a primary-key table, refused by name before any row is taken: buckets other than
 * a fixed count (dynamic buckets keep a hash index natslake does not maintain; postpone buckets need Paimon's own
 * rescaling job), thin files and the merge engines not written yet (deletion vectors: refused for every table first).
 */
export function refuseUnwritableKeyed(table: Table): void {
  const refuse = (why: string): never => {
    throw new LakeError(ErrorKind.Unsupported, `${table.name}: ${why}`);
  };
  if (table.bucket === -1) refuse("primary-key tables with dynamic buckets (bucket = -1) are not written by natslake: create the table with a fixed bucket count (bucket = N)");
  if (table.bucket === -2) refuse("primary-key tables with postpone buckets (bucket = -2) are not written by natslake: create the table with a fixed bucket count (bucket = N)");
  if (table.options.bool("data-file.thin-mode")) refuse("data-file.thin-mode = true is not written by natslake (its files keep the _KEY_ columns)");
}

/**
 * Consecutive batches joined (without copying) into pieces of up to `maxRows` rows, each written as one file: a
 * cluster writer buffers one small batch per fetch, and a file per batch would make a flush many tiny files.
 */
export function groupBatches(batches: readonly arrow.RecordBatch[], maxRows: number): Array<arrow.RecordBatch | arrow.Table> {
  const out: Array<arrow.RecordBatch | arrow.Table> = [];
  let group: arrow.RecordBatch[] = [];
  let rows = 0;
  const close = (): void => {
    if (group.length === 1) out.push(group[0]!);
    else if (group.length > 1) out.push(new ArrowTable(group[0]!.schema, group));
    group = [];
    rows = 0;
  };
  for (const b of batches) {
    if (rows > 0 && rows + b.numRows > maxRows) close();
    group.push(b);
    rows += b.numRows;
  }
  close();
  return out;
}
