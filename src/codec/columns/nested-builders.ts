/**
 * The builders of nested columns — ARRAY (List), MAP and MULTISET (Map), ROW (Struct) — and `makeColumnBuilder`, the
 * factory that picks a builder for any Paimon type. They live together because they recurse into each other: a
 * nested builder makes its children's builders through the factory, and the factory makes nested builders.
 * `finish()` hands over an `arrow.Data` whose type is exactly `toArrowType(type)`.
 */
import * as arrow from "apache-arrow";
import { dataInvalid, ErrorKind, LakeError } from "../../errors.ts";
import type { DataType } from "../../format/data-types.ts";
import { Timestamp, type Value } from "../../format/values.ts";
import { toArrowType } from "../arrow-schema.ts";
import { afterFinish, bad, BaseBuilder, DEFAULT_CAPACITY, grown, MAX_OFFSET, type ColumnBuilder } from "./column-builder.ts";
import { BooleanColumnBuilder, DecimalColumnBuilder, Int64ColumnBuilder, NumberColumnBuilder, TimestampColumnBuilder } from "./fixed-width-builders.ts";
import { BinaryColumnBuilder, Utf8ColumnBuilder } from "./variable-width-builders.ts";
import { HEAP_ARRAYS, type ArrayAllocator } from "./buffer-recycler.ts";

type CollectionType = Extract<DataType, { root: "ARRAY" | "MULTISET" }>;
type MapType = Extract<DataType, { root: "MAP" }>;

export class ListColumnBuilder extends BaseBuilder {
  private offsets: Int32Array;
  readonly child: ColumnBuilder & BaseBuilder;
  constructor(type: CollectionType, path: string, private readonly capacity = DEFAULT_CAPACITY) {
    super(type, toArrowType(type), path);
    this.child = makeBuilder(type.element, `${path}[]`, capacity);
    this.offsets = new Int32Array(capacity + 1);
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (!Array.isArray(value)) throw bad(this.path, "an array", value);
    this.ensureOffset();
    this.markValid();
    const child = this.child;
    for (let k = 0; k < value.length; k++) child.append(value[k] as Value);
    this.endList();
  }
  /** For decoders appending elements through `child` directly: closes the current list. */
  endList(): void {
    if (this.child.length > MAX_OFFSET) throw dataInvalid(`column ${this.path}: too many elements`, { column: this.path });
    this.offsets[++this.length] = this.child.length;
  }
  /** For decoders: marks the list about to be built as non-null (call before appending its elements). */
  beginList(): void {
    this.ensureOffset();
    this.markValid();
  }
  private ensureOffset(): void {
    if (this.length + 1 >= this.offsets.length) this.offsets = grown(this.offsets, this.length + 2, (n) => new Int32Array(n), this.capacity + 1);
  }
  protected pushEmpty(): void {
    this.ensureOffset();
    this.offsets[this.length + 1] = this.offsets[this.length]!;
    this.length++;
  }
  protected override truncateChildren(): void {
    this.child.truncate(this.offsets[this.length]!);
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    return arrow.makeData({
      type: this.arrowType as arrow.List,
      length: this.length,
      nullCount,
      nullBitmap,
      valueOffsets: this.offsets.subarray(0, this.length + 1),
      child: this.child.finish(),
    });
  }
  protected reset(): void {
    this.offsets = new Int32Array(afterFinish(this.capacity) + 1);
  }
}

/** MAP<K, V> (pairs) and MULTISET<T> (elements, stored as element → count like Java). */
export class MapColumnBuilder extends BaseBuilder {
  private offsets: Int32Array;
  readonly keys: ColumnBuilder & BaseBuilder;
  readonly values: ColumnBuilder & BaseBuilder;
  private readonly entriesType: arrow.Struct;
  private readonly multiset: boolean;

  constructor(type: CollectionType | MapType, path: string, private readonly capacity = DEFAULT_CAPACITY) {
    super(type, toArrowType(type), path);
    this.multiset = type.root === "MULTISET";
    // Parquet map keys are REQUIRED (Java writes them so): a null key cannot be stored.
    const keyType = type.root === "MAP" ? type.key : type.element;
    const valueType: DataType = type.root === "MAP" ? type.value : { root: "INT", nullable: false };
    this.keys = makeBuilder({ ...keyType, nullable: false } as DataType, `${path}.key`, capacity);
    this.values = makeBuilder(valueType, `${path}.value`, capacity);
    this.entriesType = (this.arrowType as arrow.Map_).children[0]!.type as arrow.Struct;
    this.offsets = new Int32Array(capacity + 1);
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    this.beginMap();
    if (this.multiset) {
      if (!Array.isArray(value)) throw bad(this.path, "an array (MULTISET)", value);
      for (const [element, count] of countElements(value as Value[])) {
        this.keys.append(element);
        this.values.append(count);
      }
    } else if (Array.isArray(value)) {
      for (let k = 0; k < value.length; k++) {
        const pair = value[k];
        if (!Array.isArray(pair) || pair.length !== 2) throw bad(this.path, "an array of [key, value] pairs", value);
        this.keys.append(pair[0] as Value);
        this.values.append(pair[1] as Value);
      }
    } else if ((value as unknown) instanceof Map) {
      for (const [k, v] of value as unknown as Map<Value, Value>) {
        this.keys.append(k);
        this.values.append(v);
      }
    } else throw bad(this.path, "an array of [key, value] pairs", value);
    this.endMap();
  }
  /** For decoders: begins a non-null map; append to `keys`/`values` in step, then `endMap()`. */
  beginMap(): void {
    if (this.length + 1 >= this.offsets.length) this.offsets = grown(this.offsets, this.length + 2, (n) => new Int32Array(n), this.capacity + 1);
    this.markValid();
  }
  endMap(): void {
    if (this.keys.length !== this.values.length) throw new LakeError(ErrorKind.Unexpected, `column ${this.path}: keys and values out of step`);
    this.offsets[++this.length] = this.keys.length;
  }
  protected pushEmpty(): void {
    if (this.length + 1 >= this.offsets.length) this.offsets = grown(this.offsets, this.length + 2, (n) => new Int32Array(n), this.capacity + 1);
    this.offsets[this.length + 1] = this.offsets[this.length]!;
    this.length++;
  }
  protected override truncateChildren(): void {
    const n = this.offsets[this.length]!;
    this.keys.truncate(n);
    this.values.truncate(n);
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    const n = this.keys.length;
    const entries = arrow.makeData({ type: this.entriesType, length: n, nullCount: 0, children: [this.keys.finish(), this.values.finish()] });
    return arrow.makeData({
      type: this.arrowType as arrow.Map_,
      length: this.length,
      nullCount,
      nullBitmap,
      valueOffsets: this.offsets.subarray(0, this.length + 1),
      child: entries,
    });
  }
  protected reset(): void {
    this.offsets = new Int32Array(afterFinish(this.capacity) + 1);
  }
}

