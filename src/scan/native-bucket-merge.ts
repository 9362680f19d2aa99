/**
 * A deduplicate bucket's merge-on-read in the native addon (native/parquet/src/merge.rs) instead of
 * src/lsm/merge-reader.ts `mergeBucketFiles`: the files are decoded, merged and gathered in Rust, and only the output
 * batches cross into JavaScript. The JS merge stays the reference and the fallback: this module answers null — merge
 * in JavaScript — for any bucket whose rows it cannot prove the same.
 *
 * A bucket qualifies when the merge keeps each key's newest version as it is: the deduplicate engine without lookup
 * levels and without `sequence.field` (what merge-reader.ts `newestWins` requires); every file read as it was
 * written (each target column the file's own column of the same name and type: no schema evolution, no conversion);
 * key fields of the types whose order the addon proves equal to src/lsm/key-comparator.ts. Anything else, or a codec
 * without the addon (NATSLAKE_PARQUET=wasm), or NATSLAKE_NATIVE_MERGE=off, merges in JavaScript.
 */
import * as arrow from "apache-arrow";
import { toArrowSchema } from "../codec/arrow-schema.ts";
import { IpcStreamDecoder } from "../codec/ipc-decode.ts";
import { openBucketMerge, parquetCodec, type NativeBucketMerge } from "../codec/parquet-ops.mjs";
import type { DataField, DataType } from "../format/data-types.ts";
import type { DataFileMeta } from "../format/manifest.ts";
import type { TableSchema } from "../format/schema.ts";
import { SerializedKeys } from "../lsm/key-comparator.ts";
import { keyFields } from "../lsm/key-value-fields.ts";
import { mergeEngineOf } from "../lsm/merge-functions/merge-engine.ts";
import { sequenceFieldSpec } from "../lsm/merge-order.ts";
import { DEFAULT_BATCH_ROWS, runsOf, sections } from "../lsm/merge-reader.ts";
import { checkRowCount, type SchemaMapping } from "./file-mapping.ts";

/**
 * Key types whose order the addon compares exactly as keyComparator does: integers and dates by value (the addon
 * widens them to i64), strings and binaries as unsigned bytes. Not here, so merged in JavaScript: FLOAT/DOUBLE
 * (Java's Double.compare of −0.0 and NaN), DECIMAL, TIMESTAMP (precision 7–9 is stored as INT96 bytes), CHAR, TIME,
 * BOOLEAN.
 */
