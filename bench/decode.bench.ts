/**
 * Ingest decoding benchmark (a benchmark, not a test): 1M rows of the bench shape as producer RowBatches (500 rows
 * each), decoded in jobs of 64 messages — as a writer fetches them — by the generic path (msgpackr, then the
 * builders' rules) and by the direct path (msgpack bytes straight into Arrow builders). Prints rows/s of each, best
 * of 3 after a warm-up run, and the ratio.
 *
 *   node --import tsx bench/decode.bench.ts [rows]
 * Its figures go to the benchmark results file too (bench/figures.ts, section `decode`).
 */
import { decodeSized, packPayloads, type IngestPayloads } from "../actors/ingest/decode.ts";
import { encodeRowBatch } from "../actors/wire/row-batch.ts";
import { assignFieldIds, parseColumnList } from "../src/format/data-types.ts";
import { BENCH_COLUMNS, benchInputRow } from "./shape.ts";
import { recordFigures } from "./figures.ts";

const ROWS = Number(process.argv[2] ?? 1_000_000);
const fields = assignFieldIds(parseColumnList(BENCH_COLUMNS).map((c) => ({ id: -1, ...c }))).fields;
const cols = fields.map((f) => f.name);
const messages: Array<{ seq: number; data: Uint8Array }> = [];
for (let start = 0; start < ROWS; start += 500) {
  const rows: unknown[][] = [];
  for (let i = start; i < Math.min(ROWS, start + 500); i++) {
    const r = benchInputRow(i);
    rows.push(cols.map((c) => r[c]));
  }
  messages.push({ seq: messages.length + 1, data: encodeRowBatch({ v: 1, schema: 0, cols, rows }) });
}
const jobs: IngestPayloads[] = [];
for (let i = 0; i < messages.length; i += 64) jobs.push(packPayloads(messages.slice(i, i + 64)));

function rate(direct: boolean): number {
  let best = 0;
  for (let run = 0; run < 4; run++) {
    const t0 = performance.now();
    let rows = 0;
    for (const j of jobs) {
      const r = decodeSized(fields, j, { direct });
      rows += r.rows;
      r.builder?.finish();
    }
    if (rows !== ROWS) throw new Error(`decoded ${rows} rows, expected ${ROWS}`);
    if (run > 0) best = Math.max(best, rows / ((performance.now() - t0) / 1000));
  }
  return best;
}

const generic = rate(false);
const direct = rate(true);
const fmt = (r: number): string => `${(r / 1e6).toFixed(2)}M rows/s`;
process.stdout.write(
  `ingest decoding, ${ROWS.toLocaleString("en-US")} rows of the bench shape in 500-row batches, jobs of 64 messages, one thread\n` +
    `  generic (msgpackr + builders) ${fmt(generic)}\n  direct (bytes → builders)     ${fmt(direct)}\n  direct / generic              ${(direct / generic).toFixed(2)}×\n`,
);
recordFigures("decode", {
  rows: ROWS,
  generic_rows_per_sec: Math.round(generic),
  direct_rows_per_sec: Math.round(direct),
  direct_vs_generic_ratio: Math.round((direct / generic) * 1000) / 1000,
});
