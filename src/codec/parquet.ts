/**
 * Parquet files ⇄ Arrow tables through parquet-wasm 0.8 (arrow-rs compiled to WebAssembly).
 *
 * - `writeParquet(batchOrTable, options)` → the file's bytes. Data crosses into wasm as an Arrow IPC stream; the
 *   wasm table and writer properties are consumed by `pw.writeParquet`, so nothing is left to free after a write.
 *   Compression names are Paimon's `file.compression` values. By default the whole input becomes one row group
 *   (measured: 64k-row groups cost ~40% more time and ~60% more bytes under ZSTD). Bound the rows per call: wasm
 *   memory grows to the largest write and never shrinks.
 * - `readParquet(bytes, {columns})` → an apache-arrow Table (columns projected by name, in file order);
 *   `readParquetAsync` does the same but skips decoding unselected columns.
 * - `parquetRowCount(bytes)` → `num_rows` from the footer, decoded directly from its Thrift encoding (no wasm).
 *
 * The schema must come from `toArrowSchema` (or pass through `normalizeArrowSchema`, which `writeParquet` applies to
 * foreign tables) for the file to have Paimon's layout: list child `element`, map group `key_value` with a required
 * `key`, NOT NULL columns REQUIRED. arrow-rs also stores the Arrow schema under the `ARROW:schema` footer key, which
 * pyarrow uses to restore exact Arrow types and Java ignores.
 *
 * Limits of parquet-wasm 0.8: the ZSTD level cannot be chosen (arrow-rs's default level 1 is used, which is also
 * Paimon's default `file.compression.zstd-level`); timestamps of precision 7–9 are INT64 NANOS, not Java's INT96.
 */
import * as arrow from "apache-arrow";
import * as pw from "parquet-wasm";
import { dataInvalid } from "../errors.ts";
import { normalizeArrowSchema } from "./arrow-schema.ts";

export type ParquetCompression = "zstd" | "snappy" | "gzip" | "lz4" | "lz4_raw" | "brotli" | "none" | "uncompressed";

export interface ParquetWriteOptions {
  /** Paimon `file.compression` (case-insensitive); default `zstd`. */
  compression?: ParquetCompression | string;
  /** Accepted for option parity with Paimon; parquet-wasm 0.8 always uses level 1 (see module comment). */
  zstdLevel?: number;
  /** Rows per row group; default: all rows in one group. */
  maxRowGroupSize?: number;
  /** Column statistics in the footer (arrow-rs default: chunk + page level). Default true. */
  statistics?: boolean;
  /** Dictionary encoding (arrow-rs default on). */
  dictionary?: boolean;
  /** The `created_by` footer string. */
  createdBy?: string;
}

export interface ParquetReadOptions {
  /** Columns to read, by name (names the file lacks are ignored); default all. Results keep file order. */
  columns?: string[];
  /** Rows per Arrow record batch of the result; default 65536. */
  batchSize?: number;
}

/** Maps Paimon's `file.compression` names onto Parquet codecs. */
export function parquetCompression(name: string | undefined): pw.Compression {
  switch ((name ?? "zstd").trim().toLowerCase()) {
    case "zstd":
      return pw.Compression.ZSTD;
    case "snappy":
      return pw.Compression.SNAPPY;
    case "gzip":
      return pw.Compression.GZIP;
    case "lz4":
    case "lz4_raw":
      // LZ4_RAW, not the deprecated Hadoop-framed LZ4 codec: parquet-mr ≥ 1.13, pyarrow and DuckDB read it natively.
      return pw.Compression.LZ4_RAW;
    case "brotli":
      return pw.Compression.BROTLI;
    case "none":
    case "uncompressed":
    case "":
      return pw.Compression.UNCOMPRESSED;
    default:
      throw dataInvalid(`unsupported Parquet compression '${name}' (use zstd, snappy, gzip, lz4, brotli or none)`);
  }
}

function writerProperties(opts: ParquetWriteOptions, numRows: number): pw.WriterProperties {
  let b = new pw.WriterPropertiesBuilder()
    .setCompression(parquetCompression(opts.compression))
    .setMaxRowGroupSize(Math.max(1, opts.maxRowGroupSize ?? numRows));
  if (opts.statistics === false) b = b.setStatisticsEnabled(pw.EnabledStatistics.None);
  if (opts.dictionary !== undefined) b = b.setDictionaryEnabled(opts.dictionary);
  if (opts.createdBy !== undefined) b = b.setCreatedBy(opts.createdBy);
  return b.build();
}

/** Encodes a batch or table as one Parquet file. */
export function writeParquet(data: arrow.RecordBatch | arrow.Table, opts: ParquetWriteOptions = {}): Uint8Array {
  const props = writerProperties(opts, data.numRows);
  let wasmTable: pw.Table;
  try {
    wasmTable = pw.Table.fromIPCStream(arrow.tableToIPC(normalized(data), "stream"));
  } catch (e) {
    props.free();
    throw e;
  }
  // Consumes both wasm objects, also when it throws.
  return pw.writeParquet(wasmTable, props);
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
  const wasmTable = pw.readParquet(bytes, { batchSize: opts.batchSize ?? 65536 });
  // intoIPCStream consumes the wasm table and copies the stream into JS memory.
  const table = arrow.tableFromIPC(wasmTable.intoIPCStream());
  return opts.columns === undefined ? table : project(table, opts.columns);
}

