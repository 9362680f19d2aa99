/**
 * Merge-on-read of one bucket, as Paimon's MergeFileSplitRead does it: the bucket's files are split into sections of
 * overlapping key ranges; a section of one file without retractions is read as it is (nothing to merge); the others
 * are merged by a streaming k-way merge over their sorted runs — each level-0 file one run, each level ≥ 1 one run of
 * files in key order — that holds one decoded file per run, so memory grows with the number of runs, not with rows.
 * Per key the versions meet in merge order (the `sequence.field`, then the sequence number, then retractions before
 * additions) and the table's merge function (src/lsm/merge-functions/) gives the survivor — one of the versions as
 * it is, gathered from the decoded buffers, or a row it built from several; a surviving retraction drops the key
 * (Java's DropDeleteReader). Rows come out in key order.
 *
 * The caller decodes files (`readFile`: batches whose columns include the key fields, `_SEQUENCE_NUMBER` and
 * `_VALUE_KIND`, and the `sequence.field` columns) and says which columns to return.
 *
 * Compaction (`mergeForCompaction`) runs the same merge over the sections and sorted runs a compaction plan names
 * (src/lsm/compact-task.ts), as Java's MergeTreeCompactRewriter does: a key with one version keeps it as it is
 * (Java's ReducerMergeFunctionWrapper), several are folded by the merge function, and the survivor comes out in the physical
 * layout of a primary-key file — `_KEY_` copies, its own `_SEQUENCE_NUMBER` and `_VALUE_KIND` — a surviving
 * retraction included, unless the compaction drops deletes (Java's DropDeleteReader).
 */
import * as arrow from "apache-arrow";
import { toArrowSchema } from "../codec/arrow-schema.ts";
import { columnReader, type ValueReader } from "../codec/columns/value-readers.ts";
import { makeColumnBuilder } from "../codec/columns/nested-builders.ts";
import type { ColumnBuilder } from "../codec/columns/column-builder.ts";
import { gatherColumn, stretchesOf, type RowPicks, type Stretches } from "./gather.ts";
import { compareValues } from "../codec/stats.ts";
import type { DataField, DataType } from "../format/data-types.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import type { Value } from "../format/values.ts";
import { SerializedKeys } from "./key-comparator.ts";
import { keyCopyField, SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD } from "./key-value-fields.ts";
import type { SequenceFieldSpec } from "./merge-order.ts";
import { isRetract, RowKind } from "./row-kind.ts";
import { DeduplicateFunction } from "./merge-functions/deduplicate.ts";
import { BuiltRow, type MergeEngine, type MergeFunction, type MergeResult, type VersionAccess } from "./merge-functions/merge-function.ts";
import type { SortedRows } from "./sort-buffer.ts";
import { integerKeyColumn } from "./integer-key-order.ts";
import { firstRowOutcome, highLevelOf, lookupChangelog, type LookupCompaction } from "./lookup-changelog.ts";
import { foldKeyVersions, versionOrder, type VersionOrderAccess } from "./key-versions.ts";
import { GroupFold } from "./group-fold.ts";

export interface MergeReadSpec {
  /** The trimmed key fields, in key order. */
  keyFields: readonly DataField[];
  sequence: SequenceFieldSpec | null;
  /** `ignore-delete`: retractions are passed over, so the latest addition stays (deduplicate, when `engine` is absent). */
  ignoreDelete: boolean;
  /** The table's merge engine (src/lsm/merge-functions/merge-engine.ts `mergeEngineOf`); absent: deduplicate. */
  engine?: MergeEngine;
  /** The columns to return, in this order. */
  output: readonly DataField[];
  /** Decodes one file into batches (in file order) whose columns include every column this merge needs. */
  readFile: (file: DataFileMeta) => Promise<arrow.RecordBatch[]>;
  /** Rows per output batch. */
  batchRows?: number;
}

/** Rows per output batch when the spec names none. */
export const DEFAULT_BATCH_ROWS = 65_536;

/** One output column: its type and the decoded column it is read from (by name). */
interface OutputColumn {
  type: DataType;
  from: string;
}

/** What the merge itself needs: how keys and versions compare, how files decode, which columns rows come out with. */
interface MergeCore {
  keyFields: readonly DataField[];
  sequence: SequenceFieldSpec | null;
  readFile: (file: DataFileMeta) => Promise<arrow.RecordBatch[]>;
  columns: readonly OutputColumn[];
  /** The fields a merge function merges: `columns` from `valueOffset` on. */
  valueFields: readonly DataField[];
  valueOffset: number;
}

const columnsOf = (fields: readonly DataField[]): OutputColumn[] => fields.map((f) => ({ type: f.type, from: f.name }));

/** The bucket's rows after the merge, in key order, as batches of `spec.output`. */
export async function* mergeBucketFiles(files: readonly DataFileMeta[], spec: MergeReadSpec): AsyncGenerator<arrow.RecordBatch> {
  const keys = new SerializedKeys(spec.keyFields.map((f) => f.type));
  const core: MergeCore = { keyFields: spec.keyFields, sequence: spec.sequence, readFile: spec.readFile, columns: columnsOf(spec.output), valueFields: spec.output, valueOffset: 0 };
  const out = new OutputBatches(core.columns, spec.output, spec.batchRows ?? DEFAULT_BATCH_ROWS);
  const merge = mergeOf(core, spec);
  // A surviving retraction drops the key.
  const choose: Chooser = {
    ...keptByKind(true),
    group: (group) => {
      const r = merge(group);
      return r === null || isRetract(r instanceof BuiltRow ? r.kind : r.c.kind[r.row]!) ? null : r;
    },
    newest: newestWins(core, spec),
    fold: groupFoldOf(core, spec),
  };
  for (const section of sections(files, keys)) {
    if (section.length === 1 && section[0]!.deleteRowCount === 0) {
      // One file, nothing retracted, no other version of its keys anywhere in the bucket: its rows as they are.
      yield* out.flush();
      for (const b of await spec.readFile(section[0]!)) yield project(b, spec.output);
      continue;
    }
    for await (const batch of mergeRuns(runsOf(section, keys), core, choose, out)) yield batch;
  }
  yield* out.flush();
}

export interface CompactionMergeSpec {
  /** The trimmed key fields, in key order. */
  keyFields: readonly DataField[];
  sequence: SequenceFieldSpec | null;
  /** `ignore-delete`: a key's retractions are passed over when it has several versions (deduplicate, when `engine` is absent). */
  ignoreDelete: boolean;
  /** The table's merge engine; absent: deduplicate. */
  engine?: MergeEngine;
  /** Retractions that survive the merge are dropped (the output level holds nothing older for them to retract). */
  dropDelete: boolean;
  /** The table's columns: each output row is the `_KEY_` copies, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, then these. */
  valueFields: readonly DataField[];
  /** Decodes one file into batches whose columns include `valueFields`, `_SEQUENCE_NUMBER` and `_VALUE_KIND`. */
  readFile: (file: DataFileMeta) => Promise<arrow.RecordBatch[]>;
  /** Rows per output chunk. */
  batchRows?: number;
}

