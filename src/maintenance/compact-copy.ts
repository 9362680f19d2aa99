/**
 * One compaction output written by copying the inputs' large row groups byte for byte and re-encoding only their
 * small ones (src/codec/parquet-stitch.ts).
 *
 * Why: the writers' size-ratio pick merges a bucket's files into ones about twice as large, level by level, so every
 * row is rewritten once per level — ~7 times in a 10-minute run at 250 ms commits, each time a decode and an encode
 * (issue 10: node CPU per 1M rows 57 s with maintenance on against 27 s off). A row group that is already large gains
 * nothing from being decoded and encoded again: the same pages come out. So row groups of at least
 * `natslake.compaction.copy-row-group-rows` rows are copied; so are the small ones (flushes' files) at the output's
 * end until they add up to that many rows, when they are decoded and encoded together into large groups — in a few
 * steps per row rather than once per merge (`reencodedFrom`). Rows keep their order: pieces are laid out in input order, row
 * group by row group.
 *
 * Statistics: the output holds exactly the inputs' rows, so its value statistics are the inputs' merged (min of
 * minimums, max of maximums, null counts summed) — no pass over the values. A column whose bounds an input does not
 * know (null bounds over non-null values: NaN, a string with no short upper bound, `counts` mode) has unknown bounds
 * in the output too.
 *
 * Eligible inputs: Parquet files of the table's current schema whose statistics cover the columns this writer's do
 * (a file written through an older schema or with other statistics columns is rewritten as before). When the footers
 * disagree (another writer's key/value metadata, a file from an older natslake), the caller rewrites the group.
 */
import type * as arrow from "apache-arrow";
import { Table as ArrowTable } from "apache-arrow";
import { ErrorKind, LakeError } from "../errors.ts";
import { compareValues } from "../codec/stats.ts";
import { parquetFooter, stitchParquet, type StitchPiece } from "../codec/parquet-stitch.ts";
import type { ParquetEncoderPool } from "../codec/parquet-pool.ts";
import { decodeDataFileRowGroups } from "../scan/read.ts";
import { deserializeBinaryRow, serializeBinaryRow } from "../format/binary-row.ts";
import type { DataField } from "../format/data-types.ts";
import { EMPTY_STATS, type DataFileMeta, type SimpleStats } from "../format/manifest.ts";
import type { Value } from "../format/values.ts";
import type { Table } from "../table/table.ts";
import type { DataFileWriter } from "../write/data-file-writer.ts";

/** What copying saved or cost in one output (for the compaction's summary and metrics). */
export interface CopyStats {
  rowsCopied: number;
  rowsReencoded: number;
}

export type CopyOutcome = { kind: "written"; file: DataFileMeta; stats: CopyStats } | { kind: "not-eligible"; reason: string };

const sameCols = (a: readonly string[] | null, b: readonly string[] | null): boolean =>
  a === null || b === null ? a === b : a.length === b.length && a.every((x, k) => x === b[k]);

/** Why `file` cannot be copied from in `table` by `writer`, or null when it can. */
export function copyIneligibility(table: Table, writer: DataFileWriter, file: DataFileMeta): string | null {
  if (!file.fileName.endsWith(".parquet")) return `${file.fileName} is not Parquet`;
  if (file.schemaId !== table.schema.id) return `${file.fileName} has schema ${file.schemaId}, not ${table.schema.id}`;
  if (!sameCols(file.valueStatsCols, writer.valueStatsLayout.cols)) return `${file.fileName} has statistics of other columns`;
  return null;
}

/**
 * Writes `group` (consecutive inputs of one bucket, in sequence order) as one data file whose rows take sequence
 * numbers from `firstSeq`, copying row groups of at least `copyMinRows` rows. `not-eligible` when an input cannot be
 * copied from or the footers disagree: the caller rewrites the group (nothing was written then).
 */
