/**
 * What the Arrow data handed to arrow-rs must look like, and what its footer must then say, for a Parquet file that
 * released Java Paimon reads correctly (parquet-footer.mjs does the footer part):
 *
 * - Timestamp(ns) leaves (Paimon TIMESTAMP / TIMESTAMP_LTZ of precision 7–9) become FixedSizeBinary(12) holding
 *   Java's INT96 bytes (nanos of the day as int64 LE, then the Julian day as int32 LE), and the footer marks those
 *   leaves INT96. The nanos of the day are always in [0, 86400·10⁹): Java Paimon's writer lets them go negative
 *   before 1970 (truncating division), which its own reader undoes by arithmetic, but the canonical form is what
 *   pyarrow, DuckDB and arrow-rs decode the same way.
 * - FLOAT/DOUBLE leaves holding a NaN lose their chunk min/max in the footer (arrow-rs leaves NaN out of them, so
 *   a pruning reader would skip a NaN row Java's comparator returns for `d > x`).
 * - The footer's `ARROW:schema` then describes the intended types (Timestamp(ns), not the stand-in), so pyarrow and
 *   arrow-rs readers restore Timestamp(ns) (with the LTZ's time zone) from the INT96 column.
 *
 * Leaves are counted the way arrow-rs flattens a schema into Parquet columns: depth first; a list counts its
 * element, a map its key and value, a struct its children.
 */
import * as arrow from "apache-arrow";
import { mapType } from "./arrow-schema.ts";
import type { FooterPlan } from "./parquet-footer.mjs";

export interface ParquetLayout {
  /** The data to encode (the input itself when nothing needs converting). */
  table: arrow.Table;
  /** Top-level INT96 stand-ins: encoded PLAIN, without dictionary or statistics. */
  plainColumns: string[];
  /** An INT96 stand-in is nested, which parquet-wasm can reach only through the file-wide encoding. */
  nestedInt96: boolean;
  /** Footer changes, or undefined when arrow-rs's footer is right as written. */
  footer: FooterPlan | undefined;
}

const INT96_TYPE = new arrow.FixedSizeBinary(12);

/** The layout for a table whose field names already follow Paimon's Parquet spelling (`normalizeArrowSchema`). */
export function parquetLayout(table: arrow.Table): ParquetLayout {
  const int96Leaves: number[] = [];
  const noMinMaxLeaves: number[] = [];
  const plainColumns: string[] = [];
  let nestedInt96 = false;
  let leaf = 0;
  const visit = (type: arrow.DataType, columnData: () => arrow.Data[], topLevel: string | null): void => {
    if (arrow.DataType.isList(type) || arrow.DataType.isFixedSizeList(type) || arrow.DataType.isLargeList(type) || arrow.DataType.isMap(type) || arrow.DataType.isStruct(type)) {
      const children = (arrow.DataType.isMap(type) ? type.children[0]!.type.children : type.children) as arrow.Field[];
      children.forEach((c, k) => visit(c.type, () => columnData().flatMap((d) => childData(d, type, k)), null));
      return;
    }
    const index = leaf++;
    if (isInt96(type)) {
      int96Leaves.push(index);
      if (topLevel !== null) plainColumns.push(topLevel);
      else nestedInt96 = true;
    } else if (arrow.DataType.isFloat(type) && type.precision !== arrow.Precision.HALF && columnData().some(hasNaN)) {
      noMinMaxLeaves.push(index);
    }
  };
  table.schema.fields.forEach((f, k) => visit(f.type, () => table.batches.map((b) => b.data.children[k]!), f.name));

  if (int96Leaves.length === 0 && noMinMaxLeaves.length === 0) return { table, plainColumns, nestedInt96, footer: undefined };
  const footer: FooterPlan = { noMinMaxLeaves };
  if (int96Leaves.length === 0) return { table, plainColumns, nestedInt96, footer };
  footer.int96Leaves = int96Leaves;
  footer.arrowSchema = ipcSchemaBase64(table.schema);
  const schema = new arrow.Schema(table.schema.fields.map(int96Field), table.schema.metadata);
  const batches = table.batches.map(
    (b) => new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: b.numRows, nullCount: 0, children: b.data.children.map(int96Data) })),
  );
  return { table: new arrow.Table(schema, batches), plainColumns, nestedInt96, footer };
}

function isInt96(type: arrow.DataType): type is arrow.Timestamp {
  return arrow.DataType.isTimestamp(type) && type.unit === arrow.TimeUnit.NANOSECOND;
}