/**
 * The merge of a compaction's sections (key-ordered, not overlapping one another; each its sorted runs, e.g. a
 * rewrite step of `planCompactTask`), as chunks of physical rows in key order: one row per key, each the survivor
 * of the key's versions with its own sequence number and kind. Chunks hold at most `batchRows` rows and never span
 * two sections' flush: a writer rolls files between chunks.
 */
export async function* mergeForCompaction(sectionsToMerge: ReadonlyArray<ReadonlyArray<readonly DataFileMeta[]>>, spec: CompactionMergeSpec): AsyncGenerator<SortedRows> {
  const core = compactionCore(spec);
  const out = physicalRows(core, spec);
  const merge = mergeOf(core, spec);
  const choose: Chooser = {
    ...keptByKind(spec.dropDelete),
    group: (group) => {
      const r = merge(group);
      if (r === null) return null;
      return spec.dropDelete && isRetract(r instanceof BuiltRow ? r.kind : r.c.kind[r.row]!) ? null : r;
    },
    newest: newestWins(core, spec),
    fold: groupFoldOf(core, spec),
  };
  for (const section of sectionsToMerge) yield* mergeRuns(section, core, choose, out);
  yield* out.flush();
}

/** A compaction's merge: its rows are physical rows (`_KEY_` copies, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, the table's columns). */
function compactionCore(spec: CompactionMergeSpec): MergeCore {
  return {
    keyFields: spec.keyFields,
    sequence: spec.sequence,
    readFile: spec.readFile,
    // The `_KEY_` copies are read from the key columns themselves.
    columns: [...columnsOf(spec.keyFields), ...columnsOf([SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD]), ...columnsOf(spec.valueFields)],
    valueFields: spec.valueFields,
    valueOffset: spec.keyFields.length + 2,
  };
}

function physicalRows(core: MergeCore, spec: CompactionMergeSpec): PhysicalRows {
  const outputFields = [...spec.keyFields.map(keyCopyField), SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD, ...spec.valueFields];
  return new PhysicalRows(core.columns, outputFields, spec.batchRows ?? DEFAULT_BATCH_ROWS, core.valueOffset);
}

/** A row of a file above a compaction's output level that holds a key looked up. */
export interface RowAbove {
  /** Decoded columns of the file: as `CompactionMergeSpec.readFile` gives them (any number of rows). */
  batch: arrow.RecordBatch;
  row: number;
  /** The file's level. */
  level: number;
}

/** The levels above a compaction's output level, where a key's value before the compaction is looked up. */
export interface LevelsAbove {
  /** For each key (trimmed key values, ascending, each once): the row of the lowest level above that holds it, or null. */
  find(keys: readonly Value[][]): Promise<Array<RowAbove | null>>;
}

export interface LookupCompactionMergeSpec extends CompactionMergeSpec {
  /** The table's lookup compaction (src/lsm/lookup-changelog.ts `lookupCompactionOf`). */
  lookup: LookupCompaction;
  above: LevelsAbove;
  /** Write the merged rows; false: the one level-0 file is upgraded as it is and only its changelog is made. */
  rewrite: boolean;
}

/** A chunk of a lookup compaction's output: merged rows for the output level's files, or changelog rows. */
export interface CompactionChunk {
  changelog: boolean;
  rows: SortedRows;
}

/** Keys whose before-values are looked up together. */
const LOOKUP_WINDOW = 4096;

/**
 * A compaction of a lookup table whose sections hold level-0 files (Java's LookupMergeTreeCompactRewriter with its
 * LookupChangelogMergeFunctionWrapper, or FirstRowMergeFunctionWrapper): as `mergeForCompaction`, but every key — a
 * key with one version too — is merged with its value before the compaction when it has level-0 versions and none
 * above level 0 here: that value is looked up in the levels above the output (`above`, a window of keys at a time).
 * With `changelog-producer = lookup`, each key with level-0 versions also gives its changelog rows
 * (src/lsm/lookup-changelog.ts), in key order, in chunks of their own.
 */
export async function* mergeForLookupCompaction(sectionsToMerge: ReadonlyArray<ReadonlyArray<readonly DataFileMeta[]>>, spec: LookupCompactionMergeSpec): AsyncGenerator<CompactionChunk> {
  const core = compactionCore(spec);
  const window = new LookupWindow(core, spec);
  // Every key waits in the window (its versions, as the heap gives them) until the window's lookups are done.
  const hold: Chooser = {
    single: (c, row) => {
      window.pending.push([{ c, row }]);
      return false;
    },
    group: (group) => {
      window.pending.push(group);
      return null;
    },
  };
  for (const section of sectionsToMerge) yield* mergeRuns(section, core, hold, window);
  yield* window.flush();
  yield* window.rest();
}

/**
 * The keys of a lookup compaction, a window at a time: their before-values looked up together, then each merged
 * (`mergeOf`, the looked-up version among its versions) and its changelog made; merged rows and changelog rows go
 * out in chunks of their own.
 */
class LookupWindow implements RowSink<CompactionChunk> {
  readonly pending: Version[][] = [];
  private readonly data: PhysicalRows;
  private readonly changes: PhysicalRows;
  private readonly merge: (group: Version[]) => MergeResult<Version>;
  private readonly access: VersionAccess<Version>;

  constructor(
    private readonly core: MergeCore,
    private readonly spec: LookupCompactionMergeSpec,
  ) {
    this.data = physicalRows(core, spec);
    this.changes = physicalRows(core, spec);
    this.merge = mergeOf(core, spec);
    this.access = VERSION_ACCESS(core);
  }

  add(): boolean {
    throw new Error("a lookup compaction's keys wait in its window");
  }

  addBuilt(): boolean {
    throw new Error("a lookup compaction's keys wait in its window");
  }

  addStretch(): number {
    throw new Error("a lookup compaction's keys wait in its window");
  }

  addFolded(): boolean {
    throw new Error("a lookup compaction's keys wait in its window");
  }

  full(): boolean {
    return false;
  }

  due(): boolean {
    return this.pending.length >= LOOKUP_WINDOW;
  }

