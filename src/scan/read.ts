/**
 * Reading splits into Arrow record batches in the schema of the read: the table's current schema, or — a snapshot
 * chosen by id, time or tag — that snapshot's own (time travel, src/scan/plan.ts).
 *
 * Each data file is read through the schema it was written with (`_SCHEMA_ID`) and mapped to the schema of the read
 * by field id: a renamed column keeps its id, a column added later reads as nulls, a dropped column is not read. Rows
 * of a bucket come out in sequence order (the split's files are ordered by their first sequence number). A file
 * whose row count differs from its manifest entry is reported as corrupt rather than read silently.
 *
 * Decoding runs in a `ParquetEncoderPool` (the process-wide one by default): the next files are read and decoded
 * while the current one is consumed (one more file than there are workers, and more while the files in flight are
 * small: READ_AHEAD_BYTES), and a file of several row groups is decoded by several workers at once. Decodes are
 * submitted in plan order, whichever file's bytes arrive first. Results are still yielded strictly in plan order. Only the columns the projection needs are decoded. What does not
 * depend on the file (the target schema, the mapping of each file schema to it) is worked out once per scan.
 */
import * as arrow from "apache-arrow";
import { ErrorKind, isLakeError, LakeError } from "../errors.ts";
import { recordBatchToRows } from "../codec/columns/batch-to-rows.ts";
import { toArrowField } from "../codec/arrow-schema.ts";
import { parquetFooterInfo, readParquet, readParquetAsync } from "../codec/parquet.ts";
import { sharedParquetPool, type ParquetEncoderPool } from "../codec/parquet-pool.ts";
import { schemaMessage, splitIpcStream, type IpcBatchMessage, type IpcStreamParts } from "../codec/ipc-stream.ts";
import type { DataField } from "../format/data-types.ts";
import { serializeBinaryRow } from "../format/binary-row.ts";
import { partitionPath } from "../format/partition.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import type { TableSchema } from "../format/schema.ts";
import type { Row, Value } from "../format/values.ts";
import type { Table } from "../table/table.ts";
import { damagedFile, missingFile, reasonOf } from "../table/damaged-file.ts";
import { fetchColumnsOf, RANGED_READ_MIN_BYTES } from "./ranged-fetch.ts";
import { planSnapshot, readSchemaOf, resolveSnapshot, travelsInTime, type DataSplit, type ScanPlan, type ScanSpec } from "./plan.ts";
import type { ManifestStore } from "../table/manifest-store.ts";
import { changesOf, planIncremental, snapshotDeltaSplits, type IncrementalRange } from "./incremental.ts";
import type { Snapshot } from "../format/snapshot.ts";
import { checkMergeReadable, ignoreDeleteOf, mergeReadFields } from "../lsm/merge-read.ts";
import { keyFields, VALUE_KIND_FIELD } from "../lsm/key-value-fields.ts";
import { ROW_KIND_FIELD, withRowKind } from "../lsm/row-kind-column.ts";
import { mergeBucketFiles, project } from "../lsm/merge-reader.ts";
import { sequenceFieldSpec } from "../lsm/merge-order.ts";
import type { SnapshotDeletionVectors } from "../table/deletion-vectors.ts";
import { dropDeletedRows } from "./deleted-rows.ts";
import { checkRowCount, mapToTarget, schemaMapping, type SchemaMapping } from "./file-mapping.ts";
import { MergeFilesAhead, READ_AHEAD_BYTES, READ_AHEAD_MAX_FILES } from "./merge-files-ahead.ts";
import { WorkerMerges, type BucketSpec, type PreparedBucket } from "./worker-merges.ts";
import { sections } from "../lsm/merge-reader.ts";
import { SerializedKeys } from "../lsm/key-comparator.ts";
import { transferableBuffer } from "../codec/parquet-ops.mjs";
import { changelogProducerOf } from "../lsm/lookup-changelog.ts";

export interface ReadSpec extends ScanSpec {
  /** Columns to read, in this order; default all columns of the schema read (a chosen snapshot's own, else the current one). */
  projection?: string[];
  /** Read only this partition (values in partition-key order). */
  partition?: Value[];
  /** Stop after this many rows. */
  limit?: number;
  /** Worker threads that decode Parquet; default the process-wide pool (`sharedParquetPool`); null: this thread. */
  decoderPool?: ParquetEncoderPool | null;
  /**
   * Only the rows APPEND snapshots in (from, to] added (src/scan/incremental.ts), instead of a snapshot's rows; of a
   * primary-key table, the changes those snapshots made, each row with its `_row_kind`.
   */
  incremental?: IncrementalRange;
  /**
   * Primary-key tables: every batch ends with the `_row_kind` column (src/lsm/row-kind-column.ts) — a snapshot's
   * rows as "+I"; changes carry it always. What streams ask for, so all their batches have one layout.
   */
  rowKind?: boolean;
  /**
   * Files smaller than this are decoded on the calling thread (default 64 KiB: a worker round trip would cost more
   * than it saves). 0: every file in the pool — for a caller whose thread has other work meanwhile (a reader node
   * encodes and sends the rows it read while the next files decode).
   */
  inlineDecodeBelowBytes?: number;
  /**
   * Files read and decoded ahead of the one being consumed, exactly (default: one more than the pool has workers,
   * and more while the files in flight total at most 8 MiB, at most 32 files). A caller that does more with each
   * batch than take it (encodes and sends it) keeps the workers busy meanwhile with more.
   */
  readAheadFiles?: number;
  /**
   * Primary-key tables: buckets that need a merge are merged in the pool's worker threads, several at once (default
   * true; src/scan/worker-merges.ts). false: merged on the calling thread, their files decoded in the pool.
   */
  mergeInWorkers?: boolean;
}

/** Files smaller than this are decoded on the calling thread by default: a worker round trip would cost more than it saves. */
const POOL_MIN_FILE_BYTES = 64 * 1024;

