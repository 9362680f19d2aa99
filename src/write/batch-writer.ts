/**
 * BatchWriter: one batch write = one commit under a fresh commit user (Paimon's batch write). Used by the CLI's
 * `write` and by tests and benchmarks. INSERT OVERWRITE of one partition or of the whole table is guarded: rows
 * outside the named partition are rejected, and a commit that changed the partition after this write started
 * makes the overwrite fail with a Conflict instead of silently dropping rows it never saw.
 */
import { randomUUID } from "node:crypto";
import type * as arrow from "apache-arrow";
import { dataInvalid } from "../errors.ts";
import { FileStoreCommit, type CommitResult } from "../commit/file-store-commit.ts";
import { deserializeBinaryRow, serializeBinaryRow } from "../format/binary-row.ts";
import { partitionPath } from "../format/partition.ts";
import type { Snapshot } from "../format/snapshot.ts";
import type { Value } from "../format/values.ts";
import { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import { TableWrite } from "./table-write.ts";

/** `partition: null` replaces the whole table; a value list replaces exactly that partition. */
export interface OverwriteSpec {
  partition: Value[] | null;
}

export interface BatchWriterOptions {
  commitUser?: string;
  overwrite?: OverwriteSpec | undefined;
}

export interface BatchCommitResult extends CommitResult {
  files: number;
  rows: number;
  replacedFiles: number;
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.compare(a, b) === 0;

export class BatchWriter {
  private readonly tableWrite: TableWrite;
  private rows = 0;

  private constructor(
    private readonly table: Table,
    readonly commitUser: string,
    readonly overwrite: OverwriteSpec | undefined,
    /** The snapshot current when the write began: the overwrite's view of the table. */
    private readonly readSnapshotId: number | null,
  ) {
    this.tableWrite = new TableWrite(table);
  }

  static async open(table: Table, opts: BatchWriterOptions = {}): Promise<BatchWriter> {
    if (opts.overwrite?.partition && opts.overwrite.partition.length !== table.partitionKeys.length) {
      throw dataInvalid(`the overwrite partition must name all partition keys (${table.partitionKeys.join(", ")})`);
    }
    const readSnapshotId = await table.snapshots.latestId();
    return new BatchWriter(table, opts.commitUser ?? randomUUID(), opts.overwrite, readSnapshotId);
  }

  /** Validates and buffers rows (JS objects keyed by column name). */
  async write(records: readonly Record<string, unknown>[]): Promise<void> {
    this.tableWrite.writeRows(records, this.rows);
    this.rows += records.length;
    this.checkOverwritePartition();
    await Promise.resolve();
  }

  /** Primary-key tables: inserts or replaces these rows by key. */
  async upsert(rows: readonly Record<string, unknown>[]): Promise<void> {
    this.tableWrite.upsert(rows);
    this.rows += rows.length;
    this.checkOverwritePartition();
    await Promise.resolve();
  }

  /** Primary-key tables: deletes the rows of these keys (objects holding at least the primary-key columns). */
  async delete(keys: readonly Record<string, unknown>[]): Promise<void> {
    this.tableWrite.delete(keys);
    this.rows += keys.length;
    await Promise.resolve();
  }

  async writeArrow(batch: arrow.RecordBatch): Promise<void> {
    this.tableWrite.writeArrow(batch);
    this.rows += batch.numRows;
    this.checkOverwritePartition();
    await Promise.resolve();
  }

  private checkOverwritePartition(): void {
    const target = this.overwrite?.partition;
    if (!target) return;
    const types = this.table.partitionTypes;
    const want = serializeBinaryRow(types, target);
    for (const p of this.tableWrite.partitionsTouched()) {
      if (!sameBytes(serializeBinaryRow(types, p), want)) {
        const opts = { defaultName: this.table.options.partitionDefaultName, legacyName: this.table.options.partitionLegacyName };
        throw dataInvalid(
          `a row belongs to partition ${partitionPath(this.table.partitionKeys, types, p, opts)}, but this write overwrites only ${partitionPath(this.table.partitionKeys, types, target, opts)}`,
        );
      }
    }
  }

  async commit(): Promise<BatchCommitResult> {
    const messages = await this.tableWrite.prepareCommit();
    const files = messages.reduce((n, m) => n + m.newFiles.length, 0);
    const ow = this.overwrite;
    let replacedFiles = 0;
    const types = this.table.partitionTypes;
    const target = ow?.partition ? serializeBinaryRow(types, ow.partition) : null;
    const res = await new FileStoreCommit(this.table).commit({
      commitUser: this.commitUser,
      messages,
      ...(ow
        ? {
            overwrite: {
              matches: (p: Uint8Array) => target === null || sameBytes(p, target) || sameBytes(serializeBinaryRow(types, deserializeBinaryRow(types, p)), target),
              readSnapshotId: this.readSnapshotId,
            },
          }
        : {}),
    });
    if (ow && res.snapshot) {
      const delta = await new ManifestStore(this.table).readDeltaEntries(res.snapshot);
      replacedFiles = delta.filter((e) => e.kind === 1).length;
    }
    return { ...res, files, rows: this.rows, replacedFiles };
  }

  /** Removes the data files written so far (they were never committed). */
  async abort(): Promise<void> {
    await Promise.all(this.tableWrite.writtenFiles.map((p) => this.table.io.delete(p)));
  }
}

export interface OverwritePreview {
  snapshotId: number | null;
  files: number;
  rows: number;
  partitions: Array<{ path: string; files: number; rows: number }>;
}

/** What an overwrite would replace at the latest snapshot (`write --dry-run`). */
export async function describeOverwrite(table: Table, ow: OverwriteSpec): Promise<OverwritePreview> {
  const latest: Snapshot | null = await table.snapshots.latest();
  if (latest === null) return { snapshotId: null, files: 0, rows: 0, partitions: [] };
  const types = table.partitionTypes;
  const target = ow.partition ? serializeBinaryRow(types, ow.partition) : null;
  const opts = { defaultName: table.options.partitionDefaultName, legacyName: table.options.partitionLegacyName };
  const byPartition = new Map<string, { path: string; files: number; rows: number }>();
  for (const e of await new ManifestStore(table).readLiveEntries(latest)) {
    if (target !== null && !sameBytes(e.partition, target)) continue;
    const key = Buffer.from(e.partition).toString("hex");
    let p = byPartition.get(key);
    if (!p) {
      p = { path: partitionPath(table.partitionKeys, types, deserializeBinaryRow(types, e.partition), opts), files: 0, rows: 0 };
      byPartition.set(key, p);
    }
    p.files++;
    p.rows += e.file.rowCount;
  }
  const partitions = [...byPartition.values()].sort((a, b) => a.path.localeCompare(b.path));
  return { snapshotId: latest.id, files: partitions.reduce((n, p) => n + p.files, 0), rows: partitions.reduce((n, p) => n + p.rows, 0), partitions };
}