  /** Looks the window's keys up, merges them and hands out the chunks that filled meanwhile. */
  async *flush(): AsyncGenerator<CompactionChunk> {
    const { firstRow, produceChangelog, equal } = this.spec.lookup;
    const kindOf = (r: Version | BuiltRow<Version>): number => (r instanceof BuiltRow ? r.kind : r.c.kind[r.row]!);
    const valuesOf = (r: Version | BuiltRow<Version>): Value[] => (r instanceof BuiltRow ? r.values : this.core.valueFields.map((_, k) => this.access.value(r, k)));
    const sameValues = equal === null ? null : (a: Version | BuiltRow<Version>, b: Version | BuiltRow<Version>): boolean => equal(valuesOf(a), valuesOf(b));
    // A changelog row: the key, sequence number and values of `r`, with its own kind.
    const change = (r: Version | BuiltRow<Version>, kind: number): BuiltRow<Version> =>
      new BuiltRow(valuesOf(r), kind as RowKind, r instanceof BuiltRow ? r.sequence : r.c.sequence[r.row]!, r instanceof BuiltRow ? r.from : r);
    const atLevel0 = (g: readonly Version[]): boolean => g.some((v) => v.c.level === 0);
    const aboveLevel0 = (g: readonly Version[]): boolean => g.some((v) => v.c.level > 0);
    const asked = this.pending.filter((g) => atLevel0(g) && !aboveLevel0(g));
    const found = asked.length === 0 ? [] : await this.spec.above.find(asked.map((g) => g[0]!.c.keyAt(g[0]!.row)));
    // Decoded rows above, prepared once per batch.
    const prepared = new Map<arrow.RecordBatch, CursorBatch>();
    const before = new Map<Version[], Version>();
    asked.forEach((g, i) => {
      const f = found[i];
      if (f === null || f === undefined) return;
      let c = prepared.get(f.batch);
      if (c === undefined) prepared.set(f.batch, (c = prepare(f.batch, this.core, f.level)));
      before.set(g, { c, row: f.row });
    });
    for (const group of this.pending) {
      const looked = before.get(group) ?? null;
      let result: MergeResult<Version>;
      let changelog: BuiltRow<Version>[] = [];
      if (firstRow) {
        const outcome = firstRowOutcome(this.merge(group), aboveLevel0(group), () => looked !== null);
        result = outcome.result;
        if (produceChangelog) changelog = outcome.changelog.map((r) => change(r, kindOf(r)));
      } else {
        const high = looked ?? highLevelOf(group, levelOf);
        result = this.merge(looked === null ? group : [...group, looked]);
        if (produceChangelog && atLevel0(group)) changelog = lookupChangelog(high, result, kindOf, sameValues).map((c) => change(c.row, c.kind));
      }
      if (this.spec.rewrite && result !== null && !(this.spec.dropDelete && isRetract(kindOf(result))) && (result instanceof BuiltRow ? this.data.addBuilt(result) : this.data.add(result.c, result.row))) yield* chunks(false, this.data.flush());
      for (const c of changelog) if (this.changes.addBuilt(c)) yield* chunks(true, this.changes.flush());
    }
    this.pending.length = 0;
  }

  /** The chunks not full yet, at the end. */
  *rest(): Generator<CompactionChunk> {
    yield* chunks(false, this.data.flush());
    yield* chunks(true, this.changes.flush());
  }
}

function* chunks(changelog: boolean, rows: Iterable<SortedRows>): Generator<CompactionChunk> {
  for (const r of rows) yield { changelog, rows: r };
}

/**
 * The files split into sections whose key ranges do not overlap one another's (Paimon's IntervalPartition at the
 * section level): sorted by min key, a file joins the current section while its min key is ≤ the section's max key.
 */
