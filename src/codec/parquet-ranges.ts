/**
 * Where a Parquet file keeps what a projection needs, from its footer alone: the footer's own byte range (from the
 * file's last 8 bytes) and the byte range of every column chunk of the wanted top-level columns. A reader on an
 * object store fetches the tail, then only those ranges (src/scan/ranged-fetch.ts), instead of the whole file.
 *
 * parquet.thrift field ids used: FileMetaData 4 row_groups; RowGroup 1 columns; ColumnChunk 1 file_path,
 * 3 meta_data; ColumnMetaData 3 path_in_schema, 7 total_compressed_size, 9 data_page_offset,
 * 11 dictionary_page_offset. A chunk's pages (dictionary first) are contiguous and `total_compressed_size` long,
 * headers included.
 */
import { ErrorKind, LakeError } from "../errors.ts";
import { decodeStruct, type ThriftField, type ThriftList, type ThriftValue } from "./parquet-footer.mjs";

/** `PAR1`: the first and the last four bytes of a Parquet file. */
export const PARQUET_MAGIC: readonly number[] = [0x50, 0x41, 0x52, 0x31];

const corrupt = (what: string): LakeError => new LakeError(ErrorKind.DataInvalid, `not a readable Parquet file: ${what}`);

/** A byte range `[start, end)` of a file. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * The footer's range in a file of `fileSize` bytes whose last bytes are `tail` (at least 8): `[start, fileSize)`,
 * the FileMetaData, its 4-byte length and the magic.
 */
export function footerRangeFromTail(tail: Uint8Array, fileSize: number): ByteRange {
  const n = tail.length;
  if (n < 8 || !PARQUET_MAGIC.every((m, k) => tail[n - 4 + k] === m)) throw corrupt("missing PAR1 magic at its end");
  const len = (tail[n - 8]! | (tail[n - 7]! << 8) | (tail[n - 6]! << 16) | (tail[n - 5]! << 24)) >>> 0;
  const start = fileSize - 8 - len;
  if (len === 0 || start < 4) throw corrupt(`bad footer length ${len} in a file of ${fileSize} bytes`);
  return { start, end: fileSize };
}

const field = (fields: ThriftField[], id: number): ThriftValue | undefined => fields.find((f) => f.id === id)?.value;

function int(v: ThriftValue | undefined, what: string): number {
  if (typeof v === "bigint") return Number(v);
  if (typeof v === "number") return v;
  throw corrupt(`no ${what} in a column chunk`);
}

/**
 * The ranges of the column chunks whose top-level column is in `columns`, in file order, from the footer bytes
 * (`footer` = the file's bytes from the footer range's start: FileMetaData, length, magic).
 */
export function columnChunkRanges(footer: Uint8Array, columns: ReadonlySet<string>): ByteRange[] {
  const meta = decodeStruct(footer, 0, footer.length - 8);
  const rowGroups = (field(meta, 4) as ThriftList | undefined)?.items ?? [];
  const out: ByteRange[] = [];
  const dec = new TextDecoder();
  for (const rg of rowGroups) {
    for (const chunk of ((field(rg as ThriftField[], 1) as ThriftList | undefined)?.items ?? []) as ThriftField[][]) {
      if (field(chunk, 1) !== undefined) throw corrupt("a column chunk in another file (file_path) is not supported");
      const cm = field(chunk, 3) as ThriftField[] | undefined;
      if (cm === undefined) throw corrupt("a column chunk without its metadata");
      const path = (field(cm, 3) as ThriftList | undefined)?.items ?? [];
      const top = path[0] instanceof Uint8Array ? dec.decode(path[0]) : undefined;
      if (top === undefined || !columns.has(top)) continue;
      out.push(columnChunkRange(cm));
    }
  }
  return out.sort((a, b) => a.start - b.start);
}

/**
 * The bytes of one column chunk's pages, from its ColumnMetaData: from its dictionary page (if any) or first data
 * page, `total_compressed_size` long (which covers every page header and page).
 */
export function columnChunkRange(cm: ThriftField[]): ByteRange {
  const dataPage = int(field(cm, 9), "data_page_offset");
  const dict = field(cm, 11);
  // Some writers put 0 for "no dictionary page": the data page's offset is the start then.
  const start = dict !== undefined && int(dict, "dictionary_page_offset") > 0 ? Math.min(dataPage, int(dict, "dictionary_page_offset")) : dataPage;
  return { start, end: start + int(field(cm, 7), "total_compressed_size") };
}

/** Ranges merged where they overlap or lie less than `gap` bytes apart (one request is cheaper than two there). */
export function coalesceRanges(ranges: readonly ByteRange[], gap: number): ByteRange[] {
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  const out: ByteRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && r.start - last.end < gap) last.end = Math.max(last.end, r.end);
    else out.push({ ...r });
  }
  return out;
}
