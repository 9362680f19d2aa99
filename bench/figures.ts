/**
 * The benchmarks' figures as one JSON file (issue 12): each benchmark calls `recordFigures` once at its end with the
 * figures it printed, and they are merged into `bench-results/latest.json` (`NATSLAKE_BENCH_JSON` overrides the path)
 * under the benchmark's name. `npm run bench` first resets the file (`node --import tsx bench/figures.ts --reset`), so
 * after it the file describes one run of the suite; a benchmark run alone merges its section into the file that is
 * there. A section carries, besides its figures and targets, the command that ran the benchmark, the machine it ran
 * on and the time series it sampled (issue 26). bench/report.ts turns the file into docs/benchmarks.md and its charts.
 *
 * Every write replaces the file by rename of a temporary file in the same directory: a reader (or a run killed
 * mid-write) sees the old file or the new one, never half of one.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem, type } from "node:os";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { z } from "zod";

export type FigureValue = number | string | boolean | null;
export type Figures = Record<string, FigureValue>;

/** A target the benchmark prints with ✔/✘: `met` null when the run could not judge it (too short, no samples). */
export interface Target {
  name: string;
  measured: number | null;
  /** As printed, e.g. "≥ 250000" or "≤ 300 MB". */
  target: string;
  met: boolean | null;
}

/** What a benchmark (or one part of one) measured: merged by the caller, recorded once. */
export interface FigureSet {
  figures: Figures;
  targets: Target[];
  series?: Record<string, Series>;
}

/**
 * What a benchmark sampled over its run, as one chart: lines of (x, y) points, e.g. files per bucket against the
 * seconds since the load started. Axis titles carry their units. `limits` are horizontal lines drawn dashed (a
 * target's bound). bench/charts.ts draws it.
 */
export interface Series {
  title: string;
  x: string;
  y: string;
  lines: SeriesLine[];
  limits?: Array<{ name: string; y: number }>;
}

export interface SeriesLine {
  name: string;
  points: Array<[number, number]>;
}

const figureValue = z.union([z.number(), z.string(), z.boolean(), z.null()]);
const targetSchema = z.object({ name: z.string(), measured: z.number().nullable(), target: z.string(), met: z.boolean().nullable() });
const loadAverage = z.tuple([z.number(), z.number(), z.number()]);
const seriesSchema = z.object({
  title: z.string(),
  x: z.string(),
  y: z.string(),
  lines: z.array(z.object({ name: z.string(), points: z.array(z.tuple([z.number(), z.number()])) })),
  limits: z.array(z.object({ name: z.string(), y: z.number() })).optional(),
}) satisfies z.ZodType<Series>;

const hostSchema = z.object({
  cpuModel: z.string(),
  cpuCount: z.number(),
  memoryGiB: z.number(),
  /** `os.type()` and `os.release()`, e.g. "Linux 6.1.0-28-amd64". */
  kernel: z.string(),
  node: z.string(),
});

// The fields marked "issue 26" are absent from files written before it: they are optional, and the report says what
// a section does not have.
const sectionSchema = z.object({
  /** When this benchmark's process started (issue 26). */
  startedAt: z.string().optional(),
  finishedAt: z.string(),
  /** The load average when this benchmark's process started (the machine is shared: figures under load are indicative). */
  loadAverageAtStart: loadAverage,
  /** The command line that ran it, as typed from the repository root (issue 26). */
  command: z.string().optional(),
  /** The machine it ran on and the nats-server it started, if any (issue 26). */
  machine: hostSchema.extend({ natsServer: z.string().optional() }).optional(),
  figures: z.record(z.string(), figureValue),
  targets: z.array(targetSchema),
  /** Its time series by name (lower_snake_case), one chart each (issue 26). */
  series: z.record(z.string(), seriesSchema).optional(),
});

const machineSchema = hostSchema.extend({
  /** The nats-server version each benchmark that starts one used, by benchmark (they may differ). */
  natsServer: z.record(z.string(), z.string()),
  /** At the run's start: the reset, or the first benchmark of a file that did not exist. */
  loadAverageAtStart: loadAverage,
});

const resultsSchema = z.object({
  startedAt: z.string(),
  machine: machineSchema,
  /** In the order the benchmarks finished. */
  benchmarks: z.record(z.string(), sectionSchema),
});

export type BenchSection = z.infer<typeof sectionSchema>;
export type HostInfo = z.infer<typeof hostSchema>;
export type MachineInfo = z.infer<typeof machineSchema>;
export type BenchResults = z.infer<typeof resultsSchema>;