export function sections(files: readonly DataFileMeta[], keys: SerializedKeys): DataFileMeta[][] {
  const sorted = [...files].sort((a, b) => keys.compareSerialized(a.minKey, b.minKey) || keys.compareSerialized(a.maxKey, b.maxKey));
  const out: DataFileMeta[][] = [];
  let current: DataFileMeta[] = [];
  let bound: Uint8Array | null = null;
  for (const f of sorted) {
    if (bound !== null && keys.compareSerialized(f.minKey, bound) > 0) {
      out.push(current);
      current = [];
      bound = null;
    }
    current.push(f);
    if (bound === null || keys.compareSerialized(f.maxKey, bound) > 0) bound = f.maxKey;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** A section's sorted runs: each level-0 file alone, the files of each higher level together in key order. */
export function runsOf(section: readonly DataFileMeta[], keys: SerializedKeys): DataFileMeta[][] {
  const runs: DataFileMeta[][] = [];
  const byLevel = new Map<number, DataFileMeta[]>();
  for (const f of section) {
    if (f.level === 0) runs.push([f]);
    else byLevel.set(f.level, [...(byLevel.get(f.level) ?? []), f]);
  }
  for (const files of byLevel.values()) runs.push(files.sort((a, b) => keys.compareSerialized(a.minKey, b.minKey)));
  return runs;
}

/** One decoded batch of a run with the columns the merge compares, read once. */
interface CursorBatch {
  batch: arrow.RecordBatch;
  /** The LSM level of the file it was decoded from. */
  level: number;
  /**
   * One integer key (TINYINT … BIGINT, DATE, TIME) as doubles, read from the Arrow buffers, when every value is
   * non-null and within ±2^53: such batches compare keys without canonical values (no BigInt per row); null
   * otherwise.
   */
  numericKeys: Float64Array | null;
  /** The key fields' canonical values, per field (made on first use: batches with `numericKeys` may never need them). */
  keys(): Value[][];
  /** One row's key values (read alone: the whole batch's are not made for it). */
  keyAt(row: number): Value[];
  seqValues: Value[][] | null;
  sequence: BigInt64Array;
  /** `sequence`'s buffer as 32-bit words (row r: low word 2r, high word 2r + 1), compared without making BigInts. */
  seqWords: Int32Array;
  kind: Int8Array;
  /** The output columns' data in this batch (`MergeCore.columns`, in order). */
  columns: arrow.Data[];
  /** Readers of the merge's value fields (`MergeCore.valueFields`), made when a merge function first reads one. */
  readers: Array<ValueReader | undefined>;
  /** Per value field (`MergeCore.valueFields`): its validity bits, or null when it has no nulls in this batch. */
  nullBits: Array<Uint8Array | null>;
  /** Per value field: where row 0's bit is in `nullBits` (the Data's offset). */
  bitOffset: Int32Array;
  /** Where this batch is among the sources of the output batch being gathered (valid while `sink` is that one). */
  slot: number;
  sink: object | null;
}

/** A run's rows one at a time, in key order, decoding its next file when the current one is used up. */
class RunCursor {
  private fileAt = 0;
  private batches: CursorBatch[] = [];
  private batchAt = 0;
  row = 0;
  current: CursorBatch | null = null;
  /** The current row's key as a number when its batch has `numericKeys` (NaN otherwise): what the heap compares first. */
  key = NaN;
  /** Rows of the current batch. */
  private rows = 0;
  /** The next file's decode, started as soon as the current one is taken (one file ahead per run). */
  private ahead: Promise<arrow.RecordBatch[]> | null = null;

  constructor(
    private readonly files: readonly DataFileMeta[],
    private readonly spec: MergeCore,
  ) {}

  private startNext(): void {
    const f = this.files[this.fileAt];
    this.ahead = f === undefined ? null : this.spec.readFile(f);
    this.ahead?.catch(() => undefined);
  }

  /** Positions on the run's first row; false when the run is empty. */
  async open(): Promise<boolean> {
    this.startNext();
    return this.nextFile();
  }

  /** Moves to the next file's first row (after `step` ran out of decoded rows); false at the run's end. */
  async nextFile(): Promise<boolean> {
    while (this.ahead !== null) {
      const decoded = await this.ahead;
      const level = this.files[this.fileAt]!.level;
      this.fileAt++;
      this.startNext();
      this.batches = decoded.filter((b) => b.numRows > 0).map((b) => prepare(b, this.spec, level));
      this.batchAt = 0;
      if (this.batches.length > 0) {
        this.enter(this.batches[0]!);
        return true;
      }
    }
    this.current = null;
    return false;
  }

  /**
   * Moves to the next row of what is decoded, without awaiting anything (a merge steps once per row and run: a
   * promise per step cost more than the comparison); false when the decoded rows ran out — then `nextFile`.
   */
  step(): boolean {
    if (++this.row < this.rows) {
      const keys = this.current!.numericKeys;
      this.key = keys === null ? NaN : keys[this.row]!;
      return true;
    }
    if (++this.batchAt < this.batches.length) {
      this.enter(this.batches[this.batchAt]!);
      return true;
    }
    return false;
  }

  /** Positions on the first row of a decoded batch. */
  private enter(c: CursorBatch): void {
    this.current = c;
    this.row = 0;
    this.rows = c.batch.numRows;
    this.key = c.numericKeys === null ? NaN : c.numericKeys[0]!;
  }
}

function prepare(batch: arrow.RecordBatch, spec: MergeCore, level: number): CursorBatch {
  const byName = (name: string): arrow.Data => {
    const at = batch.schema.fields.findIndex((x) => x.name === name);
    if (at < 0) throw new Error(`merge read: decoded batch lacks column ${name}`);
    return batch.data.children[at]!;
  };
  const col = (f: DataField): arrow.Data => byName(f.name);
  const valuesOf = (f: DataField): Value[] => {
    const read = columnReader(f.type, col(f));
    const out = new Array<Value>(batch.numRows);
    for (let i = 0; i < batch.numRows; i++) out[i] = read(i);
    return out;
  };
  const seqData = col(SEQUENCE_NUMBER_FIELD);
  const kindData = col(VALUE_KIND_FIELD);
  // The decoded buffers themselves when they hold the values as they are (decoded batches are never written to);
  // Arrow JS slices a Data's values with it: row r is value r, whatever the Data's offset.
  let sequence: BigInt64Array;
  if (seqData.nullCount === 0 && seqData.values instanceof BigInt64Array) sequence = seqData.values.subarray(0, batch.numRows);
  else {
    sequence = new BigInt64Array(batch.numRows);
    const seqRead = columnReader(SEQUENCE_NUMBER_FIELD.type, seqData);
    for (let i = 0; i < batch.numRows; i++) sequence[i] = BigInt(seqRead(i) as bigint | number);
  }
  let kind: Int8Array;
  if (kindData.nullCount === 0 && kindData.values instanceof Int8Array) kind = kindData.values.subarray(0, batch.numRows);
  else {
    kind = new Int8Array(batch.numRows);
    const kindRead = columnReader(VALUE_KIND_FIELD.type, kindData);
    for (let i = 0; i < batch.numRows; i++) kind[i] = Number(kindRead(i));
  }
  let keys: Value[][] | null = null;
  const columns = spec.columns.map((c) => byName(c.from));
  const valueColumns = columns.slice(spec.valueOffset, spec.valueOffset + spec.valueFields.length);
  return {
    batch,
    level,
    numericKeys: spec.keyFields.length === 1 ? integerKeyColumn([col(spec.keyFields[0]!)], batch.numRows) : null,
    keys: () => (keys ??= spec.keyFields.map(valuesOf)),
    keyAt: (row) => (keys !== null ? keys.map((k) => k[row]!) : spec.keyFields.map((f) => columnReader(f.type, col(f))(row))),
    seqValues: spec.sequence === null ? null : spec.sequence.fields.map(valuesOf),
    sequence,
    seqWords: new Int32Array(sequence.buffer, sequence.byteOffset, 2 * sequence.length),
    kind,
    columns,
    readers: [],
    nullBits: valueColumns.map((d) => (d.nullCount > 0 ? d.nullBitmap! : null)),
    bitOffset: Int32Array.from(valueColumns, (d) => d.offset),
    slot: -1,
    sink: null,
  };
}

const nullsFirst = (type: DataType, x: Value, y: Value, sign: number): number => {
  if (x === null || y === null) return x === y ? 0 : x === null ? -1 : 1;
  return sign * compareValues(type, x, y);
};

/** Key order of two cursors' current rows. */
function compareKeys(spec: MergeCore, a: RunCursor, b: RunCursor): number {
  const x = a.key;
  const y = b.key;
  // Both numeric (NaN is never equal to itself).
  if (x === x && y === y) return x < y ? -1 : x > y ? 1 : 0;
  const ca = a.current!;
  const cb = b.current!;
  const ka = ca.keys();
  const kb = cb.keys();
  for (let k = 0; k < spec.keyFields.length; k++) {
    const c = nullsFirst(spec.keyFields[k]!.type, ka[k]![a.row]!, kb[k]![b.row]!, 1);
    if (c !== 0) return c;
  }
  return 0;
}

/** One version of a key: a row of a decoded batch. */
interface Version {
  c: CursorBatch;
  row: number;
}

const levelOf = (v: Version): number => v.c.level;

/** How merge order reads a version held by a cursor. */
const VERSION_ORDER: VersionOrderAccess<Version> = {
  sequenceValue: (v, k) => v.c.seqValues![k]![v.row]!,
  sequence: (v) => v.c.sequence[v.row]!,
  kind: (v) => v.c.kind[v.row]!,
};

/** A binary min-heap of cursors by their current key. */
class CursorHeap {
  private readonly items: RunCursor[] = [];
  constructor(private readonly less: (a: RunCursor, b: RunCursor) => boolean) {}
  get size(): number {
    return this.items.length;
  }
  peek(): RunCursor {
    return this.items[0]!;
  }
  push(c: RunCursor): void {
    const h = this.items;
    h.push(c);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }
  pop(): RunCursor {
    const h = this.items;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      this.siftDown();
    }
    return top;
  }
  /**
   * The smallest current key among the cursors below the top, when each of them has numeric keys (`numericKeys`);
   * +Infinity when the top is alone; null otherwise.
   */
  secondNumericKey(): number | null {
    const h = this.items;
    let min = Infinity;
    for (let i = 1; i <= 2 && i < h.length; i++) {
      const k = h[i]!.key;
      if (k !== k) return null; // NaN: that cursor's batch has no numeric keys
      if (k < min) min = k;
    }
    return min;
  }
  /**
   * Whether another cursor is at the top's key: one of the top's children is then (a parent is never larger than its
   * children, so an equal key deeper down has equal ancestors). A child is at the top's key when it is not larger.
   */
  topHasEqual(): boolean {
    const h = this.items;
    return (h.length > 1 && !this.less(h[0]!, h[1]!)) || (h.length > 2 && !this.less(h[0]!, h[2]!));
  }
  at(i: number): RunCursor {
    return this.items[i]!;
  }

  /**
   * The places of every cursor at the top's key, in ascending order (the root first): they form a subtree at the
   * root, since a cursor's parent is never at a larger key. Returns how many.
   */
  topGroup(into: number[]): number {
    const h = this.items;
    let count = 0;
    into[count++] = 0;
    // Breadth-first over that subtree: `into` is its own queue, and comes out in ascending places.
    for (let q = 0; q < count; q++) {
      const l = 2 * into[q]! + 1;
      if (l < h.length && !this.less(h[0]!, h[l]!)) into[count++] = l;
      if (l + 1 < h.length && !this.less(h[0]!, h[l + 1]!)) into[count++] = l + 1;
    }
    return count;
  }

  /**
   * Takes out the cursor at place i, whose ancestors are at the smallest key (the last cursor takes its place and
   * sinks: it is not smaller than them).
   */
  removeAt(i: number): void {
    const h = this.items;
    const last = h.pop()!;
    if (i < h.length) {
      h[i] = last;
      this.siftDown(i);
    }
  }

  /** The cursor at place `i` (default the top) moved on to a larger key: restores the order below it. */
  siftDown(from = 0): void {
    const h = this.items;
    const n = h.length;
    const item = h[from]!;
    let i = from;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const m = r < n && this.less(h[r]!, h[l]!) ? r : l;
      if (!this.less(h[m]!, item)) break;
      h[i] = h[m]!;
      i = m;
    }
    h[i] = item;
  }
}

