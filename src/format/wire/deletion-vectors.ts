/**
 * Paimon's deletion vector index files (DeletionVectorsIndexFile, DeletionFileWriter; format doc "table index"): a
 * version byte (1), then one frame per data file, where the index manifest's range (offset, length) points:
 *
 * - 32-bit (BitmapDeletionVector, the default): a big-endian int32 size, then `size` bytes — the big-endian magic
 *   1581511376 and a portable RoaringBitmap — then a big-endian CRC32 of those `size` bytes. The range's length is
 *   `size`.
 * - 64-bit (`deletion-vectors.bitmap64`, Bitmap64DeletionVector, Iceberg's layout): the same frame, but the magic
 *   1681511377 is little-endian and the bitmap is the 64-bit portable one; the range's length is the whole frame
 *   (`size` + 8).
 *
 * A vector's positions are row positions in its data file, 0-based in file order. Java reads by the magic and checks
 * the size against the range, not the CRC; here the CRC is checked too, as are the version byte, the cardinality the
 * manifest recorded and that every position is below the data file's row count: a damaged vector would hide live
 * rows or show deleted ones, so it is an error, never a guess.
 */
import { crc32 } from "node:zlib";
import { dataInvalid } from "../../errors.ts";
import type { DeletionVectorRange } from "../index-manifest.ts";
import { readRoaring32, readRoaring64 } from "../../codec/roaring.ts";

export const DV_INDEX_FILE_VERSION = 1;
/** Big-endian in the frame. */
export const BITMAP32_MAGIC = 1581511376;
/** Little-endian in the frame. */
export const BITMAP64_MAGIC = 1681511377;

/** The deleted positions of one data file, ascending and distinct. */
export type DeletedPositions = Float64Array;

/** Checks an index file's version byte. */
export function checkIndexFileVersion(bytes: Uint8Array, where: string): void {
  if (bytes.length === 0) throw dataInvalid(`${where} is empty`);
  if (bytes[0] !== DV_INDEX_FILE_VERSION) throw dataInvalid(`${where}: deletion vector index version ${bytes[0]} (natslake reads version ${DV_INDEX_FILE_VERSION})`);
}

/**
 * The deletion vector `range` names in an index file's bytes (`checkIndexFileVersion` checked them). `rowCount`: the
 * data file's rows, which every position must be below. `where` names the index file in errors.
 */
export function readDeletionVector(bytes: Uint8Array, range: DeletionVectorRange, rowCount: number, where: string): DeletedPositions {
  const at = `${where}: the deletion vector of ${range.dataFileName} (offset ${range.offset}, length ${range.length})`;
  if (range.offset + 8 > bytes.length) throw dataInvalid(`${at} lies past the end of the file (${bytes.length} bytes)`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = view.getInt32(range.offset, false);
  let bitmap64: boolean;
  if (view.getInt32(range.offset + 4, false) === BITMAP32_MAGIC) {
    if (size !== range.length) throw dataInvalid(`${at}: its frame says ${size} bytes, the index manifest ${range.length}`);
    bitmap64 = false;
  } else if (view.getInt32(range.offset + 4, true) === BITMAP64_MAGIC) {
    if (size !== range.length - 8) throw dataInvalid(`${at}: its frame says ${size + 8} bytes with length and CRC, the index manifest ${range.length}`);
    bitmap64 = true;
  } else {
    throw dataInvalid(`${at}: unknown magic number ${view.getInt32(range.offset + 4, false)} (${BITMAP32_MAGIC}: 32-bit, ${BITMAP64_MAGIC} little-endian: 64-bit)`);
  }
  const dataStart = range.offset + 4;
  const dataEnd = dataStart + size;
  if (size < 4 || dataEnd + 4 > bytes.length) throw dataInvalid(`${at}: its ${size} bytes and CRC lie past the end of the file (${bytes.length} bytes)`);
  const data = bytes.subarray(dataStart, dataEnd);
  const stored = view.getUint32(dataEnd, false);
  if (crc32(data) >>> 0 !== stored) throw dataInvalid(`${at}: CRC32 mismatch (the index file is damaged)`);
  const read = bitmap64 ? readRoaring64 : readRoaring32;
  const decoded = read(data, { offset: 4, bound: rowCount, where: at });
  if (decoded.end !== data.length) throw dataInvalid(`${at}: the bitmap ends at byte ${decoded.end} of ${data.length}`);
  if (range.cardinality !== null && decoded.values.length !== range.cardinality) {
    throw dataInvalid(`${at}: ${decoded.values.length} deleted positions, the index manifest says ${range.cardinality}`);
  }
  return decoded.values;
}
