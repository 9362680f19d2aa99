/**
 * docs/benchmarks.md from the benchmark results file (bench/figures.ts), the last step of `npm run bench`: per
 * benchmark when it ran, the machine, the command that ran it, its targets met or missed, its figures, and its time
 * series as SVG charts (bench/charts.ts) in docs/benchmarks/. The results file the page was made from is written
 * beside the charts (docs/benchmarks/results.json) and committed with the page, so the page can be made again from
 * what is in git (a unit test does, and compares).
 *
 *   node --import tsx bench/report.ts [--file RESULTS] [--page PATH] [--stdout]
 *   (npm run bench:report; RESULTS: NATSLAKE_BENCH_JSON, else bench-results/latest.json; PATH: docs/benchmarks.md,
 *   its charts and results.json in the folder of its name, docs/benchmarks/; --stdout prints the page, writes nothing)
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { renderChart } from "./charts.ts";
import { benchJsonPath, readResults, writeResults, type BenchResults, type BenchSection, type FigureValue, type Series, type Target } from "./figures.ts";

/** The page `npm run bench:report` writes by default. */
export const DEFAULT_PAGE = fileURLToPath(new URL("../docs/benchmarks.md", import.meta.url));

/**
 * The sections `npm run bench` records, in the order it runs them: the page shows them in this order (a benchmark run
 * again alone does not move), any other after them, and says which of these a results file lacks.
 */
const SUITE = ["table_core", "decode", "scan_files", "cluster", "maintenance", "consumer", "pk_write", "cluster_pk", "pk_engines"];

/** The primary-key benchmarks (issue 27): the page sums them up once, before the first of their sections. */
const PRIMARY_KEY = ["pk_write", "cluster_pk"];
const PRIMARY_KEY_HEADING = "Primary-key tables";
const PRIMARY_KEY_ANCHOR = "primary-key-tables";

/** The file's sections in the suite's order, then the others in the file's. */
function inSuiteOrder(r: BenchResults): Array<[string, BenchSection]> {
  const rank = (name: string): number => (SUITE.includes(name) ? SUITE.indexOf(name) : SUITE.length);
  return Object.entries(r.benchmarks).sort(([a], [b]) => rank(a) - rank(b));
}

/** "2026-12-02T10:10:07.123Z" → "2026-12-02 10:10 UTC". */
export function formatDate(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** Integers and large numbers with thousands separators, small ones with a few significant decimals. */
export function formatValue(v: FigureValue): string {
  if (v === null) return "–";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "string") return v.replaceAll("|", "\\|");
  const abs = Math.abs(v);
  if (Number.isInteger(v) || abs >= 100) return Math.round(v).toLocaleString("en-US");
  return v.toFixed(abs >= 10 ? 1 : abs >= 1 ? 2 : 3);
}

export const mark = (met: boolean | null): string => (met === null ? "– not judged" : met ? "✔ met" : "✘ missed");

/** The SVG file of a benchmark's series, in the charts folder. */
export const chartFile = (benchmark: string, series: string): string => `${benchmark}.${series}.svg`;

const loads = (l: readonly number[]): string => l.map((x) => x.toFixed(2)).join(" ");

/** `text` as inline code: fenced by more backticks than it holds in a row. */
function code(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return longest > 0 ? `${fence} ${text} ${fence}` : `${fence}${text}${fence}`;
}

/** "12 min 5 s", "48 s". */
function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

function ranLine(s: BenchSection): string {
  const took = s.startedAt === undefined ? NaN : new Date(s.finishedAt).getTime() - new Date(s.startedAt).getTime();
  const when = s.startedAt === undefined || Number.isNaN(took) ? `finished ${formatDate(s.finishedAt)}` : `started ${formatDate(s.startedAt)}, took ${duration(took)}`;
  return `${when}; load average at its start ${loads(s.loadAverageAtStart)}`;
}

/** The section's machine, or for a file written before sections had one, the file's. */
function machineLine(r: BenchResults, name: string, s: BenchSection): string {
  const m = s.machine ?? { ...r.machine, natsServer: r.machine.natsServer[name] };
  const nats = m.natsServer === undefined ? "" : `, nats-server ${m.natsServer}`;
  return `${m.cpuCount} × ${m.cpuModel}, ${m.memoryGiB} GiB, ${m.kernel}, Node ${m.node}${nats}`;
}