/** The value of the merge's value field `k` at a row of a cursor batch (its reader made on first use). */
function valueAt(core: MergeCore, c: CursorBatch, k: number, row: number): Value {
  const read = (c.readers[k] ??= columnReader(core.valueFields[k]!.type, c.columns[core.valueOffset + k]!));
  return read(row);
}

/** Whether the merge's value field `k` is null at a row of a cursor batch. */
function isNullAt(c: CursorBatch, k: number, row: number): boolean {
  const bits = c.nullBits[k]!;
  if (bits === null) return false;
  const at = c.bitOffset[k]! + row;
  return (bits[at >> 3]! & (1 << (at & 7))) === 0;
}

/** How a merge function reads a version held by a cursor. */
const VERSION_ACCESS = (core: MergeCore): VersionAccess<Version> => ({
  kind: (v) => v.c.kind[v.row]!,
  sequence: (v) => v.c.sequence[v.row]!,
  value: (v, k) => valueAt(core, v.c, k, v.row),
  isNull: (v, k) => isNullAt(v.c, k, v.row),
});

/**
 * The column-wise fold of a merge's groups of additions (src/lsm/group-fold.ts), when the engine merges them field by
 * field and nothing else orders or narrows the versions: no `sequence.field` (whose values order them) and no lookup
 * merge (which narrows them by level); null otherwise, and for deduplicate and first-row (which keep a version as it is).
 */
function groupFoldOf(core: MergeCore, spec: { engine?: MergeEngine }): GroupFold<CursorBatch> | null {
  const engine = spec.engine;
  if (engine === undefined || core.sequence !== null || engine.lookupMerge === true) return null;
  const rules = engine.fieldRules?.(core.valueFields) ?? null;
  if (rules === null) return null;
  return new GroupFold<CursorBatch>(rules, (c, k, row) => valueAt(core, c, k, row));
}

/** Folds the cursors' current versions of one key; false when the merge function must merge them. */
function foldGroup(fold: GroupFold<CursorBatch>, group: readonly RunCursor[]): boolean {
  fold.begin();
  for (const cur of group) fold.add(cur.current!, cur.row);
  return fold.fold();
}

/**
 * The merge of one key's versions (as the heap gives them, in no order): a single version as it is (Java's
 * ReducerMergeFunctionWrapper calls no merge function for it), several sorted into merge order and fed to the
 * engine's merge function.
 */
function mergeOf(core: MergeCore, spec: { engine?: MergeEngine; ignoreDelete: boolean }): (group: Version[]) => MergeResult<Version> {
  const access = VERSION_ACCESS(core);
  const fn: MergeFunction<Version> = spec.engine?.create(access, core.valueFields) ?? new DeduplicateFunction(access, spec.ignoreDelete);
  const order = versionOrder(core.sequence, VERSION_ORDER);
  const lookupLevel = spec.engine?.lookupMerge === true ? levelOf : null;
  return (all) => (all.length === 1 ? all[0]! : foldKeyVersions(all, order, fn, lookupLevel));
}

/**
 * Where a merge's surviving rows go: a version as it is (`add`) or a built row (`addBuilt`), each saying when a batch
 * is full; `flush` hands the batches out.
 */
interface RowSink<T> {
  add(c: CursorBatch, row: number): boolean;
  /**
   * Adds rows `from` … `to - 1` of `c` (retractions left out when `dropRetractions`) until the batch is full; the row
   * to go on from. `full` then tells whether to flush.
   */
  addStretch(c: CursorBatch, from: number, to: number, dropRetractions: boolean): number;
  full(): boolean;
  addBuilt(row: BuiltRow<Version>): boolean;
  /** A folded group's row (an addition: every chooser keeps it); true when a batch is full. */
  addFolded(fold: GroupFold<CursorBatch>): boolean;
  flush(): Iterable<T> | AsyncIterable<T>;
  /** Keys the chooser held back (a lookup compaction's window) are due: flush. Absent: never. */
  due?(): boolean;
}

/**
 * What a merge keeps of a key: `single`, whether its only version (by kind) goes out as it is (a lone version is never
 * merged: Java's ReducerMergeFunctionWrapper); `group`, the row that goes out of several versions, or none.
 */
