/**
 * docs/reference/ is generated from the code (scripts/gen-reference.ts, `npm run docs:reference`): the pages in the
 * repository are what the generator makes of the code now, page for page, with no page left over. And every metric
 * instrument is created from its declaration in actors/metrics.ts, the metrics page's source: an instrument created
 * anywhere else would be exported but missing from the page.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { REFERENCE_DIR, REGENERATE, referencePages } from "../../scripts/reference/pages.ts";
import { allMetrics } from "../../actors/metrics.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DIR = join(ROOT, REFERENCE_DIR);

test("docs reference - every page in docs/reference/ is what the generator makes of the code now", async () => {
  const pages = await referencePages();
  assert.ok(Object.keys(pages).length >= 7, "README.md and the six pages");
  const drifted: string[] = [];
  for (const [name, text] of Object.entries(pages)) {
    const path = join(DIR, name);
    const committed = existsSync(path) ? readFileSync(path, "utf8") : null;
    if (committed === null) drifted.push(`${REFERENCE_DIR}/${name} is missing`);
    else if (committed !== text) {
      const a = committed.split("\n");
      const b = text.split("\n");
      const at = a.findIndex((l, i) => l !== b[i]);
      const line = at < 0 ? Math.min(a.length, b.length) : at;
      drifted.push(`${REFERENCE_DIR}/${name} differs from the code from line ${line + 1}:\n    in the file: ${a[line] ?? "(end)"}\n    generated:   ${b[line] ?? "(end)"}`);
    }
  }
  const stale = readdirSync(DIR).filter((f) => f.endsWith(".md") && !(f in pages));
  for (const f of stale) drifted.push(`${REFERENCE_DIR}/${f} is no longer generated`);
  assert.deepEqual(drifted, [], `${drifted.join("\n")}\nRun \`${REGENERATE}\` and commit the result.`);
});

test("docs reference - the pages name every command, option, setting and metric they are made from", async () => {
  const pages = await referencePages();
  // A few anchors of each page in the code, so a generator that silently wrote less would fail here as well.
  for (const m of allMetrics()) assert.ok(pages["metrics.md"]!.includes(`| \`${m.name}\` |`), `metrics.md lists ${m.name}`);
  for (const word of ["## natslake node drain", "`--warehouse <dir\\|s3://bucket/prefix>`", "## natslake chaos run"]) assert.ok(pages["cli.md"]!.includes(word), `cli.md has ${word}`);
  for (const word of ["`natslake.commit-interval`", "`fields.<field>.aggregate-function`", "## Primary-key tables"]) assert.ok(pages["table-options.md"]!.includes(word), `table-options.md has ${word}`);
  for (const word of ["`writerMemory` | `--writer-memory <size>` | `NATSLAKE_WRITER_MEMORY` | size | `128 mb`", "`compactionNice`"]) assert.ok(pages["node-config.md"]!.includes(word), `node-config.md has ${word}`);
  for (const word of ["### row-batch", "`files[].meta.fileName`", "(../../schemas/row-batch.schema.json)"]) assert.ok(pages["wire-protocol.md"]!.includes(word), `wire-protocol.md has ${word}`);
  for (const word of ["| `Conflict` | `3` |", "| `DataInvalid` | `2` |"]) assert.ok(pages["exit-codes.md"]!.includes(word), `exit-codes.md has ${word}`);
});

test("docs reference - metric instruments are created only from their declarations in actors/metrics.ts", () => {
  const creation = /\.create(?:Counter|UpDownCounter|Histogram|Gauge|ObservableGauge|ObservableCounter|ObservableUpDownCounter)\s*[<(]/g;
  const sources = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.ts"], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
    .split("\0")
    .filter((f) => f !== "" && !f.startsWith("test/") && !f.split("/").includes("node_modules") && existsSync(join(ROOT, f)));
  assert.ok(sources.length > 100 && sources.includes("actors/metrics.ts"), `the sources are listed (${sources.length})`);
  const elsewhere: string[] = [];
  let declared = 0;
  for (const f of sources) {
    const n = [...readFileSync(join(ROOT, f), "utf8").matchAll(creation)].length;
    if (f === "actors/metrics.ts") declared = n;
    else if (n > 0) elsewhere.push(`${f}: ${n}`);
  }
  assert.deepEqual(elsewhere, [], "create the instrument from a declaration in actors/metrics.ts (METRICS.<name>.create(meter)), so the reference page lists it");
  // The four kinds of declaration (counter, histogram, observable gauge and counter) each create their instrument once.
  assert.equal(declared, 4, "actors/metrics.ts creates instruments in its four declaration helpers only");
  const names = allMetrics().map((m) => m.name);
  assert.equal(new Set(names).size, names.length, "every metric is declared once");
});
