/**
 * A primary-key bucket's merge-on-read as a job of a Parquet worker thread (src/codec/parquet-worker.mjs, op
 * `merge-bucket`): the bucket's files' bytes, read by the calling thread through the table's FileIO, come in with
 * their metadata and schema mappings; here each file is decoded, mapped to the read's columns
 * (src/scan/file-mapping.ts) and merged by `mergeBucketFiles` — the same merge the calling thread runs, every engine,
 * so the rows are the same by construction — and each output batch goes back as its column buffers through `emit`,
 * which waits while the calling thread holds as many batches as it takes unconsumed (its flow control).
 *
 * A deduplicate bucket read as written is merged by the native addon instead (src/scan/native-bucket-merge.ts), unless
 * `nativeMerge` is false; the JS merge takes every other bucket.
 *
 * Everything in `MergeBucketSpec` is structured-cloneable: no table, no FileIO, no functions.
 */
import * as arrow from "apache-arrow";
import { toArrowField } from "../codec/arrow-schema.ts";
import { postableBatch, type PostedBatch } from "../codec/batch-transfer.ts";
import { readParquetAsync } from "../codec/parquet.ts";
import type { DataField } from "../format/data-types.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import type { TableSchema } from "../format/schema.ts";
import { keyFields } from "../lsm/key-value-fields.ts";
import { mergeEngineOf } from "../lsm/merge-functions/merge-engine.ts";
import { sequenceFieldSpec } from "../lsm/merge-order.ts";
import { mergeBucketFiles, project } from "../lsm/merge-reader.ts";
import { mapToTarget, type SchemaMapping, type TargetLayout } from "./file-mapping.ts";
import { nativeBucketMerge, NativeMergeFileError } from "./native-bucket-merge.ts";

export interface MergeBucketFile {
  meta: DataFileMeta;
  /** The file's path, for messages. */
  path: string;
  /** The whole file's Parquet bytes (or its wanted column chunks, laid out as read.ts fetches them). */
  bytes: Uint8Array;
  mapping: SchemaMapping;
}

export interface MergeBucketSpec {
  /** The schema of the read: merge engine, key and `sequence.field` come from it. */
  schema: TableSchema;
  ignoreDelete: boolean;
  /** The columns each file is decoded into (the merge's: src/lsm/merge-read.ts `mergeReadFields`). */
  fields: DataField[];
  /** The columns the merge returns. */
  output: DataField[];
  /** The columns sent back when the merge needed more than the read wants (`output` narrowed); null: `output`. */
  wanted: DataField[] | null;
  files: MergeBucketFile[];
  /** Rows per output batch (default the merge's). */
  batchRows?: number;
  /** Output batches sent ahead of the caller's acks (the worker's flow control, parquet-worker.mjs). */
  window: number;
  /** How long the worker waits for an ack before it gives the bucket back to the caller (`Paused`). */
  pauseAfterMs: number;
  /** false: merge in JavaScript even when the native merge would take the bucket (A/B runs, tests). Default true. */
  nativeMerge?: boolean;
}

/** A file of the job could not be decoded: which one (its index in `files`), for the calling thread's message. */
export class MergeFileDecodeError extends Error {
  constructor(
    readonly fileIndex: number,
    cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = cause instanceof Error ? cause.name : "Error";
  }
}

/**
 * Merges the bucket, handing each output batch to `emit` as its column buffers (src/codec/batch-transfer.ts) with the
 * buffers to transfer; resolves to the rows sent.
 */
export async function mergeBucketJob(spec: MergeBucketSpec, emit: (batch: PostedBatch, transfer: ArrayBuffer[]) => Promise<void>): Promise<number> {
  const native = spec.nativeMerge === false ? null : nativeMerged(spec);
  const merged = native ?? jsMerged(spec);
  let rows = 0;
  for await (const out of merged) {
    if (out.numRows === 0) continue;
    rows += out.numRows;
    const { posted, transfer } = postableBatch(out);
    await emit(posted, transfer);
  }
  return rows;
}

/** The native merge's batches in the columns sent back, or null when it does not take the bucket. */
function nativeMerged(spec: MergeBucketSpec): AsyncGenerator<arrow.RecordBatch> | null {
  const asDecodeError = (e: unknown): unknown => (e instanceof NativeMergeFileError ? new MergeFileDecodeError(e.fileIndex, new Error(e.message)) : e);
  let merged: AsyncGenerator<arrow.RecordBatch> | null;
  try {
    merged = nativeBucketMerge({ schema: spec.schema, fields: spec.fields, output: spec.wanted ?? spec.output, files: spec.files, ...(spec.batchRows !== undefined ? { batchRows: spec.batchRows } : {}) });
  } catch (e) {
    throw asDecodeError(e);
  }
  if (merged === null) return null;
  const from = merged;
  return (async function* () {
    try {
      yield* from;
    } catch (e) {
      throw asDecodeError(e);
    }
  })();
}

/** The JS merge (every engine): each file decoded and mapped to the read's columns, then `mergeBucketFiles`. */
async function* jsMerged(spec: MergeBucketSpec): AsyncGenerator<arrow.RecordBatch> {
  const target: TargetLayout = (() => {
    const schema = new arrow.Schema(spec.fields.map((f) => toArrowField(f.name, f.type)));
    return { fields: spec.fields, schema, struct: new arrow.Struct(schema.fields) };
  })();
  const index = new Map<DataFileMeta, number>(spec.files.map((f, k) => [f.meta, k]));
  const readFile = async (meta: DataFileMeta): Promise<arrow.RecordBatch[]> => {
    const k = index.get(meta)!;
    const file = spec.files[k]!;
    const bytes = file.bytes;
    // Each file is read once by the merge: its bytes are let go as soon as it is decoded.
    file.bytes = new Uint8Array(0);
    let decoded: arrow.Table;
    try {
      decoded = await readParquetAsync(bytes, { columns: file.mapping.projected ? file.mapping.columns : undefined });
    } catch (e) {
      throw new MergeFileDecodeError(k, e);
    }
    return mapToTarget(decoded, file.mapping, target, meta, file.path);
  };
  const merged = mergeBucketFiles(
    spec.files.map((f) => f.meta),
    {
      keyFields: keyFields(spec.schema),
      sequence: sequenceFieldSpec(spec.schema),
      ignoreDelete: spec.ignoreDelete,
      engine: mergeEngineOf(spec.schema),
      output: spec.output,
      readFile,
      ...(spec.batchRows !== undefined ? { batchRows: spec.batchRows } : {}),
    },
  );
  const wanted = spec.wanted;
  for await (const batch of merged) yield wanted === null ? batch : project(batch, wanted);
}