/**
 * The fields `projection` names in `table`'s schema (all without one). `travelledTo`: the snapshot a time-travel
 * read chose (its schema is `table`'s), named in the error for a column that schema does not have.
 */
function projectedFields(table: Table, projection?: string[], travelledTo?: Snapshot | null): DataField[] {
  if (!projection) return table.schema.fields;
  return projection.map((name) => {
    const f = table.schema.fields.find((x) => x.name === name);
    if (!f) {
      const where = travelledTo ? `${table.name} as of snapshot ${travelledTo.id} (read in its schema ${table.schema.id}` : `${table.name} (schema ${table.schema.id}`;
      throw new LakeError(ErrorKind.DataInvalid, `no column '${name}' in ${where}, columns: ${table.schema.fields.map((x) => x.name).join(", ")})`);
    }
    return f;
  });
}

/** The snapshot of a plan read in that snapshot's own schema (time travel); else null. */
const travelledTo = (plan: ScanPlan): Snapshot | null => (plan.timeTravel ? plan.snapshot : null);

/** The file's columns as an Arrow table (only `columns`, or all when undefined). */
async function decodeFile(bytes: Uint8Array, columns: string[] | undefined, pool: ParquetEncoderPool | null, inlineBelow = POOL_MIN_FILE_BYTES): Promise<arrow.Table> {
  if (pool === null || bytes.length < inlineBelow) {
    // parquet-wasm's synchronous reader decodes every column; the file reader skips unselected ones.
    return columns === undefined ? readParquet(bytes) : readParquetAsync(bytes, { columns });
  }
  return tableOfStreams(await decodeFileIpc(bytes, columns, pool));
}

/** IPC streams of one file (in file order) as one Arrow table. */
function tableOfStreams(streams: readonly Uint8Array[]): arrow.Table {
  return streams.length === 1 ? arrow.tableFromIPC(streams[0]!) : new arrow.Table(streams.flatMap((s) => arrow.tableFromIPC(s).batches));
}

/**
 * The file's columns as Arrow IPC streams decoded in `pool`: one stream, or — a file of several row groups — one per
 * contiguous range of them, each decoded by another worker, in file order.
 */
async function decodeFileIpc(bytes: Uint8Array, columns: string[] | undefined, pool: ParquetEncoderPool, batchSize?: number): Promise<Uint8Array[]> {
  const groups = pool.size > 1 ? parquetFooterInfo(bytes).numRowGroups : 1;
  if (groups <= 1) return [await pool.decodeIpc(bytes, { columns, batchSize, transfer: true })];
  const parts = Math.min(pool.size, groups);
  const jobs: Array<Promise<Uint8Array>> = [];
  for (let p = 0; p < parts; p++) {
    const from = Math.floor((p * groups) / parts);
    const to = Math.floor(((p + 1) * groups) / parts);
    jobs.push(pool.decodeIpc(bytes, { columns, batchSize, rowGroups: Array.from({ length: to - from }, (_, k) => from + k) }));
  }
  return Promise.all(jobs);
}

/**
 * What reading files into `fields` needs that does not depend on the file: the target Arrow schema, and per file
 * schema id the mapping by field id. A scan makes one and reads every file through it, so a table of many small
 * files does not rebuild schemas and mappings per file.
 */
class FileReadContext {
  readonly targetSchema: arrow.Schema;
  readonly structType: arrow.Struct;
  private readonly mappings = new Map<number, Promise<SchemaMapping>>();

  constructor(
    readonly table: Table,
    readonly fields: DataField[],
  ) {
    this.targetSchema = new arrow.Schema(fields.map((f) => toArrowField(f.name, f.type)));
    this.structType = new arrow.Struct(this.targetSchema.fields);
  }

  mapping(schemaId: number): Promise<SchemaMapping> {
    let m = this.mappings.get(schemaId);
    if (m === undefined) {
      m = this.resolve(schemaId);
      // A failed lookup (an IO error reading the schema file) is not remembered: the next file asks again.
      m.catch(() => this.mappings.delete(schemaId));
      this.mappings.set(schemaId, m);
    }
    return m;
  }

  private async resolve(schemaId: number): Promise<SchemaMapping> {
    const table = this.table;
    const fileSchema: TableSchema = schemaId === table.schema.id ? table.schema : await table.schemas.schema(schemaId);
    return schemaMapping(fileSchema, this.fields, table.isPrimaryKeyTable);
  }

  /** Reads one data file (see `readDataFile`). */
  async read(split: Pick<DataSplit, "partitionValues" | "bucket">, file: DataFileMeta, pool: ParquetEncoderPool | null, inlineDecodeBelowBytes?: number): Promise<arrow.RecordBatch[]> {
    const { path, mapping, decoded } = await this.fetchAndDecode(split, file, (bytes, m) => decodeFile(bytes, m.projected ? m.columns : undefined, pool, inlineDecodeBelowBytes));
    return this.toTarget(decoded, mapping, file, path);
  }

  /** The last read's turn to submit its decode (see `fetchAndDecode`). */
  private lastTurn: Promise<void> = Promise.resolve();

  /**
   * Fetches a file, then decodes it — starting the decode only once every read started before this one started its
   * own. File reads complete out of order (a small file's sooner) and the pool's queue is first come, first served:
   * without the turn a scan's first file, needed first, was decoded after the small files read ahead of it (measured:
   * a reader's first rows of a catch-up 240 ms after its plan, instead of the ~60 its first file takes). `decode`
   * submits its pool jobs before it first awaits; the turn passes on then, not when the decode ends.
   */
  private async fetchAndDecode<T>(split: Pick<DataSplit, "partitionValues" | "bucket">, file: DataFileMeta, decode: (bytes: Uint8Array, mapping: SchemaMapping) => Promise<T>): Promise<{ path: string; mapping: SchemaMapping; decoded: T }> {
    const turn = this.lastTurn;
    let pass!: () => void;
    this.lastTurn = new Promise<void>((resolve) => (pass = resolve));
    let decoding: Promise<T>;
    let fetched: { path: string; bytes: Uint8Array; mapping: SchemaMapping };
    try {
      fetched = await this.fetch(split, file);
      await turn;
      decoding = decode(fetched.bytes, fetched.mapping);
    } finally {
      pass();
    }
    try {
      return { path: fetched.path, mapping: fetched.mapping, decoded: await decoding };
    } catch (e) {
      throw decodeRefused(e) ? damagedFile("data-file", fetched.path, reasonOf(e), dataFileRemedy(this.table), { cause: e, uri: this.table.io.uriOf(fetched.path) }) : e;
    }
  }