/** Where `npm run bench` writes: `NATSLAKE_BENCH_JSON`, else bench-results/latest.json at the repository root. */
export function benchJsonPath(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env["NATSLAKE_BENCH_JSON"] || fileURLToPath(new URL("../bench-results/latest.json", import.meta.url)));
}

/** Taken when this module loads, i.e. when the benchmark's process starts, before it loads the machine itself. */
const PROCESS_STARTED = { at: new Date(), load: loadavg() as [number, number, number] };

const round2 = (x: number): number => Math.round(x * 100) / 100;

function hostNow(): HostInfo {
  const cpu = cpus();
  return { cpuModel: cpu[0]?.model.trim() ?? "unknown", cpuCount: cpu.length, memoryGiB: round2(totalmem() / 1024 ** 3), kernel: `${type()} ${release()}`, node: process.version };
}

function machineNow(load: [number, number, number]): MachineInfo {
  return { ...hostNow(), natsServer: {}, loadAverageAtStart: load.map(round2) as [number, number, number] };
}

/** A file describing a run that starts now (`at`, with the load average `load`). */
export function emptyResults(at: Date = new Date(), load: [number, number, number] = loadavg() as [number, number, number]): BenchResults {
  return { startedAt: at.toISOString(), machine: machineNow(load), benchmarks: {} };
}

/**
 * The file's contents, or null when there is none. A file that is not valid JSON of this shape is an error (it is
 * not ours, or an older format): recordFigures replaces it, report.ts refuses it.
 */
export function readResults(file: string = benchJsonPath()): BenchResults | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file} is not a benchmark results file: ${(e as Error).message}`);
  }
  const parsed = resultsSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${file} is not a benchmark results file: ${issue === undefined ? "invalid" : `${issue.path.join(".") || "(top level)"}: ${issue.message}`}`);
  }
  return parsed.data;
}

/**
 * The file's text: JSON indented by 2, with arrays of numbers on one line (a series' point, a load average), so a
 * series of a thousand points is a thousand lines, not four thousand.
 */
export function resultsText(results: BenchResults): string {
  const json = JSON.stringify(results, null, 2);
  // Only arrays JSON.stringify spread over lines: a string value never holds a raw newline, so none is touched.
  return json.replace(/\[\n\s*(-?\d[\d.eE+-]*(?:,\n\s*-?\d[\d.eE+-]*)*)\n\s*\]/g, (_, inner: string) => `[${inner.split(/,\n\s*/).join(", ")}]`) + "\n";
}

/** Writes `results` to `file` by rename of a temporary file in the same directory (never a partly written file). */
export function writeResults(results: BenchResults, file: string = benchJsonPath()): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    writeFileSync(tmp, resultsText(results));
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Starts a fresh file (the suite's first step): no sections, this moment's machine and load average. */
export function resetResults(file: string = benchJsonPath(), at: Date = new Date()): BenchResults {
  const results = emptyResults(at);
  writeResults(results, file);
  return results;
}

const SNAKE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/;

/** Non-finite numbers (a ratio over zero, a missing sample's NaN) have no JSON form: they are recorded as null. */
const finiteOrNull = <T extends FigureValue>(v: T): T | null => (typeof v === "number" && !Number.isFinite(v) ? null : v);

export interface RecordOptions {
  /** The nats-server version the benchmark ran against, when it starts one. */
  natsServer?: string | undefined;
  /** Its time series, one chart each, by lower_snake_case name. */
  series?: Record<string, Series>;
  /**
   * Environment variables that chose what the run did (e.g. CLUSTER_BENCH_ONLY): those set are written before the
   * command, as they would be typed.
   */
  commandEnv?: readonly string[];
  /** Default: this process's command line (commandLine()). */
  command?: string;
  /** Default: benchJsonPath(). */
  file?: string;
  /** The section's finishedAt (default now). */
  now?: Date;
  /** This benchmark's start (default: when this module loaded). */
  started?: { at: Date; load: [number, number, number] };
}

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** A word as a POSIX shell reads it back: bare when it is safe, else in single quotes. */
function shellWord(w: string): string {
  return /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", `'\\''`)}'`;
}

/**
 * This process's command line as typed from the repository root: `node`, its Node flags, the script relative to the
 * root, its arguments, with the named environment variables that are set in front
 * (`CLUSTER_BENCH_ONLY=1,latency node --import tsx bench/cluster.bench.ts 100000`).
 */
export function commandLine(envNames: readonly string[] = [], proc: { argv: readonly string[]; execArgv: readonly string[]; env: NodeJS.ProcessEnv } = process): string {
  const script = proc.argv[1] === undefined ? [] : [relative(REPO_ROOT, proc.argv[1]) || proc.argv[1]];
  const env = envNames.flatMap((name) => (proc.env[name] === undefined ? [] : [`${name}=${shellWord(proc.env[name])}`]));
  return [...env, "node", ...proc.execArgv.map(shellWord), ...script.map(shellWord), ...proc.argv.slice(2).map(shellWord)].join(" ");
}

/** A series' points without the non-finite ones (JSON has no NaN; a gap in a line is the honest drawing). */
function finiteSeries(s: Series): Series {
  return { ...s, lines: s.lines.map((l) => ({ name: l.name, points: l.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)) })) };
}

