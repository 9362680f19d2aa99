/**
 * Java Paimon 1.4.2 as the oracle of natslake's primary-key tables: test/compat/java/PaimonPk.java (compiled by
 * scripts/setup.sh with the other oracles), one JVM per call, every request of the call answered in order. Values go
 * both ways in the oracles' JSON form (`toJava` / `fromJava` in java.ts); rows come back rendered like natslake's
 * `readJson`, so results compare with natslake's own reads directly.
 *
 * - `javaPkRead`: batch reads at a snapshot id, a tag or the latest, with a projection.
 * - `javaPkStream`: Java's streaming read (ReadBuilder.newStreamScan()) from its starting point until no snapshot is
 *   left, every row with its RowKind and the snapshot it came from. What Java yields (DataTableStreamScan and the
 *   scanners it picks, checked in Paimon's 1.4.2 sources; PaimonPk.java's comment has the class names):
 *     first plan — `scan.mode` latest-full (the default) or from-snapshot-full: the whole table at the latest (or
 *       the given) snapshot, as a batch read gives it: the live rows only; a bucket read merged gives each row the
 *       kind of its surviving version (+I, or +U when the key's last write was a +U), a bucket Java reads as it is
 *       (raw-convertible: e.g. one file without retractions) gives +I throughout; from-snapshot
 *       (`scan.snapshot-id` = N): no rows, reading begins at N;
 *     then one plan per later snapshot the follow-up scanner takes —
 *       changelog-producer = none: APPEND snapshots only; their new data files read without merging and with deletes
 *       kept, so per commit and key what the writer kept after folding the commit's changes (one row: the last
 *       change, -D/-U included);
 *       changelog-producer = input: snapshots with a changelog; their changelog files, every change as it was
 *       written, with its kind, in key order within a bucket and write order within a key;
 *     COMPACT snapshots add nothing in either mode.
 * - `javaPkWrite`: Java's batch writer (one BatchWriteBuilder, hence one commit, per batch; rows with their kinds)
 *   into an existing table, restoring each bucket it touches from natslake's files; then optionally a full
 *   compaction of every bucket. A Java exception comes back as `error` with the commits made before it.
 * - `javaPkCreate`: CREATE TABLE through Java's FileSystemCatalog: the schema Java stored, or its exact error.
 * - `delete-rows` (a request of `javaPk`): deletion vectors of an append table as Spark's DELETE writes them, for row
 *   positions of data files of the latest snapshot ("*": of each).
 * - `javaPkBenchWrite`: Java's single-threaded TableWrite of generated upserts (bench/shape.ts `benchUpsertRow`),
 *   after a warm-up run, with the full JIT; wall, thread and process CPU time of the measured run.
 * - `javaPkBenchRead`: Java's full batch reads of existing tables, after warm-up reads, with the full JIT; rows, wall
 *   and CPU time of the measured reads and a checksum of the rows (see `JavaReadFigures`).
 */
import type { TableSchemaJson } from "../../src/format/schema.ts";
import { assignFieldIds, parseColumnList, typeToJson, type TypeJson } from "../../src/format/data-types.ts";
import { toCanonical } from "../../src/format/values.ts";
import { ROW_KIND_COLUMN, type RowKindName } from "../../src/lsm/row-kind.ts";
import type { Table } from "../../src/table/table.ts";
import { javaRowToJson, runJavaOracle, toJava } from "./java.ts";

type JsonRow = Record<string, unknown>;

/** The requests PaimonPk.java answers, in its wire form (values as `toJava` renders them). */
export type JavaPkRequest =
  | { op: "read"; table: string; snapshotId?: number; tag?: string; columns?: string[] }
  | { op: "stream"; table: string; options?: Record<string, string>; columns?: string[]; maxPlans?: number }
  | { op: "write"; table: string; batches: Array<Array<{ kind: RowKindName; row: JsonRow; bucket?: number }>>; compact?: boolean }
  | { op: "create"; table: string; fields: Array<{ name: string; type: TypeJson }>; partitionKeys?: string[]; primaryKeys?: string[]; options?: Record<string, string> }
  | { op: "bench-write"; rows?: number; warmupRows?: number; buckets?: number; options?: Record<string, string>; table?: string; sparseUpdates?: boolean }
  | { op: "bench-read"; table: string; reads?: number; warmupReads?: number }
  | { op: "delete-rows"; table: string; positions: Record<string, number[]> };