  /**
   * Reads one data file as record batch messages of the target schema when the decoder's are that already (the
   * file's columns have the target's types, in its order: see src/codec/ipc-stream.ts), else as `read` does.
   * `messageBytes`: about how large a message to ask the decoder for. Without a pool, batches decoded here.
   */
  async readMessages(split: Pick<DataSplit, "partitionValues" | "bucket">, file: DataFileMeta, pool: ParquetEncoderPool | null, messageBytes: number): Promise<FileRows> {
    // Without a pool there are no decoder messages: the file is decoded here into batches.
    if (pool === null) return { kind: "batches", batches: await this.read(split, file, null) };
    // Rows per message from the bytes per row of the files read so far (a first guess from the column types).
    const batchSize = Math.max(MIN_MESSAGE_ROWS, Math.min(MAX_MESSAGE_ROWS, Math.floor(messageBytes / (this.bytesPerRow ??= estimatedRowBytes(this.fields)))));
    const { path, mapping, decoded: streams } = await this.fetchAndDecode(split, file, (bytes, m) => decodeFileIpc(bytes, m.projected ? m.columns : undefined, pool, batchSize));
    const parts = streams.map(splitIpcStream);
    if (parts.every((p): p is IpcStreamParts => p !== null && this.forwardable(p.schema, mapping))) {
      const messages = parts.flatMap((p) => p.batches);
      const rows = messages.reduce((n, m) => n + m.rows, 0);
      checkRowCount(rows, file, path);
      if (rows > 0) this.bytesPerRow = Math.max(1, messages.reduce((n, m) => n + m.bytes.byteLength, 0) / rows);
      this.schemaBytes ??= schemaMessage(this.targetSchema);
      return { kind: "messages", schema: this.schemaBytes, messages, rows };
    }
    return { kind: "batches", batches: this.toTarget(tableOfStreams(streams), mapping, file, path) };
  }

  /** Bytes per row of the messages read so far (`readMessages` sizes the next file's messages by it). */
  private bytesPerRow: number | undefined;

  /** The target's schema message (framed), made once. */
  private schemaBytes: Uint8Array | undefined;

  /** The decoder's batches are the target's: every target column taken as it is, from the same position. */
  private forwardable(decoded: arrow.Schema, mapping: SchemaMapping): boolean {
    if (decoded.fields.length !== this.fields.length) return false;
    return this.fields.every((_, k) => {
      const source = mapping.sources[k];
      return source !== undefined && mapping.sameLogicalType[k] === true && decoded.fields[k]!.name === source.name && arrow.util.compareTypes(decoded.fields[k]!.type, this.targetSchema.fields[k]!.type);
    });
  }

  /** The file's bytes (all, or its wanted column chunks on an object store) and how its schema maps to the target. */
  async fetch(split: Pick<DataSplit, "partitionValues" | "bucket">, file: DataFileMeta): Promise<{ path: string; bytes: Uint8Array; mapping: SchemaMapping }> {
    const { table } = this;
    const ppath = partitionPath(table.partitionKeys, table.partitionTypes, split.partitionValues, {
      defaultName: table.options.partitionDefaultName,
      legacyName: table.options.partitionLegacyName,
    });
    const path = table.paths.dataFilePath(ppath, split.bucket, file.fileName, file.externalPath);
    const mapping = await this.mapping(file.schemaId);
    if (!file.fileName.endsWith(".parquet")) {
      throw new LakeError(ErrorKind.Unsupported, `data file ${file.fileName}: only Parquet data files can be read (file format from its extension)`);
    }
    // A projection of a large file on an object store fetches the footer and the wanted column chunks only.
    let bytes: Uint8Array;
    try {
      bytes = mapping.projected && table.io.prefersRangedReads && file.fileSize >= RANGED_READ_MIN_BYTES
        ? (await fetchColumnsOf(table.io, path, file.fileSize, mapping.columns)).bytes
        : await table.io.readFile(path);
    } catch (e) {
      throw isLakeError(e, ErrorKind.NotFound) ? missingFile("data-file", path, dataFileRemedy(table), e, table.io.uriOf(path)) : e;
    }
    return { path, bytes, mapping };
  }

  /**
   * Decodes row groups of a data file fetched already (its whole bytes) into the target schema; `rows`: how many rows
   * those groups hold (from the footer), checked against what is decoded.
   */
  async decodeRowGroups(file: DataFileMeta, path: string, bytes: Uint8Array, rowGroups: number[], rows: number, pool: ParquetEncoderPool | null): Promise<arrow.RecordBatch[]> {
    const mapping = await this.mapping(file.schemaId);
    const columns = mapping.projected ? mapping.columns : undefined;
    const decoded = pool === null ? await readParquetAsync(bytes, { columns, rowGroups }) : await pool.decode(bytes, { columns, rowGroups });
    return this.toTarget(decoded, mapping, file, path, rows);
  }

  /** The decoded file's batches in the target schema: columns taken, converted or null-filled by the mapping. */
  private toTarget(data: arrow.Table, mapping: SchemaMapping, file: DataFileMeta, path: string, expectedRows = file.rowCount): arrow.RecordBatch[] {
    return mapToTarget(data, mapping, { fields: this.fields, schema: this.targetSchema, struct: this.structType }, file, path, expectedRows);
  }
}

