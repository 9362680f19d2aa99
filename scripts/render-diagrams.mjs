#!/usr/bin/env node
// `node scripts/render-diagrams.mjs`: renders every Graphviz source under docs/ (`*.dot`) to an SVG beside it with `dot -Tsvg`, and
// stamps the SVG with the SHA-256 of the source it came from. test/unit/docs/diagrams.test.ts fails while an SVG's
// stamp differs from its source (an edited .dot not rendered again) — without needing Graphviz itself.
// Graphviz is Debian's `graphviz` package (apt-get install graphviz).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const docs = fileURLToPath(new URL("../docs", import.meta.url));
const sources = readdirSync(docs, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".dot"));
for (const rel of sources) {
  const dot = join(docs, rel);
  const source = readFileSync(dot);
  const r = spawnSync("dot", ["-Tsvg", dot], { encoding: "utf8" });
  if (r.error !== undefined) {
    console.error(`diagrams: cannot run Graphviz's dot (${r.error.message}); install it: apt-get install graphviz`);
    process.exit(1);
  }
  if (r.status !== 0) {
    console.error(`diagrams: dot failed on docs/${rel}:\n${r.stderr}`);
    process.exit(1);
  }
  const stamp = `<!-- rendered by scripts/render-diagrams.mjs from ${rel.split("/").pop()}, source sha256 ${createHash("sha256").update(source).digest("hex")} -->`;
  // After the XML declaration and doctype, before the <svg> element.
  const svg = r.stdout.replace(/<svg\b/, `${stamp}\n<svg`);
  writeFileSync(dot.replace(/\.dot$/, ".svg"), svg);
  console.log(`diagrams: docs/${rel.replace(/\.dot$/, ".svg")}`);
}
