/**
 * bench/charts.ts: a fixture series renders into a well-formed SVG document (parsed by an XML parser that refuses
 * any error) holding one line per series line through each of its points, a dot per point, the axis titles, the
 * chart's title and its limit; the same series renders to the same bytes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { DOMParser, type Document, type Element } from "@xmldom/xmldom";
import { renderChart } from "../../../bench/charts.ts";
import type { Series } from "../../../bench/figures.ts";

const SERIES: Series = {
  title: "Publish → visible latency per 5 s of publishing",
  x: "time since the phase's load started (s)",
  y: "latency (ms)",
  lines: [
    { name: "on: p50", points: [[0, 90], [5, 95], [10, 93], [15, 99]] },
    { name: "on: p99", points: [[0, 180], [5, 260], [10, 210], [15, 240], [20, 230]] },
    { name: "off: p99", points: [[5, 150], [10, 155], [20, 170]] },
  ],
  limits: [{ name: "target p99 ≤ 350 ms", y: 350 }],
};

/** Parses `svg` as XML, failing on any warning or error the parser reports. */
function parseSvg(svg: string): Document {
  const problems: string[] = [];
  const doc = new DOMParser({ onError: (level, message) => void problems.push(`${level}: ${message}`) }).parseFromString(svg, "image/svg+xml");
  assert.deepEqual(problems, [], "the SVG parses without a problem");
  return doc;
}

const elements = (doc: Document, tag: string): Element[] => Array.from(doc.getElementsByTagName(tag));

/** The vertices of a path's `d` made of M and L commands: [x, y] in plot pixels. */
function vertices(d: string): Array<[number, number]> {
  assert.match(d, /^M[^A-Za-z]+(L[^A-Za-z]+)*$/, `a polyline path: ${d}`);
  return [...d.matchAll(/[ML]([-\d.e]+),([-\d.e]+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
}

test("charts - a series renders as a valid SVG with a line through each line's points, the axis titles and the limit", async () => {
  const svg = await renderChart(SERIES);
  const doc = parseSvg(svg);
  const root = doc.documentElement!;
  assert.equal(root.tagName, "svg");
  assert.equal(root.getAttribute("xmlns"), "http://www.w3.org/2000/svg");
  assert.ok(Number(root.getAttribute("width")) > 600 && Number(root.getAttribute("height")) > 200);

  // Vega labels each mark for screen readers: a line mark's label names its first point and its line.
  const lines = elements(doc, "path").filter((p) => p.getAttribute("aria-roledescription") === "line mark");
  assert.equal(lines.length, SERIES.lines.length, "one line mark per series line");
  for (const l of SERIES.lines) {
    const path = lines.find((p) => p.getAttribute("aria-label")!.endsWith(`; line: ${l.name}`));
    assert.ok(path !== undefined, `a line for ${l.name}`);
    const [x0, y0] = l.points[0]!;
    assert.ok(path.getAttribute("aria-label")!.startsWith(`${SERIES.x}: ${x0}; ${SERIES.y}: ${y0};`), path.getAttribute("aria-label")!);
    const v = vertices(path.getAttribute("d")!);
    assert.equal(v.length, l.points.length, `${l.name}: a vertex per point`);
    // The drawing keeps the data's order: x grows with the points' x, and y (downwards in SVG) falls as values rise.
    for (let i = 1; i < v.length; i++) {
      assert.ok(v[i]![0] > v[i - 1]![0], `${l.name}: x grows`);
      assert.equal(Math.sign(v[i - 1]![1] - v[i]![1]), Math.sign(l.points[i]![1] - l.points[i - 1]![1]), `${l.name}: point ${i} rises or falls as its value does`);
    }
  }
  // A dot per point (lines this short get them), each labelled with its values.
  const dots = elements(doc, "path").filter((p) => p.getAttribute("aria-roledescription") === "point");
  assert.equal(dots.length, SERIES.lines.reduce((n, l) => n + l.points.length, 0));
  for (const l of SERIES.lines) for (const [x, y] of l.points) assert.ok(dots.some((d) => d.getAttribute("aria-label") === `${SERIES.x}: ${x}; ${SERIES.y}: ${y}; line: ${l.name}`), `a dot at ${l.name} (${x}, ${y})`);

  const texts = elements(doc, "text").map((t) => t.textContent);
  for (const want of [SERIES.x, SERIES.y, SERIES.title, "target p99 ≤ 350 ms", ...SERIES.lines.map((l) => l.name)]) assert.ok(texts.includes(want), `text "${want}" in the chart`);
  const rules = elements(doc, "line").filter((l) => l.getAttribute("stroke-dasharray") !== null);
  assert.equal(rules.length, 1, "the limit as one dashed rule");
  assert.equal(await renderChart(SERIES), svg, "the same series renders to the same bytes");
});

test("charts - one line has no legend; a long line has no dots; a long title wraps", async () => {
  const many: Array<[number, number]> = Array.from({ length: 200 }, (_, i) => [i, 100 + (i % 7)]);
  const title = "Reader RSS while one consumer stalls for 60 s at 50,000 rows/s (read every second), a title too long for one line";
  const doc = parseSvg(await renderChart({ title, x: "time since the stall started (s)", y: "RSS (MB)", lines: [{ name: "reader", points: many }] }));
  const texts = elements(doc, "text").map((t) => t.textContent);
  assert.ok(!texts.includes("reader"), "no legend for a single line");
  assert.equal(elements(doc, "path").filter((p) => p.getAttribute("aria-roledescription") === "point").length, 0);
  const line = elements(doc, "path").filter((p) => p.getAttribute("aria-roledescription") === "line mark");
  assert.equal(line.length, 1);
  assert.equal(vertices(line[0]!.getAttribute("d")!).length, many.length);
  // A title of several lines is one text of a tspan per line.
  const titleLines = elements(doc, "tspan").map((t) => t.textContent ?? "");
  assert.ok(titleLines.length >= 2, `the title in several lines: ${JSON.stringify(titleLines)}`);
  assert.equal(titleLines.join(" "), title);
  assert.ok(Number(doc.documentElement!.getAttribute("width")) < 760, "a wrapped title does not widen the chart");
});