/** What to do about a damaged or missing data file. */
const dataFileRemedy = (table: Table): string =>
  `restore the file from a backup, or roll ${table.name} back to a snapshot before the one that added it (natslake doctor ${table.name} names the snapshots that use it)`;

/**
 * Whether a decode failed because the decoder refused the file's bytes — its own error, here or in a pool worker —
 * and not because it could not run (a worker thread that died, the pool closed: retryable or not about one file).
 */
function decodeRefused(e: unknown): boolean {
  if (!isLakeError(e)) return true;
  return e.kind === ErrorKind.Unexpected && e.context["op"] === "decode" && e.context["error"] !== undefined && !e.retryable;
}

/**
 * Decodes the row groups `rowGroups` (holding `rows` rows) of a data file whose bytes were read already, into the
 * table's current schema — a compaction rewriting a file's small row groups while it copies its large ones.
 */
export function decodeDataFileRowGroups(table: Table, file: DataFileMeta, path: string, bytes: Uint8Array, rowGroups: number[], rows: number, pool: ParquetEncoderPool | null): Promise<arrow.RecordBatch[]> {
  return new FileReadContext(table, table.schema.fields).decodeRowGroups(file, path, bytes, rowGroups, rows, pool);
}

/** Reads data files the way `readPlanBatches` reads them with this projection (the same batches, schema and checks). */
export interface DataFileReader {
  read(split: Pick<DataSplit, "partitionValues" | "bucket">, file: DataFileMeta, pool: ParquetEncoderPool | null, inlineDecodeBelowBytes?: number): Promise<arrow.RecordBatch[]>;
  /** The file as `readPlanMessages` gives it, in messages of about `messageBytes`. */
  readMessages(split: Pick<DataSplit, "partitionValues" | "bucket">, file: DataFileMeta, pool: ParquetEncoderPool | null, messageBytes: number): Promise<FileRows>;
}

/**
 * A reader of single data files for `projection` (default all columns): for a caller that reads a file before a
 * plan names it — a reader node decoding the files a writer announced, before their snapshot links — and hands the
 * result to `readPlanMessages` through `earlyRead`.
 */
export function dataFileReader(table: Table, projection?: string[]): DataFileReader {
  return new FileReadContext(table, projectedFields(table, projection));
}

/**
 * A reader of a primary-key table's data files into `wanted` and the columns a merge of them needs besides
 * (`mergeReadFields`: the key and `sequence.field` columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND`), for a caller that
 * merges a bucket's files itself — a point lookup (src/scan/lookup.ts). `fields`: the columns of its batches, in order.
 */
export function mergeFileReader(table: Table, wanted: readonly DataField[]): DataFileReader & { readonly fields: readonly DataField[] } {
  return new FileReadContext(table, mergeReadFields(table, wanted));
}

/**
 * Reads one data file and returns its batches with the target fields (by id), renamed and evolved. `split` gives the
 * file's partition and bucket (its directory); compaction reads its inputs through this too.
 */
export async function readDataFile(
  table: Table,
  split: Pick<DataSplit, "partitionValues" | "bucket">,
  file: DataFileMeta,
  fields: DataField[] = table.schema.fields,
  pool: ParquetEncoderPool | null = sharedParquetPool(),
  inlineDecodeBelowBytes?: number,
): Promise<arrow.RecordBatch[]> {
  return new FileReadContext(table, fields).read(split, file, pool, inlineDecodeBelowBytes);
}

/**
 * Record batches of a table (or snapshot) in the schema of the read (a chosen snapshot's own, else the current one);
 * splits in plan order, buckets in sequence order.
 */
export async function* readBatches(table: Table, spec: ReadSpec = {}): AsyncGenerator<arrow.RecordBatch> {
  yield* readPlanBatches(table, await planRead(table, spec), spec);
}

/**
 * The plan `readBatches` reads: a snapshot's live files, or an incremental range's added files, with `partition` /
 * `partitionFilter` applied, and the schema its rows are read in (`plan.schema`: a snapshot chosen by id, time or
 * tag is read in its own, unless `inCurrentSchema`). The projection and `partition` are checked against that schema.
 * A caller that wants to look at the files first (their sizes) plans, then reads the plan with `readPlanBatches`.
 * `store` shares manifest caches between plans of one table.
 */
export async function planRead(table: Table, spec: ReadSpec = {}, store?: ManifestStore): Promise<ScanPlan> {
  if (spec.incremental !== undefined) {
    checkReadable(table, spec, "added");
    return planIncremental(table, spec.incremental, partitionFilterOf(table, spec), store);
  }
  const snapshot = await resolveSnapshot(table, spec);
  const read = table.inSchema(await readSchemaOf(table, spec, snapshot));
  checkReadable(read, spec, "snapshot", travelsInTime(spec) ? snapshot : null);
  const filter = partitionFilterOf(read, spec);
  return planSnapshot(read, snapshot, { ...spec, ...(filter ? { partitionFilter: filter } : {}) }, store);
}

/**
 * The plan of the rows one APPEND snapshot added — `planRead` with `incremental: { from: s.id − 1, to: s.id }`, the
 * same splits in the same order — for a caller that holds the snapshot: the snapshot chain is not looked at again
 * (a reader serving consumers plans every new snapshot this way, two manifest reads).
 */
export async function planSnapshotDelta(table: Table, s: Snapshot, spec: Pick<ReadSpec, "projection" | "partition" | "partitionFilter"> = {}, store?: ManifestStore): Promise<ScanPlan> {
  checkReadable(table, spec, "added");
  const changes = changesOf(table);
  return { snapshot: s, schema: table.schema, timeTravel: false, splits: await snapshotDeltaSplits(table, s, partitionFilterOf(table, spec), store), ...(changes !== null ? { changes } : {}) };
}

