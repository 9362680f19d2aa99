/**
 * Direct decoding: a msgpack RowBatch straight into Arrow column builders, without a JS array per row or a JS
 * string per value. Strings are copied as the UTF-8 bytes they already are; numbers are read from the bytes.
 *
 * This is a fast path, never a second set of rules. It accepts exactly what `RecordBatchBuilder.appendArray`'s fast
 * paths accept (the JS value msgpackr would have decoded — same integer/bigint split, same checks — appended the
 * same way) and gives up on anything else:
 * - a value it does not take (a float for an INT, a NOT NULL column without a value, a nested or binary value, a
 *   string that is not plain UTF-8, …) rolls the row back, and that row is decoded by msgpackr and appended (or
 *   rejected, with the usual reason) by the generic path;
 * - a payload that is not a plain RowBatch (unexpected keys, duplicate or unknown columns, trailing bytes, …) is
 *   left to the generic path whole (`decodeMessage` returns false).
 * A property test (test/unit/actors/ingest-direct.test.ts) holds both paths to the same rows and rejections.
 */
import { isUtf8 } from "node:buffer";
import type { ColumnBuilder } from "../../src/codec/columns/column-builder.ts";
import {
  narrowIntShift,
  type BooleanColumnBuilder,
  type Int64ColumnBuilder,
  type NumberColumnBuilder,
  type TimestampColumnBuilder,
} from "../../src/codec/columns/fixed-width-builders.ts";
import type { RecordBatchBuilder } from "../../src/codec/columns/record-batch-builder.ts";
import type { Utf8ColumnBuilder } from "../../src/codec/columns/variable-width-builders.ts";
import type { DataField, DataType } from "../../src/format/data-types.ts";

/** Appends the value at `pos` to its column; returns the position after it, or −1 (nothing appended). */
type Appender = (pos: number) => number;

const VARCHAR_MAX = 2147483647;
const TWO_53 = 2n << 52n;
const MINUS_TWO_53 = -2n << 52n;

/** Whether a column type has a direct path (others: the whole job takes the generic path). */
export function hasDirectPath(type: DataType): boolean {
  switch (type.root) {
    case "INT":
    case "SMALLINT":
    case "TINYINT":
    case "BIGINT":
    case "DOUBLE":
    case "FLOAT":
    case "BOOLEAN":
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      return true;
    case "VARCHAR":
      return type.length === VARCHAR_MAX;
    default:
      return false;
  }
}

/**
 * Reads msgpack values of one payload. Numbers are read into `num` / `big` with `kind` saying which
 * (0 number, 1 bigint, −1 not a number), as msgpackr with `int64AsType: "auto"` would decode them.
 */
export class DirectReader {
  private readonly dv: DataView;
  kind = -1;
  num = 0;
  big = 0n;

  constructor(readonly d: Uint8Array) {
    this.dv = new DataView(d.buffer, d.byteOffset, d.byteLength);
  }