function targetRow(t: Target): string {
  return `| ${t.name} | ${formatValue(t.measured)} | ${t.target.replaceAll("|", "\\|")} | ${mark(t.met)} |`;
}

/** A series is drawn when one of its lines has a point. */
const drawable = (s: Series): boolean => s.lines.some((l) => l.points.length > 0);

/** Alt text of a chart: its title, with what Markdown would read as the end of the text escaped. */
const altText = (title: string): string => title.replaceAll("\\", "\\\\").replaceAll("[", "\\[").replaceAll("]", "\\]");

function sectionLines(r: BenchResults, name: string, s: BenchSection, chartsDir: string): string[] {
  const out = ["", `## ${name}`, ""];
  out.push(`- **Ran:** ${ranLine(s)}`);
  out.push(`- **Machine:** ${machineLine(r, name, s)}`);
  out.push(`- **Command:** ${s.command === undefined ? "not recorded in this results file" : code(s.command)}`);
  if (s.targets.length > 0) {
    out.push("", "| target | measured | bound | result |", "| --- | ---: | --- | --- |");
    for (const t of s.targets) out.push(targetRow(t));
  }
  out.push("", "| figure | value |", "| --- | ---: |");
  for (const [k, v] of Object.entries(s.figures)) out.push(`| ${k} | ${formatValue(v)} |`);
  for (const [series, chart] of Object.entries(s.series ?? {})) {
    out.push("", drawable(chart) ? `![${altText(chart.title)}](${chartsDir}/${chartFile(name, series)})` : `*${chart.title}: no samples in this run.*`);
  }
  return out;
}

/** A figure of a section, or null when the section or the figure is not there. */
function figureOf(s: BenchSection | undefined, name: string): FigureValue {
  return s?.figures[name] ?? null;
}

/**
 * The primary-key summary: the writers' rows/s side by side (pk_write) and the issue-27 targets of both benchmarks in
 * one table; the details are in their own sections.
 */
function primaryKeyLines(r: BenchResults): string[] {
  const write = r.benchmarks["pk_write"];
  const out = ["", `## ${PRIMARY_KEY_HEADING}`, ""];
  const ref = (name: string): string => (r.benchmarks[name] === undefined ? `${name}: not in this run` : `section [${name}](#${name})`);
  out.push(
    "The primary-key benchmarks of issue 27 together: the library's upserts against Java Paimon's and pypaimon's writers",
    `(${ref("pk_write")}), and the cluster's upserts, latency, levels, scans and memory (${ref("cluster_pk")}).`,
  );
  if (write !== undefined) {
    const ours = figureOf(write, "natslake_rows_per_sec");
    const rows = figureOf(write, "rows");
    const keys = figureOf(write, "keys");
    out.push("", `${formatValue(rows)} upserts over ${formatValue(keys)} keys into ${formatValue(figureOf(write, "buckets"))} buckets, one commit, each writer after a warm-up run:`);
    out.push("", "| writer | rows/s | natslake ÷ writer |", "| --- | ---: | ---: |");
    for (const [writer, figure] of [
      ["natslake BatchWriter.upsert", "natslake_rows_per_sec"],
      ["Java Paimon BatchTableWrite, one thread", "java_rows_per_sec"],
      ["pypaimon write_arrow", "pypaimon_rows_per_sec"],
    ] as const) {
      const theirs = figureOf(write, figure);
      const ratio = typeof ours === "number" && typeof theirs === "number" && theirs > 0 ? ours / theirs : null;
      out.push(`| ${writer} | ${formatValue(theirs)} | ${ratio === null ? "–" : `${ratio.toFixed(2)}×`} |`);
    }
  }
  const targets = PRIMARY_KEY.flatMap((name) => (r.benchmarks[name]?.targets ?? []).map((t) => ({ name, t })));
  if (targets.length > 0) {
    out.push("", "| benchmark | target | measured | bound | result |", "| --- | --- | ---: | --- | --- |");
    for (const { name, t } of targets) out.push(`| ${name} ${targetRow(t)}`);
  }
  return out;
}

/**
 * The page (Markdown, ending with a newline). `chartsDir` is the charts' folder relative to the page, as the links
 * name it.
 */
