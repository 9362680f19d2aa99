/**
 * TableWrite: rows in → data files out, per (partition, bucket), for append tables.
 *
 * Rows are validated and converted to canonical values once (spec/values.ts), routed to their partition and
 * bucket (Paimon's bucket function, so a row lands where Java and pypaimon would put it), and buffered per bucket
 * in arrival order. `prepareCommit()` flushes every buffer into Parquet files and returns one CommitMessage per
 * (partition, bucket); nothing is visible until a commit references the files.
 *
 * Sequence numbers continue per (partition, bucket) from the highest one among the bucket's live files (Java's
 * AppendOnlyWriter), so files of a bucket order by `_MIN_SEQUENCE_NUMBER` = write order.
 */
import type * as arrow from "apache-arrow";
import { dataInvalid, ErrorKind, LakeError } from "../errors.ts";
import type { CommitMessage } from "../commit/commit-message.ts";
import { serializeBinaryRow } from "../spec/binary-row.ts";
import { type BucketFunction, type BucketFunctionType, createBucketFunctionOfType } from "../spec/bucket.ts";
import type { DataFileMeta } from "../spec/manifest.ts";
import { partitionPath } from "../spec/partition.ts";
import { type Row, toCanonical, type Value } from "../spec/values.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { DataFileWriter } from "./data-file-writer.ts";

interface BucketBuffer {
  partition: Uint8Array;
  partitionValues: Value[];
  partitionPath: string;
  bucket: number;
  rows: Row[];
  batches: arrow.RecordBatch[];
  files: DataFileMeta[];
}

export interface TableWriteOptions {
  /** Rows per Parquet file at most (in addition to `target-file-size`); bounds memory of one flush. */
  maxRowsPerFile?: number;
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

  constructor(
    private readonly table: Table,
    opts: TableWriteOptions = {},
  ) {
    if (table.isPrimaryKeyTable) throw new LakeError(ErrorKind.Unsupported, `${table.name} has a primary key; primary-key writes are not supported yet`);
    if (table.options.fileFormat !== "parquet") throw new LakeError(ErrorKind.Unsupported, `file.format '${table.options.fileFormat}' is not supported for writing (parquet is)`);
    if (table.bucket === -2) throw new LakeError(ErrorKind.Unsupported, "postpone buckets (bucket = -2) are not supported for writing");
    this.fileWriter = new DataFileWriter(table);
    this.partitionIdx = table.partitionKeys;
    this.bucketKeyNames = table.bucketKeys;
    this.bucketFn =
      table.bucket > 0
        ? createBucketFunctionOfType(
            (table.options.get("bucket-function.type") ?? "default") as BucketFunctionType,
            this.bucketKeyNames.map((k) => table.typeOf(k)),
            table.bucket,
          )
        : null;
    this.maxRowsPerFile = opts.maxRowsPerFile ?? 2_000_000;
  }

  /** Paths of every data file written so far (for cleanup after an aborted write). */
  get writtenFiles(): readonly string[] {
    return this.written;
  }

  /** Validates and buffers rows; throws DataInvalid naming the row and column on the first bad value. */
  writeRows(input: readonly Record<string, unknown>[], rowOffset = 0): void {
    const fields = this.table.schema.fields;
    const known = new Set(fields.map((f) => f.name));
    for (let i = 0; i < input.length; i++) {
      const rec = input[i]!;
      const row: Row = {};
      try {
        for (const f of fields) row[f.name] = toCanonical(f.type, rec[f.name], f.name);
        for (const k of Object.keys(rec)) if (!known.has(k)) throw dataInvalid(`unknown column '${k}' (columns: ${[...known].join(", ")})`);
      } catch (e) {
        if (e instanceof LakeError) throw new LakeError(e.kind, `row ${rowOffset + i + 1}: ${e.message}`, { context: { ...e.context, row: rowOffset + i + 1 }, cause: e });
        throw e;
      }
      this.bufferFor(row).rows.push(row);
    }
  }