  /** Reads a number at `pos` (see the class comment); returns the position after it, or −1 for anything else. */
  readNumber(pos: number): number {
    const d = this.d;
    if (pos >= d.length) return -1;
    const b = d[pos]!;
    this.kind = 0;
    if (b <= 0x7f) {
      this.num = b;
      return pos + 1;
    }
    if (b >= 0xe0) {
      this.num = b - 256;
      return pos + 1;
    }
    const dv = this.dv;
    switch (b) {
      case 0xcc:
        if (pos + 2 > d.length) return -1;
        this.num = d[pos + 1]!;
        return pos + 2;
      case 0xcd:
        if (pos + 3 > d.length) return -1;
        this.num = dv.getUint16(pos + 1);
        return pos + 3;
      case 0xce:
        if (pos + 5 > d.length) return -1;
        this.num = dv.getUint32(pos + 1);
        return pos + 5;
      case 0xcf: {
        if (pos + 9 > d.length) return -1;
        const v = dv.getBigUint64(pos + 1);
        if (v <= TWO_53) this.num = Number(v);
        else {
          this.kind = 1;
          this.big = v;
        }
        return pos + 9;
      }
      case 0xd0:
        if (pos + 2 > d.length) return -1;
        this.num = dv.getInt8(pos + 1);
        return pos + 2;
      case 0xd1:
        if (pos + 3 > d.length) return -1;
        this.num = dv.getInt16(pos + 1);
        return pos + 3;
      case 0xd2:
        if (pos + 5 > d.length) return -1;
        this.num = dv.getInt32(pos + 1);
        return pos + 5;
      case 0xd3: {
        if (pos + 9 > d.length) return -1;
        const v = dv.getBigInt64(pos + 1);
        if (v >= MINUS_TWO_53 && v <= TWO_53) this.num = Number(v);
        else {
          this.kind = 1;
          this.big = v;
        }
        return pos + 9;
      }
      case 0xca:
        if (pos + 5 > d.length) return -1;
        this.num = dv.getFloat32(pos + 1);
        return pos + 5;
      case 0xcb:
        if (pos + 9 > d.length) return -1;
        this.num = dv.getFloat64(pos + 1);
        return pos + 9;
      default:
        this.kind = -1;
        return -1;
    }
  }

  /** A str at `pos`: sets `strStart`/`strEnd` and returns the position after it, or −1 when it is not a str. */
  strStart = 0;
  strEnd = 0;
  readStr(pos: number): number {
    const d = this.d;
    if (pos >= d.length) return -1;
    const b = d[pos]!;
    let len: number;
    let start: number;
    if (b >= 0xa0 && b <= 0xbf) {
      len = b & 0x1f;
      start = pos + 1;
    } else if (b === 0xd9) {
      if (pos + 2 > d.length) return -1;
      len = d[pos + 1]!;
      start = pos + 2;
    } else if (b === 0xda) {
      if (pos + 3 > d.length) return -1;
      len = this.dv.getUint16(pos + 1);
      start = pos + 3;
    } else if (b === 0xdb) {
      if (pos + 5 > d.length) return -1;
      len = this.dv.getUint32(pos + 1);
      start = pos + 5;
    } else return -1;
    if (start + len > d.length) return -1;
    this.strStart = start;
    this.strEnd = start + len;
    return start + len;
  }

  /** An array header at `pos`: sets `count`; returns the position of its first element, or −1. */
  count = 0;
  readArrayHeader(pos: number): number {
    return this.readContainerHeader(pos, 0x90, 0xdc);
  }

  /** A map header at `pos`: sets `count`; returns the position of its first key, or −1. */
  readMapHeader(pos: number): number {
    return this.readContainerHeader(pos, 0x80, 0xde);
  }

  /** Fix form `fix`…`fix + 15`, then the 16-bit (`tag16`) and 32-bit (`tag16 + 1`) forms. */
  private readContainerHeader(pos: number, fix: number, tag16: number): number {
    const d = this.d;
    if (pos >= d.length) return -1;
    const b = d[pos]!;
    if (b >= fix && b <= fix + 0x0f) {
      this.count = b & 0x0f;
      return pos + 1;
    }
    if (b === tag16 && pos + 3 <= d.length) {
      this.count = this.dv.getUint16(pos + 1);
      return pos + 3;
    }
    if (b === tag16 + 1 && pos + 5 <= d.length) {
      this.count = this.dv.getUint32(pos + 1);
      return pos + 5;
    }
    return -1;
  }

