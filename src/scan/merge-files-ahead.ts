/**
 * Read-ahead for a merged read of a primary-key table (src/scan/read.ts): the buckets merge one after another on the
 * calling thread while their files decode in the Parquet pool, and this starts the decodes of the buckets to come
 * while the current one merges, so that the pool's workers stay busy.
 *
 * Why more than "the next bucket": a live table's bucket is typically one large compacted file plus a few small
 * level-0 files. Reading only the next bucket ahead kept one worker decoding that one large file while the other
 * idled, and the merge then waited for it: a live 1M-key table scanned at 0.4× the speed of the same table compacted
 * (bench/cluster-pk.bench.ts), its main thread idle half the time. Here a file starts while fewer files are decoding
 * than the pool has workers, as long as what was read ahead and not yet taken stays within twice READ_AHEAD_BYTES of
 * Parquet (or is nothing at all, so a single file larger than that still goes ahead), and small files go ahead
 * freely within READ_AHEAD_BYTES. Within a bucket the largest file starts first: it takes longest.
 */
import type * as arrow from "apache-arrow";
import type { DataFileMeta } from "../format/manifest.ts";
import type { ParquetEncoderPool } from "../codec/parquet-pool.ts";
import type { DataSplit } from "./plan.ts";

/**
 * Parquet bytes read ahead without regard to the workers: small files, many per worker. Also the bound of a plain
 * scan's read-ahead (read.ts `filesAhead`): beyond the pool-size + 1 files that keep every worker busy, further files
 * start while those in flight total at most this, so in a table of many small files the workers already decode the
 * next buckets' large files while the calling thread takes a run of small ones.
 */
export const READ_AHEAD_BYTES = 8 * 1024 * 1024;
/** Files read ahead at most, whatever their size. */
export const READ_AHEAD_MAX_FILES = 32;

type ReadFile = (split: DataSplit, file: DataFileMeta) => Promise<arrow.RecordBatch[]>;

interface Started {
  batches: Promise<arrow.RecordBatch[]>;
  bytes: number;
}

export class MergeFilesAhead {
  /** Every file of the read, bucket by bucket in merge order, the largest of a bucket first. */
  private readonly order: Array<{ split: DataSplit; file: DataFileMeta }>;
  private next = 0;
  /** Files started ahead and not taken yet (their decoded batches are held until the merge takes them). */
  private readonly started = new Map<DataFileMeta, Started>();
  /** Files the merge asked for before they were started here: never started again. */
  private readonly takenEarly = new Set<DataFileMeta>();
  private startedBytes = 0;
  /** Reads started here still decoding. */
  private decoding = 0;

  /**
   * `workers`: the pool's size (0: no read-ahead at all — no pool, or a read with a limit, which must not decode
   * files it may never need).
   */
  constructor(
    splits: readonly DataSplit[],
    private readonly workers: number,
    private readonly read: ReadFile,
  ) {
    this.order = workers === 0 ? [] : splits.flatMap((split) => [...split.files].sort((a, b) => b.fileSize - a.fileSize).map((file) => ({ split, file })));
  }

  static of(splits: readonly DataSplit[], pool: ParquetEncoderPool | null, limited: boolean, read: ReadFile): MergeFilesAhead {
    return new MergeFilesAhead(splits, pool === null || limited ? 0 : pool.size, read);
  }

  /** The merge of `split` needs `file`: its read started ahead, or one started now. */
  take(split: DataSplit, file: DataFileMeta): Promise<arrow.RecordBatch[]> {
    const ahead = this.started.get(file);
    if (ahead === undefined) {
      this.takenEarly.add(file);
      const batches = this.read(split, file);
      this.startMore();
      return batches;
    }
    this.started.delete(file);
    this.startedBytes -= ahead.bytes;
    this.startMore();
    return ahead.batches;
  }

  /** Starts files ahead while they fit (see the module comment); called on each take and each finished decode. */
  private startMore(): void {
    while (this.next < this.order.length) {
      const { split, file } = this.order[this.next]!;
      if (this.takenEarly.has(file)) {
        this.next++;
        continue;
      }
      const bytes = this.startedBytes + file.fileSize;
      const freely = bytes <= READ_AHEAD_BYTES;
      const forAWorker = this.decoding < this.workers && (this.startedBytes === 0 || bytes <= 2 * READ_AHEAD_BYTES);
      if (this.started.size >= READ_AHEAD_MAX_FILES || !(freely || forAWorker)) return;
      this.next++;
      const batches = this.read(split, file);
      this.decoding++;
      const done = (): void => {
        this.decoding--;
        this.startMore();
      };
      // Observed here too, so a read abandoned (the reader stopped early) never becomes an unhandled rejection.
      batches.then(done, done);
      this.started.set(file, { batches, bytes: file.fileSize });
      this.startedBytes += file.fileSize;
    }
  }

  /** No more files start (the read ended, perhaps early); those in flight finish and are dropped. */
  close(): void {
    this.next = this.order.length;
    this.started.clear();
    this.startedBytes = 0;
  }

  /** Starts the first files (the merge of the first bucket then finds them decoding). */
  begin(): this {
    this.startMore();
    return this;
  }
}
