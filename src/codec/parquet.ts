/**
 * Parquet files ⇄ Arrow tables through arrow-rs: natslake's native addon, or parquet-wasm 0.8 (arrow-rs compiled to
 * WebAssembly) where the addon is not built — parquet-ops.mjs chooses, and both write the same bytes.
 *
 * - `writeParquet(batchOrTable, options)` → the file's bytes. Data crosses into the codec as an Arrow IPC stream;
 *   nothing is left to free after a write.
 *   Compression names are Paimon's `file.compression` values. By default the whole input becomes one row group
 *   (measured: 64k-row groups cost ~40% more time and ~60% more bytes under ZSTD). Bound the rows per call: under the
 *   wasm codec, wasm memory grows to the largest write and never shrinks. `ParquetEncoderPool` (parquet-pool.ts) runs the same
 *   encoding in worker threads; `encodeRequest` (the data in Paimon's Parquet layout, parquet-layout.ts, and the
 *   resolved writer settings, with the footer rewrite parquet-footer.mjs applies after arrow-rs) is the request
 *   both paths share, so every encode path writes the same bytes.
 * - `readParquet(bytes, {columns})` → an apache-arrow Table (columns projected by name, in file order);
 *   `readParquetAsync` does the same but skips decoding unselected columns.
 * - `parquetRowCount(bytes)` / `parquetFooterInfo(bytes)` → `num_rows` (and the row-group count) from the footer,
 *   decoded directly from its Thrift encoding (no wasm).
 *
 * Writer defaults, chosen by measurement (1M rows × 6 columns of the table-core bench, ZSTD, one row group):
 * | settings                                         | encode  | file    |
 * | ------------------------------------------------ | ------- | ------- |
 * | arrow-rs defaults (dictionary, page statistics)  | ~410 ms | 3.82 MB |
 * | no dictionary, page statistics                   | ~275 ms | 3.12 MB |
 * | no dictionary, chunk statistics (our default)    | ~270 ms | 3.12 MB |
 * | no dictionary, no statistics                     | ~235 ms | 3.12 MB |
 * | dictionary on the low-cardinality column only    | ~295 ms | 3.12 MB |
 * - Dictionary encoding is off: ZSTD already removes the repetition a dictionary would, so dictionary pages bought
 *   nothing in size (files were *larger*: arrow-rs falls back to plain once a dictionary page fills, after paying
 *   for the attempt) and cost ~35% of the encode time. `dictionary: true` or `dictionary: [columns]` turn it on.
 * - Statistics are column-chunk level: min/max/null count per column chunk in the footer, as Java Paimon writes and
 *   DuckDB, Spark and pyarrow use for row-group pruning; page-level statistics and the column/offset index they
 *   feed are skipped (within noise in time; Paimon's own pruning uses the manifest's `_VALUE_STATS` anyway).
 * - Writer version 1.0 (PLAIN / RLE, data page v1). Version 2.0 was ~20% faster and ~35% smaller on the bench data
 *   (DELTA_BINARY_PACKED integers, data page v2), but readers built on older parquet-mr or Flink vectorized readers
 *   (older Java Paimon among them) reject those encodings, so it is opt-in (`writerVersion: "2.0"`).
 *
 * The schema must come from `toArrowSchema` (or pass through `normalizeArrowSchema`, which `writeParquet` applies to
 * foreign tables) for the file to have Paimon's layout: list child `element`, map group `key_value` with a required
 * `key`, NOT NULL columns REQUIRED. arrow-rs also stores the Arrow schema under the `ARROW:schema` footer key, which
 * pyarrow uses to restore exact Arrow types and Java ignores.
 *
 * Limits of parquet-wasm 0.8, which the native codec keeps so that both write the same bytes: the ZSTD level cannot be chosen (arrow-rs's default level 1 is used, which is also
 * Paimon's default `file.compression.zstd-level`); arrow-rs writes no INT96, so timestamps of precision 7–9 are
 * written as FIXED_LEN_BYTE_ARRAY(12) holding INT96 bytes and the footer is rewritten to say INT96, as Java Paimon
 * writes and reads them (parquet-layout.ts, parquet-footer.mjs). arrow-rs leaves NaN out of FLOAT/DOUBLE min/max,
 * so those are dropped from the footer for a column that holds NaN.
 */
