/**
 * `natslake doctor <db.table>`: checks a table's files (src/maintenance/doctor.ts) and prints each problem with what
 * to do about it. Read-only, safe beside a running cluster; works on any warehouse (a directory or an object store).
 * Exit 0 when the table is healthy, 1 when a problem was found ({@link EXIT}). Progress on stderr: a bar on a
 * terminal, else a line every 10 s.
 */
import type { Command } from "commander";
import { Presets, SingleBar } from "cli-progress";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { damagedFileOf } from "../../src/table/damaged-file.ts";
import { doctorTable, fileFinding, unopenableReport, type DoctorProgress, type DoctorReport } from "../../src/maintenance/doctor.ts";
import { catalogFrom, CliError, durationArg, EXIT, examples, type WarehouseOpts, WAREHOUSE_FLAG, WAREHOUSE_HELP } from "./common.ts";

interface DoctorOpts extends WarehouseOpts {
  json?: boolean;
  orphansOlderThan?: number;
}

/** How often progress is written when stderr is not a terminal. */
const PROGRESS_LINE_MS = 10_000;

export function registerDoctorCommand(program: Command, out: (s: string) => void): void {
  program
    .command("doctor <table>")
    .description("check a table's files (snapshots, manifests, data files, levels, hints, orphans, consumers) and say what to do about each problem; exit 1 when one is found")
    .option("--orphans-older-than <duration>", "report unreferenced files older than this (default: the table's natslake.orphan-older-than, 1 d)", durationArg)
    .option("--json", "print the report as JSON")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", examples("natslake doctor shop.orders --warehouse /data/wh", "natslake doctor shop.orders --json --warehouse s3://lake/wh"))
    .action(async (name: string, o: DoctorOpts) => {
      const catalog = catalogFrom(o, { mustExist: true });
      const id = parseIdentifier(name);
      let report: DoctorReport;
      const progress = progressReporter(name);
      try {
        const table = await catalog.getTable(id);
        report = await doctorTable(table, { ...(o.orphansOlderThan !== undefined ? { orphansOlderThanMs: o.orphansOlderThan } : {}), onProgress: progress.update });
      } catch (e) {
        // A table whose schema does not parse cannot be opened: that is the finding.
        const d = damagedFileOf(e);
        if (d === null || d.kind !== "schema") throw e;
        report = unopenableReport(name, catalog.io.uriOf(catalog.tablePath(id)), fileFinding(e, "schema", catalog.io.uriOf(d.path), "restore it from a backup (the table cannot be opened without its latest schema)"));
      } finally {
        progress.stop();
      }
      if (o.json) out(JSON.stringify(report));
      else for (const line of renderReport(report)) out(line);
      if (!report.healthy) throw new CliError(`${name}: ${report.findings.length} problem${report.findings.length === 1 ? "" : "s"} found`, { exitCode: EXIT.failure.code });
    });
}

/** The report as text: a summary line, then each finding with its snapshots and what to do. */
export function renderReport(r: DoctorReport): string[] {
  const c = r.checked;
  const range = r.latestSnapshot === null ? "no snapshots" : `snapshots ${r.earliestSnapshot}..${r.latestSnapshot}`;
  const what = `${range}; checked ${c.schemas} schemas, ${c.snapshots} snapshots, ${c.manifestLists} manifest lists, ${c.manifests} manifests, ${c.dataFiles} data files, ${c.indexFiles > 0 ? `${c.indexFiles} index files, ` : ""}${c.buckets} bucket states, ${c.consumers} consumers`;
  const lines = [`${r.table}: ${r.healthy ? "healthy" : `${r.findings.length} problem${r.findings.length === 1 ? "" : "s"}`} (${what})`];
  for (const f of r.findings) {
    const used = f.snapshots === undefined ? "" : ` [snapshot${f.snapshots.length === 1 ? "" : "s"} ${spans(f.snapshots)}]`;
    lines.push(`  ${f.check}: ${f.path ?? ""}${f.path !== undefined ? ": " : ""}${f.problem}${used}`);
    for (const file of (f.files ?? []).slice(0, 10)) lines.push(`    ${file}`);
    if ((f.files?.length ?? 0) > 10) lines.push(`    … and ${f.files!.length - 10} more (--json lists them all)`);
    lines.push(`    → ${f.action}`);
  }
  for (const s of r.skipped) lines.push(`  not checked: ${s}`);
  return lines;
}

/** `1, 2, 3, 7` → `1..3, 7`. */
function spans(ids: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < ids.length; ) {
    let j = i;
    while (j + 1 < ids.length && ids[j + 1] === ids[j]! + 1) j++;
    out.push(j === i ? String(ids[i]) : `${ids[i]}..${ids[j]}`);
    i = j + 1;
  }
  return out.join(", ");
}

/** Progress on stderr: a bar per stage on a terminal, else a line at most every PROGRESS_LINE_MS. */
function progressReporter(name: string): { update: (p: DoctorProgress) => void; stop: () => void } {
  if (process.stderr.isTTY) {
    let bar: SingleBar | null = null;
    let stage = "";
    return {
      update: (p) => {
        if (p.total < 100) return;
        if (p.stage !== stage) {
          bar?.stop();
          stage = p.stage;
          bar = new SingleBar({ format: `doctor ${name}: ${p.stage} |{bar}| {value}/{total}`, stream: process.stderr }, Presets.shades_classic);
          bar.start(p.total, 0);
        }
        bar?.update(p.done);
      },
      stop: () => bar?.stop(),
    };
  }
  let last = Date.now();
  return {
    update: (p) => {
      if (Date.now() - last < PROGRESS_LINE_MS) return;
      last = Date.now();
      process.stderr.write(`doctor ${name}: ${p.stage} ${p.done}/${p.total}\n`);
    },
    stop: () => undefined,
  };
}