const PROVEN_KEY_TYPES: ReadonlySet<DataType["root"]> = new Set(["TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "VARCHAR", "BINARY", "VARBINARY"]);

/** NATSLAKE_NATIVE_MERGE=off (or 0, false, js): every bucket merges in JavaScript, for A/B runs and tests. */
export function nativeMergeEnabled(): boolean {
  const v = (process.env.NATSLAKE_NATIVE_MERGE ?? "").trim().toLowerCase();
  return !(v === "off" || v === "0" || v === "false" || v === "js");
}

/** One file of a bucket: its metadata, path (for messages), Parquet bytes and mapping to the read's columns. */
export interface NativeMergeFile {
  meta: DataFileMeta;
  path: string;
  bytes: Uint8Array;
  mapping: SchemaMapping;
}

export interface NativeMergeRequest {
  schema: TableSchema;
  /** The columns each file is decoded into (the read's target layout). */
  fields: readonly DataField[];
  /** The columns returned, in this order. */
  output: readonly DataField[];
  files: NativeMergeFile[];
  batchRows?: number;
}

/** The file errors of the native merge, by the prefix the addon puts on them (see parquet-ops.d.mts `openBucketMerge`). */
export class NativeMergeFileError extends Error {
  constructor(
    readonly fileIndex: number,
    message: string,
  ) {
    super(message);
    this.name = "Error";
  }
}

/** Why a request does not qualify; null when it does (the addon may still refuse it when it reads the footers). */
export function nativeMergeRefusal(req: NativeMergeRequest): string | null {
  if (!nativeMergeEnabled()) return "NATSLAKE_NATIVE_MERGE=off";
  if (parquetCodec.path !== "native") return "the Parquet codec is wasm";
  const engine = mergeEngineOf(req.schema);
  if (req.output.length === 0) return "no output columns";
  if (engine.name !== "deduplicate") return `merge engine ${engine.name}`;
  if (engine.lookupMerge === true) return "lookup levels";
  if (sequenceFieldSpec(req.schema) !== null) return "sequence.field";
  const bad = keyFields(req.schema).find((f) => !PROVEN_KEY_TYPES.has(f.type.root));
  if (bad !== undefined) return `key type ${bad.type.root}`;
  for (const f of req.files) {
    const { sources, sameLogicalType } = f.mapping;
    if (!req.fields.every((t, k) => sources[k] !== undefined && sources[k].name === t.name && sameLogicalType[k] === true)) return `file ${f.path} is read through a schema change`;
  }
  return null;
}

/**
 * The merged rows of the bucket as batches of `req.output`, or null when the native merge does not take the bucket
 * (the caller then merges in JavaScript; nothing was consumed). Once it takes the bucket, the files' bytes are its
 * own (each request file's `bytes` is emptied). A file that does not decode throws NativeMergeFileError with its
 * index; a row count that differs from the manifest throws as file-mapping.ts `checkRowCount` does.
 */
export function nativeBucketMerge(req: NativeMergeRequest): AsyncGenerator<arrow.RecordBatch> | null {
  if (req.files.length === 0 || nativeMergeRefusal(req) !== null) return null;
  const keys = keyFields(req.schema);
  const serialized = new SerializedKeys(keys.map((f) => f.type));
  const index = new Map<DataFileMeta, number>(req.files.map((f, k) => [f.meta, k]));
  const metas = req.files.map((f) => f.meta);
  const bucketSections = sections(metas, serialized).map((section) => runsOf(section, serialized).map((run) => run.map((m) => index.get(m)!)));
  const engine = mergeEngineOf(req.schema);
  let merge: NativeBucketMerge | null;
  try {
    merge = openBucketMerge(
      req.files.map((f) => f.bytes),
      {
        keyColumns: keys.map((f) => f.name),
        outputColumns: req.output.map((f) => f.name),
        sections: bucketSections,
        rowCounts: metas.map((m) => m.rowCount),
        ignoreDelete: engine.ignoreDelete,
        batchRows: req.batchRows ?? DEFAULT_BATCH_ROWS,
      },
    );
  } catch (e) {
    if (e instanceof Error && e.message.startsWith("[unsupported]")) return null;
    throw fileError(e, req.files);
  }
  if (merge === null) return null;
  const target = toArrowSchema(req.output);
  const produced = arrow.tableFromIPC(merge.schema()).schema;
  // The addon's columns are the files' own types: the batches are the JS merge's only when they are the read's.
  if (produced.fields.length !== target.fields.length || !produced.fields.every((f, k) => arrow.util.compareTypes(f.type, target.fields[k]!.type))) return null;
  for (const f of req.files) f.bytes = new Uint8Array(0);
  return batches(merge, target, req.files);
}

async function* batches(merge: NativeBucketMerge, target: arrow.Schema, files: readonly NativeMergeFile[]): AsyncGenerator<arrow.RecordBatch> {
  const decoder = new IpcStreamDecoder();
  const struct = new arrow.Struct(target.fields);
  try {
    for (;;) {
      let stream: Uint8Array | null;
      try {
        stream = merge.next();
      } catch (e) {
        throw fileError(e, files);
      }
      if (stream === null) return;
      for (const b of decoder.decode(stream)) {
        // The read's schema (its field names and nullability) over the addon's columns, of the same types.
        yield new arrow.RecordBatch(target, arrow.makeData({ type: struct, length: b.numRows, nullCount: 0, children: b.data.children }));
      }
    }
  } finally {
    // A read that stops early lets the bucket's bytes and decoded batches go now, not at the next collection.
    merge.close();
  }
}

/** The addon's error as the JS merge would raise it: a file's index, or the row-count mismatch as such. */
function fileError(e: unknown, files: readonly NativeMergeFile[]): unknown {
  if (!(e instanceof Error)) return e;
  const file = /^\[file (\d+)\] ([\s\S]*)$/.exec(e.message);
  if (file !== null) return new NativeMergeFileError(Number(file[1]), file[2]!);
  const rows = /^\[rows (\d+) (\d+)\]/.exec(e.message);
  if (rows !== null) {
    const f = files[Number(rows[1])]!;
    try {
      checkRowCount(Number(rows[2]), f.meta, f.path);
    } catch (mismatch) {
      return mismatch;
    }
  }
  return e;
}