/**
 * Refuses what cannot be read: an unknown column; of a primary-key table, what snapshots added (its changes are a
 * changelog, not appended rows) and a snapshot that needs more than the deduplicate merge (src/lsm/merge-read.ts).
 */
function checkReadable(table: Table, spec: Pick<ReadSpec, "projection">, what: "snapshot" | "added", travelledTo?: Snapshot | null): void {
  // A primary-key table's changes are read as they are (any engine's files); its snapshots need the merge.
  if (table.isPrimaryKeyTable && what === "snapshot") checkMergeReadable(table);
  projectedFields(table, spec.projection, travelledTo); // an unknown column fails before any manifest is read
}

/** `partition` (values in partition-key order) as a filter, else the spec's own filter. */
function partitionFilterOf(table: Table, spec: Pick<ReadSpec, "partition" | "partitionFilter">): ((values: Value[]) => boolean) | undefined {
  if (!spec.partition) return spec.partitionFilter;
  const ptypes = table.partitionTypes;
  const want = Buffer.from(serializeBinaryRow(ptypes, spec.partition)).toString("hex");
  return (values: Value[]) => Buffer.from(serializeBinaryRow(ptypes, values)).toString("hex") === want;
}

export type PlanReadOptions = Pick<ReadSpec, "projection" | "limit" | "decoderPool" | "inlineDecodeBelowBytes" | "readAheadFiles" | "rowKind" | "mergeInWorkers">;

/**
 * Record batches of a plan made by `planRead`, in its schema (`plan.schema`); the projection, limit and decoder pool
 * of `spec` apply.
 */
export async function* readPlanBatches(handle: Table, plan: ScanPlan, spec: PlanReadOptions = {}): AsyncGenerator<arrow.RecordBatch> {
  const table = handle.inSchema(plan.schema);
  const fields = projectedFields(table, spec.projection, travelledTo(plan));
  if (table.isPrimaryKeyTable) {
    if (plan.changes !== undefined) yield* readChangeBatches(table, plan, fields, spec);
    else if (spec.rowKind === true) for await (const b of readMergedBatches(table, plan, fields, spec)) yield withRowKind(b, null);
    else yield* readMergedBatches(table, plan, fields, spec);
    return;
  }
  const context = new FileReadContext(table, fields);
  const pool = spec.decoderPool === undefined ? sharedParquetPool() : spec.decoderPool;
  let remaining = spec.limit ?? Infinity;
  // An append table's deletion vectors (Java writes them for deletes and updates) apply to each file.
  const read = (split: DataSplit, file: DataFileMeta): Promise<arrow.RecordBatch[]> => withoutDeletedRows(context, split, file, plan.deletionVectors ?? null, (s, f) => context.read(s, f, pool, spec.inlineDecodeBelowBytes));
  for await (const batches of filesAhead(plan, pool, spec, read)) {
    for (const batch of batches) {
      if (remaining <= 0) return;
      if (batch.numRows > remaining) {
        yield batch.slice(0, remaining);
        return;
      }
      remaining -= batch.numRows;
      yield batch;
    }
    if (remaining <= 0) return;
  }
}

/**
 * One data file's rows as `readPlanMessages` gives them: the decoder's record batch messages, ready to follow the
 * target's schema message (`schema`, framed) in an IPC stream — or, when the file needs mapping (another column
 * order, a type change, a column added later), Arrow record batches.
 */
export type FileRows =
  | { kind: "messages"; schema: Uint8Array; messages: IpcBatchMessage[]; rows: number }
  | { kind: "batches"; batches: arrow.RecordBatch[] };

/**
 * A primary-key table's plan: each bucket merged on read (src/lsm/merge-reader.ts: sections of overlapping files
 * merged by a k-way merge of their sorted runs, a file that overlaps none read as it is), its rows in key order. A
 * limit applies to the merged rows.
 *
 * Deletion vectors (`deletion-vectors.enabled`, tables Java wrote; `plan.deletionVectors`), as Java 1.4.2 reads them:
 * each file's deleted rows are dropped as it is read (ApplyDeletionVectorReader); a batch read skips level 0
 * (batchScanSkipLevel0: a row is seen once compaction moved it up and marked its older versions deleted), and a
 * bucket whose files all hold no retraction is read file by file without merging (MergeTreeSplitGenerator's
 * raw-convertible split: the vectors leave one version per key) — whatever the merge engine. Otherwise the files are
 * merged after their vectors are applied. A stream's first plan (`rowKind`) reads level 0 too, merged: Java's stream
 * scan has no level filter. A first-row table's batch read is raw-convertible the same way (Java's split generator
 * treats first-row like deletion vectors): its buckets, level 0 skipped, are read file by file without merging.
 */