/** The JIT as a benchmark wants it: none of the oracle's C1-only flags. */
const BENCH_JVM_FLAGS: readonly string[] = ["-Xshare:auto"];

/**
 * Runs `requests` in one PaimonPk JVM against the warehouse directory; one raw JSON result per request (an `error`
 * field when Java failed it). Rejects when Java crashes or answers a different number of requests.
 */
export async function javaPk(warehouse: string, requests: readonly JavaPkRequest[], opts: { timeoutMs?: number; jvmFlags?: readonly string[] } = {}): Promise<JsonRow[]> {
  const input = JSON.stringify({ warehouse, requests });
  const { stdout, stderr } = await runJavaOracle("PaimonPk", [], input, opts.timeoutMs ?? 300_000, opts.jvmFlags);
  const lines = stdout.split("\n").filter((l) => l.trim() !== "");
  if (lines.length !== requests.length) throw new Error(`PaimonPk printed ${lines.length} results for ${requests.length} requests\n${stdout}\n${stderr}`);
  return lines.map((l) => JSON.parse(l) as JsonRow);
}

export type JavaPkReadResult = { rows: JsonRow[]; snapshotIds: number[]; error?: undefined } | { error: string; rows?: undefined };

/** Java's batch read of `table` at each point (`{}`: the latest), rows rendered like `readJson`, in Java's split order. */
export async function javaPkRead(warehouse: string, table: Table, reads: ReadonlyArray<{ snapshotId?: number; tag?: string; columns?: string[] }>): Promise<JavaPkReadResult[]> {
  return javaPkReadTables(
    warehouse,
    reads.map((r) => ({ table, ...r })),
  );
}

/** `javaPkRead` of several tables in one JVM: each read names its table. */
export async function javaPkReadTables(warehouse: string, reads: ReadonlyArray<{ table: Table; snapshotId?: number; tag?: string; columns?: string[] }>): Promise<JavaPkReadResult[]> {
  const results = await javaPk(
    warehouse,
    reads.map(({ table, ...r }) => ({ op: "read" as const, table: table.name, ...r })),
  );
  return results.map((res, i) => javaReadResult(res, reads[i]!.table, reads[i]!.columns));
}

/** What PaimonPk answered to a read of `table` (with `columns`), rows rendered like `readJson`. */
export function javaReadResult(res: JsonRow, table: Table, columns?: string[]): JavaPkReadResult {
  if (typeof res["error"] === "string") return { error: res["error"] };
  return { rows: (res["rows"] as JsonRow[]).map(javaRowToJson(table, columns)), snapshotIds: res["snapshotIds"] as number[] };
}

export interface JavaChange {
  /** The snapshot of the split the row came from. */
  snapshotId: number;
  kind: RowKindName;
  /** Rendered like `readJson`. */
  row: JsonRow;
}

export type JavaPkStreamResult =
  | { changes: JavaChange[]; plans: Array<{ snapshotIds: number[]; rows: number }>; nextSnapshotId: number | null; error?: undefined }
  | { error: string; changes?: undefined };

/**
 * Java's streaming reads of `table`, one per entry: its dynamic options (`scan.mode`, `scan.snapshot-id`, …) and
 * projection; see the file comment for what each yields.
 */
export async function javaPkStream(warehouse: string, table: Table, streams: ReadonlyArray<{ options?: Record<string, string>; columns?: string[] }>): Promise<JavaPkStreamResult[]> {
  const results = await javaPk(
    warehouse,
    streams.map((s) => ({ op: "stream" as const, table: table.name, ...s })),
  );
  return results.map((res, i) => {
    if (typeof res["error"] === "string") return { error: res["error"] };
    const render = javaRowToJson(table, streams[i]!.columns);
    const changes = (res["changes"] as JavaChange[]).map((c) => ({ ...c, row: render(c.row) }));
    return { changes, plans: res["plans"] as Array<{ snapshotIds: number[]; rows: number }>, nextSnapshotId: res["nextSnapshotId"] as number | null };
  });
}

