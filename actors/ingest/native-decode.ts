/**
 * The native direct path: a msgpack RowBatch payload decoded by the addon (native/parquet/src/row_batch.rs) into
 * column buffers in this thread's scratch buffer, then appended to the column builders in bulk — instead of value by
 * value in JavaScript (direct.ts), whose decoder is the bucket worker's costliest code after the Parquet encode
 * (issue 28: its JIT recompiles and garbage).
 *
 * It takes a payload whole or not at all: whatever the JavaScript direct path would roll back to msgpackr or give to
 * the generic path, the addon leaves alone (`decodeInto` answers −1) and the caller decodes the payload as before, so
 * rows, rejections and dead letters are those of the JavaScript paths. A property test
 * (test/unit/actors/ingest-native.test.ts) holds both to the same builder contents.
 *
 * Used when the addon loads and has the decoder, and every column has a direct path; `NATSLAKE_DECODE_NATIVE=0`
 * forces the JavaScript path (A/B runs, tests), `=1` makes a missing addon an error instead of a quiet fallback (a
 * node refuses to start: `nativeDecodeChoice`, which its "node started" line reports).
 */
import { requireNativeAddon } from "../../src/codec/native-addon.mjs";
import { toArrowType } from "../../src/codec/arrow-schema.ts";
import type { ColumnBuilder } from "../../src/codec/columns/column-builder.ts";
import type { BooleanColumnBuilder, Int64ColumnBuilder, NumberColumnBuilder, TimestampColumnBuilder } from "../../src/codec/columns/fixed-width-builders.ts";
import type { RecordBatchBuilder } from "../../src/codec/columns/record-batch-builder.ts";
import type { Utf8ColumnBuilder } from "../../src/codec/columns/variable-width-builders.ts";
import type { DataField, DataType } from "../../src/format/data-types.ts";
import { ErrorKind, LakeError } from "../../src/errors.ts";
import { hasDirectPath } from "./direct.ts";
import type * as arrow from "apache-arrow";

/** The addon's decoder (row_batch.rs `RowBatchDecoder`). */
interface AddonDecoder {
  decode(payload: Uint8Array, scratch: Uint8Array, layout: Int32Array): number;
}
type AddonDecoderClass = new (names: string[], kinds: number[], nullable: boolean[]) => AddonDecoder;

/** The column kinds as row_batch.rs numbers them (`Kind::from_code`). */
const Kind = { INT: 1, SMALLINT: 2, TINYINT: 3, BIGINT: 4, DOUBLE: 5, FLOAT: 6, BOOLEAN: 7, VARCHAR: 8, TS_MS: 9, TS_US: 10, TS_NS: 11 } as const;
type KindCode = (typeof Kind)[keyof typeof Kind];

/** Entries of the layout per field after its first entry (row_batch.rs `LAYOUT_STRIDE`). */
const STRIDE = 5;
const NOT_TAKEN = -1;
const SCRATCH_TOO_SMALL = -2;
/**
 * The largest scratch buffer a thread keeps (a payload whose columns need more goes to the JavaScript path): a
 * bucket's payloads are bounded by the stream's message size, whose columns take a few megabytes at most.
 */
const MAX_SCRATCH_BYTES = 64 * 1024 * 1024;

function kindOf(type: DataType): KindCode {
  switch (type.root) {
    case "INT":
    case "SMALLINT":
    case "TINYINT":
    case "BIGINT":
    case "DOUBLE":
    case "FLOAT":
    case "BOOLEAN":
    case "VARCHAR":
      return Kind[type.root];
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ": {
      // The builder's unit (TimeUnit: 1 ms, 2 µs, 3 ns), which the addon scales epoch millis to.
      const unit = (toArrowType(type) as arrow.Timestamp).unit as number;
      return unit === 1 ? Kind.TS_MS : unit === 2 ? Kind.TS_US : Kind.TS_NS;
    }
    default:
      throw new LakeError(ErrorKind.Unexpected, `no native decode for ${type.root}`);
  }
}

