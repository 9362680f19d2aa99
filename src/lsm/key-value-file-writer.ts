/**
 * Sorted runs of a primary-key table → Parquet data (or changelog) files and their DataFileMeta, as Java's
 * KeyValueDataFileWriter fills it: minKey / maxKey = the first and last row's key (framed BinaryRows of the trimmed
 * key), key statistics over the `_KEY_` columns in "all" mode with truncate(128) (Java's mode for system columns),
 * value statistics over the table's columns in the table's mode (dense: `_VALUE_STATS_COLS` lists the covered ones),
 * the sequence range of the rows, `deleteRowCount` = rows of kind -U/-D (never null: a null means "may contain
 * deletes" to Java), the level, and the file source (APPEND for flushes and every changelog file, COMPACT for
 * compaction rewrites).
 *
 * `encodeKeyValueFile` is pure (a worker thread can run it); `KeyValueFileWriter` writes the bytes (temp name, fsync,
 * rename: never half a file under a name a manifest could reference) and builds the meta. A file made of several
 * chunks encoded one by one (a compaction's output, src/lsm/rolling-writer.ts) gathers its meta in
 * `KeyValueFileStats`: statistics merged over the chunks are those of the whole file.
 */
import type * as arrow from "apache-arrow";
import { writeParquet, type ParquetWriteOptions } from "../codec/parquet.ts";
import type { ParquetEncoderPool } from "../codec/parquet-pool.ts";
import { computeStats, mergeStats, type ValueStats } from "../codec/stats.ts";
import type { StatsMode } from "../codec/stats-mode.ts";
import { serializeBinaryRow } from "../format/binary-row.ts";
import type { DataField } from "../format/data-types.ts";
import { EMPTY_STATS, FileSource, type DataFileMeta, type SimpleStats } from "../format/manifest.ts";
import type { Value } from "../format/values.ts";
import { failpoint } from "../failpoints.ts";
import type { Table } from "../table/table.ts";
import { DataFileWriter, fileStats, localWallClockMillis, valueStatsOf, type DataFileEncodeSpec } from "../write/data-file-writer.ts";
import { keyCopyField, keyFields } from "./key-value-fields.ts";
import type { SortedRows } from "./sort-buffer.ts";

/** Java's statistics mode of system columns (`_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`). */
const KEY_STATS_MODE: StatsMode = { kind: "truncate", length: 128 };

/** How a table's key-value files are encoded, as plain values (structured-cloneable for a worker thread). */
export interface KeyValueEncodeSpec extends DataFileEncodeSpec {
  /** The trimmed key fields (their `_KEY_` copies carry the key statistics). */
  keyFields: DataField[];
}

/** A key-value file encoded away from its writer: bytes and everything of its meta that depends on the rows. */
export interface EncodedKeyValueFile {
  bytes: Uint8Array;
  rowCount: number;
  minKey: Uint8Array;
  maxKey: Uint8Array;
  keyStats: SimpleStats;
  valueStats: SimpleStats;
  minSequenceNumber: bigint;
  maxSequenceNumber: bigint;
  deleteRowCount: number;
}

export function encodeKeyValueFile(rows: SortedRows, spec: KeyValueEncodeSpec): EncodedKeyValueFile {
  return { bytes: writeParquet(rows.batch, spec.parquet), ...keyValueMetaOf(rows, spec) };
}

/** Everything of an encoded file but its bytes: keys, statistics, sequence range, delete rows. */
function keyValueMetaOf(rows: SortedRows, spec: KeyValueEncodeSpec): Omit<EncodedKeyValueFile, "bytes"> {
  const keyTypes = spec.keyFields.map((f) => f.type);
  return {
    rowCount: rows.batch.numRows,
    minKey: serializeBinaryRow(keyTypes, rows.minKey),
    maxKey: serializeBinaryRow(keyTypes, rows.maxKey),
    keyStats: keyStatsOf(spec.keyFields, rows.batch),
    valueStats: valueStatsOf(spec.statsFields, spec.statsModes, rows.batch),
    minSequenceNumber: rows.minSequenceNumber,
    maxSequenceNumber: rows.maxSequenceNumber,
    deleteRowCount: rows.deleteRows,
  };
}

/** Statistics of every key field, read from its `_KEY_` copy, truncated at 128 as Java does for system columns. */
function keyStatsOf(fields: readonly DataField[], batch: arrow.RecordBatch): SimpleStats {
  return finishKeyStats(fields, computeStats(fields.map(keyCopyField), batch));
}

/** Key statistics over a whole file (`raw`: over the `_KEY_` copies) as a manifest stores them, under the key fields' types. */
function finishKeyStats(fields: readonly DataField[], raw: ValueStats): SimpleStats {
  return fileStats(fields, fields.map(() => KEY_STATS_MODE), raw);
}

/**
 * The meta of a key-value file written as several chunks of rows (each in key order, every one after the one
 * before): statistics computed per chunk and merged, the first chunk's first key, the last chunk's last key.
 */
export class KeyValueFileStats {
  private keyStats: ValueStats | null = null;
  private valueStats: ValueStats | null = null;
  private minKey: Value[] = [];
  private maxKey: Value[] = [];
  private minSeq = 0n;
  private maxSeq = 0n;
  private deletes = 0;
  rowCount = 0;