interface Chooser {
  /** Whether a key's only version goes out (the row `row` of `c`). */
  single(c: CursorBatch, row: number): boolean;
  group(group: Version[]): MergeResult<Version>;
  /**
   * Set when `group` always gives the key's newest version as it is (`newestWins`), and keeps it exactly when `single`
   * would: the merge then picks that version itself, without version objects or the merge function.
   */
  newest?: NewestWins | null;
  /**
   * Set when `single` keeps a key's only version by its kind alone: every one but retractions when `dropRetractions`,
   * every one otherwise. The merge then adds stretches of such versions to the sink at once (`RowSink.addStretch`).
   */
  lone?: { dropRetractions: boolean } | null;
  /**
   * Set when `group` merges a group of additions field by field (`groupFoldOf`): the merge then folds such groups
   * column by column, without version objects or the merge function; the others still go to `group`. The fold's row
   * is an addition, which `group` would keep.
   */
  fold?: GroupFold<CursorBatch> | null;
}

/** A chooser's rule for a key's only version when its kind alone decides: `single`, and `lone` that says so. */
function keptByKind(dropRetractions: boolean): Pick<Chooser, "single" | "lone"> {
  return { single: dropRetractions ? (c, row) => !isRetract(c.kind[row]!) : () => true, lone: { dropRetractions } };
}

/**
 * The last row of `keys` from `row` on (whose key is below `below`) still below `below`, before `end`: galloping,
 * then a binary search, so a long stretch of a compacted run costs a few comparisons.
 */
function stretchEnd(keys: Float64Array, row: number, end: number, below: number): number {
  let lo = row;
  let step = 1;
  while (lo + step < end && keys[lo + step]! < below) {
    lo += step;
    step *= 2;
  }
  // keys[lo] < below; keys[hi] ≥ below, or hi is the end.
  let hi = Math.min(lo + step, end);
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < below) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** A merge whose survivor of several versions is the newest in merge order; with `ignoreDelete`, the newest addition. */
interface NewestWins {
  ignoreDelete: boolean;
}

/**
 * Whether a key's several versions merge into the newest one as it is: deduplicate (Java's DeduplicateMergeFunction
 * keeps the last in merge order; with ignore-delete the last addition) ordered by the sequence number alone — no
 * `sequence.field`, whose values would order the versions, and no lookup levels, which narrow them first.
 */
function newestWins(core: MergeCore, spec: { engine?: MergeEngine; ignoreDelete: boolean }): NewestWins | null {
  if (core.sequence !== null) return null;
  const engine = spec.engine;
  if (engine === undefined) return { ignoreDelete: spec.ignoreDelete };
  return engine.name === "deduplicate" && engine.lookupMerge !== true ? { ignoreDelete: engine.ignoreDelete } : null;
}

/**
 * The newest of the cursors' current versions of one key in merge order (sequence number, then an addition after a
 * retraction), the last of equals in the cursors' order — the version a stable sort into merge order puts last, as
 * `foldKeyVersions` does; with `ignoreDelete`, of the additions only; null when none.
 */
function newestOf(group: readonly RunCursor[], ignoreDelete: boolean): RunCursor | null {
  let best: RunCursor | null = null;
  for (const cur of group) {
    const c = cur.current!;
    const row = cur.row;
    if (ignoreDelete && isRetract(c.kind[row]!)) continue;
    if (best === null || !newerVersion(best.current!, best.row, c, row)) best = cur;
  }
  return best;
}

/**
 * Whether version (a, ra) comes after (b, rb) in merge order. Sequence numbers compare as their two 32-bit words
 * (high signed, low unsigned; little-endian, as Arrow's buffers): reading a BigInt64Array element makes a BigInt.
 */
function newerVersion(a: CursorBatch, ra: number, b: CursorBatch, rb: number): boolean {
  const ha = a.seqWords[2 * ra + 1]!;
  const hb = b.seqWords[2 * rb + 1]!;
  if (ha !== hb) return ha > hb;
  const la = a.seqWords[2 * ra]! >>> 0;
  const lb = b.seqWords[2 * rb]! >>> 0;
  if (la !== lb) return la > lb;
  return isRetract(b.kind[rb]!) && !isRetract(a.kind[ra]!);
}

/**
 * The k-way merge of sorted runs (each a list of files in key order, a key at most once per run): per key, every
 * run's version of it, and `choose` picks the row that goes out (or none).
 */
async function* mergeRuns<T>(runs: ReadonlyArray<readonly DataFileMeta[]>, spec: MergeCore, choose: Chooser, out: RowSink<T>): AsyncGenerator<T> {
  const cursors = runs.map((files) => new RunCursor(files, spec));
  const heap = new CursorHeap((a, b) => compareKeys(spec, a, b) < 0);
  const opened = await Promise.all(cursors.map((c) => c.open()));
  cursors.forEach((c, i) => {
    if (opened[i]) heap.push(c);
  });
  const group: RunCursor[] = [];
  const places: number[] = [];
  const newest = choose.newest ?? null;
  const fold = choose.fold ?? null;
  const lone = choose.lone ?? null;
  while (heap.size > 0) {
    const first = heap.peek();
    // Every version of the smallest key: from each run holding it (a run holds a key at most once). Most keys have
    // one: the top cursor then steps and sinks in place, no version objects made.
    const c = first.current!;
    const row = first.row;
    if (!heap.topHasEqual()) {
      // The rows of this batch below every other run's current key have no other version either: taken in one
      // pass, without comparing against the heap per row (a live bucket is mostly its compacted run's rows between
      // a few fresh keys; measured: the heap's upkeep was a third of a merged scan's own time).
      const keys = c.numericKeys;
      const below = keys === null ? null : heap.secondNumericKey();
      const last = below === null ? row : stretchEnd(keys!, row, c.batch.numRows, below);
      if (lone !== null) {
        for (let r = row; r <= last; ) {
          r = out.addStretch(c, r, last + 1, lone.dropRetractions);
          if (out.full()) yield* out.flush();
        }
      } else {
        for (let r = row; r <= last; r++) if (choose.single(c, r) ? out.add(c, r) : out.due?.() === true) yield* out.flush();
      }
      first.row = last;
      if (first.step()) heap.siftDown();
      else if (!(await first.nextFile())) heap.pop();
      else heap.siftDown();
      continue;
    }
    // The key's cursors stay in the heap (at `places`, root first): each steps and sinks where it is afterwards, one
    // sift each instead of a pop and a push. The group array is reused (a `length = 0` per key showed in profiles).
    const versions = heap.topGroup(places);
    for (let v = 0; v < versions; v++) group[v] = heap.at(places[v]!);
    if (group.length !== versions) group.length = versions;
    if (newest !== null) {
      const pick = newestOf(group, newest.ignoreDelete);
      if (pick !== null && choose.single(pick.current!, pick.row) ? out.add(pick.current!, pick.row) : out.due?.() === true) yield* out.flush();
    } else if (fold !== null && foldGroup(fold, group)) {
      if (out.addFolded(fold)) yield* out.flush();
    } else {
      const winner = choose.group(group.map((cur) => ({ c: cur.current!, row: cur.row })));
      if (winner !== null ? (winner instanceof BuiltRow ? out.addBuilt(winner) : out.add(winner.c, winner.row)) : out.due?.() === true) yield* out.flush();
    }
    // Deepest first: a cursor sinks into subtrees already in order, below ancestors still at the key.
    for (let v = versions - 1; v >= 0; v--) {
      const cur = group[v]!;
      if (cur.step() || (await cur.nextFile())) heap.siftDown(places[v]!);
      else heap.removeAt(places[v]!);
    }
  }
}