import * as arrow from "apache-arrow";
import { dataInvalid } from "../errors.ts";
import { normalizeArrowSchema } from "./arrow-schema.ts";
import { parquetLayout } from "./parquet-layout.ts";
import { Compression, decodeAllToIpcStream, decodeToIpcStream, EnabledStatistics, encodeIpcStream, schemaToIpcStream, WriterVersion, type ParquetWriterSpec } from "./parquet-ops.mjs";
import { readFileMetaData, T, type ThriftField, type ThriftList } from "./parquet-footer.mjs";

export type { ParquetWriterSpec } from "./parquet-ops.mjs";

export type ParquetCompression = "zstd" | "snappy" | "gzip" | "lz4" | "lz4_raw" | "brotli" | "none" | "uncompressed";

export interface ParquetWriteOptions {
  /** Paimon `file.compression` (case-insensitive); default `zstd`. */
  compression?: ParquetCompression | string;
  /** Accepted for option parity with Paimon; parquet-wasm 0.8 always uses level 1 (see module comment). */
  zstdLevel?: number;
  /** Rows per row group; default: all rows in one group. */
  maxRowGroupSize?: number;
  /**
   * Column statistics in the footer: `"chunk"` (default; `true` means the same) per column chunk, `"page"` also per
   * page (plus the column index), `"none"` (or `false`) none.
   */
  statistics?: boolean | "none" | "chunk" | "page";
  /** Dictionary encoding: `true` for every column, a list for those columns only; default off (see module comment). */
  dictionary?: boolean | readonly string[];
  /** Parquet writer version; default "1.0" (see module comment). */
  writerVersion?: "1.0" | "2.0";
  /** The `created_by` footer string. */
  createdBy?: string;
}

export interface ParquetReadOptions {
  /** Columns to read, by name (names the file lacks are ignored); default all. Results keep file order. */
  columns?: string[];
  /** Rows per Arrow record batch of the result; default 65536. */
  batchSize?: number;
  /** Row groups to decode (indexes); default all. `readParquetAsync` only. */
  rowGroups?: number[];
}

/** Maps Paimon's `file.compression` names onto Parquet codecs. */
export function parquetCompression(name: string | undefined): Compression {
  switch ((name ?? "zstd").trim().toLowerCase()) {
    case "zstd":
      return Compression.ZSTD;
    case "snappy":
      return Compression.SNAPPY;
    case "gzip":
      return Compression.GZIP;
    case "lz4":
    case "lz4_raw":
      // LZ4_RAW, not the deprecated Hadoop-framed LZ4 codec: parquet-mr ≥ 1.13, pyarrow and DuckDB read it natively.
      return Compression.LZ4_RAW;
    case "brotli":
      return Compression.BROTLI;
    case "none":
    case "uncompressed":
    case "":
      return Compression.UNCOMPRESSED;
    default:
      throw dataInvalid(`unsupported Parquet compression '${name}' (use zstd, snappy, gzip, lz4, brotli or none)`);
  }
}

/** The resolved writer settings for `numRows` rows (plain values, so a worker thread can apply them). */
export function writerSpec(opts: ParquetWriteOptions, numRows: number): ParquetWriterSpec {
  const st = opts.statistics;
  const statistics =
    st === false || st === "none" ? EnabledStatistics.None : st === "page" ? EnabledStatistics.Page : EnabledStatistics.Chunk;
  const dict = opts.dictionary;
  return {
    compression: parquetCompression(opts.compression),
    maxRowGroupSize: Math.max(1, opts.maxRowGroupSize ?? numRows),
    statistics,
    dictionary: dict === true,
    dictionaryColumns: Array.isArray(dict) ? [...(dict as readonly string[])] : [],
    writerVersion: opts.writerVersion === "2.0" ? WriterVersion.V2 : WriterVersion.V1,
    createdBy: opts.createdBy,
    plainColumns: [],
    plainEverywhere: false,
  };
}

