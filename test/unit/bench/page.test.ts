/**
 * docs/benchmarks.md is generated: it must be the page bench/report.ts makes from docs/benchmarks/results.json, the
 * results committed beside it, and docs/benchmarks/ must hold exactly the charts of those results, byte for byte.
 * A change to the report, the charts or the results that did not regenerate the page fails here.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readResults } from "../../../bench/figures.ts";
import { renderCharts, renderPage } from "../../../bench/report.ts";

const DOCS = fileURLToPath(new URL("../../../docs/", import.meta.url));
const REGENERATE = "regenerate it: npm run bench:report -- --file docs/benchmarks/results.json";

test("docs - docs/benchmarks.md and its charts are what docs/benchmarks/results.json makes", async () => {
  const results = readResults(join(DOCS, "benchmarks", "results.json"));
  assert.ok(results !== null, "docs/benchmarks/results.json is committed with the page");
  assert.equal(readFileSync(join(DOCS, "benchmarks.md"), "utf8"), renderPage(results, "benchmarks"), `docs/benchmarks.md is not the page of its results: ${REGENERATE}`);
  const charts = await renderCharts(results);
  assert.ok(charts.size > 0, "the committed run has charts");
  const svgs = readdirSync(join(DOCS, "benchmarks")).filter((f) => f.endsWith(".svg"));
  assert.deepEqual(svgs.sort(), [...charts.keys()].sort(), `the charts in docs/benchmarks/ are not those of its results: ${REGENERATE}`);
  for (const [file, svg] of charts) assert.ok(readFileSync(join(DOCS, "benchmarks", file), "utf8") === svg, `docs/benchmarks/${file} is not the chart of its series: ${REGENERATE}`);
});