async function* readMergedBatches(table: Table, plan: ScanPlan, wanted: DataField[], spec: PlanReadOptions): AsyncGenerator<arrow.RecordBatch> {
  const engine = checkMergeReadable(table);
  // Sequence groups compare across columns: such a table is merged on all of them, then narrowed to the wanted ones.
  const mergeFields = engine.mergesAllFields === true ? table.schema.fields : wanted;
  const context = new FileReadContext(table, mergeReadFields(table, mergeFields));
  const pool = spec.decoderPool === undefined ? sharedParquetPool() : spec.decoderPool;
  const keys = keyFields(table.schema);
  const sequence = sequenceFieldSpec(table.schema);
  const ignoreDelete = ignoreDeleteOf(table);
  let remaining = spec.limit ?? Infinity;
  const dvMode = table.options.bool("deletion-vectors.enabled");
  const vectors = plan.deletionVectors ?? null;
  const read = (split: DataSplit, file: DataFileMeta): Promise<arrow.RecordBatch[]> => withoutDeletedRows(context, split, file, vectors, (s, f) => context.read(s, f, pool, spec.inlineDecodeBelowBytes));
  // First-row tables: Java's batch reads skip level 0 (batchScanSkipLevel0) — a row shows once compaction moved it
  // up, which the writers do at every compaction (ForceUpLevel0) — and so do these, to show what Java shows. So does
  // a stream's first read of a `changelog-producer = lookup` table (Java's DataTableStreamScan.tryFirstPlan): the
  // level-0 rows come next, as the changelog of the compaction that moves them up.
  const skipLevel0 = engine.name === "first-row" || (dvMode && spec.rowKind !== true) || (spec.rowKind === true && changelogProducerOf(table.options) === "lookup");
  const splits = skipLevel0 ? plan.splits.map((s) => ({ ...s, files: s.files.filter((f) => f.level > 0) })) : plan.splits;
  // Buckets read file by file without merging, as Java's MergeTreeSplitGenerator makes raw-convertible splits: every
  // file above level 0 and without retractions, in a table with deletion vectors (they leave one version per key) or
  // a first-row table in a batch read (its compactions keep each key once above level 0, and level 0 is skipped).
  const rawContext = dvMode || (engine.name === "first-row" && spec.rowKind !== true) ? new FileReadContext(table, wanted) : null;
  // A bucket whose files are all above level 0 and none with deletes is read as it is in those modes.
  const readRaw = (split: DataSplit): boolean => split.files.every((f) => f.level > 0 && f.deleteRowCount === 0);
  const raw = (split: DataSplit): boolean => rawContext !== null && readRaw(split);
  // Buckets that need a merge are merged in the pool's workers, several at once (src/scan/worker-merges.ts), unless
  // deletion vectors apply (read here, file by file) or the bucket is too small to be worth the hand-off — and only
  // with two workers or more: with one (a cluster node on two cores), this thread merging while that worker decodes
  // keeps two threads busy, where the worker alone would decode and merge on one.
  const sortedKeys = new SerializedKeys(keys.map((f) => f.type));
  const minWorkerBytes = spec.inlineDecodeBelowBytes === 0 ? 0 : WORKER_MERGE_MIN_BYTES;
  const inWorker = (split: DataSplit): boolean =>
    pool !== null && pool.size >= 2 && spec.mergeInWorkers !== false && !dvMode && vectors === null && !raw(split) && fitsWorker(split, minWorkerBytes) && needsMerge(split.files, sortedKeys);
  const workerSplits = pool === null ? [] : splits.filter(inWorker);
  // A bucket merged here: each merged batch narrowed to the wanted columns, the first `skipRows` rows left out (the
  // rest of a bucket a worker gave back, src/scan/worker-merges.ts).
  async function* mergeHere(split: DataSplit, readFile: (file: DataFileMeta) => Promise<arrow.RecordBatch[]>, skipRows = 0): AsyncGenerator<arrow.RecordBatch> {
    let skip = skipRows;
    for await (const merges of mergeBucketFiles(split.files, { keyFields: keys, sequence, ignoreDelete, engine, output: mergeFields, readFile })) {
      if (skip >= merges.numRows) {
        skip -= merges.numRows;
        continue;
      }
      const rest = skip > 0 ? merges.slice(skip) : merges;
      skip = 0;
      yield mergeFields === wanted ? rest : project(rest, wanted);
    }
  }
  const workers =
    workerSplits.length === 0
      ? null
      : new WorkerMerges(
          workerSplits,
          pool!,
          spec.limit !== undefined,
          (split) => prepareBucket(context, table, split, { ignoreDelete, output: mergeFields, wanted }),
          (e, bucket) => workerMergeFailure(table, e, bucket),
          (split, skipRows) => mergeHere(split, (file) => read(split, file), skipRows),
        ).begin();
  const inWorkers = new Set(workerSplits);
  // Later buckets' files decode in the pool while this one merges here (src/scan/merge-files-ahead.ts). Buckets read
  // raw read ahead by themselves.
  const ahead = MergeFilesAhead.of(splits.filter((s) => !raw(s) && !inWorkers.has(s)), pool, spec.limit !== undefined, read).begin();
  try {
    for (let at = 0; at < splits.length; at++) {
      const split = splits[at]!;
      // A limit reached: the next bucket is neither read nor merged.
      if (remaining <= 0) return;
      if (rawContext !== null && readRaw(split)) {
        // The buckets read raw from here on are read ahead together: one bucket's last files decode while the next
        // one's first are read (a first-row table's batch read is all such buckets; per bucket, each bucket's first
        // files waited for the one before to drain).
        let end = at + 1;
        while (end < splits.length && readRaw(splits[end]!)) end++;
        const rawSplits = splits.slice(at, end);
        at = end - 1;
        const rawRead = (s: DataSplit, f: DataFileMeta): Promise<arrow.RecordBatch[]> => withoutDeletedRows(rawContext, s, f, vectors, (s2, f2) => rawContext.read(s2, f2, pool, spec.inlineDecodeBelowBytes));
        for await (const batches of filesAhead({ ...plan, splits: rawSplits }, pool, spec, rawRead)) {
          for (const batch of batches) {
            if (remaining <= 0) return;
            const taken = batch.numRows <= remaining ? batch : batch.slice(0, remaining);
            remaining -= taken.numRows;
            yield taken;
          }
        }
        continue;
      }
      if (workers !== null && inWorkers.has(split)) {
        for await (const batch of workers.take(split)) {
          if (remaining <= 0) return;
          const taken = batch.numRows <= remaining ? batch : batch.slice(0, remaining);
          remaining -= taken.numRows;
          yield taken;
        }
        continue;
      }
      for await (const batch of mergeHere(split, (file) => ahead.take(split, file))) {
        if (remaining <= 0) return;
        const taken = batch.numRows <= remaining ? batch : batch.slice(0, remaining);
        remaining -= taken.numRows;
        yield taken;
      }
    }
  } finally {
    ahead.close();
    workers?.close();
  }
}

/**
 * Buckets whose files total less Parquet than this merge on the calling thread even with a pool: the hand-off (the
 * bytes to the worker, every output batch back as IPC) costs more than the merge there saves.
 */