  /** The position after the (whole, possibly nested) value at `pos`, or −1 when the bytes end first. */
  skip(pos: number): number {
    const d = this.d;
    // Values still to skip; bounded by the input (each needs at least one byte).
    let pending = 1;
    while (pending > 0) {
      if (pos >= d.length) return -1;
      pending--;
      const b = d[pos]!;
      if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) pos += 1;
      else if (b >= 0x80 && b <= 0x8f) {
        pending += 2 * (b & 0x0f);
        pos += 1;
      } else if (b >= 0x90 && b <= 0x9f) {
        pending += b & 0x0f;
        pos += 1;
      } else if (b >= 0xa0 && b <= 0xbf) pos += 1 + (b & 0x1f);
      else {
        // Header bytes of the longer forms must be there before they are read (a closure here would cost per value).
        const room = d.length - pos;
        switch (b) {
          case 0xc4:
          case 0xd9:
            if (room < 2) return -1;
            pos += 2 + d[pos + 1]!;
            break;
          case 0xc5:
          case 0xda:
            if (room < 3) return -1;
            pos += 3 + this.dv.getUint16(pos + 1);
            break;
          case 0xc6:
          case 0xdb:
            if (room < 5) return -1;
            pos += 5 + this.dv.getUint32(pos + 1);
            break;
          case 0xc7:
            if (room < 2) return -1;
            pos += 3 + d[pos + 1]!;
            break;
          case 0xc8:
            if (room < 3) return -1;
            pos += 4 + this.dv.getUint16(pos + 1);
            break;
          case 0xc9:
            if (room < 5) return -1;
            pos += 6 + this.dv.getUint32(pos + 1);
            break;
          case 0xca:
            pos += 5;
            break;
          case 0xcb:
            pos += 9;
            break;
          case 0xcc:
          case 0xd0:
            pos += 2;
            break;
          case 0xcd:
          case 0xd1:
            pos += 3;
            break;
          case 0xce:
          case 0xd2:
            pos += 5;
            break;
          case 0xcf:
          case 0xd3:
            pos += 9;
            break;
          case 0xd4:
            pos += 3;
            break;
          case 0xd5:
            pos += 4;
            break;
          case 0xd6:
            pos += 6;
            break;
          case 0xd7:
            pos += 10;
            break;
          case 0xd8:
            pos += 18;
            break;
          case 0xdc:
            if (room < 3) return -1;
            pending += this.dv.getUint16(pos + 1);
            pos += 3;
            break;
          case 0xdd:
            if (room < 5) return -1;
            pending += this.dv.getUint32(pos + 1);
            pos += 5;
            break;
          case 0xde:
            if (room < 3) return -1;
            pending += 2 * this.dv.getUint16(pos + 1);
            pos += 3;
            break;
          case 0xdf:
            if (room < 5) return -1;
            pending += 2 * this.dv.getUint32(pos + 1);
            pos += 5;
            break;
          default:
            return -1; // 0xc1: never used
        }
      }
    }
    return pos <= d.length ? pos : -1;
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Whether `d[start, end)` is a string the direct path copies as it is (plain UTF-8, no byte-order mark). */
function plainUtf8(d: Uint8Array, start: number, end: number): boolean {
  if (end - start >= 3 && d[start] === 0xef && d[start + 1] === 0xbb && d[start + 2] === 0xbf) return false;
  for (let i = start; i < end; i++) if (d[i]! >= 0x80) return isUtf8(d.subarray(start, end));
  return true;
}

function appenderFor(col: ColumnBuilder, type: DataType, r: DirectReader): Appender {
  const d = r.d;
  const nil = (pos: number): number => {
    if (!type.nullable) return -1;
    col.appendNull();
    return pos + 1;
  };
  switch (type.root) {
    case "INT":
    case "SMALLINT":
    case "TINYINT": {
      const b = col as NumberColumnBuilder;
      const shift = narrowIntShift(type.root);
      return (pos) => {
        if (d[pos] === 0xc0) return nil(pos);
        const next = r.readNumber(pos);
        if (next < 0 || r.kind !== 0) return -1;
        const v = r.num;
        if ((v << shift) >> shift !== v) return -1;
        b.appendNumber(v);
        return next;
      };
    }
    case "BIGINT": {
      const b = col as Int64ColumnBuilder;
      return (pos) => {
        if (d[pos] === 0xc0) return nil(pos);
        const next = r.readNumber(pos);
        if (next < 0) return -1;
        if (r.kind === 0) {
          if (!Number.isSafeInteger(r.num)) return -1;
          b.appendNumber(r.num);
        } else if (r.kind === 1) {
          if (BigInt.asIntN(64, r.big) !== r.big) return -1;
          b.appendBigInt(r.big);
        } else return -1;
        return next;
      };
    }
    case "DOUBLE":
    case "FLOAT": {
      const b = col as NumberColumnBuilder;
      const float = type.root === "FLOAT";
      return (pos) => {
        if (d[pos] === 0xc0) return nil(pos);
        const next = r.readNumber(pos);
        if (next < 0 || r.kind !== 0) return -1;
        b.appendNumber(float ? Math.fround(r.num) : r.num);
        return next;
      };
    }
    case "BOOLEAN": {
      const b = col as BooleanColumnBuilder;
      return (pos) => {
        const x = d[pos];
        if (x === 0xc0) return nil(pos);
        if (x !== 0xc2 && x !== 0xc3) return -1;
        b.appendBoolean(x === 0xc3);
        return pos + 1;
      };
    }
    case "VARCHAR": {
      const b = col as Utf8ColumnBuilder;
      return (pos) => {
        if (d[pos] === 0xc0) return nil(pos);
        const next = r.readStr(pos);
        if (next < 0 || !plainUtf8(d, r.strStart, r.strEnd)) return -1;
        b.appendBytesRange(d, r.strStart, r.strEnd);
        return next;
      };
    }
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ": {
      const b = col as TimestampColumnBuilder;
      return (pos) => {
        if (d[pos] === 0xc0) return nil(pos);
        const next = r.readNumber(pos);
        if (next < 0 || r.kind !== 0 || !Number.isSafeInteger(r.num)) return -1;
        try {
          b.appendTimestamp(r.num, 0);
        } catch {
          return -1; // beyond the unit's range: the generic path reports it
        }
        return next;
      };
    }
    default:
      return () => -1;
  }
}