export interface JavaCommit {
  /** The batch's index, or "compact". */
  batch: number | "compact";
  /** The snapshots the commit made (an APPEND, and a COMPACT when the writer compacted). */
  snapshots: Array<{ id: number; commitKind: "APPEND" | "COMPACT" | "OVERWRITE" | "ANALYZE" }>;
}

/**
 * Java writes `batches` into the existing `table`, one commit each: rows in natslake's input form (what
 * `BatchWriter.write` takes), `_row_kind` giving the kind (default +I); a column left out is null. `bucket` chooses
 * the bucket per row (BatchTableWrite.write(row, bucket)); by default Java computes it. `compact`: then a full
 * compaction of every bucket of the latest snapshot, one more commit. `error` holds Java's exception when a commit
 * failed; `commits` what was committed before.
 */
export async function javaPkWrite(
  warehouse: string,
  table: Table,
  batches: ReadonlyArray<readonly JsonRow[]>,
  opts: { compact?: boolean; bucket?: (row: JsonRow) => number } = {},
): Promise<{ commits: JavaCommit[]; error?: string }> {
  const [res] = await javaPkWriteTables(warehouse, [{ table, batches, ...opts }]);
  return res!;
}

/** `javaPkWrite` into several tables in one JVM, one after the other. */
export async function javaPkWriteTables(warehouse: string, writes: readonly JavaWriteSpec[]): Promise<Array<{ commits: JavaCommit[]; error?: string }>> {
  const results = await javaPk(warehouse, writes.map(javaPkWriteRequest));
  return results.map(javaWriteResult);
}

/** A write of `javaPkWriteTables`: the table (its name and fields: one Java creates in the same run will do). */
export interface JavaWriteSpec {
  table: Pick<Table, "name"> & { schema: Pick<Table["schema"], "fields"> };
  batches: ReadonlyArray<readonly JsonRow[]>;
  compact?: boolean;
  bucket?: (row: JsonRow) => number;
}

/** The PaimonPk request of a write. */
export function javaPkWriteRequest({ table, batches, compact, bucket }: JavaWriteSpec): JavaPkRequest {
  const fields = table.schema.fields;
  const wire = batches.map((batch) =>
    batch.map((input) => {
      const kind = (input[ROW_KIND_COLUMN] as RowKindName | undefined) ?? "+I";
      const row: JsonRow = {};
      for (const f of fields) {
        const v = input[f.name];
        row[f.name] = v === undefined || v === null ? null : toJava(f.type, toCanonical(f.type, v, f.name));
      }
      return bucket === undefined ? { kind, row } : { kind, row, bucket: bucket(input) };
    }),
  );
  return { op: "write", table: table.name, batches: wire, compact: compact ?? false };
}

/** What PaimonPk answered to a write request. */
export function javaWriteResult(res: JsonRow): { commits: JavaCommit[]; error?: string } {
  const commits = (res["commits"] as JavaCommit[] | undefined) ?? [];
  return typeof res["error"] === "string" ? { commits, error: res["error"] } : { commits };
}

export interface JavaCreateSpec {
  /** `db.table` */
  table: string;
  /** SQL column list, as natslake's `parseColumnList` reads it. */
  columns: string;
  partitionKeys?: string[];
  primaryKeys?: string[];
  options?: Record<string, string>;
}

/** Java creates each table (in this warehouse, so names must be new): the schema it stored, or its exact error. */
export async function javaPkCreate(warehouse: string, specs: readonly JavaCreateSpec[]): Promise<Array<{ schema: TableSchemaJson; error?: undefined } | { error: string; schema?: undefined }>> {
  const results = await javaPk(warehouse, specs.map(javaPkCreateRequest));
  return results.map((res) => (typeof res["error"] === "string" ? { error: res["error"] } : { schema: res["schema"] as TableSchemaJson }));
}

/** The PaimonPk request of a create. */
export function javaPkCreateRequest(s: JavaCreateSpec): JavaPkRequest {
  const { fields } = assignFieldIds(parseColumnList(s.columns).map((c) => ({ id: -1, ...c })));
  return {
    op: "create",
    table: s.table,
    fields: fields.map((f) => ({ name: f.name, type: typeToJson(f.type) })),
    partitionKeys: s.partitionKeys ?? [],
    primaryKeys: s.primaryKeys ?? [],
    options: s.options ?? {},
  };
}