export function renderPage(r: BenchResults, chartsDir: string): string {
  const sections = inSuiteOrder(r);
  const last = sections.map(([, s]) => s.finishedAt).sort().at(-1);
  const missing = SUITE.filter((name) => r.benchmarks[name] === undefined);
  const out = [
    "# Benchmarks",
    "",
    `<!-- Made by \`npm run bench:report\` from ${chartsDir}/results.json: change bench/report.ts, not this page. -->`,
    "",
    "The figures of the latest benchmark run: `npm run bench` runs every benchmark and ends with `npm run bench:report`,",
    "which writes this page. Per benchmark: when it ran, on what machine, the command that ran it, its targets (met or",
    "missed), its figures, and charts of what it sampled over its run. The page shows one run only; earlier runs are in",
    `the history of this page and of [${chartsDir}/results.json](${chartsDir}/results.json), the results it was made`,
    "from: `npm run bench:report -- --file` with that file makes the page and its charts again.",
    "",
    `Run started ${formatDate(r.startedAt)}${last === undefined ? "" : `; its last benchmark finished ${formatDate(last)}`}.`,
  ];
  if (missing.length > 0 && sections.length > 0) out.push(`Not in this run: ${missing.join(", ")}.`);
  if (sections.length === 0) out.push("", "No benchmark has recorded figures in this results file.");
  // The primary-key summary goes before the first primary-key section, in the contents too.
  const firstPrimaryKey = sections.findIndex(([name]) => PRIMARY_KEY.includes(name));
  if (sections.length > 0) out.push("");
  sections.forEach(([name], i) => {
    if (i === firstPrimaryKey) out.push(`- [${PRIMARY_KEY_HEADING}](#${PRIMARY_KEY_ANCHOR})`);
    out.push(`- [${name}](#${name})`);
  });
  sections.forEach(([name, s], i) => {
    if (i === firstPrimaryKey) out.push(...primaryKeyLines(r));
    out.push(...sectionLines(r, name, s, chartsDir));
  });
  return out.join("\n") + "\n";
}

/** Every chart of the results: its file name and its SVG. */
export async function renderCharts(r: BenchResults): Promise<Map<string, string>> {
  const charts = new Map<string, string>();
  for (const [name, s] of Object.entries(r.benchmarks)) {
    for (const [series, chart] of Object.entries(s.series ?? {})) if (drawable(chart)) charts.set(chartFile(name, series), await renderChart(chart));
  }
  return charts;
}

/** The folder of a page's charts and results: docs/benchmarks.md → docs/benchmarks/. */
export const chartsDirOf = (page: string): string => join(dirname(page), basename(page, ".md"));

/**
 * Writes the page, its charts (removing charts of an earlier run that this one has not) and the results it was made
 * from. Returns the files written.
 */
export async function writePage(r: BenchResults, page: string): Promise<string[]> {
  const dir = chartsDirOf(page);
  const charts = await renderCharts(r);
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(dir)) if (f.endsWith(".svg") && !charts.has(f)) rmSync(join(dir, f));
  const written: string[] = [];
  for (const [f, svg] of charts) {
    writeFileSync(join(dir, f), svg);
    written.push(join(dir, f));
  }
  writeResults(r, join(dir, "results.json"));
  writeFileSync(page, renderPage(r, basename(dir)));
  return [page, join(dir, "results.json"), ...written];
}

const USAGE = "usage: bench/report.ts [--file RESULTS] [--page PATH] [--stdout]";

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  let opts: { file: string; page: string; stdout: boolean };
  try {
    const { values } = parseArgs({ options: { file: { type: "string" }, page: { type: "string" }, stdout: { type: "boolean", default: false } }, strict: true, allowPositionals: false });
    opts = { file: values.file === undefined ? benchJsonPath() : resolve(values.file), page: values.page === undefined ? DEFAULT_PAGE : resolve(values.page), stdout: values.stdout };
  } catch (e) {
    process.stderr.write(`bench report: ${(e as Error).message} (${USAGE})\n`);
    process.exit(2);
  }
  try {
    const results = readResults(opts.file);
    if (results === null) throw new Error(`no results file at ${opts.file}: run npm run bench (or one benchmark) first`);
    if (opts.stdout) process.stdout.write(renderPage(results, basename(chartsDirOf(opts.page))));
    else {
      const written = await writePage(results, opts.page);
      process.stdout.write(`bench report: ${written.length} files written from ${opts.file}: ${written.join(", ")}\n`);
    }
  } catch (e) {
    process.stderr.write(`bench report: ${(e as Error).message}\n`);
    process.exit(1);
  }
}