/** The child data of a nested column (a map's key and value live under its entries struct). */
function childData(d: arrow.Data, type: arrow.DataType, k: number): arrow.Data[] {
  return arrow.DataType.isMap(type) ? [d.children[0]!.children[k]!] : [d.children[k]!];
}

/** Any NaN among the values (null slots included: at worst that drops statistics a file could have kept). */
function hasNaN(d: arrow.Data): boolean {
  const v = d.values as Float32Array | Float64Array;
  for (let i = 0; i < v.length; i++) if (v[i] !== v[i]) return true;
  return false;
}

function int96Field(f: arrow.Field): arrow.Field {
  return new arrow.Field(f.name, int96Type(f.type), f.nullable, f.metadata);
}

function int96Type(t: arrow.DataType): arrow.DataType {
  if (isInt96(t)) return INT96_TYPE;
  if (arrow.DataType.isList(t)) return new arrow.List(int96Field(t.children[0]!));
  if (arrow.DataType.isMap(t)) {
    const [k, v] = t.children[0]!.type.children as [arrow.Field, arrow.Field];
    return mapType(int96Type(k.type), int96Type(v.type), v.nullable);
  }
  if (arrow.DataType.isStruct(t)) return new arrow.Struct(t.children.map(int96Field));
  if (arrow.DataType.isFixedSizeList(t)) return new arrow.FixedSizeList(t.listSize, int96Field(t.children[0]!));
  return t;
}

/** The same column with every Timestamp(ns) leaf replaced by its INT96 bytes (other buffers shared). */
function int96Data(d: arrow.Data): arrow.Data {
  const type = int96Type(d.type);
  if (type === d.type) return d;
  if (isInt96(d.type)) return arrow.makeData({ type: INT96_TYPE, offset: d.offset, length: d.length, nullCount: d.nullCount, nullBitmap: d.nullBitmap, data: int96Bytes(d.values as BigInt64Array) });
  return d.clone(type, d.offset, d.length, d.nullCount, undefined, d.children.map(int96Data));
}

/** The Julian day number of 1970-01-01. */
const JULIAN_EPOCH_DAY = 2_440_588;
/** Nanoseconds per day = 2^16 · 1318359375: the odd factor below. */
const DAY_ODD = 1_318_359_375;

/**
 * INT96 bytes of epoch nanoseconds (apache-arrow's values buffers are already sliced to the data's offset). Null
 * slots convert like any value: their bytes are never read.
 *
 * Without BigInts (measured ~6x faster): with ns = hi·2^32 + lo, M = hi·2^16 + (lo >>> 16) is exact in a double
 * (|M| < 2^47) and ns = 2^16·M + (lo & 0xffff); as a day is 2^16·DAY_ODD nanoseconds, the day is floor(M / DAY_ODD)
 * (the low 16 bits cannot carry into it) and the nanos of the day 2^16·(M mod DAY_ODD) + (lo & 0xffff) < 2^47.
 */
export function int96Bytes(nanos: BigInt64Array): Uint8Array {
  const words = new Int32Array(nanos.buffer, nanos.byteOffset, nanos.length * 2);
  const out = new Uint8Array(nanos.length * 12);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < nanos.length; i++) {
    const lo = words[2 * i]! >>> 0;
    const hi = words[2 * i + 1]!;
    const m = hi * 65536 + (lo >>> 16);
    const day = Math.floor(m / DAY_ODD);
    const ofDay = (m - day * DAY_ODD) * 65536 + (lo & 0xffff);
    dv.setUint32(i * 12, ofDay % 4294967296, true);
    dv.setUint32(i * 12 + 4, Math.floor(ofDay / 4294967296), true);
    dv.setInt32(i * 12 + 8, day + JULIAN_EPOCH_DAY, true);
  }
  return out;
}

/**
 * The `ARROW:schema` footer value for `schema`, as arrow-rs writes it: base64 of the IPC schema message (continuation
 * marker, length, flatbuffer), here the first message of an empty IPC stream.
 */
function ipcSchemaBase64(schema: arrow.Schema): string {
  const stream = arrow.tableToIPC(new arrow.Table(schema), "stream");
  const metaLength = new DataView(stream.buffer, stream.byteOffset + 4, 4).getInt32(0, true);
  return Buffer.from(stream.subarray(0, 8 + metaLength)).toString("base64");
}