export async function writeByCopy(
  table: Table,
  writer: DataFileWriter,
  where: { partitionPath: string; bucket: number },
  group: readonly DataFileMeta[],
  firstSeq: bigint,
  copyMinRows: number,
  pool: ParquetEncoderPool | null,
  onPath: (path: string) => void,
): Promise<CopyOutcome> {
  for (const f of group) {
    const why = copyIneligibility(table, writer, f);
    if (why !== null) return { kind: "not-eligible", reason: why };
  }
  const inputs = await Promise.all(
    group.map(async (file) => {
      const path = table.paths.dataFilePath(where.partitionPath, where.bucket, file.fileName, file.externalPath);
      const bytes = await table.io.readFile(path);
      // Parsed once: for the row counts here, and for every stitch of its groups below.
      const footer = parquetFooter(bytes);
      const groupRows = footer.groupRows;
      const total = groupRows.reduce((n, r) => n + r, 0);
      if (total !== file.rowCount) throw new LakeError(ErrorKind.DataInvalid, `data file ${path} has ${total} rows but its manifest entry says ${file.rowCount}`, { context: { path } });
      return { file, path, bytes, footer, groupRows };
    }),
  );

  // Row group by row group in input order: a large one is a piece of its own file; runs of small ones (across files)
  // are decoded and encoded together into a piece — the output's last run only in part or not at all while it is
  // below `copyMinRows` (reencodedFrom).
  const pieces: StitchPiece[] = [];
  const stats: CopyStats = { rowsCopied: 0, rowsReencoded: 0 };
  let run: Array<{ input: (typeof inputs)[number]; rowGroups: number[]; rows: number }> = [];
  const copyPiece = (input: (typeof inputs)[number], rowGroups: number[], rows: number): void => {
    const last = pieces[pieces.length - 1];
    // Consecutive groups of one file stay one piece.
    if (last !== undefined && last.bytes === input.bytes) (last.rowGroups as number[]).push(...rowGroups);
    else pieces.push({ bytes: input.bytes, rowGroups: [...rowGroups], footer: input.footer });
    stats.rowsCopied += rows;
  };
  /**
   * Decodes row groups of the inputs (in order) in one call: copied into a file of their own first (stitchParquet), so
   * the worker gets only their bytes — not every input whole (a large input's tail is a few groups of megabytes) —
   * and one decode instead of one per input. Inputs whose footers disagree are decoded one by one.
   */
  const decodeGroups = async (of: ReadonlyArray<{ input: (typeof inputs)[number]; g: number; rows: number }>, rows: number): Promise<arrow.RecordBatch[]> => {
    const parts: Array<{ input: (typeof inputs)[number]; rowGroups: number[]; rows: number }> = [];
    for (const x of of) {
      const open = parts[parts.length - 1];
      if (open !== undefined && open.input === x.input) {
        open.rowGroups.push(x.g);
        open.rows += x.rows;
      } else parts.push({ input: x.input, rowGroups: [x.g], rows: x.rows });
    }
    const alone = stitchParquet(parts.map((p) => ({ bytes: p.input.bytes, rowGroups: p.rowGroups, footer: p.input.footer })));
    if (alone.kind === "stitched") {
      const first = parts[0]!.input;
      return decodeDataFileRowGroups(table, first.file, first.path, alone.bytes, of.map((_, k) => k), rows, pool);
    }
    const batches: arrow.RecordBatch[] = [];
    for (const p of parts) batches.push(...(await decodeDataFileRowGroups(table, p.input.file, p.input.path, p.input.bytes, p.rowGroups, p.rows, pool)));
    return batches;
  };
  const flushRun = async (last: boolean): Promise<void> => {
    // The run group by group (a run holds each input's groups as one entry).
    const groups = run.flatMap((r) => r.rowGroups.map((g) => ({ input: r.input, g, rows: r.input.groupRows[g]! })));
    run = [];
    const from = reencodedFrom(groups.map((x) => x.rows), last, copyMinRows);
    for (const x of groups.slice(0, from)) copyPiece(x.input, [x.g], x.rows);
    if (from === groups.length) return;
    const encoded = groups.slice(from);
    const rows = encoded.reduce((n, x) => n + x.rows, 0);
    const batches = await decodeGroups(encoded, rows);
    const bytes = await writer.encodeBytes(new ArrowTable(batches[0]!.schema, batches));
    const footer = parquetFooter(bytes);
    pieces.push({ bytes, rowGroups: footer.groupRows.map((_, k) => k), footer });
    stats.rowsReencoded += rows;
  };
  for (const input of inputs) {
    for (const [g, rows] of input.groupRows.entries()) {
      if (rows >= copyMinRows) {
        await flushRun(false);
        copyPiece(input, [g], rows);
      } else if (rows > 0) {
        const open = run[run.length - 1];
        if (open !== undefined && open.input === input) {
          open.rowGroups.push(g);
          open.rows += rows;
        } else run.push({ input, rowGroups: [g], rows });
      }
    }
  }
  await flushRun(true);
  const rowCount = group.reduce((n, f) => n + f.rowCount, 0);
  const stitched = stitchParquet(pieces);
  if (stitched.kind === "refused") return { kind: "not-eligible", reason: stitched.reason };
  if (stitched.rows !== rowCount) throw new LakeError(ErrorKind.Unexpected, `a compaction of ${table.name} bucket ${where.bucket} stitched ${stitched.rows} rows from files whose manifest entries say ${rowCount}`);
  const [file] = await writer.persistEncoded(where.partitionPath, where.bucket, [{ bytes: stitched.bytes, rowCount, valueStats: mergedValueStats(writer.valueStatsLayout.fields, group) }], firstSeq, onPath);
  return { kind: "written", file: file!, stats };
}

