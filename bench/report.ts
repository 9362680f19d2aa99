/**
 * The benchmark results file (bench/figures.ts) as Markdown, to paste into the README: the run's date and machine,
 * then per benchmark its figures and its targets with ✔/✘ (– when the run could not judge one).
 *
 *   node --import tsx bench/report.ts [--file PATH]    (npm run bench:report; default: NATSLAKE_BENCH_JSON, else
 *                                                       bench-results/latest.json)
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { benchJsonPath, readResults, type BenchResults, type FigureValue, type Target } from "./figures.ts";

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

export const mark = (met: boolean | null): string => (met === null ? "–" : met ? "✔" : "✘");

const loads = (l: number[]): string => l.map((x) => x.toFixed(2)).join(" ");

function machineLine(r: BenchResults): string {
  const m = r.machine;
  // Benchmarks that ran the same nats-server share one entry: "2.12.15 (maintenance, consumer)".
  const byVersion = new Map<string, string[]>();
  for (const [bench, version] of Object.entries(m.natsServer)) byVersion.set(version, [...(byVersion.get(version) ?? []), bench]);
  const nats = byVersion.size === 0 ? "" : `; nats-server ${[...byVersion].map(([v, b]) => `${v} (${b.join(", ")})`).join(", ")}`;
  return `Machine: ${m.cpuCount} × ${m.cpuModel}, ${m.memoryGiB} GiB, ${m.kernel}, Node ${m.node}${nats}; load average at the start ${loads(m.loadAverageAtStart)}`;
}

function targetRow(t: Target): string {
  return `| ${t.name} | ${formatValue(t.measured)} | ${t.target.replaceAll("|", "\\|")} | ${mark(t.met)} |`;
}

/** The whole report (Markdown, ending with a newline). */
export function renderReport(r: BenchResults): string {
  const sections = Object.entries(r.benchmarks);
  const last = sections.map(([, s]) => s.finishedAt).sort().at(-1);
  const out = [`Benchmark run of ${formatDate(r.startedAt)}${last === undefined ? "" : ` (last benchmark finished ${formatDate(last)})`}`, "", machineLine(r)];
  if (sections.length === 0) out.push("", "No benchmark has recorded figures yet.");
  for (const [name, s] of sections) {
    out.push("", `### ${name}`, "", `Finished ${formatDate(s.finishedAt)}; load average at its start ${loads(s.loadAverageAtStart)}.`, "");
    out.push("| figure | value |", "| --- | --- |");
    for (const [k, v] of Object.entries(s.figures)) out.push(`| ${k} | ${formatValue(v)} |`);
    if (s.targets.length > 0) {
      out.push("", "| target | measured | bound | met |", "| --- | --- | --- | --- |");
      for (const t of s.targets) out.push(targetRow(t));
    }
  }
  return out.join("\n") + "\n";
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  let file: string;
  try {
    const { values } = parseArgs({ options: { file: { type: "string" } }, strict: true, allowPositionals: false });
    file = values.file === undefined ? benchJsonPath() : resolve(values.file);
  } catch (e) {
    process.stderr.write(`bench report: ${(e as Error).message} (usage: bench/report.ts [--file PATH])\n`);
    process.exit(2);
  }
  try {
    const results = readResults(file);
    if (results === null) throw new Error(`no results file at ${file}: run npm run bench (or one benchmark) first`);
    process.stdout.write(renderReport(results));
  } catch (e) {
    process.stderr.write(`bench report: ${(e as Error).message}\n`);
    process.exit(1);
  }
}
