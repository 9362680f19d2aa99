/**
 * Stitches Parquet files together without decoding them: the chosen row groups of each piece are copied byte for
 * byte (their column chunks, then their column and offset indexes), and one footer lists them all with their offsets
 * moved to where they landed. A compaction uses it for row groups already large enough (src/maintenance/compact.ts):
 * rewriting them would cost a decode and an encode per byte per merge and produce the same pages.
 *
 * The pieces must agree on everything a footer says about the file as a whole — the schema, the key/value metadata
 * (the `ARROW:schema` readers restore types from), the column orders and the format version — and be unencrypted;
 * `stitchParquet` refuses with the reason otherwise, and the caller decodes and encodes instead.
 *
 * Offsets moved: ColumnMetaData's data, index and dictionary page offsets (its chunk's pages as `columnChunkRange` finds them), ColumnChunk's `file_offset`, its column and offset index offsets and
 * each PageLocation in the offset index; RowGroup's `file_offset` and `ordinal`. Bloom filters are dropped (a
 * ColumnMetaData that names one without its length could not be copied whole; natslake writes none).
 * Field numbers are parquet.thrift's.
 */
import { decodeStruct, encodeStruct, readFileMetaData, T } from "./parquet-footer.mjs";
import { columnChunkRange } from "./parquet-ranges.ts";
import type { ThriftField, ThriftList } from "./parquet-footer.mjs";

/** Row groups (indexes, ascending) of one file's bytes to copy into the stitched file. */
export interface StitchPiece {
  bytes: Uint8Array;
  rowGroups: readonly number[];
  /** The file's footer as `parquetFooter` parsed it, when the caller has it (else it is parsed again here). */
  footer?: ParquetFooter;
}

/** A Parquet file's footer (FileMetaData), parsed once for what the caller reads of it and for stitching. */
export interface ParquetFooter {
  readonly fields: ThriftField[];
  /** Rows of each row group. */
  readonly groupRows: number[];
}

export type StitchResult = { kind: "stitched"; bytes: Uint8Array; rows: number } | { kind: "refused"; reason: string };

const MAGIC = new Uint8Array([0x50, 0x41, 0x52, 0x31]);

const field = (fields: ThriftField[], id: number): ThriftField | undefined => fields.find((f) => f.id === id);
const items = (f: ThriftField | undefined): unknown[] => ((f?.value as { items?: unknown[] } | undefined)?.items ?? []);
const num = (f: ThriftField | undefined): number => (f === undefined ? 0 : Number(f.value as bigint | number));

/** A Parquet file's footer, parsed. */
export function parquetFooter(bytes: Uint8Array): ParquetFooter {
  const fields = readFileMetaData(bytes);
  return { fields, groupRows: items(field(fields, 4)).map((rg) => num(field(rg as ThriftField[], 3))) };
}

/** Rows of each row group of a Parquet file, from its footer. */
export function parquetRowGroupRows(bytes: Uint8Array): number[] {
  return parquetFooter(bytes).groupRows;
}

/** Footer fields every piece must share, encoded, with what they are for the refusal's reason. */
const SHARED: Array<[number, string]> = [
  [1, "format version"],
  [2, "schema"],
  [5, "key/value metadata"],
  [7, "column orders"],
];

function encodedField(meta: ThriftField[], id: number): string {
  const f = field(meta, id);
  return f === undefined ? "" : Buffer.from(encodeStruct([f])).toString("base64");
}

