/**
 * `natslake remove-orphans <db.table>`: Paimon's remove_orphan_files procedure (src/maintenance/remove-orphans.ts) —
 * deletes the files under the table directory that no snapshot, tag, branch or in-flight committable references and
 * that are older than `--older-than` (default: the table's `natslake.orphan-older-than`, 1 day). With `--nats`, a
 * table the cluster serves is cleaned by its leader (maintenance-routing.ts); otherwise on the warehouse directly.
 * Either is safe beside a running cluster as long as the bound exceeds the longest write → commit time: the files
 * of the young committable bodies on disk (committables sent by reference, still in flight) are kept whatever their
 * age.
 */
import type { Command } from "commander";
import { Presets, SingleBar } from "cli-progress";
import { ORPHAN_KINDS, type RemoveOrphansResult } from "../../src/maintenance/remove-orphans.ts";
import { addRoutingOptions, runRouted, type RoutingOpts } from "./maintenance-routing.ts";
import { durationArg, WAREHOUSE_FLAG, WAREHOUSE_HELP } from "./common.ts";


const units = ["B", "KiB", "MiB", "GiB", "TiB"];
function bytes(n: number): string {
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** `86400000` → `1 d`: the bound as a user would write it. */
function duration(ms: number): string {
  for (const [unit, n] of [["d", 86_400_000], ["h", 3_600_000], ["min", 60_000], ["s", 1000]] as const) if (ms >= n && ms % n === 0) return `${ms / n} ${unit}`;
  return `${ms} ms`;
}

function summary(name: string, r: RemoveOrphansResult): string {
  const verb = r.dryRun ? "would delete" : "deleted";
  const parts = ORPHAN_KINDS.filter((k) => r.byKind[k].files > 0).map((k) => `${r.byKind[k].files} ${k === "committable" ? "committable body" : k} (${bytes(r.byKind[k].bytes)})`);
  const dirs = r.dirsRemoved.length > 0 ? `; ${r.dryRun ? "would remove" : "removed"} ${r.dirsRemoved.length} empty directories` : "";
  const young = r.youngKept > 0 ? `; kept ${r.youngKept} unreferenced files younger than the bound` : "";
  if (r.totalFiles === 0) return `${name}: no orphan files older than ${duration(r.olderThanMs)}${young}${dirs}`;
  return `${name}: ${verb} ${r.totalFiles} orphan files, ${bytes(r.totalBytes)}: ${parts.join(", ")}${dirs}${young}`;
}

export function registerRemoveOrphansCommand(program: Command, out: (s: string) => void): void {
  const cmd = program
    .command("remove-orphans <table>")
    .description("delete files no snapshot, tag or in-flight committable references and older than a bound (natslake.orphan-older-than, default 1 d)")
    .option("--older-than <duration>", "delete only files older than this (must exceed the longest write → commit time), e.g. 1 d", durationArg)
    .option("--dry-run", "list what would be deleted, delete nothing")
    .option("--json", "print the result as JSON")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP);
  addRoutingOptions(cmd)
    .addHelpText("after", "\nExample:\n  natslake remove-orphans shop.orders --older-than '2 d' --dry-run\n")
    .action(async (name: string, o: RoutingOpts & { olderThan?: number; dryRun?: boolean; json?: boolean }) => {
      const showBar = process.stderr.isTTY && o.json !== true;
      const bar = new SingleBar({ format: "removing orphans |{bar}| {value}/{total} files", stream: process.stderr }, Presets.shades_classic);
      let started = false;
      let routed;
      try {
        routed = await runRouted(name, { task: "remove-orphans", options: { ...(o.olderThan !== undefined ? { olderThanMs: o.olderThan } : {}), dryRun: o.dryRun === true } }, o, {
          wantsProgress: showBar,
          warehouseMustExist: true,
          onProgress: ({ done, total }) => {
            if (!showBar || total < 100) return;
            if (!started) {
              bar.start(total, 0);
              started = true;
            }
            bar.update(done);
          },
        });
      } finally {
        if (started) bar.stop();
      }
      const { result: r, note } = routed;
      if (o.json) out(JSON.stringify(r));
      else {
        if (r.dryRun) for (const f of r.files) out(`would delete ${f.kind} ${f.path} (${bytes(f.size)})`);
        if (r.dryRun) for (const d of r.dirsRemoved) out(`would remove empty directory ${d}`);
        out(summary(r.table, r));
      }
      if (note !== undefined) process.stderr.write(`${note}\n`);
    });
}