/**
 * Output rows a batch at a time: each added row is remembered as (source batch, row), and a full batch gathers every
 * column from the sources buffer to buffer (gather.ts) — no canonical value per cell (a BigInt, a Timestamp, a
 * decoded string) on the way from the decoded files to the output.
 */
class OutputBatches implements RowSink<arrow.RecordBatch> {
  /** The columns of each source batch of the output batch being gathered (`MergeCore.columns` order). */
  private sources: arrow.Data[][] = [];
  /**
   * Values built by a merge function, appended value by value: one more source, finished at the flush. Its columns
   * may differ in length (a row of cells adds only its computed values): each counts its own.
   */
  private built: ColumnBuilder[] | null = null;
  private builtSlot = -1;
  private builtLengths: number[] = [];
  /**
   * Cells of a row that come from elsewhere than the row's pick (a built row of cells: another version's cell, or a
   * computed value): output row, column, source and row there. The flush gathers such a column with its own picks.
   */
  private exceptions = new Int32Array(4096);
  /** Exceptions recorded, four numbers each (output row, column, source, row there). */
  private exceptionCount = 0;
  /** Stands for the output batch being gathered: a new object per batch. */
  private epoch: object = {};
  private batchOf: Int32Array;
  private rowOf: Int32Array;
  private rows = 0;
  /** The last flush's stretches, whose arrays the next one refills. */
  private stretches: Stretches | undefined = undefined;
  private readonly schema: arrow.Schema;

  constructor(
    private readonly columns: readonly OutputColumn[],
    fields: readonly DataField[],
    private readonly batchRows: number,
  ) {
    this.schema = toArrowSchema(fields);
    this.batchOf = new Int32Array(Math.min(batchRows, 1024));
    this.rowOf = new Int32Array(this.batchOf.length);
  }

  /** Appends row `row` of a cursor batch; true when a batch is full. */
  add(c: CursorBatch, row: number): boolean {
    return this.pick(this.slotOf(c), row);
  }

  addStretch(c: CursorBatch, from: number, to: number, dropRetractions: boolean): number {
    const slot = this.slotOf(c);
    const kind = c.kind;
    for (let r = from; r < to; r++) if (!(dropRetractions && isRetract(kind[r]!)) && this.pick(slot, r)) return r + 1;
    return to;
  }

  full(): boolean {
    return this.rows >= this.batchRows;
  }

  /** The batch's place among this output batch's sources (`sink` tells whose place it is). */
  private slotOf(c: CursorBatch): number {
    if (c.sink !== this.epoch) {
      c.sink = this.epoch;
      c.slot = this.sources.push(c.columns) - 1;
    }
    return c.slot;
  }

  /**
   * A built row. One of cells whose fields are the output columns (a merge-on-read's) is gathered like a version's
   * row — the row it was built from picked for every column, each other cell an exception — so no value is read or
   * built but those the merge function computed; otherwise its values are appended.
   */
  addBuilt(row: BuiltRow<Version>): boolean {
    const cells = row.cells;
    if (cells === undefined || cells.length !== this.columns.length) return this.addValues(row.values);
    const from = row.from;
    const at = this.rows;
    for (let k = 0; k < cells.length; k++) {
      const cell = cells[k];
      if (cell === undefined) this.except(at, k, this.builtSlotOf(), this.appendBuilt(k, row.computed(k)));
      else if (cell.c !== from.c || cell.row !== from.row) this.except(at, k, this.slotOf(cell.c), cell.row);
    }
    return this.pick(this.slotOf(from.c), from.row);
  }

  /**
   * A folded group's row, gathered like a version's row: the newest version picked for every column, each field the
   * fold takes from another version an exception, each computed one appended; the value fields are the columns from
   * `valueOffset` on. With `kindColumn` (a physical row's `_VALUE_KIND`), the row's kind +I, where the newest
   * version's is not.
   */
  addFolded(fold: GroupFold<CursorBatch>, valueOffset = 0, kindColumn = -1): boolean {
    const newest = fold.count - 1;
    const from = fold.batches[newest]!;
    const fromRow = fold.rows[newest]!;
    const at = this.rows;
    const source = fold.source;
    for (let k = 0; k < source.length; k++) {
      const s = source[k]!;
      if (s === newest) continue;
      if (s < 0) this.except(at, valueOffset + k, this.builtSlotOf(), this.appendBuilt(valueOffset + k, fold.values[k]!));
      else if (fold.batches[s] !== from || fold.rows[s] !== fromRow) this.except(at, valueOffset + k, this.slotOf(fold.batches[s]!), fold.rows[s]!);
    }
    if (kindColumn >= 0 && from.kind[fromRow] !== RowKind.INSERT) this.except(at, kindColumn, this.builtSlotOf(), this.appendBuilt(kindColumn, RowKind.INSERT));
    return this.pick(this.slotOf(from), fromRow);
  }

  /** Appends a row given by its values (one per output column); true when a batch is full. */
  addValues(values: readonly Value[]): boolean {
    const slot = this.builtSlotOf();
    const at = this.rows;
    const first = this.appendBuilt(0, values[0]!);
    for (let k = 1; k < values.length; k++) {
      const r = this.appendBuilt(k, values[k]!);
      if (r !== first) this.except(at, k, slot, r);
    }
    return this.pick(slot, first);
  }

  private builtSlotOf(): number {
    if (this.builtSlot < 0) {
      this.built ??= this.columns.map((c) => makeColumnBuilder(c.type, c.from, 64));
      this.builtSlot = this.sources.push([]) - 1;
      this.builtLengths = this.columns.map(() => 0);
    }
    return this.builtSlot;
  }

  /** Appends a value to the built source's column k; its row there. */
  private appendBuilt(k: number, value: Value): number {
    this.built![k]!.append(value);
    return this.builtLengths[k]!++;
  }