/** Output under construction: chunks appended in order. */
class Out {
  readonly parts: Uint8Array[] = [MAGIC];
  length = MAGIC.length;
  push(b: Uint8Array): number {
    const at = this.length;
    this.parts.push(b);
    this.length += b.length;
    return at;
  }
  concat(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

const i64 = (id: number, v: number): ThriftField => ({ id, type: T.I64, value: BigInt(v) });
const i32 = (id: number, v: number): ThriftField => ({ id, type: T.I32, value: v });

/** Replaces (or adds, keeping ids ascending) fields of a struct. */
function setFields(fields: ThriftField[], updates: ThriftField[]): ThriftField[] {
  const byId = new Map(fields.map((f) => [f.id, f]));
  for (const u of updates) byId.set(u.id, u);
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

/**
 * One file of the pieces' chosen row groups, in piece order; refused (with the reason) when the pieces' footers
 * disagree on the file-wide fields or one is encrypted.
 */
export function stitchParquet(pieces: readonly StitchPiece[]): StitchResult {
  if (pieces.length === 0) return { kind: "refused", reason: "no pieces" };
  const metas = pieces.map((p) => p.footer?.fields ?? readFileMetaData(p.bytes));
  const first = metas[0]!;
  const shared = SHARED.map(([id]) => encodedField(first, id));
  for (const [k, meta] of metas.entries()) {
    if (field(meta, 8) !== undefined || field(meta, 9) !== undefined) return { kind: "refused", reason: `piece ${k} is encrypted` };
    // A piece of the first piece's file (its footer parsed once) agrees with it.
    if (k === 0 || meta === first) continue;
    for (const [j, [id, what]] of SHARED.entries()) {
      if (encodedField(meta, id) !== shared[j]) return { kind: "refused", reason: `piece ${k} has another ${what} than piece 0` };
    }
  }

  const out = new Out();
  const groupsOut: Array<{ rowGroup: ThriftField[]; chunks: MovedChunk[] }> = [];
  let rows = 0;
  for (const [k, piece] of pieces.entries()) {
    const groups = items(field(metas[k]!, 4)) as ThriftField[][];
    for (const g of piece.rowGroups) {
      const rg = groups[g];
      if (rg === undefined) throw new Error(`piece ${k} has no row group ${g} (it has ${groups.length})`);
      const chunks = (items(field(rg, 1)) as ThriftField[][]).map((chunk) => copyChunk(out, piece.bytes, chunk, `piece ${k} row group ${g}`));
      rows += num(field(rg, 3));
      const updates = [i64(5, chunks[0]?.start ?? out.length)];
      if (field(rg, 7) !== undefined) updates.push({ id: 7, type: T.I16, value: groupsOut.length });
      groupsOut.push({ rowGroup: setFields(rg, updates), chunks });
    }
  }
  // The indexes after every row group, column indexes first, then offset indexes (as arrow-rs and parquet-mr place
  // them); their offsets are known once written.
  for (const kind of [6, 4] as const) {
    for (const { chunks } of groupsOut) {
      for (const c of chunks) {
        const index = c.indexes.find((x) => x.offsetField === kind);
        if (index === undefined) continue;
        const bytes = kind === 4 ? shiftOffsetIndex(index.bytes, c.delta) : index.bytes;
        const at = out.push(bytes);
        c.fields = setFields(c.fields, [i64(kind, at), i32(kind + 1, bytes.length)]);
      }
    }
  }
  const footer = setFields(first, [
    i64(3, rows),
    { id: 4, type: T.LIST, value: { elem: T.STRUCT, items: groupsOut.map((g) => setFields(g.rowGroup, [{ id: 1, type: T.LIST, value: { elem: T.STRUCT, items: g.chunks.map((c) => c.fields) } }])) } },
  ]);
  const footerBytes = encodeStruct(footer);
  out.push(footerBytes);
  const len = footerBytes.length;
  out.push(new Uint8Array([len & 0xff, (len >>> 8) & 0xff, (len >>> 16) & 0xff, (len >>> 24) & 0xff]));
  out.push(MAGIC);
  return { kind: "stitched", bytes: out.concat(), rows };
}

/** A column chunk copied into the output: its footer entry (offsets moved), where it landed, and its indexes. */
interface MovedChunk {
  fields: ThriftField[];
  start: number;
  /** Output offset minus input offset of the chunk's bytes. */
  delta: number;
  /** The chunk's column index (6) and offset index (4) bytes, to be copied after the row groups. */
  indexes: Array<{ offsetField: 4 | 6; bytes: Uint8Array }>;
}

/** Copies a column chunk's pages (all of them: its `total_compressed_size` from its first page) into `out`. */
function copyChunk(out: Out, bytes: Uint8Array, chunk: ThriftField[], where: string): MovedChunk {
  const cmd = field(chunk, 3)?.value as ThriftField[] | undefined;
  if (cmd === undefined) throw new Error(`${where}: a column chunk without metadata`);
  if (field(chunk, 1) !== undefined) throw new Error(`${where}: a column chunk stored in another file`);
  const { start, end } = columnChunkRange(cmd);
  const size = end - start;
  if (size <= 0 || end > bytes.length) throw new Error(`${where}: a column chunk outside the file`);
  const at = out.push(bytes.subarray(start, start + size));
  const delta = at - start;
  const moved = setFields(
    cmd.filter((f) => f.id !== 14 && f.id !== 15),
    [9, 10, 11].flatMap((id) => {
      const f = field(cmd, id);
      return f === undefined || num(f) <= 0 ? [] : [i64(id, num(f) + delta)];
    }),
  );
  const updates: ThriftField[] = [{ id: 3, type: T.STRUCT, value: moved }];
  const fileOffset = num(field(chunk, 2));
  if (fileOffset > 0) updates.push(i64(2, fileOffset + delta));
  const indexes: MovedChunk["indexes"] = [];
  for (const [offsetField, lengthField] of [[6, 7], [4, 5]] as const) {
    const off = field(chunk, offsetField);
    const len = field(chunk, lengthField);
    if (off === undefined || len === undefined) continue;
    if (num(off) + num(len) > bytes.length) throw new Error(`${where}: an index outside the file`);
    indexes.push({ offsetField, bytes: bytes.subarray(num(off), num(off) + num(len)) });
  }
  // Index offsets are set when the indexes are written; until then the chunk names none.
  return { fields: setFields(chunk, updates).filter((f) => f.id < 4 || f.id > 7), start: at, delta, indexes };
}

/** An OffsetIndex (1: page_locations, PageLocation 1: offset) with every page's offset moved by `delta`. */
function shiftOffsetIndex(bytes: Uint8Array, delta: number): Uint8Array {
  const index = decodeStruct(bytes);
  const shifted = index.map((f) =>
    f.id !== 1
      ? f
      : { ...f, value: { ...(f.value as ThriftList), items: items(f).map((loc) => setFields(loc as ThriftField[], [i64(1, num(field(loc as ThriftField[], 1)) + delta)])) } },
  );
  return encodeStruct(shifted);
}