/** Appends column `k` of a decoded payload (`rows` rows) from `buf` to its builder `col`. */
type Append = (col: ColumnBuilder, buf: ArrayBuffer, layout: Int32Array, base: number, rows: number) => void;

function appendFor(kind: KindCode): Append {
  const validity = (buf: ArrayBuffer, layout: Int32Array, base: number, rows: number): Uint8Array | null =>
    layout[base + 1]! < 0 ? null : new Uint8Array(buf, layout[base + 1]!, (rows + 7) >> 3);
  switch (kind) {
    case Kind.INT:
      return (col, buf, l, b, rows) => (col as NumberColumnBuilder).appendValues(new Int32Array(buf, l[b]!, rows), validity(buf, l, b, rows), l[b + 2]!);
    case Kind.SMALLINT:
      return (col, buf, l, b, rows) => (col as NumberColumnBuilder).appendValues(new Int16Array(buf, l[b]!, rows), validity(buf, l, b, rows), l[b + 2]!);
    case Kind.TINYINT:
      return (col, buf, l, b, rows) => (col as NumberColumnBuilder).appendValues(new Int8Array(buf, l[b]!, rows), validity(buf, l, b, rows), l[b + 2]!);
    case Kind.DOUBLE:
      return (col, buf, l, b, rows) => (col as NumberColumnBuilder).appendValues(new Float64Array(buf, l[b]!, rows), validity(buf, l, b, rows), l[b + 2]!);
    case Kind.FLOAT:
      return (col, buf, l, b, rows) => (col as NumberColumnBuilder).appendValues(new Float32Array(buf, l[b]!, rows), validity(buf, l, b, rows), l[b + 2]!);
    case Kind.BIGINT:
    case Kind.TS_MS:
    case Kind.TS_US:
    case Kind.TS_NS:
      return (col, buf, l, b, rows) => (col as Int64ColumnBuilder | TimestampColumnBuilder).appendSlots(new BigInt64Array(buf, l[b]!, rows), validity(buf, l, b, rows), l[b + 2]!);
    case Kind.BOOLEAN:
      return (col, buf, l, b, rows) => (col as BooleanColumnBuilder).appendBits(rows, new Uint8Array(buf, l[b]!, (rows + 7) >> 3), validity(buf, l, b, rows), l[b + 2]!);
    case Kind.VARCHAR:
      return (col, buf, l, b, rows) =>
        (col as Utf8ColumnBuilder).appendSpans(new Int32Array(buf, l[b]!, rows + 1), new Uint8Array(buf, l[b + 3]!, l[b + 4]!), validity(buf, l, b, rows), l[b + 2]!);
  }
}

/** This thread's scratch buffer, shared by its decoders (a decode's columns are copied out before the next one). */
let scratch = new Uint8Array(64 * 1024);

export class NativeRowBatchDecoder {
  private readonly layout: Int32Array;
  private readonly appends: Append[];

  constructor(
    private readonly decoder: AddonDecoder,
    fields: readonly DataField[],
  ) {
    this.layout = new Int32Array(1 + STRIDE * fields.length);
    this.appends = fields.map((f) => appendFor(kindOf(f.type)));
  }

  /**
   * Appends the rows of one payload to `builder` (whose columns are the decoder's fields) and returns how many; −1,
   * with nothing appended, when the payload is left to the JavaScript path.
   */
  decodeInto(builder: RecordBatchBuilder, payload: Uint8Array): number {
    let rows = this.decoder.decode(payload, scratch, this.layout);
    if (rows === SCRATCH_TOO_SMALL) {
      const need = this.layout[0]!;
      if (need > MAX_SCRATCH_BYTES) return NOT_TAKEN;
      scratch = new Uint8Array(Math.min(MAX_SCRATCH_BYTES, 2 ** Math.ceil(Math.log2(need))));
      rows = this.decoder.decode(payload, scratch, this.layout);
    }
    if (rows < 0) return NOT_TAKEN;
    const cols = builder.columns;
    const buf = scratch.buffer as ArrayBuffer;
    for (let k = 0; k < this.appends.length; k++) this.appends[k]!(cols[k]!, buf, this.layout, 1 + k * STRIDE, rows);
    return rows;
  }
}

