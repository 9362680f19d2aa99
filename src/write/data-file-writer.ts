/**
 * DataFileWriter: one Arrow batch (or rows) → one Parquet data file in its bucket directory, and the DataFileMeta
 * that describes it (exact size, row count, sequence range, value statistics). The file is written under a temp
 * name, fsynced and renamed, so a crash never leaves a half-written file under a name a manifest could reference.
 */
import * as arrow from "apache-arrow";
import { failpoint } from "../failpoints.ts";
import { recordBatchToRows, rowsToRecordBatch } from "../codec/columns.ts";
import { writeParquet } from "../codec/parquet.ts";
import { computeStats } from "../codec/stats.ts";
import { serializeBinaryRow } from "../spec/binary-row.ts";
import { hasOrder } from "../codec/stats.ts";
import { EMPTY_STATS, FileSource, type DataFileMeta, type SimpleStats } from "../spec/manifest.ts";
import type { Row } from "../spec/values.ts";
import type { DataField } from "../spec/data-types.ts";
import type { Table } from "../table/table.ts";

/** `_CREATION_TIME` is local wall-clock millis in Java and pypaimon (LocalDateTime.now()), not UTC epoch. */
export const localWallClockMillis = (now = Date.now()): number => now - new Date(now).getTimezoneOffset() * 60_000;

export class DataFileWriter {
  private readonly statsEnabled: boolean;
  private readonly statsColumns: DataField[];

  constructor(private readonly table: Table) {
    const mode = (table.options.get("metadata.stats-mode") ?? "full").toLowerCase();
    this.statsEnabled = mode !== "none";
    this.statsColumns = table.schema.fields.filter((f) => hasOrder(f.type));
  }

  /** Canonical rows of a batch whose columns are the table's (by name). */
  batchToRecords(batch: arrow.RecordBatch): Row[] {
    return recordBatchToRows(this.table.schema.fields, batch);
  }

  /**
   * Writes `data` as one Parquet file of bucket `bucket` in partition directory `partitionPath`; rows get sequence
   * numbers `firstSeq, firstSeq + 1, …`. `onPath` learns the file's path before it is written (so an aborted write
   * can remove it).
   */
  async write(partitionPath: string, bucket: number, data: arrow.RecordBatch | Row[], firstSeq: bigint, onPath: (path: string) => void): Promise<DataFileMeta> {
    const fields = this.table.schema.fields;
    const batch = data instanceof arrow.RecordBatch ? data : rowsToRecordBatch(fields, data);
    const bytes = writeParquet(batch, {
      compression: this.table.options.fileCompression,
      zstdLevel: this.table.options.int("file.compression.zstd-level"),
    });
    failpoint("writer.parquet.encoded");
    const fileName = this.table.paths.newDataFileName(this.table.options.get("data-file.prefix") ?? "data-", "parquet");
    const path = this.table.paths.dataFilePath(partitionPath, bucket, fileName);
    onPath(path);
    await this.table.io.writeFile(path, bytes);
    failpoint("writer.file.written");
    return {
      fileName,
      fileSize: bytes.length,
      rowCount: batch.numRows,
      minKey: EMPTY_STATS.minValues,
      maxKey: EMPTY_STATS.maxValues,
      keyStats: EMPTY_STATS,
      valueStats: this.statsEnabled ? this.valueStats(batch) : EMPTY_STATS,
      minSequenceNumber: firstSeq,
      maxSequenceNumber: firstSeq + BigInt(Math.max(batch.numRows, 1) - 1),
      schemaId: this.table.schema.id,
      level: 0,
      extraFiles: [],
      creationTimeMillis: localWallClockMillis(),
      deleteRowCount: 0,
      embeddedIndex: null,
      fileSource: FileSource.APPEND,
      // null = stats cover every column; a list = only these (dense mode); [] = none.
      valueStatsCols: !this.statsEnabled ? [] : this.statsColumns.length === fields.length ? null : this.statsColumns.map((f) => f.name),
      externalPath: null,
      firstRowId: null,
      writeCols: null,
    };
  }

  /**
   * Exact min/max/null counts over the columns that have an order. Nested columns (ARRAY, MAP, ROW) are left out
   * and the file lists the covered columns in `_VALUE_STATS_COLS` (Paimon's dense statistics mode).
   */
  private valueStats(batch: arrow.RecordBatch): SimpleStats {
    const fields = this.statsColumns;
    const stats = computeStats(fields, batch);
    const types = fields.map((f) => f.type);
    return {
      minValues: serializeBinaryRow(types, stats.min),
      maxValues: serializeBinaryRow(types, stats.max),
      nullCounts: stats.nullCounts.map((n) => BigInt(n)),
    };
  }
}
