/**
 * Fetching only what a projection needs of a large Parquet file on a store where every byte crosses the network
 * (`FileIO.prefersRangedReads`): the file's tail (its footer, usually in one request), then the byte ranges of the
 * wanted columns' chunks. The result is a buffer of the file's full size holding those bytes at their offsets and
 * zeros elsewhere: the projecting decoder (parquet-wasm's file reader) reads the footer and the selected chunks only,
 * so the zeros are never decoded. Were a range wrong, the decoder would meet a zero page header and fail (parquet-wasm
 * panics: loud, never values read from zeros) — the ranges are therefore checked against pyarrow's reading of the
 * same footers (test/compat/parquet-ranges.test.ts), dictionary pages and several row groups included.
 */
import type { FileIO } from "../io/file-io.ts";
import { coalesceRanges, columnChunkRanges, footerRangeFromTail, PARQUET_MAGIC, type ByteRange } from "../codec/parquet-ranges.ts";

/** Below this size a file is fetched whole: one request is cheaper than two or three. */
export const RANGED_READ_MIN_BYTES = 1024 * 1024;
/** The first request reads this much of the file's end: the footer of a data file fits in it. */
const TAIL_BYTES = 64 * 1024;
/** Chunks closer than this are fetched by one request (a request costs more than this many bytes). */
const COALESCE_GAP = 128 * 1024;
/** Above this share of the file, the rest is fetched too: the remaining ranges as one whole read. */
const WHOLE_FILE_SHARE = 0.7;
/** Range requests in flight per file. */
const PARALLEL_RANGES = 4;

/** What a ranged fetch did: the bytes, and how many of them crossed the wire (for tests and metrics). */
export interface RangedFetch {
  bytes: Uint8Array;
  fetchedBytes: number;
  requests: number;
}

/**
 * The bytes of the Parquet file at `path` (`fileSize` bytes, from its manifest entry) that a decode of `columns` (top-
 * level names) reads, at their offsets in a buffer of the file's size.
 */
export async function fetchColumnsOf(io: FileIO, path: string, fileSize: number, columns: readonly string[]): Promise<RangedFetch> {
  const tailLength = Math.min(fileSize, TAIL_BYTES);
  const tailStart = fileSize - tailLength;
  const tail = await io.readRange(path, tailStart, tailLength);
  let requests = 1;
  let fetched = tail.length;
  if (tailLength === fileSize) return { bytes: tail, fetchedBytes: fetched, requests };
  const footerRange = footerRangeFromTail(tail, fileSize);
  let footer: Uint8Array;
  if (footerRange.start >= tailStart) {
    footer = tail.subarray(footerRange.start - tailStart);
  } else {
    footer = await io.readRange(path, footerRange.start, fileSize - footerRange.start);
    fetched += footer.length;
    requests++;
  }
  const ranges = coalesceRanges(columnChunkRanges(footer, new Set(columns)), COALESCE_GAP)
    // What the tail already holds is not fetched again.
    .map((r) => ({ start: r.start, end: Math.min(r.end, tailStart) }))
    .filter((r) => r.end > r.start);
  const wanted = ranges.reduce((n, r) => n + (r.end - r.start), 0);
  if (wanted + tailLength >= fileSize * WHOLE_FILE_SHARE) {
    const whole = await io.readRange(path, 0, fileSize);
    return { bytes: whole, fetchedBytes: fetched + whole.length, requests: requests + 1 };
  }
  const bytes = new Uint8Array(fileSize);
  bytes.set(PARQUET_MAGIC, 0);
  bytes.set(tail, tailStart);
  if (footerRange.start < tailStart) bytes.set(footer, footerRange.start);
  const queue: ByteRange[] = [...ranges];
  const worker = async (): Promise<void> => {
    for (let r = queue.shift(); r !== undefined; r = queue.shift()) {
      const part = await io.readRange(path, r.start, r.end - r.start);
      bytes.set(part, r.start);
      fetched += part.length;
      requests++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_RANGES, ranges.length) }, worker));
  return { bytes, fetchedBytes: fetched, requests };
}