  private except(at: number, column: number, slot: number, row: number): void {
    let e = this.exceptions;
    const i = 4 * this.exceptionCount++;
    if (i + 4 > e.length) {
      const grown = new Int32Array(e.length * 2);
      grown.set(e);
      this.exceptions = e = grown;
    }
    e[i] = at;
    e[i + 1] = column;
    e[i + 2] = slot;
    e[i + 3] = row;
  }

  private pick(at: number, row: number): boolean {
    if (this.rows === this.batchOf.length) {
      const size = Math.min(this.batchRows, this.rows * 2);
      const batchOf = new Int32Array(size);
      batchOf.set(this.batchOf);
      const rowOf = new Int32Array(size);
      rowOf.set(this.rowOf);
      this.batchOf = batchOf;
      this.rowOf = rowOf;
    }
    this.batchOf[this.rows] = at;
    this.rowOf[this.rows] = row;
    return ++this.rows >= this.batchRows;
  }

  *flush(): Generator<arrow.RecordBatch> {
    if (this.rows === 0) return;
    const length = this.rows;
    if (this.builtSlot >= 0) {
      this.sources[this.builtSlot] = this.built!.map((b) => b.finish());
      this.builtSlot = -1;
    }
    const rowPicks: RowPicks = { length, batchOf: this.sources.length === 1 ? null : this.batchOf.subarray(0, length), rowOf: this.rowOf.subarray(0, length) };
    // Found once for every column that has no exceptions.
    const picks: RowPicks = { ...rowPicks, stretches: (this.stretches = stretchesOf(rowPicks, this.stretches)) };
    const own = this.columnPicks(length);
    const children = this.columns.map((col, k) =>
      gatherColumn(
        col.type,
        this.sources.map((columns) => columns[k]!),
        own.get(k) ?? picks,
        col.from,
      ),
    );
    this.exceptionCount = 0;
    this.rows = 0;
    this.sources = [];
    this.epoch = {};
    // The picks and stretches are refilled for the next batch: the gather above was their last reader.
    yield new arrow.RecordBatch(this.schema, arrow.makeData({ type: new arrow.Struct(this.schema.fields), length, nullCount: 0, children }));
  }

  /** The picks of each column with exceptions: the rows' picks with its exceptions in place. */
  private columnPicks(length: number): Map<number, RowPicks> {
    const out = new Map<number, { length: number; batchOf: Int32Array; rowOf: Int32Array }>();
    const e = this.exceptions;
    for (let i = 0; i < 4 * this.exceptionCount; i += 4) {
      const k = e[i + 1]!;
      let p = out.get(k);
      if (p === undefined) out.set(k, (p = { length, batchOf: this.batchOf.slice(0, length), rowOf: this.rowOf.slice(0, length) }));
      p.batchOf[e[i]!] = e[i + 2]!;
      p.rowOf[e[i]!] = e[i + 3]!;
    }
    return out;
  }
}

/**
 * Physical rows of a primary-key file gathered a chunk at a time, with what the file's meta needs of them: the first
 * and last key, the sequence range, the retractions.
 */
class PhysicalRows implements RowSink<SortedRows> {
  private readonly rows: OutputBatches;
  /** The chunk's first and last row (where their keys are read at the flush). */
  private minBatch: CursorBatch | null = null;
  private minRow = 0;
  private maxBatch: CursorBatch | null = null;
  private maxRow = 0;
  private minSeq = 0n;
  private maxSeq = 0n;
  private deletes = 0;
  private count = 0;

  constructor(
    columns: readonly OutputColumn[],
    fields: readonly DataField[],
    batchRows: number,
    /** Where the table's columns begin (after the `_KEY_` copies, `_SEQUENCE_NUMBER` and `_VALUE_KIND`). */
    private readonly valueOffset: number,
  ) {
    this.rows = new OutputBatches(columns, fields, batchRows);
  }

  add(c: CursorBatch, row: number): boolean {
    this.track(c, row, c.sequence[row]!, c.kind[row]!);
    return this.rows.add(c, row);
  }

  addStretch(c: CursorBatch, from: number, to: number, dropRetractions: boolean): number {
    for (let r = from; r < to; r++) if (!(dropRetractions && isRetract(c.kind[r]!)) && this.add(c, r)) return r + 1;
    return to;
  }

  full(): boolean {
    return this.rows.full();
  }

  /** A built row: the key of the version it was built from, its own sequence number and kind, its values. */
  addBuilt(row: BuiltRow<Version>): boolean {
    const key = row.from.c.keyAt(row.from.row);
    this.track(row.from.c, row.from.row, row.sequence, row.kind);
    return this.rows.addValues([...key, row.sequence, row.kind, ...row.values]);
  }

  /** A folded group's row: the newest version's key and sequence number, kind +I, the fold's values. */
  addFolded(fold: GroupFold<CursorBatch>): boolean {
    const newest = fold.count - 1;
    const from = fold.batches[newest]!;
    const fromRow = fold.rows[newest]!;
    this.track(from, fromRow, from.sequence[fromRow]!, RowKind.INSERT);
    return this.rows.addFolded(fold, this.valueOffset, this.valueOffset - 1);
  }

  /** Keys are read only for a chunk's first and last row (when it goes out), not for every row. */
  private track(c: CursorBatch, row: number, seq: bigint, kind: number): void {
    if (this.count === 0) {
      this.minBatch = c;
      this.minRow = row;
      this.minSeq = this.maxSeq = seq;
    } else {
      if (seq < this.minSeq) this.minSeq = seq;
      if (seq > this.maxSeq) this.maxSeq = seq;
    }
    this.maxBatch = c;
    this.maxRow = row;
    if (isRetract(kind)) this.deletes++;
    this.count++;
  }

  *flush(): Generator<SortedRows> {
    for (const batch of this.rows.flush()) {
      const minKey = this.minBatch!.keyAt(this.minRow);
      const maxKey = this.maxBatch!.keyAt(this.maxRow);
      yield { batch, minKey, maxKey, minSequenceNumber: this.minSeq, maxSequenceNumber: this.maxSeq, deleteRows: this.deletes };
      this.count = 0;
      this.deletes = 0;
    }
  }
}

/** A decoded batch narrowed to the output columns (by name), without copying. */
export function project(batch: arrow.RecordBatch, fields: readonly DataField[]): arrow.RecordBatch {
  const schema = toArrowSchema(fields);
  const children = fields.map((f) => {
    const at = batch.schema.fields.findIndex((x) => x.name === f.name);
    if (at < 0) throw new Error(`merge read: decoded batch lacks column ${f.name}`);
    return batch.data.children[at]!;
  });
  return new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: batch.numRows, nullCount: 0, children }));
}