const WORKER_MERGE_MIN_BYTES = 256 * 1024;

/**
 * Whether a bucket's Parquet is within the worker path's bounds: at least `minBytes`, and at most
 * `WorkerMerges.maxBucketBytes` — a worker is handed a bucket's files whole, so a larger bucket merges here, where
 * one decoded file per run is held.
 */
function fitsWorker(split: DataSplit, minBytes: number): boolean {
  const bytes = split.files.reduce((n, f) => n + f.fileSize, 0);
  return bytes >= minBytes && bytes <= WorkerMerges.maxBucketBytes;
}

/** Whether a bucket's files need a merge at all: some overlap, or one holds retractions (else each is read as it is). */
function needsMerge(files: readonly DataFileMeta[], keys: SerializedKeys): boolean {
  return files.some((f) => f.deleteRowCount !== 0) || sections(files, keys).some((s) => s.length > 1);
}

/** A bucket's files read (through the table's FileIO, here) for its merge in a worker, their bytes to hand over. */
async function prepareBucket(context: FileReadContext, table: Table, split: DataSplit, merge: { ignoreDelete: boolean; output: DataField[]; wanted: DataField[] }): Promise<PreparedBucket> {
  const fetched = await Promise.all(split.files.map((f) => context.fetch(split, f)));
  const transfer: ArrayBuffer[] = [];
  const files = fetched.map(({ path, bytes, mapping }, k) => {
    // Bytes that share their buffer (a slice of Node's pool) are copied once so that what goes over is theirs alone.
    const owned = transferableBuffer(bytes) === null ? bytes.slice() : bytes;
    transfer.push(owned.buffer as ArrayBuffer);
    return { meta: split.files[k]!, path, bytes: owned, mapping };
  });
  const spec: BucketSpec = {
    schema: table.schema,
    ignoreDelete: merge.ignoreDelete,
    fields: [...context.fields],
    output: merge.output,
    wanted: merge.output === merge.wanted ? null : merge.wanted,
    files,
    ...(WorkerMerges.nativeMerge ? {} : { nativeMerge: false }),
  };
  return { spec, transfer };
}

/** A worker merge's failure as the read reports it: a file the worker could not decode is a damaged file, by path. */
function workerMergeFailure(table: Table, e: unknown, bucket: BucketSpec): unknown {
  if (!isLakeError(e) || e.retryable || e.kind !== ErrorKind.Unexpected || typeof e.context["fileIndex"] !== "number") return e;
  const file = bucket.files[e.context["fileIndex"]];
  if (file === undefined) return e;
  return damagedFile("data-file", file.path, reasonOf(e), dataFileRemedy(table), { cause: e, uri: table.io.uriOf(file.path) });
}

/** A data file's batches as `read` gives them, less the rows its deletion vector in `vectors` marks (if it has one). */
async function withoutDeletedRows(
  context: FileReadContext,
  split: DataSplit,
  file: DataFileMeta,
  vectors: SnapshotDeletionVectors | null,
  read: (split: DataSplit, file: DataFileMeta) => Promise<arrow.RecordBatch[]>,
): Promise<arrow.RecordBatch[]> {
  const deletion = vectors?.ofBucket(split.partition, split.bucket).get(file.fileName);
  if (deletion === undefined) return read(split, file);
  const [batches, deleted] = await Promise.all([read(split, file), vectors!.read(deletion, file.rowCount)]);
  return dropDeletedRows(batches, deleted, context.fields);
}

/**
 * A primary-key table's changes (`plan.changes`): each file read as it is, in plan order, each row with its kind in
 * `_row_kind` — a changelog file holds every change as written, a level-0 file each flush's last change per key.
 */
async function* readChangeBatches(table: Table, plan: ScanPlan, wanted: DataField[], spec: PlanReadOptions): AsyncGenerator<arrow.RecordBatch> {
  const fields = [...wanted, VALUE_KIND_FIELD];
  const context = new FileReadContext(table, fields);
  const pool = spec.decoderPool === undefined ? sharedParquetPool() : spec.decoderPool;
  const schema = new arrow.Schema(wanted.map((f) => toArrowField(f.name, f.type)));
  let remaining = spec.limit ?? Infinity;
  const read = (split: DataSplit, file: DataFileMeta): Promise<arrow.RecordBatch[]> => context.read(split, file, pool, spec.inlineDecodeBelowBytes);
  for await (const batches of filesAhead(plan, pool, spec, read)) {
    for (const b of batches) {
      if (remaining <= 0) return;
      const kindData = b.data.children[wanted.length]!;
      const kinds = (kindData.values as Int8Array).subarray(kindData.offset, kindData.offset + b.numRows);
      const rows = new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: b.numRows, nullCount: 0, children: b.data.children.slice(0, wanted.length) }));
      const out = withRowKind(rows, kinds);
      const taken = out.numRows <= remaining ? out : out.slice(0, remaining);
      remaining -= taken.numRows;
      yield taken;
    }
  }
}

/**
 * The files of a plan made by `planRead`, in plan order, for a caller that sends the rows on as Arrow IPC (a reader
 * node's consume sessions): each decoded in the pool (`spec.decoderPool`, default the shared one; it needs one) in
 * record batch messages of about `messageBytes` each, forwarded without being decoded here when the file's columns
 * are the target's (see `FileRows`). Read ahead as `readPlanBatches` reads; no `limit`.
 */
