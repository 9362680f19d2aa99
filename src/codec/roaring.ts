/**
 * A reader of Roaring bitmaps in their portable serialization (RoaringFormatSpec, what Java's RoaringBitmap writes
 * with `serialize`), and of the 64-bit "portable" layout built on it (Iceberg's, Paimon's OptimizedRoaringBitmap64):
 * the two bitmap formats of Paimon's deletion vectors (src/format/wire/deletion-vectors.ts). Read only; natslake writes no bitmap.
 *
 * 32-bit layout, all little-endian:
 * - a cookie: 12346 (no run containers), then the container count as a u32; or 12347 in the low 16 bits with
 *   count − 1 in the high 16 bits, then a bitset of ⌈count/8⌉ bytes telling which containers are runs;
 * - per container its key (the high 16 bits of its values) and cardinality − 1, u16 each;
 * - an offset header (a u32 per container) unless there are runs and fewer than 4 containers — skipped here, the
 *   containers follow one another in key order;
 * - the containers: a run container is a u16 run count then (start, length − 1) u16 pairs; otherwise cardinality
 *   ≤ 4096 is an array container (that many sorted u16 values), larger a bitmap container (1024 u64 words).
 * 64-bit layout: a u64 bitmap count, then per bitmap a u32 key (the high 32 bits, ascending) and a 32-bit bitmap.
 *
 * Values come out as a sorted Float64Array (exact below 2^53, far above any row count). Malformed input — a bad
 * cookie, keys out of order, a container past the end, values not ascending — is a DataInvalid naming `where`.
 */
import { dataInvalid } from "../errors.ts";

const SERIAL_COOKIE_NO_RUNCONTAINER = 12346;
const SERIAL_COOKIE = 12347;
/** With runs, an offset header is written only from this many containers on. */
const NO_OFFSET_THRESHOLD = 4;
/** Larger array containers are bitmap containers. */
const ARRAY_CONTAINER_MAX = 4096;
const BITMAP_CONTAINER_BYTES = 8192;
/** A 64-bit bitmap's keys above this would make positions beyond 2^53. */
const MAX_64_KEY = 2 ** 21 - 1;

/** A decoded bitmap: its values, ascending and distinct, and where its serialization ended in the input. */
export interface DecodedBitmap {
  values: Float64Array;
  end: number;
}

/** Where to read and what to expect: values below `bound` (a data file's row count: a decoy cannot blow up memory). */
export interface BitmapReadOptions {
  offset?: number;
  bound?: number;
  /** The bitmap, for errors. */
  where?: string;
}

/** Reads the 32-bit portable bitmap at `offset` of `bytes`. */
export function readRoaring32(bytes: Uint8Array, o: BitmapReadOptions = {}): DecodedBitmap {
  const where = o.where ?? "roaring bitmap";
  const out = new ValueSink(where, o.bound ?? Infinity);
  const end = readRoaring32Into(new Reader(bytes, o.offset ?? 0, where), out, 0);
  return { values: out.finish(), end };
}

/** Reads the 64-bit portable bitmap (a count, then keyed 32-bit bitmaps) at `offset` of `bytes`. */
export function readRoaring64(bytes: Uint8Array, o: BitmapReadOptions = {}): DecodedBitmap {
  const where = o.where ?? "64-bit roaring bitmap";
  const r = new Reader(bytes, o.offset ?? 0, where);
  const count = r.u64();
  if (count > 0x7fffffff) throw dataInvalid(`${where}: invalid bitmap count ${count}`);
  const out = new ValueSink(where, o.bound ?? Infinity);
  let lastKey = -1;
  for (let i = 0; i < count; i++) {
    const key = r.u32();
    if (key <= lastKey) throw dataInvalid(`${where}: bitmap keys are not ascending (${key} after ${lastKey})`);
    if (key > MAX_64_KEY) throw dataInvalid(`${where}: bitmap key ${key} makes positions beyond 2^53`);
    lastKey = key;
    r.pos = readRoaring32Into(r, out, key * 2 ** 32);
  }
  return { values: out.finish(), end: r.pos };
}

