/**
 * Point lookups on a primary-key table: the merged row of each key asked for, or null (never written, or deleted),
 * at one snapshot — what a service that looks rows up by key needs (Java Paimon's LocalTableQuery).
 *
 * A key names every primary-key field. Its partition comes from the key (partition fields are part of the primary
 * key), its bucket from the table's bucket function (the writer's, `Table.bucketFunction`), so only that bucket's
 * files are looked at, and of them only the ones whose [minKey, maxKey] holds the key. Such a file is decoded in two
 * steps, each once however many keys it serves (once per call, or once per `KeyLookup` with a `DecodedFileCache`):
 * first its key columns with `_SEQUENCE_NUMBER`, `_VALUE_KIND` and any `sequence.field` — the keys are found in them by
 * binary search (a file holds each key at most once, in key order) and a key's versions ordered — then its value
 * columns, only when a key's surviving version is in it (or, for partial-update and aggregation, any of a key's
 * versions with others to merge). A call with several keys in a bucket (`WHOLE_FILE_KEYS`) decodes its files whole
 * at once instead: most of them hold an answer then. Each key's versions are folded on their own by the table's merge
 * function through src/lsm/key-versions.ts, the fold and merge order the merge reader (src/lsm/merge-reader.ts) uses
 * for every read, so a key's answer is what a full read folds (sequence.field, sequence number, retractions first; ignore-delete; a
 * lookup table's levels; a surviving retraction is no row) — no Arrow batch is built for it: values are read straight
 * from the decoded columns.
 *
 * `KeyLookup` holds one snapshot's files by partition and bucket: a reader node can keep one per (table, snapshot)
 * and hand each the same cache, so the files of a hot table stay decoded between requests.
 */