export interface JavaBenchFigures {
  rows: number;
  /** Distinct keys among the rows. */
  keys: number;
  buckets: number;
  /** Rows of the warm-up run (not measured). */
  warmupRows: number;
  wallMs: number;
  rowsPerSec: number;
  /** CPU time of the writing thread. */
  threadCpuMs: number;
  /** CPU time of the whole JVM (the writing thread, compaction threads, GC, JIT). */
  processCpuMs: number;
  gcMs: number;
  snapshotId: number;
  commitKind: string;
  /** Rows in the table after the commit (= keys). */
  rowCount: number;
  files: number;
  options: Record<string, string>;
  jvm: string;
  maxHeapMb: number;
}

/** One run of Java's write benchmark: the table options and, optionally, the measured table's name and sparse updates. */
export interface JavaBenchWriteSpec {
  rows?: number;
  warmupRows?: number;
  buckets?: number;
  options?: Record<string, string>;
  /** `db.table` of the measured run (default bench.measured). */
  table?: string;
  /** The updating rows (every tenth) have `event` and `qty` null (bench/shape.ts `benchSparseUpsertRow`). */
  sparseUpdates?: boolean;
}

/** Java's write benchmark (see PaimonPk.java): tables bench.warmup and bench.measured in a scratch warehouse. */
export async function javaPkBenchWrite(warehouse: string, opts: JavaBenchWriteSpec = {}): Promise<JavaBenchFigures> {
  const [res] = await javaPkBenchWrites(warehouse, [opts]);
  return res!;
}

/** Several runs of Java's write benchmark in one JVM, one after the other (each with its own warm-up run). */
export async function javaPkBenchWrites(warehouse: string, runs: readonly JavaBenchWriteSpec[]): Promise<JavaBenchFigures[]> {
  const results = await javaPk(
    warehouse,
    runs.map((r) => ({ op: "bench-write" as const, ...r })),
    { timeoutMs: 1_200_000, jvmFlags: BENCH_JVM_FLAGS },
  );
  return results.map((res, i) => {
    if (typeof res["error"] === "string") throw new Error(`Java's write benchmark ${runs[i]!.table ?? "bench.measured"} failed: ${res["error"]}`);
    return res as unknown as JavaBenchFigures;
  });
}

/** Per column of a read: its nulls and the wrapping 64-bit sum (as decimal text) of a value per non-null row. */
export type ReadChecksum = Record<string, { nulls: number; sum: string }>;

export interface JavaReadFigures {
  /** Rows each read gave (every read gives the same, or Java's run fails). */
  rows: number;
  reads: number;
  warmupReads: number;
  /** Wall time of the measured reads together, and each. */
  wallMs: number;
  readMs: number[];
  rowsPerSec: number;
  threadCpuMs: number;
  processCpuMs: number;
  gcMs: number;
  /** Of the first warm-up read: BIGINT/INT as they are, TIMESTAMP its epoch millis, DOUBLE its IEEE bits, STRING String.hashCode(). */
  checksum: ReadChecksum;
  splits: number;
  jvm: string;
}

/**
 * Java's read benchmark (PaimonPk.java `bench-read`): per table, `warmupReads` full batch reads (not measured; the JIT
 * compiles the read path), then `reads` measured ones, all in one JVM with the full JIT.
 */
export async function javaPkBenchRead(warehouse: string, tables: readonly string[], opts: { reads?: number; warmupReads?: number } = {}): Promise<JavaReadFigures[]> {
  const results = await javaPk(
    warehouse,
    tables.map((table) => ({ op: "bench-read" as const, table, ...opts })),
    { timeoutMs: 1_200_000, jvmFlags: BENCH_JVM_FLAGS },
  );
  return results.map((res, i) => {
    if (typeof res["error"] === "string") throw new Error(`Java's read benchmark of ${tables[i]} failed: ${res["error"]}`);
    return res as unknown as JavaReadFigures;
  });
}