/**
 * Merges one benchmark's section into the results file (replacing a section of the same name) and returns the file's
 * new contents. Names are lower_snake_case with their unit (`rows_per_sec`, `p99_ms`): the report prints them as
 * they are, and a later run's section compares with this one's by name.
 */
export function recordFigures(benchmark: string, figures: Figures, targets: Target[] = [], opts: RecordOptions = {}): BenchResults {
  const series = opts.series ?? {};
  const bad = [benchmark, ...Object.keys(figures), ...targets.map((t) => t.name), ...Object.keys(series)].filter((n) => !SNAKE.test(n));
  if (bad.length > 0) throw new Error(`figure names must be lower_snake_case: ${bad.join(", ")}`);
  const file = opts.file ?? benchJsonPath();
  const started = opts.started ?? PROCESS_STARTED;
  let results: BenchResults | null;
  try {
    results = readResults(file);
  } catch (e) {
    // The figures just measured matter more than a file that cannot be read: say so and start a new one.
    process.stderr.write(`bench figures: ${(e as Error).message}; starting a new file\n`);
    results = null;
  }
  results ??= emptyResults(started.at, started.load);
  // A section run again moves to the end: the sections stay in the order they finished.
  const benchmarks = Object.fromEntries(Object.entries(results.benchmarks).filter(([name]) => name !== benchmark));
  benchmarks[benchmark] = {
    startedAt: started.at.toISOString(),
    finishedAt: (opts.now ?? new Date()).toISOString(),
    loadAverageAtStart: started.load.map(round2) as [number, number, number],
    command: opts.command ?? commandLine(opts.commandEnv),
    machine: { ...hostNow(), ...(opts.natsServer !== undefined ? { natsServer: opts.natsServer } : {}) },
    figures: Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, finiteOrNull(v)])),
    targets: targets.map((t) => ({ ...t, measured: t.measured === null ? null : finiteOrNull(t.measured) })),
    series: Object.fromEntries(Object.entries(series).map(([k, v]) => [k, finiteSeries(v)])),
  };
  const natsServer = { ...results.machine.natsServer };
  if (opts.natsServer !== undefined) natsServer[benchmark] = opts.natsServer;
  const next: BenchResults = { ...results, machine: { ...results.machine, natsServer }, benchmarks };
  writeResults(next, file);
  process.stdout.write(`figures of ${benchmark} written to ${file}\n`);
  return next;
}

const bound = (x: number): string => x.toLocaleString("en-US", { maximumFractionDigits: 3 });

/** `measured` against a lower bound; `met` null (not judged) when nothing was measured. */
export function targetAtLeast(name: string, measured: number | null, min: number): Target {
  return { name, measured, target: `≥ ${bound(min)}`, met: measured === null || !Number.isFinite(measured) ? null : measured >= min };
}

/** `measured` against an upper bound; `met` null (not judged) when nothing was measured. */
export function targetAtMost(name: string, measured: number | null, max: number): Target {
  return { name, measured, target: `≤ ${bound(max)}`, met: measured === null || !Number.isFinite(measured) ? null : measured <= max };
}

// `node --import tsx bench/figures.ts --reset`: npm run bench's first step.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  if (args.length !== 1 || args[0] !== "--reset") {
    process.stderr.write("usage: node --import tsx bench/figures.ts --reset   (starts a fresh results file)\n");
    process.exit(2);
  }
  const file = benchJsonPath();
  resetResults(file);
  process.stdout.write(`benchmark figures: a fresh ${file}\n`);
}