/** A payload's RowBatch header, as the direct path read it. */
interface Header {
  cols: string[];
  rowsPos: number;
  rowCount: number;
  /**
   * `rows` is the envelope's last key (as producers write it): its end was not checked here — decoding the rows
   * walks them anyway — so the decoder checks that the payload ends right after them.
   */
  rowsLast: boolean;
}

const HEADER_KEYS = new Set(["v", "schema", "cols", "rows"]);

/**
 * Reads the RowBatch envelope (`{v: 1, schema?, cols, rows}` in any key order, nothing after it); null when the
 * payload is anything else, which the generic path then reads (and rejects with the exact reason if it must). Rows
 * that come last are not walked here (see `Header.rowsLast`).
 */
export function readHeader(r: DirectReader): Header | null {
  const d = r.d;
  let pos = r.readMapHeader(0);
  if (pos < 0) return null;
  const keys = r.count;
  const seen = new Set<string>();
  let cols: string[] | null = null;
  let rowsPos = -1;
  let rowCount = 0;
  let rowsLast = false;
  for (let i = 0; i < keys; i++) {
    const kEnd = r.readStr(pos);
    if (kEnd < 0 || !plainUtf8(d, r.strStart, r.strEnd)) return null;
    const key = utf8.decode(d.subarray(r.strStart, r.strEnd));
    if (!HEADER_KEYS.has(key) || seen.has(key)) return null;
    seen.add(key);
    pos = kEnd;
    switch (key) {
      case "v":
        if (d[pos] !== 0x01) return null;
        pos += 1;
        break;
      case "schema":
        pos = r.readNumber(pos);
        if (pos < 0 || r.kind !== 0) return null;
        break;
      case "cols": {
        pos = r.readArrayHeader(pos);
        if (pos < 0) return null;
        const n = r.count;
        cols = [];
        for (let j = 0; j < n; j++) {
          const e = r.readStr(pos);
          if (e < 0 || !plainUtf8(d, r.strStart, r.strEnd)) return null;
          cols.push(utf8.decode(d.subarray(r.strStart, r.strEnd)));
          pos = e;
        }
        break;
      }
      case "rows": {
        const first = r.readArrayHeader(pos);
        if (first < 0) return null;
        rowsPos = first;
        rowCount = r.count;
        rowsLast = i === keys - 1;
        if (!rowsLast) {
          pos = r.skip(pos);
          if (pos < 0) return null;
        }
        break;
      }
    }
  }
  if (cols === null || rowsPos < 0 || !seen.has("v") || (!rowsLast && pos !== d.length)) return null;
  return { cols, rowsPos, rowCount, rowsLast };
}