/** The addon's decoder class, or why there is none (loaded once per thread). */
let loaded: { cls: AddonDecoderClass | null; why: string } | undefined;

/** The addon's decoder class; null when the addon is not built or predates it (throws under NATSLAKE_DECODE_NATIVE=1). */
function addonDecoderClass(): AddonDecoderClass | null {
  const asked = process.env["NATSLAKE_DECODE_NATIVE"]?.trim() ?? "";
  if (asked !== "" && asked !== "0" && asked !== "1") throw new LakeError(ErrorKind.DataInvalid, `NATSLAKE_DECODE_NATIVE must be 0 or 1 (or unset: native when the addon is built), not '${asked}'`);
  if (loaded === undefined) {
    try {
      const cls = requireNativeAddon()["RowBatchDecoder"];
      loaded = typeof cls === "function" ? { cls: cls as AddonDecoderClass, why: "" } : { cls: null, why: "the addon has no RowBatchDecoder (built from older sources)" };
    } catch (e) {
      const notBuilt = e instanceof Error && "code" in e && e.code === "MODULE_NOT_FOUND";
      loaded = { cls: null, why: notBuilt ? "the addon is not built" : e instanceof Error ? e.message.split("\n")[0]! : String(e) };
    }
  }
  if (loaded.cls === null && asked === "1") throw new LakeError(ErrorKind.Unexpected, `NATSLAKE_DECODE_NATIVE=1, but the native addon's decoder does not load (${loaded.why}); scripts/setup.sh builds it where cargo is installed`);
  return loaded.cls;
}

/**
 * Which decode this process's bucket workers run for tables whose columns all have a direct path, and why (a node
 * logs it when it starts). Throws under NATSLAKE_DECODE_NATIVE=1 when the addon's decoder does not load, so such a
 * node refuses to start rather than failing every append.
 */
export function nativeDecodeChoice(): { path: "native" | "javascript"; reason: string } {
  if (process.env["NATSLAKE_DECODE_NATIVE"] === "0") return { path: "javascript", reason: "NATSLAKE_DECODE_NATIVE=0" };
  if (process.env["NATSLAKE_DECODE_DIRECT"] === "0") return { path: "javascript", reason: "NATSLAKE_DECODE_DIRECT=0" };
  const cls = addonDecoderClass();
  if (cls !== null) return { path: "native", reason: process.env["NATSLAKE_DECODE_NATIVE"] === "1" ? "NATSLAKE_DECODE_NATIVE=1" : "the native addon is built" };
  return { path: "javascript", reason: loaded!.why };
}

const decoders = new WeakMap<readonly DataField[], NativeRowBatchDecoder | null>();

/**
 * The native decoder of one table layout (cached per thread), or null: a column without a direct path, no addon, or
 * `NATSLAKE_DECODE_NATIVE=0`.
 */
export function nativeDecoderFor(fields: readonly DataField[]): NativeRowBatchDecoder | null {
  if (process.env["NATSLAKE_DECODE_NATIVE"] === "0") return null;
  let d = decoders.get(fields);
  if (d === undefined) {
    const Cls = fields.every((f) => hasDirectPath(f.type)) ? addonDecoderClass() : null;
    d = Cls === null ? null : new NativeRowBatchDecoder(new Cls(fields.map((f) => f.name), fields.map((f) => kindOf(f.type)), fields.map((f) => f.type.nullable)), fields);
    decoders.set(fields, d);
  }
  return d;
}