/** Groups equal elements of a multiset; equality is by value (bytes and timestamps by content). */
function countElements(values: Value[]): Array<[Value, number]> {
  const counts = new Map<unknown, [Value, number]>();
  for (const v of values) {
    const key = v instanceof Uint8Array ? `b:${Buffer.from(v).toString("hex")}` : v instanceof Timestamp ? `t:${v.millis}:${v.nanoOfMilli}` : v !== null && typeof v === "object" ? `j:${stableJson(v)}` : v;
    const hit = counts.get(key);
    if (hit) hit[1]++;
    else counts.set(key, [v, 1]);
  }
  return [...counts.values()];
}

const stableJson = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? `${x}n` : x instanceof Uint8Array ? Buffer.from(x).toString("hex") : x));

export class StructColumnBuilder extends BaseBuilder {
  readonly children: Array<ColumnBuilder & BaseBuilder>;
  private readonly names: string[];
  constructor(type: DataType & { root: "ROW" }, path: string, capacity = DEFAULT_CAPACITY) {
    super(type, toArrowType(type), path);
    this.names = type.fields.map((f) => f.name);
    this.children = type.fields.map((f) => makeBuilder(f.type, `${path}.${f.name}`, capacity));
  }
  append(value: Value | undefined): void {
    if (value === null || value === undefined) return this.appendNull();
    if (typeof value !== "object" || Array.isArray(value) || value instanceof Uint8Array || value instanceof Timestamp)
      throw bad(this.path, "an object (ROW)", value);
    const o = value as Record<string, Value>;
    this.markValid();
    for (let k = 0; k < this.children.length; k++) this.children[k]!.append(o[this.names[k]!]);
    this.length++;
  }
  /** For decoders filling `children` directly: records one non-null row (children must have advanced by one). */
  appendPresent(): void {
    this.markValid();
    this.length++;
  }
  protected pushEmpty(): void {
    for (const c of this.children) c.appendHidden();
    this.length++;
  }
  protected override truncateChildren(): void {
    for (const c of this.children) c.truncate(this.length);
  }
  protected build(nullBitmap: Uint8Array | undefined, nullCount: number): arrow.Data {
    return arrow.makeData({
      type: this.arrowType as arrow.Struct,
      length: this.length,
      nullCount,
      nullBitmap,
      children: this.children.map((c) => c.finish()),
    });
  }
  protected reset(): void {}
}

function makeBuilder(type: DataType, path: string, capacity: number, arrays: ArrayAllocator = HEAP_ARRAYS): ColumnBuilder & BaseBuilder {
  switch (type.root) {
    case "BOOLEAN":
      return new BooleanColumnBuilder(type, path, capacity, arrays);
    case "TINYINT":
    case "SMALLINT":
    case "INT":
    case "DATE":
    case "TIME":
    case "FLOAT":
    case "DOUBLE":
      return new NumberColumnBuilder(type, path, capacity, arrays);
    case "BIGINT":
      return new Int64ColumnBuilder(type, path, capacity, arrays);
    case "DECIMAL":
      return new DecimalColumnBuilder(type, path, capacity, arrays);
    case "CHAR":
    case "VARCHAR":
      return new Utf8ColumnBuilder(type, path, capacity, arrays);
    case "BINARY":
    case "VARBINARY":
      return new BinaryColumnBuilder(type, path, capacity, arrays);
    case "TIMESTAMP":
    case "TIMESTAMP_LTZ":
      return new TimestampColumnBuilder(type, path, capacity, arrays);
    case "ARRAY":
    case "MULTISET":
      return type.root === "ARRAY" ? new ListColumnBuilder(type, path, Math.max(16, capacity)) : new MapColumnBuilder(type, path, Math.max(16, capacity));
    case "MAP":
      return new MapColumnBuilder(type, path, Math.max(16, capacity));
    case "ROW":
      return new StructColumnBuilder(type, path, capacity);
  }
}

/**
 * A builder for one column of `type`. `path` names the column in error messages; `capacity` is the expected number
 * of values (buffers grow by doubling past it); `arrays` gives a flat column its first buffers (nested columns
 * allocate theirs as usual).
 */
export function makeColumnBuilder(type: DataType, path = "?", capacity = DEFAULT_CAPACITY, arrays: ArrayAllocator = HEAP_ARRAYS): ColumnBuilder {
  return makeBuilder(type, path, Math.max(1, capacity), arrays);
}