/**
 * What an encoder needs for `data`: the data in Paimon's Parquet layout (nested names, INT96 stand-ins) and the
 * writer settings, including the footer changes that layout calls for.
 */
export function encodeRequest(data: arrow.RecordBatch | arrow.Table, opts: ParquetWriteOptions): { table: arrow.Table; spec: ParquetWriterSpec } {
  const layout = parquetLayout(normalized(data));
  const spec = writerSpec(opts, data.numRows);
  spec.plainColumns = layout.plainColumns;
  spec.plainEverywhere = layout.nestedInt96;
  spec.footer = layout.footer;
  return { table: layout.table, spec };
}

/** The Arrow IPC stream the codec takes in: the data under Paimon's nested field names. */
export function toIpcStream(data: arrow.RecordBatch | arrow.Table): Uint8Array {
  return arrow.tableToIPC(normalized(data), "stream");
}

/** An IPC stream as the list of its pieces: message headers and views of the data's own buffers (not copied). */
export interface IpcChunks {
  chunks: Uint8Array[];
  byteLength: number;
}

/** Collects what apache-arrow's stream writer writes instead of concatenating it into a new buffer. */
class ChunkCollectingWriter extends arrow.RecordBatchStreamWriter {
  readonly out: IpcChunks = { chunks: [], byteLength: 0 };
  protected override _write(chunk: ArrayBufferView): this {
    if (this._started && chunk.byteLength > 0) {
      this.out.chunks.push(chunk instanceof Uint8Array ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      this.out.byteLength += chunk.byteLength;
      this._position += chunk.byteLength;
    }
    return this;
  }
}

/**
 * `toIpcStream` without the final copy: the caller writes the pieces where it wants them (the worker pool copies
 * them into a buffer it reuses, so no large buffer is allocated per job — on a big heap, every ~64 MB of new
 * ArrayBuffers costs a full GC). The views stay valid as long as `data` is not modified.
 */
export function toIpcChunks(data: arrow.RecordBatch | arrow.Table): IpcChunks {
  const writer = new ChunkCollectingWriter();
  writer.writeAll(normalized(data));
  writer.finish();
  return writer.out;
}

/**
 * Encodes a batch or table as one Parquet file (on this thread; `ParquetEncoderPool.encode` in a worker). With
 * `staging`, the IPC stream the codec reads is written into that reused buffer instead of a new one.
 */
export function writeParquet(data: arrow.RecordBatch | arrow.Table, opts: ParquetWriteOptions = {}, staging?: IpcStaging): Uint8Array {
  const { table, spec } = encodeRequest(data, opts);
  return encodeIpcStream(staging === undefined ? toIpcStream(table) : staging.stage(toIpcChunks(table)), spec);
}

/**
 * A buffer one thread keeps for the IPC streams it hands the codec, one encode at a time (the codec reads its input
 * during the call and keeps nothing of it). A writer that encodes a file every commit interval would otherwise
 * allocate the stream anew each time — as many bytes as the columns, tens of MB per million rows — and V8 runs a
 * full mark-compact for every ~64 MB of new ArrayBuffers. A stream larger than `maxKeptBytes` gets a buffer of its
 * own, not kept.
 */
export class IpcStaging {
  private buffer: ArrayBuffer | null = null;

  constructor(readonly maxKeptBytes: number) {}