/** Like `readParquet`, but column projection happens inside the decoder (parquet-wasm's async file reader). */
export async function readParquetAsync(bytes: Uint8Array, opts: ParquetReadOptions = {}): Promise<arrow.Table> {
  const file = await pw.ParquetFile.fromFile(new Blob([bytes]));
  try {
    const options: pw.ReaderOptions = { batchSize: opts.batchSize ?? 65536 };
    if (opts.columns !== undefined) options.columns = existing(file, opts.columns);
    const wasmTable = await file.read(options);
    return arrow.tableFromIPC(wasmTable.intoIPCStream());
  } finally {
    file.free();
  }
}

/** The requested columns the file has (the async reader fails on unknown names; the sync path just omits them). */
function existing(file: pw.ParquetFile, columns: readonly string[]): string[] {
  const schema = file.schema();
  const names = new Set(arrow.tableFromIPC(schema.intoIPCStream()).schema.fields.map((f) => f.name));
  return columns.filter((c) => names.has(c));
}

function project(table: arrow.Table, columns: readonly string[]): arrow.Table {
  const wanted = new Set(columns);
  return table.select(table.schema.fields.map((f) => f.name).filter((n) => wanted.has(n)));
}

/** The Arrow schema of a Parquet file, from its footer. */
export function readParquetSchema(bytes: Uint8Array): arrow.Schema {
  const schema = pw.readSchema(bytes);
  return arrow.tableFromIPC(schema.intoIPCStream()).schema;
}

// ---------------------------------------------------------------------------------------------------------------
// Footer: num_rows without wasm. FileMetaData is Thrift compact-encoded: field 1 version, 2 schema list, 3 num_rows.

/** The file's row count from its footer (`FileMetaData.num_rows`). */
export function parquetRowCount(bytes: Uint8Array): number {
  const n = bytes.length;
  if (n < 12 || !isMagic(bytes, 0) || !isMagic(bytes, n - 4)) throw dataInvalid("not a Parquet file (missing PAR1 magic)");
  const footerLen = bytes[n - 8]! | (bytes[n - 7]! << 8) | (bytes[n - 6]! << 16) | (bytes[n - 5]! << 24);
  const start = n - 8 - footerLen;
  if (footerLen <= 0 || start < 4) throw dataInvalid("corrupt Parquet footer length");
  const r = new CompactReader(bytes, start, n - 8);
  let lastId = 0;
  for (;;) {
    const header = r.byte();
    const type = header & 0x0f;
    if (type === T_STOP) break;
    const delta = header >> 4;
    const id = delta === 0 ? r.zigzag() : lastId + delta;
    lastId = id;
    if (id === 3 && type === T_I64) return r.zigzag();
    r.skip(type);
  }
  throw dataInvalid("Parquet footer has no num_rows");
}

const isMagic = (b: Uint8Array, at: number): boolean => b[at] === 0x50 && b[at + 1] === 0x41 && b[at + 2] === 0x52 && b[at + 3] === 0x31;

const T_STOP = 0;
const T_TRUE = 1;
const T_FALSE = 2;
const T_BYTE = 3;
const T_I16 = 4;
const T_I32 = 5;
const T_I64 = 6;
const T_DOUBLE = 7;
const T_BINARY = 8;
const T_LIST = 9;
const T_SET = 10;
const T_MAP = 11;
const T_STRUCT = 12;

/** Just enough of the Thrift compact protocol to skip to a top-level field. */
class CompactReader {
  constructor(
    private readonly b: Uint8Array,
    private pos: number,
    private readonly end: number,
  ) {}

  byte(): number {
    if (this.pos >= this.end) throw dataInvalid("truncated Parquet footer");
    return this.b[this.pos++]!;
  }

  /** Unsigned varint as a number (exact below 2^53, plenty for counts and lengths). */
  varint(): number {
    let result = 0;
    let mul = 1;
    for (;;) {
      const x = this.byte();
      result += (x & 0x7f) * mul;
      if ((x & 0x80) === 0) return result;
      mul *= 128;
    }
  }

  zigzag(): number {
    const u = this.varint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }

  skip(type: number): void {
    switch (type) {
      case T_TRUE:
      case T_FALSE:
        return; // a struct field's bool lives in its header
      case T_BYTE:
        this.pos++;
        return;
      case T_I16:
      case T_I32:
      case T_I64:
        this.varint();
        return;
      case T_DOUBLE:
        this.pos += 8;
        return;
      case T_BINARY: {
        // Not `this.pos += this.varint()`: that reads `pos` before the varint advances it.
        const len = this.varint();
        this.pos += len;
        return;
      }
      case T_LIST:
      case T_SET: {
        const h = this.byte();
        const size = h >> 4 === 15 ? this.varint() : h >> 4;
        const elem = h & 0x0f;
        for (let k = 0; k < size; k++) this.skipElement(elem);
        return;
      }
      case T_MAP: {
        const size = this.varint();
        if (size === 0) return;
        const kv = this.byte();
        for (let k = 0; k < size; k++) {
          this.skipElement(kv >> 4);
          this.skipElement(kv & 0x0f);
        }
        return;
      }
      case T_STRUCT:
        for (;;) {
          const header = this.byte();
          const t = header & 0x0f;
          if (t === T_STOP) return;
          if (header >> 4 === 0) this.zigzag(); // a long-form field id
          this.skip(t);
        }
      default:
        throw dataInvalid(`corrupt Parquet footer (Thrift type ${type})`);
    }
  }

  /** Collection elements: booleans take a whole byte there, unlike struct fields. */
  private skipElement(type: number): void {
    if (type === T_TRUE || type === T_FALSE) this.pos++;
    else this.skip(type);
  }
}