/** Reads one 32-bit bitmap from `r`'s position, adding `base` to each value; returns where it ended. */
function readRoaring32Into(r: Reader, out: ValueSink, base: number): number {
  const where = r.where;
  const cookie = r.u32();
  let count: number;
  let runs: Uint8Array | null = null;
  if ((cookie & 0xffff) === SERIAL_COOKIE) {
    count = (cookie >>> 16) + 1;
    runs = r.bytes(Math.ceil(count / 8));
  } else if (cookie === SERIAL_COOKIE_NO_RUNCONTAINER) {
    count = r.u32();
    if (count > 65536) throw dataInvalid(`${where}: ${count} containers (at most 65536)`);
  } else {
    throw dataInvalid(`${where}: not a portable roaring bitmap (cookie ${cookie})`);
  }
  const keys = new Uint16Array(count);
  const cardinalities = new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    keys[i] = r.u16();
    cardinalities[i] = r.u16() + 1;
    if (i > 0 && keys[i]! <= keys[i - 1]!) throw dataInvalid(`${where}: container keys are not ascending (${keys[i]} after ${keys[i - 1]})`);
  }
  if (runs === null || count >= NO_OFFSET_THRESHOLD) r.bytes(4 * count);
  for (let i = 0; i < count; i++) {
    const high = base + keys[i]! * 65536;
    const isRun = runs !== null && (runs[i >> 3]! & (1 << (i & 7))) !== 0;
    if (isRun) {
      const n = r.u16();
      for (let k = 0; k < n; k++) {
        const start = r.u16();
        const length = r.u16() + 1;
        if (start + length > 65536) throw dataInvalid(`${where}: a run of container ${keys[i]} ends past 65535`);
        for (let v = start; v < start + length; v++) out.push(high + v);
      }
    } else if (cardinalities[i]! <= ARRAY_CONTAINER_MAX) {
      for (let k = 0; k < cardinalities[i]!; k++) out.push(high + r.u16());
    } else {
      const words = r.bytes(BITMAP_CONTAINER_BYTES);
      let seen = 0;
      for (let b = 0; b < BITMAP_CONTAINER_BYTES; b++) {
        let byte = words[b]!;
        while (byte !== 0) {
          const bit = 31 - Math.clz32(byte & -byte);
          out.push(high + b * 8 + bit);
          byte &= byte - 1;
          seen++;
        }
      }
      if (seen !== cardinalities[i]) throw dataInvalid(`${where}: bitmap container ${keys[i]} holds ${seen} values, its header says ${cardinalities[i]}`);
    }
  }
  return r.pos;
}

/** Little-endian reads with bounds checks. */
class Reader {
  private readonly view: DataView;

  constructor(
    private readonly buf: Uint8Array,
    public pos: number,
    readonly where: string,
  ) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  private take(n: number): number {
    const at = this.pos;
    if (at < 0 || at + n > this.buf.length) throw dataInvalid(`${this.where}: ends early (${n} bytes wanted at ${at}, ${this.buf.length} in all)`);
    this.pos += n;
    return at;
  }

  u16(): number {
    return this.view.getUint16(this.take(2), true);
  }

  u32(): number {
    return this.view.getUint32(this.take(4), true);
  }

  u64(): number {
    const at = this.take(8);
    const high = this.view.getUint32(at + 4, true);
    if (high >= 0x200000) throw dataInvalid(`${this.where}: a 64-bit count beyond 2^53`);
    return high * 2 ** 32 + this.view.getUint32(at, true);
  }

  bytes(n: number): Uint8Array {
    const at = this.take(n);
    return this.buf.subarray(at, at + n);
  }
}

/** The values, checked ascending as they come (containers in key order, values in order within each) and below the bound. */
class ValueSink {
  private values = new Float64Array(64);
  private length = 0;

  constructor(
    private readonly where: string,
    private readonly bound: number,
  ) {}

  push(v: number): void {
    if (v >= this.bound) throw dataInvalid(`${this.where}: value ${v} is out of range (below ${this.bound} expected)`);
    if (this.length > 0 && v <= this.values[this.length - 1]!) throw dataInvalid(`${this.where}: values are not ascending (${v} after ${this.values[this.length - 1]})`);
    if (this.length === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.length++] = v;
  }

  finish(): Float64Array {
    return this.values.slice(0, this.length);
  }
}