export async function* readPlanMessages(handle: Table, plan: ScanPlan, spec: PlanMessagesOptions): AsyncGenerator<FileRows> {
  const table = handle.inSchema(plan.schema);
  // A primary-key table's rows exist only after its bucket's merge (or carry their kind): read into batches here.
  if (table.isPrimaryKeyTable) {
    for await (const b of readPlanBatches(handle, plan, { ...spec, rowKind: true })) yield { kind: "batches", batches: [b] };
    return;
  }
  const context = new FileReadContext(table, projectedFields(table, spec.projection, travelledTo(plan)));
  const pool = spec.decoderPool === undefined ? sharedParquetPool() : spec.decoderPool;
  const vectors = plan.deletionVectors ?? null;
  const read = (split: DataSplit, file: DataFileMeta): Promise<FileRows> => {
    // A file with a deletion vector loses rows: decoded here, whatever was read early.
    if (vectors?.ofBucket(split.partition, split.bucket).has(file.fileName) === true) {
      return withoutDeletedRows(context, split, file, vectors, (s, f) => context.read(s, f, pool)).then((batches) => ({ kind: "batches", batches }));
    }
    const fresh = (): Promise<FileRows> => context.readMessages(split, file, pool, spec.messageBytes);
    const early = spec.earlyRead?.(split, file);
    return early !== undefined ? early.catch(fresh) : fresh();
  };
  yield* filesAhead(plan, pool, spec, read);
}

export interface PlanMessagesOptions extends Pick<ReadSpec, "projection" | "decoderPool" | "readAheadFiles"> {
  /** About how large a record batch message to ask the decoder for. */
  messageBytes: number;
  /**
   * A file read before (by a `dataFileReader` of the same table and projection: `readMessages`), or undefined: read
   * it here. A read that failed is done again here.
   */
  earlyRead?: (split: DataSplit, file: DataFileMeta) => Promise<FileRows> | undefined;
}

/** `readBatches`' counterpart for a caller that sends the rows on as Arrow IPC: `readPlanMessages` of `planRead(spec)`. */
export async function* readMessages(table: Table, spec: ReadSpec & { messageBytes: number }, store?: ManifestStore): AsyncGenerator<FileRows> {
  yield* readPlanMessages(table, await planRead(table, spec, store), spec);
}

/** Bounds of the rows per message `readPlanMessages` asks the decoder for. */
const MIN_MESSAGE_ROWS = 256;
const MAX_MESSAGE_ROWS = 65_536;

/** Bytes per row of `fields` in Arrow, roughly: fixed widths, 32 bytes for a string or binary value. */
function estimatedRowBytes(fields: readonly DataField[]): number {
  const width: Partial<Record<string, number>> = { BOOLEAN: 1, TINYINT: 1, SMALLINT: 2, INT: 4, DATE: 4, TIME: 4, FLOAT: 4, BIGINT: 8, DOUBLE: 8, TIMESTAMP: 8, TIMESTAMP_LTZ: 8, DECIMAL: 16 };
  return fields.reduce((n, f) => n + (width[f.type.root] ?? 32), 0);
}

/**
 * The plan's files read by `read`, yielded in plan order while later ones are read ahead: enough to keep every
 * worker of `pool` busy, more while the files in flight are small (READ_AHEAD_BYTES), or exactly
 * `spec.readAheadFiles`. No file starts once those started hold `spec.limit` rows.
 */
async function* filesAhead<T>(plan: ScanPlan, pool: ParquetEncoderPool | null, spec: Pick<ReadSpec, "limit" | "readAheadFiles">, read: (split: DataSplit, file: DataFileMeta) => Promise<T>): AsyncGenerator<T> {
  const tasks = plan.splits.flatMap((split) => split.files.map((file) => ({ split, file })));
  const window = pool === null ? 1 : Math.max(1, spec.readAheadFiles ?? pool.size + 1);
  const byBytes = pool !== null && spec.readAheadFiles === undefined;
  const limit = spec.limit ?? Infinity;
  const pending: Array<{ read: Promise<T>; bytes: number }> = [];
  let pendingBytes = 0;
  let next = 0;
  let startedRows = 0;
  const startMore = (): void => {
    while (next < tasks.length && startedRows < limit) {
      const { split, file } = tasks[next]!;
      const fits = pending.length < window || (byBytes && pending.length < READ_AHEAD_MAX_FILES && pendingBytes + file.fileSize <= READ_AHEAD_BYTES);
      if (!fits) return;
      next++;
      startedRows += file.rowCount;
      const started = read(split, file);
      // Observed here so a read abandoned by an early return never becomes an unhandled rejection.
      started.catch(() => undefined);
      pending.push({ read: started, bytes: file.fileSize });
      pendingBytes += file.fileSize;
    }
  };
  startMore();
  while (pending.length > 0) {
    const head = pending.shift()!;
    const result = await head.read;
    // Released once consumed (its rows go to the caller): until then its decoded data is held here.
    pendingBytes -= head.bytes;
    startMore();
    yield result;
  }
}

/** Rows of canonical values keyed by column name, in the schema of the read (see `readBatches`). */
export async function* readRows(table: Table, spec: ReadSpec = {}): AsyncGenerator<Row> {
  yield* readPlanRows(table, await planRead(table, spec), spec);
}

/** `readRows` of a plan made by `planRead`: its columns are `readColumns(table, plan, spec.projection)`. */
export async function* readPlanRows(table: Table, plan: ScanPlan, spec: PlanReadOptions = {}): AsyncGenerator<Row> {
  const fields = [...readColumns(table, plan, spec.projection)];
  // A primary-key table's changes (and a stream's full scan) carry each row's kind: `row._row_kind`.
  if (table.isPrimaryKeyTable && (plan.changes !== undefined || spec.rowKind === true)) fields.push(ROW_KIND_FIELD);
  for await (const batch of readPlanBatches(table, plan, spec)) {
    for (const row of recordBatchToRows(fields, batch)) yield row;
  }
}

/** The columns a read of `plan` gives, in order: `projection` (default every column) of the plan's schema. */
export function readColumns(table: Table, plan: ScanPlan, projection?: string[]): DataField[] {
  return projectedFields(table.inSchema(plan.schema), projection, travelledTo(plan));
}

/** All rows at once (tests, small tables). */
export async function readAllRows(table: Table, spec: ReadSpec = {}): Promise<Row[]> {
  const out: Row[] = [];
  for await (const r of readRows(table, spec)) out.push(r);
  return out;
}
