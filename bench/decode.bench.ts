/**
 * Ingest decoding benchmark (a benchmark, not a test): 1M rows of the bench shape as producer RowBatches (500 rows
 * each), decoded in jobs of 64 messages — as a writer fetches them — by the generic path (msgpackr, then the
 * builders' rules), by the JavaScript direct path (msgpack bytes straight into Arrow builders) and, when the addon is
 * built, by the native one (actors/ingest/native-decode.ts). Prints rows/s and CPU seconds per million rows of each,
 * medians of 5 rounds in which the paths alternate (after a warm-up pass each), and the ratios. Then the bucket
 * buffer's whole job on this thread (actors/ingest/bucket-buffer.ts: append every job, flush — a Parquet encode — after
 * each, as a writer's worker does under load) with the JavaScript and the native decode, alternating the same way.
 *
 *   node --import tsx bench/decode.bench.ts [rows]
 * Its figures go to the benchmark results file too (bench/figures.ts, section `decode`).
 */
import { loadavg } from "node:os";
import { BucketBuffer } from "../actors/ingest/bucket-buffer.ts";
import { decodeSized, packPayloads, type IngestPayloads } from "../actors/ingest/decode.ts";
import { nativeDecoderFor } from "../actors/ingest/native-decode.ts";
import { encodeRowBatch } from "../actors/wire/row-batch.ts";
import { assignFieldIds, parseColumnList } from "../src/format/data-types.ts";
import { TableWrite } from "../src/write/table-write.ts";
import { createTable, tempDir } from "../test/helpers/tables.ts";
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

type Path = "generic" | "direct" | "native";
const OPTS: Record<Path, { direct?: boolean; native?: boolean }> = { generic: { direct: false }, direct: { native: false }, native: {} };

/** One pass over every job on `path`: its wall and CPU seconds. */
function pass(path: Path): { secs: number; cpuSecs: number } {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let rows = 0;
  for (const j of jobs) {
    const r = decodeSized(fields, j, OPTS[path]);
    rows += r.rows;
    r.builder?.finish();
  }
  if (rows !== ROWS) throw new Error(`decoded ${rows} rows on the ${path} path, expected ${ROWS}`);
  const cpu = process.cpuUsage(cpu0);
  return { secs: (performance.now() - t0) / 1000, cpuSecs: (cpu.user + cpu.system) / 1e6 };
}

// The paths alternate, their order turning each round, so that a change of the machine's load falls on all of them.
const paths: Path[] = nativeDecoderFor(fields) === null ? ["generic", "direct"] : ["generic", "direct", "native"];
const runs = new Map<Path, Array<{ secs: number; cpuSecs: number }>>(paths.map((p) => [p, []]));
for (const p of paths) pass(p); // warm-up
for (let round = 0; round < 5; round++) for (let k = 0; k < paths.length; k++) {
  const p = paths[(round + k) % paths.length]!;
  runs.get(p)!.push(pass(p));
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const rate = (p: Path): number => ROWS / median(runs.get(p)!.map((r) => r.secs));
const cpuPerMillion = (p: Path): number => (median(runs.get(p)!.map((r) => r.cpuSecs)) * 1e6) / ROWS;

/** CPU seconds per million rows of a bucket buffer's append + flush of every job, the native decode on or off. */
async function bucketBufferCpu(): Promise<{ js: number; native: number } | null> {
  if (!runs.has("native")) return null;
  const dir = tempDir();
  try {
    const table = await createTable(dir.path, "bench.decode", BENCH_COLUMNS);
    const spec = { fields: table.schema.fields, ...new TableWrite(table, { encoderPool: null }).encodeSpec };
    const buffer = new BucketBuffer(spec);
    const once = (native: boolean): number => {
      // Read at every decode (native-decode.ts), so the switch takes effect at once.
      process.env["NATSLAKE_DECODE_NATIVE"] = native ? "" : "0";
      const cpu0 = process.cpuUsage();
      for (const j of jobs) {
        buffer.append(j);
        buffer.flush();
      }
      const cpu = process.cpuUsage(cpu0);
      return ((cpu.user + cpu.system) / 1e6) * (1e6 / ROWS);
    };
    const before = process.env["NATSLAKE_DECODE_NATIVE"];
    try {
      once(false);
      once(true);
      const js: number[] = [];
      const native: number[] = [];
      for (let round = 0; round < 5; round++) {
        for (const withNative of round % 2 === 0 ? [false, true] : [true, false]) (withNative ? native : js).push(once(withNative));
      }
      return { js: median(js), native: median(native) };
    } finally {
      if (before === undefined) delete process.env["NATSLAKE_DECODE_NATIVE"];
      else process.env["NATSLAKE_DECODE_NATIVE"] = before;
    }
  } finally {
    dir.cleanup();
  }
}
const bucket = await bucketBufferCpu();

const fmt = (p: Path): string => `${(rate(p) / 1e6).toFixed(2)}M rows/s, ${cpuPerMillion(p).toFixed(3)} CPU s per million rows`;
const lines = [
  `ingest decoding, ${ROWS.toLocaleString("en-US")} rows of the bench shape in 500-row batches, jobs of 64 messages, one thread (medians of 5 alternating rounds; load ${loadavg().map((l) => l.toFixed(2)).join(" ")})`,
  `  generic (msgpackr + builders)      ${fmt("generic")}`,
  `  direct (bytes → builders, JS)      ${fmt("direct")}`,
  `  direct / generic                   ${(rate("direct") / rate("generic")).toFixed(2)}×`,
];
if (runs.has("native")) {
  lines.push(`  native (addon → bulk appends)      ${fmt("native")}`, `  native / direct                    ${(rate("native") / rate("direct")).toFixed(2)}× rows/s, ${(cpuPerMillion("native") / cpuPerMillion("direct")).toFixed(2)}× CPU`);
} else lines.push("  native: the addon is not built (scripts/setup.sh), or NATSLAKE_DECODE_NATIVE=0");
if (bucket !== null) {
  lines.push(
    `bucket buffer, append + flush (Parquet encode) of every job on this thread, medians of 5 alternating rounds`,
    `  JavaScript decode ${bucket.js.toFixed(3)}, native decode ${bucket.native.toFixed(3)} CPU s per million rows: ${(bucket.native / bucket.js).toFixed(2)}×`,
  );
}
process.stdout.write(lines.join("\n") + "\n");
const r3 = (x: number): number => Math.round(x * 1000) / 1000;
recordFigures("decode", {
  rows: ROWS,
  generic_rows_per_sec: Math.round(rate("generic")),
  direct_rows_per_sec: Math.round(rate("direct")),
  direct_vs_generic_ratio: r3(rate("direct") / rate("generic")),
  direct_cpu_s_per_million_rows: r3(cpuPerMillion("direct")),
  ...(runs.has("native")
    ? {
        native_rows_per_sec: Math.round(rate("native")),
        native_cpu_s_per_million_rows: r3(cpuPerMillion("native")),
        native_vs_direct_ratio: r3(rate("native") / rate("direct")),
      }
    : {}),
  ...(bucket !== null
    ? {
        bucket_buffer_js_cpu_s_per_million_rows: r3(bucket.js),
        bucket_buffer_native_cpu_s_per_million_rows: r3(bucket.native),
      }
    : {}),
});
