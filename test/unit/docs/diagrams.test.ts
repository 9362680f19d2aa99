/**
 * The documentation's diagrams are pictures rendered from Graphviz sources (docs/**\/*.dot → *.svg, by
 * scripts/render-diagrams.mjs): every source has its SVG, and every SVG was rendered from its source as it is now
 * (the SVG carries the source's SHA-256), so an edited diagram cannot ship with its old picture.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const DOCS = fileURLToPath(new URL("../../../docs", import.meta.url));
const files = readdirSync(DOCS, { recursive: true, encoding: "utf8" });

test("diagrams - every .dot under docs/ has an SVG rendered from it as it is now", () => {
  const sources = files.filter((f) => f.endsWith(".dot"));
  assert.ok(sources.includes(join("design", "architecture.dot")), `the architecture diagram's source is there: ${sources.join(", ")}`);
  for (const rel of sources) {
    const svgPath = join(DOCS, rel.replace(/\.dot$/, ".svg"));
    assert.ok(existsSync(svgPath), `docs/${rel} has its SVG: run node scripts/render-diagrams.mjs`);
    const svg = readFileSync(svgPath, "utf8");
    const sha = createHash("sha256").update(readFileSync(join(DOCS, rel))).digest("hex");
    const stamp = /source sha256 ([0-9a-f]{64})/.exec(svg)?.[1];
    assert.equal(stamp, sha, `docs/${rel} changed since its SVG was rendered: run node scripts/render-diagrams.mjs`);
    assert.match(svg, /<svg\b[\s\S]*<\/svg>\s*$/, `docs/${rel.replace(/\.dot$/, ".svg")} is a whole SVG`);
  }
});

test("diagrams - every SVG under docs/ comes from a source there (the benchmark charts come from npm run bench:report)", () => {
  for (const rel of files.filter((f) => f.endsWith(".svg") && !f.startsWith("benchmarks/"))) {
    assert.ok(existsSync(join(DOCS, rel.replace(/\.svg$/, ".dot"))), `docs/${rel} has its Graphviz source beside it`);
  }
});