/** The direct decoder of one table layout (`fields`), or null when a column type has no direct path. */
export function directDecoderFor(fields: readonly DataField[]): DirectDecoder | null {
  return fields.every((f) => hasDirectPath(f.type)) ? new DirectDecoder(fields) : null;
}

/**
 * Takes a row the direct path gave up on (its bytes `data[start, end)`, row `rowIndex` of the payload), right where
 * it stands in the payload, so rows keep their order. Returns false when it cannot read the row at all; the whole
 * payload then goes to the generic path.
 */
export type SlowRow = (rowIndex: number, start: number, end: number) => boolean;

export class DirectDecoder {
  constructor(private readonly fields: readonly DataField[]) {}

  /**
   * Appends the rows of one payload to `builder`, handing rows it does not take to `slowRow` in place. Returns null
   * — with nothing of the payload left in `builder` — when the payload is not a plain RowBatch of known, distinct
   * columns, or `slowRow` gave up: the generic path then takes it whole. Otherwise the batch's cols and how many
   * rows the direct path appended. `onCols` learns the batch's cols before any row goes to `slowRow`.
   */
  decodeMessage(builder: RecordBatchBuilder, data: Uint8Array, slowRow: SlowRow, onCols?: (cols: string[]) => void): { cols: string[]; appended: number } | null {
    const r = new DirectReader(data);
    const h = readHeader(r);
    if (h === null) return null;
    const fields = this.fields;
    const width = h.cols.length;
    // Column j of the batch feeds field fieldOfCol[j]; unknown or repeated columns: the generic path rejects them.
    const fieldOfCol = h.cols.map((c) => fields.findIndex((f) => f.name === c));
    if (fieldOfCol.some((k) => k < 0) || new Set(h.cols).size !== width) return null;
    onCols?.(h.cols);
    const cols = builder.columns;
    const appenders = fields.map((f, k) => appenderFor(cols[k]!, f.type, r));
    // Fields the batch does not name take a null in every row (or need the generic path: NOT NULL).
    const absent = fields.map((_, k) => k).filter((k) => !fieldOfCol.includes(k));
    const messageStart = builder.length;
    let appended = 0;
    let pos = h.rowsPos;
    for (let i = 0; i < h.rowCount; i++) {
      const rowStart = pos;
      const before = builder.length;
      let ok = false;
      let p = r.readArrayHeader(pos);
      const n = r.count;
      if (p >= 0 && n <= width) {
        ok = true;
        for (let j = 0; j < n && ok; j++) {
          p = appenders[fieldOfCol[j]!]!(p);
          ok = p >= 0;
        }
        // Fields beyond the row's values, and those the batch does not name, are nulls.
        for (let j = n; j < width && ok; j++) ok = appendNullTo(cols[fieldOfCol[j]!]!);
        for (let a = 0; a < absent.length && ok; a++) ok = appendNullTo(cols[absent[a]!]!);
      }
      if (ok) {
        pos = p;
        appended++;
        continue;
      }
      for (const c of cols) c.truncate(before);
      const end = r.skip(rowStart);
      // A row that does not even parse (truncated payload) — or one msgpackr cannot read — sends the whole payload
      // to the generic path, which rejects it as a whole.
      if (end < 0 || !slowRow(i, rowStart, end)) {
        for (const c of cols) c.truncate(messageStart);
        return null;
      }
      pos = end;
    }
    if (h.rowsLast && pos !== data.length) {
      // Bytes after the rows: not a plain RowBatch after all.
      for (const c of cols) c.truncate(messageStart);
      return null;
    }
    return { cols: h.cols, appended };
  }
}

function appendNullTo(col: ColumnBuilder): boolean {
  if (!col.type.nullable) return false;
  col.appendNull();
  return true;
}
