/**
 * A compaction's output as Paimon's RollingFileWriter makes it: one stream of physical rows in key order, cut into
 * files of about `target-file-size` — a file is closed once it holds at least that many bytes (Java checks its
 * writer's length every 1,000 records; here after each chunk), so every file but the last is at least the target,
 * and the next compaction upgrades it instead of rewriting it (`compactionFileSize` is 0.7 × the target).
 *
 * Memory stays bounded whatever the target: each chunk of rows is encoded to Parquet on its own (in the worker pool
 * when the writer has one, while the merge goes on with the next chunk) and only its bytes are kept; a file's chunks
 * are stitched into one Parquet file byte for byte (src/codec/parquet-stitch.ts) and its statistics merged over the
 * chunks (`KeyValueFileStats`), which are those of the whole file.
 *
 * Every path is told to `onPath` before its file is written, so a caller that gives up removes what was written.
 */
import { parquetFooter, stitchParquet } from "../codec/parquet-stitch.ts";
import { ErrorKind, LakeError } from "../errors.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import { KeyValueFileStats, type KeyValueFileWriter, type KeyValueWriteOptions } from "./key-value-file-writer.ts";
import type { SortedRows } from "./sort-buffer.ts";

export interface RollingWriteOptions extends KeyValueWriteOptions {
  /** Bytes a file reaches before the next one starts. */
  targetFileSize: number;
}

export class RollingKeyValueWriter {
  /** The files written so far, in key order. */
  readonly files: DataFileMeta[] = [];
  /** The chunk being encoded (one ahead of the file being filled). */
  private pending: { rows: SortedRows; bytes: Promise<Uint8Array> } | null = null;
  private pieces: Uint8Array[] = [];
  private bytes = 0;
  private stats: KeyValueFileStats;

  constructor(
    private readonly writer: KeyValueFileWriter,
    private readonly where: { partitionPath: string; bucket: number },
    private readonly opts: RollingWriteOptions,
    private readonly onPath: (path: string) => void,
  ) {
    if (!(opts.targetFileSize > 0)) throw new LakeError(ErrorKind.DataInvalid, `target file size must be positive, got ${opts.targetFileSize}`);
    this.stats = new KeyValueFileStats(writer.encodeSpec);
  }

  /** Adds the next chunk of rows (after every row written before, in key order). */
  async write(rows: SortedRows): Promise<void> {
    if (rows.batch.numRows === 0) return;
    const bytes = this.writer.encodeParquet(rows.batch);
    bytes.catch(() => undefined); // awaited below or by `close`/`abort`
    await this.settle();
    this.pending = { rows, bytes };
  }

  /** Writes what is left and returns every file written. */
  async close(): Promise<DataFileMeta[]> {
    await this.settle();
    if (this.pieces.length > 0) await this.roll();
    return this.files;
  }

  /** Waits for the chunk in flight (so no file appears after the caller cleaned up) and drops what is buffered. */
  async abort(): Promise<void> {
    const p = this.pending;
    this.pending = null;
    await p?.bytes.catch(() => undefined);
    this.pieces = [];
  }

  /** Takes the chunk encoded meanwhile into the current file, and closes the file once it reached the target. */
  private async settle(): Promise<void> {
    const p = this.pending;
    if (p === null) return;
    this.pending = null;
    const bytes = await p.bytes;
    this.pieces.push(bytes);
    this.bytes += bytes.length;
    this.stats.add(p.rows);
    if (this.bytes >= this.opts.targetFileSize) await this.roll();
  }

  private async roll(): Promise<void> {
    const bytes = this.pieces.length === 1 ? this.pieces[0]! : stitch(this.pieces);
    const encoded = this.stats.finish(bytes);
    this.pieces = [];
    this.bytes = 0;
    this.stats = new KeyValueFileStats(this.writer.encodeSpec);
    const { targetFileSize: _target, ...write } = this.opts;
    this.files.push(await this.writer.persist(this.where.partitionPath, this.where.bucket, encoded, write, this.onPath));
  }
}

/** One Parquet file of several encoded the same way, every row group of each in order. */
function stitch(pieces: readonly Uint8Array[]): Uint8Array {
  const res = stitchParquet(
    pieces.map((bytes) => {
      const footer = parquetFooter(bytes);
      return { bytes, rowGroups: footer.groupRows.map((_, i) => i), footer };
    }),
  );
  // Chunks of one writer share schema, metadata and format version: a refusal is a bug here, not bad input.
  if (res.kind === "refused") throw new LakeError(ErrorKind.Unexpected, `stitching a compaction output's chunks failed: ${res.reason}`);
  return res.bytes;
}