/**
 * The output's last run is encoded in steps: its newest small groups below `copyMinRows` / d, for each d here from the
 * first, into one group once they add up to that many rows, and the whole run once it holds `copyMinRows` rows. A row
 * is then encoded about 2.7 times after its flush rather than once per merge (4.8), while a bucket holds ~8 small
 * groups on average (4 when every merge encoded its last run; 22 with the one step `copyMinRows` / 8: rows encoded
 * 1.8 times) — in a model of 10 minutes of 417-row flushes (unit test compact-copy-runs). Each small group costs a
 * reader a decode of its own: 0.38 ms more per group of 417 bench rows than in one group of 32k before the zstd context
 * pool, 20–50 µs since — yet one step (1/4) still measured a maintained scan of 0.66× a batch-written one.
 */
export const MIDDLE_GROUP_DIVISORS: readonly number[] = [4, 16];

/**
 * Of a run of consecutive small row groups (rows of each, fewer than `copyMinRows`; oldest first), the index of the
 * first group to decode and encode into new groups — those before it are copied as they are; `rows.length`: copy all.
 * One group alone is copied (encoding it again gives the same group). A run followed by a large group is encoded
 * whole: it can never grow, and merging it bounds the file's groups. The output's last run (`last`) grows with the
 * bucket's next merges, and encoding it at every merge rewrote every row once per level of the writers' size-ratio
 * pick, while copying costs no decode and no encode; so it is encoded whole only once it holds `copyMinRows` rows,
 * and before that only its newest groups below a middle size, once they make one (MIDDLE_GROUP_DIVISORS).
 */
export function reencodedFrom(rows: readonly number[], last: boolean, copyMinRows: number): number {
  if (rows.length <= 1) return rows.length;
  if (!last || rows.reduce((n, r) => n + r, 0) >= copyMinRows) return 0;
  for (const divisor of MIDDLE_GROUP_DIVISORS) {
    const middle = copyMinRows / divisor;
    let from = rows.length;
    let sum = 0;
    while (from > 0 && rows[from - 1]! < middle) sum += rows[--from]!;
    if (rows.length - from >= 2 && sum >= middle) return from;
  }
  return rows.length;
}

/**
 * The value statistics of the union of `files`' rows, from theirs: bounds merged, null counts summed; a column's
 * bounds are unknown (null) when any file's are unknown while it holds non-null values in that column.
 */
export function mergedValueStats(fields: readonly DataField[], files: readonly DataFileMeta[]): SimpleStats {
  if (fields.length === 0) return EMPTY_STATS;
  const types = fields.map((f) => f.type);
  const min: Value[] = new Array<Value>(fields.length).fill(null);
  const max: Value[] = new Array<Value>(fields.length).fill(null);
  const nulls: Array<bigint | null> = new Array<bigint | null>(fields.length).fill(0n);
  const unknown = new Array<boolean>(fields.length).fill(false);
  for (const f of files) {
    const lo = deserializeBinaryRow(types, f.valueStats.minValues);
    const hi = deserializeBinaryRow(types, f.valueStats.maxValues);
    for (let k = 0; k < fields.length; k++) {
      const n = f.valueStats.nullCounts[k] ?? null;
      const count = nulls[k] ?? null;
      nulls[k] = n === null || count === null ? null : count + n;
      const a = lo[k] ?? null;
      const b = hi[k] ?? null;
      if (a === null || b === null) {
        // No bounds: either every value is null (nothing to merge) or the bounds are unknown.
        if (n === null || n < BigInt(f.rowCount)) unknown[k] = true;
        continue;
      }
      const t = types[k]!;
      if (min[k] === null || compareValues(t, a, min[k]!) < 0) min[k] = a;
      if (max[k] === null || compareValues(t, b, max[k]!) > 0) max[k] = b;
    }
  }
  for (let k = 0; k < fields.length; k++) if (unknown[k]) min[k] = max[k] = null;
  return { minValues: serializeBinaryRow(types, min), maxValues: serializeBinaryRow(types, max), nullCounts: nulls };
}
