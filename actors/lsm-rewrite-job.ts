/**
 * One rewrite of a primary-key bucket's compaction, as it crosses into a worker thread (lsm-rewriter.ts): the table
 * named by its warehouse, directory and schema (plain data a worker can receive), the bucket's files and the plan.
 * `runLsmRewrite` is what the worker runs: src/maintenance/compact-pk.ts `executeBucketPlan` on the worker's own
 * thread — decoding, the merge and encoding all there, none on the writer's.
 */
import { warmUpParquet, warmUpParquetDecodeHere } from "../src/codec/warm-up.ts";
import { deserializeBinaryRow } from "../src/format/binary-row.ts";
import type { TableSchema } from "../src/format/schema.ts";
import { openWarehouse } from "../src/io/warehouse.ts";
import type { FileIO } from "../src/io/file-io.ts";
import type { BucketCompaction, BucketFiles } from "../src/lsm/compact-bucket.ts";
import type { CompactTaskPlan } from "../src/lsm/compact-task.ts";
import { executeBucketPlan } from "../src/maintenance/compact-pk.ts";
import { LruDecodedFileCache } from "../src/scan/lookup.ts";
import { Table, type Identifier } from "../src/table/table.ts";

/** What a worker needs to rewrite one bucket's plan. */
export interface LsmRewriteRequest {
  /** The warehouse as the node names it (a directory, or `s3://bucket/prefix?…`): the worker opens its own FileIO. */
  warehouse: string;
  identifier: Identifier;
  /** The table's directory as its FileIO names it (Table.root). */
  root: string;
  /** The writer's schema (its table handle's): files of a newer one are refused, as on the calling thread. */
  schema: TableSchema;
  bucket: BucketFiles;
  plan: CompactTaskPlan;
}

/** The request for `table`'s bucket and plan. */
export function lsmRewriteRequest(warehouse: string, table: Table, bucket: BucketFiles, plan: CompactTaskPlan): LsmRewriteRequest {
  return { warehouse, identifier: table.identifier, root: table.root, schema: table.schema, bucket, plan };
}

/** FileIOs by warehouse, one per worker thread (an S3 client keeps its connections). */
const ios = new Map<string, FileIO>();

/**
 * Lookup tables' files above a compaction's output level, decoded, per worker thread: a bucket's next compaction
 * looks its keys up in the same files (the max level changes seldom), so they are not decoded again each time.
 */
const LOOKUP_CACHE_BYTES = 64 * 1024 * 1024;
const lookupCache = new LruDecodedFileCache(LOOKUP_CACHE_BYTES);

/** Runs a request on this thread; `onPath` is told each output's path before the file is written. */
export async function runLsmRewrite(r: LsmRewriteRequest, onPath: (path: string) => void): Promise<BucketCompaction> {
  let io = ios.get(r.warehouse);
  if (io === undefined) ios.set(r.warehouse, (io = openWarehouse(r.warehouse).io));
  const table = new Table(r.identifier, r.root, io, r.schema);
  const partitionValues = deserializeBinaryRow(table.partitionTypes, r.bucket.partition);
  return executeBucketPlan(table, { bucket: r.bucket, partitionValues, plan: r.plan }, { pool: null, onPath, cache: lookupCache });
}

/**
 * Warms the Parquet encoder and decoder on this thread (see src/codec/warm-up.ts): a rewrite decodes its inputs and
 * encodes its outputs here, and a worker's first rewrites are then not the slow ones.
 */
export async function warmUpLsmRewrite(): Promise<void> {
  await warmUpParquet(null);
  await warmUpParquetDecodeHere();
}