  constructor(private readonly spec: KeyValueEncodeSpec) {}

  add(rows: SortedRows): void {
    if (rows.batch.numRows === 0) return;
    const copies = this.spec.keyFields.map(keyCopyField);
    const keyStats = computeStats(copies, rows.batch);
    this.keyStats = this.keyStats === null ? keyStats : mergeStats(copies, this.keyStats, keyStats);
    const fields = this.spec.statsFields;
    if (fields !== null && fields.length > 0) {
      const valueStats = computeStats(fields, rows.batch);
      this.valueStats = this.valueStats === null ? valueStats : mergeStats(fields, this.valueStats, valueStats);
    }
    if (this.rowCount === 0) {
      this.minKey = rows.minKey;
      this.minSeq = rows.minSequenceNumber;
      this.maxSeq = rows.maxSequenceNumber;
    } else {
      if (rows.minSequenceNumber < this.minSeq) this.minSeq = rows.minSequenceNumber;
      if (rows.maxSequenceNumber > this.maxSeq) this.maxSeq = rows.maxSequenceNumber;
    }
    this.maxKey = rows.maxKey;
    this.deletes += rows.deleteRows;
    this.rowCount += rows.batch.numRows;
  }

  /** The file of these rows, encoded as `bytes`. */
  finish(bytes: Uint8Array): EncodedKeyValueFile {
    const keyTypes = this.spec.keyFields.map((f) => f.type);
    const fields = this.spec.statsFields;
    return {
      bytes,
      rowCount: this.rowCount,
      minKey: serializeBinaryRow(keyTypes, this.minKey),
      maxKey: serializeBinaryRow(keyTypes, this.maxKey),
      keyStats: this.keyStats === null ? EMPTY_STATS : finishKeyStats(this.spec.keyFields, this.keyStats),
      valueStats: fields === null || fields.length === 0 || this.valueStats === null ? EMPTY_STATS : fileStats(fields, this.spec.statsModes, this.valueStats),
      minSequenceNumber: this.minSeq,
      maxSequenceNumber: this.maxSeq,
      deleteRowCount: this.deletes,
    };
  }
}

export interface KeyValueWriteOptions {
  /** LSM level of the file: 0 for flushes, the output level for compaction rewrites. */
  level: number;
  fileSource: FileSource;
  /** A changelog file (`changelog-file.prefix`) instead of a data file. */
  changelog?: boolean;
}

export class KeyValueFileWriter {
  private readonly values: DataFileWriter;
  readonly encodeSpec: KeyValueEncodeSpec;

  private readonly pool: ParquetEncoderPool | null;

  constructor(
    private readonly table: Table,
    opts: { pool?: ParquetEncoderPool | null; parquet?: ParquetWriteOptions } = {},
  ) {
    // The value columns' statistics and the Parquet settings are an append file's: one source of those rules.
    this.values = new DataFileWriter(table, { pool: opts.pool ?? null, ...(opts.parquet !== undefined ? { parquet: opts.parquet } : {}) });
    this.encodeSpec = { ...this.values.encodeSpec, keyFields: keyFields(table.schema) };
    this.pool = opts.pool ?? null;
  }

  /** Parquet bytes of a batch of physical rows in this table's settings, encoded in the pool when the writer has one. */
  encodeParquet(batch: arrow.RecordBatch): Promise<Uint8Array> {
    return this.pool === null ? Promise.resolve(writeParquet(batch, this.encodeSpec.parquet)) : this.pool.encode(batch, this.encodeSpec.parquet);
  }

  /** Writes a file encoded elsewhere (`encodeKeyValueFile`) and returns its meta. */
  async persist(partitionPath: string, bucket: number, f: EncodedKeyValueFile, opts: KeyValueWriteOptions, onPath: (path: string) => void): Promise<DataFileMeta> {
    failpoint("writer.parquet.encoded");
    const prefix = opts.changelog === true ? (this.table.options.get("changelog-file.prefix") ?? "changelog-") : (this.table.options.get("data-file.prefix") ?? "data-");
    const fileName = this.table.paths.newDataFileName(prefix, "parquet");
    const path = this.table.paths.dataFilePath(partitionPath, bucket, fileName);
    onPath(path);
    await this.table.io.writeFile(path, f.bytes);
    failpoint("writer.file.written");
    return {
      fileName,
      fileSize: f.bytes.length,
      rowCount: f.rowCount,
      minKey: f.minKey,
      maxKey: f.maxKey,
      keyStats: f.keyStats,
      valueStats: f.valueStats,
      minSequenceNumber: f.minSequenceNumber,
      maxSequenceNumber: f.maxSequenceNumber,
      schemaId: this.table.schema.id,
      level: opts.level,
      extraFiles: [],
      creationTimeMillis: localWallClockMillis(),
      deleteRowCount: f.deleteRowCount,
      embeddedIndex: null,
      fileSource: opts.fileSource,
      valueStatsCols: this.values.valueStatsLayout.cols,
      externalPath: null,
      firstRowId: null,
      writeCols: null,
    };
  }
}

export { FileSource };