import * as arrow from "apache-arrow";
import { dataInvalid, ErrorKind, LakeError } from "../errors.ts";
import { columnReader, type ValueReader } from "../codec/columns/value-readers.ts";
import { sharedParquetPool, type ParquetEncoderPool } from "../codec/parquet-pool.ts";
import { serializeBinaryRow } from "../format/binary-row.ts";
import type { BucketFunction } from "../format/bucket.ts";
import type { DataField, DataType } from "../format/data-types.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import { toCanonical, type Row, type Value } from "../format/values.ts";
import { gatherColumn } from "../lsm/gather.ts";
import { integerKeyColumn } from "../lsm/integer-key-order.ts";
import { SerializedKeys, type KeyComparator } from "../lsm/key-comparator.ts";
import { keyFields } from "../lsm/key-value-fields.ts";
import { checkMergeReadable } from "../lsm/merge-read.ts";
import type { MergeEngine } from "../lsm/merge-functions/merge-function.ts";
import { sequenceFieldSpec, type SequenceFieldSpec } from "../lsm/merge-order.ts";
import { foldKeyVersions, versionOrder } from "../lsm/key-versions.ts";
import { BuiltRow, type MergeFunction, type VersionAccess } from "../lsm/merge-functions/merge-function.ts";
import { SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "../lsm/key-value-fields.ts";
import { isRetract } from "../lsm/row-kind.ts";
import type { ManifestStore } from "../table/manifest-store.ts";
import type { Table } from "../table/table.ts";
import type { DataSplit } from "./plan.ts";
import { dataFileReader, mergeFileReader, planRead, readColumns, type DataFileReader } from "./read.ts";

/** A key to look up: every primary-key field by name, each value in any form the column's writes accept. */
export type LookupKey = Readonly<Record<string, unknown>>;

export interface LookupSpec {
  /** Look up in this snapshot (read in its own schema, as a read of it is); default the latest. */
  snapshotId?: number;
  /** Look up in the snapshot this tag holds. */
  tag?: string;
  /** The columns of the rows returned, in this order; default every column. */
  columns?: string[];
  /** Worker threads that decode Parquet; default the process-wide pool; null: this thread. */
  decoderPool?: ParquetEncoderPool | null;
  /** Decoded files kept between calls (and between `KeyLookup`s of one table that share it); default none. */
  cache?: DecodedFileCache;
  /** Manifest caches shared with other plans of the table. */
  store?: ManifestStore;
}

/** What lookups did, for tests and metrics. */
export interface LookupStats {
  /** Data files decoded. */
  filesDecoded: number;
  /** Data files a lookup needed that the cache held decoded already. */
  filesFromCache: number;
  /** Data files of the keys' buckets passed over: no key asked for lies in their key range. */
  filesPruned: number;
  /**
   * Data files whose value columns were decoded (`filesDecoded` counts the decodes of key columns, every file a key's
   * range holds needs those; its value columns are decoded only when a key's answer is in it).
   */
  valuesDecoded: number;
}

/** Decoded data files by key (`KeyLookup` names them by file and columns); a reader node's bounded memory of them. */
export interface DecodedFileCache {
  get(key: string): DecodedFile | undefined;
  /** Keeps `file` under `key`; may drop others. */
  set(key: string, file: DecodedFile): void;
}

/** A key asked for, converted: its partition, its trimmed key (the files' key columns) and what names it. */
interface WantedKey {
  trimmed: Value[];
  bucketValues: Value[];
  /** The partition's identity: its values as BinaryRow bytes (hex), as the splits are indexed. */
  partitionId: string;
  /** The key's identity within the table: partition and trimmed key. */
  id: string;
}

/**
 * Keys asked of one bucket from which its files are decoded whole at once, not key columns first: with this many
 * keys, most files a key's range holds hold an answer too, and one decode of all columns costs less than two (a
 * guess from the bench's 5-run table, where 100-key batches decoded in two steps took about twice as long).
 */
const WHOLE_FILE_KEYS = 4;

/**
 * A file of a bucket that lookups read, with its key range decoded and its name in the cache: made once per bucket
 * of a `KeyLookup` (which answers many lookups), not per lookup.
 */
interface FileRange {
  file: DataFileMeta;
  lo: Value[];
  hi: Value[];
  cacheKey: string;
}

/**
 * Files decoded ahead of lookups (`prefetch`) are decoded in the pool however small: a file decoded on this thread
 * holds up every lookup that arrives meanwhile, and no lookup waits for a prefetch.
 */
const PREFETCH_INLINE_BELOW_BYTES = 0;

/** A version of a key: the row of a decoded file that holds it, and the file's level. */
interface FoundVersion {
  file: DecodedFile;
  row: number;
  level: number;
}

const levelOfVersion = (v: FoundVersion): number => v.level;

/** A partition's buckets at the lookup's snapshot, by the bucket count they were written with. */
type PartitionBuckets = Map<number, Map<number, DataSplit>>;

const hexOf = (types: readonly DataType[], values: readonly Value[]): string => Buffer.from(serializeBinaryRow(types, values)).toString("hex");

/** Key types whose canonical values are numbers, bigints or strings that `String` / `JSON.stringify` tell apart. */
const PLAIN_IDENTITY_ROOTS = new Set(["TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "CHAR", "VARCHAR"]);

/**
 * A string naming values of `types`, equal for equal canonical values and different for different ones: their
 * BinaryRow bytes as hex (how the splits are indexed by partition), or — for integers and strings, the common keys,
 * unless `binaryRow` — the values themselves, which costs no BinaryRow per key asked. Binary-row identities of
 * partitions are remembered (a lookup asks few partitions, many times).
 */
class ValuesIdentity {
  private readonly plain: boolean;
  private readonly remembered = new Map<string, string>();
  /** The identity of no values (an unpartitioned table's partition). */
  private readonly empty: string;

  constructor(
    private readonly types: readonly DataType[],
    private readonly binaryRow: boolean,
  ) {
    this.plain = types.every((t) => PLAIN_IDENTITY_ROOTS.has(t.root));
    this.empty = hexOf([], []);
  }

  of(values: readonly Value[]): string {
    if (values.length === 0) return this.empty;
    if (!this.plain) return hexOf(this.types, values);
    let text = "";
    for (let k = 0; k < values.length; k++) {
      const v = values[k];
      text += (k === 0 ? "" : ",") + (typeof v === "string" ? JSON.stringify(v) : String(v));
    }
    if (!this.binaryRow) return text;
    let id = this.remembered.get(text);
    if (id === undefined) {
      // Bounded: a lookup over very many partitions forgets and computes again.
      if (this.remembered.size >= 4096) this.remembered.clear();
      id = hexOf(this.types, values);
      this.remembered.set(text, id);
    }
    return id;
  }
}

/** One snapshot of one primary-key table, ready to answer lookups; `open` makes one. */
export class KeyLookup {
  readonly stats: LookupStats = { filesDecoded: 0, filesFromCache: 0, filesPruned: 0, valuesDecoded: 0 };
  private readonly keyFields: DataField[];
  private readonly keyTypes: DataType[];
  private readonly keys: SerializedKeys;
  private readonly primaryKeys: DataField[];
  private readonly primaryKeyNames: string[];
  /** Identities of partitions (as the splits are indexed) and of trimmed keys. */
  private readonly partitionIds: ValuesIdentity;
  private readonly keyIds: ValuesIdentity;
  private readonly partitionTypes: DataType[];
  /** The merge's output: the wanted columns, then the key fields they lack (to tell which key a row answers). */
  private readonly outputFields: DataField[];
  /** Reads a file's index columns (key, `sequence.field`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`), and its `outputFields`. */
  private readonly indexReader: DataFileReader & { readonly fields: readonly DataField[] };
  private readonly valueReader: DataFileReader;
  /** Reads all of a file's columns a lookup needs at once (`mergeReadFields`: `outputFields` first). */
  private readonly wholeReader: DataFileReader & { readonly fields: readonly DataField[] };
  private readonly pool: ParquetEncoderPool | null;
  private readonly bucketFunctions = new Map<number, BucketFunction>();
  /** Decodes under way, so that concurrent lookups needing one file decode it once. */
  private readonly decoding = new Map<string, Promise<DecodedFile>>();
  /** Per bucket, the files lookups read (`rangesOf`). */
  private readonly ranges = new Map<DataSplit, FileRange[]>();
  /** What makes this lookup's decoded files differ from another's of the same file: the table, columns and schema. */
  private readonly cacheScope: string;
  private readonly sequence: SequenceFieldSpec | null;
  private readonly engine: MergeEngine;
  /** Merge order of a key's versions, and the table's merge function over `outputFields` (reset per key). */
  private readonly order: (a: FoundVersion, b: FoundVersion) => number;
  private readonly merge: MergeFunction<FoundVersion>;
  /** Per column returned, its place among `outputFields` (the decoded files' first columns, and a built row's values). */
  private readonly columnAt: number[];
  /**
   * The engine's merge function reads no value, only kinds and merge order (deduplicate, first-row: the survivor is
   * one of the versions): a key's versions are folded before any value column is decoded.
   */
  private readonly foldsWithoutValues: boolean;
  /** Key order of keys asked for. */
  private readonly wantedOrder = (a: WantedKey, b: WantedKey): number => this.keys.compare(a.trimmed, b.trimmed);

  private constructor(
    /** The table in the schema of the lookup (the chosen snapshot's own). */
    readonly table: Table,
    /** The snapshot looked up in; null when the table has none (every key is then absent). */
    readonly snapshotId: number | null,
    /** The columns of the rows returned, in order. */
    readonly columns: readonly DataField[],
    private readonly partitions: ReadonlyMap<string, PartitionBuckets>,
    private readonly cache: DecodedFileCache | undefined,
    pool: ParquetEncoderPool | null,
  ) {
    this.keyFields = keyFields(table.schema);
    this.keyTypes = this.keyFields.map((f) => f.type);
    this.keys = new SerializedKeys(this.keyTypes);
    this.primaryKeys = table.schema.primaryKeys.map((k) => table.schema.fields.find((f) => f.name === k)!);
    this.partitionTypes = table.partitionTypes;
    this.primaryKeyNames = this.primaryKeys.map((f) => f.name);
    this.partitionIds = new ValuesIdentity(this.partitionTypes, true);
    this.keyIds = new ValuesIdentity(this.keyTypes, false);
    this.engine = checkMergeReadable(table, "lookup");
    // Partial-update's sequence groups compare across columns: such a table's merge takes all of them.
    this.outputFields = this.engine.mergesAllFields === true ? [...table.schema.fields] : [...columns, ...this.keyFields.filter((k) => !columns.some((c) => c.name === k.name))];
    this.indexReader = mergeFileReader(table, []);
    this.valueReader = dataFileReader(table, this.outputFields.map((f) => f.name));
    this.wholeReader = mergeFileReader(table, this.outputFields);
    this.pool = pool;
    this.cacheScope = `${table.location}|${table.schema.id}|${this.outputFields.map((f) => f.name).join(",")}`;
    this.sequence = sequenceFieldSpec(table.schema);
    const sequenceNames = (this.sequence?.fields ?? []).map((f) => f.name);
    this.order = versionOrder<FoundVersion>(this.sequence, {
      sequenceValue: (v, k) => v.file.indexValueOf(sequenceNames[k]!, v.row),
      sequence: (v) => v.file.sequenceAt(v.row),
      kind: (v) => v.file.kindAt(v.row),
    });
    const access: VersionAccess<FoundVersion> = {
      kind: (v) => v.file.kindAt(v.row),
      sequence: (v) => v.file.sequenceAt(v.row),
      value: (v, k) => v.file.valueAt(k, v.row),
    };
    this.merge = this.engine.create(access, this.outputFields);
    // A value column's index is its place among `outputFields` (the value columns decoded, and a built row's values).
    this.columnAt = this.columns.map((c) => this.outputFields.findIndex((f) => f.name === c.name));
    this.foldsWithoutValues = this.engine.name === "deduplicate" || this.engine.name === "first-row";
  }

  /**
   * Plans the lookups of a snapshot: refuses a table that is not a primary-key table, whose primary key lacks a
   * partition field, or that natslake cannot merge (the error a read gives); an unknown column is
   * DataInvalid, an unknown snapshot or tag NotFound.
   */
  static async open(table: Table, spec: LookupSpec = {}): Promise<KeyLookup> {
    if (!table.isPrimaryKeyTable) throw dataInvalid(`${table.name} has no primary key: get needs a primary key (read an append table's rows with read)`);
    const chosen = { ...(spec.snapshotId !== undefined ? { snapshotId: spec.snapshotId } : {}), ...(spec.tag !== undefined ? { tag: spec.tag } : {}) };
    const plan = await planRead(table, { ...chosen, ...(spec.columns !== undefined ? { projection: spec.columns } : {}) }, spec.store);
    const read = table.inSchema(plan.schema);
    const outside = read.partitionKeys.filter((k) => !read.schema.primaryKeys.includes(k));
    if (outside.length > 0) throw new LakeError(ErrorKind.Unsupported, `${read.name}: partition field(s) ${outside.join(", ")} are not in the primary key, so a key does not name its partition: get needs a primary key that holds every partition field`);
    const partitions = new Map<string, PartitionBuckets>();
    for (const split of plan.splits) {
      const id = hexOf(read.partitionTypes, split.partitionValues);
      const byCount = partitions.get(id) ?? new Map<number, Map<number, DataSplit>>();
      partitions.set(id, byCount);
      const buckets = byCount.get(split.totalBuckets) ?? new Map<number, DataSplit>();
      byCount.set(split.totalBuckets, buckets);
      buckets.set(split.bucket, split);
    }
    const pool = spec.decoderPool === undefined ? sharedParquetPool() : spec.decoderPool;
    return new KeyLookup(read, plan.snapshot?.id ?? null, readColumns(table, plan, spec.columns), partitions, spec.cache, pool);
  }

  /**
   * The row of each key, in the order asked (a key asked twice is answered twice): its surviving version after the
   * merge, with `columns`, or null. A key with a missing or extra field, or a value its column does not take, is
   * DataInvalid naming it; nothing is looked up then.
   */
  async get(keys: readonly LookupKey[]): Promise<Array<Row | null>> {
    const wanted = keys.map((k, i) => this.keyOf(k, i));
    const answers = new Map<string, Row | null>();
    const bySplit = new Map<DataSplit, WantedKey[]>();
    for (const k of wanted) {
      if (answers.has(k.id)) continue;
      answers.set(k.id, null);
      for (const split of this.splitsOf(k)) {
        const list = bySplit.get(split) ?? [];
        bySplit.set(split, list);
        list.push(k);
      }
    }
    // Every bucket's files decode at once (in the pool); each bucket merges when its files are in.
    await Promise.all([...bySplit].map(([split, ks]) => this.lookUpInSplit(split, ks, answers)));
    return wanted.map((k) => answers.get(k.id) ?? null);
  }

  /**
   * A key's canonical values by primary-key field, in key order — what `get` looks up. DataInvalid (its context
   * `key`: `index`, and `column`) for a field missing, extra or of a value its column does not take.
   */
  canonicalKey(input: LookupKey, index = 0): Row {
    const names = this.primaryKeyNames;
    if (input === null || typeof input !== "object" || Array.isArray(input)) return this.invalidKey(index, "must be an object of the primary-key fields");
    for (const name in input) if (Object.hasOwn(input, name) && !names.includes(name)) this.invalidKey(index, `has field '${name}', which is not in the primary key`, name);
    const out: Row = {};
    for (const f of this.primaryKeys) {
      const v = input[f.name];
      if (v === undefined) this.invalidKey(index, `lacks primary-key field '${f.name}'`, f.name);
      try {
        out[f.name] = toCanonical(f.type, v, f.name);
      } catch (e) {
        this.invalidKey(index, `is not valid: ${(e as Error).message}`, f.name, false);
      }
    }
    return out;
  }

  /** DataInvalid for key `index` (its context `key`, and `column`); `naming`: the message ends naming the primary key. */
  private invalidKey(index: number, why: string, column?: string, naming = true): never {
    const pk = naming ? ` (primary key: ${this.primaryKeyNames.join(", ")})` : "";
    throw dataInvalid(`${this.table.name}: key ${index + 1} ${why}${pk}`, { key: index, ...(column !== undefined ? { column } : {}) });
  }

  /** The key as the files hold it (see `canonicalKey`). */
  private keyOf(input: LookupKey, index: number): WantedKey {
    const values = this.canonicalKey(input, index);
    const partition = this.table.partitionKeys.map((k) => values[k]!);
    const trimmed = this.keyFields.map((f) => values[f.name]!);
    const partitionId = this.partitionIds.of(partition);
    return { trimmed, bucketValues: this.table.bucketKeys.map((k) => values[k]!), partitionId, id: `${partitionId}/${this.keyIds.of(trimmed)}` };
  }

  /** The names of the data files this snapshot's lookups read (a first-row table's level 0 is never read). */
  dataFileNames(): Set<string> {
    const names = new Set<string>();
    for (const split of this.splits()) for (const f of split.files) if (this.readsFile(f)) names.add(f.fileName);
    return names;
  }

  /**
   * Decodes, whole, every file this snapshot's lookups read that `wanted` names and the cache does not hold yet, so
   * that no lookup waits for them (a reader warms the files a new snapshot adds before it answers from it). Settles
   * when every decode has; a failed decode is not an error here: a lookup needing that file decodes it again and says
   * why.
   */
  async prefetch(wanted: (file: DataFileMeta) => boolean): Promise<void> {
    const started: Array<DecodedFile | Promise<DecodedFile>> = [];
    for (const split of this.splits()) for (const r of this.rangesOf(split)) if (wanted(r.file)) started.push(this.decoded(split, r, true, PREFETCH_INLINE_BELOW_BYTES));
    await Promise.allSettled(started);
  }

  private *splits(): Generator<DataSplit> {
    for (const byCount of this.partitions.values()) for (const buckets of byCount.values()) yield* buckets.values();
  }

  /** First-row tables: level 0 is not read (as Java's LocalTableQuery starts at level 1 for lookup tables). */
  private readsFile(f: DataFileMeta): boolean {
    return !(this.engine.name === "first-row" && f.level === 0);
  }

  /**
   * The buckets that can hold the key: of a fixed-bucket table the one its bucket function names (with the bucket
   * count its partition was written with); of another (dynamic buckets, written by Java) every bucket of the
   * partition, the files' key ranges then choosing.
   */
  private splitsOf(k: WantedKey): DataSplit[] {
    const byCount = this.partitions.get(k.partitionId);
    if (byCount === undefined) return [];
    const out: DataSplit[] = [];
    for (const [count, buckets] of byCount) {
      if (this.table.bucket > 0 && count > 0) {
        const split = buckets.get(this.bucketFunction(count)(k.bucketValues));
        if (split !== undefined) out.push(split);
      } else out.push(...buckets.values());
    }
    return out;
  }

  private bucketFunction(count: number): BucketFunction {
    let fn = this.bucketFunctions.get(count);
    if (fn === undefined) {
      fn = this.table.bucketFunction(count);
      this.bucketFunctions.set(count, fn);
    }
    return fn;
  }

  /**
   * Looks the keys up in one bucket: in each file whose key range holds a key, its row of the key (binary search in
   * the file's key columns); then per key its versions folded by the table's merge function (`foldKeyVersions`, as
   * the merge reader folds them: a lone version passes as it is, a surviving retraction is no row), values read from
   * the decoded value columns of only the files that a survivor (or a merge reading values) needs.
   */
  private async lookUpInSplit(split: DataSplit, ks: readonly WantedKey[], answers: Map<string, Row | null>): Promise<void> {
    const compare = this.keys.compare;
    const sorted = ks.length === 1 ? ks : [...ks].sort(this.wantedOrder);
    const ranges: FileRange[] = [];
    for (const r of this.rangesOf(split)) {
      for (const k of sorted) {
        if (compare(r.lo, k.trimmed) <= 0 && compare(k.trimmed, r.hi) <= 0) {
          ranges.push(r);
          break;
        }
      }
    }
    this.stats.filesPruned += split.files.length - ranges.length;
    if (ranges.length === 0) return;
    const whole = sorted.length >= WHOLE_FILE_KEYS;
    // A warm bucket's files are all in the cache: no promise to wait for, the keys are looked up in this task.
    const ready: Array<DecodedFile | Promise<DecodedFile>> = ranges.map((r) => this.decoded(split, r, whole));
    const decoded = ready.every((d): d is DecodedFile => d instanceof DecodedFile) ? ready : await Promise.all(ready);
    // Per file, where the search of the next (larger) key starts.
    const from = new Array<number>(ranges.length).fill(0);
    // Per key found: its survivor when folded already (or null: nothing survives), else its versions.
    const found: Array<{ key: WantedKey; versions: FoundVersion[]; survivor: FoundVersion | null | undefined }> = [];
    const needed = new Set<DecodedFile>();
    for (const k of sorted) {
      const versions: FoundVersion[] = [];
      for (let i = 0; i < ranges.length; i++) {
        const r = ranges[i]!;
        if (compare(r.lo, k.trimmed) > 0 || compare(k.trimmed, r.hi) > 0) continue;
        const file = decoded[i]!;
        const at = (from[i] = file.seek(k.trimmed, from[i]!, compare));
        if (file.holdsAt(at, k.trimmed, compare)) versions.push({ file, row: at, level: r.file.level });
      }
      if (versions.length === 0) continue;
      if (versions.length === 1 || this.foldsWithoutValues) {
        const survivor = this.fold(versions) as FoundVersion | null;
        const kept = survivor !== null && !isRetract(survivor.file.kindAt(survivor.row)) ? survivor : null;
        if (kept !== null) needed.add(kept.file);
        found.push({ key: k, versions, survivor: kept });
      } else {
        for (const v of versions) needed.add(v.file);
        found.push({ key: k, versions, survivor: undefined });
      }
    }
    const loading = [...needed].filter((f) => !f.hasValues);
    if (loading.length > 0) {
      const started = await Promise.all(loading.map((f) => f.loadValues()));
      this.stats.valuesDecoded += started.filter((s) => s).length;
      // The cache holds them with their value columns now: counted again at their new size.
      for (let i = 0; i < ranges.length; i++) if (loading.includes(decoded[i]!)) this.cache?.set(ranges[i]!.cacheKey, decoded[i]!);
    }
    for (const { key, versions, survivor } of found) {
      const row = this.rowOf(survivor === undefined ? this.fold(versions) : survivor);
      if (row !== null) answers.set(key.id, row);
    }
  }

  /** A key's versions folded: one passes as it is (Java's ReducerMergeFunctionWrapper), several go to the merge function. */
  private fold(versions: FoundVersion[]): FoundVersion | BuiltRow<FoundVersion> | null {
    return versions.length === 1 ? versions[0]! : foldKeyVersions(versions, this.order, this.merge, this.engine.lookupMerge === true ? levelOfVersion : null);
  }

  /** The row (`columns`) a fold leaves, or null: nothing, or a retraction survives. */
  private rowOf(result: FoundVersion | BuiltRow<FoundVersion> | null): Row | null {
    if (result === null) return null;
    const out: Row = {};
    if (result instanceof BuiltRow) {
      if (isRetract(result.kind)) return null;
      for (let c = 0; c < this.columns.length; c++) out[this.columns[c]!.name] = result.values[this.columnAt[c]!] ?? null;
      return out;
    }
    if (isRetract(result.file.kindAt(result.row))) return null;
    for (let c = 0; c < this.columns.length; c++) out[this.columns[c]!.name] = result.file.valueAt(this.columnAt[c]!, result.row);
    return out;
  }

  /** The files of `split` that lookups read, with their key ranges and cache keys (made on the bucket's first lookup). */
  private rangesOf(split: DataSplit): FileRange[] {
    let out = this.ranges.get(split);
    if (out === undefined) {
      out = [];
      for (const file of split.files) {
        // As natslake's and Java's batch reads of first-row tables skip level 0.
        if (!this.readsFile(file)) continue;
        out.push({ file, lo: this.keys.decode(file.minKey), hi: this.keys.decode(file.maxKey), cacheKey: `${this.cacheScope}|${file.fileName}` });
      }
      this.ranges.set(split, out);
    }
    return out;
  }

  /**
   * A data file decoded for lookups: from the cache (itself, not a promise), a decode under way, or decoded now — its
   * key columns only (its value columns when a key's answer needs them), or, `whole`, every column the lookup reads
   * at once. `inlineBelowBytes`: files smaller than this decode on this thread (default: the reader's).
   */
  private decoded(split: DataSplit, range: FileRange, whole: boolean, inlineBelowBytes?: number): DecodedFile | Promise<DecodedFile> {
    const { file, cacheKey: key } = range;
    const cached = this.cache?.get(key);
    if (cached !== undefined) {
      this.stats.filesFromCache++;
      return cached;
    }
    const pending = this.decoding.get(key);
    if (pending !== undefined) return pending;
    this.stats.filesDecoded++;
    const started = whole
      ? this.wholeReader.read(split, file, this.pool, inlineBelowBytes).then((batches) => {
          this.stats.valuesDecoded++;
          return new DecodedFile(batches, this.wholeReader.fields, this.keyFields);
        })
      : this.indexReader.read(split, file, this.pool, inlineBelowBytes).then((batches) => DecodedFile.indexed(batches, this.indexReader.fields, this.keyFields, this.outputFields, () => this.valueReader.read(split, file, this.pool)));
    const kept = started.then((decoded) => {
      this.cache?.set(key, decoded);
      return decoded;
    });
    this.decoding.set(key, kept);
    // Forgotten once done: a cache keeps it from then on, or the next call decodes it again.
    void kept.finally(() => this.decoding.delete(key)).catch(() => undefined);
    return kept;
  }
}

/** The rows of `keys` at the snapshot `spec` chooses (default the latest): a `KeyLookup` used once. */
export async function lookupKeys(table: Table, keys: readonly LookupKey[], spec: LookupSpec = {}): Promise<Array<Row | null>> {
  return (await KeyLookup.open(table, spec)).get(keys);
}

/** Decoded batches of one file with their fields: a value by column and row of the file. */
class DecodedColumns {
  /** The decoded columns' memory, in bytes. */
  readonly bytes: number;
  readonly rows: number;
  /** Rows before each batch, and the total after the last. */
  private readonly starts: number[];
  /** Per batch, per column, its reader (made when first read). */
  private readonly readers: Array<Array<ValueReader | undefined>>;

  constructor(
    readonly batches: readonly arrow.RecordBatch[],
    readonly fields: readonly DataField[],
  ) {
    this.bytes = batches.reduce((n, b) => n + b.data.byteLength, 0);
    this.starts = [0];
    for (const b of batches) this.starts.push(this.starts[this.starts.length - 1]! + b.numRows);
    this.rows = this.starts[this.starts.length - 1]!;
    this.readers = batches.map(() => []);
  }

  /** The batch and row of the file's row `at`. */
  locate(at: number): [number, number] {
    let lo = 0;
    let hi = this.batches.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.starts[mid]! <= at) lo = mid;
      else hi = mid - 1;
    }
    return [lo, at - this.starts[lo]!];
  }

  /** The canonical value of column `column` in the file's row `at`. */
  value(column: number, at: number): Value {
    let b = 0;
    let r = at;
    if (this.batches.length > 1) [b, r] = this.locate(at);
    const readers = this.readers[b]!;
    const read = (readers[column] ??= columnReader(this.fields[column]!.type, this.batches[b]!.data.children[column]!));
    return read(r);
  }

  /** The index of the column named `name`; an error naming it when there is none. */
  column(name: string): number {
    const at = this.fields.findIndex((f) => f.name === name);
    if (at < 0) throw new Error(`lookup: decoded file lacks column ${name}`);
    return at;
  }
}

/**
 * A data file decoded for lookups, its rows in key order; finds keys by binary search. Made from all of a file's
 * columns at once (`new DecodedFile(batches, fields, keys)`), or in two steps (`DecodedFile.indexed`): first the
 * columns that find a key's versions and order them (key, `sequence.field`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`), then
 * — only when a version in it is asked for — the value columns (`loadValues`), so that the files of a key's range
 * that do not hold it are never decoded whole.
 */
export class DecodedFile {
  /** The columns keys are found and versions ordered by. */
  private readonly index: DecodedColumns;
  /** The value columns (`valueAt`'s), once loaded: `index` itself for a file decoded at once. */
  private values: DecodedColumns | null;
  private valuesLoading: Promise<void> | null = null;
  /** Per batch, per key field, its values. */
  private readonly keyReaders: ValueReader[][];
  /**
   * The key of every row as a double, when the key is one integer column (INT, BIGINT, DATE, …) within ±2^53 —
   * the common key, searched without a canonical value (a BigInt) per step; else null.
   */
  private readonly integerKeys: Float64Array | null;
  private readonly kindColumn: number;
  private readonly sequenceColumn: number;
  /** Index columns by name, as `indexValueOf` found them. */
  private readonly indexColumns = new Map<string, number>();

  /** A file decoded at once: `batches` of `fields`, which hold the key fields, `_SEQUENCE_NUMBER` and `_VALUE_KIND`. */
  constructor(batches: readonly arrow.RecordBatch[], fields: readonly DataField[], keyFields: readonly DataField[]);
  constructor(batches: readonly arrow.RecordBatch[], fields: readonly DataField[], keyFields: readonly DataField[], lazy?: { fields: readonly DataField[]; load: () => Promise<arrow.RecordBatch[]> });
  constructor(
    batches: readonly arrow.RecordBatch[],
    fields: readonly DataField[],
    keyFields: readonly DataField[],
    private readonly lazy?: { fields: readonly DataField[]; load: () => Promise<arrow.RecordBatch[]> },
  ) {
    this.index = new DecodedColumns(batches, fields);
    this.values = lazy === undefined ? this.index : null;
    const keyColumns = keyFields.map((f) => this.index.column(f.name));
    this.keyReaders = batches.map((b) => keyFields.map((f, k) => columnReader(f.type, b.data.children[keyColumns[k]!]!)));
    this.integerKeys = keyFields.length === 1 ? integerKeyColumn(batches.map((b) => b.data.children[keyColumns[0]!]!), this.index.rows) : null;
    this.kindColumn = fields.findIndex((f) => f.name === VALUE_KIND_FIELD.name);
    this.sequenceColumn = fields.findIndex((f) => f.name === SEQUENCE_NUMBER_FIELD.name);
  }

  /**
   * A file whose index columns are decoded (`batches` of `indexFields`: the key fields, `_SEQUENCE_NUMBER`,
   * `_VALUE_KIND` and any `sequence.field`); its columns `valueFields` are decoded by `load` when first needed.
   */
  static indexed(batches: readonly arrow.RecordBatch[], indexFields: readonly DataField[], keyFields: readonly DataField[], valueFields: readonly DataField[], load: () => Promise<arrow.RecordBatch[]>): DecodedFile {
    return new DecodedFile(batches, indexFields, keyFields, { fields: valueFields, load });
  }

  /** The decoded columns' memory, in bytes (growing when the value columns are loaded). */
  get bytes(): number {
    return this.index.bytes + (this.values !== null && this.values !== this.index ? this.values.bytes : 0);
  }

  /** Whether `valueAt` can read (the value columns are decoded). */
  get hasValues(): boolean {
    return this.values !== null;
  }

  /**
   * Decodes the value columns, once (concurrent callers share the decode; a failed one is tried again next time);
   * true for the call that started the decode.
   */
  async loadValues(): Promise<boolean> {
    if (this.values !== null) return false;
    if (this.valuesLoading !== null) {
      await this.valuesLoading;
      return false;
    }
    this.valuesLoading = this.lazy!.load().then(
      (batches) => {
        const values = new DecodedColumns(batches, this.lazy!.fields);
        if (values.rows !== this.index.rows) throw new Error(`lookup: a data file's value columns decoded to ${values.rows} rows, its key columns to ${this.index.rows}`);
        this.values = values;
      },
      (e: unknown) => {
        this.valuesLoading = null;
        throw e;
      },
    );
    await this.valuesLoading;
    return true;
  }

  /** The first row at or after `from` whose key is not below `key`. */
  private lowerBound(key: readonly Value[], from: number, compare: KeyComparator): number {
    let lo = from;
    let hi = this.index.rows;
    const numbers = this.integerKeys;
    const target = numbers === null ? 0 : Number(key[0]);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (numbers !== null ? numbers[mid]! < target : compare(this.keyAt(mid), key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private holds(at: number, key: readonly Value[], compare: KeyComparator): boolean {
    if (at >= this.index.rows) return false;
    return this.integerKeys !== null ? this.integerKeys[at] === Number(key[0]) : compare(this.keyAt(at), key) === 0;
  }

  private keyAt(at: number): Value[] {
    const [b, r] = this.index.locate(at);
    return this.keyReaders[b]!.map((read) => read(r));
  }

  /**
   * Where `key` is or would be: the first row at or after `from` whose key is not below it (`from`: where the search
   * of a smaller key ended, keys asked in ascending order).
   */
  seek(key: readonly Value[], from: number, compare: KeyComparator): number {
    return this.lowerBound(key, from, compare);
  }

  /** Whether row `at` (a `seek` result) holds `key`. */
  holdsAt(at: number, key: readonly Value[], compare: KeyComparator): boolean {
    return this.holds(at, key, compare);
  }

  /** The canonical value of value column `column` in row `at` (the value columns must be loaded: `loadValues`). */
  valueAt(column: number, at: number): Value {
    if (this.values === null) throw new Error("lookup: a data file's value columns were read before they were loaded");
    return this.values.value(column, at);
  }

  /** The canonical value of the index column named `name` in row `at`. */
  indexValueOf(name: string, at: number): Value {
    let column = this.indexColumns.get(name);
    if (column === undefined) this.indexColumns.set(name, (column = this.index.column(name)));
    return this.index.value(column, at);
  }

  /** Row `at`'s `_VALUE_KIND`. */
  kindAt(at: number): number {
    return Number(this.index.value(this.systemColumn(this.kindColumn, VALUE_KIND_FIELD), at));
  }

  /** Row `at`'s `_SEQUENCE_NUMBER`. */
  sequenceAt(at: number): bigint {
    return BigInt(this.index.value(this.systemColumn(this.sequenceColumn, SEQUENCE_NUMBER_FIELD), at) as bigint | number);
  }

  private systemColumn(at: number, f: DataField): number {
    if (at < 0) throw new Error(`lookup: decoded file lacks column ${f.name}`);
    return at;
  }

  /**
   * The file's rows of `keys` (sorted ascending by `compare`, each once), in key order, as one batch of the file's
   * columns — or none when it holds none of them. For a file decoded at once.
   */
  rowsOf(keys: readonly Value[][], compare: KeyComparator): arrow.RecordBatch[] {
    if (this.values !== this.index) throw new Error("lookup: rowsOf needs a file decoded at once");
    const found: number[] = [];
    let from = 0;
    for (const key of keys) {
      // Later keys are searched after this one's place.
      from = this.lowerBound(key, from, compare);
      if (this.holds(from, key, compare)) found.push(from);
    }
    if (found.length === 0) return [];
    const { batches, fields } = this.index;
    const batchOf = new Int32Array(found.length);
    const rowOf = new Int32Array(found.length);
    for (let i = 0; i < found.length; i++) [batchOf[i], rowOf[i]] = this.index.locate(found[i]!);
    const picks = { length: found.length, batchOf: batches.length === 1 ? null : batchOf, rowOf };
    const children = fields.map((f, k) =>
      gatherColumn(
        f.type,
        batches.map((b) => b.data.children[k]!),
        picks,
        f.name,
      ),
    );
    // The gathered columns' own types (a column gathered value by value has the canonical Arrow type of its field).
    const schema = new arrow.Schema(fields.map((f, k) => new arrow.Field(f.name, children[k]!.type, true)));
    return [new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: found.length, nullCount: 0, children }))];
  }
}

/**
 * A `DecodedFileCache` of at most `maxBytes` of decoded columns, the least recently used file dropped first. A file
 * that grew (its value columns loaded after its key columns) is set again and counted at its new size.
 */
export class LruDecodedFileCache implements DecodedFileCache {
  /** Each file with the bytes it was counted at. */
  private readonly files = new Map<string, { file: DecodedFile; bytes: number }>();
  private held = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.held;
  }

  get(key: string): DecodedFile | undefined {
    const entry = this.files.get(key);
    if (entry !== undefined) {
      // Most recently used last: Map keeps insertion order.
      this.files.delete(key);
      this.files.set(key, entry);
    }
    return entry?.file;
  }

  set(key: string, file: DecodedFile): void {
    const old = this.files.get(key);
    if (old !== undefined) {
      this.held -= old.bytes;
      this.files.delete(key);
    }
    const bytes = file.bytes;
    if (bytes > this.maxBytes) return;
    this.files.set(key, { file, bytes });
    this.held += bytes;
    for (const [k, f] of this.files) {
      if (this.held <= this.maxBytes) break;
      this.files.delete(k);
      this.held -= f.bytes;
    }
  }
}