  /**
   * Buffers an Arrow batch whose columns are the table's (by name). Unpartitioned tables without fixed buckets
   * take the batch as it is (no per-row work); others are routed row by row.
   */
  writeArrow(batch: arrow.RecordBatch): void {
    if (this.partitionIdx.length === 0 && this.bucketFn === null) {
      const buf = this.bufferFor({});
      buf.batches.push(batch);
      return;
    }
    this.writeRows(this.fileWriter.batchToRecords(batch));
  }

  private bufferFor(row: Row): BucketBuffer {
    const pvalues = this.partitionIdx.map((k) => row[k] ?? null);
    const bucket = this.bucketFn === null ? 0 : this.bucketFn(this.bucketKeyNames.map((k) => row[k] ?? null));
    const ptypes = this.table.partitionTypes;
    const partition = serializeBinaryRow(ptypes, pvalues);
    const key = `${Buffer.from(partition).toString("hex")}/${bucket}`;
    let buf = this.buffers.get(key);
    if (buf === undefined) {
      buf = {
        partition,
        partitionValues: pvalues,
        partitionPath: partitionPath(this.partitionIdx, ptypes, pvalues, {
          defaultName: this.table.options.partitionDefaultName,
          legacyName: this.table.options.partitionLegacyName,
        }),
        bucket,
        rows: [],
        batches: [],
        files: [],
      };
      this.buffers.set(key, buf);
    }
    return buf;
  }

  /** Partitions (values) that buffered rows belong to. */
  partitionsTouched(): Value[][] {
    const seen = new Map<string, Value[]>();
    for (const b of this.buffers.values()) seen.set(Buffer.from(b.partition).toString("hex"), b.partitionValues);
    return [...seen.values()];
  }

  /** Flushes buffered rows of every bucket into data files. */
  async flush(): Promise<void> {
    for (const [key, buf] of this.buffers) {
      if (buf.rows.length === 0 && buf.batches.length === 0) continue;
      let seq = await this.nextSequence(key);
      const parts: Array<arrow.RecordBatch | Row[]> = [...buf.batches];
      for (let i = 0; i < buf.rows.length; i += this.maxRowsPerFile) parts.push(buf.rows.slice(i, i + this.maxRowsPerFile));
      buf.rows = [];
      buf.batches = [];
      for (const part of parts) {
        const meta = await this.fileWriter.write(buf.partitionPath, buf.bucket, part, seq, (path) => this.written.push(path));
        seq = meta.maxSequenceNumber + 1n;
        buf.files.push(meta);
      }
      this.nextSeqByBucket!.set(key, seq);
    }
  }

  async prepareCommit(): Promise<CommitMessage[]> {
    await this.flush();
    const out: CommitMessage[] = [];
    for (const buf of this.buffers.values()) {
      if (buf.files.length === 0) continue;
      out.push({ partition: buf.partition, bucket: buf.bucket, totalBuckets: this.table.bucket, newFiles: buf.files, deletedFiles: [] });
      buf.files = [];
    }
    return out;
  }

  /** Next sequence number of a bucket: one past the highest among its live files (read once per TableWrite). */
  private async nextSequence(key: string): Promise<bigint> {
    if (this.nextSeqByBucket === null) {
      this.nextSeqByBucket = new Map();
      const latest = await this.table.snapshots.latest();
      if (latest !== null) {
        for (const e of await new ManifestStore(this.table).readLiveEntries(latest)) {
          const k = `${Buffer.from(e.partition).toString("hex")}/${e.bucket}`;
          const next = e.file.maxSequenceNumber + 1n;
          if ((this.nextSeqByBucket.get(k) ?? 0n) < next) this.nextSeqByBucket.set(k, next);
        }
      }
    }
    return this.nextSeqByBucket.get(key) ?? 0n;
  }
}