  /** The pieces copied into the kept buffer (grown when too small): a view valid until the next `stage`. */
  stage(input: IpcChunks): Uint8Array {
    const size = input.byteLength;
    let buffer = this.buffer;
    if (buffer === null || buffer.byteLength < size) {
      buffer = new ArrayBuffer(Math.max(size, Math.min(2 * (buffer?.byteLength ?? 0), this.maxKeptBytes), 64 * 1024));
      if (buffer.byteLength <= this.maxKeptBytes) this.buffer = buffer;
    }
    const out = new Uint8Array(buffer, 0, size);
    let pos = 0;
    for (const c of input.chunks) {
      out.set(c, pos);
      pos += c.byteLength;
    }
    return out;
  }
}

/** Re-wraps the data under Paimon's nested field names when they differ (buffers are shared, not copied). */
function normalized(data: arrow.RecordBatch | arrow.Table): arrow.Table {
  const schema = normalizeArrowSchema(data.schema);
  if (sameNames(schema, data.schema)) return data instanceof arrow.Table ? data : new arrow.Table(data);
  const batches = data instanceof arrow.Table ? data.batches : [data];
  return new arrow.Table(
    schema,
    batches.map((b) => new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: b.numRows, nullCount: 0, children: b.data.children }))),
  );
}

function sameNames(a: arrow.Schema, b: arrow.Schema): boolean {
  const fieldNames = (fs: readonly arrow.Field[]): string =>
    fs.map((f) => `${f.name}(${fieldNames((f.type.children ?? []) as arrow.Field[])})`).join(",");
  return fieldNames(a.fields) === fieldNames(b.fields);
}

/**
 * Decodes a Parquet file (all row groups) into an apache-arrow Table. parquet-wasm 0.8's synchronous reader ignores
 * its `columns` option, so `columns` here are selected after decoding (file order kept): it trims the result, not
 * the work. `readParquetAsync` decodes only the selected columns.
 */
export function readParquet(bytes: Uint8Array, opts: ParquetReadOptions = {}): arrow.Table {
  const table = arrow.tableFromIPC(decodeAllToIpcStream(bytes, opts.batchSize ?? 65536));
  return opts.columns === undefined ? table : project(table, opts.columns);
}

/** Like `readParquet`, but column projection happens inside the decoder. */
export async function readParquetAsync(bytes: Uint8Array, opts: ParquetReadOptions = {}): Promise<arrow.Table> {
  return arrow.tableFromIPC(await decodeToIpcStream(bytes, { columns: opts.columns, batchSize: opts.batchSize, rowGroups: opts.rowGroups }));
}

function project(table: arrow.Table, columns: readonly string[]): arrow.Table {
  const wanted = new Set(columns);
  return table.select(table.schema.fields.map((f) => f.name).filter((n) => wanted.has(n)));
}

/** The Arrow schema of a Parquet file, from its footer. */
export function readParquetSchema(bytes: Uint8Array): arrow.Schema {
  return arrow.tableFromIPC(schemaToIpcStream(bytes)).schema;
}

// ---------------------------------------------------------------------------------------------------------------
// Footer without wasm. FileMetaData is Thrift compact-encoded: 1 version, 2 schema list, 3 num_rows, 4 row_groups.

/** The file's row count from its footer (`FileMetaData.num_rows`). */
export function parquetRowCount(bytes: Uint8Array): number {
  return parquetFooterInfo(bytes).numRows;
}

/** `num_rows` and the number of row groups, from the footer (decoded by parquet-footer.mjs, as the writer's rewrite). */
export function parquetFooterInfo(bytes: Uint8Array): { numRows: number; numRowGroups: number } {
  let fields: ThriftField[];
  try {
    fields = readFileMetaData(bytes);
  } catch (e) {
    throw dataInvalid(`not a readable Parquet file: ${e instanceof Error ? e.message : String(e)}`);
  }
  const numRows = fields.find((f) => f.id === 3)?.value;
  if (typeof numRows !== "bigint" || numRows < 0n || numRows > BigInt(Number.MAX_SAFE_INTEGER)) throw dataInvalid(`Parquet footer has no valid num_rows (${String(numRows)})`);
  const rowGroups = fields.find((f) => f.id === 4);
  if (rowGroups !== undefined && rowGroups.type !== T.LIST) throw dataInvalid("Parquet footer's row_groups is not a list");
  return { numRows: Number(numRows), numRowGroups: (rowGroups?.value as ThriftList | undefined)?.items.length ?? 0 };
}
